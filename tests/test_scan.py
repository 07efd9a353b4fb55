"""The compiled look-ups (genointerp/_scan.c through genointerp.seq.scan) against their numpy
definitions: canonical seed ids and amino-acid seed ids of every window, tested with IdSet.contains.

Reads are random with planted index windows, unknown bases, IUPAC codes and reads shorter than a
window, so every branch of the scans (clean runs broken by N, windows at read ends, the filter's
false positives, both strands, several seed patterns) is compared window for window."""

import numpy as np
import pytest

from genointerp.seq.joined import encode_joined
from genointerp.seq.alphabet import INVALID, N_CODE, reverse_complement_codes
from genointerp.seq.idset import FENCE, IdSet, build_filter, build_lookup, filter_bits
from genointerp.seq.scan import aa_hits, letter_counts, seed_hits, strand_codons, stretch_letters, stretch_sums
from genointerp.seq.translate import aa_kmer_ids, codons
from genointerp.viral.evidence.chance import (composition, owned_positions, owner_of, owner_of_ascending,
                                              read_composition, stretches)
from genointerp.seq.idset import sorted_unique
from genointerp.viral.evidence.seeds import canonical_ids, seed_mask, strand_ids
from genointerp.viral.evidence.protein import ProteinSettings, seed_ids


def _reads(seed: int, n: int = 300) -> list[str]:
    rng = np.random.default_rng(seed)
    donor = "".join(rng.choice(list("ACGT"), 3000))  # index windows come from here
    reads = []
    for i in range(n):
        length = int(rng.choice([0, 5, 30, 100, 151, 400]))
        if rng.random() < 0.5 and length <= 3000:
            at = int(rng.integers(0, 3000 - length + 1))
            read = list(donor[at : at + length])
        else:
            read = list(rng.choice(list("ACGT"), length))
        for j in rng.choice(length, size=min(length, int(rng.integers(0, 4))), replace=False) if length else []:
            read[j] = str(rng.choice(list("NRY")))  # unknown and IUPAC letters break windows
        reads.append("".join(read))
    return reads, donor


def joined_owner(lengths, m):
    """The read of each of m positions of reads joined by one separator (a separator counts to the
    read before it): the convention the scans follow, spelt out independently of them."""
    return np.repeat(np.arange(lengths.size), lengths + 1)[:m]


def _numpy_seed_hits(flat, lengths, seed, index):
    ids, valid = canonical_ids(flat, seed)
    pos = np.flatnonzero(valid)
    found = index.contains(ids[pos])
    read_at = joined_owner(lengths, flat.size)
    return pos[found], ids[pos[found]], np.bincount(read_at[pos], minlength=lengths.size)


@pytest.mark.parametrize("lookup", [False, True])
@pytest.mark.parametrize("seed", ["1" * 15, "11011011011011011011011011"])
def test_seed_hits_are_the_numpy_definition_window_for_window(seed, lookup):
    """With the ids' lookup table (a prebuilt index's) and without it, the same windows and rows."""
    reads, donor = _reads(1)
    donor_codes = encode_joined([donor])[0]
    ids, valid = canonical_ids(donor_codes, seed)
    ids = np.unique(ids[valid][::3])  # a third of the donor's windows
    first_place = np.arange(ids.size) * 7 + 5  # a seed's first place, as the table holds it
    index = IdSet(ids, None, build_lookup(ids, first_place) if lookup else None)
    flat, _, lengths = encode_joined(reads)
    flat = np.where(flat == INVALID, N_CODE, flat)
    hits = seed_hits(flat, lengths, len(seed), seed_mask(seed), index)
    want_at, want_ids, want_clean = _numpy_seed_hits(flat, lengths, seed, index)
    assert hits.at.size > 100  # the planted windows are found
    np.testing.assert_array_equal(hits.at, want_at)
    np.testing.assert_array_equal(hits.ids, want_ids)
    np.testing.assert_array_equal(hits.clean, want_clean)
    np.testing.assert_array_equal(index.ids[hits.slot], hits.ids)  # each id's row of the index
    if lookup:  # and its seed's first place
        np.testing.assert_array_equal(hits.place, first_place[hits.slot])
    else:
        assert hits.place is None
    forward, reverse, _ = strand_ids(flat, seed)
    np.testing.assert_array_equal(hits.flip, forward[hits.at] > reverse[hits.at])  # the reverse strand's id
    assert 0.3 < hits.flip.mean() < 0.7


