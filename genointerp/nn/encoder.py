"""Transformer encoder layer with post-LayerNorm (Vaswani et al., XVir) or pre-LayerNorm placement."""

from __future__ import annotations

import torch
from torch import nn

from genointerp.nn.attention import MultiHeadAttention


class EncoderLayer(nn.Module):
    """x (B, T, D) -> (B, T, D): self-attention and a ReLU feed-forward D -> d_ff -> D, each with
    dropout and a residual connection, normalised after (post-LN) or before (pre-LN) each block."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 position: str | None = None) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, position=position)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x float (B, T, D); key_padding_mask bool (B, T), True = padding -> (x' (B, T, D),
        attention weights (B, H, T, T) with need_weights, else None), both of x's dtype."""
        if self.norm_first:
            a, w = self.attn(self.norm1(x), key_padding_mask, need_weights=need_weights)
            x = x + self.drop1(a)
            x = x + self.drop2(self.ff(self.norm2(x)))
        else:
            a, w = self.attn(x, key_padding_mask, need_weights=need_weights)
            x = self.norm1(x + self.drop1(a))
            x = self.norm2(x + self.drop2(self.ff(x)))
        return x, w
