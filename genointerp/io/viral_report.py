"""Per-sample viral report formats: the report TSV (classify-reads and merge-calls --report), a
kraken2-style report (--kraken-report: kraken2's six columns, for Pavian, Krona and scripts that
read kraken2 reports) and two MultiQC custom-content files, sections of a `genointerp` module of the
report: --multiqc, a general-statistics row (viral reads, top type, its copies per genome, host
depth), and --multiqc-types, a table of every listed type (virus, type, reads, copies, status,
flags), one row per sample and type.

MultiQC's kraken module claims any file in kraken2's report format by its content, whatever its
name, and keeps one report per sample name: the shipped MultiQC config
(genointerp/resources/multiqc_config.yaml) has MultiQC pass over files named *.genointerp.kreport,
the name the docs and workflows give genointerp's, so that a real kraken2 report of the same
sample keeps its own section."""

from __future__ import annotations

import os
from typing import BinaryIO

from genointerp.errors import UsageError

REPORT_HEADER = ("sample\tvirus\ttype\treads\tunique_reads\tgenome_fraction\tmean_depth\tcopies_per_genome\tstatus\t"
                 "shared_with\treference\thost_depth\tflags\n")
MULTIQC_SUFFIX = "_mqc.tsv"  # custom content MultiQC finds by name


