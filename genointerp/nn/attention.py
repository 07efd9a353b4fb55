"""Multi-head scaled dot-product attention that can hand back its weights.

softmax(Q K^T / sqrt(d_head) + bias + mask) V per head, with Q, K, V linear projections of the
input and an output projection. Without weights requested it runs torch's fused
scaled_dot_product_attention; with them it computes the same formula explicitly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from genointerp.nn.positional import RelativePositionKeys, RotaryEmbedding


class MultiHeadAttention(nn.Module):
    """Self-attention over x (B, T, D) with h heads of size D/h.

    Parameters match torch.nn.MultiheadAttention: in_proj (3D x D + 3D bias) and out_proj.
    position: None, "relative" (Shaw keys, clipped at max_distance) or "rope".
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, position: str | None = None,
                 max_distance: int = 32) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by {n_heads} heads")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout
        self.relative = RelativePositionKeys(self.d_head, max_distance) if position == "relative" else None
        self.rope = RotaryEmbedding(self.d_head) if position == "rope" else None
        self.capture = None  # a callable given (module, weights (B, H, T, T)) by interpretation tools

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, causal: bool = False,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: float (B, T, D); key_padding_mask: bool (B, T), True = padding (never attended to).

        Returns (output (B, T, D), weights (B, H, T, T) or None), both of x's dtype.
        """
        b, t, _ = x.shape
        q, k, v = self.in_proj(x).view(b, t, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        bias = None
        if self.relative is not None:
            bias = self.relative(q) / math.sqrt(self.d_head)
        mask = attention_mask(key_padding_mask, causal, t, x.device)
        if mask is not None:
            neg = torch.zeros(mask.shape, dtype=q.dtype, device=x.device).masked_fill(~mask, float("-inf"))
            bias = neg if bias is None else bias + neg
        want = need_weights or self.capture is not None
        drop = self.dropout if self.training else 0.0
        if not want:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=drop)
            weights = None
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
            if bias is not None:
                scores = scores + bias
            weights = scores.softmax(dim=-1)
            if self.capture is not None:
                self.capture(self, weights.detach())
            out = F.dropout(weights, drop, self.training) @ v
        out = self.out_proj(out.transpose(1, 2).reshape(b, t, self.d_model))
        return out, weights if need_weights else None


def attention_mask(key_padding_mask: torch.Tensor | None, causal: bool, t: int, device) -> torch.Tensor | None:
    """Boolean (B or 1, 1, T, T) mask, True = may attend; None when nothing is masked."""
    mask = None
    if causal:
        mask = torch.ones(t, t, dtype=torch.bool, device=device).tril()[None, None]
    if key_padding_mask is not None:
        keep = ~key_padding_mask[:, None, None, :]
        mask = keep if mask is None else mask & keep
    return mask
