"""A set of uint64 ids (k-mers, seeds, amino-acid k-mers) that answers membership fast.

Nearly every window of a read is not in a viral index, so a filter sits in front of the sorted
ids: one 64-bit word per lookup tells most absent windows so, where a binary search over millions
of ids takes some 20 cache misses. The filter is a blocked Bloom filter: an id sets two bits of one
word, both chosen by its hash (so a lookup touches one cache line), with 24 to 48 bits of filter
per id (a power of two: 2^27 bits, 16 MB, for the 2.8 M seeds of the built-in index). Twice that
let fewer absent ids through but made the look-ups of a batch a third slower: a bigger table
misses the cache more often. The search itself first finds the id's block of FENCE ids among every
FENCE-th id (a table small enough to stay in cache), then the id in it.

A prebuilt viral index also stores its ids by their hash (`build_lookup`): there an id and its
place among the sorted ids sit in one entry, so that a window found costs one fetch from memory.
An all-viral read's windows are nearly all found, and the filter, the fences' line and the line of
ids were three such fetches each (the look-ups of 21,637 all-HPV reads, 2.7 M windows: 0.24-0.33 ->
0.15-0.22 s of CPU, four passes each on a loaded host).
"""

from __future__ import annotations

import numpy as np

_BITS_PER_ID = 24  # at least; rounded up to a power of two
_MIN_FILTER_BITS = 12
FENCE = 64  # ids per block of the two-level search
_HASH = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: odd, so ids spread over the top bits
_SIX = np.uint64(63)


def filter_bits(n: int) -> int:
    """log2 of the filter's size in bits for n ids."""
    return min(max(_MIN_FILTER_BITS, int(_BITS_PER_ID * max(n, 1) - 1).bit_length()), 38)  # 38: see _probe


def _probe(ids: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(word uint64 (n,), bits uint64 (n,)): the filter word of each id of ids uint64 (n,) and the
    two bits it sets there (the hash's top bits - 6 bits pick the word, bits 20-31 the two bits: apart
    from the word's bits up to 2^38 bits of filter)."""
    h = ids * _HASH
    word = h >> np.uint64(64 - (bits - 6))
    return word, (np.uint64(1) << ((h >> np.uint64(20)) & _SIX)) | (np.uint64(1) << ((h >> np.uint64(26)) & _SIX))


def positions(index: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """int64 (m,): where each of ids (m,) is in sorted index (n,), -1 where it is not."""
    if index.size == 0:
        return np.full(ids.shape, -1, np.int64)
    at = np.searchsorted(index, ids)
    at[at == index.size] = 0
    return np.where(index[at] == ids, at, -1)


def member(index: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """bool (m,): each of ids (m,) is in sorted index (n,)."""
    return positions(index, ids) >= 0


def sorted_unique(ids: np.ndarray) -> np.ndarray:
    """np.unique of integers (n,) by sorting: numpy 2's hash-based unique is up to ten times slower
    here, and its first call imports numpy.ma (17 ms of a run's start)."""
    ids = np.sort(ids)
    return ids[np.r_[True, ids[1:] != ids[:-1]]] if ids.size else ids


def build_filter(ids: np.ndarray) -> np.ndarray:
    """uint64 (2^filter_bits(n) / 64,): the filter of ids uint64 (n,)."""
    bits = filter_bits(ids.size)
    table = np.zeros(1 << (bits - 6), np.uint64)
    word, mask = _probe(ids, bits)
    np.bitwise_or.at(table, word, mask)
    return table


LOOKUP_FULL = 0.7  # at most this share of a lookup table's entries hold an id


def lookup_bits(n: int) -> int:
    """log2 of the entries of the lookup table of n ids (at most LOOKUP_FULL of them full)."""
    return max(int(np.ceil(max(n, 1) / LOOKUP_FULL) - 1).bit_length(), 1)


def build_lookup(ids: np.ndarray, first_place: np.ndarray | None = None) -> np.ndarray:
    """uint64 (2 * 2^lookup_bits(n),): sorted unique ids uint64 (n,) in a table by their hash, each
    entry an id, and its place among the ids with (where given: first_place int64 (n,)) its seed's
    first place in the references; empty entries all ones (genointerp/_scan.c's id_lookup, which
    the compiled look-ups read: an id found costs one fetch from memory, where the filter and the
    two-level search cost three, and the places check has the place it tries first; 64 MB for
    the 2.8 M seeds of the built-in index, stored with its prebuilt arrays)."""
    from genointerp import _scan

    bits = lookup_bits(ids.size)
    table = np.full(2 << bits, np.iinfo(np.uint64).max, np.uint64)
    extra = () if first_place is None else (np.ascontiguousarray(first_place, np.int64),)
    _scan.id_lookup(np.ascontiguousarray(ids, np.uint64), bits, table, *extra)
    return table


class IdSet:
    """Sorted unique ids uint64 (n,) with the filter in front (built here, or `table` as
    build_filter made it, e.g. memory-mapped from a prebuilt index), and where given the ids'
    lookup table (build_lookup's: the compiled look-ups then find ids there)."""

    def __init__(self, ids: np.ndarray, table: np.ndarray | None = None, lookup: np.ndarray | None = None) -> None:
        self.ids = ids
        self.table = build_filter(ids) if table is None else table
        self.bits = filter_bits(ids.size)
        if self.table.dtype != np.uint64 or self.table.size != 1 << (self.bits - 6):
            raise ValueError(f"an id filter of {self.table.size} {self.table.dtype} words does not fit {ids.size} ids")
        self.lookup, self.lookup_bits = lookup, lookup_bits(ids.size)
        if lookup is not None and (lookup.dtype != np.uint64 or lookup.size != 2 << self.lookup_bits):
            raise ValueError(f"a lookup table of {lookup.size} {lookup.dtype} words does not fit {ids.size} ids")
        self._fences: np.ndarray | None = None

    @property
    def fences(self) -> np.ndarray:
        """uint64 (ceil(n / FENCE),): every FENCE-th id, the first level of the search (made at first use)."""
        if self._fences is None:
            self._fences = np.ascontiguousarray(self.ids[::FENCE])
        return self._fences

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """bool (m,): each of ids uint64 (m,) is in the set."""
        word, mask = _probe(ids, self.bits)
        maybe = (self.table[word] & mask) == mask
        found = np.zeros(ids.shape, bool)
        found[maybe] = member(self.ids, ids[maybe])
        return found
