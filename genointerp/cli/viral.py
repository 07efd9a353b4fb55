"""Viral detection panel: train-xvir, classify-reads, merge-calls and index-model.

Each command builds its request and calls genointerp.job.execute; the job modules (torch) are
imported inside the command functions so that `genointerp --help` does not import torch."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, device_for, is_main_rank, log
from genointerp.cli.declare import command
from genointerp.cli.options import device_option, force_option, threads_option
from genointerp.runtime import Precision

PANEL = "Viral detection"


class Evidence(str, Enum):
    both = "both"
    model = "model"
    kmer = "kmer"


@command(
    "train-xvir",
    "genointerp.viral.training.job:TrainXvirRequest",
    force='an existing model directory / discard an old checkpoint',
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp train-xvir train.kmers -o hpv_model\n\n"
        "  genointerp train-xvir -o hpv_model --viral hpv.fa --circular --negative human=chr20.fa.gz "
        "--negative bacterial=ecoli.fa --epochs 10 --rc-augment --target-fpr 0.001   # fresh reads every epoch\n\n"
        "  torchrun --nproc_per_node 4 -m genointerp train-xvir train.kmers -o hpv_model --device cuda"
    ),
)
def train_xvir(req, force: bool) -> None:
    """Train an XVir read classifier (transformer over k-mer tokens) on kmerize datasets.

    Binary cross-entropy, Adam, early stopping on validation AUROC; per-epoch metrics in
    metrics.tsv, test metrics in test_metrics.json and roc.png. Runs under torchrun (DDP; rank 0 writes).
    With --viral, the model folder also gets a k-mer index of those references (minus the k-mers
    of every --negative reference) that classify-reads uses as evidence beside the model. Without
    DATASET, training reads are simulated from --viral and --negative references, new ones for
    every epoch (seeded: a resumed or repeated run draws the same reads), so the model never sees
    a read twice.
    """
    from genointerp.job import execute
    from genointerp.viral.training.job import run

    metrics = execute(run, req, force, REPORTER)
    log(f"test: accuracy {metrics['accuracy']:.4f}, AUROC {metrics['auroc']:.4f}, TPR {metrics['tpr']:.4f}, "
        f"TNR {metrics['tnr']:.4f}, recall at 1% FPR {metrics['recall_at_1pct_fpr']:.4f}")
    if req.target_fpr is not None and is_main_rank():
        import json

        calling = json.loads((Path(req.output) / "config.json").read_text())["calling"]
        fpr = calling["fpr"] if isinstance(calling["fpr"], dict) else {"negatives": calling["fpr"]}
        log(f"calling threshold {calling['threshold']} ({calling['rule']}): viral recall {calling['tpr']:.4f}, called "
            f"viral {', '.join(f'{label} {v:.4%}' for label, v in fpr.items())}")


def report_option():
    return typer.Option(None, "--report", help="Write the per-sample viral report TSV: per virus and type, EM-assigned and unique reads, genome fraction covered, mean depth, copies per human genome, status (detected, low_evidence, not_detected), host depth and flags (low_host_depth).")


def kraken_report_option():
    return typer.Option(None, "--kraken-report", help="Write the report in kraken2's six-column report format (for Pavian, Krona and kraken2 report scripts): reads not called viral are unclassified, viruses at rank S, types with an NCBI taxon at S1. Name it SAMPLE.genointerp.kreport: the shipped MultiQC config keeps it out of MultiQC's kraken section.")


def multiqc_option():
    return typer.Option(None, "--multiqc", help="Write MultiQC custom content (the name must end in _mqc.tsv): a general-statistics row with viral reads, top type, its copies per genome and the host depth.")


def multiqc_types_option():
    return typer.Option(None, "--multiqc-types", help="Write MultiQC custom content (the name must end in _mqc.tsv): the sample's rows of the genointerp viral types table (virus, type, reads, copies, status, flags).")


@app.command(
    "classify-reads",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp classify-reads tumor.fq.gz > calls.tsv\n\n"
        "  genointerp classify-reads tumor.bam --unmapped-only --summary summary.json --viral-out viral.fq.gz -o calls.tsv\n\n"
        "  genointerp classify-reads tumor.fq.gz --chunk 3/8 -o chunk3.tsv --summary chunk3.json   # then merge-calls"
    ),
)
def classify_reads(
    inputs: List[str] = typer.Argument(..., metavar="READS...", help="FASTQ/FASTA (gzip ok), BAM or CRAM; - is stdin (FASTQ/FASTA)."),
    output: str = typer.Option("-", "-o", "--output", help="Per-read TSV (read_id, length, p_viral, call, status, kmer_hits, evidence, bits, reference); - is stdout."),
    model_dir: Optional[str] = typer.Option(None, "-m", "--model", help="Model directory from train-xvir (default: the built-in HPV model)."),
    threshold: Optional[float] = typer.Option(None, "--threshold", min=0, max=1, help="With --evidence model: viral when p_viral >= this (default: the model's calibrated threshold, else 0.5)."),
    evidence: Optional[Evidence] = typer.Option(None, "--evidence", help="What calls a read viral: both (its evidence bits from the model folder's viral index, moved by the model's vote where that can change the call), kmer (the evidence alone; the model is not run) or model (the model alone, p_viral >= --threshold). Default: both when the model has a viral index, else model."),
    min_bits: Optional[float] = typer.Option(None, "--min-bits", min=0, help="Viral when the read's score reaches this many bits (default: the model folder's calling rule, 10 for the built-in model). Lower finds more divergent viruses and calls more false positives."),
    model_all: bool = typer.Option(False, "--model-all", help="Run the model on every read (fills p_viral), not only on reads whose call it can change; the calls are the same, at the model's speed."),
    summary: Optional[str] = typer.Option(None, "--summary", help="Write the run summary as JSON (with the per-sample viral report, viral_report, when a report is asked for)."),
    report: Optional[str] = report_option(),
    kraken_report: Optional[str] = kraken_report_option(),
    multiqc: Optional[str] = multiqc_option(),
    multiqc_types: Optional[str] = multiqc_types_option(),
    sample: Optional[str] = typer.Option(None, "--sample", help="Sample name in the reports (default: the first input's file name less its extensions)."),
    host_genome_size: float = typer.Option(3.1e9, "--host-genome-size", min=1, help="Host genome size (bp) for copies per genome = viral depth / host depth, host depth = host bases / this. Default GRCh38's; assumes whole-genome sequencing."),
    host_bases: Optional[int] = typer.Option(None, "--host-bases", min=1, help="The host's bases in the sample, where classify-reads cannot count them: a FASTQ of reads already stripped of the host, a CRAM or an unindexed BAM with --unmapped-only. Default: the bases of the reads not called viral, plus with --unmapped-only those of the mapped reads (from the BAM index)."),
    viral_out: Optional[str] = typer.Option(None, "--viral-out", help="Write the reads called viral (FASTQ, or FASTA for FASTA input; the inputs must not mix the two)."),
    unmapped_only: bool = typer.Option(False, "--unmapped-only", help="BAM/CRAM: only reads that did not map."),
    reference: Optional[str] = typer.Option(None, "--reference", help="FASTA reference for CRAM decoding."),
    chunk: Optional[str] = typer.Option(None, "--chunk", metavar="I/N", help="Classify only chunk I of N (1-based) of the reads, for scatter/gather on a cluster: N jobs cover the input exactly once, and merge-calls joins their outputs into the unchunked run's. Each job first counts the reads (one extra parsing pass)."),
    device: str = device_option("a GPU where the model scores every read: --model-all, --evidence model, --precision other than 32"),
    precision: Precision = typer.Option(Precision.fp32, "--precision", help="Autocast precision: 32, bf16 (CUDA; on CPU it runs the PyTorch module, slower than 32's folded CPU form, and emulated without AVX512-BF16 or AMX; p_viral within 0.005 of fp32), 16 (CUDA)."),
    threads: int = threads_option("Processes for the work: this one (reading, calling, writing) and N - 1 workers that look the reads up in the indexes; the model, when it runs, uses N torch threads in a process of its own."),
    force: bool = force_option(),
) -> None:
    """Call every read viral or not; the built-in model knows HPV.

    A read's evidence is how unlikely by chance its matches to the model folder's viral
    references are (seeds that tolerate codon changes, and their proteins in six frames), in
    bits; the XVir model moves that score where it can change the call. Reads of 50 bp and more
    get a call; the model scores 150 bp windows (tiled along longer reads) and abstains on
    shorter ones, whose evidence then decides (status model_abstained).
    """
    from genointerp.runtime import single_threaded_numpy_blas

    single_threaded_numpy_blas()  # before the job's imports load numpy
    from genointerp.job import execute
    from genointerp.viral.classify.job import run
    from genointerp.viral.classify.request import ClassifyRequest

    req = ClassifyRequest(inputs, output=output, model=model_dir, threshold=threshold,
                          evidence=evidence and evidence.value, min_bits=min_bits, model_all=model_all, summary=summary,
                          report=report, kraken_report=kraken_report, multiqc=multiqc, multiqc_types=multiqc_types,
                          sample=sample, host_genome_size=host_genome_size, host_bases=host_bases,
                          viral_out=viral_out, unmapped_only=unmapped_only,
                          reference=reference, chunk=chunk,
                          # auto at fp32 is settled by the job, which knows whether the model scores every read
                          device=device if (device, precision) == ("auto", Precision.fp32) else device_for(device, precision),
                          precision=precision.value, threads=threads)
    result = execute(run, req, force, REPORTER)
    sc = result["status_counts"]
    log(f"{result['reads_total']:,} reads, {result['reads_scored']:,} scored, {result['reads_called_viral']:,} called viral "
        f"({100 * result['fraction_viral_of_scored']:.3f} % of scored); too short {sc['too_short']:,}, ambiguous {sc['ambiguous']:,}; "
        f"the model scored {result['reads_model_scored']:,}")
    if "viral_report" in result:
        log_sample(result["viral_report"])


def log_sample(vr: dict) -> None:
    """One line for the per-sample report: the types detected, and what flags their load."""
    found = ", ".join(f"{t['type']} ({t['reads']:g} reads, {t['copies_per_genome']} copies/genome)"
                      for t in vr["types"] if t["status"] == "detected")
    flags = f"; host depth {vr['host_depth']:g}x: {', '.join(vr['flags'])}" if vr["flags"] else ""
    log(f"sample {vr['sample']}: {found or 'no virus detected'}{flags}")


@app.command(
    "merge-calls",
    rich_help_panel=PANEL,
    epilog=(
        "Example (8 jobs, then the gather):\n\n"
        "  genointerp classify-reads tumor.fq.gz --chunk 3/8 -o c3.tsv --summary c3.json --viral-out c3.fq.gz\n\n"
        "  genointerp merge-calls c?.tsv c?.json c?.fq.gz -o calls.tsv --summary summary.json --viral-out viral.fq.gz"
    ),
)
def merge_calls(
    chunks: List[str] = typer.Argument(..., metavar="CHUNK...", help="Outputs of classify-reads --chunk jobs: calls TSVs, and their summary JSONs and --viral-out files if any, told apart by content (gzip ok). List each kind in the same order."),
    output: str = typer.Option("-", "-o", "--output", help="Merged calls TSV; - is stdout."),
    summary: Optional[str] = typer.Option(None, "--summary", help="Write the merged summary JSON (needs the chunks' summaries)."),
    viral_out: Optional[str] = typer.Option(None, "--viral-out", help="Write the merged reads called viral (needs the chunks' --viral-out files)."),
    report: Optional[str] = report_option(),
    kraken_report: Optional[str] = kraken_report_option(),
    multiqc: Optional[str] = multiqc_option(),
    multiqc_types: Optional[str] = multiqc_types_option(),
    force: bool = force_option(),
) -> None:
    """Gather classify-reads --chunk outputs: the TSVs, viral reads, summaries and per-sample report of the whole run.

    With the chunk summaries, every chunk 1..N must be there once, from the same inputs, model
    and threshold, and the files are put in chunk order; the outputs are then byte for byte those
    of one unchunked run. Without summaries the TSVs are joined in the order given. The report
    (--report, --kraken-report, --multiqc, --multiqc-types) is built from the typing each chunk
    summary holds, with the chunks' --sample, --host-genome-size and --host-bases.
    """
    from genointerp.job import execute
    from genointerp.viral.classify.merge_calls import MergeCallsRequest, run

    req = MergeCallsRequest(chunks, output=output, summary=summary, viral_out=viral_out, report=report,
                            kraken_report=kraken_report, multiqc=multiqc, multiqc_types=multiqc_types)
    result = execute(run, req, force, REPORTER)
    merged, n_tables = result["summary"], result["chunks"]
    if merged:
        log(f"merged {n_tables} chunks: {merged['reads_total']:,} reads, {merged['reads_called_viral']:,} called viral")
    else:
        log(f"merged {n_tables} calls TSVs")
    if merged and "viral_report" in merged:
        log_sample(merged["viral_report"])


@app.command(
    "index-model",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp index-model                 # the built-in model (make install does this)\n\n"
        "  genointerp index-model my_hpv_model    # a folder from an older train-xvir\n\n"
        "  genointerp index-model my_hpv_model --check"
    ),
)
def index_model(
    model: Optional[str] = typer.Argument(None, metavar="[MODEL]", help="Model folder from train-xvir (default: the built-in model)."),
    check: bool = typer.Option(False, "--check", help="Only say whether the folder's prebuilt index and folded model are current (exit 1 if not); write nothing."),
) -> None:
    """Store a model folder's viral indexes prebuilt, so classify-reads starts in a second.

    The seed and protein indexes are built from the folder's references and written to
    MODEL/index/ as arrays that later runs memory-map (about 110 MB for the built-in model).
    Without them a run builds the indexes itself (about eight seconds) and keeps them in the
    user's cache (GENOINTERP_CACHE, default ~/.cache/genointerp). The model's folded inference
    tables go beside its weights (xvir_folded.safetensors, 14 MB), so that the model runs on CPU
    without importing torch (2-3 s). train-xvir writes both with every model; what was left
    from other references, other weights or an older genointerp is replaced.
    """
    from genointerp.job import execute
    from genointerp.viral.evidence.index_model import IndexModelRequest, run

    result = execute(run, IndexModelRequest(model, check_only=check), False, REPORTER)
    if check:
        print(f"{result['index']}\t{result['state']}")
        if result["state"] != "current":
            raise typer.Exit(1)
    elif result["state"] == "current":
        log(f"{result['index']}: already current")
