"""The reference and alternate windows of a variant allele, and its scores from the model's output.

Geometry (a track model's config window: seq_len, bin_size, target_bins): the model predicts
target_bins bins of bin_size bp from flank = (seq_len - target_bins * bin_size) / 2 into the
window. The variant's bin is target_bins // 2 (the centre bin, or the right one of the two
central bins), and the variant's first base sits at that bin's middle:
offset = flank + (target_bins // 2) * bin_size + bin_size // 2 bases into the window, so the
bins within K of it are symmetric about it.

Reference window: the reference's seq_len bases from pos0 - offset. Alternate window: the same
left flank (offset bases), ALT, then the reference after REF, cut to seq_len: an insertion
pushes bases off the right end, a deletion pulls more reference in from the right. Both windows
are read as one span of seq_len + max(0, len(REF) - len(ALT)) bases.

Scores per track, from predictions (bins, T) of the two windows:
  ref_sum, alt_sum  signal summed over the target bins
  sad               alt_sum - ref_sum (SAD, Basenji's sum of differences)
  center_diff       alt - ref summed over bins variant_bin - K .. variant_bin + K (clipped to the targets)
  log2fc            log2((alt_sum + 1) / (ref_sum + 1)), pseudocount 1
Sums are taken in float64 over the float32 predictions.

numpy only: the caller runs the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp.seq.alphabet import encode

PSEUDOCOUNT = 1.0


@dataclass(frozen=True)
class Geometry:
    seq_len: int
    bin_size: int
    target_bins: int

    @property
    def variant_bin(self) -> int:
        return self.target_bins // 2

    @property
    def offset(self) -> int:
        """Bases of the window before the variant's first base."""
        flank = (self.seq_len - self.target_bins * self.bin_size) // 2
        return flank + self.variant_bin * self.bin_size + self.bin_size // 2

    def span(self, ref_len: int, alt_len: int) -> int:
        """Reference bases read for both windows of an allele, from pos0 - offset."""
        return self.seq_len + max(0, ref_len - alt_len)

    def fits(self, pos0: int, ref_len: int, alt_len: int, contig_length: int) -> bool:
        """Whether both windows lie inside the contig (no N padding past its ends)."""
        start = pos0 - self.offset
        return start >= 0 and start + self.span(ref_len, alt_len) <= contig_length

    def center(self, k: int) -> tuple[int, int]:
        """Target bins [lo, hi) within k of the variant's bin."""
        return max(0, self.variant_bin - k), min(self.target_bins, self.variant_bin + k + 1)


def allele_windows(span: np.ndarray, geometry: Geometry, ref_len: int, alt: str) -> tuple[np.ndarray, np.ndarray]:
    """(reference window, alternate window), uint8 codes (seq_len,) each, from `span`: the codes of
    the reference's geometry.span(ref_len, len(alt)) bases from pos0 - offset."""
    seq_len, offset = geometry.seq_len, geometry.offset
    if len(span) != geometry.span(ref_len, len(alt)):
        raise ValueError(f"span of {len(span)} bases, expected {geometry.span(ref_len, len(alt))}")
    alt_codes = encode(alt)
    right = span[offset + ref_len: offset + ref_len + seq_len - offset - len(alt_codes)]
    alt_window = np.concatenate([span[:offset], alt_codes, right])[:seq_len]
    return span[:seq_len], alt_window


def allele_scores(ref_pred: np.ndarray, alt_pred: np.ndarray, center: tuple[int, int]) -> np.ndarray:
    """float64 (A, T, 5) of predictions (A, bins, T) of A alleles' reference and alternate windows:
    ref_sum, alt_sum, sad, center_diff, log2fc per track."""
    ref = ref_pred.astype(np.float64)
    alt = alt_pred.astype(np.float64)
    ref_sum, alt_sum = ref.sum(axis=1), alt.sum(axis=1)
    lo, hi = center
    center_diff = (alt[:, lo:hi] - ref[:, lo:hi]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log2fc = np.log2((alt_sum + PSEUDOCOUNT) / (ref_sum + PSEUDOCOUNT))
    return np.stack([ref_sum, alt_sum, alt_sum - ref_sum, center_diff, log2fc], axis=-1)
