"""The virus of a read called viral that no reference places, from its seeds.

Typing (genointerp.viral.typing.typer) names a read by aligning it to the model folder's references; a
read of a genotype the folder lacks can lie too far from every reference for that (HCV genotypes
at 70-84 % identity to the nearest kept genome: the alignment covers too little of the read, at
too low an identity) although its codon seeds and protein seeds called it viral. Those seeds come
from references of one virus or several: the indexes keep, per seed, the virus whose contigs hold
it, or AMBIGUOUS (genointerp.viral.evidence.seeds.labelled_ids). The read's virus is the one that at
least MIN_SHARE of its labelled matches (codon-seed windows and protein seeds together, all
frames) name, given at least MIN_VOTES of them: the seed index's own `min_hits` (three matched
windows), so that a virus is named on no less than a read is called on. Two thirds leaves a read
whose matches split between two viruses (a chimera, or seeds the two share by descent that
escaped the ambiguous label) unnamed rather than guessed; reads of a held-out genotype match their
own virus almost only (benchmarks/viral_report.py --holdout). Its `reference` is then
VIRUS + UNPLACED_SUFFIX ("HCV (unplaced)"): the virus first, as a type's name starts with its
virus, and "unplaced" still in it, as the read was not placed on any genome. Only these reads are
looked up a second time, so the common path costs nothing more.
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.joined import encode_joined

MIN_SHARE = 2 / 3
MIN_VOTES = 3
UNPLACED_SUFFIX = " (unplaced)"


def virus_label(virus: str) -> str:
    """The `reference` of a read named at the virus level only."""
    return virus + UNPLACED_SUFFIX


def vote(counts: np.ndarray, viruses: tuple[str, ...]) -> list[str | None]:
    """Per read of counts int64 (n, len(viruses)) (labelled matches per virus), the virus at least
    MIN_SHARE of them name with at least MIN_VOTES, else None."""
    out: list[str | None] = []
    for row in counts.tolist():
        total = sum(row)
        best = max(range(len(row)), key=lambda i: row[i]) if row else 0
        ok = total and row[best] >= MIN_VOTES and row[best] >= MIN_SHARE * total
        out.append(viruses[best] if ok else None)
    return out


def name_viruses(index, protein, seqs: list[str]) -> list[str | None]:
    """The virus of each read (None: no clear one) from the seed index `index` (KmerIndex) and
    protein index `protein` (ProteinIndex or None), by their per-seed virus labels."""
    if not seqs or index is None or index.labels is None:
        return [None] * len(seqs)
    flat, starts, lengths = encode_joined(seqs)
    counts = index.virus_hits(flat, starts, lengths)
    if protein is not None and protein.labels is not None:
        if protein.viruses != index.viruses:  # the same references, so the same order; guard anyway
            raise ValueError("the seed and protein indexes label different viruses")
        counts = counts + protein.virus_hits(flat, starts, lengths)
    return vote(counts, index.viruses)
