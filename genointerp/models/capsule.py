"""DiseaseCapsule (Luo, Kang, Schönhuth, Nature Machine Intelligence): a capsule network over Gene-PCs.

Gene-PC vector x (B, F) -> [dropout] -> dense layer + ReLU -> [dropout] -> hidden (B, H) -> 1-D convolution over the hidden
vector (1 input channel, P*D_p output channels, kernel k, stride s) -> primary capsules u
(B, N, D_p) with N = P * L, L = (H - k) // s + 1, squashed -> prediction vectors û_{j|i} = W_ij u_i
(B, C, N, D_c) -> dynamic routing by agreement (r iterations) -> phenotype capsules v (B, C, D_c);
the score of class j is the length |v_j| (in [0, 1)). Coupling coefficients c_ij (B, N, C) say how
much primary capsule i sends to phenotype capsule j; they are the network's interpretation read-out.

Trainable parameters: F*H + H (dense) + P*D_p*k + P*D_p (convolution) + N*C*D_c*D_p (W).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from genointerp.models.config import ModelConfig


@dataclass(frozen=True)
class CapsuleConfig(ModelConfig):
    ARCHITECTURE: ClassVar[str] = "capsule"
    LABEL: ClassVar[str] = "a capsule"

    n_features: int
    n_classes: int = 2
    hidden: int = 256  # dense layer width H
    primary_channels: int = 32  # capsule channels P of the convolution
    primary_dim: int = 4  # D_p
    kernel_size: int = 9
    stride: int = 2
    class_dim: int = 16  # D_c, the phenotype capsules' dimension
    routing_iterations: int = 3
    m_plus: float = 0.9  # margin loss
    m_minus: float = 0.1
    lambda_: float = 0.5
    input_dropout: float = 0.0  # dropout on the Gene-PC input (training only)
    dropout: float = 0.0  # dropout on the dense layer's output (training only)

    @property
    def n_positions(self) -> int:
        return (self.hidden - self.kernel_size) // self.stride + 1

    @property
    def n_primary(self) -> int:
        """Primary capsules N = channels x convolution positions, ordered channel-major."""
        return self.primary_channels * self.n_positions

    def validate(self) -> None:
        for name in ("n_features", "hidden", "primary_channels", "primary_dim", "kernel_size", "stride",
                     "class_dim", "routing_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.n_classes < 2:
            raise ValueError("n_classes must be at least 2")
        if self.kernel_size > self.hidden:
            raise ValueError(f"kernel_size {self.kernel_size} is larger than the hidden layer ({self.hidden})")
        for name in ("input_dropout", "dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1)")
        if not 0 <= self.m_minus < self.m_plus <= 1:
            raise ValueError("margins need 0 <= m_minus < m_plus <= 1")


def squash(s: torch.Tensor, dim: int = -1, eps: float = 1e-8) -> torch.Tensor:
    """v = |s|^2 / (1 + |s|^2) * s / |s| along `dim`: same direction, length in [0, 1).

    s: float, any shape -> v of the same shape and dtype.
    """
    sq = (s * s).sum(dim, keepdim=True)
    # eps inside the root keeps the gradient finite at s = 0
    return s * (sq / (1 + sq) / torch.sqrt(sq + eps))


def route(u_hat: torch.Tensor, iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic routing by agreement (Sabour et al. 2017).

    u_hat: float (B, C, N, D) prediction vectors û_{j|i} -> (v (B, C, D) output capsules, c (B, N, C)
    coupling coefficients of the last iteration; each c[b, i] sums to 1 over the C classes). Logits
    start at 0, so one iteration gives the uniform coupling 1/C. Class-major u_hat makes both
    reductions contiguous matrix-vector products (3x faster on CPU than (B, N, C, D) broadcasting).
    """
    b = torch.zeros(u_hat.shape[:3], dtype=u_hat.dtype, device=u_hat.device)  # (B, C, N) logits
    # gradients flow through the last iteration only (as in common CapsNet implementations): the
    # coupling is a routing decision, not a path to train W through; it also halves the backward pass
    frozen = u_hat.detach()
    for it in range(iterations):
        c = torch.softmax(b, dim=1)
        last = it == iterations - 1
        v = squash((c.unsqueeze(2) @ (u_hat if last else frozen)).squeeze(2))  # (B, C, D) = sum_i c_ij û_{j|i}
        if not last:
            b = b + (frozen @ v.unsqueeze(-1)).squeeze(-1)  # agreement <û_{j|i}, v_j>
    return v, c.transpose(1, 2)


def margin_loss(lengths: torch.Tensor, labels: torch.Tensor, m_plus: float = 0.9, m_minus: float = 0.1,
                lambda_: float = 0.5) -> torch.Tensor:
    """lengths float (B, C), labels int64 (B,) class indices -> scalar (0-d, lengths' dtype) mean
    over the batch of sum_k T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2."""
    t = torch.nn.functional.one_hot(labels, lengths.shape[1]).to(lengths.dtype)
    present = t * torch.clamp(m_plus - lengths, min=0) ** 2
    absent = lambda_ * (1 - t) * torch.clamp(lengths - m_minus, min=0) ** 2
    return (present + absent).sum(1).mean()


class CapsuleNet(nn.Module):
    def __init__(self, config: CapsuleConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        c = config
        self.input_drop = nn.Dropout(c.input_dropout)
        self.dense = nn.Linear(c.n_features, c.hidden)
        self.hidden_drop = nn.Dropout(c.dropout)
        self.conv = nn.Conv1d(1, c.primary_channels * c.primary_dim, c.kernel_size, stride=c.stride)
        # one D_c x D_p matrix per (primary capsule, class); small init keeps early lengths well below 1
        self.W = nn.Parameter(0.01 * torch.randn(c.n_primary, c.n_classes, c.class_dim, c.primary_dim))

    def primary(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, F) standardised Gene-PCs -> squashed primary capsules u float32 (B, N, D_p),
        channel-major."""
        c = self.config
        h = self.hidden_drop(torch.relu(self.dense(self.input_drop(x)))).unsqueeze(1)  # (B, 1, H)
        a = self.conv(h)  # (B, P*D_p, L)
        a = a.view(x.shape[0], c.primary_channels, c.primary_dim, c.n_positions)
        return squash(a.permute(0, 1, 3, 2).reshape(x.shape[0], c.n_primary, c.primary_dim))

    def forward(self, x: torch.Tensor, need_coupling: bool = False):
        """x float32 (B, F) -> lengths float32 (B, C) = class scores in [0, 1); with need_coupling
        also the coupling coefficients c float32 (B, N, C)."""
        u = self.primary(x)
        u_hat = torch.einsum("ncdp,bnp->bcnd", self.W, u)  # (B, C, N, D_c)
        v, coupling = route(u_hat, self.config.routing_iterations)
        lengths = v.norm(dim=-1)
        return (lengths, coupling) if need_coupling else lengths

    def loss(self, lengths: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """lengths float32 (B, C), labels int64 (B,) -> scalar margin loss with the config's margins."""
        c = self.config
        return margin_loss(lengths, labels, c.m_plus, c.m_minus, c.lambda_)


def parameter_count(config: CapsuleConfig) -> int:
    """The closed form of the module docstring (tests hold the module to it)."""
    c = config
    return (c.n_features * c.hidden + c.hidden + c.primary_channels * c.primary_dim * (c.kernel_size + 1)
            + c.n_primary * c.n_classes * c.class_dim * c.primary_dim)
