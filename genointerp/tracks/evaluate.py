"""The evaluate-tracks job: Pearson r per track of one or two track models against measured tracks
over the windows that tile a region set (the paper's metric), plus the paper's figures."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.report import Reporter


@dataclass
class EvaluateRequest:
    models: list[str | None]  # one or two model directories (None = built-in) or control names (cpg, gc)
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
    rc_average: bool = False  # models (not controls) score the mean of both strands' predictions
    controls: list[str] = field(default_factory=list)  # controls scored after the models (tracks.controls)
    fit_regions: str | None = None  # training regions the controls are fitted on (BED) ...
    fit_chroms: list[str] | None = None  # ... or training chromosomes; a Basenji set's train split


def match_tracks(config: dict, specs: list, source: str) -> list:
    """The target specs in the model's track order; every model track must be there (by id)."""
    by_id = {s.id: s for s in specs}
    ids = [t["id"] for t in config["tracks"]]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise InputError(f"{source}: no row for the model's track(s) {', '.join(missing[:3])}"
                         f"{' ...' if len(missing) > 3 else ''} ({len(missing)} of {len(ids)} missing)")
    return [by_id[i] for i in ids]


def _genome_inputs(req: EvaluateRequest, config: dict, warn):
    """(reference, target specs in the model's track order, evaluated regions) of a genome evaluation."""
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions, whole_chromosomes
    from genointerp.io.tracks import read_targets

    if not req.fasta or not req.targets:
        raise InputError("give --fasta and --targets (or --basenji DIR)")
    if not req.regions and not req.chroms:
        raise InputError("give the regions to evaluate on: --regions BED or --chroms (held out of training)")
    ref = Reference(req.fasta, warn)
    specs = match_tracks(config, read_targets(req.targets), req.targets)
    regions = (read_regions(req.regions, ref, warn) if req.regions
               else whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms]))
    return ref, specs, regions


def _build(req: EvaluateRequest, config: dict, ref, specs, regions, log, warn):
    from genointerp.tracks.data import WindowGeometry, build_windows

    w = config["window"]
    g = WindowGeometry(w["seq_len"], w["bin_size"], w["target_bins"])
    return build_windows(ref, specs, regions, g, req.stat or w.get("stat", "mean"), None, req.max_n_fraction, log,
                         warn, w.get("clip"))


def _genome_windows(req: EvaluateRequest, config: dict, log, warn):
    return _build(req, config, *_genome_inputs(req, config, warn), log, warn)


def _fit_windows(req: EvaluateRequest, config: dict, log, warn):
    """The training windows the controls are fitted on, in the model's geometry: the Basenji set's
    train split, or the windows tiling --fit-regions/--fit-chroms less every window whose sequence
    reaches into an evaluated target span (train-tracks' rule), so no evaluated bin is fitted on."""
    from genointerp.io.regions import read_regions, whole_chromosomes
    from genointerp.tracks.data import SplitRule, assign_splits

    if req.basenji:
        return _basenji_windows(req, config, "train")
    if not req.fit_regions and not req.fit_chroms:
        raise InputError(FIT_HINT)
    ref, specs, held = _genome_inputs(req, config, warn)
    regions = (read_regions(req.fit_regions, ref, warn) if req.fit_regions
               else whole_chromosomes(ref, [ref.resolve(c, "--fit-chroms") for c in req.fit_chroms]))
    windows = _build(req, config, ref, specs, regions, lambda m: None, warn)
    keep = assign_splits(windows, SplitRule(test_regions=tuple(held))) == 0
    if not keep.any():
        raise InputError("no windows to fit the controls on: the fit regions lie inside (or within a window of) "
                         "the evaluated regions")
    log(f"controls fitted on {int(keep.sum()):,} training windows ({int((~keep).sum()):,} dropped: they reach "
        "into the evaluated regions)" if not keep.all() else f"controls fitted on {len(keep):,} training windows")
    return windows.subset(np.flatnonzero(keep))


FIT_HINT = ("the cpg/gc controls are fitted per track on training data: give --fit-regions BED or --fit-chroms "
            "(the model's training regions)")


def _basenji_windows(req: EvaluateRequest, config: dict, split: str | None = None):
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
    src, _ = basenji_windows(req.basenji, split or req.basenji_split, columns)
    return src


def _control(kind: str, reference: dict) -> tuple:
    """(unfitted ControlModel, config) predicting the reference model's tracks on its windows."""
    from genointerp.tracks.controls import ControlConfig, ControlModel

    w = reference["window"]
    c = ControlConfig(kind, w["seq_len"], w["bin_size"], w["target_bins"], len(reference["tracks"]))
    return ControlModel(c), {**reference, "model": {"architecture": kind, **vars(c)}, "control": True}


def run(req: EvaluateRequest, report: Reporter) -> dict:
    """Returns {"tracks", "groups", "pearson": [r (T,) per model], "labels", "windows": [source per model],
    "models": [(model, config) per model], "names": [model path, None or control name per model]}.
    Models are req.models, then the req.controls not among them; a control takes its tracks and
    windows from the first real model (the built-in one when there is none) and is fitted first."""
    from genointerp.tracks.controls import CONTROLS, fit_controls
    from genointerp.tracks.predict import load_track_model
    from genointerp.tracks.task import evaluate

    names = list(req.models) + [c for c in req.controls if c not in req.models]
    real = {path: load_track_model(path) for path in names if path not in CONTROLS}
    if len(real) < len(names):
        if not req.basenji and not req.fit_regions and not req.fit_chroms:
            raise InputError(FIT_HINT)
        reference = next(iter(real.values()), None) or load_track_model(None)
    results, labels, sources, models, tracks, loaded = [], [], [], [], None, {}
    for path in names:
        if path in CONTROLS:
            model, config = _control(path, reference[1])
        else:
            model, config = real[path]
        model.to(req.device)
        ids = [t["id"] for t in config["tracks"]]
        if tracks is None:
            tracks, groups = ids, [t["group"] for t in config["tracks"]]
        elif ids != tracks:
            raise InputError(f"{path}: its tracks differ from the first model's; the two models must predict the same tracks")
        # models with the same window geometry are scored on one set of windows, read once
        key = json.dumps(config["window"], sort_keys=True)
        if key not in loaded:
            loaded[key] = (_basenji_windows(req, config) if req.basenji
                           else _genome_windows(req, config, report.log, report.warn))
        source = loaded[key]
        if path in CONTROLS:
            fit_key = "fit " + key
            if fit_key not in loaded:
                loaded[fit_key] = _fit_windows(req, config, report.log, report.warn)
            fit_controls([model], loaded[fit_key])
            label = f"{path} (control)"
        else:
            # the folder name, not the path: labels go into plot titles and legends
            label = config["model"]["architecture"] + (" (built-in)" if path is None else f" ({Path(path).name})")
        r, _ = evaluate(model, source, req.device, req.precision, req.batch_size,
                        rc_average=req.rc_average and path not in CONTROLS)
        report.log(f"{label}: mean Pearson r {np.nanmean(r):.4f} over {len(source):,} windows")
        results.append(r)
        labels.append(label)
        sources.append(source)
        models.append((model, config))
    if "cpg" in names:
        base = np.nanmean(results[names.index("cpg")])
        for path, label, r in zip(names, labels, results):
            if path not in CONTROLS:
                ratio = f" ({np.nanmean(r) / base:.2f}x)" if base > 0 else ""
                report.log(f"{label}: {np.nanmean(r) - base:+.4f} over the cpg control{ratio}")
    return {"tracks": tracks, "groups": groups, "pearson": results, "labels": labels, "windows": sources,
            "models": models, "names": names}


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
