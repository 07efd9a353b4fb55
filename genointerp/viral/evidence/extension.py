"""Protein seed matches extended into ungapped alignments, scored by how likely chance makes them.

An exact seed match says only that seven residues agree. A read of a type no index has seen
usually agrees with its nearest indexed type over most of the protein, with scattered
substitutions that break every further exact seed: the alignment around the match, scored with
BLOSUM62, measures all of that agreement. For each stretch of matched seeds in one frame of a
read, its first matched seed is looked up in the references' proteins (up to MAX_PLACES of the
places that hold it, spread over the references) and the read's residues are aligned to each
place on that diagonal, without gaps, as far as both sequences go; the alignment keeps the seed
and the best-scoring extension on each side (the maximal segment through the seed).

Chance is the Karlin-Altschul expectation of an ungapped alignment scoring at least S between a
query of m residues and a database of n: E = K m n exp(-lambda S), with BLOSUM62's published
ungapped parameters for standard residue frequencies, lambda 0.3176 and K 0.134. A read's
alignment evidence is -log10 E of its best alignment (at least 0), in the same units as the
seeds' bits (genointerp.viral.evidence.chance); m counts the read's residues in all six frames (about two
per base), and n every residue of the references' six frames. genointerp.viral.evidence.protein weighs it
against the read's exact matches.

The statistic holds for sequences of ordinary composition. Low-complexity stretches break it: on
held-out human reads a (TG)n-rich microsatellite, translated, aligned to viral proteins at 8 to 10
bits before masking. So a read's residues are masked as blastx masks its queries, with SEG's
trigger stage at its published defaults (Wootton & Federhen 1993: any window of 12 residues of
at most 2.2 bits of Shannon entropy): a masked residue scores -1 against anything. Stop codons
score -4; benchmarks/viral_calls.py measures the result on every kind of negative read.
"""

from __future__ import annotations

import math

import numpy as np

from genointerp.seq.entropy import window_entropy
from genointerp.seq.translate import AMINO_ACIDS, NO_CODON
from genointerp.viral.evidence.places import SeedPlaces

LAMBDA, K = 0.3176, 0.134  # BLOSUM62, ungapped, standard (Robinson) residue frequencies
EDGE = NO_CODON + 1  # a residue code beyond a read's or a reference frame's end
MAX_PLACES = 16  # places in the references a matched seed is aligned at
# compared residues of a seed that may differ at the diagonal's place. 5 of 7 residues agree by
# chance at one of 2 x 64 places tried in about 2 of 1,000 joins (21 p^5 per place, p ~ 0.06), while
# the seeds of unseen types' mosaic stretches mostly agree at 5 or 6; asking all 7 kept 79.8 % of
# the validation types' 100 bp reads at the 10-bit line, 2 (of misses 0-3 tried) 81.9 %
DIAGONAL_MISSES = 2
REACH = 52  # residues aligned on each side of a seed: a 150 bp read's six frames hold 50 each
ALIGN_BLOCK = 2048  # seeds aligned at once: at most 16 places each, 113 residues, bounds the temporaries
_EDGE_SCORE = -10_000  # ends an alignment: no extension crosses it
# SEG's trigger stage with its published defaults (Wootton & Federhen 1993; what blastx masks reads
# with): a residue in any window of 12 whose Shannon entropy is at most 2.2 bits is masked
SEG_WINDOW, SEG_ENTROPY = 12, 2.2
MASKED = EDGE + 1  # a masked residue: -1 against anything, as BLOSUM62's X


# BLOSUM62 (Henikoff & Henikoff 1992) over the 20 amino acids in AMINO_ACIDS order, the matrix
# Biopython's substitution_matrices.load("BLOSUM62") holds (tests compare the two); written out here
# because importing Bio.Align costs a quarter of a second at every classify-reads start
BLOSUM62 = """
 4  0 -2 -1 -2  0 -2 -1 -1 -1 -1 -2 -1 -1 -1  1  0  0 -3 -2
 0  9 -3 -4 -2 -3 -3 -1 -3 -1 -1 -3 -3 -3 -3 -1 -1 -1 -2 -2
-2 -3  6  2 -3 -1 -1 -3 -1 -4 -3  1 -1  0 -2  0 -1 -3 -4 -3
-1 -4  2  5 -3 -2  0 -3  1 -3 -2  0 -1  2  0  0 -1 -2 -3 -2
-2 -2 -3 -3  6 -3 -1  0 -3  0  0 -3 -4 -3 -3 -2 -2 -1  1  3
 0 -3 -1 -2 -3  6 -2 -4 -2 -4 -3  0 -2 -2 -2  0 -2 -3 -2 -3
-2 -3 -1  0 -1 -2  8 -3 -1 -3 -2  1 -2  0  0 -1 -2 -3 -2  2
-1 -1 -3 -3  0 -4 -3  4 -3  2  1 -3 -3 -3 -3 -2 -1  3 -3 -1
-1 -3 -1  1 -3 -2 -1 -3  5 -2 -1  0 -1  1  2  0 -1 -2 -3 -2
-1 -1 -4 -3  0 -4 -3  2 -2  4  2 -3 -3 -2 -2 -2 -1  1 -2 -1
-1 -1 -3 -2  0 -3 -2  1 -1  2  5 -2 -2  0 -1 -1 -1  1 -1 -1
-2 -3  1  0 -3  0  1 -3  0 -3 -2  6 -2  0  0  1  0 -3 -4 -2
-1 -3 -1 -1 -4 -2 -2 -3 -1 -3 -2 -2  7 -1 -2 -1 -1 -2 -4 -3
-1 -3  0  2 -3 -2  0 -3  1 -2  0  0 -1  5  1  0 -1 -2 -2 -1
-1 -3 -2  0 -3 -2  0 -3  2 -2 -1  0 -2  1  5 -1 -1 -3 -3 -2
 1 -1  0  0 -2  0 -1 -2  0 -2 -1  1 -1  0 -1  4  1 -2 -3 -2
 0 -1 -1 -1 -2 -2 -2 -1 -1 -1 -1  0 -1 -1 -1  1  5  0 -2 -2
 0 -1 -3 -2 -1 -3 -3  3 -2  1  1 -3 -2 -2 -3 -2  0  4 -3 -1
-3 -2 -4 -3  1 -2 -2 -3 -3 -2 -1 -4 -4 -2 -3 -3 -2 -3 11  2
-2 -2 -3 -2  3 -3  2 -1 -2 -1 -1 -2 -3 -1 -2 -2 -2 -1  2  7
"""


