"""Chromosome names as other files spell them: `chr20` <-> `20`, `chrM` <-> `MT`.

Readers of FASTA, BED, bigWig/bedGraph/narrowPeak and VCF/gene annotations match names through
`chrom_alias`, so that a mismatch in the `chr` prefix is accepted (with a warning, by the caller)
instead of silently producing empty output.
"""

from __future__ import annotations


def chrom_alias(name: str, known: set[str] | dict) -> str | None:
    """`name` itself if known, else the `chr`-prefixed/unprefixed spelling if known (chrM <-> MT
    included), else None."""
    if name in known:
        return name
    if name.startswith("chr"):
        bare = name[3:]
        candidates = [bare, "MT" if bare == "M" else bare]
    else:
        candidates = ["chr" + name, "chrM" if name == "MT" else "chr" + name]
    return next((c for c in candidates if c in known), None)
