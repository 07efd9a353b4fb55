"""What classify-reads' workers do for each batch: the reads' evidence, and the typing of the
reads it calls viral.

Per batch of reads (their sequences), in a worker process (genointerp.pools) or in the job's own:
- the evidence: seed matches and protein matches (genointerp.viral.evidence.seeds, .protein), as bits;
- the typing (placement on the model folder's references, else the virus the seeds name:
  genointerp.viral.report.sample_tally.type_reads) of every read the evidence calls viral whatever the
  model says: bits over the calling line and out of the rule's undecided band. The few reads the
  model decides are typed by the job's own process once it has (SampleTally.add), so a worker
  builds its aligner (minimap2's index, about half a second) only where a batch holds viral reads.

A read's evidence and typing are computed from that read alone, so they are the same bytes in
any process and any batch: the calls do not depend on --threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from genointerp.seq.joined import encode_text
from genointerp.viral.classify.calling import CallingRule
from genointerp.viral.evidence.seeds import KmerIndex
from genointerp.viral.evidence.protein import ProteinIndex
from genointerp.viral.report.sample_tally import ReadType, type_reads
from genointerp.viral.typing.typer import Typer


@dataclass
class BatchEvidence:
    """n reads' evidence, (n,) each: hits and clean int64 (genointerp.viral.evidence.seeds.SeedEvidence),
    bits float64 (seed bits plus protein bits); and `typed`, the typing of the reads it calls
    viral whatever the model says, by their index in the batch."""

    hits: np.ndarray
    clean: np.ndarray
    bits: np.ndarray
    typed: dict[int, ReadType]


class EvidenceWork:
    """The per-batch work: called with a batch's reads joined (genointerp.seq.joined.join: one
    string pickles as one block), returns their BatchEvidence.

    Reads shorter than min_length get no call, so they are not typed. The typer (minimap2's index
    of the references, about half a second to build) is made at the first read to type, in
    whichever process that is; only the job's own process logs."""

    def __init__(self, index: KmerIndex, protein: ProteinIndex | None, rule: CallingRule, model_dir: str,
                 min_length: int, log) -> None:
        self.index, self.protein, self.rule, self.min_length = index, protein, rule, min_length
        self.model_dir, self._log, self._pid = model_dir, log, os.getpid()
        self._typer: Typer | None = None

    def _quiet_in_workers(self, message: str) -> None:
        if os.getpid() == self._pid:
            self._log(message)

    @property
    def typer(self) -> Typer:
        if self._typer is None:
            self._typer = Typer(self.model_dir, self.index, self._quiet_in_workers)
        return self._typer

    def __call__(self, batch: tuple[str, np.ndarray]) -> BatchEvidence:
        """The evidence of a batch given as genointerp.seq.joined.join gives it: (the reads joined
        by N, their lengths int64 (n,))."""
        joined, lengths = batch
        flat, starts, lengths = encode_text(joined, lengths)
        seeds = self.index.evidence(flat, starts, lengths)
        bits = seeds.bits + (self.protein.evidence(flat, starts, lengths).bits if self.protein is not None else 0.0)
        callable_ = (lengths >= self.min_length) & (seeds.clean > 0)
        viral = np.flatnonzero(callable_ & (bits >= self.rule.min_bits) & ~self.rule.undecided(bits))
        typed = {}
        if viral.size:
            seqs = [joined[a : a + n] for a, n in zip(starts[viral].tolist(), lengths[viral].tolist())]
            typed = dict(zip(viral.tolist(), type_reads(self.typer, self.index, self.protein, seqs)))
        return BatchEvidence(seeds.hits, seeds.clean, bits, typed)
