"""The find-integrations job: host-virus junctions from a host-aligned BAM/CRAM or paired FASTQ.

Evidence, read by read:
- **split reads**: a read aligned to the host whose soft-clipped end (at least `min_clip` bases)
  is viral; the host breakpoint is exact (the alignment's end). An aligned part given only as an
  SA tag (a read whose primary alignment is on a viral contig of a host+virus reference) counts the
  same way.
- **spanning pairs**: one mate aligned to the host (mapping quality at least `min_mapq`), the other
  unaligned (or on a viral contig) and viral; the junction lies beyond the anchor, within a
  fragment length. When the viral mate's unaligned end is long enough, it is looked for in the host
  next to the anchor (mappy on that window): found, the pair's read becomes a split read too.
- fully unaligned viral pairs tell no host position; they are counted per type in the summary.
Viral parts are placed by genointerp.viral.typing.placement (seed evidence, then mappy). Split reads are
clustered by host position (within CLUSTER_BP), pairs joined to the nearest split-read junction
they can reach or clustered among themselves (imprecise junctions); a junction needs `min_support`
reads and pairs in all. Its virus and type are the panel reference most of its viral bases align
to (by matching bases), its viral position the commonest among split reads on that reference;
below 90 % identity to it the type is reported as e.g. "HPV70-like" (a type the panel lacks).
One junction is one call: where two calls of one type lie at one host breakpoint (one's position
within the other's tolerance, on the same strand), the one with more reads is kept
(genointerp.integrations.clusters._one_per_junction).

Every output names a type the same way, by its display name (`HPV16`, `HBV genotype A`,
`HPV70-like`: genointerp.viral.panel), the VCF too (VCF 4.3 allows spaces in INFO values).

Input modes: a coordinate-sorted, indexed BAM/CRAM (with its unmapped reads; an unmapped-only BAM
works from the mates' positions its records carry), or paired FASTQ aligned here with mappy (only
pairs with viral evidence are aligned to the host). Outputs are sorted by host position (the VCF,
with a viral breakend beside each host one, by contig in its header's order, the host's first,
then position) and deterministic (no floating point, no threads in the decisions).
"""

from __future__ import annotations

import json
from collections import Counter

from genointerp import __version__
from genointerp.integrations.bam import scan_bam
from genointerp.integrations.clusters import junction_calls
from genointerp.integrations.fastq import scan_fastq
from genointerp.integrations.genes import NearestGenes
from genointerp.integrations.pieces import Stats, PieceCollector
from genointerp.integrations.request import IntegrationRequest
from genointerp.io.atomic import AtomicOutputs, open_streams
from genointerp.io.junctions import Junction, write_bedpe, write_vcf
from genointerp.io.reference import Reference
from genointerp.io.vcf import tabix_vcf, vcf_text
from genointerp.io.viral_report import sample_name, write_multiqc_integrations
from genointerp.report import Reporter
from genointerp.resources import builtin_model_dir
from genointerp.seq.alphabet import decode
from genointerp.viral.typing.placement import ViralPanel

TSV_COLUMNS = ["junction_id", "host_chrom", "host_pos", "host_strand", "virus", "type", "viral_contig", "viral_pos",
               "orientation", "split_reads", "spanning_pairs", "kmer_hits", "nearest_genes", "status"]
INFO_DEFS = [
    'ID=SVTYPE,Number=1,Type=String,Description="Type of structural variant"',
    'ID=IMPRECISE,Number=0,Type=Flag,Description="Breakpoint estimated from read pairs only"',
    'ID=CIPOS,Number=2,Type=Integer,Description="Confidence interval around POS"',
    'ID=VIRUS,Number=1,Type=String,Description="Virus of the junction (HPV, HBV, ...)"',
    'ID=VTYPE,Number=1,Type=String,Description="Viral type as the table names it (HPV16, HBV genotype A, HPV70-like, ...)"',
    'ID=SR,Number=1,Type=Integer,Description="Split reads across the junction"',
    'ID=PE,Number=1,Type=Integer,Description="Read pairs spanning the junction"',
    'ID=KMERHITS,Number=1,Type=Integer,Description="Viral seed hits of the supporting reads"',
    'ID=GENES,Number=.,Type=String,Description="Host genes overlapping the junction, else the nearest on each side (NAME(-distance) left, NAME(+distance) right)"',
]
VCF_SIDES = ("host", "virus")  # VCF IDs of a junction's two breakends: INT1_host, INT1_virus


