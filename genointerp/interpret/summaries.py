"""Summaries of captured attention (numpy only): distance, dense maps, rollout, a streaming mean.

mean attention distance  for each query, sum_k a_qk |centre_q - centre_k| in bp, averaged over
                         queries and windows (not the one window of a shifted layer that wraps
                         around the sequence end): how far a head looks (local vs long-range). The
                         uniform reference is the same quantity for a head attending evenly over
                         its window, so distance / uniform < 1 means more local than the window allows.
attention rollout        Abnar & Zuidema (2020): each layer's head-averaged attention plus the
                         residual path, A' = 0.5 A + 0.5 I (rows sum to 1), multiplied through the
                         layers. Between layers whose token grids differ (1D-Swin patch merging,
                         the central crop) a token of the coarser grid is the mean of the finer
                         tokens it covers, which is the same kind of row-stochastic step. The product
                         maps output tokens to input tokens; its rows sum to 1. Convolutions, the
                         feed-forward blocks and value vectors are ignored, as in the method itself.
importance               the rollout's mean row: how much of the output the model routes from each
                         input token; spread over bp and scaled so that 1 = uniform over the input.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from genointerp.interpret.capture import LayerMaps, TokenGrid

RESIDUAL = 0.5  # Abnar & Zuidema's weight of the identity (residual connection)


# --- distances ---------------------------------------------------------------------------------
def window_positions(layer: LayerMaps) -> np.ndarray:
    """float64 (n_windows, window) centre in bp of the token at every window slot."""
    return layer.grid.centres()[layer.token_index]


def unwrapped_windows(layer: LayerMaps) -> np.ndarray:
    """bool (n_windows,): windows of consecutive tokens. A shifted layer's last window wraps
    around (it joins the sequence's last and first tokens, because the roll has no mask); the
    distances it spans are an artefact of the roll, so distance summaries leave it out."""
    idx = layer.token_index
    return (np.diff(idx, axis=1) == 1).all(axis=1) if idx.shape[1] > 1 else np.ones(idx.shape[0], bool)


def mean_distance(weights: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Mean attention distance float64 (B, H) in bp.

    weights float (B, H, n_win, w, w) rows summing to 1; positions (n_win, w) bp of every window slot.
    Averaged over every query of every window given.
    """
    d = np.abs(positions[:, :, None] - positions[:, None, :])  # (n_win, q, k)
    per_query = np.einsum("bhnqk,nqk->bhnq", weights.astype(np.float64), d)
    return per_query.mean(axis=(2, 3))


def layer_mean_distance(layer: LayerMaps) -> np.ndarray:
    """float64 (B, H) mean attention distance in bp of every item and head of a captured layer
    (over the windows that do not wrap around the sequence end)."""
    keep = unwrapped_windows(layer)
    return mean_distance(layer.weights[:, :, keep], window_positions(layer)[keep])


def uniform_distance(layer: LayerMaps) -> float:
    """Mean attention distance (bp, a float) of a head attending uniformly within each (unwrapped)
    window."""
    pos = window_positions(layer)[unwrapped_windows(layer)]
    return float(np.abs(pos[:, :, None] - pos[:, None, :]).mean())


# --- dense maps --------------------------------------------------------------------------------
def dense_map(layer: LayerMaps, item: int = 0, head: int | None = None,
              tokens: np.ndarray | None = None) -> np.ndarray:
    """float32 (n, n) attention between `tokens` (int, n of them; default all, in sequence order)
    of one item.

    head None = mean over heads. Pairs in different windows are 0 (they never attend).
    """
    w = layer.weights[item]
    w = w.mean(axis=0) if head is None else w[head]  # (n_win, q, k)
    n_tok = layer.grid.tokens
    sel = np.arange(n_tok) if tokens is None else np.asarray(tokens, dtype=np.int64)
    where = np.full(n_tok, -1, dtype=np.int64)
    where[sel] = np.arange(sel.size)
    slot = where[layer.token_index]  # (n_win, w) row/column in the output, -1 = not selected
    q = np.broadcast_to(slot[:, :, None], w.shape)
    k = np.broadcast_to(slot[:, None, :], w.shape)
    keep = (q >= 0) & (k >= 0)
    out = np.zeros((sel.size, sel.size), dtype=np.float32)
    out[q[keep], k[keep]] = w[keep]
    return out


# --- rollout ---------------------------------------------------------------------------------------
def _apply_layer(r: np.ndarray, layer: LayerMaps, residual: float) -> np.ndarray:
    """r (B, m, tokens) @ (residual I + (1 - residual) mean_h A) for every item, window by window."""
    idx = layer.token_index  # (n_win, w), a partition of the tokens
    a = layer.weights.mean(axis=1, dtype=np.float64)  # (B, n_win, w, w)
    rw = r[:, :, idx]  # (B, m, n_win, w)
    mixed = np.einsum("bmnq,bnqk->bmnk", rw, a)
    out = np.empty_like(r)
    out[:, :, idx] = mixed
    return residual * r + (1 - residual) * out


def _transition(r: np.ndarray, coarse: TokenGrid, fine: TokenGrid) -> np.ndarray:
    """r (B, m, coarse.tokens) @ T (coarse.tokens, fine.tokens), T[c, f] = 1 / children(c) when
    fine token f lies inside coarse token c: a coarse token is the mean of the fine ones it covers
    (patch merging), and fine tokens outside every coarse one get nothing (the central crop)."""
    if coarse == fine:
        return r
    if coarse.span_bp != coarse.resolution_bp or fine.span_bp != fine.resolution_bp or \
            coarse.resolution_bp % fine.resolution_bp:
        raise ValueError(f"cannot map tokens of {coarse} onto {fine}")
    f_start = fine.starts()
    parent = np.floor_divide(f_start - coarse.offset_bp, coarse.resolution_bp)
    inside = (parent >= 0) & (parent < coarse.tokens) & \
             (f_start + fine.span_bp <= coarse.offset_bp + (parent + 1) * coarse.resolution_bp)
    children = np.bincount(parent[inside], minlength=coarse.tokens)
    if (children == 0).any():
        raise ValueError(f"tokens of {coarse} cover no token of {fine}")
    out = np.zeros(r.shape[:2] + (fine.tokens,), dtype=r.dtype)
    p = parent[inside]
    out[:, :, inside] = r[:, :, p] / children[p]
    return out


def rollout(layers: Sequence[LayerMaps], out_grid: TokenGrid, start: np.ndarray | None = None,
            residual: float = RESIDUAL) -> tuple[np.ndarray, TokenGrid]:
    """Attention rollout from output tokens back to the first layer's input tokens.

    start: float (m, out_grid.tokens) rows to roll back (default the identity: one row per output
    token). Returns (R float64 (B, m, n_in), the input grid); rows of R sum to 1 when the rows
    of `start` do.
    """
    if not layers:
        raise ValueError("rollout needs at least one attention layer")
    b = layers[0].weights.shape[0]
    m0 = np.eye(out_grid.tokens) if start is None else np.asarray(start, dtype=np.float64)
    r = np.broadcast_to(m0, (b,) + m0.shape).astype(np.float64)
    grid = out_grid
    for layer in reversed(layers):
        r = _transition(r, grid, layer.grid)
        r = _apply_layer(r, layer, residual)
        grid = layer.grid
    return r, grid


def rollout_importance(layers: Sequence[LayerMaps], out_grid: TokenGrid,
                       residual: float = RESIDUAL) -> tuple[np.ndarray, TokenGrid]:
    """(float64 (B, n_in) mean rollout row (sums to 1 per item): each input token's share of the
    output, the input grid)."""
    start = np.full((1, out_grid.tokens), 1.0 / out_grid.tokens)
    r, grid = rollout(layers, out_grid, start, residual)
    return r[:, 0, :], grid


def per_bp(importance: np.ndarray, grid: TokenGrid, length_bp: int) -> np.ndarray:
    """importance float (B, grid.tokens) (or (grid.tokens,)) -> float64 (B, length_bp): spread evenly
    over the bp each token covers, times length_bp, so that 1 = uniform over the input (before the
    per-bp spread, the tokens' shares sum to 1)."""
    importance = np.atleast_2d(importance)
    out = np.zeros((importance.shape[0], length_bp), dtype=np.float64)
    starts = grid.starts()
    for j in range(grid.span_bp):  # span_bp is small (k for XVir, the token width otherwise)
        pos = starts + j
        ok = (pos >= 0) & (pos < length_bp)
        out[:, pos[ok]] += importance[:, ok] / grid.span_bp  # starts are distinct: no repeated index
    return out * length_bp


# --- streaming mean --------------------------------------------------------------------------------
class AttentionAccumulator:
    """Running means over many reads/regions, holding one map per layer rather than one per item:
    attention maps, per-head mean distances and rollout importance."""

    def __init__(self) -> None:
        self.n = 0
        self._template: list[LayerMaps] | None = None
        self._weights: list[np.ndarray] = []
        self._distance: list[np.ndarray] = []
        self._importance: np.ndarray | None = None

    def add(self, layers: Sequence[LayerMaps], importance: np.ndarray | None = None) -> None:
        """Add a batch: captured layers (all with the same B, weights float (B, H, n_windows, w, w))
        and optionally importance float (B, n)."""
        b = layers[0].weights.shape[0]
        if self._template is None:
            self._template = [layer.with_weights(layer.weights[:0]) for layer in layers]
            self._weights = [np.zeros(layer.weights.shape[1:], dtype=np.float64) for layer in layers]
            self._distance = [np.zeros(layer.heads, dtype=np.float64) for layer in layers]
        elif [lay.weights.shape[1:] for lay in layers] != [w.shape for w in self._weights]:
            raise ValueError("every batch added to an accumulator needs the same layers and shapes")
        for i, layer in enumerate(layers):
            self._weights[i] += layer.weights.sum(axis=0, dtype=np.float64)
            self._distance[i] += layer_mean_distance(layer).sum(axis=0)
        if importance is not None:
            imp = np.asarray(importance, dtype=np.float64).sum(axis=0)
            self._importance = imp if self._importance is None else self._importance + imp
        self.n += b

    def _check(self) -> None:
        if not self.n:
            raise ValueError("nothing was added to the accumulator")

    def mean_layers(self) -> list[LayerMaps]:
        """The layers with weights float32 (1, H, n_windows, w, w): the mean over every item added."""
        self._check()
        return [t.with_weights((w / self.n).astype(np.float32)[None]) for t, w in zip(self._template, self._weights)]

    def mean_distance(self) -> list[np.ndarray]:
        """Per layer, float64 (H,) mean attention distance in bp over every item added (= the mean of
        the per-item distances, which equals the distance of the mean map: it is linear)."""
        self._check()
        return [d / self.n for d in self._distance]

    def mean_importance(self) -> np.ndarray | None:
        """float64 (n,) mean importance over every item added, or None when none was given."""
        self._check()
        return None if self._importance is None else self._importance / self.n
