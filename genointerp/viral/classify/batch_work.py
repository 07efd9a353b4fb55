"""What classify-reads' workers do for each batch: the reads' evidence, and the typing of the
reads it calls viral.

Per batch of reads (their sequences), in a worker process (genointerp.pools) or in the job's own:
- the evidence: seed matches and protein matches (genointerp.viral.evidence.seeds, .protein), as bits;
  the proteins only for reads whose seeds leave the call open (`decided_by_seeds`);
- the typing (placement on the model folder's references, on the diagonals of the read's matched
  seeds where they place it, else by alignment; else the virus the seeds name:
  genointerp.viral.typing.typer.type_batch) of every read the evidence calls viral whatever the
  model says: bits over the calling line and out of the rule's undecided band. The few reads the
  model decides are typed by the job's own process once it has (SampleTally.add), and so are,
  where a worker has not loaded the aligner, the first DEFER_ALIGNED reads the diagonals leave to
  it (EvidenceWork.defers).

A read's evidence and typing are computed from that read alone, so they are the same bytes in
any process and any batch: the calls do not depend on --threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from genointerp.seq.joined import encode_text, join
from genointerp.viral.classify.calling import CallingRule
from genointerp.viral.evidence.seeds import KmerIndex
from genointerp.viral.evidence.protein import ProteinIndex
from genointerp.viral.typing.placed import PlacedReads, TypedReads
from genointerp.viral.typing.typer import Typer, type_batch


@dataclass
class BatchEvidence:
    """n reads' evidence, (n,) each: hits and clean int64 (genointerp.viral.evidence.seeds.SeedEvidence),
    bits float64 (seed bits plus protein bits); and `typed`, the typing of the reads it calls
    viral whatever the model says, by their index in the batch, as arrays
    (genointerp.viral.typing.placed.TypedReads: a worker sends every batch to the job's process,
    and an all-viral batch's tens of thousands of matches pickled one object at a time cost about
    a quarter of the batch's own work, each way)."""

    hits: np.ndarray
    clean: np.ndarray
    bits: np.ndarray
    typed: TypedReads


SEEDED = 1024  # reads whose seeds' evidence and placements run together (see EvidenceWork.__call__)
# Reads the diagonals leave to the aligner that a worker without the aligner loaded leaves to the
# job's process, which types them as it types the reads the model decides (SampleTally.add), before
# it loads the aligner itself. At -t 2 (one worker, the aligner not built before the fork: see
# genointerp.viral.classify.job.SHARED_TYPER_WORKERS) both processes loaded it (0.085 s of CPU
# each) for the 65 reads of 108,181 all-HPV reads that need it; the job's process loads it anyway
# for its own. 256 reads take the job's process about 0.04 s, less than a load: past that (a
# sample of types the panel lacks, long reads) the worker loads it and aligns its own.
DEFER_ALIGNED = 256


class EvidenceWork:
    """The per-batch work: called with a batch's reads joined (genointerp.seq.joined.join: one
    string pickles as one block), returns their BatchEvidence.

    Reads shorter than min_length get no call, so they are not typed. The typer is the job's: its
    aligner is built at the first read to type in each process, or before the workers fork where
    there are several (genointerp.viral.classify.job.SHARED_TYPER_WORKERS)."""

    def __init__(self, index: KmerIndex, protein: ProteinIndex | None, rule: CallingRule, typer: Typer,
                 min_length: int) -> None:
        self.index, self.protein, self.rule, self.typer, self.min_length = index, protein, rule, typer, min_length
        self._home = os.getpid()  # the job's process: the workers are forked from it
        self._deferred = 0  # reads left to the job's process to align, in this (worker) process

    def __call__(self, batch: tuple[str, np.ndarray]) -> BatchEvidence:
        """The evidence of a batch given as genointerp.seq.joined.join gives it: (the reads joined
        by N, their lengths int64 (n,)).

        The seeds' evidence runs SEEDED reads at a time, each such part's reads that the seeds
        alone call viral (`decided_by_seeds`: nearly every read of an all-viral sample) placed on
        their diagonals at once, while the seed table's rows and letters that the places check
        read are still in the caches; the proteins then run once over the batch's open reads, and
        those of them called viral are placed after. Every read's evidence and placement is its
        own, so the parts change no number."""
        joined, lengths = batch
        flat, starts, lengths = encode_text(joined, lengths)
        parts = []
        for a in range(0, max(lengths.size, 1), SEEDED):
            # the part's reads joined as the batch's are: a stretch of its codes
            b = min(a + SEEDED, lengths.size)
            first = int(starts[a]) if b > a else 0
            codes = flat[first : int(starts[b - 1] + lengths[b - 1])] if b > a else flat[:0]
            part_starts, part_lengths = starts[a:b] - first, lengths[a:b]
            seeds = self.index.evidence(codes, part_starts, part_lengths)
            at = np.flatnonzero(self._viral(part_lengths, seeds.clean, seeds.bits) & decided_by_seeds(self.rule, seeds.bits))
            # the part's numbers alone are kept, not its matched windows (about 7 MB a part of
            # all-viral reads): the next part's arrays then take the heap's room these had, still
            # in the caches, where a batch's parts held some 60 MB at once, each process's new
            # pages to fault in and its index's lines pushed out of the caches by them
            parts.append(((seeds.hits, seeds.clean, seeds.bits), at + a, self.typer.place_seeded_arrays(
                codes, part_starts[at], part_lengths[at], *seeds.windows_of(at)) if at.size else None))
            del seeds
        hits, clean, seed_bits = (np.concatenate([p[0][k] for p in parts]) for k in range(3))
        bits = seed_bits + self._protein_bits(joined, flat, starts, lengths, seed_bits)
        viral = np.flatnonzero(self._viral(lengths, clean, bits))
        if not viral.size:
            return BatchEvidence(hits, clean, bits, TypedReads.empty())
        seeded_reads = np.concatenate([p[1] for p in parts])
        placed = [p[2] for p in parts if p[2] is not None]
        # called viral once the proteins are added (both ascending; np.setdiff1d's plain np.unique
        # is numpy 2's hashing one, and its first call imports numpy.ma: 20 ms in each process)
        seen = np.zeros(lengths.size, bool)
        seen[seeded_reads] = True
        rest = viral[~seen[viral]]
        if rest.size:
            codes, rest_starts, rest_lengths = encode_text(*join(
                [joined[a : a + n] for a, n in zip(starts[rest].tolist(), lengths[rest].tolist())]))
            seeds = self.index.evidence(codes, rest_starts, rest_lengths)
            placed.append(self.typer.place_seeded_arrays(codes, rest_starts, rest_lengths,
                                                        *seeds.windows_of(np.arange(rest.size))))
        reads = np.concatenate([seeded_reads, rest])
        order = np.argsort(reads, kind="stable")
        mask = np.concatenate([p[0] for p in placed])
        hits_of = PlacedReads.concat([p[1] for p in placed]).reordered(mask, order)
        placed_in_order = mask[order]
        if self.defers(int(placed_in_order.size - placed_in_order.sum())):
            # the placed reads alone: the job's process types the others (SampleTally.add)
            viral, placed_in_order = viral[placed_in_order], placed_in_order[placed_in_order]
        # the text of the reads type_batch reads (those the diagonals did not place), not of every
        # viral read: an all-viral batch's 8,192 slices, nearly all unread, were 1 % of its work
        seqs: list[str | None] = [None] * viral.size
        for i in np.flatnonzero(~placed_in_order).tolist():
            a = int(starts[viral[i]])
            seqs[i] = joined[a : a + int(lengths[viral[i]])]
        typed = type_batch(self.typer, self.index, self.protein, seqs, viral, (placed_in_order, hits_of))
        return BatchEvidence(hits, clean, bits, typed)

    def defers(self, count: int) -> bool:
        """Whether a batch's `count` reads that the diagonals leave to the aligner are left to the
        job's process: in a worker whose typer has not loaded the aligner, while the reads so
        left stay within DEFER_ALIGNED (counted here). A read's typing is its own, wherever made."""
        if not count or os.getpid() == self._home or self.typer.aligner_loaded() \
                or self._deferred + count > DEFER_ALIGNED:
            return False
        self._deferred += count
        return True

    def _viral(self, lengths: np.ndarray, clean: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """bool (n,): the reads the evidence calls viral whatever the model says."""
        return (lengths >= self.min_length) & (clean > 0) & (bits >= self.rule.min_bits) & ~self.rule.undecided(bits)

    def _protein_bits(self, joined: str, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                      seed_bits: np.ndarray) -> np.ndarray | float:
        """float64 (n,): the protein evidence's bits of the reads whose seed bits leave their call
        open (under the line plus the model's reach: `decided_by_seeds`), 0 for the others, whose
        call the proteins cannot change (nearly every read of a viral genome the index holds)."""
        if self.protein is None:
            return 0.0
        open_ = np.flatnonzero(~decided_by_seeds(self.rule, seed_bits))
        if open_.size == lengths.size:
            return self.protein.evidence(flat, starts, lengths).bits
        bits = np.zeros(lengths.size)
        if open_.size:
            part = join([joined[a : a + n] for a, n in zip(starts[open_].tolist(), lengths[open_].tolist())])
            bits[open_] = self.protein.evidence(*encode_text(*part)).bits
        return bits


def decided_by_seeds(rule: CallingRule, seed_bits: np.ndarray) -> np.ndarray:
    """bool (n,): reads whose codon-seed bits alone reach the line plus the model's reach, so that
    they are viral whatever the proteins and the model add: their proteins are not searched, and
    their `bits` are the seeds' alone."""
    return seed_bits >= rule.min_bits + rule.reach