def sample_name(inputs: list[str]) -> str:
    """A sample name from the first input's file name: tumor.fq.gz -> tumor, s1_R1.fastq -> s1."""
    name = os.path.basename(inputs[0]) if inputs and inputs[0] != "-" else "stdin"
    for ext in (".gz", ".bgz", ".fastq", ".fq", ".fasta", ".fa", ".fna", ".bam", ".cram", ".sam"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    for mate in ("_R1", "_1", ".R1"):
        if name.endswith(mate) and len(name) > len(mate):
            name = name[: -len(mate)]
    return "".join("_" if c in _NOT_IN_NAMES else c for c in name) or "sample"


_NOT_IN_NAMES = "\t\n\r"  # a sample name is a field of the TSV reports


def check_sample_name(sample: str | None) -> None:
    """UsageError for an empty --sample (genointerp.job.check_values refuses tabs and line ends in
    every option)."""
    if sample is not None and not sample.strip():
        raise UsageError("--sample: give the sample a name (it keys the reports' rows), not an empty one")


def _num(x: float | None, digits: int) -> str:
    return "NA" if x is None else f"{x:.{digits}f}"


def write_report_tsv(out: BinaryIO, rows, rna: bool = False) -> None:
    """One row per virus type (genointerp.viral.report.sample_report.ReportRow), most reads first;
    an RNA library's (`rna`) with reads_per_million after reads."""
    lines = [REPORT_HEADER.replace("\treads\t", "\treads\treads_per_million\t", 1) if rna else REPORT_HEADER]
    for r in rows:
        rpm = f"{_num(r.reads_per_million, 4)}\t" if rna else ""
        lines.append(f"{r.sample}\t{r.virus}\t{r.type}\t{r.reads:.2f}\t{rpm}{r.unique_reads}\t{_num(r.genome_fraction, 4)}\t"
                     f"{_num(r.mean_depth, 4)}\t{_num(r.copies_per_genome, 4)}\t{r.status}\t{r.shared_with or '.'}\t"
                     f"{r.reference or 'NA'}\t{r.host_depth:.6f}\t{','.join(r.flags) or '.'}\n")
    out.write("".join(lines).encode())


def write_kraken_report(out: BinaryIO, reads_total: int, reads_viral: int, viruses: list[dict]) -> None:
    """kraken2's report: percent of reads in the clade, reads in the clade, reads assigned to the
    taxon itself, rank code, NCBI taxid, name indented two spaces per level. Reads not called viral
    are unclassified; viral reads that no reference placed and no virus's seeds name stay at
    Viruses; each virus (rank S) holds its types (rank S1) and, assigned to itself, the reads
    named at the virus level only. Taxa without reads are left out, as kraken2 does without
    --report-zero-counts."""
    def line(n_clade: int, n_direct: int, rank: str, taxid: int, name: str, depth: int) -> str:
        pct = 100 * n_clade / reads_total if reads_total else 0.0
        if not n_clade:
            return ""
        return f"{pct:6.2f}\t{n_clade}\t{n_direct}\t{rank}\t{taxid}\t{'  ' * depth}{name}\n"

    named = sum(t["reads"] for v in viruses for t in v["types"]) + sum(v.get("reads", 0) for v in viruses)
    lines = [line(reads_total - reads_viral, reads_total - reads_viral, "U", 0, "unclassified", 0),
             line(reads_viral, 0, "R", 1, "root", 0),
             line(reads_viral, reads_viral - named, "D", 10239, "Viruses", 1)]
    for v in viruses:
        n = sum(t["reads"] for t in v["types"]) + v.get("reads", 0)
        lines.append(line(n, v.get("reads", 0), "S", v["virus_taxid"], v["virus_name"], 2))
        lines += [line(t["reads"], t["reads"], "S1", t["taxid"], t["type"], 3) for t in v["types"]]
    out.write("".join(lines).encode())


# Both files are sections of one module, `genointerp`, in the MultiQC report.
_PARENT = """# parent_id: 'genointerp'
# parent_name: 'genointerp'
# parent_description: 'Viral reads, types and loads per sample, from genointerp classify-reads (or merge-calls) and
#     find-integrations. Copies per genome = viral depth / host depth, which assumes whole-genome sequencing.'
"""

MULTIQC_HEADER = """# id: 'genointerp_viral'
# section_name: 'Viral load (genointerp)'
# description: 'Reads called viral, the top detected type, its copies per human haploid genome and the host depth
#     they stand on (genointerp classify-reads; assumes whole-genome sequencing)'
# plot_type: 'generalstats'
# headers:
#     viral_reads:
#         title: 'Viral reads'
#         description: 'Reads genointerp called viral'
#         format: '{:,.0f}'
#         scale: 'Reds'
#     top_type:
#         title: 'Top type'
#         description: 'The detected viral type with the most reads (none: no virus detected)'
#     copies_per_genome:
#         title: 'Copies/genome'
#         description: 'Copies of the top type per human haploid genome'
#         format: '{:,.2f}'
#         scale: 'Purples'
#     host_depth:
#         title: 'Host depth'
#         description: 'Host bases / host genome size: below 0.01x the copies are flagged low_host_depth'
#         format: '{:,.4f}'
#         suffix: 'x'
#         hidden: true
"""

TYPES_HEADER = _PARENT + """# id: 'genointerp_viral_types'
# section_name: 'Viral types'
# description: 'Every viral type genointerp lists per sample: reads shared among types by EM, reads matching no
#     other type, copies per human haploid genome, status (detected, low_evidence, not_detected) and flags
#     (low_host_depth: host depth under 0.01x, the copies mean little).'
# plot_type: 'table'
# pconfig:
#     id: 'genointerp_viral_types_table'
#     title: 'genointerp: viral types'
#     col1_header: 'Sample: type'
#     sort_rows: false
# headers:
#     sample:
#         title: 'Sample'
#     virus:
#         title: 'Virus'
#     type:
#         title: 'Type'
#     reads:
#         title: 'Reads'
#         description: 'Reads of the type (EM-assigned)'
#         format: '{:,.1f}'
#     unique_reads:
#         title: 'Unique reads'
#         description: 'Reads matching no other type'
#         format: '{:,.0f}'
#     genome_fraction:
#         title: 'Genome covered'
#         description: 'Share of the type genome covered by its reads'
#         format: '{:,.3f}'
#     copies_per_genome:
#         title: 'Copies/genome'
#         description: 'Copies per human haploid genome'
#         format: '{:,.3f}'
#     status:
#         title: 'Status'
#     flags:
#         title: 'Flags'
"""


def _copies(t: dict) -> str:
    return "NA" if t["copies_per_genome"] is None else f"{t['copies_per_genome']:.4f}"


def _row_key(text: str) -> str:
    """A custom-content cell (a row's key, a sample column) as MultiQC (1.35) reads it back as `text`: it takes a line
    that starts with '#' for a header comment (a sample '#7' would break the whole file, and with
    it the report of every sample), and it strips one pair of enclosing quotes from a cell; so such
    a key is wrapped in double quotes, which MultiQC removes."""
    quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"
    return f'"{text}"' if text.startswith("#") or quoted else text


def write_multiqc(out: BinaryIO, summary: dict, reads_viral: int) -> None:
    """MultiQC custom content (a `*_mqc.tsv` file): one general-statistics row for the sample."""
    top = next((t for t in summary["types"] if t["status"] == "detected"), None)
    row = (f"{_row_key(summary['sample'])}\t{reads_viral}\t{top['type'] if top else 'none'}\t{_copies(top) if top else 'NA'}\t"
           f"{summary['host_depth']:.6f}\n")
    out.write((MULTIQC_HEADER + "Sample\tviral_reads\ttop_type\tcopies_per_genome\thost_depth\n" + row).encode())


def write_multiqc_types(out: BinaryIO, summary: dict) -> None:
    """MultiQC custom content (a `*_mqc.tsv` file): the sample's rows of the types table, keyed
    'SAMPLE: TYPE' (MultiQC joins the files of a cohort into one table); a sample with no type
    listed gets one row, type 'none'."""
    lines = [TYPES_HEADER, "Row\tsample\tvirus\ttype\treads\tunique_reads\tgenome_fraction\tcopies_per_genome\t"
                           "status\tflags\n"]
    sample = summary["sample"]
    for t in summary["types"]:
        fraction = "NA" if t["genome_fraction"] is None else f"{t['genome_fraction']:.4f}"
        lines.append(f"{_row_key(f'{sample}: ' + t['type'])}\t{_row_key(sample)}\t{t['virus']}\t{t['type']}\t{t['reads']:.2f}\t"
                     f"{t['unique_reads']}\t{fraction}\t{_copies(t)}\t{t['status']}\t{','.join(t['flags']) or '.'}\n")
    if not summary["types"]:
        lines.append(f"{_row_key(f'{sample}: none')}\t{_row_key(sample)}\tnone\tnone\t0.00\t0\tNA\tNA\tnot_detected\t"
                     f"{','.join(summary['flags']) or '.'}\n")
    out.write("".join(lines).encode())


def write_sample_report(outputs: dict, summary: dict, rows, reads_total: int, reads_viral: int) -> None:
    """Write the report in each format of `outputs` (format -> open binary stream or None): tsv,
    kraken, multiqc, multiqc_types."""
    if outputs.get("tsv") is not None:
        write_report_tsv(outputs["tsv"], rows, summary.get("library") == "rna")
    if outputs.get("kraken") is not None:  # the reads --unmapped-only left out are the sample's too: unclassified
        write_kraken_report(outputs["kraken"], reads_total + summary.get("reads_left_out", 0), reads_viral,
                            summary["kraken"])
    if outputs.get("multiqc") is not None:
        write_multiqc(outputs["multiqc"], summary, reads_viral)
    if outputs.get("multiqc_types") is not None:
        write_multiqc_types(outputs["multiqc_types"], summary)


def report_files(report: str | None, kraken: str | None, multiqc: str | None, multiqc_types: str | None,
                 multiqc_integrations: str | None = None) -> list[tuple[str, str, str]]:
    """(option, format, path) of the per-sample report files a job is asked for (find-integrations'
    --multiqc is multiqc_integrations). UsageError for a MultiQC file that MultiQC would pass over
    (its name must end in _mqc.tsv)."""
    files = [(option, fmt, path) for option, fmt, path in (
        ("--report", "tsv", report), ("--kraken-report", "kraken", kraken), ("--multiqc", "multiqc", multiqc),
        ("--multiqc-types", "multiqc_types", multiqc_types), ("--multiqc", "multiqc_integrations", multiqc_integrations))
        if path]
    for option, fmt, path in files:
        if fmt.startswith("multiqc") and not os.path.basename(path).endswith(MULTIQC_SUFFIX):
            raise UsageError(f"{option} {path}: MultiQC reads custom content only from files named *{MULTIQC_SUFFIX}; "
                             f"name it e.g. SAMPLE.genointerp{fmt.removeprefix('multiqc')}{MULTIQC_SUFFIX}")
    return files


INTEGRATIONS_HEADER = _PARENT + """# id: 'genointerp_integrations'
# section_name: 'Viral integrations'
# description: 'Host-virus junctions per sample (genointerp find-integrations): where in the host, which virus and
#     type, the reads behind each (split reads give the base: precise; read pairs alone: imprecise) and the host
#     genes at or nearest to it. A sample without junctions has one row, type none.'
# plot_type: 'table'
# pconfig:
#     id: 'genointerp_integrations_table'
#     title: 'genointerp: viral integrations'
#     col1_header: 'Sample: junction'
# headers:
#     sample:
#         title: 'Sample'
#     virus:
#         title: 'Virus'
#     type:
#         title: 'Type'
#     host_position:
#         title: 'Host position'
#         description: 'Host contig:position (1-based) of the junction'
#     split_reads:
#         title: 'Split reads'
#         format: '{:,.0f}'
#     spanning_pairs:
#         title: 'Spanning pairs'
#         format: '{:,.0f}'
#     nearest_genes:
#         title: 'Genes'
#         description: 'Host genes overlapping the junction, else the nearest on each side'
#     status:
#         title: 'Status'
"""


def write_multiqc_integrations(out: BinaryIO, sample: str, junctions: list[dict]) -> None:
    """MultiQC custom content (a `*_mqc.tsv` file): a sample's rows of the integrations table,
    keyed 'SAMPLE: JUNCTION_ID'. `junctions`: find-integrations' rows as dicts of its TSV columns."""
    lines = [INTEGRATIONS_HEADER,
             "Row\tsample\tvirus\ttype\thost_position\tsplit_reads\tspanning_pairs\tnearest_genes\tstatus\n"]
    for j in junctions:
        lines.append(f"{_row_key(f'{sample}: ' + str(j['junction_id']))}\t{_row_key(sample)}\t{j['virus']}\t{j['type']}\t{j['host_chrom']}:"
                     f"{j['host_pos']}\t{j['split_reads']}\t{j['spanning_pairs']}\t{j['nearest_genes']}\t{j['status']}\n")
    if not junctions:
        lines.append(f"{_row_key(f'{sample}: none')}\t{_row_key(sample)}\tnone\tnone\tNA\t0\t0\t.\tnone\n")
    out.write("".join(lines).encode())
