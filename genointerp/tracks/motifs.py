"""Motif-aware first layer for track models (`train-tracks --motif-init jaspar`): the stem's
convolution filters start as JASPAR position weight matrices instead of random weights.

Which motifs: first those of the factors the tracks name (a track id or name token, split at
`.`, `|`, `_`, `:` or `-`, equal to a JASPAR CORE vertebrate profile's name, e.g. `CTCF` in
`K562.CTCF.conservative`; one profile per factor, the lowest matrix id), in track order; then a
broad set filling the remaining filters: one profile per TF family, the families taken from the
largest down, so the rest of the stem covers the main binding-domain kinds. Filters beyond the
motifs keep their random initialisation.

A motif becomes a filter as its log-odds against a uniform background (bits, pseudocount 0.5 per
base), the `kernel` columns of highest information content (centred and zero-padded when the
motif is shorter), in one of two scales:

- `threshold` (`--motif-init jaspar`): scaled so a perfect match scores +1, with the bias at 75 %
  of the perfect score: the filter fires on near-matches and is strongly negative elsewhere;
- `centred` (`--motif-init jaspar-centred`): each column's mean subtracted, so random DNA scores 0
  on average, no bias, and scaled so a perfect match scores 1/4, about the spread of a randomly
  initialised filter's output: motif channels look like the random ones to the LayerNorms after
  the stem, which a mix of threshold filters and random ones does not.

JASPAR comes from pyjaspar (an offline SQLite copy of the database; the release is fixed, so the
same command gives the same filters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from genointerp.errors import InputError

RELEASE = "JASPAR2024"
PSEUDOCOUNT = 0.5
THRESHOLD = 0.75  # bias: a window scoring this fraction of the perfect match gives 0


@dataclass(frozen=True)
class MotifFilter:
    matrix_id: str
    name: str
    why: str  # "factor" (a tracked factor's motif) or "broad"
    weight: np.ndarray  # float32 (4, kernel): A, C, G, T rows
    bias: float


def _profiles(release: str):
    try:  # an optional dependency (genointerp[motifs]): imported where it is needed
        from pyjaspar import jaspardb
    except ImportError:
        raise InputError("--motif-init jaspar needs pyjaspar: pip install 'genointerp[motifs]'") from None
    motifs = jaspardb(release=release).fetch_motifs(collection="CORE", tax_group=["vertebrates"], all_versions=False)
    return sorted(motifs, key=lambda m: m.matrix_id)


def track_factors(tracks: list[dict]) -> list[str]:
    """Upper-case tokens of the tracks' ids and names, in track order, each once."""
    tokens = []
    for t in tracks:
        for field in (t.get("id", ""), t.get("name", "")):
            tokens += [tok.upper() for tok in re.split(r"[.|_:\-\s]+", field or "") if tok]
    return list(dict.fromkeys(tokens))


SCALES = ("threshold", "centred", "perfect")
CENTRED_PEAK = 0.25  # a perfect match's score under the centred scale


def motif_filter(counts: dict, kernel: int, scale: str = "threshold") -> tuple[np.ndarray, float]:
    """(float32 (4, kernel) weights, bias) of one JASPAR count matrix ({base: counts per position})."""
    c = np.array([counts[b] for b in "ACGT"], dtype=np.float64)  # (4, length)
    p = (c + PSEUDOCOUNT) / (c.sum(0) + 4 * PSEUDOCOUNT)
    log_odds = np.log2(p / 0.25)
    ic = (p * log_odds).sum(0)
    length = log_odds.shape[1]
    if length > kernel:  # the kernel-wide run of columns holding the most information
        start = int(np.argmax(np.convolve(ic, np.ones(kernel), mode="valid")))
        log_odds = log_odds[:, start : start + kernel]
    else:
        left = (kernel - length) // 2
        log_odds = np.pad(log_odds, ((0, 0), (left, kernel - length - left)))
    if scale == "perfect":  # the motif scan's: a perfect match scores 1 (models.motif_scan)
        return (log_odds / log_odds.max(0).sum()).astype(np.float32), 0.0
    if scale == "centred":
        log_odds = log_odds - log_odds.mean(0)
        return (log_odds * CENTRED_PEAK / log_odds.max(0).sum()).astype(np.float32), 0.0
    if scale != "threshold":
        raise ValueError(f"unknown motif scale {scale!r} (known: {', '.join(SCALES)})")
    best = float(log_odds.max(0).sum())
    factor = 1.0 / (best * (1 - THRESHOLD))
    return (log_odds * factor).astype(np.float32), -THRESHOLD * best * factor


