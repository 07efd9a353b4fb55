"""The windows of reads looked up in a seed index, in one compiled pass (genointerp/_scan.c).

Two look-ups, each the compiled form of a numpy one that stays the definition (and builds the
indexes from references): tests/test_scan.py checks they agree window for window.
  - seed_hits: every clean k-base window of every read, as genointerp.viral.evidence.seeds.canonical_ids
    and IdSet.contains would find it;
  - aa_hits: every amino-acid seed of one strand's codons, as genointerp.seq.translate.aa_kmer_ids
    (step 3) and IdSet.contains would find it;
the codons of both strands that aa_hits reads (strand_codons, as genointerp.seq.translate.codons
reads the codes and their reverse complement); the check of which pairs of matched seeds lie
on one diagonal of the references (diagonal_pairs), the compiled form of
genointerp.viral.evidence.places.SeedPlaces.share_a_place's definition, which tests/test_places.py
spells out in numpy and compares; and the letters matched windows fix, each once, stretch by
stretch (stretch_letters: np.unique's, which tests/test_scan.py compares).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp import _scan
from genointerp.seq.idset import IdSet
from genointerp.seq.translate import CODONS_WITH_N


@dataclass(frozen=True)
class SeedHits:
    """The matched windows of joined reads, (h,) each in order of start: at int64, the window's start
    in the codes; ids uint64, its canonical seed id; slot int64, that id's place among the index's
    ids; flip bool, the id is the window's reverse complement's. clean int64 (n,): each read's windows
    free of unknown codes."""

    at: np.ndarray
    ids: np.ndarray
    slot: np.ndarray
    flip: np.ndarray
    clean: np.ndarray
    # each found window's seed's first place in the references, where the index's lookup table
    # holds it (-1 where not; None without the table): the places check's first try
    place: np.ndarray | None = None
    # each found window's seed's row of the places table as the places check read it (diagonal_pairs'
    # `rows`): its first entry and its number of places, int64 (h,) each (None: not read)
    row: np.ndarray | None = None
    count: np.ndarray | None = None


def _c(array: np.ndarray, dtype) -> np.ndarray:
    """array as a C-contiguous array of dtype (a view where it already is one)."""
    return np.ascontiguousarray(array, dtype=dtype)


# seed_scan's tables beside the ids, per index and mask, made once: the fences by an id's leading
# bits (_scan.seed_buckets; some 5 ms to make, once per call it was, where a batch of human
# reads' look-ups take a few more), and the first id of each cache line of ids (the line of a
# block to fetch, where all eight were fetched)
_TABLES: dict[tuple[int, int], tuple[np.ndarray, bytes, np.ndarray]] = {}


def _tables(index: IdSet, mask: int) -> tuple[bytes, np.ndarray]:
    """seed_scan's tables of `index` for `mask`, made once (kept beside the ids array they are of,
    so that a new array at a freed one's address is never taken for it)."""
    key = (id(index.ids), int(mask))
    got = _TABLES.get(key)
    if got is None or got[0] is not index.ids:
        if len(_TABLES) >= 8:
            _TABLES.clear()
        ids = _c(index.ids, np.uint64)
        got = _TABLES[key] = (index.ids, _scan.seed_buckets(ids, index.fences, int(mask)), ids[::LINE].copy())
    return got[1:]


LINE = 8  # ids in a cache line (genointerp/_scan.c)


def _buckets(index: IdSet, mask: int) -> bytes:
    return _tables(index, mask)[0]


def _first(array: np.ndarray, found: int) -> np.ndarray:
    """array[:found], a view where it fills half the array or more (an all-viral batch's windows:
    the copy was 1 % of a run), else a copy (a human batch keeps few of its windows, and not the
    whole array with them)."""
    return array[:found] if 2 * found >= array.size else array[:found].copy()


def seed_hits(codes: np.ndarray, lengths: np.ndarray, k: int, mask: int, index: IdSet) -> SeedHits:
    """Reads as codes joined by one separator (codes uint8 (M,); lengths int64 (n,)): each clean
    window whose canonical seed id (forward and reverse complement 2-bit ids each ANDed with mask,
    the smaller) is in `index` (SeedHits)."""
    codes, lengths = _c(codes, np.uint8), _c(lengths, np.int64)
    at, ids, slot = np.empty(codes.size, np.int64), np.empty(codes.size, np.uint64), np.empty(codes.size, np.int64)
    flip, clean = np.empty(codes.size, np.uint8), np.zeros(lengths.size, np.int64)
    place = None if index.lookup is None else np.empty(codes.size, np.int64)
    lookup = () if place is None else (_c(index.lookup, np.uint64), index.lookup_bits, place)
    found = _scan.seed_scan(codes, lengths, k, int(mask), _c(index.table, np.uint64), index.bits,
                            _c(index.ids, np.uint64), index.fences, at, ids, slot, flip, clean, *_tables(index, mask),
                            *lookup)
    return SeedHits(_first(at, found), _first(ids, found), _first(slot, found), _first(flip.view(bool), found), clean,
                    None if place is None else _first(place, found))


