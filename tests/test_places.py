"""Seeds' places in the references and the diagonal check (genointerp.viral.evidence.places): the
compiled check (genointerp/_scan.c) against its numpy definition, and the codon seeds' windows of
one match against those of two unrelated places."""

import math

import numpy as np
import pytest

from genointerp.seq.joined import encode_joined
from genointerp.viral.evidence.extension import ReferenceProteins
from genointerp.viral.evidence.places import BASE_MISSES, CHECK_PLACES, FIRST_PLACES, ReferenceBases
from genointerp.viral.evidence.seeds import KmerIndex, KmerSettings

COMP = str.maketrans("ACGT", "TGCA")


def revcomp(seq: str) -> str:
    return seq.translate(COMP)[::-1]


def random_dna(n: int, seed: int) -> str:
    return "".join(np.random.default_rng(seed).choice(list("ACGT"), n))


def numpy_share_a_place(table, query, at, slot, compared, first, second, span=0, flip=None, pattern=None):
    """SeedPlaces.share_a_place spelt out in numpy: the definition the compiled check follows."""
    compared = compared[np.zeros(at.size, np.int64) if pattern is None else pattern]  # (h, w): each seed's
    count = table._count(slot)
    anchor_first = count[first] <= count[second]
    anchor, other = np.where(anchor_first, first, second), np.where(anchor_first, second, first)
    shared = np.zeros(first.size, bool)
    for most, swap in ((FIRST_PLACES, False), (CHECK_PLACES, False), (CHECK_PLACES, True)):
        if swap:
            anchor, other = other, anchor
        left = np.flatnonzero(~shared)
        pair, place = table._spread(slot[anchor[left]], most)
        a, o = anchor[left][pair], other[left][pair]
        if flip is not None:
            place = np.where(flip[a], table.letters.size - place - span, place)
        shift = (at[o] - at[a]) // table.STRIDE
        ref = table._letters_at(place[:, None] + shift[:, None] + compared[o])
        same = (ref == query[at[o][:, None] + table.STRIDE * compared[o]]).sum(1) >= compared.shape[1] - table.MISSES
        shared[left[pair[same]]] = True
    return shared


