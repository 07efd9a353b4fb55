"""Pieces shared by every track model: the common config fields and their checks, the conv stem
and pooling layers, the central crop and the per-track-group output heads.

Every track model maps one-hot DNA x (B, seq_len, 4) to non-negative rates (B, target_bins, n_tracks):
the targets cover the central target_bins * bin_size bp, so the models crop
(seq_len / bin_size - target_bins) / 2 bin-resolution tokens from each side.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from genointerp.models.config import ModelConfig
from genointerp.models.motif_scan import MotifScan


@dataclass(frozen=True)
class TrackConfig(ModelConfig):
    """Fields every track architecture shares. track_groups: tracks per group, in track order, one
    linear head each (empty = one group of all n_tracks)."""

    seq_len: int = 4096
    bin_size: int = 128
    target_bins: int = 24
    n_tracks: int = 1
    track_groups: tuple[int, ...] = ()
    dropout: float = 0.1
    # hidden units of the output's pointwise layer; 0: twice the final width (Enformer's). Costs
    # little at any size: it runs on target_bins tokens per window only
    head_width: int = 0
    # JASPAR profiles ("MA0138.3 REST") scanned beside the trunk (models.motif_scan; empty: no
    # scan) and the scan's kernel in bp (their longest, capped); the matrices are saved weights
    motifs: tuple[str, ...] = ()
    motif_kernel: int = 0

    def __post_init__(self) -> None:
        # config.json hands tuples back as lists; frozen dataclasses need object.__setattr__
        for name, value in list(self.__dict__.items()):
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        if not self.track_groups:
            object.__setattr__(self, "track_groups", (self.n_tracks,))

    @property
    def n_bins(self) -> int:
        """Bin-resolution tokens the whole input makes before the crop."""
        return self.seq_len // self.bin_size

    @property
    def crop_bins(self) -> int:
        """Tokens cropped from each side at bin resolution."""
        return (self.n_bins - self.target_bins) // 2

    def validate_common(self, resolution: int) -> None:
        """Checks shared by all architectures; resolution = bp per token after the model's last
        downsampling, which must equal bin_size."""
        for name in ("seq_len", "bin_size", "target_bins", "n_tracks"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 (got {getattr(self, name)})")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1) (got {self.dropout})")
        if self.head_width < 0:
            raise ValueError(f"head_width must be 0 (twice the final width) or positive (got {self.head_width})")
        if self.motifs and self.motif_kernel < 1:
            raise ValueError(f"a motif scan needs motif_kernel >= 1 (got {self.motif_kernel})")
        if any(g < 1 for g in self.track_groups) or sum(self.track_groups) != self.n_tracks:
            raise ValueError(f"track_groups {list(self.track_groups)} must be positive and sum to n_tracks {self.n_tracks}")
        if resolution != self.bin_size:
            raise ValueError(f"the final token resolution is {resolution} bp but bin_size is {self.bin_size} bp")
        spare = self.seq_len - self.target_bins * self.bin_size
        if spare < 0:
            raise ValueError(f"target_bins * bin_size = {self.target_bins * self.bin_size} bp exceeds seq_len {self.seq_len}")
        if spare % 2:
            raise ValueError(f"seq_len - target_bins * bin_size = {spare} is odd: the targets cannot be centred")
        if self.seq_len % self.bin_size:
            raise ValueError(f"seq_len {self.seq_len} is not a multiple of bin_size {self.bin_size}")
        if (self.n_bins - self.target_bins) % 2:
            raise ValueError(f"seq_len / bin_size - target_bins = {self.n_bins - self.target_bins} bins is odd: "
                             "the crop would not keep whole bins centred")


def check_heads(width: int, heads: int, where: str) -> None:
    if heads < 1 or width % heads:
        raise ValueError(f"{where}: width {width} is not divisible by {heads} heads")


class ChannelNorm(nn.Module):
    """LayerNorm over channels of a (B, C, L) tensor: per position, so independent of batch size,
    sequence length and other processes (unlike BatchNorm)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, C, L) -> float32 (B, C, L)."""
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


class ConvBlock(nn.Sequential):
    """Pre-activation conv (Enformer's order, LayerNorm for BatchNorm): (B, C_in, L) -> (B, C_out, L)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, dilation: int = 1) -> None:
        super().__init__(ChannelNorm(c_in), nn.GELU(), nn.Conv1d(c_in, c_out, kernel, padding="same", dilation=dilation))


class Residual(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, C, L) -> x + body(x), same shape (the body keeps it)."""
        return x + self.body(x)


class AttentionPool(nn.Module):
    """Enformer's attention pooling: (B, C, L) -> (B, C, L / pool), each output a softmax-weighted
    mean of `pool` neighbours with per-channel logits from a learned 1x1 conv. Initialised to
    2 x identity, so it starts between average (logits equal) and max pooling."""

    def __init__(self, channels: int, pool: int = 2) -> None:
        super().__init__()
        self.pool = pool
        self.logits = nn.Conv1d(channels, channels, 1, bias=False)
        with torch.no_grad():
            self.logits.weight.copy_(2 * torch.eye(channels)[:, :, None])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, C, L) -> float32 (B, C, L / pool); L must be a multiple of pool."""
        return self.channels_last(x.transpose(1, 2)).transpose(1, 2)

    def channels_last(self, x: torch.Tensor) -> torch.Tensor:
        """The same pooling on x float32 (B, L, C) -> float32 (B, L / pool, C)."""
        b, n, c = x.shape
        if n % self.pool:
            raise ValueError(f"length {n} is not a multiple of the pooling size {self.pool}")
        # channels last: the 1x1 conv becomes one matmul and the softmax runs over the pool positions
        # for all channels at once (about 5x faster on CPU than over a last axis of `pool` elements)
        xt = x.reshape(b, n // self.pool, self.pool, c)  # (B, L/pool, pool, C)
        w = (xt @ self.logits.weight[:, :, 0].T).softmax(2)
        return (xt * w).sum(2)


def pooling(kind: str, channels: int, size: int) -> nn.Module:
    """'max' or 'attention' pooling by `size`: a module float32 (B, C, L) -> (B, C, L / size)
    (the identity for size 1)."""
    if size == 1:
        return nn.Identity()
    if kind == "max":
        return nn.MaxPool1d(size)
    if kind == "attention":
        return AttentionPool(channels, size)
    raise ValueError(f"unknown pooling {kind!r} (max or attention)")


class Stem(nn.Module):
    """One-hot (B, L, 4) -> (B, width, L / patch): a wide 'same' conv (motif detectors at single-bp
    resolution), then pooling by `patch` when tokens should start coarser than 1 bp."""

    def __init__(self, width: int, kernel: int = 15, patch: int = 1, pool: str = "attention") -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, width, kernel, padding="same")
        self.pool = pooling(pool, width, patch)
        self.patch = patch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, L, 4) one-hot -> float32 (B, width, L / patch); with attention pooling a
        transposed view of a channels-last (B, L / patch, width) tensor."""
        h = self.conv_channels_last(x)
        if isinstance(self.pool, AttentionPool):
            return self.pool.channels_last(h).transpose(1, 2)
        return self.pool(h.transpose(1, 2))

    def reach(self, p0: int, p1: int) -> tuple[int, int]:
        """Tokens [a, b) whose values depend on input bases [p0, p1)."""
        k = self.conv.kernel_size[0]
        left = (k - 1) // 2
        return (p0 - (k - 1 - left)) // self.patch, -(-(p1 + left) // self.patch)

    def tokens_between(self, x: torch.Tensor, a: int, b: int) -> torch.Tensor | None:
        """Tokens [a, b) of x float32 (B, L, 4), channels last (B, b - a, width), from the bases
        they read only; None when those reach past the window's ends (the 'same' padding)."""
        k = self.conv.kernel_size[0]
        left = (k - 1) // 2
        lo, hi = a * self.patch - left, b * self.patch + (k - 1 - left)
        if lo < 0 or hi > x.shape[1]:
            return None
        h = self.conv_channels_last(x[:, lo:hi])[:, left:left + (b - a) * self.patch]
        if isinstance(self.pool, AttentionPool):
            return self.pool.channels_last(h)
        return self.pool(h.transpose(1, 2)).transpose(1, 2)

    def conv_channels_last(self, x: torch.Tensor) -> torch.Tensor:
        """self.conv ('same' padding) of x float32 (B, L, C_in) -> float32 (B, L, width).

        One matmul over the unfolded kernel-wide windows, channels last in and out: with 4 input
        channels the matmul is small, and on CPU this runs the stem about 1.5x faster than Conv1d
        plus the transposes and copies between (B, C, L) and the channels-last pooling."""
        b, n, c = x.shape
        k = self.conv.kernel_size[0]
        left = (k - 1) // 2  # Conv1d's 'same' puts the odd spare position on the right
        windows = F.pad(x, (0, 0, left, k - 1 - left)).unfold(1, k, 1)  # (B, L, C_in, K), a view
        weight = self.conv.weight.permute(1, 2, 0).reshape(c * k, -1)  # (C_in * K, width), windows' order
        return torch.addmm(self.conv.bias, windows.reshape(b * n, c * k), weight).view(b, n, -1)


