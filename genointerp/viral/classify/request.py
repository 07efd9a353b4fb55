"""classify-reads' request: its options, and the rules for how they combine."""

from __future__ import annotations

import os
from dataclasses import dataclass

from genointerp.chunks import chunk_option
from genointerp.errors import InputError, UsageError
from genointerp.io.inputs import is_stream
from genointerp.io.viral_report import report_files
from genointerp.job import one_stdout, stdin_once
from genointerp.options import opt
from genointerp.resources import builtin_model_dir
from genointerp.runtime import check_settings
from genointerp.viral.report.sample_report import check_sample_name

EVIDENCE_MODES = ("both", "model", "kmer")
# bp: --host-genome-size's bound, above the largest genome known (Tmesipteris oblanceolata, 1.6e11 bp);
# a value past it is a typo, not a genome (1e308 gave a copies figure of 300 digits)
HOST_GENOME_SIZE_MAX = 10**12


@dataclass
class ClassifyRequest:
    """classify-reads: the fields are its options (files as paths, `-` for stdin/stdout)."""

    reads: list[str]  # READS...
    output: str = "-"  # per-read calls TSV
    model: str | None = None  # model folder; None: the built-in model; recorded in the summary with a digest of its files
    threshold: float | None = None  # None: the model's calibrated threshold (default_threshold)
    evidence: str | None = None  # both, model or kmer; None: both when the model has a k-mer index, else model
    min_bits: float | None = None  # None: the model folder's calling rule's
    model_all: bool = False  # run the model on every read, not only where it can change a call
    summary: str | None = None  # run summary JSON
    report: str | None = None  # per-sample viral report TSV (the reads typed by EM)
    kraken_report: str | None = None  # the report in kraken2's format
    multiqc: str | None = None  # the report's MultiQC general-statistics row (custom content, *_mqc.tsv)
    multiqc_types: str | None = None  # the report's MultiQC table of types (custom content, *_mqc.tsv)
    sample: str | None = None  # the report's sample name; None: from the first input's file name
    # the report's copies per genome: GRCh38's size by default; its bounds declared here, held by execute
    host_genome_size: float = opt(3.1e9, "--host-genome-size", min=1, max=HOST_GENOME_SIZE_MAX)
    host_bases: int | None = None  # the host's bases; None: counted (genointerp.viral.report.host_depth)
    viral_out: str | None = None  # the reads called viral
    unmapped_only: bool = False
    reference: str | None = None  # FASTA for CRAM decoding
    chunk: str | None = None  # "I/N": only chunk I of N of the read stream
    device: str = "cpu"  # a torch device, or auto (genointerp.viral.classify.classifier.model_device)
    precision: str = "32"
    threads: int = 1

    def check(self) -> None:
        stdin_once("READS...", self.reads, "it cannot be read twice")
        one_stdout(("--output", self.output), ("--summary", self.summary), ("--viral-out", self.viral_out),
                   *self.reports())
        if self.evidence is not None and self.evidence not in EVIDENCE_MODES:
            raise UsageError(f"--evidence: must be one of {', '.join(EVIDENCE_MODES)}, not {self.evidence!r}")
        if self.min_bits is not None and not self.min_bits > 0:
            raise UsageError(f"--min-bits: must be above 0, not {self.min_bits}")
        if self.threshold is not None and not 0 <= self.threshold <= 1:
            raise UsageError(f"--threshold: must be from 0 to 1, not {self.threshold}")
        if self.host_bases is not None and not self.host_bases > 0:
            raise UsageError(f"--host-bases: must be above 0, not {self.host_bases}")
        check_sample_name(self.sample)
        check_settings(self.threads, self.precision)
        if self.chunk is not None:
            self.chunk_of()
            reports = self.reports()
            if reports:
                raise UsageError(f"{reports[0][0]}: the per-sample report needs every read of the sample: give the "
                                 "chunks' --summary files to merge-calls with this option (a chunk's summary holds "
                                 "its share of the typing)")
            streams = [p for p in self.reads if is_stream(p)]
            if streams:
                what = "stdin (-)" if streams[0] == "-" else f"{streams[0]} (a pipe, not a file)"
                raise UsageError(f"--chunk: {what} cannot be chunked: every job must count the whole input, "
                                 "so it is read twice; give a file")

    def check_inputs(self) -> None:
        """Refuse, before any reading, --unmapped-only on reads that are not BAM/CRAM (regular files:
        their first bytes; a stream is refused when it is read) and a --reference that is not there."""
        from genointerp.io.sequences import check_reference, refuse_unmapped_only, sniff_format

        check_reference(self.reference)
        if self.unmapped_only:
            for path in self.reads:
                if is_stream(path) or not os.path.isfile(path):
                    continue
                try:
                    fmt = sniff_format(path)
                except InputError:
                    continue  # an unreadable input gets its own error where it is read
                refuse_unmapped_only(path, fmt)

    def chunk_of(self) -> tuple[int, int] | None:
        """--chunk as (I, N), None without it."""
        return chunk_option(self.chunk)

    def reports(self) -> list[tuple[str, str]]:
        """(option, path) of the per-sample report files asked for."""
        return [(option, path) for option, _, path in self.report_files()]

    def report_files(self) -> list[tuple[str, str, str]]:
        """(option, format, path) of the per-sample report files asked for
        (genointerp.io.viral_report.report_files)."""
        return report_files(self.report, self.kraken_report, self.multiqc, self.multiqc_types)

    def model_folder(self) -> str:
        return self.model or str(builtin_model_dir())

    def inputs(self) -> list[str | None]:
        return [*self.reads, self.model_folder(), self.reference]
