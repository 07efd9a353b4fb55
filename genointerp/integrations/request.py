"""find-integrations' request: its options, and the rules for how they combine."""

from __future__ import annotations

from dataclasses import dataclass

from genointerp.errors import UsageError
from genointerp.io.inputs import is_stream
from genointerp.io.paths import own_descriptor
from genointerp.io.viral_report import check_sample_name, report_files
from genointerp import options
from genointerp.job import distinct_inputs, one_stdout
from genointerp.options import arg, opt


@dataclass
class IntegrationRequest:
    """find-integrations: the fields are its options (files as paths, `-` for stdout)."""

    host: str = options.reference(
        deprecated=("--host",),
        help=("Indexed reference FASTA (samtools faidx) of the host: the BAM's reference (every contig of its "
              'header, same lengths); with FASTQ input, the genome reads are aligned to.'))
    bam: str | None = arg(
        None, metavar="[BAM]",
        help=('Host-aligned BAM/CRAM, sorted by coordinate and indexed, with its unmapped reads (bwa mem, minimap2 '
              '-ax sr). Or give --reads1/--reads2.'))
    reads1: str | None = opt(None, "--reads1", help='Paired FASTQ, read 1 (instead of a BAM).')
    reads2: str | None = opt(None, "--reads2", help='Paired FASTQ, read 2, same pairs in the same order.')
    output: str = opt("-", "-o", "--output", help='Junction table (TSV); - is stdout.')
    vcf: str | None = opt(
        None, "--vcf",
        help='Also write the junctions as VCF 4.3 breakends (.gz: bgzip, which tabix and bcftools index).')
    index_vcf: bool = opt(
        False, "--index-vcf",
        help='With --vcf NAME.vcf.gz: also write its tabix index NAME.vcf.gz.tbi.')
    bedpe: str | None = opt(
        None, "--bedpe",
        help='Also write the junctions as BEDPE (host first).')
    summary: str | None = opt(
        None, "--summary",
        help="Also write a summary JSON (counts equal the table's rows).")
    multiqc: str | None = opt(
        None, "--multiqc",
        help=("Also write the junctions as MultiQC custom content (the name must end in _mqc.tsv): the sample's "
              'rows of the genointerp integrations table (virus, type, host position, reads, genes, status).'))
    sample: str | None = opt(
        None, "--sample",
        help="Sample name of the --multiqc rows (default: the input's file name less its extensions).")  # the MultiQC rows' sample name; None: from the input's file name
    genes: str | None = opt(None, "--genes", help='Gene annotation (BED or GTF) for the nearest_genes column.')
    viral_refs: list[str] = opt(
        [], "--viral-refs", metavar="FASTA",
        help=("More viral genomes to place reads on (repeatable), for viruses the model's references lack; the "
              "built-in model's hold HPV types with their lineages, HBV, HCV, EBV, KSHV, HTLV-1 and MCPyV."))
    model: str | None = options.model(
        "Model folder whose viral references and seed index are used (default: the built-in model).")
    min_mapq: int = opt(
        20, "--min-mapq", min=0, max=255,
        help='Least mapping quality of a host alignment that anchors a junction.')
    min_clip: int = opt(20, "--min-clip", min=15, help='Least soft-clipped (or unaligned) bases for a split read.')
    min_support: int = opt(3, "--min-support", min=1, help='Least split reads + spanning pairs for a junction.')
    max_fragment: int = opt(
        1000, "--max-fragment", min=100,
        help="Longest fragment (insert) of the library: how far from its anchor a pair's junction can lie.")
    threads: int = options.threads('Threads for BAM/CRAM decompression.')

    def check(self) -> None:
        if (self.bam is None) == (self.reads1 is None):
            raise UsageError("BAM: give a host-aligned BAM/CRAM, or paired FASTQ (--reads1 and --reads2), not both")
        if self.bam == "-":
            raise UsageError("BAM: the BAM must be an indexed file, not stdin")
        if (self.reads1 is None) != (self.reads2 is None):
            raise UsageError("--reads2: paired FASTQ needs both --reads1 and --reads2")
        distinct_inputs(("--reads1", self.reads1), ("--reads2", self.reads2),
                        why="each read of a pair would be paired with itself")
        one_stdout(("--output", self.output), ("--vcf", self.vcf), ("--bedpe", self.bedpe), ("--summary", self.summary),
                   *((option, path) for option, _, path in report_files(None, None, None, None, self.multiqc)))
        check_sample_name(self.sample)
        if self.index_vcf and (self.vcf is None or self.vcf == "-" or not self.vcf.endswith(".gz")
                               or is_stream(self.vcf) or own_descriptor(self.vcf) is not None):
            raise UsageError("--index-vcf: needs --vcf naming a file that ends in .gz (bgzipped), "
                             "not stdout or a pipe")

    def inputs(self) -> list[str | None]:
        return [self.bam, self.host, self.reads1, self.reads2, self.genes, self.model, *self.viral_refs]
