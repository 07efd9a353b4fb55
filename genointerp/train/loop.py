"""One training loop for every model: autocast, DDP (torchrun), LR schedule, early stopping, resume.

What differs between models (how a batch is built and augmented, the loss, the validation
score that early stopping follows) comes in as a `Task`. Determinism: the epoch's shuffle and
augmentation draws come from a generator seeded with (seed, epoch), dropout from torch's global
generator (on a CUDA device, that device's), whose state is saved with every checkpoint, and CUDA
runs torch's deterministic kernels; so an interrupted run that is resumed ends with the same
weights as an uninterrupted one.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import numpy as np
import torch
import torch.distributed as dist

from genointerp.errors import InputError
from genointerp.interrupts import on_abandon
from genointerp.report import Reporter
from genointerp.runtime import autocast, deterministic_kernels
from genointerp.train.run_folder import CHECKPOINT


@dataclass
class TrainSettings:
    epochs: int = 25
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-6
    patience: int = 5  # epochs without a better validation score before stopping
    seed: int = 1
    rc_augment: bool = False
    device: str = "cpu"
    precision: str = "32"
    schedule: str = "constant"  # or "cosine": cosine annealing of the LR to 0 over `epochs`
    shift_augment: int = 0  # track models: random shifts of up to this many bp
    grad_clip: float = 0.0  # > 0: clip the gradient norm to this (one rare huge target must not undo training)


class Task(Protocol):
    """What the loop needs to know about one kind of model and data."""

    score_name: str  # the validation metric early stopping maximises, e.g. "auroc"

    def n_train(self) -> int: ...

    # Optional: begin_epoch(self, epoch: int) -> None, called first in every epoch (fresh training
    # examples for the epoch, e.g. genointerp.viral.training.fresh).

    def augmentation(self, gen: np.random.Generator) -> object:
        """Per-epoch augmentation draws for every training example, from the epoch generator."""

    def batch(self, idx: np.ndarray, aug: object, device: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets of the training examples `idx` (sorted), augmented."""

    def loss(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor: ...

    def validate(self, model) -> dict:
        """Validation metrics (floats), including `loss` and `score_name`."""


@dataclass
class Distributed:
    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_distributed(device: str) -> Distributed:
    """Join a torchrun group when WORLD_SIZE > 1 (gloo on CPU, nccl on CUDA)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Distributed()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    return Distributed(dist.get_rank(), world)


def _scheduler(opt, s: TrainSettings):
    if s.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(s.epochs, 1))
    if s.schedule != "constant":
        raise InputError(f"unknown learning-rate schedule {s.schedule!r} (constant, cosine)")
    return None


def _architecture(model) -> str:
    """The model's config as text (every model here keeps its config dataclass as `.config`)."""
    return repr(getattr(model, "config", type(model).__name__))


@dataclass
class RunState:
    """What carries from one epoch to the next, and through a checkpoint into a resumed run."""

    history: list[dict] = field(default_factory=list)  # one metrics row per finished epoch
    best_score: float = -math.inf  # the best validation score so far (-inf: undefined)
    best_state: dict | None = None  # the weights that reached it (CPU tensors)
    stale: int = 0  # epochs since the score last improved
    next_epoch: int = 0  # 0-based index of the epoch to run next


def fit(model, task: Task, s: TrainSettings, ckpt_dir: Path, resume: bool, dist_info: Distributed,
        on_epoch: Callable[[dict], None], report: Reporter) -> tuple[dict, list[dict]]:
    """Train with early stopping on the task's validation score; returns (best state_dict, per-epoch history).

    Checkpoints go to ckpt_dir/last.pt after every epoch (rank 0).
    """
    device = s.device
    model.to(device)
    net = model
    if dist_info.world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[int(device.split(":")[1])] if ":" in device else None)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    sched = _scheduler(opt, s)
    ckpt = ckpt_dir / CHECKPOINT
    if resume:
        run = resume_state(ckpt, model, opt, sched, s)
        report.log(f"resuming after epoch {run.next_epoch} (best validation {task.score_name} {run.best_score:.4f})")
    else:
        torch.manual_seed(s.seed)
        run = RunState()
    with deterministic_kernels(device):
        for epoch in range(run.next_epoch, s.epochs):
            if run.stale >= s.patience:
                break
            t0 = time.perf_counter()
            train_loss = train_epoch(net, model, task, opt, s, dist_info, epoch, report.progress)
            if sched is not None:
                sched.step()
            row = end_epoch(model, task, run, epoch, train_loss, t0, report.log)
            if dist_info.main:
                on_epoch(row)
                save_checkpoint(ckpt, model, opt, sched, run, epoch, s)
    if run.best_state is None:
        raise InputError("no epoch was trained (all epochs already done?)")
    return run.best_state, run.history


