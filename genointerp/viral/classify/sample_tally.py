"""classify-reads' side of the per-sample viral report: each viral read's type (the calls TSV's
`reference` column) and the sample's typing (genointerp.viral.report.typing_data), the data the report is
built from (genointerp.viral.report.sample_report.report_from_typing)."""

from __future__ import annotations

import numpy as np

from genointerp.viral.panel import type_taxids
from genointerp.viral.report.typing_data import typing_part
from genointerp.viral.typing.placed import PlacedReads, ReadType, TypedReads
from genointerp.viral.typing.typer import Typer, type_batch


class SampleTally:
    """classify-reads' side of the report: the `reference` column of each batch's viral reads
    (typed here, or beforehand by the batch's worker) and what the report is built from: each
    placed read's matches (kept as the batches' arrays, genointerp.viral.typing.placed), the
    unplaced reads, the bases of the reads not called viral."""

    def __init__(self, model_dir: str, typer: Typer | None, index, protein=None) -> None:
        """`typer` places the reads no worker typed (None where the model folder has no index)."""
        self.model_dir, self.typer = model_dir, typer
        self.index, self.protein = index, protein  # to name unplaced reads' virus by their seeds
        self.placed: list[PlacedReads] = []  # each batch's placed reads, in input order
        self.unplaced = 0
        self.named: dict[str, int] = {}  # virus -> unplaced reads named by their seeds
        self.host_bases = 0
        self.reads = 0  # reads classified (an RNA library's reads per million)

    def add(self, batch: list, lengths, viral, typed: TypedReads | dict[int, ReadType] | None = None) -> list[str]:
        """The reference column of a batch of n records, given their lengths (int64 (n,)), its reads
        called viral (bool (n,)) and the typing of some of its reads (by index in the batch) done
        beforehand."""

        labels = ["NA"] * len(batch)
        self.reads += len(batch)
        self.host_bases += int(lengths[~viral].sum())
        called = np.flatnonzero(viral)
        if self.typer is None or not called.size:
            return labels
        if not isinstance(typed, TypedReads):
            typed = TypedReads.of(dict(typed or {}), self.typer.names())
        done = np.isin(called, typed.read)
        if not done.all():  # the reads the model decided: typed here
            todo = called[~done]
            typed = TypedReads.merge([typed, type_batch(self.typer, self.index, self.protein,
                                                        [batch[i][1] for i in todo.tolist()], todo)])
        keep = np.isin(typed.read, called)  # (a worker types the reads its evidence calls; the call is the job's)
        kept = np.flatnonzero(keep)
        # the labels put in place through an object array, not read by read in Python: nearly every
        # read of an all-viral batch has one (0.02 s of a run of 108,181 reads, on the job's process)
        column = np.array(labels, dtype=object)
        label = np.empty(len(typed.label), dtype=object)
        label[:] = typed.label
        column[typed.read[kept]] = label[kept]
        self.placed.append(typed.hits.take(np.flatnonzero(keep[typed.placed]))
                           if not keep.all() else typed.hits)
        self.unplaced += int((~typed.placed[kept]).sum())
        for j in np.flatnonzero(keep & ~typed.placed).tolist():  # the unplaced reads the seeds name a virus
            named = typed.named[j]
            if named is not None:
                self.named[named] = self.named.get(named, 0) + 1
        return column.tolist()

    def typing(self, spec: dict, as_text: bool = True) -> dict:
        """The sample's typing (typing_part) with the report's settings `spec` (sample_spec); its
        placed reads as text (a chunk's summary), or as they are (`as_text` False: a report built
        at once)."""
        refs = {}
        placed = PlacedReads.concat(self.placed, self.typer.names()) if self.placed else PlacedReads.empty()
        # the batches' matches kept as the one copy: their parts' 15 MB (108,181 all-HPV reads) then
        # serve the report's arrays, where the report faulted in some 8,000 new pages, on the job's
        # process alone after every batch is in
        self.placed = [placed] if len(placed) else []
        if len(placed):
            panel = self.typer.panel
            for name in sorted({placed.names[r] for r in placed.used().tolist()}):
                n = panel.refs[name].naming
                refs[name] = (n.virus, n.display, panel.refs[name].length)
        taxids = type_taxids(self.model_dir)
        return typing_part(spec, placed, refs, self.unplaced, self.named, self.host_bases,
                           {d: taxids[d] for _, d, _ in refs.values() if d in taxids}, self.reads, as_text)
