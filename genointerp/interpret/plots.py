"""Attention figures (matplotlib Agg through Figure objects: no pyplot state, no display needed).

plot_layers       every layer side by side, head-averaged, the window holding a focus position
                  (Genomic Interpreter, Figure 4a)
plot_heads        every head of one layer, same window (Figure 4b)
plot_windows      every window of one layer, head-averaged (Figure 6)
plot_zoom         the attention between the tokens of a bp range, across window borders (Figure 7)
plot_kmer_map     one head of an XVir layer with the k-mer strings on both axes
plot_distance     mean attention distance per layer and head against the uniform reference
plot_rollout      rollout importance along the input

Axes show input coordinates: `origin` (the genomic start of the model window, 0 for reads) plus
each token's first bp. Rows are queries (attending), columns keys (attended to).
"""

from __future__ import annotations

import math
import textwrap
from typing import Sequence

import numpy as np

from genointerp.interpret.capture import LayerMaps
from genointerp.interpret.summaries import dense_map

CMAP = "viridis"


def _figure(width: float, height: float, constrained: bool = True):
    """A figure; constrained layout is tidy but slow with many panels, where callers place them."""
    from matplotlib.figure import Figure  # lazy: keeps `genointerp --help` fast

    return Figure(figsize=(width, height), layout="constrained" if constrained else None)


def _grid(fig, rows: int, cols: int, top_in: float = 0.7, bottom_in: float = 0.5, left_in: float = 0.6,
          wspace: float = 0.45, hspace: float = 0.75):
    """rows x cols axes placed with fixed margins in inches (no layout engine)."""
    w, h = fig.get_figwidth(), fig.get_figheight()
    fig.subplots_adjust(left=left_in / w, right=1 - 0.15 / w, bottom=bottom_in / h, top=1 - top_in / h,
                        wspace=wspace, hspace=hspace)
    return np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()


def _suptitle(fig, text: str, fontsize: float = 8) -> None:
    """A figure title wrapped to the figure's width (small figures would cut a long one off)."""
    chars = max(30, int(fig.get_figwidth() * 130 / fontsize))
    fig.suptitle(textwrap.fill(text, chars), fontsize=fontsize)


def _save(fig, path) -> None:
    # no Software/timestamp entries, so the file depends on the data only
    fig.savefig(path, format="png", dpi=110, metadata={"Software": None})


