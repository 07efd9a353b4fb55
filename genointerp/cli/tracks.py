"""Genomic tracks panel: train-tracks, predict-tracks, evaluate-tracks (Genomic Interpreter and baselines).

Each command builds its request and runs its job (genointerp.tracks.train/predict/evaluate) through
genointerp.job.execute; the job modules are imported inside the commands because they import torch,
which `genointerp --help` must not pay for.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import List, Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, log
from genointerp.cli.options import device_option, fasta_option, force_option, seed_option, threads_option, track_model_option
from genointerp.job import execute
from genointerp.runtime import Precision

PANEL = "Genomic tracks"


class Arch(str, Enum):
    swin1d = "swin1d"
    maxpool_cnn = "maxpool-cnn"
    attpool_cnn = "attpool-cnn"
    attpool_dilated = "attpool-dilated"
    enformer_like = "enformer-like"


class MotifScanKind(str, Enum):
    none = "none"
    jaspar = "jaspar"


class MotifInit(str, Enum):
    none = "none"
    jaspar = "jaspar"
    jaspar_centred = "jaspar-centred"


class TrackLoss(str, Enum):
    poisson = "poisson"
    mse = "mse"


class TrackWeights(str, Enum):
    none = "none"
    balanced = "balanced"


class BinStat(str, Enum):
    mean = "mean"
    sum = "sum"
    max = "max"


def _chroms(value: Optional[str]) -> list[str]:
    return [c for c in (value or "").split(",") if c]


@app.command(
    "train-tracks",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp train-tracks --fasta hg19.fa.gz --targets targets.tsv --chroms chr20 -o tracks_model\n\n"
        "  genointerp train-tracks --fasta hg19.fa.gz --targets targets.tsv --chroms chr1,chr2,chr3 "
        "--valid-chroms chr8 --test-chroms chr9 --arch enformer-like -o baseline\n\n"
        "  genointerp train-tracks --fasta hg19.fa.gz --targets targets.tsv --chroms chr20 --init-from tracks_model "
        "--motif-scan jaspar --loss mse --epochs 3 -o tracks_model_scan\n\n"
        "  genointerp train-tracks --basenji data/heart_l131k -o heart_model\n\n"
        "  torchrun --nproc_per_node 4 -m genointerp train-tracks ... --device cuda"
    ),
)
def train_tracks(
    output: str = typer.Option(..., "-o", "--output", help="Model directory to write (model.safetensors, config.json, metrics)."),
    fasta: Optional[str] = fasta_option(required=False),
    targets: Optional[str] = typer.Option(None, "--targets", help="Tracks TSV: id, path (bigWig, bedGraph, narrowPeak/BED), group, description, name."),
    regions: Optional[str] = typer.Option(None, "--regions", help="BED of regions to train on (default: whole chromosomes, see --chroms)."),
    chroms: Optional[str] = typer.Option(None, "--chroms", help="Comma-separated chromosomes to use (default: all in the FASTA)."),
    valid_chroms: Optional[str] = typer.Option(None, "--valid-chroms", help="Chromosomes held out for validation."),
    test_chroms: Optional[str] = typer.Option(None, "--test-chroms", help="Chromosomes held out for testing."),
    valid_regions: Optional[str] = typer.Option(None, "--valid-regions", help="BED of regions held out for validation."),
    test_regions: Optional[str] = typer.Option(None, "--test-regions", help="BED of regions held out for testing. "
                                               "Without any held-out option: 80-90 % of each chromosome validates, 90-100 % tests."),
    basenji: Optional[str] = typer.Option(None, "--basenji", help="Train on a Basenji/Enformer TFRecord data set folder instead (statistics.json + tfrecords/)."),
    arch: Arch = typer.Option(Arch.swin1d, "--arch", help="swin1d (Genomic Interpreter) or a baseline of the paper's Table 1."),
    width: int = typer.Option(64, "--width", min=8, help="Model width (channels of the first stage); baselines are matched to it."),
    patch: int = typer.Option(1, "--patch", min=1, help="bp per token after the stem: 1 = single-nucleotide tokens (the paper); "
                              "4 or 8 trains several times faster on CPU."),
    stem_filters: int = typer.Option(0, "--stem-filters", min=0, help="swin1d: motif detectors in the stem's "
                                     "convolution, pooled and projected to width/2 per token (0: width/2 of them). "
                                     "More lets the first layer hold more motifs; with 48 the stem is about a third of the cost per bp. With --init-from: widen that "
                                     "model's stem to this many (it starts predicting as before)."),
    head_width: int = typer.Option(0, "--head-width", min=0, help="Hidden units of the output head, read by "
                                   "every track (0: twice the final width). It runs once per bin, so it costs "
                                   "little per bp. With --init-from: widen that model's head to this many (it starts "
                                   "predicting as before)."),
    motif_init: MotifInit = typer.Option(MotifInit.none, "--motif-init", help="jaspar: start the stem's filters as JASPAR "
                                         "motifs, the tracked factors' first, then one per TF family (needs pyjaspar), each firing "
                                         "near its matches; jaspar-centred: the same motifs, mean-centred and scaled like random filters."),
    motif_freeze: int = typer.Option(0, "--motif-freeze-epochs", min=0, help="Keep the --motif-init filters fixed for this many first epochs."),
    motif_filters: int = typer.Option(0, "--motif-filters", min=0, help="How many stem filters --motif-init sets (0: all; "
                                      "the rest keep their random start)."),
    motif_scan: MotifScanKind = typer.Option(MotifScanKind.none, "--motif-scan", help="jaspar: scan the JASPAR motifs of "
                                             "the factors the track ids name on both strands of each bin and let every "
                                             "track read the match scores beside the trunk (needs pyjaspar to train, not "
                                             "to predict). It teaches long, rare motifs (REST, CEBPB) that a small model "
                                             "does not learn from one chromosome. Its read-out starts from a least-squares "
                                             "fit of what the trunk leaves unexplained on the training windows. With "
                                             "--init-from: add it to that model."),
    init_from: Optional[str] = typer.Option(None, "--init-from", help="Fine-tune: start from this track model's weights "
                                            "(its architecture; same tracks and window geometry)."),
    track_weights: TrackWeights = typer.Option(TrackWeights.none, "--track-weights", help="none: every bin of every "
                                               "track weighs the same in the Poisson loss, so high-signal tracks steer "
                                               "training; balanced: each track's loss is rescaled as if its mean "
                                               "training signal were the tracks' common mean."),
    loss: TrackLoss = typer.Option(TrackLoss.poisson, "--loss", help="poisson: Poisson NLL of the rates (Enformer's); "
                                   "mse: squared error over each track's training variance, which weighs the peaks "
                                   "as the per-track Pearson r does (metrics.tsv's valid_loss stays the Poisson NLL, "
                                   "comparable between runs)."),
    aux_targets: Optional[str] = typer.Option(None, "--aux-targets", help="Tracks TSV like --targets, trained alongside "
                                              "as auxiliary tasks (e.g. relaxed peak sets beside conservative ones): "
                                              "they share the trunk, get heads of their own, and are dropped from the "
                                              "saved model; validation and test r are over --targets only."),
    dropout: float = typer.Option(0.1, "--dropout", min=0, max=0.9, help="Dropout rate inside the model."),
    seq_len: int = typer.Option(4096, "--seq-len", min=64, help="bp of DNA per window."),
    bin_size: int = typer.Option(128, "--bin-size", min=1, help="bp per target bin."),
    target_bins: int = typer.Option(16, "--target-bins", min=1, help="Bins predicted at the centre of each window."),
    stat: BinStat = typer.Option(BinStat.mean, "--stat", help="How a bin summarises the signal of its bases."),
    clip: float = typer.Option(32.0, "--clip", min=0, help="Soft-clip targets above this: clip + sqrt(excess) (Basenji's); 0 = off."),
    max_n: float = typer.Option(0.5, "--max-n", min=0, max=1, help="Skip windows whose target span has more N than this fraction."),
    epochs: int = typer.Option(20, "--epochs", min=1),
    patience: int = typer.Option(5, "--patience", min=1, help="Stop after this many epochs without a better validation Pearson r."),
    batch_size: int = typer.Option(16, "--batch-size", min=1),
    lr: float = typer.Option(3e-4, "--lr", min=0, help="Adam learning rate (the paper: 3e-4), cosine-annealed to 0."),
    weight_decay: float = typer.Option(0.0, "--weight-decay", min=0),
    rc_augment: bool = typer.Option(True, "--rc-augment/--no-rc-augment", help="Reverse-complement half of the windows each epoch."),
    shift: int = typer.Option(3, "--shift", min=0, help="Shift each training window by up to this many bp (augmentation)."),
    grad_clip: float = typer.Option(1.0, "--grad-clip", min=0, help="Clip the gradient norm to this (0 = off)."),
    device: str = device_option(),
    precision: Precision = typer.Option(Precision.fp32, "--precision", help="Autocast precision: 32, bf16, 16 (CUDA)."),
    threads: int = threads_option(),
    seed: int = seed_option(),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from OUTPUT.checkpoint/, with the inputs (by content) and options it was started with; others are refused."),
    force: bool = force_option("an existing model directory / discard an old checkpoint"),
) -> None:
    """Train a track model: DNA windows -> binned assay signal per track (Poisson loss).

    Early stopping on mean validation Pearson r; per-epoch metrics.tsv; test Pearson per track in
    test_pearson.tsv. Targets are binned once and cached in OUTPUT.checkpoint/, so later epochs (and
    --resume) never re-read the track files. Runs under torchrun (DDP; rank 0 writes).
    """
    from genointerp.tracks.train import TrainTracksRequest, run

    req = TrainTracksRequest(fasta=fasta, targets=targets, regions=regions, chroms=_chroms(chroms),
                             valid_chroms=_chroms(valid_chroms), test_chroms=_chroms(test_chroms),
                             valid_regions=valid_regions, test_regions=test_regions, basenji=basenji, arch=arch.value,
                             width=width, patch=patch, dropout=dropout, seq_len=seq_len, bin_size=bin_size,
                             target_bins=target_bins, stat=stat.value, clip=clip or None, max_n_fraction=max_n,
                             motif_init=motif_init.value, motif_freeze_epochs=motif_freeze, motif_filters=motif_filters,
                             init_from=init_from, track_weights=track_weights.value, stem_filters=stem_filters,
                             aux_targets=aux_targets, loss=loss.value, head_width=head_width,
                             motif_scan=motif_scan.value, output=output, epochs=epochs, patience=patience,
                             batch_size=batch_size, lr=lr, weight_decay=weight_decay, rc_augment=rc_augment,
                             shift=shift, grad_clip=grad_clip, device=device, precision=precision.value,
                             threads=threads, seed=seed, resume=resume)
    metrics = execute(run, req, force, REPORTER)
    groups = ", ".join(f"{g} {v:.4f}" for g, v in metrics["pearson_by_group"].items())
    log(f"test: mean Pearson r {metrics['pearson_mean']:.4f} ({groups}) over {metrics['n_windows']:,} windows")


@app.command(
    "predict-tracks",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp predict-tracks --fasta hg19.fa.gz --regions promoters.bed -o predictions\n\n"
        "  genointerp predict-tracks -m tracks_model --fasta ref.fa.gz --chroms chr20 --rc-average --bedgraph -o chr20_pred"
    ),
)
def predict_tracks(
    fasta: str = fasta_option(),
    output: str = typer.Option(..., "-o", "--output", help="Output folder: <track id>.bw and <track id>.peaks.bed per track."),
    model: Optional[str] = track_model_option(),
    regions: Optional[str] = typer.Option(None, "--regions", help="BED of regions to predict (merged where they touch)."),
    chroms: Optional[str] = typer.Option(None, "--chroms", help="Comma-separated whole chromosomes to predict (instead of --regions)."),
    overlap: Optional[int] = typer.Option(None, "--overlap-bins", min=0, help="Bins shared by neighbouring windows (default: a quarter of the model's)."),
    rc_average: bool = typer.Option(False, "--rc-average", help="Average the forward and reverse-complement predictions."),
    shifts: str = typer.Option("0", "--shifts", help="Comma-separated input shifts in bp (e.g. -1,0,1): the predictions of the window moved by each are averaged (Basenji's --shifts; one pass per shift, with --rc-average two)."),
    peak_threshold: Optional[float] = typer.Option(None, "--peak-threshold", help="Peaks: bins with predicted signal >= this (and above 0)."),
    peak_quantile: float = typer.Option(0.99, "--peak-quantile", min=0, max=1, help="Peaks: bins above this quantile of the track and above 0 (unless --peak-threshold)."),
    bedgraph: bool = typer.Option(False, "--bedgraph", help="Also write <track id>.bedGraph.gz."),
    tsv: bool = typer.Option(False, "--tsv", help="Also write tracks.tsv.gz (one column per track)."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    device: str = device_option(),
    precision: Precision = typer.Option(Precision.fp32, "--precision"),
    threads: int = threads_option(),
    force: bool = force_option("an existing output folder"),
) -> None:
    """Predict tracks over regions or whole chromosomes: a bigWig and a peak BED per track.

    bigWig headers follow the FASTA's .fai order, with one fixed-span entry per bin. Windows overlap by --overlap-bins; each bin is taken from the window where it lies farthest
    from the window's edges. Bins whose sequence is all N (assembly gaps) are left out: no value, no peak.
    """
    from genointerp.tracks.predict import PredictTracksRequest, run

    req = PredictTracksRequest(fasta=fasta, output=output, model=model, regions=regions, chroms=_chroms(chroms),
                               overlap_bins=overlap, rc_average=rc_average, shifts=shifts, peak_threshold=peak_threshold,
                               peak_quantile=peak_quantile, bedgraph=bedgraph, tsv=tsv, batch_size=batch_size,
                               device=device, precision=precision.value, threads=threads)
    summary = execute(run, req, force, REPORTER)
    log(f"wrote {summary['tracks']} bigWigs and peak BEDs to {output} ({sum(summary['peaks'].values()):,} peaks)")


@app.command(
    "evaluate-tracks",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp evaluate-tracks -m swin_model --fasta ref.fa.gz --targets targets.tsv --regions test.bed -o eval.tsv\n\n"
        "  genointerp evaluate-tracks -m cnn_model -m swin_model --fasta ref.fa.gz --targets targets.tsv "
        "--regions test.bed -o eval.tsv --scatter fig2.png --plot-region chr20:30000000-30100000 --plot fig3.png"
    ),
)
def evaluate_tracks(
    output: str = typer.Option(..., "-o", "--output", help="TSV: track, group, pearson per model; then group and overall means."),
    models: List[str] = typer.Option([], "-m", "--model", help="Model directory; give two to compare (default: the built-in model). "
                                     "`cpg` or `gc` names a control that needs no training (a folder of that name: ./cpg)."),
    fasta: Optional[str] = typer.Option(None, "--fasta", help="Reference FASTA with a .fai index."),
    targets: Optional[str] = typer.Option(None, "--targets", help="Tracks TSV holding every track the model predicts (matched by id)."),
    regions: Optional[str] = typer.Option(None, "--regions", help="BED of held-out regions to evaluate on."),
    chroms: Optional[str] = typer.Option(None, "--chroms", help="Held-out chromosomes to evaluate on (instead of --regions)."),
    basenji: Optional[str] = typer.Option(None, "--basenji", help="Evaluate on a Basenji TFRecord set instead (see --split)."),
    split: str = typer.Option("test", "--split", help="Basenji split to evaluate on."),
    scatter: Optional[str] = typer.Option(None, "--scatter", help="PNG: per-track Pearson r of model 1 vs model 2 (needs two -m)."),
    plot_region: Optional[str] = typer.Option(None, "--plot-region", help="chr:start-end to plot prediction vs truth (with --plot)."),
    plot: Optional[str] = typer.Option(None, "--plot", help="PNG of --plot-region (first model)."),
    controls: bool = typer.Option(False, "--controls", help="Also score the cpg and gc controls (columns pearson_cpg, "
                                  "pearson_gc): CpG count or GC fraction per bin, smoothed over 9 bins, fitted per track by a "
                                  "linear map on --fit-regions/--fit-chroms."),
    fit_regions: Optional[str] = typer.Option(None, "--fit-regions", help="BED of training regions the controls are fitted on."),
    fit_chroms: Optional[str] = typer.Option(None, "--fit-chroms", help="Training chromosomes the controls are fitted on "
                                             "(with --basenji: its train split)."),
    rc_average: bool = typer.Option(False, "--rc-average", help="Score the models' mean of the forward and "
                                    "reverse-complement predictions (predict-tracks --rc-average; twice the time)."),
    shifts: str = typer.Option("0", "--shifts", help="Comma-separated input shifts in bp (e.g. -1,0,1): the predictions of the window moved by each are averaged (Basenji's --shifts; one pass per shift, with --rc-average two)."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    device: str = device_option(),
    precision: Precision = typer.Option(Precision.fp32, "--precision"),
    threads: int = threads_option(),
    force: bool = force_option(),
) -> None:
    """Pearson r per track of one or two models against measured tracks on held-out windows.

    r is taken over every bin of every window (the Genomic Interpreter paper's metric) and
    summarised by track group and overall. The cpg and gc controls (-m cpg, --controls) predict the
    first model's tracks on its windows from sequence composition alone: a model is judged by its
    margin over them."""
    from genointerp.tracks.evaluate import EvaluateTracksRequest, run

    req = EvaluateTracksRequest(output=output, models=list(models), fasta=fasta, targets=targets, regions=regions,
                                chroms=_chroms(chroms), basenji=basenji, split=split, scatter=scatter,
                                plot_region=plot_region, plot=plot, controls=controls, fit_regions=fit_regions,
                                fit_chroms=_chroms(fit_chroms), rc_average=rc_average, shifts=shifts, batch_size=batch_size,
                                device=device, precision=precision.value, threads=threads)
    summary = execute(run, req, force, REPORTER)
    log("mean Pearson r: " + json.dumps(summary))
