"""Track-prediction evaluation: streaming per-track Pearson r, group summaries, TSV, figures.

The metric is the Genomic Interpreter paper's (and Enformer's): for each track, Pearson r between
predicted and observed signal over every bin of every test window pooled together. numpy and
matplotlib (Agg, no pyplot state) only, so the evaluation never needs torch.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

SUMMARY_TRACK = "(mean)"  # the `track` field of summary rows in the evaluation TSV
ALL = "ALL"  # the group name of the summary over every track


class PearsonAccumulator:
    """Per-track Pearson r accumulated batch by batch (bounded memory).

    Each batch's count, means and centred sums of squares/products are merged into the running
    totals with Chan et al.'s pairwise update, in float64: plain sums (Σx², Σxy) cancel
    catastrophically when the signal has a large offset relative to its spread.
    """

    def __init__(self, n_tracks: int) -> None:
        self.n_tracks = n_tracks
        self.n = 0
        self.mean_x = np.zeros(n_tracks)
        self.mean_y = np.zeros(n_tracks)
        self.sxx = np.zeros(n_tracks)  # Σ (x - mean_x)²
        self.syy = np.zeros(n_tracks)
        self.sxy = np.zeros(n_tracks)  # Σ (x - mean_x)(y - mean_y)
        # exact constancy test: centred sums of a constant are rounding noise, not 0
        self.min_x = np.full(n_tracks, np.inf)
        self.max_x = np.full(n_tracks, -np.inf)
        self.min_y = np.full(n_tracks, np.inf)
        self.max_y = np.full(n_tracks, -np.inf)

    def update(self, pred, truth) -> None:
        """pred, truth: (B, bins, T) or (N, T) arrays (any float dtype) of the same shape."""
        x = np.asarray(pred, dtype=np.float64)
        y = np.asarray(truth, dtype=np.float64)
        if x.shape != y.shape or x.ndim < 1 or x.shape[-1] != self.n_tracks:
            raise ValueError(f"pred {x.shape} and truth {y.shape} must match and end in {self.n_tracks} tracks")
        x = x.reshape(-1, self.n_tracks)
        y = y.reshape(-1, self.n_tracks)
        m = x.shape[0]
        if m == 0:
            return
        bx, by = x.mean(axis=0), y.mean(axis=0)
        dx, dy = x - bx, y - by
        n = self.n + m
        delta_x, delta_y = bx - self.mean_x, by - self.mean_y
        weight = self.n * m / n
        self.sxx += np.einsum("ij,ij->j", dx, dx) + delta_x * delta_x * weight
        self.syy += np.einsum("ij,ij->j", dy, dy) + delta_y * delta_y * weight
        self.sxy += np.einsum("ij,ij->j", dx, dy) + delta_x * delta_y * weight
        self.mean_x += delta_x * (m / n)
        self.mean_y += delta_y * (m / n)
        self.n = n
        np.minimum(self.min_x, x.min(axis=0), out=self.min_x)
        np.maximum(self.max_x, x.max(axis=0), out=self.max_x)
        np.minimum(self.min_y, y.min(axis=0), out=self.min_y)
        np.maximum(self.max_y, y.max(axis=0), out=self.max_y)

    def merge(self, other: "PearsonAccumulator") -> None:
        """Add another accumulator's data (e.g. gathered from other DDP ranks)."""
        if other.n_tracks != self.n_tracks:
            raise ValueError("accumulators have different track counts")
        if other.n == 0:
            return
        n = self.n + other.n
        delta_x, delta_y = other.mean_x - self.mean_x, other.mean_y - self.mean_y
        weight = self.n * other.n / n
        self.sxx += other.sxx + delta_x * delta_x * weight
        self.syy += other.syy + delta_y * delta_y * weight
        self.sxy += other.sxy + delta_x * delta_y * weight
        self.mean_x += delta_x * (other.n / n)
        self.mean_y += delta_y * (other.n / n)
        self.n = n
        for name, pick in (("min_x", np.minimum), ("max_x", np.maximum), ("min_y", np.minimum), ("max_y", np.maximum)):
            pick(getattr(self, name), getattr(other, name), out=getattr(self, name))

    def result(self) -> np.ndarray:
        """float64 (T,) Pearson r per track; NaN where prediction or truth is constant (or no data,
        or NaN in the inputs)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.sxy / np.sqrt(self.sxx * self.syy)
        constant = ~(self.max_x > self.min_x) | ~(self.max_y > self.min_y)
        r[constant] = np.nan
        return np.clip(r, -1.0, 1.0)


def _nanmean(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else math.nan


def group_means(r, groups: Sequence[str]) -> dict[str, float]:
    """{group: mean r over its tracks, ignoring NaN} in order of first appearance, then
    'ALL': the mean over every track. A group whose tracks are all NaN gets NaN."""
    r = np.asarray(r, dtype=np.float64)
    if len(groups) != r.shape[0]:
        raise ValueError(f"{len(groups)} group labels for {r.shape[0]} tracks")
    if ALL in groups:
        raise ValueError(f"{ALL!r} is reserved for the overall mean; rename that track group")
    labels = np.asarray(groups, dtype=object)
    out = {g: _nanmean(r[labels == g]) for g in dict.fromkeys(groups)}
    out[ALL] = _nanmean(r)
    return out


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def write_evaluation_tsv(path, track_ids: Sequence[str], groups: Sequence[str], r,
                         extra_columns: dict[str, Sequence] | None = None) -> None:
    """Write the per-track evaluation table, tab-separated, one header line:

        track  group  pearson  [extra columns in the given order]
        <one row per track, in the given order>
        (mean) <group>  <mean pearson>  [mean of each numeric extra column, else NA]   per group
        (mean) ALL      <mean pearson>  [...]                                         last row

    Summary rows are told apart by track == "(mean)"; their means ignore NaN (tracks whose
    prediction or truth was constant). Numbers have 6 significant digits, NaN is written "nan".
    """
    r = np.asarray(r, dtype=np.float64)
    extra = dict(extra_columns or {})
    n = len(track_ids)
    if len(groups) != n or r.shape != (n,) or any(len(v) != n for v in extra.values()):
        raise ValueError("track_ids, groups, r and every extra column must have one entry per track")
    means = group_means(r, groups)
    labels = np.asarray(groups, dtype=object)
    lines = ["\t".join(["track", "group", "pearson", *extra])]
    for i in range(n):
        lines.append("\t".join([track_ids[i], groups[i], _cell(r[i]), *(_cell(v[i]) for v in extra.values())]))
    for group, mean in means.items():
        mask = np.ones(n, bool) if group == ALL else labels == group
        cells = []
        for values in extra.values():
            arr = np.asarray(values)
            cells.append(_cell(_nanmean(arr[mask].astype(np.float64))) if arr.dtype.kind in "fiub" else "NA")
        lines.append("\t".join([SUMMARY_TRACK, group, _cell(mean), *cells]))
    Path(path).write_text("\n".join(lines) + "\n")


def _figure(width: float, height: float):
    from matplotlib.figure import Figure  # lazy: keeps `genointerp --help` fast

    return Figure(figsize=(width, height), layout="constrained")


def _save(fig, path) -> None:
    # no Software/timestamp entries, so the file depends on the data only (as far as Agg allows)
    fig.savefig(path, format="png", dpi=120, metadata={"Software": None})


def plot_pearson_scatter(r_a, r_b, groups: Sequence[str], label_a: str, label_b: str, path) -> None:
    """The paper's Figure 2: per-track Pearson r of model A (x) against model B (y).

    r_a, r_b: (T,) per-track r; groups: T labels (colours). Tracks with NaN in either are left
    out; the legend gives each group's mean r for A and B, the title how many tracks B beats A on.
    """
    r_a, r_b = np.asarray(r_a, np.float64), np.asarray(r_b, np.float64)
    labels = np.asarray(groups, dtype=object)
    ok = ~np.isnan(r_a) & ~np.isnan(r_b)
    import matplotlib  # lazy, as in _figure: only the figures need it

    fig = _figure(5.2, 5.0)
    ax = fig.add_subplot()
    cmap = matplotlib.colormaps["tab10"]
    for k, group in enumerate(dict.fromkeys(groups)):
        sel = ok & (labels == group)
        if not sel.any():
            continue
        ax.scatter(r_a[sel], r_b[sel], s=14, alpha=0.75, color=cmap(k % 10), linewidths=0,
                   label=f"{group} (n={sel.sum()}): {r_a[sel].mean():.3f} vs {r_b[sel].mean():.3f}")
    finite = np.concatenate([r_a[ok], r_b[ok]])
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(1.0, float(finite.max())) if finite.size else 1.0
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=0.8, ls="--", zorder=0)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel(f"{label_a} Pearson r")
    ax.set_ylabel(f"{label_b} Pearson r")
    wins = int((r_b[ok] > r_a[ok]).sum())
    ax.set_title(f"{label_b} beats {label_a}\non {wins} of {int(ok.sum())} tracks", fontsize=10)
    if ok.any():
        ax.legend(fontsize=7, loc="lower right", title=f"group (n): mean {label_a} vs {label_b}",
                  title_fontsize=7)
    _save(fig, path)


def plot_region(pred, truth, bin_starts, chrom: str, track_ids: Sequence[str], path,
                max_tracks: int = 6) -> None:
    """The paper's Figure 3: predicted (line) against observed (filled) signal along a region.

    pred, truth: (bins, T); bin_starts: (bins,) 0-based genomic start of each bin, increasing;
    one panel per track for the first `max_tracks` tracks, x axis in Mb on `chrom`.
    """
    pred, truth = np.asarray(pred, np.float64), np.asarray(truth, np.float64)
    starts = np.asarray(bin_starts, dtype=np.int64)
    if pred.shape != truth.shape or pred.ndim != 2 or not pred.size or starts.shape != (pred.shape[0],):
        raise ValueError(f"pred {pred.shape} and truth {truth.shape} must be (bins, T) with {starts.shape[0]} bins")
    if len(track_ids) != pred.shape[1]:
        raise ValueError(f"{len(track_ids)} track ids for {pred.shape[1]} tracks")
    bin_size = int(np.median(np.diff(starts))) if starts.size > 1 else 1
    edges = np.append(starts, starts[-1] + bin_size) / 1e6  # step plots need the last bin's end
    shown = min(max_tracks, pred.shape[1])
    fig = _figure(8.0, 1.0 + 1.3 * shown)
    axes = fig.subplots(shown, 1, sharex=True, squeeze=False)[:, 0]
    for t, ax in enumerate(axes):
        ax.stairs(truth[:, t], edges, fill=True, color="0.75", label="observed")
        ax.stairs(pred[:, t], edges, color="tab:blue", lw=1.0, label="predicted")
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.corrcoef(pred[:, t], truth[:, t])[0, 1] if pred.shape[0] > 1 else math.nan
        ax.set_title(f"{track_ids[t]}  (r = {r:.3f})", fontsize=8, loc="left")
        ax.tick_params(labelsize=7)
        ax.set_xlim(edges[0], edges[-1])
    axes[0].legend(fontsize=7, loc="upper right", frameon=False)
    axes[-1].set_xlabel(f"{chrom} position (Mb)")
    fig.suptitle(f"{chrom}:{starts[0] + 1:,}-{starts[-1] + bin_size:,}", fontsize=10)
    _save(fig, path)
