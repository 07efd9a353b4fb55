"""The viral k-mer index (genointerp.viral.evidence.seeds): ids, low-complexity filter, build and load."""

import gzip
import json
import math

import numpy as np
import pytest

from coding import revcomp
from conftest import DATA
from genointerp.errors import InputError
from genointerp.seq.joined import encode_joined
from genointerp.report import SILENT
from genointerp.seq.alphabet import encode
from genointerp.viral.evidence.seeds import (CODON_SEED, KmerIndex, KmerSettings, build_index, canonical_ids,
                                             complex_enough, kmer_text, load_index, reference_kmers)
from genointerp.viral.model_files import KMER_KEY
from genointerp.seq.idset import sorted_unique
from genointerp.viral.evidence.chance import chance_bits, composition, fixed_letters, owned_positions, stretches
from genointerp.viral.evidence.seeds import NT_FLOOR

def kmer_id(s):
    return int(s.translate(str.maketrans("ACGT", "0123")), 4)


def test_canonical_ids_are_the_smaller_strand_like_jellyfish_C():
    rng = np.random.default_rng(1)
    seq = "".join(rng.choice(list("ACGT"), 80)) + "N" + "ACGTT" * 4
    k = 11
    ids, valid = canonical_ids(encode(seq), "1" * k)
    for i in range(len(seq) - k + 1):
        window = seq[i : i + k]
        assert valid[i] == ("N" not in window)
        if valid[i]:
            assert ids[i] == min(kmer_id(window), kmer_id(revcomp(window)))
    rc_ids, _ = canonical_ids(encode(revcomp(seq)), "1" * k)
    assert sorted(rc_ids[_]) == sorted(ids[valid])  # both strands give one set


def test_complex_enough_is_the_entropy_of_base_composition():
    seq = "AAAAAAAAAAAT" + "ACGTACGTACGT" + "ATATATATATAT"
    k = 12
    keep = complex_enough(encode(seq), k, 1.5)
    for i in range(len(seq) - k + 1):
        counts = [seq[i : i + k].count(b) / k for b in "ACGT"]
        entropy = -sum(f * math.log2(f) for f in counts if f)
        assert keep[i] == (entropy >= 1.5)
    assert not keep[0] and keep[12] and not keep[-1]  # poly-A, ACGT repeat (2 bits), AT repeat (1 bit)


def test_circular_references_count_kmers_across_the_origin():
    seq = "ACGGTCATTGACCATGGTACCAGT"
    k = 11
    linear = reference_kmers([("v", seq)], KmerSettings.contiguous(k, 2, 0), False)
    circular = reference_kmers([("v", seq)], KmerSettings.contiguous(k, 2, 0), True)
    across = seq[-5:] + seq[:6]
    wanted = min(kmer_id(across), kmer_id(revcomp(across)))
    assert wanted in circular and wanted not in linear
    assert circular.size == len(seq) and linear.size == len(seq) - k + 1  # no repeated 11-mer in this sequence


def test_hits_count_kmer_positions_per_read_on_either_strand():
    ref = "".join(np.random.default_rng(2).choice(list("ACGT"), 500))
    settings = KmerSettings.contiguous(21, 2, 0)
    index = KmerIndex(reference_kmers([("v", ref)], settings, False), settings)
    reads = [ref[100:160], revcomp(ref[200:260]), ref[300:330] + "N" + ref[331:360], "ACGT" * 5, ""]
    hits, clean = index.hits(*encode_joined(reads))
    assert hits.tolist() == [40, 40, 10 + 9, 0, 0]  # 60-21+1; an N kills the 21 windows over it
    assert clean.tolist() == [40, 40, 19, 0, 0]


def _defined_bits(index, flat, starts, lengths):
    """KmerIndex.evidence's bits spelt out with the evidence's numpy steps: every fixed letter's
    position, its read's composition over owned_positions, np.bincount's sums (chance_bits)."""
    k, n = index.settings.k, len(starts)
    flat, hits, read = index._matches(flat, lengths)
    opens = stretches(read, hits.at, k)
    of = read[opens]
    compared = np.flatnonzero(np.frombuffer(index.settings.seed.encode(), np.uint8) == ord("1"))
    marks, mark_cluster, mark_read = fixed_letters(hits.at, read, opens, compared)
    pos, owner = owned_positions(sorted_unique(of), lengths, flat.size)
    freq = composition(flat[pos], owner, n, 4, NT_FLOOR)
    draws = index.places.draws(flat, hits.at, hits.slot, compared[None, :], opens, k, hits.flip, place=hits.place)
    return chance_bits(np.log10(freq).ravel().take(mark_read * 4 + flat[marks]), mark_cluster, of, 2 * hits.clean,
                       index.ids.size, n, draws)


