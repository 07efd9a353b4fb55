"""k-mer ids, tokens and counts, vectorised with numpy.

Convention: bases A=0, C=1, G=2, T=3 and the FIRST base of a k-mer is the most significant,
id = sum_i code[i] * 4^(k-1-i); so AAAAAA=0, AAAAAC=1, ..., TTTTTT=4^k-1 and id order is
lexicographic order. This is the 2-bit order jellyfish uses. The canonical id of a k-mer is the
smaller of its id and its reverse complement's id (jellyfish -C).

Tokens reserve two ids past the k-mers: UNKNOWN = 4^k (k-mer containing N or an IUPAC letter)
and PAD = 4^k + 1 (position past the end of a short read).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np


PAD_CODE = 5  # base-level filler for reads shorter than the model length
MAX_TOKEN_K = 7  # 4^7 + 2 reserved ids fit uint16; 4^8 would not
MAX_COUNT_K = 31  # 2 bits per base in a uint64, as jellyfish
TOKENIZE_BLOCK_BYTES = 600_000
_DENSE_COUNT_K = 12  # up to here counts use a dense 4^k table (128 MiB at k = 12)


def unknown_token(k: int) -> int:
    return 4**k


def pad_token(k: int) -> int:
    return 4**k + 1


def _any_in_window(flag: np.ndarray, k: int) -> np.ndarray:
    """True where any of the k flags starting at each position is set. (..., L) -> (..., L-k+1).

    k shifted ORs: for the k <= 31 used here this beats a cumulative sum along rows.
    """
    n = flag.shape[-1] - k + 1
    out = flag[..., :n].copy()
    for j in range(1, k):
        out |= flag[..., j : j + n]
    return out


def _pack(base: np.ndarray, k: int) -> np.ndarray:
    """Ids of every k-window of 2-bit codes base (..., L) (already in the id dtype): (..., L-k+1).

    Built by doubling: m-mer ids combine into 2m-mer ids with one shift and one OR, and k is
    assembled from its binary digits, so the work grows with log2(k) rather than k.
    """
    L = base.shape[-1]
    block, blen = base, 1
    result, rlen = None, 0
    kk = k
    while True:
        if kk & 1:
            if result is None:
                result, rlen = block, blen
            else:
                n = L - (rlen + blen) + 1
                result = result[..., :n] << result.dtype.type(2 * blen)
                result |= block[..., rlen : rlen + n]  # in place: one new array per step, not two
                rlen += blen
        kk >>= 1
        if not kk:
            return result
        n2 = block.shape[-1] - blen
        shifted = block[..., :n2] << block.dtype.type(2 * blen)
        shifted |= block[..., blen : blen + n2]
        block, blen = shifted, 2 * blen


def kmer_ids(codes: np.ndarray, k: int, dtype=np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """Forward k-mer ids of every window. codes: uint8 (..., L) -> (ids `dtype` (..., L-k+1),
    valid bool (..., L-k+1)).

    dtype must hold 2k bits (uint16 up to k = 8). valid is False for windows holding a code >= 4
    (N, IUPAC, padding); their ids are meaningless.
    """
    invalid = codes >= 4
    any_invalid = bool(invalid.any())
    base = (np.where(invalid, 0, codes) if any_invalid else codes).astype(dtype)
    ids = _pack(base, k)
    if not any_invalid:
        return ids, np.ones(ids.shape, dtype=bool)
    return ids, ~_any_in_window(invalid, k)


def reverse_complement_ids(codes: np.ndarray, k: int) -> np.ndarray:
    """Ids of the reverse complement of every k-window, codes uint8 (..., L) -> uint64 (..., L-k+1)."""
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
    n, L = codes.shape
    out = np.empty((n, max(L - k + 1, 0)), dtype=np.uint16)
    # Row blocks of ~600 KB keep the half-dozen temporaries of each step in cache: about 1.4x
    # faster than one pass over a 65k-read batch.
    step = max(1, TOKENIZE_BLOCK_BYTES // max(L, 1))
    for i in range(0, n, step):
        block = codes[i : i + step]
        if block.max(initial=0) < 4:
            out[i : i + step] = _pack(block.astype(np.uint16), k)
            continue
        tokens, valid = kmer_ids(block, k, np.uint16)
        tokens[~valid] = unknown_token(k)
        tokens[_any_in_window(block == PAD_CODE, k)] = pad_token(k)
        out[i : i + step] = tokens
    return out


def decode_kmers(ids: np.ndarray, k: int) -> np.ndarray:
    """k-mer ids uint64 (n,) -> ASCII letters uint8 (n, k)."""
    shifts = np.arange(2 * (k - 1), -1, -2, dtype=np.uint64)
    return np.frombuffer(b"ACGT", np.uint8)[((ids[:, None] >> shifts) & np.uint64(3)).astype(np.intp)]


class KmerCounter:
    """Counts k-mers of many sequences (k-mers with N skipped), in bounded memory.

    k <= 12: a dense 4^k table. Larger k: each batch's ids are split by their first three bases
    into 64 buckets appended to temporary files ($TMPDIR); result() then sorts and counts one
    bucket at a time. Buckets follow id order, so the output comes out sorted, and memory is
    bounded by the largest bucket rather than by all k-mers (the approach of disk-based counters).
    """

    BUCKET_BITS = 6

    def __init__(self, k: int, canonical: bool = False) -> None:
        if not 1 <= k <= MAX_COUNT_K:
            raise ValueError(f"k must be 1..{MAX_COUNT_K} for counting")
        self.k, self.canonical = k, canonical
        self._dense = np.zeros(4**k, dtype=np.uint64) if k <= _DENSE_COUNT_K else None
        self._tmp = None
        if self._dense is None:
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="genointerp-kmers-")
            self._shift = np.uint64(2 * k - self.BUCKET_BITS)
            self._files = [open(f"{self._tmp.name}/{b}.u64", "wb") for b in range(1 << self.BUCKET_BITS)]

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
        bucket = (ids >> self._shift).astype(np.uint8)
        order = np.argsort(bucket, kind="stable")  # radix sort on uint8
        ids, bucket = ids[order], bucket[order]
        bounds = np.searchsorted(bucket, np.arange((1 << self.BUCKET_BITS) + 1))
        for b in np.flatnonzero(np.diff(bounds)):
            ids[bounds[b] : bounds[b + 1]].tofile(self._files[b])

    def result(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (ids uint64, counts uint64) chunks in increasing id order, every k-mer seen once."""
        if self._dense is not None:
            keys = np.flatnonzero(self._dense).astype(np.uint64)
            yield keys, self._dense[keys.astype(np.intp)]
            return
        try:
            for f in self._files:
                f.close()
                ids = np.fromfile(f.name, dtype=np.uint64)
                if ids.size:
                    ids.sort()
                    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
                    yield ids[first], np.diff(np.r_[first, ids.size]).astype(np.uint64)
                    del ids
        finally:
            self.close()

    def close(self) -> None:
        if self._tmp is not None:
            for f in self._files:
                f.close()
            self._tmp.cleanup()
            self._tmp = None
