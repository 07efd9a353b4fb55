"""The per-sample viral report: per virus and type, reads, coverage, depth, copies per human
genome and a status (classify-reads --report, and `viral_report` in its summary).

Copies per human haploid genome = the type's mean depth / the host's depth, where the host's
depth is the host's bases over the host genome size (default GRCh38's 3.1e9). The host's bases are
those of the reads not called viral, plus, with --unmapped-only, those of the mapped reads it
leaves out (from the BAM index: genointerp.viral.report.host_depth), or as given by --host-bases. That
assumes whole-genome sequencing: the host's reads cover its genome evenly. With targeted or RNA
sequencing, or a host sample of one chromosome, the copies are not copies per genome (give
--host-genome-size the size of what was sequenced).

Flags, per row (`flags`, ',' joined; '.' for none):
- low_host_depth: host depth under MIN_HOST_DEPTH (0.01x: host bases under 1 % of the host genome,
  31 Mb of GRCh38). Whole-genome libraries, even shallow ones, lie far above it; below it the
  input is a subsample, a targeted or RNA library, or reads already stripped of the host (a FASTQ
  of unmapped reads: give --host-bases), and copies per genome mean little. The copies are still
  printed (NA where the host depth is 0).

- rna_library (every row of a `--library rna` sample): an RNA-seq library's reads measure
  expression, not copies: copies per genome are left empty (NA) and each row has its reads per
  million reads of the sample (`reads_per_million`, beside `reads`; the sample's reads: those
  classified and those --unmapped-only left out), as summary.json's `viral_reads_per_million`
  for all reads called viral.

Status, per type (thresholds set on HPV-negative samples, benchmarks/viral_report.py):
- detected: at least MIN_READS EM-assigned reads, MIN_UNIQUE of them matching no other type, and
  MIN_COVERED bases of its genome covered; and not every read of it also matches a type detected
  before it (by reads): those are the detected type's reads, not a second infection (the row
  says which in `shared_with`, and is not_detected);
- low_evidence: at least LOW_READS EM-assigned reads, short of the above;
- not_detected: fewer.
Types with under half a read are left out.

Reads called viral that no reference places but whose seeds name one virus
(genointerp.viral.typing.naming) are counted per virus: one row per such virus, after the types, typed
VIRUS (unplaced) with those reads (all unique), no coverage, depth or copies (NA: nothing places
them on a genome), and status low_evidence from LOW_READS reads, never detected (which needs
covered bases); summary.json's `viral_reads_unplaced_by_virus` holds the same counts, and the
kraken report puts them at the virus's own node.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from genointerp.errors import InputError
from genointerp.viral.panel import VIRUS_TAXA
from genointerp.viral.typing.naming import virus_label
from genointerp.viral.typing.typer import EM_ITERATIONS, ERROR_RATE, MARGIN, TypeRow, run_em, type_rows
from genointerp.viral.report.typing_data import placed_reads, references

GRCH38_SIZE = 3.1e9
MIN_READS = 10
MIN_UNIQUE = 3
MIN_COVERED = 300
LOW_READS = 3
MIN_LISTED = 0.5
MIN_HOST_DEPTH = 0.01
ASSUMPTION = ("copies per human haploid genome = viral mean depth / host depth; host depth = host bases (of the reads "
              "not called viral, and of the mapped reads --unmapped-only leaves out, or --host-bases) / host genome "
              "size; assumes whole-genome sequencing")
STATUSES = ("detected", "low_evidence", "not_detected")


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
    host_depth: float
    flags: tuple[str, ...]  # see the module's docstring
    reads_per_million: float | None = None  # an RNA library's (None: a DNA library's, which has copies)

    def as_dict(self) -> dict:
        rpm = {} if self.reads_per_million is None else {"reads_per_million": round(self.reads_per_million, 4)}
        return {"virus": self.virus, "type": self.type, "reads": round(self.reads, 2), **rpm,
                "unique_reads": self.unique_reads,
                "genome_fraction": None if self.genome_fraction is None else round(self.genome_fraction, 4),
                "mean_depth": None if self.mean_depth is None else round(self.mean_depth, 4),
                "copies_per_genome": None if self.copies_per_genome is None else round(self.copies_per_genome, 4),
                "status": self.status, "shared_with": self.shared_with or None, "reference": self.reference or None,
                "flags": list(self.flags)}


def load_flags(host_depth: float) -> tuple[str, ...]:
    return ("low_host_depth",) if host_depth < MIN_HOST_DEPTH else ()


def build_rows(sample: str, rows: list[TypeRow], host_depth: float) -> list[ReportRow]:
    detected: dict[str, int] = {}  # type -> its place among those detected so far
    out = []
    for r in rows:  # by EM reads, most first
        if r.reads < MIN_LISTED:
            continue
        shadow = _shadowing(r, detected)
        if r.reads >= MIN_READS and r.unique_reads >= MIN_UNIQUE and r.covered_bases >= MIN_COVERED and not shadow:
            status = "detected"
            detected[r.type] = len(detected)
        elif shadow:
            status = "not_detected"
        else:
            status = "low_evidence" if r.reads >= LOW_READS else "not_detected"
        copies = r.mean_depth / host_depth if host_depth > 0 else None
        out.append(ReportRow(sample, r.virus, r.type, r.reads, r.unique_reads, r.covered_bases / r.genome_length,
                             r.mean_depth, copies, status, ",".join(shadow), r.lead, r.genome_length, host_depth,
                             load_flags(host_depth)))
    return out


def _shadowing(row: TypeRow, detected: dict[str, int]) -> list[str]:
    """The types detected before `row` (`detected`: each one's place among them) that every read
    of it also matches, in the order they were detected. From the row's shared reads, where each
    row had looked up every type detected before it: a panel's 387 rows took 2.7 ms so, on the
    job's process after every batch is in."""
    if row.matching_reads <= 0:  # (no read of its own: every type detected shadows it)
        return list(detected)
    return sorted((d for d, n in row.reads_shared.items() if d in detected and n >= row.matching_reads),
                  key=detected.__getitem__)


def virus_rows(sample: str, named: dict[str, int], host_depth: float) -> list[ReportRow]:
    """One row per virus of the reads no reference places but their seeds name (see the module's
    docstring), most reads first."""

    return [ReportRow(sample, v, virus_label(v), float(n), n, None, None, None,
                      "low_evidence" if n >= LOW_READS else "not_detected", "", "", 0, host_depth, ())
            for v, n in sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))]