def crop_tokens(x: torch.Tensor, crop: int) -> torch.Tensor:
    """Central crop of (B, T, D) tokens: drop `crop` tokens from each end -> (B, T - 2 crop, D), a
    view of x (same dtype)."""
    return x[:, crop: x.shape[1] - crop] if crop else x


class TrackOutput(nn.Module):
    """(B, T, D) -> (B, T, n_tracks) >= 0: LayerNorm, pointwise expansion to `hidden` units (0: 2D,
    Enformer's final pointwise) with GELU, then one linear head per track group, softplus rates.
    With a motif scan (models.motif_scan), one more linear layer per track group reads its
    features of the input and adds to the rates (clipped at 0). The rates, not the logits: where
    the trunk predicts nothing (logit -5, softplus slope 0.007) a motif match in the logits would
    get almost no gradient, and that is where an unlearnt motif's peaks are."""

    def __init__(self, width: int, track_groups: tuple[int, ...], dropout: float, hidden: int = 0,
                 scan: nn.Module | None = None) -> None:
        super().__init__()
        hidden = hidden or 2 * width
        self.norm = nn.LayerNorm(width)
        self.pointwise = nn.Linear(width, hidden)
        self.drop = nn.Dropout(dropout / 8)  # Enformer's final dropout is 1/8 of the trunk's
        self.heads = nn.ModuleList(nn.Linear(hidden, g) for g in track_groups)
        self.scan = scan
        if scan is not None:
            self.motif_heads = nn.ModuleList(nn.Linear(scan.n_features, g) for g in track_groups)
            for head in self.motif_heads:  # a new scan starts from the trunk's predictions (tracks.motif_readout)
                nn.init.zeros_(head.weight)
                nn.init.zeros_(head.bias)

    def forward(self, h: torch.Tensor, x: torch.Tensor | None = None, best: torch.Tensor | None = None) -> torch.Tensor:
        """h float32 (B, T, D) trunk tokens (x (B, seq_len, 4), the model's input, when there is a
        motif scan; `best`: its scan's best_match(x) when the caller has it) -> float32 (B, T,
        n_tracks) softplus rates, track groups in order."""
        h = F.gelu(self.drop(self.pointwise(self.norm(h))))
        rates = F.softplus(torch.cat([head(h) for head in self.heads], dim=-1))
        if self.scan is None:
            return rates
        m = self.scan(x, best)
        return (rates + torch.cat([head(m) for head in self.motif_heads], dim=-1)).clamp_min(0)


