"""One driver for the training jobs (train-xvir, train-tracks): the sequence every one of them runs.

    join the torchrun group -> check (--resume) or record the run's inputs and options -> read and
    split the data -> model config -> seed, build the model ->
    log it -> OUTPUT.checkpoint/ with its per-epoch metrics.tsv -> the task -> fit (train.loop) ->
    the best epoch's weights -> test metrics -> on rank 0 the model directory: model.safetensors,
    config.json, metrics.tsv, test_metrics.json and the job's own files -> finish() drops the
    checkpoint once the model directory is in place.

A job supplies only what differs, as a `TrainingJob`: its data, config, model, task, test
evaluation, config.json fields and extra files. The CLI keeps the parts that concern the user's
files: the job reserves the output (AtomicOutputs) and guards OUTPUT.checkpoint (train.run_folder).
"""

from __future__ import annotations

import json
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable

import torch

from genointerp.errors import InputError
from genointerp.model_folder import save_model_dir
from genointerp.report import Reporter
from genointerp.train.fingerprint import load_state, save_state
from genointerp.train.loop import Distributed, Task, TrainSettings, fit, init_distributed
from genointerp.train.run_folder import RUN, checkpoint_dir


def epoch_table(path: Path, columns: list[str], fresh: bool) -> Callable[[dict], None]:
    """A per-epoch metrics TSV: header written now unless resuming; returns the row appender
    that fit's on_epoch takes (floats to 6 significant digits)."""
    if fresh:
        path.write_text("\t".join(columns) + "\n")

    def append(row: dict) -> None:
        with open(path, "a") as fh:
            fh.write("\t".join(f"{row[c]:.6g}" if isinstance(row[c], float) else str(row[c]) for c in columns) + "\n")

    return append


class TrainingJob(ABC):
    """What one kind of training job adds to the shared sequence. Methods are called in the order
    listed, once each; a job keeps what it needs between them (its data splits, test predictions)."""

    metric_columns: list[str]  # the columns of metrics.tsv: epoch, train_loss, valid_<metric>..., seconds

    def fingerprint(self) -> dict:
        """What defines this run beside the TrainSettings and the architecture (train.loop checks
        those): train.fingerprint.fingerprint(inputs, options) of the input files by the option that
        named them, and the job's data options. --resume refuses to go on when it differs."""
        return {}

    @abstractmethod
    def load(self, dist: Distributed, cache: Path | None, report: Reporter) -> None:
        """Read the data and split it into training, validation and test sets; `cache` is a folder
        for derived data that --resume may reuse (rank 0 only; None on other ranks); `report` is the
        run's reporter, for what reading the data has to say."""

    @abstractmethod
    def model_config(self):
        """The model's config dataclass for these data; ValueError for settings that do not fit
        (reported as 'model settings: ...')."""

    @abstractmethod
    def build(self, config):
        """The model (an nn.Module with `.config`); torch's generator is seeded with --seed before."""

    @abstractmethod
    def describe(self, model) -> str:
        """The log line on the model and the split sizes (the driver appends processes and device)."""

    @abstractmethod
    def task(self, settings: TrainSettings) -> Task:
        """The train.loop Task over the training and validation sets."""

    @abstractmethod
    def test(self, model, settings: TrainSettings) -> dict:
        """Test-set metrics of the best epoch's model (JSON-ready), on every rank."""

    @abstractmethod
    def model_info(self, settings: TrainSettings, history: list[dict], best_row: dict, test_metrics: dict) -> dict:
        """config.json's fields beside the model's own architecture (task, data, training, ...);
        best_row is the history row of the epoch whose weights are kept."""

    def export(self, model):
        """The model the directory keeps (rank 0, on the CPU): `model` itself unless the job trained
        parts that only served training (train-tracks' auxiliary heads)."""
        return model

    def write_extra(self, folder: Path) -> None:
        """The job's own files in the model directory (rank 0), after the shared ones."""


def run_training(job: TrainingJob, settings: TrainSettings, folder: Path, output: str, resume: bool,
                 report: Reporter) -> dict:
    """Train `job`'s model and fill `folder` with its model directory (rank 0); returns the test metrics.

    The run's checkpoint and per-epoch metrics live in checkpoint_dir(output); `resume` goes on
    from its last finished epoch."""
    dist = init_distributed(settings.device)
    ckpt = checkpoint_dir(output)
    check_inputs(job, ckpt, resume, dist.main)
    job.load(dist, ckpt if dist.main else None, report)
    try:
        config = job.model_config()
    except ValueError as exc:
        raise InputError(f"model settings: {exc}") from None
    torch.manual_seed(settings.seed)
    model = job.build(config)
    report.log(f"{job.describe(model)} ({dist.world} process{'es' if dist.world > 1 else ''}, {settings.device})")
    if dist.main:
        ckpt.mkdir(exist_ok=True)
    metrics_tsv = ckpt / "metrics.tsv"
    on_epoch = epoch_table(metrics_tsv, job.metric_columns, fresh=not resume and dist.main)

    task = job.task(settings)
    best, history = fit(model, task, settings, ckpt, resume, dist, on_epoch, report)
    model.load_state_dict(best)
    test_metrics = job.test(model, settings)
    if dist.main:
        best_row = max(history, key=lambda row: row[f"valid_{task.score_name}"])
        model.cpu()
        save_model_dir(folder, job.export(model), job.model_info(settings, history, best_row, test_metrics))
        shutil.copy(metrics_tsv, folder / "metrics.tsv")
        (folder / "test_metrics.json").write_text(json.dumps(test_metrics, indent=2) + "\n")
        job.write_extra(folder)
    return test_metrics


def check_inputs(job: TrainingJob, ckpt: Path, resume: bool, main: bool) -> None:
    """Before any data is read: a resumed run must have the inputs and options it was started with
    (one error line naming what differs; every rank checks), a fresh run records them (rank 0)."""
    current = job.fingerprint()
    if resume:
        load_state(ckpt / RUN, current, "training-run record", "the interrupted run was started with other inputs or "
                   "options", "rerun with those, or with --force instead of --resume to start afresh")
    elif main:
        ckpt.mkdir(exist_ok=True)
        save_state(ckpt / RUN, {"fingerprint": current})
