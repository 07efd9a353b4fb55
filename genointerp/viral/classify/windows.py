"""The model's windows of a batch of reads: every base covered by windows of the model's read length,
laid out in the fixed scoring passes of genointerp.viral.classify.blocks; a read's p_viral is its
best window's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp.seq.alphabet import INVALID, N_CODE
from genointerp.seq.kmers import tokenize
from genointerp.viral.classify.blocks import block_rows, pass_keys, pass_rows


def window_starts(starts: np.ndarray, lengths: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets (into the joined codes) of every window, and the read each belongs to."""
    per = np.where(lengths >= L, -(-lengths // L), 0)  # ceil(len / L) windows, the last one end-aligned
    read = np.repeat(np.arange(lengths.size), per)
    j = np.arange(read.size) - np.repeat(np.cumsum(per) - per, per)
    offset = np.minimum(j * L, lengths[read] - L)
    return starts[read] + offset, read


@dataclass
class Windows:
    """The model's windows of reads `which` (int (m,)) of a batch: tokens uint16 (R, n_tokens), R a
    multiple of PASS, laid out in passes by genointerp.viral.classify.blocks; where int (W,), the row of each
    window; read int (W,), the position in `which` of each window's read; status object (m,) of
    reads no window scores (too_short, ambiguous); keys int64 (R / PASS,), each pass's key within
    the batch (blocks.pass_keys); real int64 (R / PASS,), each pass's windows that are not
    padding (blocks.pass_rows)."""

    which: np.ndarray
    tokens: np.ndarray
    where: np.ndarray
    read: np.ndarray
    status: np.ndarray
    keys: np.ndarray
    real: np.ndarray


def model_windows(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, L: int, k: int, has_unknown: bool,
                  which: np.ndarray | None = None) -> Windows:
    """The windows of the reads `which` (int (m,), ascending; None: all n) of a batch given as codes
    joined by N (flat uint8 (M,); starts, lengths int64 (n,); see encode_joined). The batch must
    start on a block boundary of the input stream (genointerp.viral.classify.blocks): a read's forward pass
    holds only the chosen reads of its own block."""
    which = np.arange(len(lengths)) if which is None else which
    flat = np.where(flat == INVALID, N_CODE, flat)  # any odd character counts as an unknown base
    wstart, wsub = window_starts(starts[which], lengths[which], L)
    status = np.where(lengths[which] < L, "too_short", "ambiguous").astype(object)
    tokens, where = np.zeros((0, L - k + 1), np.uint16), np.zeros(0, np.int64)
    keys, real = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if wstart.size:
        mat = np.lib.stride_tricks.sliding_window_view(flat, L)[wstart]
        if not has_unknown:
            clean = ~(mat == N_CODE).any(axis=1)
            mat, wsub = mat[clean], wsub[clean]
        if wsub.size:
            rows, where = block_rows(which[wsub])  # blocks by the reads' places in the batch
            keys, real = pass_keys(which[wsub]), pass_rows(which[wsub])
            tokens = tokenize(mat[rows], k)
    return Windows(which, tokens, where, wsub if wstart.size else np.zeros(0, np.int64), status, keys, real)


def window_scores(windows: Windows, p_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p_viral float64 (m,) with NaN for unscored reads, and statuses object (m,), of the reads of
    `windows`, given P(viral) float64 (R,) of its token rows: a read's best window."""
    m = len(windows.which)
    p, status = np.full(m, np.nan), windows.status.copy()
    if windows.where.size:
        best = np.full(m, -1.0)
        np.maximum.at(best, windows.read, p_rows[windows.where])
        scored = best >= 0
        p[scored] = best[scored]
        status[scored] = "scored"
    return p, status
