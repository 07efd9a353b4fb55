"""XVir (CNB-MAC '23): a transformer over k-mer tokens that scores a read as viral.

tokens (B, n) -> embedding (B, n, d) + fixed sinusoidal positions -> LayerNorm -> encoder
layer(s) (h heads, feed-forward d -> 4d -> d, ReLU, dropout) -> flatten (B, n*d) -> linear ->
logit (B,); sigmoid(logit) = P(viral). With the defaults (k=6, d=128, l=150, one layer) the
model has exactly the paper's 741,377 trainable parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from genointerp.models.config import ModelConfig
from genointerp.nn import EncoderLayer, LearnedPositions, SinusoidalPositions

POSITIONS = ("sinusoidal", "learned", "rope", "relative")


@dataclass(frozen=True)
class XVirConfig(ModelConfig):
    ARCHITECTURE: ClassVar[str] = "xvir"
    LABEL: ClassVar[str] = "an XVir"

    k: int = 6
    read_length: int = 150
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 1
    d_ff: int = 512
    dropout: float = 0.1
    position: str = "sinusoidal"  # absolute: sinusoidal | learned; inside attention: rope | relative
    norm_first: bool = False  # the paper: post-LayerNorm
    vocab_size: int = 4096  # 4^k, + 2 when the dataset uses UNKNOWN/PAD tokens

    @property
    def n_tokens(self) -> int:
        return self.read_length - self.k + 1

    def validate(self) -> None:
        if self.position not in POSITIONS:
            raise ValueError(f"position must be one of {', '.join(POSITIONS)}")
        if self.n_tokens < 1:
            raise ValueError("read length must be at least k")
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")


class XVir(nn.Module):
    def __init__(self, config: XVirConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        d = config.d_model
        self.embed = nn.Embedding(config.vocab_size, d)
        if config.position == "sinusoidal":
            self.positions: nn.Module = SinusoidalPositions(config.n_tokens, d)
        elif config.position == "learned":
            self.positions = LearnedPositions(config.n_tokens, d)
        else:
            self.positions = nn.Identity()
        attn_position = config.position if config.position in ("rope", "relative") else None
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(
            EncoderLayer(d, config.n_heads, config.d_ff, config.dropout, config.norm_first, attn_position)
            for _ in range(config.n_layers)
        )
        self.head = nn.Linear(config.n_tokens * d, 1)

    def forward(self, tokens: torch.Tensor, need_weights: bool = False):
        """tokens: int (B, n_tokens) token ids (any integer dtype) -> logits float32 (B,); with
        need_weights also a list of per-layer attention weights float32 (B, H, n_tokens, n_tokens)."""
        x = self.norm(self.positions(self.embed(tokens.long())))
        weights = []
        for layer in self.layers:
            x, w = layer(x, need_weights=need_weights)
            weights.append(w)
        logits = self.head(x.flatten(1)).squeeze(-1)
        return (logits, weights) if need_weights else logits


def count_parameters(model: nn.Module) -> int:
    """Trainable parameter count of `model`."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
