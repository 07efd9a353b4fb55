"""find-integrations' request: its options, and the rules for how they combine."""

from __future__ import annotations

from dataclasses import dataclass, field

from genointerp.errors import UsageError
from genointerp.io.inputs import is_stream
from genointerp.io.paths import own_descriptor
from genointerp.io.viral_report import report_files
from genointerp.job import distinct_inputs, one_stdout
from genointerp.viral.report.sample_report import check_sample_name


@dataclass
class IntegrationRequest:
    """find-integrations: the fields are its options (files as paths, `-` for stdout)."""

    host: str  # indexed host FASTA (the BAM's reference)
    bam: str | None = None
    reads1: str | None = None
    reads2: str | None = None
    output: str = "-"  # junction table (TSV)
    vcf: str | None = None  # the junctions as VCF breakends
    index_vcf: bool = False  # also VCF.tbi (tabix), for a bgzipped VCF file
    bedpe: str | None = None  # the junctions as BEDPE
    summary: str | None = None  # summary JSON
    multiqc: str | None = None  # the junctions as MultiQC custom content (*_mqc.tsv)
    sample: str | None = None  # the MultiQC rows' sample name; None: from the input's file name
    genes: str | None = None
    viral_refs: list[str] = field(default_factory=list)
    model: str | None = None  # model folder whose viral references and seed index are used
    min_mapq: int = 20
    min_clip: int = 20
    min_support: int = 3
    max_fragment: int = 1000
    threads: int = 1

    def check(self) -> None:
        if (self.bam is None) == (self.reads1 is None):
            raise UsageError("BAM: give a host-aligned BAM/CRAM, or paired FASTQ (--reads1 and --reads2), not both")
        if self.bam == "-":
            raise UsageError("BAM: the BAM must be an indexed file, not stdin")
        if (self.reads1 is None) != (self.reads2 is None):
            raise UsageError("--reads2: paired FASTQ needs both --reads1 and --reads2")
        distinct_inputs(("--reads1", self.reads1), ("--reads2", self.reads2),
                        why="each read of a pair would be paired with itself")
        for name, value, low in (("--min-mapq", self.min_mapq, 0), ("--min-clip", self.min_clip, 15),
                                 ("--min-support", self.min_support, 1), ("--max-fragment", self.max_fragment, 100),
                                 ("--threads", self.threads, 1)):
            if value < low:
                raise UsageError(f"{name}: must be at least {low}")
        one_stdout(("--output", self.output), ("--vcf", self.vcf), ("--bedpe", self.bedpe), ("--summary", self.summary),
                   *((option, path) for option, _, path in report_files(None, None, None, None, self.multiqc)))
        check_sample_name(self.sample)
        if self.index_vcf and (self.vcf is None or self.vcf == "-" or not self.vcf.endswith(".gz")
                               or is_stream(self.vcf) or own_descriptor(self.vcf) is not None):
            raise UsageError("--index-vcf: needs --vcf naming a file that ends in .gz (bgzipped), "
                             "not stdout or a pipe")

    def inputs(self) -> list[str | None]:
        return [self.bam, self.host, self.reads1, self.reads2, self.genes, self.model, *self.viral_refs]
