"""The per-sample viral report: per virus and type, reads, coverage, depth, copies per human
genome and a status (classify-reads --report, and `viral_report` in its summary).

Copies per human haploid genome = the type's mean depth / the host's depth, where the host's
depth is the bases of the reads not called viral over the host genome size (default GRCh38's
3.1e9). That assumes whole-genome sequencing: the host's reads cover its genome evenly. With
targeted or RNA sequencing, or a host sample of one chromosome, the copies are not copies per
genome (give --host-genome-size the size of what was sequenced).

Status, per type (thresholds set on HPV-negative samples, benchmarks/viral_report.py):
- detected: at least MIN_READS EM-assigned reads, MIN_UNIQUE of them matching no other type, and
  MIN_COVERED bases of its genome covered; and not every read of it also matches a type detected
  before it (by reads): those are the detected type's reads, not a second infection (the row
  says which in `shared_with`, and is not_detected);
- low_evidence: at least LOW_READS EM-assigned reads, short of the above;
- not_detected: fewer.
Types with under half a read are left out.

Reads called viral that no reference places but whose seeds name one virus
(genointerp.viral.naming) are counted per virus: one row per such virus, after the types, typed
VIRUS (unplaced) with those reads (all unique), no coverage, depth or copies (NA: nothing places
them on a genome), and status low_evidence from LOW_READS reads, never detected (which needs
covered bases); summary.json's `viral_reads_unplaced_by_virus` holds the same counts, and the
kraken report puts them at the virus's own node.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from genointerp.viral.naming import name_viruses, virus_label
from genointerp.viral.typing import EM_ITERATIONS, ERROR_RATE, MARGIN, Typer, TypeHits, TypeRow, run_em, type_rows

GRCH38_SIZE = 3.1e9
MIN_READS = 10
MIN_UNIQUE = 3
MIN_COVERED = 300
LOW_READS = 3
MIN_LISTED = 0.5
ASSUMPTION = ("copies per human haploid genome = viral mean depth / host depth; host depth = bases of the reads not "
              "called viral / host genome size; assumes whole-genome sequencing")
STATUSES = ("detected", "low_evidence", "not_detected")
# kraken-style report: each virus's NCBI taxon; HPV types' taxids from the model folder's TAXIDS_FILE
TAXIDS_FILE = "taxids.tsv"
VIRUS_TAXA = {"HPV": (10566, "Human papillomavirus"), "HBV": (10407, "Hepatitis B virus"),
              "HCV": (11103, "Hepatitis C virus"), "EBV": (10376, "Human gammaherpesvirus 4"),
              "KSHV": (37296, "Human gammaherpesvirus 8"), "HTLV-1": (11908, "Human T-lymphotropic virus 1"),
              "MCPyV": (493803, "Merkel cell polyomavirus"), "HIV-1": (11676, "Human immunodeficiency virus 1")}


@dataclass
class ReportRow:
    sample: str
    virus: str
    type: str
    reads: float
    unique_reads: int
    genome_fraction: float | None  # None: a virus-level row (reads no reference places)
    mean_depth: float | None
    copies_per_genome: float | None
    status: str
    shared_with: str  # detected types every read of this one also matches ('' when none)
    reference: str  # the lead genome; '' for a virus-level row
    genome_length: int

    def as_dict(self) -> dict:
        return {"virus": self.virus, "type": self.type, "reads": round(self.reads, 2), "unique_reads": self.unique_reads,
                "genome_fraction": None if self.genome_fraction is None else round(self.genome_fraction, 4),
                "mean_depth": None if self.mean_depth is None else round(self.mean_depth, 4),
                "copies_per_genome": None if self.copies_per_genome is None else round(self.copies_per_genome, 4),
                "status": self.status, "shared_with": self.shared_with or None, "reference": self.reference or None}


def sample_name(inputs: list[str]) -> str:
    """A sample name from the first input's file name: tumor.fq.gz -> tumor, s1_R1.fastq -> s1."""
    name = os.path.basename(inputs[0]) if inputs and inputs[0] != "-" else "stdin"
    for ext in (".gz", ".bgz", ".fastq", ".fq", ".fasta", ".fa", ".fna", ".bam", ".cram", ".sam"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    for mate in ("_R1", "_1", ".R1"):
        if name.endswith(mate) and len(name) > len(mate):
            name = name[: -len(mate)]
    return name or "sample"


def build_rows(sample: str, rows: list[TypeRow], host_depth: float) -> list[ReportRow]:
    detected: list[str] = []
    out = []
    for r in rows:  # by EM reads, most first
        if r.reads < MIN_LISTED:
            continue
        shadow = [d for d in detected if r.reads_shared.get(d, 0) >= r.matching_reads]
        if r.reads >= MIN_READS and r.unique_reads >= MIN_UNIQUE and r.covered_bases >= MIN_COVERED and not shadow:
            status = "detected"
            detected.append(r.type)
        elif shadow:
            status = "not_detected"
        else:
            status = "low_evidence" if r.reads >= LOW_READS else "not_detected"
        copies = r.mean_depth / host_depth if host_depth > 0 else None
        out.append(ReportRow(sample, r.virus, r.type, r.reads, r.unique_reads, r.covered_bases / r.genome_length,
                             r.mean_depth, copies, status, ",".join(shadow), r.lead, r.genome_length))
    return out


def virus_rows(sample: str, named: dict[str, int]) -> list[ReportRow]:
    """One row per virus of the reads no reference places but their seeds name (see the module's
    docstring), most reads first."""

    return [ReportRow(sample, v, virus_label(v), float(n), n, None, None, None,
                      "low_evidence" if n >= LOW_READS else "not_detected", "", "", 0)
            for v, n in sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))]


