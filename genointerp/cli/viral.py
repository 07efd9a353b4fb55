"""Viral detection panel: train-xvir, classify-reads, merge-calls and index-model.

Each command builds its request and calls genointerp.job.execute; the job modules (torch) are
imported inside the command functions so that `genointerp --help` does not import torch."""

from __future__ import annotations

from pathlib import Path

import typer

from genointerp.cli.common import is_main_rank, log
from genointerp.cli.declare import command
from genointerp.runtime import single_threaded_numpy_blas

PANEL = "Viral detection"


@command(
    "train-xvir",
    "genointerp.viral.training.job:TrainXvirRequest",
    job="genointerp.viral.training.job:run",
    force="an existing model directory / discard an old checkpoint",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp train-xvir train.kmers -o hpv_model\n\n"
        "  genointerp train-xvir -o hpv_model --viral hpv.fa --circular --negative human=chr20.fa.gz "
        "--negative bacterial=ecoli.fa --epochs 10 --rc-augment --target-fpr 0.001   # fresh reads every epoch\n\n"
        "  torchrun --nproc_per_node 4 -m genointerp train-xvir train.kmers -o hpv_model --device cuda"
    ),
)
def train_xvir(req, result: dict) -> None:
    """Train an XVir read classifier (transformer over k-mer tokens) on kmerize datasets.

    Binary cross-entropy, Adam, early stopping on validation AUROC; per-epoch metrics in
    metrics.tsv, test metrics in test_metrics.json and roc.png. Runs under torchrun (DDP; rank 0 writes).
    With --viral, the model folder also gets a k-mer index of those references (minus the k-mers
    of every --negative reference) that classify-reads uses as evidence beside the model. Without
    DATASET, training reads are simulated from --viral and --negative references, new ones for
    every epoch (seeded: a resumed or repeated run draws the same reads), so the model never sees
    a read twice.
    """

    log(f"test: accuracy {result['accuracy']:.4f}, AUROC {result['auroc']:.4f}, TPR {result['tpr']:.4f}, "
        f"TNR {result['tnr']:.4f}, recall at 1% FPR {result['recall_at_1pct_fpr']:.4f}")
    if req.target_fpr is not None and is_main_rank():
        import json

        calling = json.loads((Path(req.output) / "config.json").read_text())["calling"]
        fpr = calling["fpr"] if isinstance(calling["fpr"], dict) else {"negatives": calling["fpr"]}
        log(f"calling threshold {calling['threshold']} ({calling['rule']}): viral recall {calling['tpr']:.4f}, called "
            f"viral {', '.join(f'{label} {v:.4%}' for label, v in fpr.items())}")


@command(
    "classify-reads",
    "genointerp.viral.classify.request:ClassifyRequest",
    job="genointerp.viral.classify.job:run",
    prepare=single_threaded_numpy_blas,  # before the request's imports load numpy
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp classify-reads tumor.fq.gz > calls.tsv\n\n"
        "  genointerp classify-reads tumor.bam --unmapped-only --summary summary.json --viral-out viral.fq.gz -o calls.tsv\n\n"
        "  genointerp classify-reads tumor.fq.gz --chunk 3/8 -o chunk3.tsv --summary chunk3.json   # then merge-calls"
    ),
)
def classify_reads(req, result: dict) -> None:
    """Call every read viral or not; the built-in model knows HPV.

    A read's evidence is how unlikely by chance its matches to the model folder's viral
    references are (seeds that tolerate codon changes, and their proteins in six frames), in
    bits; the XVir model moves that score where it can change the call. Reads of 50 bp and more
    get a call; the model scores 150 bp windows (tiled along longer reads) and abstains on
    shorter ones, whose evidence then decides (status model_abstained).
    """

    sc = result["status_counts"]
    log(f"{result['reads_total']:,} reads, {result['reads_scored']:,} scored, {result['reads_called_viral']:,} called viral "
        f"({100 * result['fraction_viral_of_scored']:.3f} % of scored); too short {sc['too_short']:,}, ambiguous {sc['ambiguous']:,}; "
        f"the model scored {result['reads_model_scored']:,}")
    if "viral_report" in result:
        log_sample(result["viral_report"])


def log_sample(vr: dict) -> None:
    """One line for the per-sample report (genointerp.viral.report.sample_report.summary_line)."""
    from genointerp.viral.report.sample_report import summary_line

    log(summary_line(vr))


@command(
    "merge-calls",
    "genointerp.viral.classify.merge_calls:MergeCallsRequest",
    job="genointerp.viral.classify.merge_calls:run",
    rich_help_panel=PANEL,
    epilog=(
        "Example (8 jobs, then the gather):\n\n"
        "  genointerp classify-reads tumor.fq.gz --chunk 3/8 -o c3.tsv --summary c3.json --viral-out c3.fq.gz\n\n"
        "  genointerp merge-calls c?.tsv c?.json c?.fq.gz -o calls.tsv --summary summary.json --viral-out viral.fq.gz"
    ),
)
def merge_calls(req, result: dict) -> None:
    """Gather classify-reads --chunk outputs: the TSVs, viral reads, summaries and per-sample report of the whole run.

    With the chunk summaries, every chunk 1..N must be there once, from the same inputs, model
    and threshold, and the files are put in chunk order; the outputs are then byte for byte those
    of one unchunked run. Without summaries the TSVs are joined in the order given. The report
    (--report, --kraken-report, --multiqc, --multiqc-types) is built from the typing each chunk
    summary holds, with the chunks' --sample, --host-genome-size and --host-bases.
    """

    merged, n_tables = result["summary"], result["chunks"]
    if merged:
        log(f"merged {n_tables} chunks: {merged['reads_total']:,} reads, {merged['reads_called_viral']:,} called viral")
    else:
        log(f"merged {n_tables} calls TSVs")
    if merged and "viral_report" in merged:
        log_sample(merged["viral_report"])


@command(
    "index-model",
    "genointerp.viral.training.index_model:IndexModelRequest",
    job="genointerp.viral.training.index_model:run",
    force=None,
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp index-model                 # the built-in model (make install does this)\n\n"
        "  genointerp index-model my_hpv_model    # a folder from an older train-xvir\n\n"
        "  genointerp index-model my_hpv_model --check"
    ),
)
def index_model(req, result: dict) -> None:
    """Store a model folder's viral indexes prebuilt, so classify-reads starts in a second.

    The seed and protein indexes are built from the folder's references and written to
    MODEL/index/ as arrays that later runs memory-map (about 210 MB for the built-in model).
    Without them a run builds the indexes itself (about eight seconds) and keeps them in the
    user's cache (GENOINTERP_CACHE, default ~/.cache/genointerp). The model's folded inference
    tables go beside its weights (xvir_folded.safetensors, 14 MB), so that the model runs on CPU
    without importing torch (2-3 s). train-xvir writes both with every model; what was left
    from other references, other weights or an older genointerp is replaced.
    """

    if req.check_only:
        print(f"{result['index']}\t{result['state']}")
        if result["state"] != "current":
            raise typer.Exit(1)
    elif result["state"] == "current":
        log(f"{result['index']}: already current")