def thresholds() -> dict:
    return {"detected": {"min_reads": MIN_READS, "min_unique_reads": MIN_UNIQUE, "min_covered_bases": MIN_COVERED},
            "low_evidence": {"min_reads": LOW_READS}, "listed": {"min_reads": MIN_LISTED},
            "placement": {"margin_edits": MARGIN, "error_rate": ERROR_RATE, "em_iterations": EM_ITERATIONS}}


def host_bases_of(typing: dict) -> int:
    """The host's bases of a sample's typing (genointerp.viral.report.typing_data.typing_part)."""
    host = typing["host_bases"]
    if host["given"] is not None:
        return host["given"]
    if host["mapped"] is None:
        raise InputError(f"sample {typing['sample']}: its host bases are unknown (--unmapped-only of a file without "
                         "read counts in an index): run classify-reads with --host-bases")
    return host["classified"] + host["mapped"]


def sample_reads(typing: dict) -> int:
    """An RNA sample's reads (the denominator of reads per million): those classified and those
    --unmapped-only left out."""
    return int(typing.get("reads_classified", 0)) + int(typing["host_bases"].get("mapped_reads_left_out") or 0)


def rna_rows(rows: list[ReportRow], reads: int) -> list[ReportRow]:
    """An RNA library's rows: reads per million of the sample's `reads`, no copies, flag rna_library."""
    scale = 1e6 / reads if reads else 0.0
    return [replace(r, copies_per_genome=None, flags=("rna_library",), reads_per_million=r.reads * scale) for r in rows]


def report_summary(typing: dict, rows: list[ReportRow], iterations: int) -> dict:
    host_bases = host_bases_of(typing)
    host = typing["host_bases"]
    top = next((r for r in rows if r.status == "detected"), None)
    rna = {}
    if typing.get("library") == "rna":
        reads = sample_reads(typing)
        called = len(typing["placed"]) + typing["unplaced"]
        rna = {"library": "rna", "reads": reads, "viral_reads_per_million": round(called * 1e6 / reads, 4) if reads else 0.0}
    return {
        "sample": typing["sample"],
        "host_bases": host_bases,
        "host_bases_from": {"given": host["given"], "reads_not_called_viral": host["classified"],
                            "mapped_reads": host["mapped"], "mapped_records": host["mapped_records"],
                            "mapped_records_read": host["mapped_records_read"]},
        # reads of the sample not classified because --unmapped-only left them out (mapped host reads)
        "reads_left_out": host.get("mapped_reads_left_out") or 0,
        "host_genome_size": typing["host_genome_size"],
        "host_depth": round(host_bases / typing["host_genome_size"], 6),
        "flags": ["rna_library"] if rna else list(load_flags(host_bases / typing["host_genome_size"])),
        **rna,
        "assumption": ASSUMPTION,
        "viral_reads_placed": len(typing["placed"]),
        "viral_reads_unplaced": typing["unplaced"],
        "viral_reads_unplaced_by_virus": typing["named"],
        "em_iterations": iterations,
        "top_type": top.type if top else None,
        "detected": [r.type for r in rows if r.status == "detected"],
        "thresholds": thresholds(),
        "types": [r.as_dict() for r in rows],
    }


