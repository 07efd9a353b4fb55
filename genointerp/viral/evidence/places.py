"""Where each indexed seed lies in the references, and whether two matched seeds lie on one diagonal.

An index answers only whether a read's window is in it. A stretch of matched windows counts as one
match (genointerp.viral.evidence.chance) only where its windows lie on one diagonal of one
reference: where they are matched at unrelated places, each is a separate draw from the index, as
likely by chance as any other pair. On human sequence no filter saw, two windows a few bases apart,
each matched by chance at an unrelated place, were the most common way to come near the calling
line (benchmarks/human_filter.py). So each index keeps its seeds' places: the references' letters
(the six reading frames' residues for the protein seeds, both strands' bases for the codon seeds),
and per seed the letters its windows start at.

The table is a compressed sparse one, the form genointerp.viral.evidence.prebuilt stores: keys
uint64 (n,), the sorted distinct seeds (the index's ids); start (n + 1,); places (S,), key i's
places being places[start[i]:start[i + 1]] in the order they were given; start and places int32
where the letters allow (half the memory of int64 for any real panel).
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import N_CODE
from genointerp.seq.idset import positions
from genointerp.seq.scan import diagonal_pairs, stretch_draws

CHECK_PLACES = 64  # places of each seed of two tried when asking whether they lie on one diagonal
FIRST_PLACES = 4  # of them, tried first: enough for nearly every pair of one match
# compared bases of a codon seed (18) that may differ on a shared diagonal: 18 - m of 18 bases agree
# by chance at one place with odds C(18, m) 3^m / 4^18, about 3e-7 for m = 3, so 128 places tried
# find a chance diagonal in 4 of 100,000 joins; the seeds of one match of an unseen type lie on one
# diagonal of a known type whose codons differ at few first and second positions
BASE_MISSES = 3


class SeedPlaces:
    """The references' letters, with the places of each indexed seed in them.

    Built from letters uint8 (R,), the references one after another, each followed by `OUTSIDE`,
    and seed_ids uint64 (S,) and places int (S,): a seed id and the letter its window starts at, for
    every place an indexed seed occurs (a seed of several places appears several times).
    Subclasses say how a read's letters lie (`STRIDE`: 3 for codons, whose frame residues are three
    apart, 1 for bases), how many of a seed's compared letters may differ on a shared diagonal
    (`MISSES`) and what lies outside the references (`OUTSIDE`, never equal to a read's letter)."""

    STRIDE = 1
    MISSES = 0
    OUTSIDE = 255

    def __init__(self, letters: np.ndarray, seed_ids: np.ndarray, places: np.ndarray) -> None:
        order = np.argsort(seed_ids, kind="stable")
        seed_ids, places = seed_ids[order], places[order]
        first = np.r_[True, seed_ids[1:] != seed_ids[:-1]] if seed_ids.size else np.zeros(0, bool)
        place_type = np.int32 if max(letters.size, seed_ids.size) < 2**31 else np.int64
        self.letters, self.keys = letters, seed_ids[first]
        self.start = np.r_[np.flatnonzero(first), seed_ids.size].astype(place_type)
        self.places = places.astype(place_type)

    @classmethod
    def prebuilt(cls, letters: np.ndarray, keys: np.ndarray, start: np.ndarray, places: np.ndarray):
        """The table from its stored arrays (memory-mapped ones are used in place)."""
        table = cls.__new__(cls)
        table.letters, table.keys, table.start, table.places = letters, keys, start, places
        return table

    def share_a_place(self, query: np.ndarray, at: np.ndarray, slot: np.ndarray, compared: np.ndarray,
                      first: np.ndarray, second: np.ndarray, span: int = 0, flip: np.ndarray | None = None,
                      pattern: np.ndarray | None = None, place: np.ndarray | None = None,
                      rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """bool (j,): whether the matched seeds first[j] and second[j] of one read lie on one
        diagonal of one reference, as the windows of one match do: some place that holds one of
        them, moved by their distance in the read, holds the other's compared letters too, all but
        MISSES of them (a read of a type no index holds agrees with each known type at other
        letters: its seeds' genomes differ, and each nearly holds the other seed).

        query uint8 (M,): the letters of joined reads (for proteins, the codons of a strand:
        genointerp.seq.translate.codons); at int64 (h,): where each matched seed's window starts in
        query; slot int64 (h,): its id's row of the table (`slots`); compared int64 (P, w): each
        seed pattern's compared letters' places in its window (STRIDE apart in query), pattern int
        (h,) each seed's (None: all the first); first, second int64 (j,): indexes into at, seeds of
        one frame of one read. flip bool (h,) (canonical seeds):
        the read's window is the reverse complement of the seed's places, which then lie at
        len(letters) - place - span in the read's direction (the letters hold both strands, each the
        other's reverse complement).

        The seed of the two with fewer places is looked up, at up to CHECK_PLACES of them spread
        evenly over its places (as `_spread`), so that a pair of conserved seeds is judged on the
        references that hold the rarer one, then, for pairs still apart, from up to CHECK_PLACES of
        the other's. Seeds of one match nearly always share the first few places tried, so
        FIRST_PLACES are tried first. Compiled (genointerp.seq.scan.diagonal_pairs): a viral read's
        hundred or so joins made this a third of the evidence's time in numpy. `place` int64 (h,)
        (or None): each seed's first place where the look-ups gave it (the index's lookup table holds
        it, genointerp.seq.scan.SeedHits.place; -1 where not), so that the first try need not fetch
        it: that fetch was a quarter of the compiled check's time on all-viral reads. `rows`
        ((row, count) int64 (h,) each, or None) get each seed's row of the table as the check reads
        it (genointerp.seq.scan.diagonal_pairs).
        """
        return diagonal_pairs(query, at, slot, compared, pattern, first, second, self, span, flip, FIRST_PLACES,
                              CHECK_PLACES, place, rows)

    def draws(self, query: np.ndarray, at: np.ndarray, slot: np.ndarray, compared: np.ndarray, opens: np.ndarray,
              span: int = 0, flip: np.ndarray | None = None, pattern: np.ndarray | None = None,
              place: np.ndarray | None = None, rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """int64 (stretches,): per stretch of matched seeds (at, slot (h,) sorted as
        genointerp.viral.evidence.chance.stretches opened them, `opens` bool (h,); the rest as
        `share_a_place` takes them), the entries of the index it matches apart: one, plus one for
        each seed that lies on no diagonal with the seed before it (`rows`: as share_a_place fills them)."""
        joins = np.flatnonzero(~opens)
        apart = ~self.share_a_place(query, at, slot, compared, joins - 1, joins, span, flip, pattern, place, rows)
        return 1 + np.bincount((np.cumsum(opens) - 1)[joins[apart]], minlength=int(opens.sum()))

    def stretch_draws(self, query: np.ndarray, at: np.ndarray, slot: np.ndarray, compared: np.ndarray,
                      opens: np.ndarray, span: int = 0, flip: np.ndarray | None = None,
                      pattern: np.ndarray | None = None, place: np.ndarray | None = None,
                      rows: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """`draws` in one compiled pass (genointerp.seq.scan.stretch_draws): the pairs of each seed
        and the one before it in its stretch made, checked and counted there, where numpy made
        the pairs and counted them in a dozen passes over an all-viral batch's seeds. The same
        counts (`draws`, through share_a_place, is the definition)."""
        return stretch_draws(query, at, slot, compared, pattern, opens, self, span, flip, FIRST_PLACES, CHECK_PLACES,
                             place, rows)

    def slots(self, ids: np.ndarray) -> np.ndarray:
        """int64 (h,): each of ids uint64 (h,)'s row of the table, -1 for an id it does not hold
        (the index's look-ups give the rows of the ids they find: genointerp.seq.scan)."""
        return positions(self.keys, ids)

    def _count(self, slot: np.ndarray) -> np.ndarray:
        """int64 (h,): the places of each row `slot` (h,) of the table (0 for -1)."""
        safe = np.maximum(slot, 0)
        return np.where(slot >= 0, self.start[safe + 1].astype(np.int64) - self.start[safe], 0)

    def _spread(self, slot: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
        """(seed int64 (P,), place int64 (P,)): up to `most` places of each seed (its row `slot`
        (h,)), spread evenly over its places (the nth of `take` being place nth * count // take),
        with the seed each belongs to."""
        count = self._count(slot)
        take = np.minimum(count, most)
        seed = np.repeat(np.arange(slot.size), take)
        nth = np.arange(seed.size) - np.repeat(np.cumsum(take) - take, take)
        entry = self.start[slot[seed]].astype(np.int64) + nth * count[seed] // np.maximum(take[seed], 1)
        return seed, self.places[entry].astype(np.int64)

    def _letters_at(self, where: np.ndarray) -> np.ndarray:
        """The reference letters at `where` (any shape), OUTSIDE beyond them."""
        inside = (where >= 0) & (where < self.letters.size)
        return np.where(inside, self.letters[np.clip(where, 0, max(self.letters.size - 1, 0))], self.OUTSIDE)


class ReferenceBases(SeedPlaces):
    """Both strands of the references' bases, with the place of each indexed (canonical) codon seed:
    letters uint8 (R,) are the contigs joined by N, then all of that reverse-complemented, so that
    the letters are their own reverse complement and a seed's window on either strand has a place
    read in the read's direction (`share_a_place`'s flip). A seed's places are those where its
    window reads as its id forward."""

    STRIDE, MISSES, OUTSIDE = 1, BASE_MISSES, N_CODE
