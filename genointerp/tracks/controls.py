"""Controls that need no training: CpG or GC content per bin, smoothed, mapped linearly to each track.

Much of a TF ChIP-seq track follows CpG islands (promoters), so a model that has only learnt CpG
density already reaches a fair Pearson r. A track model is judged by its margin over these:

- `cpg`: CpG dinucleotides per bin (a CpG counts in the bin of its C), smoothed by a centred mean
  over `smooth` bins (9 by default, the bins available at the window's edges only);
- `gc`: fraction of G or C bases per bin (N counts as neither), smoothed the same way.

The feature f of each bin is mapped to every track t by pred = slope_t * f + intercept_t, a least
squares fit on training windows only (`fit_controls`). Pearson r is unchanged by such a map
except for its sign, so the fit decides whether a track follows or avoids CpG/GC; the map also puts
the prediction in the track's units. The controls read the same windows as the model they sit
beside: their feature at a bin uses only that window's sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from genointerp.tracks.pearson import PearsonAccumulator

CONTROLS = ("cpg", "gc")
SMOOTH_BINS = 9


@dataclass(frozen=True)
class ControlConfig:
    kind: str  # "cpg" or "gc"
    seq_len: int
    bin_size: int
    target_bins: int
    n_tracks: int
    smooth: int = SMOOTH_BINS

    def validate(self) -> None:
        if self.kind not in CONTROLS:
            raise ValueError(f"unknown control {self.kind!r} (known: {', '.join(CONTROLS)})")
        if self.smooth < 1 or self.smooth % 2 == 0:
            raise ValueError(f"smooth must be an odd number of bins (got {self.smooth})")
        spare = self.seq_len // self.bin_size - self.target_bins
        if self.seq_len % self.bin_size or spare < 0 or spare % 2:
            raise ValueError(f"{self.seq_len} bp cannot centre {self.target_bins} bins of {self.bin_size} bp")


def bin_feature(x: torch.Tensor, kind: str, bin_size: int, smooth: int = SMOOTH_BINS) -> torch.Tensor:
    """x float (B, L, 4) one-hot A,C,G,T -> float32 (B, L / bin_size): CpG count or G+C fraction per
    bin, then the mean over the `smooth` bins centred on each (fewer at the edges)."""
    x = x.float()
    c, g = x[..., 1], x[..., 2]
    if kind == "cpg":
        per_base = F.pad(c[:, :-1] * g[:, 1:], (0, 1))  # 1 at each C followed by G
    elif kind == "gc":
        per_base = (c + g) / bin_size
    else:
        raise ValueError(f"unknown control {kind!r}")
    b, n = per_base.shape
    per_bin = per_base.reshape(b, n // bin_size, bin_size).sum(-1)
    if smooth == 1:
        return per_bin
    return F.avg_pool1d(per_bin[:, None], smooth, 1, smooth // 2, count_include_pad=False)[:, 0]


class ControlModel(nn.Module):
    """x (B, seq_len, 4) one-hot -> (B, target_bins, n_tracks): slope * feature + intercept per track.
    Unfitted (slope 0, intercept 0) until `fit_controls` sets them."""

    def __init__(self, config: ControlConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        self.register_buffer("slope", torch.zeros(config.n_tracks))
        self.register_buffer("intercept", torch.zeros(config.n_tracks))

    def feature(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, target_bins): the smoothed feature of the central target bins."""
        c = self.config
        f = bin_feature(x, c.kind, c.bin_size, c.smooth)
        crop = (f.shape[1] - c.target_bins) // 2
        return f[:, crop : crop + c.target_bins]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.feature(x)[..., None] * self.slope + self.intercept


@torch.inference_mode()
def fit_controls(models: list[ControlModel], source, batch_size: int = 64) -> None:
    """Least-squares slope and intercept per track of every control over all bins of `source`
    (training windows: `batch(idx) -> (x (B, L, 4), y (B, bins, T))`). A feature that is constant
    over the source gets slope 0 (its prediction is the mean of each track)."""
    accs = [PearsonAccumulator(m.config.n_tracks) for m in models]
    for a in range(0, len(source), batch_size):
        x, y = source.batch(np.arange(a, min(a + batch_size, len(source))))
        xt = torch.from_numpy(x)
        for m, acc in zip(models, accs):
            f = m.feature(xt).double().numpy()
            acc.update(np.broadcast_to(f[..., None], y.shape), y)
    for m, acc in zip(models, accs):
        with np.errstate(invalid="ignore", divide="ignore"):
            # exact constancy test: the centred sums of a constant are rounding noise, not 0
            slope = np.where(acc.max_x > acc.min_x, acc.sxy / acc.sxx, 0.0)
        m.slope.copy_(torch.from_numpy(slope).float())
        m.intercept.copy_(torch.from_numpy(acc.mean_y - slope * acc.mean_x).float())
