"""The host genes at or nearest to a junction (find-integrations --genes)."""

from __future__ import annotations

from collections import defaultdict

from genointerp.io.chroms import chrom_alias
from genointerp.io.genes import read_genes


class NearestGenes:
    def __init__(self, path: str, host, warn) -> None:
        self.by_chrom: dict[str, list] = defaultdict(list)
        warned = set()
        for g in read_genes(path):
            chrom = g.chrom if g.chrom in host.lengths else chrom_alias(g.chrom, host.lengths)
            if chrom is None:
                continue
            if chrom != g.chrom and g.chrom not in warned:
                warned.add(g.chrom)
                warn(f"{path}: chromosome {g.chrom} taken as {chrom} of the host {host.path}")
            self.by_chrom[chrom].append(g)

    def __call__(self, chrom: str, pos: int) -> list[str]:
        genes = self.by_chrom.get(chrom, [])
        inside = [g.name for g in genes if g.start <= pos < g.end]
        if inside:
            return inside
        left = max((g for g in genes if g.end <= pos), key=lambda g: (g.end, g.name), default=None)
        right = min((g for g in genes if g.start > pos), key=lambda g: (g.start, g.name), default=None)
        out = []
        if left is not None:
            out.append(f"{left.name}(-{pos - left.end + 1})")
        if right is not None:
            out.append(f"{right.name}(+{right.start - pos})")
        return out
