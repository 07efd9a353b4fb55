"""The evaluate-tracks job: Pearson r per track of one or two track models against measured tracks
over the windows that tile a region set (the paper's metric), plus the paper's figures."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.report import Reporter


@dataclass
class EvaluateRequest:
    models: list[str | None]  # one or two model directories (None = built-in)
    fasta: str | None = None
    targets: str | None = None
    regions: str | None = None
    chroms: list[str] | None = None
    basenji: str | None = None
    basenji_split: str = "test"
    stat: str | None = None  # default: the model's own bin statistic
    max_n_fraction: float = 0.5
    batch_size: int = 8
    device: str = "cpu"
    precision: str = "32"


def match_tracks(config: dict, specs: list, source: str) -> list:
    """The target specs in the model's track order; every model track must be there (by id)."""
    by_id = {s.id: s for s in specs}
    ids = [t["id"] for t in config["tracks"]]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise InputError(f"{source}: no row for the model's track(s) {', '.join(missing[:3])}"
                         f"{' ...' if len(missing) > 3 else ''} ({len(missing)} of {len(ids)} missing)")
    return [by_id[i] for i in ids]


def _genome_windows(req: EvaluateRequest, config: dict, log, warn):
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions, whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import WindowGeometry, build_windows

    if not req.fasta or not req.targets:
        raise InputError("give --fasta and --targets (or --basenji DIR)")
    if not req.regions and not req.chroms:
        raise InputError("give the regions to evaluate on: --regions BED or --chroms (held out of training)")
    ref = Reference(req.fasta, warn)
    specs = match_tracks(config, read_targets(req.targets), req.targets)
    regions = (read_regions(req.regions, ref, warn) if req.regions
               else whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms]))
    w = config["window"]
    g = WindowGeometry(w["seq_len"], w["bin_size"], w["target_bins"])
    return build_windows(ref, specs, regions, g, req.stat or w.get("stat", "mean"), None, req.max_n_fraction, log, warn,
                         w.get("clip"))


def _basenji_windows(req: EvaluateRequest, config: dict):
    """The split's records with their target columns in the model's track order (train-tracks
    regroups a Basenji set's targets by group, so column i of the set need not be track i)."""
    from genointerp.io.tfrecord import read_statistics
    from genointerp.tracks.data import basenji_tracks, basenji_windows

    stats, w = read_statistics(req.basenji), config["window"]
    if (stats["seq_length"], stats["target_length"]) != (w["seq_len"], w["target_bins"]):
        raise InputError(f"{req.basenji}: sequences of {stats['seq_length']} bp with {stats['target_length']} target "
                         f"bins, but the model takes {w['seq_len']} bp -> {w['target_bins']} bins")
    in_set = basenji_tracks(req.basenji, stats["num_targets"])
    columns = [in_set.index(s) for s in match_tracks(config, in_set, req.basenji)]
    src, _ = basenji_windows(req.basenji, req.basenji_split, columns)
    return src


def run(req: EvaluateRequest, report: Reporter) -> dict:
    """Returns {"tracks", "groups", "pearson": [r (T,) per model], "labels", "windows": [source per model],
    "models": [(model, config) per model]}."""
    from genointerp.tracks.predict import load_track_model
    from genointerp.tracks.task import evaluate

    results, labels, sources, models, tracks, loaded = [], [], [], [], None, {}
    for path in req.models:
        model, config = load_track_model(path)
        model.to(req.device)
        ids = [t["id"] for t in config["tracks"]]
        if tracks is None:
            tracks, groups = ids, [t["group"] for t in config["tracks"]]
        elif ids != tracks:
            raise InputError(f"{path}: its tracks differ from the first model's; the two models must predict the same tracks")
        # two models with the same window geometry are scored on one set of windows, read once
        key = json.dumps(config["window"], sort_keys=True)
        if key not in loaded:
            loaded[key] = (_basenji_windows(req, config) if req.basenji
                           else _genome_windows(req, config, report.log, report.warn))
        source = loaded[key]
        r, _ = evaluate(model, source, req.device, req.precision, req.batch_size)
        # the folder name, not the path: labels go into plot titles and legends
        label = config["model"]["architecture"] + (" (built-in)" if path is None else f" ({Path(path).name})")
        report.log(f"{label}: mean Pearson r {np.nanmean(r):.4f} over {len(source):,} windows")
        results.append(r)
        labels.append(label)
        sources.append(source)
        models.append((model, config))
    return {"tracks": tracks, "groups": groups, "pearson": results, "labels": labels, "windows": sources,
            "models": models}


def region_truth_and_prediction(model, config: dict, req: EvaluateRequest, chrom: str, start: int, end: int,
                                warn) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """For the Figure-3 plot: (bin starts (n,), predicted (n, T), measured (n, T), track ids) over a
    region, predicted as predict-tracks does (overlapping windows, stitched)."""
    from genointerp.io.reference import Reference
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.predict import predict_run
    from genointerp.tracks.data import load_chromosome_targets, soft_clip
    from genointerp.tracks.tiling import plan_windows

    ref = Reference(req.fasta, warn)
    chrom = ref.resolve(chrom, "--plot-region")
    if not 0 <= start < end <= ref.lengths[chrom]:
        raise InputError(f"--plot-region {chrom}:{start}-{end} is off {chrom} (0-{ref.lengths[chrom]:,})")
    w = config["window"]
    specs = match_tracks(config, read_targets(req.targets), req.targets)
    starts, run_start, n_bins = plan_windows(start, end, ref.lengths[chrom], w["seq_len"], w["target_bins"],
                                             w["bin_size"], w["target_bins"] // 4)
    run = predict_run(model, w, ref, chrom, starts, run_start, n_bins, req.batch_size, req.device, req.precision,
                      False)
    truth = load_chromosome_targets(specs, ref, chrom, w["bin_size"], w.get("stat", "mean"), None, warn)
    b0 = run_start // w["bin_size"]
    return run.bin_starts(), run.values, soft_clip(truth[b0 : b0 + n_bins], w.get("clip")), [s.id for s in specs]
