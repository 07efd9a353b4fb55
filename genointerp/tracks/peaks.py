"""Peak calls on predicted tracks: maximal stretches of adjacent bins above a cut.

The cut is a fixed threshold (a bin qualifies at or above it) or a quantile of the track's bin
values (strictly above it: where ties pile up at the quantile, as zeros do on a track that is 0
over most bins, `>=` would make all of them one peak). Either way a bin needs a value above 0: no
signal is no peak, however low the cut. Peaks are
(chrom, start, end, max, mean) tuples (`io.track_writers.Peak`), written as BED by
`io.track_writers.write_peaks_bed`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from genointerp.io.track_writers import BinnedRun, Peak


def _check_one_cut(threshold: float | None, quantile: float | None) -> None:
    if (threshold is None) == (quantile is None):
        raise ValueError("give exactly one of threshold and quantile")
    if threshold is not None and not np.isfinite(threshold):
        raise ValueError(f"peak threshold {threshold} is not finite")
    if quantile is not None and not 0.0 <= quantile <= 1.0:
        raise ValueError(f"peak quantile {quantile} is not in [0, 1]")


def quantile_threshold(runs: Sequence[BinnedRun], track_index: int, quantile: float) -> float:
    """The `quantile` of one track's bin values over all runs (numpy's linear interpolation, in
    float64): column `track_index` of every run's float32 (n_bins, T) values."""
    _check_one_cut(None, quantile)
    if not runs:
        raise ValueError("no runs to compute a quantile over")
    values = np.concatenate([r.values[:, track_index] for r in runs])
    return float(np.quantile(values.astype(np.float64), quantile))


def call_peaks(
    run: BinnedRun,
    track_index: int,
    threshold: float | None = None,
    quantile: float | None = None,
) -> list[Peak]:
    """Peaks of one track in one run: maximal stretches of adjacent bins with value >= `threshold`, or
    > the `quantile` cut, and > 0.

    The track is column `track_index` of the run's float32 (n_bins, T) values. The cut is
    `threshold`, or the `quantile` of this run's values (use `call_peaks_all` to take the quantile
    over every run of the track). Returns [(chrom, start, end, max, mean)] in bin order, end
    clipped to the chromosome; max and mean (the plain mean of the stretch's bin values) are
    Python floats computed in float64.
    """
    _check_one_cut(threshold, quantile)
    if threshold is None:
        return _peaks(run, track_index, quantile_threshold([run], track_index, quantile), strict=True)
    return _peaks(run, track_index, threshold, strict=False)


def _peaks(run: BinnedRun, track_index: int, cut: float, strict: bool) -> list[Peak]:
    values = run.values[:, track_index]
    over = values > cut if strict else values >= cut
    above = np.concatenate([[False], over & (values > 0), [False]])
    edges = np.flatnonzero(above[1:] != above[:-1])
    firsts, lasts = edges[0::2], edges[1::2]  # stretch = bins [first, last)
    ends = run.bin_ends()
    peaks = []
    for a, b in zip(firsts.tolist(), lasts.tolist()):
        seg = values[a:b].astype(np.float64)
        start = run.start + a * run.bin_size
        peaks.append((run.chrom, start, int(ends[b - 1]), float(seg.max()), float(seg.mean())))
    return peaks


def call_peaks_all(
    runs: Sequence[BinnedRun],
    track_index: int,
    threshold: float | None = None,
    quantile: float | None = None,
) -> list[Peak]:
    """Peaks of one track (column `track_index` of every run's float32 (n_bins, T) values) over all
    runs in the given order, a quantile cut taken over all of the track's bins. Runs from
    `merge_regions` never touch, so no peak spans two runs."""
    _check_one_cut(threshold, quantile)
    if not runs:  # every bin was left out (all-N sequence): nothing to call
        return []
    cut = threshold if threshold is not None else quantile_threshold(runs, track_index, quantile)
    return [p for run in runs for p in _peaks(run, track_index, cut, strict=threshold is None)]