@pytest.mark.parametrize("lookup", [False, True])
@pytest.mark.parametrize("seed", ["1" * 15, "11011011011011011011011011"])
@pytest.mark.parametrize("which", ["every other", "the lower half"])
def test_seed_hits_of_a_large_index_are_the_numpy_definition(seed, which, lookup):
    """An index of a thousand fences and more, so that the look-up's buckets of fences (by the top
    bits the seed keeps) mostly begin past a fence an id of theirs lies after; the lower half's
    reads also look up ids past its largest. With the lookup table, reads of the donor (most of
    whose windows are found: no filter) and random ones (the filter first) follow each other."""
    rng = np.random.default_rng(3)
    donor = "".join(rng.choice(list("ACGT"), 200_000))
    ids, valid = canonical_ids(encode_joined([donor])[0], seed)
    ids = np.unique(ids[valid])
    ids = ids[::2] if which == "every other" else ids[: ids.size // 2]
    index = IdSet(ids, None, build_lookup(ids) if lookup else None)  # no places: -1 each
    reads = []
    for _ in range(400):
        at = int(rng.integers(0, donor.__len__() - 150))
        reads.append(donor[at : at + 150] if rng.random() < 0.7 else "".join(rng.choice(list("ACGT"), 150)))
    flat, _, lengths = encode_joined(reads)
    hits = seed_hits(flat, lengths, len(seed), seed_mask(seed), index)
    want_at, want_ids, want_clean = _numpy_seed_hits(flat, lengths, seed, index)
    assert hits.at.size > 10_000
    np.testing.assert_array_equal(hits.at, want_at)
    np.testing.assert_array_equal(hits.ids, want_ids)
    np.testing.assert_array_equal(hits.clean, want_clean)
    np.testing.assert_array_equal(index.ids[hits.slot], hits.ids)
    assert hits.place is None if not lookup else (hits.place == -1).all()


def test_aa_hits_are_the_numpy_definition_on_both_strands_and_every_pattern():
    reads, donor = _reads(2)
    settings = ProteinSettings("110110111,111011011")  # two seeds of one span and weight, as check() wants
    settings.check()
    aa_donor = codons(encode_joined([donor])[0])
    index = IdSet(np.unique(np.concatenate([ids[valid][::2] for ids, valid in seed_ids(aa_donor, settings, 3)])))
    flat, _, lengths = encode_joined(reads)
    flat = np.where(flat == INVALID, N_CODE, flat)
    m, span, width = flat.size, settings.span, 20**settings.weight
    read_at = joined_owner(lengths, m)
    found_any = 0
    for s, strand in enumerate((flat, reverse_complement_codes(flat))):
        aa = codons(strand)
        for i, pattern in enumerate(settings.patterns):
            tested = np.zeros(lengths.size, np.int64)
            at, ids, slot = aa_hits(aa, pattern, i * width, lengths, s == 1, index, tested)
            np.testing.assert_array_equal(index.ids[slot], ids)
            want_ids, valid = aa_kmer_ids(aa, pattern, 3)
            pos = np.flatnonzero(valid)
            owner = read_at[pos if s == 0 else m - pos - 3 * span]
            hit = index.contains(want_ids[pos] + np.uint64(i * width))
            np.testing.assert_array_equal(at, pos[hit])
            np.testing.assert_array_equal(ids, want_ids[pos[hit]] + np.uint64(i * width))
            np.testing.assert_array_equal(tested, np.bincount(owner, minlength=lengths.size))
            found_any += at.size
    assert found_any > 100


@pytest.mark.parametrize("size", [0, 2, 3, 4, 1000])
def test_strand_codons_are_the_numpy_codons_of_both_strands(size):
    rng = np.random.default_rng(size)
    # bases, N, the codes of letters outside the alphabet (INVALID) and any other byte
    codes = rng.choice(np.array([0, 1, 2, 3, 0, 1, 2, 3, N_CODE, INVALID, 7], np.uint8), size)
    forward, reverse = strand_codons(codes)
    assert forward.dtype == reverse.dtype == np.uint8
    np.testing.assert_array_equal(forward, codons(codes))
    np.testing.assert_array_equal(reverse, codons(reverse_complement_codes(codes)))


def test_an_empty_batch_and_an_empty_index_find_nothing():
    index = IdSet(np.zeros(0, np.uint64))
    flat, _, lengths = encode_joined(["ACGT" * 10])
    hits = seed_hits(flat, lengths, 11, seed_mask("1" * 11), index)
    assert hits.at.size == 0 and hits.ids.size == 0 and hits.slot.size == 0 and hits.clean.tolist() == [30]
    hits = seed_hits(np.zeros(0, np.uint8), np.zeros(0, np.int64), 11, seed_mask("1" * 11), index)
    assert hits.at.size == 0 and hits.clean.size == 0


def test_the_filter_passes_every_member_and_few_others():
    rng = np.random.default_rng(3)
    ids = np.unique(rng.integers(0, 2**52, 50_000, dtype=np.uint64))
    table = build_filter(ids)
    assert table.size * 64 == 2 ** filter_bits(ids.size) and table.size * 64 >= 24 * ids.size
    index = IdSet(ids, table)
    assert index.contains(ids).all()
    others = rng.integers(0, 2**52, 200_000, dtype=np.uint64)
    others = others[~np.isin(others, ids)]
    assert not index.contains(others).any()
    assert index.fences.tolist() == ids[::FENCE].tolist()


def test_a_filter_that_does_not_fit_its_ids_is_refused():
    ids = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="does not fit"):
        IdSet(ids, np.zeros(3, np.uint64))


