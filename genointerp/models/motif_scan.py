"""A fixed motif scan beside a track model's trunk (`train-tracks --motif-scan jaspar`): known
position weight matrices scored on both strands at every bp of the target bins, reduced to a few
features per bin and motif, and read by a linear layer per track group that adds to the model's
predicted rates (track_heads.TrackOutput; its start: tracks.motif_readout).

Why beside the trunk and not in it: a small model trained on one chromosome does not learn long,
rare motifs (REST's 20 bp JASPAR profile has a few hundred peaks per cell line on chr20) even when its first layer
starts from them (`--motif-init`), because the per-position normalisations and the pooled trunk
blur a single strong match. Read directly, a match of the factor's own motif is what separates
that factor's peaks from the CpG-island background.

Features, per 128 bp bin (any bin size) and motif: s = the best match score on either strand of
any window starting in the bin, as a fraction of the motif's perfect score (log-odds against a
uniform background; 1 = the consensus); then hinges relu(s - t) / (1 - t) at each threshold t of
THRESHOLDS, so the linear layer can learn a piecewise linear response from 'a weak match' to 'the
consensus'; then the same hinges summed over the two neighbouring bins, for a site on a bin's edge
or a peak wider than a bin. The matrices are buffers: saved with the model and never trained.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

THRESHOLDS = (0.6, 0.7, 0.8, 0.9)


class MotifScan(nn.Module):
    """One-hot x (B, seq_len, 4) -> float32 (B, target_bins, features) with features =
    2 * len(THRESHOLDS) * n_motifs (see the module docstring); `pwm` (n_motifs, 4, kernel) holds
    each motif's log-odds divided by its perfect score (rows A, C, G, T), shorter motifs
    zero-padded."""

    def __init__(self, n_motifs: int, kernel: int, seq_len: int, bin_size: int, target_bins: int) -> None:
        super().__init__()
        if n_motifs < 1 or kernel < 1:
            raise ValueError(f"a motif scan needs at least one motif and a kernel of 1 bp or more "
                             f"(got {n_motifs} motifs, kernel {kernel})")
        self.register_buffer("pwm", torch.zeros(n_motifs, 4, kernel))
        self.register_buffer("thresholds", torch.tensor(THRESHOLDS), persistent=False)
        self.bin_size, self.target_bins = bin_size, target_bins
        # the target bins plus one on each side (the neighbour features), in input coordinates
        self.first = (seq_len - target_bins * bin_size) // 2 - bin_size

    @property
    def n_features(self) -> int:
        return 2 * len(THRESHOLDS) * self.pwm.shape[0]

    def best_match(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, seq_len, 4) -> float32 (B, target_bins + 2, n_motifs): per bin (the target bins
        and one more each side), the best score on either strand of a window starting in it."""
        b, n, _ = x.shape
        m, _, k = self.pwm.shape
        span = (self.target_bins + 2) * self.bin_size
        lo, hi = self.first, self.first + span + k - 1
        # zero rows (N) past the input's ends: the scan reads only sequence the model was given
        x = F.pad(x[:, max(lo, 0):min(hi, n)].float(), (0, 0, max(-lo, 0), max(hi - n, 0)))
        # the reverse complement of a matrix reversed in both axes: A,C,G,T -> T,G,C,A. On CPU
        # Conv1d runs this 2M x 4 x K scan about 2x faster than a matmul over unfolded windows
        scores = F.conv1d(x.transpose(1, 2), torch.cat([self.pwm, self.pwm.flip(1, 2)]))  # (B, 2M, span)
        return scores.view(b, 2, m, self.target_bins + 2, self.bin_size).amax((1, 4)).transpose(1, 2)

    def best_match_changed(self, x: torch.Tensor, ref_best: torch.Tensor, p0: int, p1: int) -> torch.Tensor:
        """best_match(x) for an x that differs from the input of `ref_best` (its best_match, (B,
        target_bins + 2, n_motifs)) only in bases [p0, p1): the bins whose windows read those bases
        scanned again, the others copied."""
        b, n, _ = x.shape
        k = self.pwm.shape[2]
        j0 = max((p0 - k + 1 - self.first) // self.bin_size, 0)
        j1 = min((p1 - 1 - self.first) // self.bin_size + 1, self.target_bins + 2)
        ref_best = ref_best.expand(b, -1, -1)  # one reference window may stand for all of x's
        if j0 >= j1:
            return ref_best.clone()
        lo, hi = self.first + j0 * self.bin_size, self.first + j1 * self.bin_size + k - 1
        part = F.pad(x[:, max(lo, 0):min(hi, n)].float(), (0, 0, max(-lo, 0), max(hi - n, 0)))
        scores = F.conv1d(part.transpose(1, 2), torch.cat([self.pwm, self.pwm.flip(1, 2)]))
        best = ref_best.clone()
        best[:, j0:j1] = scores.view(b, 2, -1, j1 - j0, self.bin_size).amax((1, 4)).transpose(1, 2)
        return best

    def forward(self, x: torch.Tensor, best: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, seq_len, 4) -> float32 (B, target_bins, n_features): [hinges, neighbours' hinges],
        each ordered (threshold, motif); `best`: best_match(x) when the caller has it."""
        s = self.best_match(x) if best is None else best
        t = self.thresholds
        hinge = (F.relu(s.unsqueeze(2) - t[:, None]) / (1 - t[:, None])).flatten(2)  # (B, bins + 2, H * M)
        return torch.cat([hinge[:, 1:-1], hinge[:, :-2] + hinge[:, 2:]], dim=-1)
