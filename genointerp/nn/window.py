"""Windowed self-attention for 1D-Swin: attention inside non-overlapping windows, optionally shifted."""

from __future__ import annotations

import torch
from torch import nn

from genointerp.nn.attention import MultiHeadAttention


class WindowAttention(nn.Module):
    """x (B, T, D) -> (B, T, D): split T into T/window windows, attend within each.

    shift > 0 rolls the sequence left by `shift` first (tokens past the end re-enter at the start)
    and back afterwards, so windows straddle the previous layer's window borders.
    Weights, when asked for, are (B, n_windows, H, window, window).
    """

    def __init__(self, d_model: int, n_heads: int, window: int, shift: int = 0, dropout: float = 0.0,
                 position: str | None = "relative") -> None:
        super().__init__()
        if not 0 <= shift < window:
            raise ValueError("shift must be in [0, window)")
        self.window, self.shift = window, shift
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, position=position, max_distance=window - 1)

    def forward(self, x: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x float (B, T, D), T a multiple of window -> (out (B, T, D), weights
        (B, T / window, H, window, window) with need_weights, else None), both of x's dtype."""
        b, t, d = x.shape
        if t % self.window:
            raise ValueError(f"sequence length {t} is not a multiple of the window {self.window}")
        if self.shift:
            x = torch.roll(x, -self.shift, dims=1)
        n_win = t // self.window
        out, w = self.attn(x.reshape(b * n_win, self.window, d), need_weights=need_weights)
        out = out.reshape(b, t, d)
        if self.shift:
            out = torch.roll(out, self.shift, dims=1)
        if w is not None:
            w = w.reshape(b, n_win, *w.shape[1:])
        return out, w

    def aligned(self, x: torch.Tensor) -> torch.Tensor:
        """Attention within windows of x float (B, T, D) taken from its first token, without the
        roll: x is a run of whole (shifted) windows cut from a longer sequence."""
        b, t, d = x.shape
        return self.attn(x.reshape(b * (t // self.window), self.window, d))[0].reshape(b, t, d)
