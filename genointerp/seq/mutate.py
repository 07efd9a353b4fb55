"""Sequence-level augmentation: mutate a source genome before reads are drawn from it.

XVir trains on reads from references mutated with 3.75-15 % substitutions so that the model
generalises to divergent strains; insertions and deletions are offered alongside.
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import N_CODE


def mutate_codes(
    codes: np.ndarray, sub_rate: float, ins_rate: float, del_rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray | None]:
    """Mutate a contig. codes: uint8 (L,) with 0..3 bases and 4 = N.

    Each base is substituted (by one of the three other bases) with probability sub_rate,
    deleted with probability del_rate, and followed by a random inserted base with probability
    ins_rate. N is never substituted. Returns (mutated codes (L',), origin) where origin[i] is the
    position in the input that mutated position i comes from (an inserted base takes its left
    neighbour's position), or None when no indel rate is set (positions unchanged).
    """
    out = codes.copy()
    if sub_rate > 0:
        hit = (rng.random(out.size) < sub_rate) & (out < N_CODE)
        shift = rng.integers(1, 4, size=int(hit.sum()), dtype=np.uint8)
        out[hit] = (out[hit] + shift) % 4
    if ins_rate <= 0 and del_rate <= 0:
        return out, None
    origin = np.arange(out.size, dtype=np.int64)
    keep = rng.random(out.size) >= del_rate if del_rate > 0 else np.ones(out.size, dtype=bool)
    ins_after = np.flatnonzero(rng.random(out.size) < ins_rate) if ins_rate > 0 else np.empty(0, np.int64)
    # insert first (positions refer to the unmutated contig), deleting afterwards
    new_bases = rng.integers(0, 4, size=ins_after.size, dtype=np.uint8)
    out = np.insert(out, ins_after + 1, new_bases)
    origin = np.insert(origin, ins_after + 1, origin[ins_after])
    keep = np.insert(keep, ins_after + 1, True)
    return out[keep], origin[keep]