def _random_case(cls, seed: int, repeated: bool = True):
    """A table of 60 seeds of 1 to 150 places over random residues, and a read copied from the
    letters with 10 % changes whose 400 matched seeds hold the read's place half the time; for
    proteins (STRIDE 3) the read is given as codons, a frame's residues 3 apart, and the pairs
    are seeds of one frame."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(0, 20, 3000).astype(np.uint8)  # residues: chance agreement is rare
    read = letters[500:1100].copy()
    change = rng.random(read.size) < 0.1
    read[change] = rng.integers(0, 20, int(change.sum()))
    h, w, span = 400, 9, 9
    start = np.sort(rng.integers(0, read.size - span, h))  # each seed's first letter in the read
    slot = rng.integers(0, 60, h)
    seed_ids, places = [], []
    for key in range(60):
        n = int(rng.choice([1, 3, 10, 70, 150]))
        seed_ids += [key] * n
        places += list(rng.integers(0, letters.size - 40, n))
    for i in np.flatnonzero(rng.random(h) < 0.5):
        seed_ids.append(int(slot[i]))
        places.append(int(start[i]) + 500)
    table = cls(letters, np.array(seed_ids, np.uint64), np.array(places))
    # three seed patterns, letters repeated (each compared as often as listed), or each once: then
    # the compiled check compares a window's first 32 bases at once
    compared = (np.sort(rng.choice(span, (3, w), replace=True), 1) if repeated else
                np.stack([np.sort(rng.choice(span, 6, replace=False)) for _ in range(3)]))
    first = rng.integers(0, h - 1, 3000)
    second = np.minimum(first + rng.integers(1, 6, first.size), h - 1)
    if cls.STRIDE == 1:
        return table, read, start, slot, compared, first, second
    frame = rng.integers(0, 3, h)
    keep = (frame[first] == frame[second]) & (first != second)
    return table, np.repeat(read, 3), 3 * start + frame, slot, compared, first[keep], second[keep]


@pytest.mark.parametrize("cls", [ReferenceBases, ReferenceProteins])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("repeated", [True, False])
def test_the_compiled_diagonal_check_is_its_numpy_definition(cls, wide, repeated):
    table, query, at, slot, compared, first, second = _random_case(cls, 3 + wide, repeated)
    if wide:
        table = cls.prebuilt(table.letters, table.keys, table.start.astype(np.int64), table.places.astype(np.int64))
    assert table.places.dtype == (np.int64 if wide else np.int32)
    flips = [None] if cls.STRIDE > 1 else [None, np.random.default_rng(9).random(at.size) < 0.5]
    for flip in flips:
        for pattern in (None, np.random.default_rng(10).integers(0, len(compared), at.size)):
            want = numpy_share_a_place(table, query, at, slot, compared, first, second, 9, flip, pattern)
            got = table.share_a_place(query, at, slot, compared, first, second, 9, flip, pattern)
            np.testing.assert_array_equal(got, want)
            assert 0.05 < want.mean() < 0.95  # both answers are exercised
            # each seed's first place given (as a prebuilt index's look-ups give it), some not (-1)
            place = np.where(slot >= 0, table.places[table.start[np.maximum(slot, 0)]], -1)
            place[::3] = -1
            given = table.share_a_place(query, at, slot, compared, first, second, 9, flip, pattern, place)
            np.testing.assert_array_equal(given, want)
            # each seed's row of the table as the check read it: its first entry and its places
            rows = (np.full(at.size, -7, np.int64), np.full(at.size, -7, np.int64))
            kept = table.share_a_place(query, at, slot, compared, first, second, 9, flip, pattern, place, rows)
            np.testing.assert_array_equal(kept, want)
            row = np.where(slot >= 0, table.start[np.maximum(slot, 0)], 0)
            count = np.where(slot >= 0, table.start[np.maximum(slot, 0) + 1] - row, 0)
            np.testing.assert_array_equal(rows[0], row)
            np.testing.assert_array_equal(rows[1], count)


@pytest.mark.parametrize("cls", [ReferenceBases, ReferenceProteins])
def test_the_compiled_draws_are_the_draws_of_the_pairs_checked_one_by_one(cls):
    """stretch_draws makes each stretch's pairs and counts them in the check's own pass: the
    counts `draws` makes from share_a_place, with flips, patterns and first places given or not,
    and each seed's row of the table as the check read it."""
    table, query, at, slot, compared, _, _ = _random_case(cls, 3, False)
    rng = np.random.default_rng(12)
    opens = rng.random(at.size) < 0.3
    opens[0] = True
    flips = [None] if cls.STRIDE > 1 else [None, rng.random(at.size) < 0.5]
    place = np.where(slot >= 0, table.places[table.start[np.maximum(slot, 0)]], -1)
    place[::3] = -1
    for flip in flips:
        for pattern in (None, rng.integers(0, len(compared), at.size)):
            for given in (None, place):
                want = table.draws(query, at, slot, compared, opens, 9, flip, pattern, given)
                rows = (np.empty(at.size, np.int64), np.empty(at.size, np.int64))
                got = table.stretch_draws(query, at, slot, compared, opens, 9, flip, pattern, given, rows)
                np.testing.assert_array_equal(got, want)
                assert want.size == opens.sum() and (want > 1).any() and (want == 1).any()
                np.testing.assert_array_equal(rows[1], np.where(slot >= 0, np.diff(table.start)[np.maximum(slot, 0)], 0))
    with pytest.raises(ValueError):  # a first seed that opens no stretch
        table.stretch_draws(query, at, slot, compared, np.r_[False, opens[1:]], 9)


def test_the_compiled_check_at_the_references_ends_is_its_numpy_definition():
    """Places at the letters' first and last bases, where some of the other seed's compared letters
    face none: the compiled check's letter-by-letter bounds (taken only there) are the definition's."""
    rng = np.random.default_rng(5)
    letters = rng.integers(0, 4, 200).astype(np.uint8)
    query = np.concatenate([letters[180:], letters[:20]])  # the references' end, then their start
    h = 40
    at = rng.integers(0, query.size - 9, h)
    slot = rng.integers(0, 6, h)
    seed_ids = np.repeat(np.arange(6), 4).astype(np.uint64)
    places = np.concatenate([[0, 2, 186, 191], [1, 5, 188, 196], [3, 190, 192, 199], [0, 4, 7, 195],
                             [189, 193, 197, 198], [2, 3, 6, 194]])
    table = ReferenceBases(letters, seed_ids, places)
    compared = np.array([[0, 1, 3, 4, 6, 8]])
    first = rng.integers(0, h, 2000)
    second = rng.integers(0, h, 2000)
    for flip in (None, rng.random(h) < 0.5):
        want = numpy_share_a_place(table, query, at, slot, compared, first, second, 9, flip)
        got = table.share_a_place(query, at, slot, compared, first, second, 9, flip)
        np.testing.assert_array_equal(got, want)
        assert 0.05 < want.mean() < 0.95


def test_a_seed_no_table_row_holds_is_judged_from_the_other_seed_s_places():
    table = ReferenceBases(np.arange(100, dtype=np.uint8) % 4, np.array([3], np.uint64), np.array([10]))
    assert table.slots(np.array([3, 4], np.uint64)).tolist() == [0, -1]
    query = np.arange(100, dtype=np.uint8) % 4  # the read is letters 10.. : at 5, letter 15's
    compared = np.arange(4)[None]
    one = table.share_a_place(query, np.array([10, 15]), np.array([0, -1]), compared, np.array([0]), np.array([1]))
    none = table.share_a_place(query, np.array([10, 15]), np.array([-1, -1]), compared, np.array([0]), np.array([1]))
    assert one.tolist() == [True] and none.tolist() == [False]