def window_of(layer: LayerMaps, bp: float) -> int:
    """Index of the window holding the token that covers input position `bp` (window-relative)."""
    t = int(np.clip((bp - layer.grid.offset_bp) // layer.grid.resolution_bp, 0, layer.grid.tokens - 1))
    return int(np.argwhere(layer.token_index == t)[0, 0])


def _ticks(ax, starts: np.ndarray, axis: str, n: int = 4) -> None:
    """A few ticks labelled with the bp coordinate of the token at that row/column."""
    size = starts.size
    pos = sorted(set(np.linspace(0, size - 1, min(n, size)).round().astype(int).tolist()))
    labels = [f"{int(starts[p]):,}" for p in pos]
    if axis in ("x", "both"):
        ax.set_xticks(pos, labels, fontsize=6, rotation=30, ha="right")
    if axis in ("y", "both"):
        ax.set_yticks(pos, labels, fontsize=6)


def _window_map(layer: LayerMaps, item: int, win: int, head: int | None) -> np.ndarray:
    w = layer.weights[item, :, win]
    return w.mean(axis=0) if head is None else w[head]


def _layer_title(layer: LayerMaps, distance: np.ndarray | None) -> str:
    res = layer.grid.resolution_bp
    title = f"{layer.index}: {layer.name}\n{res} bp/token, {layer.kind} {layer.window * res:,} bp"
    if distance is not None:
        title += f"\nmean distance {float(np.mean(distance)):,.0f} bp"
    return title


def plot_layers(layers: Sequence[LayerMaps], item: int, path, focus_bp: float, origin: int = 0,
                title: str = "", distances: Sequence[np.ndarray] | None = None, per_row: int = 7) -> None:
    """Figure 4a: one panel per layer, the head-averaged map of the window holding `focus_bp`.
    Each panel has its own colour scale, from 0 to the maximum given in its title."""
    n = len(layers)
    cols = min(n, per_row)
    rows = math.ceil(n / cols)
    fig = _figure(max(4.5, 2.2 * cols + 0.6), 2.75 * rows + 0.8, constrained=False)
    axes = _grid(fig, rows, cols, top_in=1.25)
    for i, layer in enumerate(layers):
        ax = axes[i]
        win = window_of(layer, focus_bp)
        m = _window_map(layer, item, win, None)
        ax.imshow(m, cmap=CMAP, vmin=0, interpolation="nearest")
        starts = origin + layer.grid.starts()[layer.token_index[win]]
        _ticks(ax, starts, "both")
        ax.set_title(_layer_title(layer, None if distances is None else distances[i]) + f"\nmax {m.max():.3g}",
                     fontsize=6.5)
    for ax in axes[n:]:
        ax.axis("off")
    _suptitle(fig, f"{title}: attention of every layer (mean over heads; query rows, key columns; "
                   "colour from 0 to each panel's max)", 9)
    _save(fig, path)


def plot_heads(layer: LayerMaps, item: int, path, window: int, origin: int = 0, title: str = "",
               distance: np.ndarray | None = None, per_row: int = 6) -> None:
    """Figure 4b: every head of one layer in one window."""
    h = layer.heads
    cols = min(h, per_row)
    rows = math.ceil(h / cols)
    fig = _figure(max(4.5, 2.7 * cols + 0.6), 2.6 * rows + 0.9, constrained=False)
    axes = _grid(fig, rows, cols, top_in=0.9, wspace=0.55, hspace=0.6)
    starts = origin + layer.grid.starts()[layer.token_index[window]]
    for j in range(h):
        ax = axes[j]
        im = ax.imshow(_window_map(layer, item, window, j), cmap=CMAP, vmin=0, interpolation="nearest")
        _ticks(ax, starts, "both")
        sub = f"head {j}" + (f"\nmean distance {float(distance[j]):,.0f} bp" if distance is not None else "")
        ax.set_title(sub, fontsize=7)
        fig.colorbar(im, ax=ax, shrink=0.7).ax.tick_params(labelsize=6)
    for ax in axes[h:]:
        ax.axis("off")
    _suptitle(fig, f"{title}: {_layer_title(layer, None).replace(chr(10), ', ')}; window {window}", 8)
    _save(fig, path)


def plot_windows(layer: LayerMaps, item: int, path, origin: int = 0, title: str = "",
                 max_windows: int = 64) -> None:
    """Figure 6: every window of one layer (head mean); more than `max_windows` are thinned evenly."""
    n_win = layer.n_windows
    shown = np.unique(np.linspace(0, n_win - 1, min(n_win, max_windows)).round().astype(int))
    cols = math.ceil(math.sqrt(shown.size))
    rows = math.ceil(shown.size / cols)
    fig = _figure(max(4.5, 1.35 * cols + 0.5), 1.45 * rows + 0.9, constrained=False)
    axes = _grid(fig, rows, cols, top_in=0.75, bottom_in=0.1, left_in=0.1, wspace=0.15, hspace=0.3)
    vmax = float(layer.weights[item].mean(axis=0)[shown].max())
    for ax, win in zip(axes, shown):
        ax.imshow(_window_map(layer, item, int(win), None), cmap=CMAP, vmin=0, vmax=vmax, interpolation="nearest")
        idx = layer.token_index[win]
        first = origin + int(layer.grid.starts()[idx[0]])
        ax.set_title(f"w{win} @{first:,}", fontsize=5)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes[shown.size:]:
        ax.axis("off")
    note = "" if shown.size == n_win else f" ({shown.size} of {n_win} shown, evenly spaced)"
    _suptitle(fig, f"{title}: {layer.name}, every window{note}; head mean, shared colour scale", 8)
    _save(fig, path)


def zoom_tokens(layer: LayerMaps, lo_bp: float, hi_bp: float, max_tokens: int = 512) -> np.ndarray:
    """Tokens of `layer` overlapping window-relative [lo_bp, hi_bp), at most max_tokens (centred)."""
    starts = layer.grid.starts()
    sel = np.flatnonzero((starts + layer.grid.span_bp > lo_bp) & (starts < hi_bp))
    if sel.size == 0:
        centre = int(np.clip(((lo_bp + hi_bp) / 2 - layer.grid.offset_bp) // layer.grid.resolution_bp,
                             0, layer.grid.tokens - 1))
        sel = np.array([centre])
    if sel.size > max_tokens:
        mid = sel.size // 2
        sel = sel[mid - max_tokens // 2: mid - max_tokens // 2 + max_tokens]
    return sel


def plot_zoom(layer: LayerMaps, item: int, tokens: np.ndarray, path, origin: int = 0, title: str = "",
              axis_label: str = "bp") -> None:
    """Figure 7: attention among `tokens` of one layer (head mean, then every head), window borders
    included (pairs in different windows are 0)."""
    panels = [None] + list(range(layer.heads)) if layer.heads > 1 else [0]
    cols = min(len(panels), 3)
    rows = math.ceil(len(panels) / cols)
    fig = _figure(max(4.5, 3.3 * cols + 0.6), 3.2 * rows + 0.9, constrained=False)
    axes = _grid(fig, rows, cols, top_in=0.7, bottom_in=0.85, left_in=0.95, wspace=0.7, hspace=0.55)
    starts = origin + layer.grid.starts()[tokens]
    for ax, head in zip(axes, panels):
        im = ax.imshow(dense_map(layer, item, head, tokens), cmap=CMAP, vmin=0, interpolation="nearest")
        _ticks(ax, starts, "both", n=5)
        ax.set_title("mean over heads" if head is None else f"head {head}", fontsize=8)
        ax.set_xlabel(f"key ({axis_label})", fontsize=7)
        ax.set_ylabel(f"query ({axis_label})", fontsize=7)
        fig.colorbar(im, ax=ax, shrink=0.7).ax.tick_params(labelsize=6)
    for ax in axes[len(panels):]:
        ax.axis("off")
    _suptitle(fig, f"{title}: {layer.name} zoomed on {int(starts[0]):,}-{int(starts[-1]) + layer.grid.span_bp:,} "
                 f"({tokens.size} tokens of {layer.grid.resolution_bp} bp)", 8)
    _save(fig, path)


def plot_kmer_map(layer: LayerMaps, item: int, kmers: Sequence[str], tokens: np.ndarray, path,
                  title: str = "", per_row: int = 2) -> None:
    """Every head of an XVir layer over `tokens`, rows and columns labelled with their k-mers
    (outer panels only; the top axis gives each k-mer's 0-based offset in the read)."""
    import matplotlib.ticker as mticker  # lazy, as in _figure: matplotlib only when drawing

    n, h = tokens.size, layer.heads
    cols = min(h, per_row)
    rows = math.ceil(h / cols)
    side = max(3.0, 0.075 * n + 0.8)
    font = 6 if n <= 40 else 4 if n <= 90 else 3
    fig = _figure(side * cols + 1.0, side * rows + 1.6, constrained=False)
    fig.subplots_adjust(left=0.9 / (side * cols + 1.0), bottom=0.8 / (side * rows + 1.6),
                        right=1 - 0.1 / (side * cols + 1.0), top=1 - 0.8 / (side * rows + 1.6), wspace=0.03,
                        hspace=0.25 / side)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False))
    labels = [kmers[t] for t in tokens]
    every = max(1, n // 15)
    for j, ax in enumerate(axes.ravel()):
        if j >= h:
            ax.axis("off")
            continue
        r, c = divmod(j, cols)
        ax.imshow(dense_map(layer, item, j, tokens), cmap=CMAP, vmin=0, interpolation="nearest", aspect="auto")
        bottom = r == rows - 1 or j + cols >= h
        ax.xaxis.set_major_locator(mticker.FixedLocator(np.arange(n) if bottom else []))
        ax.yaxis.set_major_locator(mticker.FixedLocator(np.arange(n) if c == 0 else []))
        if bottom:
            ax.set_xticklabels(labels, fontsize=font, rotation=90, family="monospace")
        if c == 0:
            ax.set_yticklabels(labels, fontsize=font, family="monospace")
        ax.tick_params(length=1, pad=1)
        top = ax.secondary_xaxis("top")
        pos = np.arange(0, n, every)
        top.set_xticks(pos, [str(int(tokens[p])) for p in pos], fontsize=5)
        ax.text(0.99, 0.01, f"head {j}", transform=ax.transAxes, ha="right", va="bottom", fontsize=8,
                color="white")
    _suptitle(fig, f"{title}: {layer.name}, k-mer x k-mer attention per head (query rows, key columns; "
                 "top: read offset, 0-based)", 9)
    _save(fig, path)


def plot_distance(layers: Sequence[LayerMaps], distances: Sequence[np.ndarray], uniform: Sequence[float], path,
                  title: str = "") -> None:
    """Mean attention distance (bp, log scale) of every head by layer, with the uniform reference."""
    fig = _figure(max(4.5, 0.45 * len(layers) + 2.5), 3.6, constrained=False)
    ax = _grid(fig, 1, 1, top_in=0.4, bottom_in=0.75, left_in=0.75)[0]
    x = np.arange(len(layers))
    for i, d in enumerate(distances):
        ax.scatter(np.full(d.size, i), np.maximum(d, 1e-3), s=16, color="tab:blue", zorder=3,
                   label="head" if i == 0 else None)
    ax.plot(x, np.maximum(np.asarray(uniform), 1e-3), color="0.5", ls="--", marker="_",
            label="uniform within the window")
    ax.plot(x, [max(float(np.mean(d)), 1e-3) for d in distances], color="tab:orange", label="mean over heads")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{lay.index}\n{lay.grid.resolution_bp} bp" for lay in layers], fontsize=6)
    ax.set_xlabel("layer (bp per token)", fontsize=8)
    ax.set_ylabel("mean attention distance (bp)", fontsize=8)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(f"{title}: how far each head looks", fontsize=9)
    _save(fig, path)


def plot_rollout(positions: np.ndarray, tracks: dict[str, np.ndarray], path, xlabel: str, title: str = "",
                 highlight: tuple[float, float] | None = None) -> None:
    """Rollout importance (1 = uniform) along the input; one line per entry of `tracks`."""
    fig = _figure(8.0, 2.8, constrained=False)
    ax = _grid(fig, 1, 1, top_in=0.35, bottom_in=0.55, left_in=0.85)[0]
    for label, values in tracks.items():
        ax.plot(positions, values, lw=0.8, label=label)
    if highlight is not None:
        ax.axvspan(*highlight, color="tab:red", alpha=0.12, lw=0, label="region")
    ax.axhline(1.0, color="0.6", lw=0.6, ls=":")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel("rollout importance\n(1 = uniform)", fontsize=8)
    ax.tick_params(labelsize=7)
    if len(tracks) <= 10:
        ax.legend(fontsize=6, frameon=False, loc="upper right")
    ax.set_title(title, fontsize=9)
    _save(fig, path)
