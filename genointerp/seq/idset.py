"""A set of uint64 ids (k-mers, seeds, amino-acid k-mers) that answers membership fast.

Nearly every window of a read is not in a viral index, so a one-bit-per-bucket filter (16 MB)
sits in front of the sorted ids: one lookup tells most windows so, where a binary search over
millions of ids takes some 20 cache misses (six times slower end to end).
"""

from __future__ import annotations

import numpy as np

_FILTER_BITS = 27  # 2^27 bits (16 MB): 1.7 % of them set by the 2.3 M seeds of the built-in index
_HASH = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: odd, so ids spread over the top bits


def _bucket(ids: np.ndarray) -> np.ndarray:
    """The filter bit (uint64 (n,), 0 .. 2^_FILTER_BITS - 1) of each id of ids uint64 (n,)."""
    return (ids * _HASH) >> np.uint64(64 - _FILTER_BITS)


def member(index: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """bool (m,): each of ids (m,) is in sorted index (n,)."""
    if index.size == 0:
        return np.zeros(ids.shape, bool)
    at = np.searchsorted(index, ids)
    at[at == index.size] = 0
    return index[at] == ids


def sorted_unique(ids: np.ndarray) -> np.ndarray:
    """np.unique of uint64 (n,) by sorting: numpy 2's hash-based unique is ten times slower here."""
    ids = np.sort(ids)
    return ids[np.r_[True, ids[1:] != ids[:-1]]] if ids.size else ids


class IdSet:
    """Sorted unique ids uint64 (n,) with the filter in front."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self._filter = np.zeros(1 << (_FILTER_BITS - 3), np.uint8)
        bucket = _bucket(ids)
        byte, bit = bucket >> np.uint64(3), (bucket & np.uint64(7)).astype(np.uint8)
        for b in range(8):  # one bit value per pass, so repeated bytes in a fancy |= lose nothing
            self._filter[byte[bit == b]] |= np.uint8(1 << b)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """bool (m,): each of ids uint64 (m,) is in the set."""
        bucket = _bucket(ids)
        maybe = ((self._filter[bucket >> np.uint64(3)] >> (bucket & np.uint64(7)).astype(np.uint8)) & 1).astype(bool)
        found = np.zeros(ids.shape, bool)
        found[maybe] = member(self.ids, ids[maybe])
        return found