def test_the_evidence_s_bits_are_their_numpy_definition_s():
    """The evidence sums each stretch's letters and counts each read's composition in compiled
    passes: the same bits, to the last one, as the numpy steps that define them, on reads of the
    references (changed, reverse-complemented, with unknown bases), of nothing, and empty ones."""
    rng = np.random.default_rng(4)
    genomes = [(f"HPV{i}", "".join(rng.choice(list("ACGT"), 2000))) for i in range(3)]
    index = KmerIndex.of(genomes, KmerSettings(), circular=True)
    reads = []
    for i in range(200):
        seq = genomes[i % 3][1]
        at = int(rng.integers(0, 1850))
        read = list(seq[at : at + int(rng.choice([40, 100, 150]))])
        for j in rng.choice(len(read), size=int(rng.integers(0, 8)), replace=False):
            read[j] = str(rng.choice(list("ACGTN")))
        read = "".join(read)
        reads.append(revcomp(read) if i % 2 else read)
    reads += ["".join(rng.choice(list("ACGT"), 150)) for _ in range(30)] + ["", "ACGT"]
    flat, starts, lengths = encode_joined(reads)
    got = index.evidence(flat, starts, lengths).bits
    want = _defined_bits(index, flat, starts, lengths)
    assert (want > 20).sum() > 100 and (want == 0).sum() > 20
    assert got.tobytes() == want.tobytes()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("index")
    entry = build_index(folder, [str(DATA / "hpv4.fa")], [str(DATA / "ecoli_slice.fa")], KmerSettings(), True, SILENT)
    return folder, entry


def test_build_and_load_give_the_same_index_without_negative_kmers(indexed):
    folder, entry = indexed
    index = load_index(folder, {KMER_KEY: entry})
    assert index.ids.size == entry["n_kmers"] > 4 * 7000  # four papillomavirus genomes of ~8 kb, both strands in one
    assert np.all(index.ids[1:] > index.ids[:-1])
    ecoli = "".join(line.strip() for line in open(DATA / "ecoli_slice.fa") if not line.startswith(">"))
    hits, _ = index.hits(*encode_joined([ecoli[i : i + 150] for i in range(0, len(ecoli) - 150, 75)]))
    assert hits.sum() == 0  # every viral k-mer shared with the negative reference was left out
    assert entry["n_contigs"] == 4 and (folder / entry["references"]).stat().st_size < 20_000


def test_index_files_are_byte_identical_when_rebuilt(indexed, tmp_path):
    folder, entry = indexed
    again = build_index(tmp_path, [str(DATA / "hpv4.fa")], [str(DATA / "ecoli_slice.fa")], KmerSettings(), True, SILENT)
    assert again == entry
    for name in (entry["references"], entry["excluded"]):
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes()


def test_a_damaged_index_is_one_error(indexed, tmp_path):
    folder, entry = indexed
    (tmp_path / entry["references"]).write_bytes(gzip.compress((folder / entry["references"]).read_bytes()[:0] + b">v\nACGT\n"))
    (tmp_path / entry["excluded"]).write_bytes((folder / entry["excluded"]).read_bytes())
    with pytest.raises(InputError, match="damaged"):
        load_index(tmp_path, {KMER_KEY: entry})
    with pytest.raises(InputError, match="damaged 'kmer_index'"):
        load_index(tmp_path, {KMER_KEY: {"k": 21}})
    (tmp_path / entry["excluded"]).unlink()
    with pytest.raises(InputError, match="missing"):
        load_index(tmp_path, {KMER_KEY: entry})
    for bad, why in (("1" * 7, "at least 11"), ("1" * 32, "at most 31"), ("1101101101101", "backwards"),
                     ("0111111111110", "start with 1"), ("11211111111111211", "pattern of 1")):
        with pytest.raises(InputError, match=why):
            build_index(tmp_path, [str(DATA / "hpv4.fa")], [], KmerSettings(bad), True, SILENT)
    assert load_index(tmp_path, {}) is None  # a model without an index