def run(req: IntegrationRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Find the junctions and write them as the TSV req.output and, when named, VCF, BEDPE and a
    summary JSON; returns the summary."""
    model_dir = req.model or builtin_model_dir()
    tsv, vcf, bedpe, summary = req.output, req.vcf, req.bedpe, req.summary
    paths = outputs.files(tsv, vcf, bedpe, summary, req.multiqc)  # refused outputs cost nothing: before the scan
    tbi = str(outputs.file(f"{vcf}.tbi")) if req.index_vcf else None
    with Reference(req.host, report.warn) as host:
        genes = NearestGenes(req.genes, host, report.warn) if req.genes else None
        panel = ViralPanel(model_dir, req.viral_refs, report.log, keep_sequences=vcf is not None)
        try:
            stats = Stats()
            col = PieceCollector(panel, req, host, stats)
            if req.bam is not None:
                scan_bam(req, col, host, report)
            else:
                scan_fastq(req, col, host, report)
            col.flush()
            calls = junction_calls(col.evidence, panel, req)
        finally:
            panel.close()
        order = {name: i for i, name in enumerate(host.names)}
        calls.sort(key=lambda ce: (order[ce[0].chrom], ce[0].pos, ce[0].side))
        junctions, rows = [], []
        for i, (c, end) in enumerate(calls, 1):
            naming = panel.refs[end.ref].naming
            near = genes(c.chrom, c.pos) if genes else []
            split_reads = len({e.name for e in c.splits})
            pairs = len({e.name for e in c.pairs})
            status = "precise" if c.precise else "imprecise"
            jid = f"INT{i}"
            info = {"SVTYPE": "BND", "IMPRECISE": not c.precise,
                    "CIPOS": None if c.precise else (c.lo - c.pos, c.hi - 1 - c.pos),
                    "VIRUS": vcf_text(naming.virus), "VTYPE": vcf_text(end.type), "SR": split_reads, "PE": pairs,
                    "KMERHITS": end.kmer_hits, "GENES": [vcf_text(g) for g in near] or None}
            junctions.append(Junction(jid, c.chrom, c.pos, c.side, end.ref, end.pos, end.side, split_reads + pairs,
                                      start=c.lo, end=c.hi, info=info,
                                      extra=(naming.virus, end.type, split_reads, pairs, status)))
            rows.append([jid, c.chrom, c.pos + 1, c.side, naming.virus, end.type, end.ref, end.pos + 1,
                         c.side + end.side, split_reads, pairs, end.kmer_hits, ",".join(near) or ".", status])
        ref_bases = [_base(host, j.chrom, j.pos) for j in junctions]
        # the viral breakends' bases, from the panel's genomes (the positions are theirs); VCF's REF
        # takes A, C, G, T or N, and some genomes carry IUPAC codes (R, Y, ...)
        mate_bases = [_vcf_base(panel.sequences[j.mate_chrom][j.mate_pos]) for j in junctions] if vcf else []
        contigs = [(n, host.lengths[n]) for n in host.names]
        used = sorted({j.mate_chrom for j in junctions})
        contigs += [(n, panel.refs[n].length) for n in used if n not in host.lengths]
    result = _summary(req, rows, stats, panel, model_dir)
    with open_streams(paths) as out:
        out[tsv].write(("\t".join(TSV_COLUMNS) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows)).encode())
        if vcf:
            meta = [f"source=genointerp find-integrations {__version__}", f"reference={req.host}"]
            write_vcf(out[vcf], junctions, contigs, ref_bases, mate_bases, meta, INFO_DEFS, VCF_SIDES)
        if bedpe:
            write_bedpe(out[bedpe], junctions, ["virus", "type", "split_reads", "spanning_pairs", "status"])
        if summary:
            out[summary].write((json.dumps(result, indent=2) + "\n").encode())
        if req.multiqc:
            sample = req.sample or sample_name([req.bam if req.bam is not None else req.reads1])
            write_multiqc_integrations(out[req.multiqc], sample, [dict(zip(TSV_COLUMNS, r)) for r in rows])
    if tbi is not None:
        tabix_vcf(paths[vcf], tbi)
    return result


def _vcf_base(base: str) -> str:
    return base if base in "ACGTN" else "N"


def _base(host, chrom: str, pos: int) -> str:
    return decode(host.codes(chrom, pos, pos + 1)).decode()


def _summary(req: IntegrationRequest, rows: list, stats: Stats, panel: ViralPanel, model_dir) -> dict:
    by_virus, by_type = Counter(r[4] for r in rows), Counter(r[5] for r in rows)
    return {
        "junctions": len(rows),
        "precise": sum(r[13] == "precise" for r in rows),
        "imprecise": sum(r[13] == "imprecise" for r in rows),
        "by_virus": dict(sorted(by_virus.items())),
        "by_type": dict(sorted(by_type.items())),
        "split_reads": sum(r[9] for r in rows),
        "spanning_pairs": sum(r[10] for r in rows),
        "reads_scanned": stats.reads,
        "pieces_placed": stats.pieces,
        "viral_pieces": stats.viral_pieces,
        "split_reads_rescued": stats.rescued,
        "unanchored_viral_reads": dict(sorted(stats.unanchored.items())),
        "input": req.bam if req.bam is not None else [req.reads1, req.reads2],
        "input_mode": stats.mode,
        "host": req.host,
        "viral_panel": {"model": str(model_dir), "added": list(req.viral_refs), "references": len(panel.refs)},
        "settings": {"min_mapq": req.min_mapq, "min_clip": req.min_clip, "min_support": req.min_support,
                     "max_fragment": req.max_fragment},
        "version": __version__,
    }
