"""classify-reads' request: its options, and the rules for how they combine."""

from __future__ import annotations

import os
from dataclasses import dataclass

from genointerp.chunks import chunk_option
from genointerp.errors import InputError, UsageError
from genointerp.io.inputs import is_stream
from genointerp.io.viral_report import check_sample_name, report_files
from genointerp.job import one_stdout, stdin_once
from genointerp import options
from genointerp.options import arg, opt
from genointerp.resources import builtin_model_dir

EVIDENCE_MODES = ("both", "model", "kmer")
# bp: --host-genome-size's bound, above the largest genome known (Tmesipteris oblanceolata, 1.6e11 bp);
# a value past it is a typo, not a genome (1e308 gave a copies figure of 300 digits)
HOST_GENOME_SIZE_MAX = 10**12


def builtin_min_bits() -> float:
    """The built-in model's --min-bits (its calling rule's), for the help."""
    from genointerp.model_folder import read_model_config
    from genointerp.viral.classify.calling import rule_of

    path = builtin_model_dir()
    return rule_of(read_model_config(str(path), expect="xvir"), f"{path}/config.json").min_bits


# the per-sample report's outputs, which merge-calls builds too (from the chunks' summaries)
def report_field() -> str | None:
    return opt(None, "--report", help='Write the per-sample viral report TSV: per virus and type, EM-assigned and unique reads, genome fraction covered, mean depth, copies per human genome, status (detected, low_evidence, not_detected), host depth and flags (low_host_depth).')


def kraken_report_field() -> str | None:
    return opt(None, "--kraken-report", help="Write the report in kraken2's six-column report format (for Pavian, Krona and kraken2 report scripts): reads not called viral are unclassified, viruses at rank S, types with an NCBI taxon at S1. Name it SAMPLE.genointerp.kreport: the shipped MultiQC config keeps it out of MultiQC's kraken section.")


def multiqc_field() -> str | None:
    return opt(None, "--multiqc", help='Write MultiQC custom content (the name must end in _mqc.tsv): a general-statistics row with viral reads, top type, its copies per genome and the host depth.')


def multiqc_types_field() -> str | None:
    return opt(None, "--multiqc-types", help="Write MultiQC custom content (the name must end in _mqc.tsv): the sample's rows of the genointerp viral types table (virus, type, reads, copies, status, flags).")


@dataclass
class ClassifyRequest:
    """classify-reads: the fields are its options (files as paths, `-` for stdin/stdout)."""

    reads: list[str] = arg(
        metavar="READS...",
        help='FASTQ/FASTA (gzip ok), BAM or CRAM; - is stdin (FASTQ/FASTA).')
    output: str = opt(
        "-", "-o", "--output",
        help=('Per-read TSV (read_id, length, p_viral, call, status, kmer_hits, evidence, bits, reference); - is '
              'stdout.'))
    model: str | None = opt(
        None, "-m", "--model",
        help='Model directory from train-xvir (default: the built-in HPV model).')  # model folder; None: the built-in model; recorded in the summary with a digest of its files
    threshold: float | None = opt(
        None, "--threshold", min=0, max=1,
        help=("With --evidence model: viral when p_viral >= this (default: the model's calibrated threshold, else "
              '0.5).'))
    evidence: str | None = opt(
        None, "--evidence", choices=EVIDENCE_MODES,
        help=("What calls a read viral: both (its evidence bits from the model folder's viral index, moved by the "
              "model's vote where that can change the call), kmer (the evidence alone; the model is not run) or "
              'model (the model alone, p_viral >= --threshold). Default: both when the model has a viral index, '
              'else model.'))  # both, model or kmer; None: both when the model has a k-mer index, else model
    min_bits: float | None = opt(
        None, "--min-bits", min=0, min_open=True,
        help=lambda: ("Viral when the read's score reaches this many bits (default: the model folder's calling rule, "
                      f"{builtin_min_bits():g} for the built-in model). Lower finds more divergent viruses and calls "
                      "more false positives."))  # None: the model folder's calling rule's
    model_all: bool = opt(
        False, "--model-all",
        help=('Run the model on every read (fills p_viral), not only on reads whose call it can change; the calls '
              "are the same, at the model's speed."))
    summary: str | None = opt(
        None, "--summary",
        help=('Write the run summary as JSON (with the per-sample viral report, viral_report, when a report is '
              'asked for).'))
    report: str | None = report_field()  # per-sample viral report TSV (the reads typed by EM)
    kraken_report: str | None = kraken_report_field()
    multiqc: str | None = multiqc_field()  # custom content, *_mqc.tsv
    multiqc_types: str | None = multiqc_types_field()  # custom content, *_mqc.tsv
    sample: str | None = opt(
        None, "--sample",
        help="Sample name in the reports (default: the first input's file name less its extensions).")  # the report's sample name; None: from the first input's file name
    # the report's copies per genome: GRCh38's size by default; its bounds declared here, held by execute
    host_genome_size: float = opt(
        3.1e9, "--host-genome-size", min=1, max=HOST_GENOME_SIZE_MAX,
        help=('Host genome size (bp) for copies per genome = viral depth / host depth, host depth = host bases / '
              "this. Default GRCh38's; assumes whole-genome sequencing."))
    host_bases: int | None = opt(
        None, "--host-bases", min=1,
        help=("The host's bases in the sample, where classify-reads cannot count them: a FASTQ of reads already "
              'stripped of the host, a CRAM or an unindexed BAM with --unmapped-only. Default: the bases of the '
              'reads not called viral, plus with --unmapped-only those of the mapped reads (from the BAM index).'))
    library: str = opt(
        "dna", "--library", choices=("dna", "rna"),
        help=("What was sequenced: dna (copies per genome from the host's depth) or rna (an RNA-seq library: the "
              'report gives reads per million reads of the sample beside the reads, copies per genome empty, flag '
              'rna_library).'))
    viral_out: str | None = opt(
        None, "--viral-out",
        help='Write the reads called viral (FASTQ, or FASTA for FASTA input; the inputs must not mix the two).')
    unmapped_only: bool = opt(False, "--unmapped-only", help='BAM/CRAM: only reads that did not map.')
    reference: str | None = options.reference(required=False, deprecated=(), help='Reference FASTA for CRAM decoding.')
    chunk: str | None = opt(
        None, "--chunk", metavar="I/N",
        help=('Classify only chunk I of N (1-based) of the reads, for scatter/gather on a cluster: N jobs cover the'
              " input exactly once, and merge-calls joins their outputs into the unchunked run's. Each job first "
              'counts the reads (one extra parsing pass).'))  # "I/N": only chunk I of N of the read stream
    device: str = options.device(
        'a GPU where the model scores every read: --model-all, --evidence model, --precision other than 32')
    precision: str = options.precision(
        "Autocast precision: 32, bf16 (CUDA; on CPU it runs the PyTorch module, slower than 32's folded "
            'CPU form, and emulated without AVX512-BF16 or AMX; p_viral within 0.005 of fp32), 16 (CUDA).')
    threads: int = options.threads(
        'Processes for the work: this one (reading, calling, writing) and N - 1 workers that look the '
            'reads up in the indexes; the model, when it runs, uses N torch threads in a process of its own.')

    def check(self) -> None:
        stdin_once("READS...", self.reads, "it cannot be read twice")
        one_stdout(("--output", self.output), ("--summary", self.summary), ("--viral-out", self.viral_out),
                   *self.reports())
        check_sample_name(self.sample)
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