def thresholds() -> dict:
    return {"detected": {"min_reads": MIN_READS, "min_unique_reads": MIN_UNIQUE, "min_covered_bases": MIN_COVERED},
            "low_evidence": {"min_reads": LOW_READS}, "listed": {"min_reads": MIN_LISTED},
            "placement": {"margin_edits": MARGIN, "error_rate": ERROR_RATE, "em_iterations": EM_ITERATIONS}}


def report_summary(sample: str, rows: list[ReportRow], host_bases: int, host_genome_size: float, placed: int,
                   unplaced: int, iterations: int, named: dict[str, int] | None = None) -> dict:
    host_depth = host_bases / host_genome_size
    top = next((r for r in rows if r.status == "detected"), None)
    return {
        "sample": sample,
        "host_bases": host_bases,
        "host_genome_size": host_genome_size,
        "host_depth": round(host_depth, 6),
        "assumption": ASSUMPTION,
        "viral_reads_placed": placed,
        "viral_reads_unplaced": unplaced,
        "viral_reads_unplaced_by_virus": dict(sorted((named or {}).items())),
        "em_iterations": iterations,
        "top_type": top.type if top else None,
        "detected": [r.type for r in rows if r.status == "detected"],
        "thresholds": thresholds(),
        "types": [r.as_dict() for r in rows],
    }


@dataclass(frozen=True)
class ReadType:
    """A read's typing: its placement (None where no reference places it), its `reference`
    column, and the virus its seeds name where no reference places it (None otherwise, or where
    they name no clear one)."""

    placed: TypeHits | None
    label: str
    named: str | None


def type_reads(typer: Typer, index, protein, seqs: list[str]) -> list[ReadType]:
    """The typing of each read of `seqs`, by its placement on the typer's references, else by
    its seeds (genointerp.viral.naming): each read on its own, so any batch gives the same."""
    placements = [typer.place(seq) for seq in seqs]
    unplaced = [i for i, p in enumerate(placements) if p is None]
    names = dict(zip(unplaced, name_viruses(index, protein, [seqs[i] for i in unplaced])))
    return [ReadType(p, virus_label(names[i]) if names.get(i) else typer.reference_label(p), names.get(i))
            for i, p in enumerate(placements)]