def track_output(width: int, config: TrackConfig) -> TrackOutput:
    """The output of a track model whose trunk ends `width` wide, with the motif scan its config names."""
    scan = None
    if config.motifs:
    
        scan = MotifScan(len(config.motifs), config.motif_kernel, config.seq_len, config.bin_size, config.target_bins)
    return TrackOutput(width, config.track_groups, config.dropout, config.head_width, scan)


def rebuilt(model: nn.Module, keep, **changes) -> nn.Module:
    """A new track model of `model`'s class with `changes` made to its config, holding `model`'s
    weights whose state-dict names pass `keep(name)`; the others stay as built (from torch's RNG)."""
    from dataclasses import replace

    new = type(model)(replace(model.config, **changes))
    new.load_state_dict({k: v for k, v in model.state_dict().items() if keep(k)}, strict=False)
    return new


def _regrouped(model: nn.Module, groups: tuple[int, ...], copied: int) -> nn.Module:
    """A copy of track model `model` with output heads for `groups`, whose first `copied` heads are
    `model`'s own (every other weight is `model`'s too); the others stay as built."""
    return rebuilt(model, lambda k: not k.startswith(("output.heads.", "output.motif_heads."))
                   or int(k.split(".")[2]) < copied,
                   track_groups=groups, n_tracks=sum(groups))