def _scores() -> np.ndarray:
    """int32 (MASKED + 1, MASKED + 1): BLOSUM62 by residue code; a stop scores -4 against anything,
    an unknown codon or a masked residue -1, an edge ends the alignment."""
    n = len(AMINO_ACIDS)
    table = np.full((MASKED + 1, MASKED + 1), -4, np.int32)
    table[:n, :n] = np.array(BLOSUM62.split(), np.int32).reshape(n, n)
    table[NO_CODON, :] = table[:, NO_CODON] = -1
    table[MASKED, :] = table[:, MASKED] = -1
    table[EDGE, :] = table[:, EDGE] = _EDGE_SCORE
    return table


SCORES = _scores()


def low_complexity(rows: np.ndarray) -> np.ndarray:
    """bool (h, c): the residues of rows uint8 (h, c) (residue codes in reading order, EDGE before
    and after a read, never inside it) that lie in a window of SEG_WINDOW whose Shannon entropy is
    at most SEG_ENTROPY bits; windows reaching past an edge are not judged."""
    h, c = rows.shape
    w = SEG_WINDOW
    if c < w:
        return np.zeros((h, c), bool)
    past_edge = (rows[:, : c - w + 1] == EDGE) | (rows[:, w - 1 :] == EDGE)  # edges only flank a read
    low = (window_entropy(rows, w, EDGE) <= SEG_ENTROPY) & ~past_edge
    # residue i lies in the windows starting at i - w + 1 .. i
    starts = np.concatenate([np.zeros((h, 1), np.int32), np.cumsum(low, 1, dtype=np.int32)], 1)
    i = np.arange(c)
    return starts[:, np.clip(i + 1, 0, c - w + 1)] - starts[:, np.clip(i - w + 1, 0, c - w + 1)] > 0


class ReferenceProteins(SeedPlaces):
    """Every reading frame of the references, with the place of each indexed seed in them
    (genointerp.viral.evidence.places): residues uint8 (R,), the frames one after another, each
    followed by EDGE; a read's residues are its codons (genointerp.seq.translate.codons), a frame's
    three apart."""

    STRIDE, MISSES, OUTSIDE = 3, DIAGONAL_MISSES, EDGE

    @property
    def residues(self) -> np.ndarray:
        return self.letters

    def bits(self, scores: np.ndarray, read_length: np.ndarray) -> np.ndarray:
        """float64 (h,): -log10 of the expected number of chance alignments scoring at least
        `scores` (h,) for reads of `read_length` bases (h,), at least 0."""
        search = np.log(K * np.maximum(2 * read_length, 1) * max(self.residues.size, 1))
        return np.maximum((LAMBDA * scores - search) / math.log(10), 0.0)

    def align(self, aa: np.ndarray, at: np.ndarray, slot: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              span: int) -> np.ndarray:
        """int64 (h,): the best ungapped alignment score of each matched seed with the places
        that hold it (0 where none does), ALIGN_BLOCK seeds at a time (memory: about 3 kB per
        place aligned).

        aa uint8 (M,): codons of a strand of joined reads (genointerp.seq.translate.codons: frame
        residues are 3 apart); at int64 (h,): where each seed's window starts in aa; slot int64
        (h,): its seed's row of the table (`slots`); lo, hi int64 (h,): its read's first base and end on this strand (a
        residue at q lies in the read when lo <= q and q + 3 <= hi); span: residues a seed spans.
        """
        parts = [self._align(aa, at[i : i + ALIGN_BLOCK], slot[i : i + ALIGN_BLOCK], lo[i : i + ALIGN_BLOCK],
                             hi[i : i + ALIGN_BLOCK], span) for i in range(0, at.size, ALIGN_BLOCK)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def _align(self, aa: np.ndarray, at: np.ndarray, slot: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               span: int) -> np.ndarray:
        """align() of one block of seeds."""
        offset = np.arange(-REACH, REACH + span)
        q = at[:, None] + 3 * offset
        inside = (q >= lo[:, None]) & (q + 3 <= hi[:, None])
        rows = np.where(inside, aa[np.clip(q, 0, aa.size - 1)], EDGE).astype(np.uint8)
        rows[low_complexity(rows)] = MASKED
        hit, place = self._spread(slot, MAX_PLACES)
        score = SCORES[rows[hit], self._letters_at(place[:, None] + offset)]
        seed = score[:, REACH : REACH + span].sum(1)
        left = np.cumsum(score[:, :REACH][:, ::-1], 1).max(1, initial=0)
        right = np.cumsum(score[:, REACH + span :], 1).max(1, initial=0)
        best = np.zeros(at.size, np.int64)
        np.maximum.at(best, hit, seed + left + right)
        return best