def _index_of(records):
    return KmerIndex.of(records, KmerSettings(min_hits=1), circular=False)


def test_codon_seed_windows_of_two_unrelated_places_are_two_chance_draws(monkeypatch):
    """A read of genome a's 60 bases is one match, on either strand. A read whose window at 20 is
    a's and whose window at 33 is b's forms one stretch (the windows overlap), which one match
    would fix I times less often than two chance matches do: it pays log10(I) more, on either
    strand, than scored as one match."""
    a, b = random_dna(3000, 1), random_dna(3000, 2)
    one = random_dna(20, 3) + a[100:160] + random_dna(20, 4)
    chimera = random_dna(20, 3) + a[100:126] + random_dna(54, 4)  # its window at 33 is b's alone
    b = b[:500] + chimera[33:59] + b[526:]
    index = _index_of([("a", a), ("b", b)])
    assert np.array_equal(index.places.keys, index.ids) and index.places.letters.size == 2 * (6000 + 2)
    reads = encode_joined([one, revcomp(one), chimera, revcomp(chimera)])
    ev = index.evidence(*reads)
    # every pair on one diagonal: one draw a stretch (the evidence's compiled count of them, and
    # its definition through share_a_place, alike)
    monkeypatch.setattr(ReferenceBases, "stretch_draws", lambda self, q, at, slot, c, opens, *rest, **kw:
                        np.ones(int(opens.sum()), np.int64))
    as_one = index.evidence(*reads)
    assert ev.clusters.tolist() == [1, 1, 1, 1] and ev.hits.tolist() == as_one.hits.tolist()
    assert ev.bits[:2] == pytest.approx(as_one.bits[:2]) and ev.bits[0] > 20
    assert (as_one.bits[2:] - ev.bits[2:]).tolist() == pytest.approx([math.log10(index.ids.size)] * 2)


@pytest.mark.parametrize("changes, shared", [(BASE_MISSES, True), (BASE_MISSES + 1, False)])
def test_a_mosaic_pair_is_one_match_where_a_genome_nearly_holds_both(changes, shared):
    """A read of a type no index holds: its first 32 bases are genome a's; its window at 30 is only
    genome b's, where it lies in unrelated sequence. Genome a differs from the read at `changes`
    of that window's compared bases (and at a base before them, so that no window of a reaches
    it): up to BASE_MISSES the two windows are one match, on either strand of the read."""
    read = random_dna(60, 5)
    compared = [i for i, c in enumerate(KmerSettings().seed) if c == "1"]
    a = list(read)
    for offset in [2] + compared[3 : 3 + changes]:  # read bases 32, 34, 36, ... (the window at 30's)
        a[30 + offset] = "A" if a[30 + offset] != "A" else "C"
    genome_a = random_dna(200, 6) + "".join(a) + random_dna(200, 7)
    genome_b = random_dna(200, 8) + read[30:56] + random_dna(200, 9)
    index = _index_of([("a", genome_a), ("b", genome_b)])
    for seq in (read, revcomp(read)):
        flat, starts, lengths = encode_joined([seq])
        _, hits, _ = index._matches(flat, lengths)
        assert hits.at.size == 8  # a's windows at 0..6 and b's at 30 (read forward)
        first, second = (6, 7) if seq == read else (0, 1)  # the reverse strand: b's first
        offsets = np.array(compared)[None]
        got = index.places.share_a_place(flat, hits.at, hits.slot, offsets, np.array([first]), np.array([second]),
                                         26, hits.flip)
        assert got.tolist() == [shared]


@pytest.mark.parametrize("records", [[], [("short", "ACGT")]])
def test_an_index_of_no_window_has_no_places_and_no_evidence(records):
    index = _index_of(records)
    assert index.ids.size == 0 and index.places.keys.size == 0 and index.places.letters.size == 2 * sum(
        len(seq) + 1 for _, seq in records)
    assert index.evidence(*encode_joined([random_dna(150, 10)])).bits.tolist() == [0.0]


def test_evidence_without_a_places_row_for_every_seed_is_refused():
    index = _index_of([("a", random_dna(500, 11))])
    bare = KmerIndex(index.ids, index.settings)  # the ids alone: no places to tell draws apart
    with pytest.raises(ValueError, match="places"):
        bare.evidence(*encode_joined([random_dna(150, 12)]))
    bare.places = ReferenceBases(index.places.letters, index.places.keys[:-1], np.zeros(index.ids.size - 1, np.int64))
    with pytest.raises(ValueError, match="one row per id"):
        bare.evidence(*encode_joined([random_dna(150, 12)]))
