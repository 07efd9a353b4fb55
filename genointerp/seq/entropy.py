"""Shannon entropy of the letter composition of sliding windows: how low in complexity a stretch is."""

from __future__ import annotations

import numpy as np


def window_entropy(codes: np.ndarray, w: int, n_symbols: int) -> np.ndarray:
    """float64 (..., c - w + 1): the Shannon entropy (bits) of the composition of each window of w
    along the last axis of codes (..., c); letters are 0 .. n_symbols - 1 and any other code
    counts to no letter (an N takes its share of the window from every letter).

    Counts come from running sums, so this costs one pass per letter whatever w is, and each
    count's term -f log2 f (f = count / w) comes from a table of w + 1 values, not a log per window.
    """
    c = codes.shape[-1]
    if c < w:
        return np.zeros(codes.shape[:-1] + (0,))
    f = np.arange(w + 1) / w
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(f > 0, -f * np.log2(f), 0.0)
    entropy = np.zeros(codes.shape[:-1] + (c - w + 1,))
    start = np.zeros(codes.shape[:-1] + (1,), np.int32)
    for letter in range(n_symbols):
        running = np.concatenate([start, np.cumsum(codes == letter, axis=-1, dtype=np.int32)], axis=-1)
        entropy += term[running[..., w:] - running[..., :-w]]
    return entropy
