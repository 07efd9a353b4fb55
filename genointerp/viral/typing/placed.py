"""Typed reads as arrays, from the diagonals' kernel to the report's rows.

An all-viral sample's 100,000 reads make some 350,000 matches; as Python objects (a tuple per
match, a list per read) they cost more to build, pickle between processes and take apart again
than the typing itself. So a batch's typing travels as arrays (`TypedReads`, a `PlacedReads` of
its placed reads' matches within), the sample's tally keeps them so, and the EM and the type rows
(genointerp.viral.typing.typer.run_em, type_rows) read them as they are. `TypeHits` objects are
made only for the reads the aligner places, and where a caller asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Iterator, NamedTuple

import numpy as np


class Hit(NamedTuple):
    """One match of a read (a tuple: a capture panel's reads make hundreds of thousands of them,
    built three times faster than a frozen dataclass's)."""

    ref: str
    edits: int  # edit distance of the alignment + unaligned read bases
    r_st: int  # 0-based start on the reference (circular: modulo its length)
    r_en: int  # r_st + aligned reference bases (may pass a circular genome's end)
    aligned: int  # read bases in the alignment


@dataclass
class TypeHits:
    """A read's matches within MARGIN of its best, sorted by (edits, reference name)."""

    hits: list[Hit]

    @property
    def best(self) -> int:
        return self.hits[0].edits


@dataclass(frozen=True)
class ReadType:
    """A read's typing: its placement (None where no reference places it), its `reference`
    column, and the virus its seeds name where no reference places it (None otherwise, or where
    they name no clear one)."""

    placed: TypeHits | None
    label: str
    named: str | None


_NUMBERS = ("edits", "r_st", "r_en", "aligned")


def ranks(k: np.ndarray) -> np.ndarray:
    """0..k[i]-1 for each i of int64 (n,), one after another."""
    return np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)


@dataclass
class PlacedReads:
    """n placed reads' matches, each read's one after another in its order (by edits, then the
    reference's name): count int64 (n,), each read's matches; ref int64 (H,), each match's
    reference as an index into `names` (the typer's references, or those of a typing's text);
    edits, r_st, r_en, aligned int64 (H,), as Hit holds them."""

    names: list[str]
    count: np.ndarray
    ref: np.ndarray
    edits: np.ndarray
    r_st: np.ndarray
    r_en: np.ndarray
    aligned: np.ndarray

    def __len__(self) -> int:
        return int(self.count.size)

    def used(self) -> np.ndarray:
        """The indexes into `names` that some match has, sorted (int64): counted, not sorted out
        of the matches (np.sort of a report's 354,116 took 0.01 s)."""
        return np.flatnonzero(np.bincount(self.ref, minlength=len(self.names)))

    @classmethod
    def empty(cls, names: list[str] | None = None) -> "PlacedReads":
        none = np.zeros(0, np.int64)
        return cls(names if names is not None else [], none, none, none, none, none, none)

    @classmethod
    def of(cls, placed: list[TypeHits], names: list[str] | None = None) -> "PlacedReads":
        """The arrays of `placed`; references indexed into `names` (extended with any it lacks;
        by default those of `placed`, in order of first appearance)."""
        given = names if names is not None else []
        index = {name: i for i, name in enumerate(given)}
        count = np.fromiter((len(p.hits) for p in placed), np.int64, len(placed))
        rows = list(chain.from_iterable(p.hits for p in placed))  # (a zip(*rows) of them took 3-5 times as long)
        ref = np.fromiter((index.setdefault(h[0], len(index)) for h in rows), np.int64, len(rows))
        names = given if len(index) == len(given) and names is not None else list(index)  # the same list where it holds all
        return cls(names, count, ref, *(np.fromiter(map(itemgetter(j), rows), np.int64, len(rows)) for j in range(1, 5)))

    def starts(self) -> np.ndarray:
        """int64 (n,): each read's first match."""
        return np.cumsum(self.count) - self.count

    def as_list(self) -> list[TypeHits]:
        """Every read's matches as TypeHits (for callers that want the objects)."""
        hits = [Hit(self.names[r], *rest) for r, *rest in
                zip(self.ref.tolist(), *(getattr(self, k).tolist() for k in _NUMBERS))]
        cut = np.r_[0, np.cumsum(self.count)].tolist()
        return [TypeHits(hits[a:b]) for a, b in zip(cut[:-1], cut[1:])]

    def reordered(self, placed: np.ndarray, order: np.ndarray) -> "PlacedReads":
        """These matches, of the reads where `placed` (bool (m,): of m reads, placed or not, in the
        order these hold the placed ones) is True, for the m reads taken in `order` (int64 (m,))."""
        rank = np.full(placed.size, -1, np.int64)  # each placed read's rank among the placed
        rank[placed] = np.arange(int(placed.sum()))
        return self.take(rank[order][placed[order]])

    def take(self, rows: np.ndarray) -> "PlacedReads":
        """The reads `rows` (int64 (m,)), in that order."""
        count = self.count[rows]
        at = np.repeat(self.starts()[rows], count) + ranks(count)
        return PlacedReads(self.names, count, self.ref[at], *(getattr(self, k)[at] for k in _NUMBERS))

    def named_as(self, names: list[str]) -> "PlacedReads":
        """The same reads with references indexed into `names` (which holds every one of theirs)."""
        if names is self.names or names == self.names:
            return self if names is self.names else PlacedReads(names, *self._arrays())
        index = {name: i for i, name in enumerate(names)}
        mapping = np.array([index.get(name, -1) for name in self.names], np.int64)
        ref = mapping[self.ref] if self.ref.size else self.ref
        if (ref < 0).any():
            raise ValueError("named_as: a reference the names lack")
        return PlacedReads(names, self.count, ref, *(getattr(self, k) for k in _NUMBERS))

    def _arrays(self) -> tuple:
        return (self.count, self.ref, *(getattr(self, k) for k in _NUMBERS))

    @staticmethod
    def concat(parts: list["PlacedReads"], names: list[str] | None = None) -> "PlacedReads":
        """The reads of `parts` one after another; references indexed into `names` (by default the
        first part's names, extended with those of the others in order)."""
        if names is None:
            if parts and all(p.names is parts[0].names for p in parts):
                names = parts[0].names  # one typer's references: nothing to re-index
            else:
                names = list(dict.fromkeys(chain.from_iterable(p.names for p in parts)))
        parts = [p.named_as(names) for p in parts]
        if not parts:
            return PlacedReads.empty(names)
        return PlacedReads(names, *(np.concatenate(a) for a in zip(*(p._arrays() for p in parts))))


