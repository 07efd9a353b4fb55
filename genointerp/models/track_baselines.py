"""Baselines of the Genomic Interpreter paper's Table 1, on one conv tower:

x (B, seq_len, 4) -> stem conv (+ pooling by `patch`) -> one stage per entry of `widths`
(conv block, residual pointwise block, pooling by 2) -> (B, n_bins, widths[-1]) -> trunk
-> central crop to target_bins -> pointwise + per-track-group heads -> (B, target_bins, n_tracks).

maxpool-cnn     max pooling, no trunk (Basset/Basenji-like conv net)
attpool-cnn     attention pooling (Enformer's), no trunk
attpool-dilated attention pooling, then residual dilated convs with doubling dilation (Basenji)
enformer-like   attention pooling, then pre-LN transformer layers with relative positions over all
                bins before the crop (Enformer)

Norms are per-position LayerNorms, not BatchNorm, so small batches and DDP behave like swin1d.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from genointerp.models.track_heads import (ConvBlock, Residual, Stem, TrackConfig, check_heads,
                                           crop_tokens, track_output, pooling)
from genointerp.nn import EncoderLayer


@dataclass(frozen=True)
class ConvTowerConfig(TrackConfig):
    """widths: channels of each pooling stage; the final resolution is patch * 2 ** len(widths) bp.
    The defaults are default_track_config(arch, 4096, 128, 24, 1, (1,), width=64)."""

    widths: tuple[int, ...] = (32, 32, 40, 40, 48, 56, 64)
    stem_kernel: int = 15
    conv_kernel: int = 5
    patch: int = 1

    def validate(self) -> None:
        if not self.widths or any(w < 1 for w in self.widths):
            raise ValueError("widths needs at least one positive entry")
        if self.patch < 1 or self.stem_kernel < 1 or self.conv_kernel < 1:
            raise ValueError("patch, stem_kernel and conv_kernel must be at least 1")
        self.validate_common(self.patch * 2 ** len(self.widths))


@dataclass(frozen=True)
class MaxPoolCNNConfig(ConvTowerConfig):
    ARCHITECTURE: ClassVar[str] = "maxpool-cnn"
    LABEL: ClassVar[str] = "a maxpool-cnn"


@dataclass(frozen=True)
class AttPoolCNNConfig(ConvTowerConfig):
    ARCHITECTURE: ClassVar[str] = "attpool-cnn"
    LABEL: ClassVar[str] = "an attpool-cnn"


@dataclass(frozen=True)
class AttPoolDilatedConfig(ConvTowerConfig):
    ARCHITECTURE: ClassVar[str] = "attpool-dilated"
    LABEL: ClassVar[str] = "an attpool-dilated"

    dilated_layers: int = 4  # dilations 1, 2, 4, ... 2^(n-1) bins

    def validate(self) -> None:
        super().validate()
        if self.dilated_layers < 0:
            raise ValueError("dilated_layers must be >= 0")


@dataclass(frozen=True)
class EnformerLikeConfig(ConvTowerConfig):
    ARCHITECTURE: ClassVar[str] = "enformer-like"
    LABEL: ClassVar[str] = "an enformer-like"

    transformer_layers: int = 1
    transformer_heads: int = 4
    ff_mult: int = 2  # Enformer's feed-forward is 2x the width

    def validate(self) -> None:
        super().validate()
        if self.transformer_layers < 0 or self.ff_mult < 1:
            raise ValueError("transformer_layers must be >= 0 and ff_mult >= 1")
        check_heads(self.widths[-1], self.transformer_heads, "transformer")


class ConvTower(nn.Module):
    """(B, L, 4) -> (B, widths[-1], L / (patch * 2 ** len(widths))), Enformer's stem + tower layout."""

    def __init__(self, c: ConvTowerConfig, pool: str) -> None:
        super().__init__()
        w = c.widths
        self.stem = Stem(w[0], c.stem_kernel, c.patch, pool)
        stages = [nn.Sequential(Residual(ConvBlock(w[0], w[0], 1)), pooling(pool, w[0], 2))]
        for w_in, w_out in zip(w[:-1], w[1:]):
            stages.append(nn.Sequential(ConvBlock(w_in, w_out, c.conv_kernel), Residual(ConvBlock(w_out, w_out, 1)),
                                        pooling(pool, w_out, 2)))
        self.stages = nn.Sequential(*stages)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, L, 4) one-hot -> float32 (B, widths[-1], L / (patch * 2 ** len(widths)))."""
        return self.stages(self.stem(x))


class _TowerModel(nn.Module):
    """Shared forward: tower -> trunk on (B, n_bins, C) -> crop -> output. Subclasses set POOL and
    may build a trunk."""

    POOL: ClassVar[str] = "attention"

    def __init__(self, config: ConvTowerConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        self.tower = ConvTower(config, self.POOL)
        self.output = track_output(config.widths[-1], config)

    def trunk(self, h: torch.Tensor) -> torch.Tensor:
        """h float32 (B, n_bins, C) -> float32 (B, n_bins, C) before the crop, so context beyond the
        targets is used."""
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, seq_len, 4) one-hot -> float32 (B, target_bins, n_tracks) >= 0."""
        h = self.trunk(self.tower(x).transpose(1, 2))
        return self.output(crop_tokens(h, self.config.crop_bins), x)


class MaxPoolCNN(_TowerModel):
    POOL = "max"


class AttPoolCNN(_TowerModel):
    POOL = "attention"


class AttPoolDilated(_TowerModel):
    POOL = "attention"

    def __init__(self, config: AttPoolDilatedConfig) -> None:
        super().__init__(config)
        c = config.widths[-1]
        # Basenji's residual dilated block: wide dilated conv to C/2, pointwise back to C
        self.dilated = nn.Sequential(*(
            Residual(nn.Sequential(ConvBlock(c, max(1, c // 2), 3, dilation=2 ** i), ConvBlock(max(1, c // 2), c, 1),
                                   nn.Dropout(config.dropout)))
            for i in range(config.dilated_layers)))

    def trunk(self, h: torch.Tensor) -> torch.Tensor:
        """h float32 (B, n_bins, C) -> float32 (B, n_bins, C) through the dilated residual blocks."""
        return self.dilated(h.transpose(1, 2)).transpose(1, 2)


class EnformerLike(_TowerModel):
    POOL = "attention"

    def __init__(self, config: EnformerLikeConfig) -> None:
        super().__init__(config)
        c = config.widths[-1]
        self.transformer = nn.ModuleList(
            EncoderLayer(c, config.transformer_heads, config.ff_mult * c, config.dropout, norm_first=True,
                         position="relative")
            for _ in range(config.transformer_layers))

    def trunk(self, h: torch.Tensor) -> torch.Tensor:
        """h float32 (B, n_bins, C) -> float32 (B, n_bins, C) through the transformer layers."""
        for layer in self.transformer:
            h = layer(h)[0]
        return h

    def attention_layout(self) -> list[dict]:
        """Same keys as GenomicInterpreter.attention_layout: full attention over all bins, before the crop."""
        c = self.config
        return [{"name": f"transformer.{i}.attn", "module": layer.attn, "kind": "global", "stage": 0,
                 "resolution_bp": c.bin_size, "window": c.n_bins, "shift": 0, "tokens": c.n_bins, "offset_bp": 0}
                for i, layer in enumerate(self.transformer)]
