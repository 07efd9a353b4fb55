"""Tile a region with model windows and stitch the per-window predictions into one binned run.

A model window is `seq_len` bp starting at `start`; it predicts `target_bins` bins of `bin_size` bp
covering its centre, from `target_start = start + (seq_len - target_bins * bin_size) // 2`.
Prediction bins lie on the chromosome's bin grid (multiples of `bin_size` from 0), so the outputs
of different regions and runs line up bin for bin with each other and with binned targets.

Windows overlap by `overlap_bins` target bins (at least; the last window is pulled back to end at
the run end, which can only add overlap). Windows may start before 0 or end past the chromosome:
the reference reader pads those bases with N.

numpy only: the caller runs the model and hands predictions to `Stitcher.add`.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from genointerp import options
from genointerp.errors import UsageError


def _check_geometry(seq_len: int, target_bins: int, bin_size: int) -> int:
    """Validate the window geometry; return the flank (bp) on each side of the targets."""
    if bin_size <= 0 or target_bins <= 0 or seq_len <= 0:
        raise ValueError(
            f"seq_len ({seq_len}), target_bins ({target_bins}) and bin_size ({bin_size}) "
            "must be positive"
        )
    spare = seq_len - target_bins * bin_size
    if spare < 0 or spare % 2:
        raise ValueError(
            f"seq_len ({seq_len}) minus target_bins * bin_size ({target_bins * bin_size}) "
            "must be even and non-negative"
        )
    return spare // 2


def plan_windows(
    start: int,
    end: int,
    chrom_length: int,
    seq_len: int,
    target_bins: int,
    bin_size: int,
    overlap_bins: int,
) -> tuple[np.ndarray, int, int]:
    """Windows covering the bins that overlap [start, end) of a chromosome.

    Returns (window_starts int64 (W,), run_start, n_bins): window starts in bp (may be negative or
    run past the chromosome end), the run's first bin start (a multiple of bin_size) and its
    bin count. Windows step by `target_bins - overlap_bins` bins; the last one is placed so its
    targets end exactly at the run end. A run shorter than one window's targets gets one window
    with the run centred in its targets, where the model sees the most context on both sides.
    Deterministic: the same arguments give the same windows.
    """
    flank = _check_geometry(seq_len, target_bins, bin_size)
    if not 0 <= overlap_bins < target_bins:
        raise ValueError(f"overlap_bins ({overlap_bins}) must be in [0, target_bins={target_bins})")
    if chrom_length <= 0:
        raise ValueError(f"chromosome length ({chrom_length}) must be positive")
    if not 0 <= start < end <= chrom_length:
        raise ValueError(
            f"region [{start}, {end}) must be non-empty and inside the chromosome "
            f"[0, {chrom_length})"
        )
    first_bin = start // bin_size
    last_bin = -(-end // bin_size)  # exclusive; a partial last bin at the chromosome end counts
    n_bins = last_bin - first_bin
    if n_bins <= target_bins:
        target_first = np.array([first_bin - (target_bins - n_bins) // 2], dtype=np.int64)
    else:
        stride = target_bins - overlap_bins
        n_regular = -(-(n_bins - target_bins) // stride)  # windows before the end-aligned one
        target_first = first_bin + np.arange(n_regular, dtype=np.int64) * stride
        target_first = np.append(target_first, np.int64(last_bin - target_bins))
    return target_first * bin_size - flank, first_bin * bin_size, n_bins


class Stitcher:
    """Assemble window predictions into one run of bins.

    Overlapping windows disagree most near their target edges, where one side of the bin has
    little sequence context; so each bin takes the prediction of the window in which it lies
    farthest from the target edges (ties go to the earlier window). Every bin then comes from
    exactly one window, fixed at construction, so the result does not depend on the order or the
    batching of `add` calls and is identical between runs.
    """

    def __init__(
        self,
        run_start: int,
        n_bins: int,
        n_tracks: int,
        bin_size: int,
        window_starts: Sequence[int] | np.ndarray,
        seq_len: int,
        target_bins: int,
    ) -> None:
        flank = _check_geometry(seq_len, target_bins, bin_size)
        if n_bins <= 0 or n_tracks <= 0:
            raise ValueError(f"n_bins ({n_bins}) and n_tracks ({n_tracks}) must be positive")
        starts = np.asarray(window_starts, dtype=np.int64).reshape(-1)
        offsets = starts + flank - run_start
        if np.any(offsets % bin_size):
            raise ValueError("window targets are not on the run's bin grid")
        self.n_bins, self.n_tracks, self.target_bins = n_bins, n_tracks, target_bins
        self.first = offsets // bin_size  # (W,) run bin index of each window's first target bin

        # owner[b]: window whose prediction bin b takes; processed in window order with a strict
        # comparison so ties keep the earlier window
        owner = np.full(n_bins, -1, dtype=np.int64)
        best = np.full(n_bins, -1, dtype=np.int64)
        for w, f in enumerate(self.first):
            lo, hi = max(f, 0), min(f + target_bins, n_bins)
            if lo >= hi:
                continue
            pos = np.arange(lo, hi, dtype=np.int64) - f
            depth = np.minimum(pos, target_bins - 1 - pos)
            better = depth > best[lo:hi]
            best[lo:hi][better] = depth[better]
            owner[lo:hi][better] = w
        if np.any(owner < 0):
            missing = int(np.flatnonzero(owner < 0)[0])
            raise ValueError(f"the windows leave run bin {missing} uncovered")
        # owned bins of a window are contiguous (nearest target centre wins); keep them as ranges
        n_win = len(starts)
        counts = np.bincount(owner, minlength=n_win)
        self._lo = np.full(n_win, 0, dtype=np.int64)
        self._hi = np.full(n_win, 0, dtype=np.int64)
        first_owned = np.searchsorted(owner, np.arange(n_win), side="left")
        has = counts > 0
        self._lo[has] = first_owned[has]
        self._hi[has] = first_owned[has] + counts[has]
        if not np.array_equal(np.repeat(np.arange(n_win), counts), owner):
            raise ValueError("window starts must be increasing")
        self._values = np.zeros((n_bins, n_tracks), dtype=np.float32)
        self._added = np.zeros(n_win, dtype=bool)

    @property
    def owner_ranges(self) -> np.ndarray:
        """int64 (W, 2): run bins [lo, hi) that each window supplies (lo == hi: none)."""
        return np.stack([self._lo, self._hi], axis=1)

    def add(self, window_index: int | Sequence[int] | np.ndarray, pred: np.ndarray) -> None:
        """Add predictions for one window, pred (target_bins, T), or a batch of windows,
        window_index (B,) with pred (B, target_bins, T). Each window must be added once."""
        idx = np.asarray(window_index, dtype=np.int64)
        pred = np.asarray(pred, dtype=np.float32)
        if idx.ndim == 0:
            idx, pred = idx[None], pred[None]
        if pred.shape != (len(idx), self.target_bins, self.n_tracks):
            raise ValueError(
                f"predictions of shape {pred.shape}, expected "
                f"({len(idx)}, {self.target_bins}, {self.n_tracks})"
            )
        if np.any((idx < 0) | (idx >= len(self._added))):
            raise ValueError(f"window index out of range [0, {len(self._added)})")
        if np.any(self._added[idx]) or len(np.unique(idx)) != len(idx):
            raise ValueError("a window's predictions were added twice")
        for i, w in enumerate(idx):
            lo, hi = self._lo[w], self._hi[w]
            off = lo - self.first[w]
            self._values[lo:hi] = pred[i, off : off + hi - lo]
        self._added[idx] = True

    def result(self) -> np.ndarray:
        """float32 (n_bins, T). Raises ValueError when a window that supplies bins is missing."""
        needed = (self._hi > self._lo) & ~self._added
        if np.any(needed):
            raise ValueError(
                f"{int(needed.sum())} window(s) not added, first window {int(np.argmax(needed))}"
            )
        return self._values


def _region_tuple(region) -> tuple[str, int, int]:
    if isinstance(region, tuple):
        chrom, start, end = region[:3]
    else:
        chrom, start, end = region.chrom, region.start, region.end
    return str(chrom), int(start), int(end)


def merge_regions(
    regions: Iterable, chrom_order: Sequence[str], bin_size: int = 1
) -> list[tuple[str, int, int]]:
    """Merge regions whose bins overlap or touch, sorted by reference order.

    regions: (chrom, start, end) tuples or objects with .chrom/.start/.end, 0-based half-open.
    chrom_order: chromosome names in reference (.fai) order. With `bin_size`, regions are compared
    on the bin grid: two regions that share or abut a bin become one, so their runs never overlap
    nor touch (one output entry per bin, peaks never split between runs). Returns
    [(chrom, start, end)] with the original (not bin-rounded) outer coordinates.
    """
    if bin_size <= 0:
        raise ValueError(f"bin_size ({bin_size}) must be positive")
    rank = {c: i for i, c in enumerate(chrom_order)}
    items = []
    for region in regions:
        chrom, start, end = _region_tuple(region)
        if chrom not in rank:
            raise ValueError(f"region {chrom}:{start}-{end}: chromosome not in the reference")
        if start >= end:
            raise ValueError(f"region {chrom}:{start}-{end} is empty")
        items.append((rank[chrom], start, end, chrom))
    items.sort()
    merged: list[tuple[str, int, int]] = []
    for _, start, end, chrom in items:
        if merged:
            m_chrom, m_start, m_end = merged[-1]
            # abutting bins: the next region's first bin is at most the previous one's end bin
            if m_chrom == chrom and start // bin_size <= -(-m_end // bin_size):
                merged[-1] = (chrom, m_start, max(m_end, end))
                continue
        merged.append((chrom, start, end))
    return merged


def shifted(x: np.ndarray, shift: int) -> np.ndarray:
    """One-hot x (B, L, 4) moved `shift` bp: the window that starts `shift` bp later (earlier when
    negative), read from x with N (all-zero rows) past its ends; a new array (x itself for 0)."""
    if shift == 0:
        return x
    out = np.zeros_like(x)
    if shift > 0:
        out[:, :-shift] = x[:, shift:]
    else:
        out[:, -shift:] = x[:, :shift]
    return out


# the options the track commands that run a model share (predict-tracks, evaluate-tracks, score-variants, ism)
def shifts_option():
    """--shifts (default 0: no shift), checked by parse_shifts."""
    return options.opt("0", "--shifts", help="Comma-separated input shifts in bp (e.g. -1,0,1): the predictions of the "
                       "window moved by each are averaged (Basenji's --shifts; one pass per shift, with --rc-average two).")


def rc_average_option():
    """--rc-average (default off): the mean of the forward and reverse-complement passes."""
    return options.opt(False, "--rc-average", help="Average the forward and reverse-complement predictions (the "
                       "reverse strand's bins flipped back; twice the time).")


def track_model_option():
    """-m/--model of the commands that run a track model (default: the built-in one)."""
    return options.model("Model directory from train-tracks (default: the built-in chr20 TF ChIP-seq model).")


def parse_shifts(text: str, option: str = "--shifts") -> tuple[int, ...]:
    """"-1,0,1" -> (-1, 0, 1): the input shifts in bp that --shifts averages over (Basenji's)."""
    try:
        shifts = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise UsageError(f"{option}: give whole numbers of bp separated by commas, e.g. -1,0,1 (got {text!r})") from None
    if len(set(shifts)) != len(shifts):
        raise UsageError(f"{option}: shift listed twice in {text!r}")
    if any(abs(s) > MAX_SHIFT for s in shifts):
        raise UsageError(f"{option}: shifts are at most {MAX_SHIFT} bp either way (got {text!r})")
    return shifts


MAX_SHIFT = 32  # bp: well inside the crop of every window geometry the track models use
