"""Matched-width default configurations for the five track architectures (`train-tracks --arch --width`).

"Width" is the channel count at bin resolution, shared by every architecture; all start at about
width/2 after the stem and grow geometrically to width over the downsampling stages, as in Enformer.
"""

from __future__ import annotations

import math

from genointerp.models.swin1d import Swin1DConfig
from genointerp.models.track_baselines import (AttPoolCNNConfig, AttPoolDilatedConfig, EnformerLikeConfig,
                                               MaxPoolCNNConfig)
from genointerp.models.track_heads import TrackConfig

TRACK_ARCHITECTURES = ("swin1d", "maxpool-cnn", "attpool-cnn", "attpool-dilated", "enformer-like")
_TOWERS = {"maxpool-cnn": MaxPoolCNNConfig, "attpool-cnn": AttPoolCNNConfig, "attpool-dilated": AttPoolDilatedConfig,
           "enformer-like": EnformerLikeConfig}


def _round8(x: float) -> int:
    return max(8, int(round(x / 8)) * 8)


def exponential_widths(start: int, end: int, num: int) -> list[int]:
    """num widths from start to end (inclusive), geometric, multiples of 8 except the exact end."""
    if num == 1:
        return [end]
    base = math.exp(math.log(end / start) / (num - 1))
    return [_round8(start * base ** i) for i in range(num - 1)] + [end]


def heads_for(width: int, head_dim: int = 16, max_heads: int = 8) -> int:
    """Most heads of about head_dim channels (at most max_heads) that divide width."""
    h = max(1, min(max_heads, width // head_dim))
    while width % h:
        h -= 1
    return h


def largest_divisor(n: int, at_most: int) -> int:
    """Largest divisor of n in [2, at_most]; n itself may be smaller than at_most. n is even here."""
    return max(d for d in range(2, min(n, at_most) + 1) if n % d == 0)


SWIN1D_PATCH = 8  # bp per token after swin1d's stem when train-tracks is not given --patch (default_patch)


def default_patch(arch: str, bin_size: int) -> int:
    """bp per token after the stem when train-tracks has no --patch: swin1d pools its stem conv to
    tokens of at most SWIN1D_PATCH bp (bin_size halved as often as needed, at least once: Swin's
    patch embedding); the baselines keep single-nucleotide tokens (1), as before.

    Why: on planted motifs (benchmarks/tracks_planted.py, benchmarks/README.md "Track models:
    planted motifs") swin1d with single-bp tokens did not leave the mean in 800 steps, under every
    change to its initialisation, normalisation, schedule, dropout, merging and attention tried,
    and costs about 5x as much per step; pooled to 8 bp tokens it learns the motifs."""
    if arch != "swin1d" or bin_size < 2 or bin_size % 2:
        return 1
    patch = bin_size // 2
    while patch > SWIN1D_PATCH and patch % 2 == 0:
        patch //= 2
    return patch


def default_dropout(arch: str) -> float:
    """train-tracks' dropout when --dropout is not given: 0 for swin1d, 0.1 for the baselines (as before).

    Why: swin1d applies dropout inside every sub-layer (attention weights, both feed-forward layers,
    each residual branch), where the conv towers have none outside the output head (1/8 of it). On
    planted motifs (benchmarks/README.md, "Track models: planted motifs") swin1d with 8 bp tokens
    reached validation r 0.95 / 0.87 after 700 steps without dropout and 0.16 / 0.40 after 637 with
    0.1: the noise of ten dropout sites kept it at the mean for most of its training."""
    return 0.0 if arch == "swin1d" else 0.1


def default_track_config(arch: str, seq_len: int, bin_size: int, target_bins: int, n_tracks: int,
                         track_groups: tuple[int, ...] | None = None, width: int = 64, *, dropout: float = 0.1,
                         transformer_layers: int = 1, window: int = 16, dilated_layers: int = 4,
                         max_stages: int = 7, stem_filters: int = 0, head_width: int = 0) -> TrackConfig:
    """A validated config for `arch` with `width` channels at bin resolution.

    Downsampling: K = min(max_stages, number of factors 2 in bin_size) halvings after a stem that
    pools by patch = bin_size / 2^K (1 for 128-bp bins: single-nucleotide tokens as in the paper).
    swin1d windows: the largest divisor of each stage's token count up to `window`; `stem_filters`
    (swin1d only; 0: width/2) sets how many motif detectors its stem conv has; `head_width` (0: 2 x
    width) the output head's hidden units.
    Raises ValueError when the sizes cannot fit (e.g. seq_len not a multiple of bin_size).
    """
    if arch not in TRACK_ARCHITECTURES:
        raise ValueError(f"unknown track architecture {arch!r} (known: {', '.join(TRACK_ARCHITECTURES)})")
    if width < 16 or width % 2:
        raise ValueError(f"width must be even and at least 16 (got {width})")
    if bin_size < 2 or bin_size % 2:
        raise ValueError(f"bin_size {bin_size} must be even: the models halve the token count at least once")
    if seq_len % bin_size:
        raise ValueError(f"seq_len {seq_len} is not a multiple of bin_size {bin_size}")
    if stem_filters and arch != "swin1d":
        raise ValueError(f"stem_filters sets the swin1d stem; {arch} has width/2 stem filters")
    k = 0
    while k < max_stages and bin_size % 2 ** (k + 1) == 0:
        k += 1
    patch = bin_size // 2 ** k
    half = _round8(width / 2)
    common = {"seq_len": seq_len, "bin_size": bin_size, "target_bins": target_bins, "n_tracks": n_tracks,
              "track_groups": tuple(track_groups or (n_tracks,)), "dropout": dropout,
              "head_width": head_width}
    if arch == "swin1d":
        d = [half] + exponential_widths(half, width, k)
        tokens = [seq_len // (patch * 2 ** s) for s in range(k)]
        config: TrackConfig = Swin1DConfig(
            **common, d_model=half, stem_filters=stem_filters, patch=patch, windows=tuple(largest_divisor(n, window) for n in tokens),
            heads=tuple(heads_for(w) for w in d[:-1]), alphas=tuple(2 * a / b for a, b in zip(d[:-1], d[1:])),
            transformer_layers=transformer_layers, transformer_heads=heads_for(width))
        assert config.widths == d, (config.widths, d)  # round(2 d / (2 d / d')) == d' in floating point
    else:
        widths = tuple([half] + exponential_widths(half, width, k - 1)) if k > 1 else (width,)
        extra: dict = {}
        if arch == "attpool-dilated":
            extra = {"dilated_layers": dilated_layers}
        elif arch == "enformer-like":
            extra = {"transformer_layers": transformer_layers, "transformer_heads": heads_for(width)}
        config = _TOWERS[arch](**common, widths=widths, patch=patch, **extra)
    config.validate()
    return config