@dataclass
class TypedReads:
    """The typing of m reads of a batch, as arrays (a worker's answer pickles as a few blocks):
    read int64 (m,), their indexes in the batch, ascending; label and named, (m,) lists: the
    `reference` column and the virus the seeds name (ReadType's); placed bool (m,); hits, the
    placed ones' matches in read order. Read as a mapping it gives ReadType objects."""

    read: np.ndarray
    label: list[str]
    named: list[str | None]
    placed: np.ndarray
    hits: PlacedReads

    @classmethod
    def empty(cls, names: list[str] | None = None) -> "TypedReads":
        return cls(np.zeros(0, np.int64), [], [], np.zeros(0, bool), PlacedReads.empty(names))

    @classmethod
    def of(cls, typed: dict[int, ReadType], names: list[str] | None = None) -> "TypedReads":
        """The arrays of a mapping of read index -> ReadType (its order: ascending read indexes)."""
        reads = sorted(typed)
        types = [typed[i] for i in reads]
        return cls(np.array(reads, np.int64), [t.label for t in types], [t.named for t in types],
                   np.array([t.placed is not None for t in types], bool),
                   PlacedReads.of([t.placed for t in types if t.placed is not None], names))

    @staticmethod
    def merge(parts: list["TypedReads"]) -> "TypedReads":
        """The reads of `parts` (no read in two) in ascending order."""
        parts = [p for p in parts if len(p)] or parts[:1]
        if len(parts) == 1:
            return parts[0]
        read = np.concatenate([p.read for p in parts])
        order = np.argsort(read, kind="stable")
        placed = np.concatenate([p.placed for p in parts])
        label = list(chain.from_iterable(p.label for p in parts))
        named = list(chain.from_iterable(p.named for p in parts))
        hits = PlacedReads.concat([p.hits for p in parts]).reordered(placed, order)
        return TypedReads(read[order], [label[i] for i in order.tolist()], [named[i] for i in order.tolist()],
                          placed[order], hits)

    def __len__(self) -> int:
        return int(self.read.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.read.tolist())

    def items(self) -> Iterator[tuple[int, ReadType]]:
        placed = iter(self.hits.as_list())
        for i, label, named, is_placed in zip(self.read.tolist(), self.label, self.named, self.placed.tolist()):
            yield i, ReadType(next(placed) if is_placed else None, label, named)

    def values(self) -> Iterator[ReadType]:
        return (t for _, t in self.items())

    def as_dict(self) -> dict[int, ReadType]:
        return dict(self.items())

    def __eq__(self, other) -> bool:
        if isinstance(other, TypedReads):
            other = other.as_dict()
        return isinstance(other, dict) and self.as_dict() == other