def jaspar_filters(tracks: list[dict], n: int, kernel: int, release: str = RELEASE,
                   scale: str = "threshold") -> list[MotifFilter]:
    """Up to n filters: the tracked factors' motifs, then one per TF family (largest first)."""
    profiles = _profiles(release)
    by_name: dict[str, object] = {}
    for m in profiles:  # sorted by matrix id: the first profile of a name is kept
        by_name.setdefault(m.name.upper(), m)
    for m in profiles:  # a dimer's profile stands in for a factor without one of its own
        for part in m.name.upper().split("::"):
            by_name.setdefault(part, m)
    chosen: list[tuple[object, str]] = []
    seen: set[str] = set()
    for token in track_factors(tracks):
        m = by_name.get(token)
        if m is not None and m.matrix_id not in seen:
            chosen.append((m, "factor"))
            seen.add(m.matrix_id)
    families: dict[str, list] = {}
    for m in profiles:
        families.setdefault("; ".join(m.tf_family or ["unknown"]), []).append(m)
    covered = {"; ".join(m.tf_family or ["unknown"]) for m, _ in chosen}
    for fam in sorted(families, key=lambda f: (-len(families[f]), f)):
        if fam not in covered:
            chosen.append((families[fam][0], "broad"))
    out = []
    for m, why in chosen[:n]:
        w, b = motif_filter(m.counts, kernel, scale)
        out.append(MotifFilter(m.matrix_id, m.name, why, w, b))
    return out


SCAN_KERNEL = 24  # bp; a longer motif keeps its most informative 24 columns


def scan_motifs(tracks: list[dict], release: str = RELEASE) -> list[MotifFilter]:
    """The tracked factors' motifs for a motif scan (`--motif-scan jaspar`), each a perfect-match-1
    matrix as wide as the longest of them (at most SCAN_KERNEL bp; shorter ones centred)."""
    chosen = [f for f in jaspar_filters(tracks, 10**6, SCAN_KERNEL, release, "perfect") if f.why == "factor"]
    if not chosen:
        raise InputError("--motif-scan jaspar: no track names a factor with a JASPAR CORE vertebrate profile "
                         "(track ids such as K562.CTCF.conservative name their factor)")
    used = [np.flatnonzero(np.abs(f.weight).sum(0)) for f in chosen]
    lo, hi = min(int(u[0]) for u in used), max(int(u[-1]) for u in used) + 1
    return [MotifFilter(f.matrix_id, f.name, f.why, np.ascontiguousarray(f.weight[:, lo:hi]), 0.0) for f in chosen]


def stem_conv(model):
    """The first convolution of a track model (the one reading one-hot DNA)."""
    stem = getattr(model, "stem", None) or getattr(getattr(model, "tower", None), "stem", None)
    if stem is None:
        raise ValueError(f"{type(model).__name__} has no conv stem")
    return stem.conv


def apply_motif_filters(model, filters: list[MotifFilter]) -> None:
    """Overwrite the first len(filters) output channels of the model's stem conv (in place)."""
    conv = stem_conv(model)
    with torch.no_grad():
        for i, f in enumerate(filters):
            conv.weight[i] = torch.from_numpy(f.weight)
            conv.bias[i] = f.bias