def _numpy_fixed_letters(at, opens, offsets, pattern):
    """The definition: every window's fixed positions, each once (np.unique), with the stretch of
    the window that fixes it first."""
    rows = np.atleast_2d(offsets)[np.zeros(at.size, np.int64) if pattern is None else pattern]
    marks = (at[:, None] + rows).ravel()
    marks, first = np.unique(marks, return_index=True)
    return marks, np.repeat(np.cumsum(opens) - 1, rows.shape[1])[first]


def _matched_windows(rng, n_reads, width, frames):
    """Windows of reads laid end to end (read r's letters at r * 1000 ...), sorted by read, frame
    (residues 3 apart where frames is 3), then start, with the stretches opened as
    genointerp.viral.evidence.chance.stretches opens them for windows `width` letters wide."""
    read = np.sort(rng.integers(0, n_reads, int(rng.integers(0, 400))))
    frame = rng.integers(0, frames, read.size)
    at = read * 1000 + frame + frames * rng.integers(0, 200, read.size)  # the windows lie within a read
    order = np.lexsort((at, frame, read))
    read, frame, at = read[order], frame[order], at[order]
    return at, read, stretches(read, at, width, frame if frames > 1 else None)


@pytest.mark.parametrize("seed", range(6))
def test_stretch_letters_are_each_stretchs_unique_positions_in_order(seed):
    """Both callers' forms: nucleotide windows with one set of offsets (the seed's compared
    bases, within its k), and codon windows of several patterns (3 x the compared residues'
    places, within 3 x the span), in the frame of their start. The positions are np.unique's over
    all windows, each stretch's ascending; with one frame that is np.unique's order itself."""
    rng = np.random.default_rng(seed)
    k = 11
    compared = np.flatnonzero(np.frombuffer(b"11011011011", np.uint8) == ord("1"))
    at, _, opens = _matched_windows(rng, 5, k, 1)
    marks, stretch = stretch_letters(at, opens, compared)
    want, want_stretch = _numpy_fixed_letters(at, opens, compared, None)
    np.testing.assert_array_equal(marks, want)
    np.testing.assert_array_equal(stretch, want_stretch)

    span = 9
    patterns = 3 * np.array([[0, 1, 3, 4, 6, 7, 8], [0, 2, 3, 5, 6, 7, 8]])
    at, _, opens = _matched_windows(rng, 5, 3 * span, 3)
    pattern = rng.integers(0, 2, at.size)
    marks, stretch = stretch_letters(at, opens, patterns, pattern)
    want, want_stretch = _numpy_fixed_letters(at, opens, patterns, pattern)
    by_place = np.argsort(marks, kind="stable")
    np.testing.assert_array_equal(marks[by_place], want)
    np.testing.assert_array_equal(stretch[by_place], want_stretch)
    assert (np.diff(stretch) >= 0).all() and (np.diff(marks)[np.diff(stretch) == 0] > 0).all()


@pytest.mark.parametrize("seed", range(4))
def test_stretch_sums_are_the_bincount_of_the_stretches_letters_frequencies(seed):
    """Each stretch's sum of its fixed letters' log frequencies, in one pass, is np.bincount's of
    stretch_letters' positions (the same additions in the same order: equal floats), the letter
    looked up in its stretch's first window's read's row."""
    rng = np.random.default_rng(seed)
    k = 11
    compared = np.flatnonzero(np.frombuffer(b"11011011011", np.uint8) == ord("1"))
    at, read, opens = _matched_windows(rng, 5, k, 1)
    codes = rng.integers(0, 4, 6000).astype(np.uint8)
    log_freq = np.log10(rng.random(5 * 4) + 0.01)
    for offsets in (compared, np.array([0, 3, 40, 70, 71])):  # one word of bits a window, or wider: ticked
        marks, stretch = stretch_letters(at, opens, offsets)
        want = np.bincount(stretch, weights=log_freq.take(read[opens][stretch] * 4 + codes[marks]),
                           minlength=int(opens.sum()))
        got = stretch_sums(at, opens, offsets, codes, read, log_freq, 4)
        assert got.tobytes() == want.tobytes()
    if at.size:
        codes[at[0] + compared[0]] = N_CODE  # a fixed letter that is no base: refused
        with pytest.raises(ValueError, match="outside the sums"):
            stretch_sums(at, opens, compared, codes, read, log_freq, 4)


