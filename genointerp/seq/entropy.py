"""Shannon entropy of the letter composition of sliding windows: how low in complexity a stretch is."""

from __future__ import annotations

import numpy as np

from genointerp import _scan


def window_entropy(codes: np.ndarray, w: int, n_symbols: int) -> np.ndarray:
    """float64 (..., c - w + 1): the Shannon entropy (bits) of the composition of each window of w
    along the last axis of codes uint8 (..., c); letters are 0 .. n_symbols - 1 and any other code
    counts to no letter (an N takes its share of the window from every letter).

    Each window's counts slide from the previous window's, and each count's term -f log2 f
    (f = count / w) comes from a table of w + 1 values, not a log per window; the sum over the
    letters runs in letter order (genointerp/_scan.c; tests/test_entropy.py holds numpy's form,
    one pass per letter over running sums, and compares the bits).
    """
    if codes.dtype != np.uint8:
        raise TypeError(f"window_entropy takes uint8 letter codes, not {codes.dtype}")
    c = codes.shape[-1]
    if c < w:
        return np.zeros(codes.shape[:-1] + (0,))
    f = np.arange(w + 1) / w
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(f > 0, -f * np.log2(f), 0.0)
    rows = np.ascontiguousarray(codes).reshape(-1, c)
    out = np.empty((rows.shape[0], c - w + 1))
    if rows.shape[0]:
        _scan.window_entropy(rows, rows.shape[0], w, n_symbols, term, out)
    return out.reshape(codes.shape[:-1] + (c - w + 1,))
