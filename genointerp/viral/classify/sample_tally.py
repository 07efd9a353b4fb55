"""classify-reads' side of the per-sample viral report: each viral read's type (the calls TSV's
`reference` column) and the sample's typing (genointerp.viral.report.typing_data), the data the report is
built from (genointerp.viral.report.sample_report.report_from_typing)."""

from __future__ import annotations

import numpy as np

from genointerp.viral.panel import type_taxids
from genointerp.viral.report.typing_data import typing_part
from genointerp.viral.typing.typer import ReadType, Typer, TypeHits, type_reads


class SampleTally:
    """classify-reads' side of the report: the `reference` column of each batch's viral reads
    (typed here, or beforehand by the batch's worker) and what the report is built from: each
    placed read's matches, the unplaced reads, the bases of the reads not called viral."""

    def __init__(self, model_dir: str, typer: Typer | None, index, protein=None) -> None:
        """`typer` places the reads no worker typed (None where the model folder has no index)."""
        self.model_dir, self.typer = model_dir, typer
        self.index, self.protein = index, protein  # to name unplaced reads' virus by their seeds
        self.placed: list[TypeHits] = []
        self.unplaced = 0
        self.named: dict[str, int] = {}  # virus -> unplaced reads named by their seeds
        self.host_bases = 0
        self.reads = 0  # reads classified (an RNA library's reads per million)

    def add(self, batch: list, lengths, viral, typed: dict[int, ReadType] | None = None) -> list[str]:
        """The reference column of a batch of n records, given their lengths (int64 (n,)), its reads
        called viral (bool (n,)) and the typing of some of its reads (by index in the batch) done
        beforehand."""

        labels = ["NA"] * len(batch)
        self.reads += len(batch)
        self.host_bases += int(lengths[~viral].sum())
        if self.typer is None:
            return labels
        typed = dict(typed or {})
        called = np.flatnonzero(viral).tolist()
        todo = [i for i in called if i not in typed]
        typed.update(zip(todo, type_reads(self.typer, self.index, self.protein, [batch[i][1] for i in todo])))
        for i in called:
            t = typed[i]
            labels[i] = t.label
            if t.placed is not None:
                self.placed.append(t.placed)
                continue
            self.unplaced += 1
            if t.named is not None:
                self.named[t.named] = self.named.get(t.named, 0) + 1
        return labels

    def typing(self, spec: dict, as_text: bool = True) -> dict:
        """The sample's typing (typing_part) with the report's settings `spec` (sample_spec); its
        placed reads as text (a chunk's summary), or as they are (`as_text` False: a report built
        at once)."""
        refs = {}
        if self.placed:
            panel = self.typer.panel
            for name in sorted({h.ref for p in self.placed for h in p.hits}):
                n = panel.refs[name].naming
                refs[name] = (n.virus, n.display, panel.refs[name].length)
        taxids = type_taxids(self.model_dir)
        return typing_part(spec, self.placed, refs, self.unplaced, self.named, self.host_bases,
                           {d: taxids[d] for _, d, _ in refs.values() if d in taxids}, self.reads, as_text)
