"""Per-sample viral report formats: the report TSV (classify-reads --report), a kraken2-style
report (--kraken-report: the six columns MultiQC's kraken module and Pavian parse) and a MultiQC
custom-content file (--multiqc: a general-statistics table of viral reads, top type and copies
per genome)."""

from __future__ import annotations

from typing import BinaryIO

REPORT_HEADER = ("sample\tvirus\ttype\treads\tunique_reads\tgenome_fraction\tmean_depth\tcopies_per_genome\tstatus\t"
                 "shared_with\treference\n")


def _num(x: float | None, digits: int) -> str:
    return "NA" if x is None else f"{x:.{digits}f}"


def write_report_tsv(out: BinaryIO, rows) -> None:
    """One row per virus type (genointerp.viral.sample_report.ReportRow), most reads first."""
    lines = [REPORT_HEADER]
    for r in rows:
        lines.append(f"{r.sample}\t{r.virus}\t{r.type}\t{r.reads:.2f}\t{r.unique_reads}\t{_num(r.genome_fraction, 4)}\t"
                     f"{_num(r.mean_depth, 4)}\t{_num(r.copies_per_genome, 4)}\t{r.status}\t{r.shared_with or '.'}\t"
                     f"{r.reference or 'NA'}\n")
    out.write("".join(lines).encode())


def write_kraken_report(out: BinaryIO, reads_total: int, reads_viral: int, viruses: list[dict]) -> None:
    """kraken2's report: percent of reads in the clade, reads in the clade, reads assigned to the
    taxon itself, rank code, NCBI taxid, name indented two spaces per level. Reads not called viral
    are unclassified; viral reads that no reference placed and no virus's seeds name stay at
    Viruses; each virus (rank S) holds its types (rank S1) and, assigned to itself, the reads
    named at the virus level only."""
    def line(n_clade: int, n_direct: int, rank: str, taxid: int, name: str, depth: int) -> str:
        pct = 100 * n_clade / reads_total if reads_total else 0.0
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


MULTIQC_HEADER = """# id: 'genointerp_viral'
# section_name: 'Viral report (genointerp)'
# description: 'Reads called viral, the top detected type and its copies per human haploid genome (genointerp classify-reads; assumes whole-genome sequencing)'
# plot_type: 'generalstats'
# headers:
#     viral_reads:
#         title: 'Viral reads'
#         description: 'Reads classify-reads called viral'
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
"""


def write_multiqc(out: BinaryIO, summary: dict, reads_viral: int) -> None:
    """MultiQC custom content (a `*_mqc.tsv` file): one general-statistics row for the sample."""
    top = next((t for t in summary["types"] if t["status"] == "detected"), None)
    copies = "NA" if top is None or top["copies_per_genome"] is None else f"{top['copies_per_genome']:.4f}"
    row = f"{summary['sample']}\t{reads_viral}\t{top['type'] if top else 'none'}\t{copies}\n"
    out.write((MULTIQC_HEADER + "Sample\tviral_reads\ttop_type\tcopies_per_genome\n" + row).encode())


def write_sample_report(outputs: dict, summary: dict, rows, reads_total: int, reads_viral: int) -> None:
    """Write the report in each format of `outputs` (format -> open binary stream or None): tsv,
    kraken, multiqc."""
    if outputs.get("tsv") is not None:
        write_report_tsv(outputs["tsv"], rows)
    if outputs.get("kraken") is not None:
        write_kraken_report(outputs["kraken"], reads_total, reads_viral, summary["kraken"])
    if outputs.get("multiqc") is not None:
        write_multiqc(outputs["multiqc"], summary, reads_viral)