class SampleTally:
    """classify-reads' side of the report: the `reference` column of each batch's viral reads
    (typed here, or beforehand by the batch's worker), the host's bases, and at the end the
    reads shared among types by EM."""

    def __init__(self, model_dir: str, index, sample: str, host_genome_size: float, log, protein=None) -> None:

        self.model_dir = model_dir
        self.index, self.protein = index, protein  # to name unplaced reads' virus by their seeds
        self.typer = Typer(model_dir, index, log) if index is not None else None
        self.sample, self.host_genome_size = sample, host_genome_size
        self.placed: list = []
        self.unplaced = 0
        self.named: dict[str, int] = {}  # virus -> unplaced reads named by their seeds
        self.host_bases = 0

    def add(self, batch: list, viral, typed: dict[int, ReadType] | None = None) -> list[str]:
        """The reference column of a batch of records, given its reads called viral (a bool
        array) and the typing of some of its reads (by index in the batch) done beforehand."""

        labels = ["NA"] * len(batch)
        is_viral = viral.tolist()
        self.host_bases += sum(len(rec[1]) for rec, v in zip(batch, is_viral) if not v)
        if self.typer is None:
            return labels
        typed = dict(typed or {})
        todo = [i for i, v in enumerate(is_viral) if v and i not in typed]
        typed.update(zip(todo, type_reads(self.typer, self.index, self.protein, [batch[i][1] for i in todo])))
        for i in (i for i, v in enumerate(is_viral) if v):
            t = typed[i]
            labels[i] = t.label
            if t.placed is not None:
                self.placed.append(t.placed)
                continue
            self.unplaced += 1
            if t.named is not None:
                self.named[t.named] = self.named.get(t.named, 0) + 1
        return labels

    def finish(self) -> tuple[dict, list[ReportRow]]:

        em = run_em(self.placed)
        rows: list[TypeRow] = []
        if self.placed:
            refs = self.typer.panel.refs
            rows = type_rows(self.placed, em, {r: refs[r].naming for r in em.refs}, {r: refs[r].length for r in em.refs})
        report_rows = build_rows(self.sample, rows, self.host_bases / self.host_genome_size)
        named_rows = virus_rows(self.sample, self.named)
        summary = report_summary(self.sample, report_rows + named_rows, self.host_bases, self.host_genome_size,
                                 len(self.placed), self.unplaced, em.iterations, self.named)
        summary["kraken"] = kraken_rows(report_rows, len(self.placed), type_taxids(self.model_dir), self.named)
        report_rows += named_rows
        self.close()
        return summary, report_rows

    def close(self) -> None:
        if self.typer is not None:
            self.typer.close()


def type_taxids(model_dir: str) -> dict[str, int]:
    from pathlib import Path

    path = Path(model_dir) / TAXIDS_FILE
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and not line.startswith("#"):
            out[parts[0]] = int(parts[1])
    return out


def apportion(values: list[float], total: int) -> list[int]:
    """Whole numbers summing to `total` in proportion to values (largest remainders, ties to the
    earlier)."""
    s = sum(values)
    if s <= 0 or total <= 0:
        return [0] * len(values)
    exact = [v * total / s for v in values]
    whole = [int(x) for x in exact]
    order = sorted(range(len(values)), key=lambda i: (-(exact[i] - whole[i]), i))
    for i in order[: total - sum(whole)]:
        whole[i] += 1
    return whole


def kraken_rows(rows: list[ReportRow], placed: int, taxids: dict[str, int],
                named: dict[str, int] | None = None) -> list[dict]:
    """Viruses and their types with whole read counts (EM reads of the type rows `rows` apportioned
    over the placed reads), and the reads named at the virus level only (`named`, virus -> reads):
    [{virus, virus_taxid, virus_name, reads (the virus's own), types: [{type, taxid, reads}]}],
    most reads first."""
    counts = apportion([r.reads for r in rows], placed)
    viruses: dict[str, dict] = {}

    def entry(virus: str) -> dict:
        taxid, name = VIRUS_TAXA.get(virus, (0, virus))
        return viruses.setdefault(virus, {"virus": virus, "virus_taxid": taxid, "virus_name": name, "reads": 0,
                                          "types": []})

    for r, n in zip(rows, counts):
        v = entry(r.virus)
        v["types"].append({"type": r.type, "taxid": taxids.get(r.type, v["virus_taxid"]), "reads": n})
    for virus, n in (named or {}).items():
        entry(virus)["reads"] += n
    out = sorted(viruses.values(), key=lambda v: (-v["reads"] - sum(t["reads"] for t in v["types"]), v["virus"]))
    for v in out:
        v["types"].sort(key=lambda t: (-t["reads"], t["type"]))
    return out
