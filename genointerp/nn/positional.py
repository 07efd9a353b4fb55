"""Position encodings: absolute (sinusoidal, learned) added to token embeddings, and relative
ones applied inside attention (Shaw-style relative keys, rotary embeddings)."""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """Vaswani et al.'s fixed encodings, float32 (length, d_model): sin on even, cos on odd
    dimensions, wavelengths from 2*pi to 10000*2*pi."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: d_model // 2])
    return table


class SinusoidalPositions(nn.Module):
    """Adds fixed sinusoidal encodings (not learned, saved as a non-persistent buffer). x: (B, T, D)."""

    def __init__(self, max_length: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_table(max_length, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, T, D), T <= max_length -> float32 (B, T, D) with positions 0..T-1 added."""
        return x + self.table[: x.shape[1]]


class LearnedPositions(nn.Module):
    """Adds a learned vector per position. x: (B, T, D)."""

    def __init__(self, max_length: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_length, d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, T, D), T <= max_length -> float32 (B, T, D) with positions 0..T-1 added."""
        return x + self.table[: x.shape[1]]


class RelativePositionKeys(nn.Module):
    """Shaw et al. (2018) relative keys: score_ij += q_i . a_(j-i), offsets clipped to +-max_distance.

    One learned d_head vector per clipped offset, shared by the heads. Returns the additive score
    term for attention, (B, H, T, T).
    """

    def __init__(self, d_head: int, max_distance: int) -> None:
        super().__init__()
        self.max_distance = max_distance
        self.keys = nn.Parameter(torch.randn(2 * max_distance + 1, d_head) * 0.02)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """q: float (B, H, T, d_head), already scaled like the content scores -> additive scores
        (B, H, T, T) of q's dtype."""
        t = q.shape[-2]
        offset = torch.arange(t, device=q.device)[None, :] - torch.arange(t, device=q.device)[:, None]
        idx = offset.clamp(-self.max_distance, self.max_distance) + self.max_distance
        return torch.einsum("bhid,ijd->bhij", q, self.keys[idx])


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al.): rotate each (even, odd) pair of query/key dimensions by angle pos * theta_i,
    so q_i . k_j depends on positions only through j - i. Applied to (B, H, T, d_head)."""

    def __init__(self, d_head: int, base: float = 10000.0) -> None:
        super().__init__()
        if d_head % 2:
            raise ValueError("rotary embeddings need an even head dimension")
        self.register_buffer("inv_freq", base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x float (B, H, T, d_head) queries or keys at positions offset..offset+T-1 -> rotated,
        same shape and dtype."""
        t = x.shape[-2]
        angle = (torch.arange(t, device=x.device, dtype=torch.float32) + offset)[:, None] * self.inv_freq
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out