def summary_line(vr: dict) -> str:
    """The one line classify-reads and merge-calls log for a sample's report (`vr`, its summary):
    the types detected with their reads and copies (an RNA library's: reads per million); where none is, what the reads called viral
    came to (the rows short of detection, or that no reference places them), so that the line says
    "no virus detected" only where no read was called viral; and the flags of the host's depth."""
    rna = vr.get("library") == "rna"  # expression, not copies
    found = ", ".join(f"{t['type']} ({t['reads']:g} reads, " + (f"{t['reads_per_million']} reads per million)" if rna
                                                                 else f"{t['copies_per_genome']} copies/genome)")
                      for t in vr["types"] if t["status"] == "detected")
    called = vr["viral_reads_placed"] + vr["viral_reads_unplaced"]
    if not found and called:
        rows = ", ".join(f"{t['type']} ({t['reads']:g} reads, {t['status']})" for t in vr["types"])
        found = f"no type detected; {called:,} reads called viral" + (f": {rows}" if rows else ", placed on no reference")
    if rna:
        flags = "; rna_library: no copies per genome"
    else:
        flags = f"; host depth {vr['host_depth']:g}x: {', '.join(vr['flags'])}" if vr["flags"] else ""
    return f"sample {vr['sample']}: {found or 'no virus detected'}{flags}"


class _Name(NamedTuple):
    virus: str
    display: str


def report_from_typing(typing: dict, threads: int = 1) -> tuple[dict, list[ReportRow]]:
    """The report of a sample's typing (genointerp.viral.report.typing_data.typing_part): its summary
    (the summary JSON's `viral_report`) and its rows, types by EM reads then the viruses of unplaced
    reads. The EM runs on up to `threads` threads (the same numbers for any)."""
    placed = placed_reads(typing)
    em = run_em(placed, threads=threads)
    rows: list[TypeRow] = []
    if placed:
        refs = references(typing)
        rows = type_rows(placed, em, {r: _Name(refs[r][0], refs[r][1]) for r in em.refs},
                         {r: refs[r][2] for r in em.refs})
    host_depth = host_bases_of(typing) / typing["host_genome_size"]
    by_type = build_rows(typing["sample"], rows, host_depth)
    report_rows = by_type + virus_rows(typing["sample"], typing["named"], host_depth)
    if typing.get("library") == "rna":
        report_rows = rna_rows(report_rows, sample_reads(typing))
    summary = report_summary(typing, report_rows, em.iterations)
    summary["kraken"] = kraken_rows(by_type, len(placed), typing["taxids"], typing["named"])
    return summary, report_rows


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
    most reads first. A type with no NCBI taxon of its own in `taxids` (HBV's genotypes, many HPV
    types) gets no row: its reads stay at its virus's node, as kraken2 leaves a read at the lowest
    taxon it can name, rather than a row that repeats the virus's taxid."""
    counts = apportion([r.reads for r in rows], placed)
    viruses: dict[str, dict] = {}

    def entry(virus: str) -> dict:
        taxid, name = VIRUS_TAXA.get(virus, (0, virus))
        return viruses.setdefault(virus, {"virus": virus, "virus_taxid": taxid, "virus_name": name, "reads": 0,
                                          "types": []})

    for r, n in zip(rows, counts):
        v = entry(r.virus)
        if r.type in taxids and taxids[r.type] != v["virus_taxid"]:
            v["types"].append({"type": r.type, "taxid": taxids[r.type], "reads": n})
        else:
            v["reads"] += n
    for virus, n in (named or {}).items():
        entry(virus)["reads"] += n
    out = sorted(viruses.values(), key=lambda v: (-v["reads"] - sum(t["reads"] for t in v["types"]), v["virus"]))
    for v in out:
        v["types"].sort(key=lambda t: (-t["reads"], t["type"]))
    return out
