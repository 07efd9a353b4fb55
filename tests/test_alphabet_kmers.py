import itertools

import numpy as np
import pytest

from genointerp.errors import InputError
from genointerp.seq.alphabet import clean_reference, encode, reverse_complement_codes
from genointerp.seq.kmers import KmerCounter, PAD_CODE, decode_kmers, kmer_ids, pad_token, tokenize, unknown_token


def naive_id(kmer: str) -> int:
    """Base-4 number with the first base most significant (the documented convention)."""
    value = 0
    for b in kmer:
        value = value * 4 + "ACGT".index(b)
    return value


def test_token_convention_endpoints():
    assert naive_id("AAAAAA") == 0 and naive_id("AAAAAC") == 1 and naive_id("CAAAAA") == 1024
    codes = encode("AAAAAACAAAAATTTTTT")[None, :]
    ids = tokenize(codes, 6)[0]
    assert ids[0] == 0 and ids[1] == naive_id("AAAAAC") and ids[6] == 1024 and ids[-1] == 4095


def test_tokenize_matches_per_read_loop_on_random_reads():
    rng = np.random.default_rng(0)
    reads = ["".join(rng.choice(list("ACGT"), 40)) for _ in range(50)]
    codes = np.stack([encode(r) for r in reads])
    for k in (1, 3, 6, 7):
        tokens = tokenize(codes, k)
        expected = [[naive_id(r[i : i + k]) for i in range(len(r) - k + 1)] for r in reads]
        assert tokens.dtype == np.uint16
        assert tokens.tolist() == expected


def test_unknown_and_pad_tokens():
    codes = encode("ACGTNACGTA")
    padded = np.concatenate([codes, np.full(3, PAD_CODE, np.uint8)])[None, :]
    tokens = tokenize(padded, 3)[0].tolist()
    # windows 2,3,4 touch the N; the last three windows reach into padding
    assert tokens[:2] == [naive_id("ACG"), naive_id("CGT")]
    assert tokens[2:5] == [unknown_token(3)] * 3
    assert tokens[5:8] == [naive_id("ACG"), naive_id("CGT"), naive_id("GTA")]
    assert tokens[8:] == [pad_token(3)] * 3


def test_tokenize_in_row_blocks_equals_row_by_row():
    """Large batches are tokenised in row blocks; N and padding in a few rows of one block only."""
    from genointerp.seq import kmers

    rng = np.random.default_rng(1)
    rows = 3 * kmers.TOKENIZE_BLOCK_BYTES // 30 + 7  # a bit over three blocks of 30-base reads
    codes = rng.integers(0, 4, size=(rows, 30), dtype=np.uint8)
    codes[rows - 5, 10] = 4
    codes[rows - 3, 25:] = PAD_CODE
    whole = tokenize(codes, 5)
    one_by_one = np.concatenate([tokenize(codes[i : i + 1], 5) for i in (0, rows - 5, rows - 3, rows - 1)])
    assert whole[[0, rows - 5, rows - 3, rows - 1]].tolist() == one_by_one.tolist()
    assert (whole[rows - 5, 6:11] == unknown_token(5)).all() and whole[rows - 5, 5] != unknown_token(5)
    assert (whole[rows - 3, 21:] == pad_token(5)).all()
    assert not np.isin(whole[: rows - 5], [unknown_token(5), pad_token(5)]).any()


def test_lowercase_equals_uppercase_and_iupac_is_n():
    assert encode("acgt").tolist() == [0, 1, 2, 3]
    assert encode("NRYW").tolist() == [4, 4, 4, 4]
    assert encode("X-.").tolist() == [255, 255, 255]


def test_reverse_complement_codes():
    assert reverse_complement_codes(encode("AACGN")).tolist() == encode("NCGTT").tolist()


def test_clean_reference_resolves_iupac_to_a_matching_base():
    rng = np.random.default_rng(1)
    codes, resolved = clean_reference("c", "acgtNRRRRRRRRRRY", rng)
    assert resolved == 11
    assert codes[:5].tolist() == [0, 1, 2, 3, 4]
    assert set(codes[5:15].tolist()) <= {0, 2}  # R = A/G
    assert codes[15] in (1, 3)  # Y = C/T


def test_clean_reference_rejects_non_letters():
    with pytest.raises(InputError, match=r"contig c: position 3: '-'"):
        clean_reference("c", "AC-GT", np.random.default_rng(0))


def naive_counts(seqs, k, canonical):
    comp = str.maketrans("ACGT", "TGCA")
    counts = {}
    for s in seqs:
        for i in range(len(s) - k + 1):
            kmer = s[i : i + k]
            if set(kmer) - set("ACGT"):
                continue
            if canonical:
                kmer = min(kmer, kmer.translate(comp)[::-1])
            counts[kmer] = counts.get(kmer, 0) + 1
    return dict(sorted(counts.items()))


@pytest.mark.parametrize("k", [3, 5, 13, 21])
@pytest.mark.parametrize("canonical", [False, True])
def test_kmer_counter_matches_naive_count(k, canonical):
    rng = np.random.default_rng(k)
    seqs = ["".join(rng.choice(list("ACGTN"), p=[0.24, 0.24, 0.24, 0.24, 0.04], size=n)) for n in (30, 200, 5, 77)]
    counter = KmerCounter(k, canonical)
    counter.add(encode("N".join(seqs[:2])))  # two batches exercise the merge path
    counter.add(encode("N".join(seqs[2:])))
    got = {bytes(row).decode(): int(c) for ids, counts in counter.result() for row, c in zip(decode_kmers(ids, k), counts)}
    assert got == naive_counts(seqs, k, canonical)
    assert list(got) == sorted(got)  # lexicographic order


def test_kmer_ids_flags_windows_with_n():
    ids, valid = kmer_ids(encode("ACGNACG"), 3)
    assert valid.tolist() == [True, False, False, False, True]


def test_all_kmers_round_trip():
    k = 4
    kmers = ["".join(p) for p in itertools.product("ACGT", repeat=k)]
    ids = np.array([naive_id(s) for s in kmers], dtype=np.uint64)
    assert [bytes(r).decode() for r in decode_kmers(ids, k)] == kmers