@pytest.mark.parametrize("seed", range(4))
def test_letter_counts_are_the_composition_of_the_owned_positions(seed):
    """A read's letters counted in one pass (its codes and the separator after it, ascending reads
    with repeats, unknown letters left out) give composition's frequencies over owned_positions."""
    reads, _ = _reads(seed, 60)
    flat, _, lengths = encode_joined(reads)
    flat = np.where(flat == INVALID, N_CODE, flat)
    rng = np.random.default_rng(seed)
    which = np.sort(rng.integers(0, len(reads), 40))
    pos, owner = owned_positions(sorted_unique(which), lengths, flat.size)
    want = composition(flat[pos], owner, len(reads), 4, 0.25)
    got = read_composition(flat, lengths, which, 4, 0.25)
    assert got.tobytes() == want.tobytes()
    counts = letter_counts(flat, lengths, which, 4)
    assert (counts[np.setdiff1d(np.arange(len(reads)), which)] == 0).all()
    with pytest.raises(ValueError, match="out of order"):
        letter_counts(flat, lengths, which[::-1].copy() if which[0] != which[-1] else np.array([1, 0]), 4)


def test_stretch_letters_refuse_windows_out_of_order_and_unknown_patterns():
    opens = np.array([True, False])
    with pytest.raises(ValueError, match="out of order"):
        stretch_letters(np.array([5, 4]), opens, np.array([0, 1]))
    with pytest.raises(ValueError, match="outside the offsets"):
        stretch_letters(np.array([4, 5]), opens, np.array([[0, 1]]), np.array([0, 1]))
    with pytest.raises(ValueError, match="wrong size"):
        stretch_letters(np.array([4, 5]), np.array([False, True]), np.array([0, 1]))
    marks, stretch = stretch_letters(np.zeros(0, np.int64), np.zeros(0, bool), np.array([0, 1]))
    assert marks.size == stretch.size == 0


def test_seed_scan_s_tables_made_once_give_the_look_ups_it_makes_without_them():
    """seed_hits hands seed_scan the fences' buckets made once per index (_scan.seed_buckets) and
    the first id of each cache line of ids (which line of a block to fetch, for reads most of whose
    windows pass the filter); the look-ups are those seed_scan makes with its own buckets and
    whole blocks, on reads of the index's sequence and random ones alike, and a table of another
    size is refused."""
    from genointerp import _scan
    from genointerp.seq.scan import _buckets, _tables

    seed = "11011011011011011011011011"
    rng = np.random.default_rng(5)
    donor = "".join(rng.choice(list("ACGT"), 100_000))
    ids, valid = canonical_ids(encode_joined([donor])[0], seed)
    index = IdSet(np.unique(ids[valid])[::3].copy())
    reads = [donor[a : a + 150] if rng.random() < 0.7 else "".join(rng.choice(list("ACGT"), 150))
             for a in rng.integers(0, len(donor) - 150, 300).tolist()]
    flat, _, lengths = encode_joined(reads)
    mask = seed_mask(seed)

    def scan(*given):
        out = [np.empty(flat.size, t) for t in (np.int64, np.uint64, np.int64, np.uint8)]
        clean = np.zeros(lengths.size, np.int64)
        found = _scan.seed_scan(flat, lengths, len(seed), int(mask), index.table, index.bits, index.ids,
                                index.fences, *out, clean, *given)
        return [a[:found] for a in out] + [clean]

    want = scan()
    assert want[0].size > 5_000  # reads of the donor: most of their windows pass the filter
    for given in ((_buckets(index, mask),), _tables(index, mask)):
        for got, expected in zip(scan(*given), want):
            np.testing.assert_array_equal(got, expected)
    assert _buckets(index, mask) is _buckets(index, mask)  # made once
    with pytest.raises(ValueError, match="buckets"):
        scan(bytes(12))
    with pytest.raises(ValueError, match="line fences"):
        scan(_buckets(index, mask), index.ids[::4].copy())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_owner_of_ascending_positions_is_owner_of(seed):
    # reads of 0 bases and positions on separators and past the last read included
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, 40).astype(np.int64)
    total = int((lengths + 1).sum())
    positions = np.sort(rng.integers(0, total + 3, 300)).astype(np.int64)
    assert np.array_equal(owner_of_ascending(positions, lengths), owner_of(positions, lengths))
    assert owner_of_ascending(positions[:0], lengths).size == 0
