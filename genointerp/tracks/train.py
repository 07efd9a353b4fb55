"""The train-tracks job: reference + target tracks (or a Basenji TFRecord set) in, model directory out."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.tracks.data import SPLITS, SplitRule, WindowGeometry

METRIC_COLUMNS = ["epoch", "train_loss", "valid_loss", "valid_pearson", "seconds"]


@dataclass
class TrackTrainRequest:
    fasta: str | None = None
    targets: str | None = None
    regions: str | None = None  # BED of training regions; default: every chromosome in `chroms`
    chroms: list[str] = field(default_factory=list)
    valid_chroms: list[str] = field(default_factory=list)
    test_chroms: list[str] = field(default_factory=list)
    valid_regions: str | None = None
    test_regions: str | None = None
    basenji: str | None = None  # a Basenji/Enformer TFRecord data set folder instead of fasta + targets
    arch: str = "swin1d"
    width: int = 64
    dropout: float = 0.1
    patch: int = 1  # bp per token after the stem
    seq_len: int = 4096
    bin_size: int = 128
    target_bins: int = 16
    stat: str = "mean"
    clip: float | None = 32.0  # soft-clip targets above this (Basenji's clip_soft); None: as measured
    max_n_fraction: float = 0.5


def checkpoint_dir(output: str) -> Path:
    return Path(f"{output}.checkpoint")


def _group_order(specs) -> list:
    """Tracks regrouped so each group is contiguous (one output head per group), order otherwise kept."""
    groups = list(dict.fromkeys(s.group for s in specs))
    return [s for g in groups for s in specs if s.group == g]


def load_genome_data(req: TrackTrainRequest, cache: Path | None, log, warn):
    """(windows, split int8 (W,), track specs, reference description, split rule)."""
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions, whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import assign_splits, build_windows, describe_split

    if not req.fasta or not req.targets:
        raise InputError("give --fasta and --targets (or --basenji DIR)")
    g = WindowGeometry(req.seq_len, req.bin_size, req.target_bins)
    g.check()
    ref = Reference(req.fasta, warn)
    specs = _group_order(read_targets(req.targets))
    if req.regions:
        regions = read_regions(req.regions, ref, warn)
    else:
        regions = whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms] or None)
    held = {name: tuple(ref.resolve(c, f"--{name.replace('_', '-')}") for c in getattr(req, name))
            for name in ("valid_chroms", "test_chroms")}
    rule = SplitRule(**held,
                     valid_regions=tuple(read_regions(req.valid_regions, ref, warn)) if req.valid_regions else (),
                     test_regions=tuple(read_regions(req.test_regions, ref, warn)) if req.test_regions else ())
    # held-out chromosomes and regions are tiled too, whether or not --regions covers them
    known = {r.chrom for r in regions}
    regions += whole_chromosomes(ref, [c for c in held["valid_chroms"] + held["test_chroms"] if c not in known])
    regions += list(rule.valid_regions) + list(rule.test_regions)
    windows = build_windows(ref, specs, regions, g, req.stat, cache, req.max_n_fraction, log, warn, req.clip)
    split = assign_splits(windows, rule)
    log(describe_split(windows, split))
    reference = {"path": str(Path(req.fasta).resolve()), "chroms": {c: ref.lengths[c] for c in ref.names}}
    return windows, split, specs, reference, rule


def load_basenji_data(folder: str, log):
    """(train, valid, test) array window sources and track specs from a Basenji TFRecord set, the
    target columns regrouped like the specs."""
    from genointerp.io.tfrecord import read_statistics
    from genointerp.tracks.data import basenji_tracks, basenji_windows

    specs = basenji_tracks(folder, read_statistics(folder)["num_targets"])
    ordered = _group_order(specs)
    columns = [specs.index(s) for s in ordered]
    sources = []
    for split in SPLITS:
        src, ds = basenji_windows(folder, split, columns)
        sources.append(src)
        log(f"{folder}: {len(src):,} {split} sequences of {ds.seq_length:,} bp, {ds.num_targets} targets")
    return sources, WindowGeometry(ds.seq_length, ds.pool_width, ds.target_length), ordered


def run(req: TrackTrainRequest, settings, folder: Path, output: str, resume: bool, log: Callable[[str], None],
        warn: Callable[[str], None], progress: Callable) -> dict:
    """Train and fill `folder` (rank 0). Returns the test metrics."""
    import torch

    from genointerp.checkpoint import build_model, save_model_dir
    from genointerp.models.track_configs import default_track_config
    from genointerp.tracks.pearson import group_means, write_evaluation_tsv
    from genointerp.train.loop import epoch_table, fit, init_distributed
    from genointerp.tracks.task import TrackTask, evaluate

    dist = init_distributed(settings.device)
    ckpt = checkpoint_dir(output)
    if req.basenji:
        (train, valid, test), g, specs = load_basenji_data(req.basenji, log)
        data_info = {"basenji": str(Path(req.basenji).resolve())}
    else:
        windows, split, specs, reference, rule = load_genome_data(req, ckpt if dist.main else None, log, warn)
        g = windows.g
        train, valid, test = (windows.subset(np.flatnonzero(split == k)) for k in range(3))
        data_info = {"fasta": reference["path"], "targets": str(Path(req.targets).resolve()),
                     "regions": req.regions, "split": rule.describe(), "stat": req.stat}
    for name, src in zip(SPLITS, (train, valid, test)):
        if len(src) == 0:
            raise InputError(f"no {name} windows: check the held-out chromosomes/regions and --regions")
    groups = [s.group for s in specs]
    sizes = tuple(groups.count(grp) for grp in dict.fromkeys(groups))
    stages = (g.bin_size // req.patch).bit_length() - 1
    if req.patch * 2**stages != g.bin_size:
        raise InputError(f"--patch {req.patch}: bin size {g.bin_size} is not the patch times a power of 2")
    try:
        config = default_track_config(req.arch, g.seq_len, g.bin_size, g.target_bins, len(specs), sizes, req.width,
                                      dropout=req.dropout, max_stages=stages)
    except ValueError as exc:
        raise InputError(f"model settings: {exc}") from None
    torch.manual_seed(settings.seed)
    model = build_model(config.to_dict())
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{req.arch}: {n_params:,} parameters; {len(specs)} tracks in {len(sizes)} group(s); windows of "
        f"{g.seq_len:,} bp -> {g.target_bins} x {g.bin_size} bp bins; train {len(train):,}, valid {len(valid):,}, "
        f"test {len(test):,} ({dist.world} process{'es' if dist.world > 1 else ''}, {settings.device})")
    metrics_tsv = ckpt / "metrics.tsv"
    on_epoch = epoch_table(metrics_tsv, METRIC_COLUMNS, fresh=not resume and dist.main)

    task = TrackTask(train, valid, settings.rc_augment, settings.shift_augment, settings.device, settings.precision)
    best, history = fit(model, task, settings, ckpt, resume, dist, log, progress, on_epoch)
    model.load_state_dict(best)
    r, loss = evaluate(model, test, settings.device, settings.precision)
    by_group = group_means(r, groups)
    test_metrics = {"pearson_mean": float(np.nanmean(r)), "pearson_by_group": by_group, "poisson_loss": loss,
                    "n_windows": len(test)}
    best_row = max(history, key=lambda row: row["valid_pearson"])
    if dist.main:
        model.cpu()
        save_model_dir(folder, model, {
            "task": "track prediction",
            "tracks": [{"id": s.id, "group": s.group, "description": s.description} for s in specs],
            "window": {"seq_len": g.seq_len, "bin_size": g.bin_size, "target_bins": g.target_bins,
                       "stat": req.stat, "clip": None if req.basenji else req.clip},
            "reference": {"chroms": reference["chroms"]} if not req.basenji else None,
            "training": {**asdict(settings), "arch": req.arch, "width": req.width, "data": data_info,
                         "windows": {"train": len(train), "valid": len(valid), "test": len(test)},
                         "epochs_run": len(history), "best_epoch": int(best_row["epoch"]),
                         "valid_pearson": float(best_row["valid_pearson"])},
            "test_metrics": test_metrics,
        })
        shutil.copy(metrics_tsv, folder / "metrics.tsv")
        write_evaluation_tsv(folder / "test_pearson.tsv", [s.id for s in specs], groups, r)
        (folder / "test_metrics.json").write_text(json.dumps(test_metrics, indent=2) + "\n")
    return test_metrics


def finish(output: str) -> None:
    """After the model directory is in place: the checkpoint (and its target cache) has served its purpose."""
    shutil.rmtree(checkpoint_dir(output), ignore_errors=True)