def resume_state(ckpt: Path, model, opt, sched, s: TrainSettings) -> RunState:
    """Load an interrupted run's checkpoint into the model, optimiser, LR schedule and torch's RNG,
    after checking it was run with these settings and this architecture; returns where it stopped."""
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    if state["settings"] != asdict(s):
        raise InputError(f"{ckpt}: the interrupted run used other settings; rerun without --resume")
    if state.get("architecture", _architecture(model)) != _architecture(model):
        raise InputError(f"{ckpt}: the interrupted run trained another architecture (model options such as "
                         "--d-model or --heads differ); rerun with its options, or without --resume")
    try:
        model.load_state_dict(state["model"])
    except RuntimeError:  # checkpoints written before the architecture was recorded
        raise InputError(f"{ckpt}: the interrupted run's weights do not fit this architecture (model options "
                         "differ); rerun with its options, or without --resume") from None
    opt.load_state_dict(state["optimizer"])
    if sched is not None:
        sched.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    if s.device.startswith("cuda") and state.get("cuda_rng") is not None:  # dropout's draws on the GPU
        torch.cuda.set_rng_state(state["cuda_rng"], torch.device(s.device))
    return RunState(state["history"], state["best_score"], state["best_model"], state["stale"], state["epoch"] + 1)


def train_epoch(net, model, task: Task, opt, s: TrainSettings, dist_info: Distributed, epoch: int,
                progress: Callable) -> float:
    """One pass over this rank's share of the training examples, in the order drawn from (seed, epoch);
    returns the mean training loss over every rank's examples."""
    device = s.device
    if hasattr(task, "begin_epoch"):
        task.begin_epoch(epoch)
    n = task.n_train()
    net.train()
    gen = np.random.default_rng([s.seed, epoch])
    order = gen.permutation(n)[dist_info.rank :: dist_info.world][: n // dist_info.world]
    aug = task.augmentation(gen)
    total, seen = 0.0, 0
    with progress(f"epoch {epoch + 1}/{s.epochs}", len(order)) as advance:
        for a in range(0, len(order), s.batch_size):
            idx = np.sort(order[a : a + s.batch_size])  # sorted: sequential memmap reads
            xb, yb = task.batch(idx, aug, device)
            with autocast(device, s.precision):
                loss = task.loss(net(xb).float(), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if s.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
            opt.step()
            total += float(loss.detach()) * len(idx)
            seen += len(idx)
            advance(len(idx))
    if dist_info.world > 1:  # every rank's reads count in the epoch's training loss, not rank 0's alone
        sums = torch.tensor([total, float(seen)], dtype=torch.float64, device=device)
        dist.all_reduce(sums)
        total, seen = float(sums[0]), int(sums[1])
    return total / max(seen, 1)


def end_epoch(model, task: Task, run: RunState, epoch: int, train_loss: float, t0: float,
              log: Callable[[str], None]) -> dict:
    """Validate, append the epoch's metrics row to run.history (returned), keep the weights if the
    validation score improved, and log the epoch's line."""
    score_key = f"valid_{task.score_name}"
    m = task.validate(model)
    row = {"epoch": epoch + 1, "train_loss": train_loss, **{f"valid_{k}": v for k, v in m.items()},
           "seconds": time.perf_counter() - t0}
    run.history.append(row)
    # an undefined score (NaN: e.g. Pearson r of tracks with no signal in the validation
    # windows) ranks below every number, but the first epoch still gives a model to keep
    score = row[score_key] if math.isfinite(row[score_key]) else -math.inf
    improved = run.best_state is None or score > run.best_score
    if improved:
        run.best_score, run.stale = score, 0
        run.best_state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    else:
        run.stale += 1
    log(f"epoch {epoch + 1}: train loss {row['train_loss']:.4f}, valid loss {m['loss']:.4f}, "
        f"{task.score_name} {row[score_key]:.4f}{' *' if improved else ''} ({row['seconds']:.0f} s)")
    return row


def save_checkpoint(ckpt: Path, model, opt, sched, run: RunState, epoch: int, s: TrainSettings) -> None:
    """Replace ckpt with the state after `epoch` (0-based): what resume_state needs to go on as if
    never interrupted (weights, optimiser, schedule, torch's RNG and on CUDA the device's, history,
    best weights, settings). Under DDP every rank's generators hold rank 0's state: each is seeded
    alike and draws alike per batch."""
    tmp = ckpt.with_suffix(".tmp")
    cuda_rng = torch.cuda.get_rng_state(torch.device(s.device)) if s.device.startswith("cuda") else None
    try:
        with on_abandon(lambda: tmp.unlink(missing_ok=True)):  # a run ended from the signal watchdog
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "rng": torch.get_rng_state(),
                        "cuda_rng": cuda_rng, "scheduler": sched.state_dict() if sched is not None else None,
                        "epoch": epoch, "history": run.history, "best_score": run.best_score,
                        "best_model": run.best_state, "stale": run.stale, "settings": asdict(s),
                        "architecture": _architecture(model)}, tmp)
    except BaseException:  # an interrupted save must not be left beside the last good one
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, ckpt)
