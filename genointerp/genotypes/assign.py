"""SNP-to-gene assignment while streaming the sorted sites of one chromosome.

A SNP at 0-based position p belongs to every gene with start <= p < end (overlapping genes each
count it). With `nearest`, a SNP in no gene goes to the nearest gene instead: distance start - p to
a gene downstream, p - (end - 1) to one upstream; on a tie the upstream gene wins.
"""

from __future__ import annotations

import bisect
import math

from genointerp.io.genes import Gene


class GeneAssigner:
    """Genes of one chromosome (sorted by start); call `assign` with non-decreasing positions."""

    def __init__(self, genes: list[Gene], nearest: bool = False) -> None:
        self.genes = genes
        self.nearest = nearest
        starts = [g.start for g in genes]
        self._starts = starts
        self._next = 0  # first gene whose start is beyond the last position seen
        self._active: list[int] = []  # started genes that may still contain positions
        self._upstream: int | None = None  # among genes that ended, the one ending last
        # reach[i]: from this position on no SNP can be assigned to gene i any more. With `nearest`
        # that is the start of the first gene beginning at or after gene i's end: past it, that gene
        # is nearer or overlaps.
        self.reach: list[float] = []
        for g in genes:
            if not nearest:
                self.reach.append(g.end)
            else:
                j = bisect.bisect_left(starts, g.end)
                self.reach.append(starts[j] if j < len(starts) else math.inf)

    def assign(self, p: int) -> list[int]:
        """Indices (into `genes`, ascending) of the genes position p belongs to."""
        genes = self.genes
        while self._next < len(genes) and genes[self._next].start <= p:
            self._active.append(self._next)
            self._next += 1
        still = []
        for i in self._active:
            if genes[i].end > p:
                still.append(i)
            elif self._upstream is None or genes[i].end > genes[self._upstream].end:
                self._upstream = i
        self._active = still
        if still or not self.nearest:
            return sorted(still)
        up = self._upstream
        down = self._next if self._next < len(genes) else None
        if up is None and down is None:
            return []
        if down is None or (up is not None and p - (genes[up].end - 1) <= genes[down].start - p):
            return [up]
        return [down]