def test_builtin_model_index_is_small():
    """Load time is a benchmark's business (README: about 0.5 s), not a test's."""
    from genointerp.model_folder import CONFIG
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.model_files import FOLDED_FILE

    folder = builtin_model_dir()
    config = json.loads((folder / CONFIG).read_text())
    index = load_index(folder, config)
    assert index is not None and index.settings == KmerSettings(CODON_SEED, 3, 1.5)
    assert index.ids.size == config[KMER_KEY]["n_kmers"] and index.ids.nbytes < 100e6
    # what the repository holds: the prebuilt index/ and the folded model tables are made at install
    shipped = [p for p in folder.iterdir() if p.is_file() and p.name != FOLDED_FILE]
    assert sum(p.stat().st_size for p in shipped) < 10e6


def test_the_filter_in_front_of_the_index_never_loses_a_kmer():
    rng = np.random.default_rng(4)
    ids = np.unique(rng.integers(0, 4**21, 200_000, dtype=np.uint64))
    index = KmerIndex(ids, KmerSettings())
    queries = np.concatenate([ids[::3], rng.integers(0, 4**21, 100_000, dtype=np.uint64)])
    want = np.isin(queries, ids)
    assert np.array_equal(index.contains(queries), want) and want.sum() >= ids[::3].size


def test_a_spaced_seed_ignores_the_skipped_bases_on_both_strands():
    seed = "11011"
    rng = np.random.default_rng(5)
    seq = "".join(rng.choice(list("ACGT"), 40))
    ids, valid = canonical_ids(encode(seq), seed)
    for i in range(len(seq) - 4):
        window, rc = seq[i : i + 5], revcomp(seq[i : i + 5])
        masked = lambda w: kmer_id(w[:2] + "A" + w[3:])  # noqa: E731  (the skipped base as A: id bits 0)
        assert ids[i] == min(masked(window), masked(rc))
        mutated = window[:2] + "ACGT"["ACGT".index(window[2]) - 1] + window[3:]  # another base where the seed skips
        assert canonical_ids(encode(mutated), seed)[0][0] == ids[i]
        assert canonical_ids(encode(rc), seed)[0][0] == ids[i]
    assert valid.all()


def test_codon_seeds_find_a_read_whose_third_codon_bases_changed():
    """A read of a related type that differs at every third base: plain 18-mers (the seed's weight)
    find nothing, the codon seed finds the windows in frame with the changes."""
    ref = "".join(np.random.default_rng(6).choice(list("ACGT"), 600))
    read = list(ref[90:240])
    for i in range(2, len(read), 3):  # a synonymous-like change at each third base
        read[i] = "ACGT"["ACGT".index(read[i]) - 1]
    read = "".join(read)
    plain, codon = KmerSettings.contiguous(18, 1, 0), KmerSettings(CODON_SEED, 1, 0)
    plain_hits, _ = KmerIndex(reference_kmers([("v", ref)], plain, False), plain).hits(*encode_joined([read, revcomp(read)]))
    codon_hits, _ = KmerIndex(reference_kmers([("v", ref)], codon, False), codon).hits(*encode_joined([read, revcomp(read)]))
    assert plain_hits.tolist() == [0, 0]
    # windows starting where the seed's skipped bases (positions 2, 5, ...) meet the changes: every third of 125
    assert codon_hits.tolist() == [42, 42]


def test_excluded_seeds_are_written_with_n_where_skipped_and_read_back(tmp_path):
    settings = KmerSettings("11011011011011", 1, 0)
    ids = reference_kmers([("v", "".join(np.random.default_rng(7).choice(list("ACGT"), 300)))], settings, False)
    lines = kmer_text(ids, settings.seed)
    assert all(line[2:3] == b"N" and line[5:6] == b"N" and line.count(b"N") == 4 for line in lines)
    (tmp_path / "x.txt.gz").write_bytes(gzip.compress(b"".join(lines)))
    from genointerp.viral.evidence.seeds import _read_kmers

    assert np.array_equal(_read_kmers(tmp_path / "x.txt.gz", settings.seed), ids)
