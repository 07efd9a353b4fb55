"""k-mer ids, tokens and counts, vectorised with numpy.

Convention: bases A=0, C=1, G=2, T=3 and the FIRST base of a k-mer is the most significant,
id = sum_i code[i] * 4^(k-1-i); so AAAAAA=0, AAAAAC=1, ..., TTTTTT=4^k-1 and id order is
lexicographic order. This is the 2-bit order jellyfish uses. The canonical id of a k-mer is the
smaller of its id and its reverse complement's id (jellyfish -C).

Tokens reserve two ids past the k-mers: UNKNOWN = 4^k (k-mer containing N or an IUPAC letter)
and PAD = 4^k + 1 (position past the end of a short read).
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import N_CODE

PAD_CODE = 5  # base-level filler for reads shorter than the model length
MAX_TOKEN_K = 7  # 4^7 + 2 reserved ids fit uint16; 4^8 would not
MAX_COUNT_K = 31  # 2 bits per base in a uint64, as jellyfish
_DENSE_COUNT_K = 12  # up to here counts use a dense 4^k table (128 MiB at k = 12)


def unknown_token(k: int) -> int:
    return 4**k


def pad_token(k: int) -> int:
    return 4**k + 1


def _window_flags(codes: np.ndarray, k: int, value: int) -> np.ndarray:
    """True where the k-window starting at each position contains `value`. (..., L) -> (..., L-k+1)."""
    hit = (codes == value).astype(np.int32)
    csum = np.concatenate([np.zeros(hit.shape[:-1] + (1,), np.int32), np.cumsum(hit, axis=-1)], axis=-1)
    return (csum[..., k:] - csum[..., :-k]) > 0


def kmer_ids(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Forward k-mer ids of every window. codes: uint8 (..., L) -> (ids uint64 (..., L-k+1), valid bool).

    valid is False for windows holding a code >= 4 (N, IUPAC, padding); their ids are meaningless.
    """
    n = codes.shape[-1] - k + 1
    base = np.where(codes < 4, codes, 0).astype(np.uint64)
    ids = np.zeros(codes.shape[:-1] + (n,), dtype=np.uint64)
    for j in range(k):
        ids <<= np.uint64(2)
        ids |= base[..., j : j + n]
    return ids, ~_window_flags(codes >= 4, k, True)


def reverse_complement_ids(codes: np.ndarray, k: int) -> np.ndarray:
    """Ids of the reverse complement of every k-window, (..., L) -> uint64 (..., L-k+1)."""
    n = codes.shape[-1] - k + 1
    comp = np.where(codes < 4, 3 - codes, 0).astype(np.uint64)
    ids = np.zeros(codes.shape[:-1] + (n,), dtype=np.uint64)
    for j in reversed(range(k)):  # last base of the window becomes the first of its complement
        ids <<= np.uint64(2)
        ids |= comp[..., j : j + n]
    return ids


def tokenize(codes: np.ndarray, k: int) -> np.ndarray:
    """Token ids uint16 (n, L-k+1) of reads codes uint8 (n, L) (0..3 bases, 4 = N, 5 = padding).

    Windows reaching into padding get PAD, other windows with N get UNKNOWN.
    """
    if not 1 <= k <= MAX_TOKEN_K:
        raise ValueError(f"k must be 1..{MAX_TOKEN_K} for tokens")
    ids, valid = kmer_ids(codes, k)
    tokens = ids.astype(np.uint16)
    tokens[~valid] = unknown_token(k)
    tokens[_window_flags(codes, k, PAD_CODE)] = pad_token(k)
    return tokens


def decode_kmers(ids: np.ndarray, k: int) -> np.ndarray:
    """k-mer ids (n,) -> ASCII letters uint8 (n, k)."""
    shifts = np.arange(2 * (k - 1), -1, -2, dtype=np.uint64)
    return np.frombuffer(b"ACGT", np.uint8)[((ids[:, None] >> shifts) & np.uint64(3)).astype(np.intp)]


class KmerCounter:
    """Counts k-mers of many sequences (k-mers with N skipped), dense table for small k."""

    def __init__(self, k: int, canonical: bool = False) -> None:
        if not 1 <= k <= MAX_COUNT_K:
            raise ValueError(f"k must be 1..{MAX_COUNT_K} for counting")
        self.k, self.canonical = k, canonical
        self._dense = np.zeros(4**k, dtype=np.uint64) if k <= _DENSE_COUNT_K else None
        self._keys = np.empty(0, np.uint64)
        self._counts = np.empty(0, np.uint64)

    def add(self, codes: np.ndarray) -> None:
        """Count the k-mers of codes uint8 (M,): reads concatenated with an N (4) between them."""
        if codes.size < self.k:
            return
        ids, valid = kmer_ids(codes, self.k)
        if self.canonical:
            ids = np.minimum(ids, reverse_complement_ids(codes, self.k))
        ids = ids[valid]
        if self._dense is not None:
            self._dense += np.bincount(ids.astype(np.intp), minlength=self._dense.size).astype(np.uint64)
            return
        keys, counts = np.unique(ids, return_counts=True)
        self._merge(keys, counts.astype(np.uint64))

    def _merge(self, keys: np.ndarray, counts: np.ndarray) -> None:
        allk = np.concatenate([self._keys, keys])
        allc = np.concatenate([self._counts, counts])
        order = np.argsort(allk, kind="stable")
        allk, allc = allk[order], allc[order]
        first = np.flatnonzero(np.r_[True, allk[1:] != allk[:-1]])
        self._keys, self._counts = allk[first], np.add.reduceat(allc, first)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids uint64 sorted, counts uint64) of every k-mer seen at least once."""
        if self._dense is not None:
            keys = np.flatnonzero(self._dense).astype(np.uint64)
            return keys, self._dense[keys.astype(np.intp)]
        return self._keys, self._counts