def strand_codons(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(genointerp.seq.translate.codons of nucleotide codes uint8 (M,), and of their reverse
    complement (genointerp.seq.alphabet.reverse_complement_codes)), uint8 (M-2,) each, in one
    compiled pass."""
    codes = _c(codes, np.uint8)
    if codes.size < 3:
        return np.zeros(0, np.uint8), np.zeros(0, np.uint8)
    forward, reverse = np.empty(codes.size - 2, np.uint8), np.empty(codes.size - 2, np.uint8)
    _scan.strand_codons(codes, CODONS_WITH_N, forward, reverse)
    return forward, reverse


def aa_hits(aa: np.ndarray, pattern: str, offset: int, lengths: np.ndarray, reverse: bool, index: IdSet,
            tested: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One strand's codons aa uint8 (A,) (genointerp.seq.translate.codons of the m = A + 2 bases of
    reads joined by one separator, lengths int64 (n,)): (at int64 (h,), where each seed of
    `pattern` ('1' compared, '0' skipped; residues 3 apart) whose residues are all amino acids has
    its id plus `offset` in `index`, ascending; ids uint64 (h,) those ids; slot int64 (h,) their
    places among index.ids). Every seed tested adds
    one to its read's count in tested int64 (n,): the read of its first forward base, as
    genointerp.viral.evidence.chance.owner_of gives it (on the reverse strand, position i covers
    forward bases from m - i - 3 * span)."""
    aa = _c(aa, np.uint8)
    if tested.dtype != np.int64 or not tested.flags.c_contiguous or tested.size != lengths.size:
        raise ValueError("tested must be a contiguous int64 array, one count per read")
    if not lengths.size:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    ends = np.cumsum(_c(lengths, np.int64) + 1)
    at, ids, slot = np.empty(aa.size, np.int64), np.empty(aa.size, np.uint64), np.empty(aa.size, np.int64)
    found = _scan.aa_scan(aa, bytes(int(c) for c in pattern), int(offset), ends, int(reverse), aa.size + 2,
                          _c(index.table, np.uint64), index.bits, _c(index.ids, np.uint64), index.fences, at, ids,
                          slot, tested)
    return at[:found].copy(), ids[:found].copy(), slot[:found].copy()


def diagonal_pairs(query: np.ndarray, at: np.ndarray, slot: np.ndarray, compared: np.ndarray,
                   pattern: np.ndarray | None, first: np.ndarray, second: np.ndarray, table, span: int,
                   flip: np.ndarray | None, first_places: int, check_places: int,
                   place: np.ndarray | None = None, rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """bool (j,): genointerp.viral.evidence.places.SeedPlaces.share_a_place for the pairs first,
    second int64 (j,) of matched seeds (at, slot int64 (h,); compared int64 (P, w), each seed
    pattern's compared places; pattern int (h,) or None (all pattern 0); flip bool (h,) or None;
    place int64 (h,) or None: each seed's first place where known (SeedHits.place), -1 where
    not), against `table` (a SeedPlaces: letters, start, places, STRIDE, MISSES, OUTSIDE). rows:
    (row, count) int64 (h,) each, or None: filled with each seed's row of the table as the check
    reads it, its first entry and its number of places (0 for slot -1, -1 for a row outside the
    table), for the typing on the diagonals (genointerp.viral.typing.diagonals.diagonal_edits)."""
    shared = np.zeros(first.size, np.uint8)
    _share_place(query, at, slot, compared, pattern, _c(first, np.int64), _c(second, np.int64), table, span, flip,
                 first_places, check_places, shared,
                 *(() if place is None and rows is None else (b"" if place is None else _c(place, np.int64),)),
                 *(() if rows is None else _rows_out(rows, at.size)))
    return shared.view(bool)


def stretch_draws(query: np.ndarray, at: np.ndarray, slot: np.ndarray, compared: np.ndarray,
                  pattern: np.ndarray | None, opens: np.ndarray, table, span: int, flip: np.ndarray | None,
                  first_places: int, check_places: int, place: np.ndarray | None = None,
                  rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """int64 (stretches,): genointerp.viral.evidence.places.SeedPlaces.draws, in the same compiled
    pass as diagonal_pairs makes for the pairs of each seed and the one before it in its stretch
    (opens bool (h,), as draws takes it; the rest as diagonal_pairs takes them): 1 for each
    stretch, plus its pairs on no shared diagonal."""
    opens = _c(opens, np.uint8)
    draws = np.empty(int(np.count_nonzero(opens)), np.int64)
    empty = np.zeros(0, np.int64)
    rows = rows if rows is not None else (np.empty(at.size, np.int64), np.empty(at.size, np.int64))
    _share_place(query, at, slot, compared, pattern, empty, empty, table, span, flip, first_places, check_places,
                 bytearray(), b"" if place is None else _c(place, np.int64), *_rows_out(rows, at.size), opens, draws)
    return draws


def _share_place(query, at, slot, compared, pattern, first, second, table, span, flip, first_places: int,
                 check_places: int, shared, *tail) -> None:
    """_scan.share_place with the arguments diagonal_pairs and stretch_draws share made contiguous
    and typed once (the table's index type from its places); `tail` as the kernel takes it."""
    wide = table.places.dtype == np.int64
    index_type = np.int64 if wide else np.int32
    compared = _c(compared, np.int64)
    _scan.share_place(_c(query, np.uint8), _c(at, np.int64), _c(slot, np.int64), compared, compared.shape[-1],
                      b"" if pattern is None else _c(pattern, np.int64), first, second,
                      _c(table.letters, np.uint8), _c(table.start, index_type), _c(table.places, index_type),
                      int(wide), table.STRIDE, table.MISSES, b"" if flip is None else _flags(flip), int(span),
                      table.OUTSIDE, first_places, check_places, shared, *tail)


def _flags(flip: np.ndarray) -> np.ndarray:
    """bool flags as uint8 bytes: a view of a contiguous bool array, else a copy."""
    return flip.view(np.uint8) if flip.dtype == bool and flip.flags.c_contiguous else _c(flip, np.uint8)


def stretch_sums(at: np.ndarray, opens: np.ndarray, offsets: np.ndarray, codes: np.ndarray, read: np.ndarray,
                 log_freq: np.ndarray, n_symbols: int) -> np.ndarray:
    """float64 (stretches,): per stretch (as stretch_letters takes them, one pattern: offsets int
    (w,)), the sum over the positions its windows fix, each once and ascending, of
    log_freq[read * n_symbols + codes[position]] (read int64 (h,): each window's read, the
    stretch's first window's counting; log_freq float64 (n * n_symbols,)): np.bincount of
    stretch_letters' positions weighted so, which adds them in the same order, in one pass."""
    offsets = _c(np.atleast_2d(offsets), np.int64)
    at, opens = _c(at, np.int64), _c(opens, np.uint8)
    sums = np.empty(int(np.count_nonzero(opens)), np.float64)
    empty = np.zeros(0, np.int64)
    _scan.stretch_letters(at, opens, offsets, offsets.shape[-1], b"", empty, empty, _c(codes, np.uint8),
                          _c(read, np.int64), _c(log_freq, np.float64), int(n_symbols), sums)
    return sums


def letter_counts(codes: np.ndarray, lengths: np.ndarray, reads: np.ndarray, n_symbols: int) -> np.ndarray:
    """int64 (n, n_symbols): for each read of `reads` (int, ascending; repeats count once) of reads
    joined by one separator (codes uint8 (M,), lengths int64 (n,)), its letters under n_symbols
    among its codes and the separator after it; zeros for the others (one compiled pass)."""
    lengths = _c(lengths, np.int64)
    counts = np.empty(lengths.size * n_symbols, np.int64)
    _scan.letter_counts(_c(codes, np.uint8), lengths, _c(reads, np.int64), int(n_symbols), counts)
    return counts.reshape(lengths.size, n_symbols)


def _rows_out(rows: tuple[np.ndarray, np.ndarray], h: int) -> tuple[np.ndarray, np.ndarray]:
    """diagonal_pairs' `rows`, checked: two contiguous int64 arrays of h each (written in place)."""
    for out in rows:
        if out.dtype != np.int64 or not out.flags.c_contiguous or out.size != h:
            raise ValueError("rows must be two contiguous int64 arrays, one entry per matched seed")
    return rows


def stretch_letters(at: np.ndarray, opens: np.ndarray, offsets: np.ndarray,
                    pattern: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions int64 (P,), their stretch int64 (P,)): the positions matched windows fix, each
    once, stretch by stretch and ascending within each. Window i (at int64 (h,)) fixes
    at[i] + offsets[pattern[i]] (offsets int (R, w), or (w,) for every window; pattern int (h,)
    or None: row 0); `opens` bool (h,) starts each stretch (numbered 0, 1, ... in order), whose
    windows come in ascending order of at."""
    offsets = _c(np.atleast_2d(offsets), np.int64)
    at, width = _c(at, np.int64), offsets.shape[-1]
    marks, stretch = np.empty(at.size * width, np.int64), np.empty(at.size * width, np.int64)
    found = _scan.stretch_letters(at, _c(opens, np.uint8), offsets, width, b"" if pattern is None else _c(pattern, np.int64),
                                  marks, stretch)
    return _first(marks, found), _first(stretch, found)