def add_track_groups(model: nn.Module, groups: tuple[int, ...]) -> nn.Module:
    """A copy of track model `model` with one more output head per entry of `groups` (that many
    tracks each), appended after its own tracks: (B, L, 4) -> (B, target_bins, n_tracks + sum(groups)).
    The new heads start with weight 0 (rate softplus(0) everywhere), so their first gradients reach
    the shared trunk only as the heads learn, and the model's own outputs are unchanged."""
    old = model.config.track_groups
    wide = _regrouped(model, old + tuple(groups), len(old))
    with torch.no_grad():
        for head in wide.output.heads[len(old):]:
            head.weight.zero_()
            head.bias.zero_()  # (new motif heads start at 0 as built)
    return wide


def widen_head(model: nn.Module, hidden: int) -> nn.Module:
    """A copy of track model `model` whose output pointwise layer has `hidden` (> its current count)
    units, computing the same function: the old units keep their weights, the new ones start
    random like a fresh layer and every head reads them with weight 0, so fine-tuning grows the
    head from the trained model (the zero-read units get gradients through the head weights at once)."""
    old = model.output.pointwise.out_features
    if hidden <= old:
        raise ValueError(f"the output head has {old} hidden units already; widening needs more (got {hidden})")
    wide = rebuilt(model, lambda k: not k.startswith(("output.pointwise.", "output.heads.")), head_width=hidden)
    with torch.no_grad():
        fresh = nn.Linear(model.output.pointwise.in_features, hidden - old)  # torch's RNG, seeded by the caller
        wide.output.pointwise.weight.copy_(torch.cat([model.output.pointwise.weight, fresh.weight]))
        wide.output.pointwise.bias.copy_(torch.cat([model.output.pointwise.bias, fresh.bias]))
        for head, new in zip(model.output.heads, wide.output.heads):
            new.weight.zero_()
            new.weight[:, :old] = head.weight
            new.bias.copy_(head.bias)
    return wide


def add_motif_scan(model: nn.Module, names: list[str], matrices: torch.Tensor) -> nn.Module:
    """A copy of track model `model` with a motif scan of `matrices` float32 (n_motifs, 4, kernel)
    (models.motif_scan; `names` one per motif, e.g. "MA0138.3 REST"): every other weight is
    `model`'s and the new motif heads start at 0, so the copy predicts what `model` does."""
    if model.config.motifs:
        raise ValueError(f"the model has a motif scan already ({len(model.config.motifs)} motifs)")
    if len(names) != matrices.shape[0] or matrices.shape[1] != 4:
        raise ValueError(f"{len(names)} motif names for matrices of shape {tuple(matrices.shape)}")
    scanned = rebuilt(model, lambda k: True, motifs=tuple(names), motif_kernel=matrices.shape[2])
    scanned.output.scan.pwm.copy_(matrices)
    return scanned


def drop_track_groups(model: nn.Module, keep: int) -> nn.Module:
    """A copy of track model `model` with only its first `keep` output heads:
    (B, L, 4) -> (B, target_bins, sum of those groups), the same values as `model`'s first tracks."""
    groups = model.config.track_groups
    if not 0 < keep <= len(groups):
        raise ValueError(f"cannot keep {keep} of {len(groups)} track groups")
    return _regrouped(model, groups[:keep], keep)
