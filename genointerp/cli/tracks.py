"""Genomic tracks panel: train-tracks, predict-tracks, evaluate-tracks (Genomic Interpreter and baselines).

Each command builds its request and runs its job (genointerp.tracks.train/predict/evaluate) through
genointerp.job.execute; the job modules are imported inside the commands because they import torch,
which `genointerp --help` must not pay for.
"""

from __future__ import annotations

import json

from genointerp.cli.common import log
from genointerp.cli.declare import command

PANEL = "Genomic tracks"


@command(
    "train-tracks",
    "genointerp.tracks.train:TrainTracksRequest",
    job="genointerp.tracks.train:run",
    force="an existing model directory / discard an old checkpoint",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp train-tracks -R hg19.fa.gz --targets targets.tsv --chroms chr20 -o tracks_model\n\n"
        "  genointerp train-tracks -R hg19.fa.gz --targets targets.tsv --chroms chr1,chr2,chr3 "
        "--valid-chroms chr8 --test-chroms chr9 --arch enformer-like -o baseline\n\n"
        "  genointerp train-tracks -R hg19.fa.gz --targets targets.tsv --chroms chr20 --init-from tracks_model "
        "--motif-scan jaspar --loss mse --epochs 3 -o tracks_model_scan\n\n"
        "  genointerp train-tracks --basenji data/heart_l131k -o heart_model\n\n"
        "  torchrun --nproc_per_node 4 -m genointerp train-tracks ... --device cuda"
    ),
)
def train_tracks(req, result: dict) -> None:
    """Train a track model: DNA windows -> binned assay signal per track (Poisson loss).

    Early stopping on mean validation Pearson r; per-epoch metrics.tsv; test Pearson per track in
    test_pearson.tsv. Targets are binned once and cached in OUTPUT.checkpoint/, so later epochs (and
    --resume) never re-read the track files. Runs under torchrun (DDP; rank 0 writes).
    """

    groups = ", ".join(f"{g} {v:.4f}" for g, v in result["pearson_by_group"].items())
    log(f"test: mean Pearson r {result['pearson_mean']:.4f} ({groups}) over {result['n_windows']:,} windows")


@command(
    "predict-tracks",
    "genointerp.tracks.predict:PredictTracksRequest",
    job="genointerp.tracks.predict:run",
    force="an existing output folder",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp predict-tracks -R hg19.fa.gz --regions promoters.bed -o predictions\n\n"
        "  genointerp predict-tracks -m tracks_model -R ref.fa.gz --chroms chr20 --rc-average --bedgraph -o chr20_pred"
    ),
)
def predict_tracks(req, result: dict) -> None:
    """Predict tracks over regions or whole chromosomes: a bigWig and a peak BED per track.

    bigWig headers follow the FASTA's .fai order, with one fixed-span entry per bin. Windows overlap by --overlap-bins; each bin is taken from the window where it lies farthest
    from the window's edges. Bins whose sequence is all N (assembly gaps) are left out: no value, no peak.
    """

    log(f"wrote {result['tracks']} bigWigs and peak BEDs to {req.output} ({sum(result['peaks'].values()):,} peaks)")


@command(
    "evaluate-tracks",
    "genointerp.tracks.evaluate:EvaluateTracksRequest",
    job="genointerp.tracks.evaluate:run",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp evaluate-tracks -m swin_model -R ref.fa.gz --targets targets.tsv --regions test.bed -o eval.tsv\n\n"
        "  genointerp evaluate-tracks -m cnn_model -m swin_model -R ref.fa.gz --targets targets.tsv "
        "--regions test.bed -o eval.tsv --scatter fig2.png --plot-region chr20:30000000-30100000 --plot fig3.png"
    ),
)
def evaluate_tracks(req, result: dict) -> None:
    """Pearson r per track of one or two models against measured tracks on held-out windows.

    r is taken over every bin of every window (the Genomic Interpreter paper's metric) and
    summarised by track group and overall. The cpg and gc controls (-m cpg, --controls) predict the
    first model's tracks on its windows from sequence composition alone: a model is judged by its
    margin over them."""

    log("mean Pearson r: " + json.dumps(result))
