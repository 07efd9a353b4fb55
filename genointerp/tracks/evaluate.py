"""The evaluate-tracks job: Pearson r per track of one or two track models (and the cpg/gc controls)
against measured tracks over the windows that tile a region set (the paper's metric), written as
one TSV, plus the paper's figures (Figure 2: r of model 1 vs model 2; Figure 3: a region)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.reference import Reference
from genointerp.io.regions import parse_region, read_regions, whole_chromosomes
from genointerp.io.tfrecord import read_statistics
from genointerp.io.tracks import read_targets, tracks_named_in
from genointerp.report import Reporter
from genointerp import options
from genointerp.options import opt
from genointerp.runtime import job_device, use_threads
from genointerp.tracks.controls import CONTROLS, ControlConfig, ControlModel, fit_controls
from genointerp.tracks.data import (SplitRule, WindowGeometry, assign_splits, basenji_tracks, basenji_windows,
                                    build_windows, load_chromosome_targets, soft_clip)
from genointerp.tracks.inference import load_track_model, predict_run
from genointerp.tracks.pearson import plot_pearson_scatter, plot_region, write_evaluation_tsv
from genointerp.tracks.task import evaluate
from genointerp.tracks.tiling import parse_shifts, plan_windows, rc_average_option, shifts_option

FIT_HINT = ("the cpg/gc controls are fitted per track on training data: give --fit-regions BED or --fit-chroms "
            "(the model's training regions)")
PLOT_TRACKS = 6  # Figure 3 shows the tracks with the most measured signal in the region


@dataclass
class EvaluateTracksRequest:
    """evaluate-tracks: the fields are its options (stat and max_n_fraction: library settings only)."""

    output: str = opt(
        ..., "-o", "--output",
        help='TSV: track, group, pearson per model; then group and overall means.')
    models: list[str] = opt(
        [], "-m", "--model",
        help=('Model directory; give two to compare (default: the built-in model). `cpg` or `gc` names a control '
              'that needs no training (a folder of that name: ./cpg).'))
    fasta: str | None = options.reference(required=False)
    targets: str | None = opt(
        None, "--targets",
        help='Tracks TSV holding every track the model predicts (matched by id).')
    regions: str | None = opt(None, "--regions", help='BED of held-out regions to evaluate on.')
    chroms: list[str] = opt(
        [], "--chroms", cli_type=str | None, parse=options.comma_list,
        help='Held-out chromosomes to evaluate on (instead of --regions).')
    basenji: str | None = opt(None, "--basenji", help='Evaluate on a Basenji TFRecord set instead (see --split).')
    split: str = opt("test", "--split", help='Basenji split to evaluate on.')  # the Basenji split evaluated
    scatter: str | None = opt(None, "--scatter", help='PNG: per-track Pearson r of model 1 vs model 2 (needs two -m).')
    plot_region: str | None = opt(
        None, "--plot-region",
        help='chr:start-end to plot prediction vs truth (with --plot).')  # chr:start-end of Figure 3 ...
    plot: str | None = opt(None, "--plot", help='PNG of --plot-region (first model).')  # ... and its PNG
    controls: bool = opt(
        False, "--controls",
        help=('Also score the cpg and gc controls (columns pearson_cpg, pearson_gc): CpG count or GC fraction per '
              'bin, smoothed over 9 bins, fitted per track by a linear map on --fit-regions/--fit-chroms.'))
    fit_regions: str | None = opt(None, "--fit-regions", help='BED of training regions the controls are fitted on.')
    fit_chroms: list[str] = opt(
        [], "--fit-chroms", cli_type=str | None, parse=options.comma_list,
        help='Training chromosomes the controls are fitted on (with --basenji: its train split).')  # ... or training chromosomes; a Basenji set's train split
    rc_average: bool = rc_average_option()
    shifts: str = shifts_option()
    batch_size: int = options.batch_size(8)
    device: str = options.device()
    precision: str = options.precision()
    threads: int = options.threads()
    stat: str | None = None  # default: the model's own bin statistic
    max_n_fraction: float = 0.5

    def check(self) -> None:
        if len(self.models) > 2:
            raise UsageError("--model: give at most two models")
        parse_shifts(self.shifts)
        if self.scatter and len(self.models) != 2:
            raise UsageError("--scatter: --scatter compares two models: give -m twice")
        if not self.basenji and not (self.fasta and self.targets):
            raise UsageError("--reference: give -R/--reference and --targets (or --basenji DIR)")
        if not self.basenji and not (self.regions or self.chroms):
            raise UsageError("--regions: give the regions to evaluate on: --regions BED or --chroms (held out of "
                             "training)")
        if self.fit_regions and self.fit_chroms:
            raise UsageError("--fit-regions: give --fit-regions or --fit-chroms, not both")
        if any(name in CONTROLS for name in self.names()) and not (self.basenji or self.fit_regions or self.fit_chroms):
            raise UsageError(f"--fit-regions: {FIT_HINT}")
        if bool(self.plot_region) != bool(self.plot):
            raise UsageError("--plot: give --plot-region and --plot together")
        if self.plot and not (self.fasta and self.targets):
            raise UsageError("--plot: --plot needs -R/--reference and --targets")
        if self.plot_region:
            parse_region(self.plot_region, "--plot-region")

    def inputs(self) -> list[str | None]:
        return [*(m for m in self.models if m not in CONTROLS), self.fasta, self.targets, self.regions, self.basenji,
                self.fit_regions, *tracks_named_in(self.targets)]

    def names(self) -> list[str | None]:
        """What is scored, in column order: the models (None: the built-in one), then with
        `controls` every control not among them."""
        models = list(self.models) or [None]
        return models + [c for c in CONTROLS if self.controls and c not in models]


def run(req: EvaluateTracksRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write the TSV (and the figures asked for); returns {label: mean Pearson r} per model."""
    use_threads(req.threads)  # first: torch's thread pool takes its settings when it starts
    device = job_device(req.device, req.precision, report.warn)
    tsv = outputs.file(req.output)
    fig2 = outputs.file(req.scatter) if req.scatter else None
    fig3 = outputs.file(req.plot) if req.plot else None
    res = score(req, device, report)
    # the i-th model is column pearson_i (the first: pearson); controls added by `controls` are pearson_<name>
    extra = {(f"pearson_{i + 1}" if i < len(req.models) else f"pearson_{name}"): r
             for i, (name, r) in enumerate(zip(res["names"][1:], res["pearson"][1:]), start=1)}
    write_evaluation_tsv(tsv, res["tracks"], res["groups"], res["pearson"][0], extra or None)
    if fig2:
        plot_pearson_scatter(res["pearson"][0], res["pearson"][1], res["groups"], res["labels"][0], res["labels"][1],
                             fig2)
    if fig3:
        where = parse_region(req.plot_region, "--plot-region")
        bins, pred, truth, ids = region_truth_and_prediction(*res["models"][0], req, device, *where, report.warn)
        top = np.argsort(-truth.sum(axis=0), kind="stable")[:PLOT_TRACKS]
        plot_region(pred[:, top], truth[:, top], bins, where[0], [ids[i] for i in top], fig3)
    return {label: float(np.nanmean(r)) for label, r in zip(res["labels"], res["pearson"])}


def match_tracks(config: dict, specs: list, source: str) -> list:
    """The target specs in the model's track order; every model track must be there (by id)."""
    by_id = {s.id: s for s in specs}
    ids = [t["id"] for t in config["tracks"]]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise InputError(f"{source}: no row for the model's track(s) {', '.join(missing[:3])}"
                         f"{' ...' if len(missing) > 3 else ''} ({len(missing)} of {len(ids)} missing)")
    return [by_id[i] for i in ids]


def _genome_inputs(req: EvaluateTracksRequest, config: dict, warn):
    """(reference, target specs in the model's track order, evaluated regions) of a genome evaluation."""
    ref = Reference(req.fasta, warn)
    specs = match_tracks(config, read_targets(req.targets), req.targets)
    regions = (read_regions(req.regions, ref, warn) if req.regions
               else whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms]))
    return ref, specs, regions


def _build(req: EvaluateTracksRequest, config: dict, ref, specs, regions, log, warn):
    w = config["window"]
    g = WindowGeometry(w["seq_len"], w["bin_size"], w["target_bins"])
    return build_windows(ref, specs, regions, g, req.stat or w.get("stat", "mean"), None, req.max_n_fraction, log,
                         warn, w.get("clip"))


def _genome_windows(req: EvaluateTracksRequest, config: dict, log, warn):
    return _build(req, config, *_genome_inputs(req, config, warn), log, warn)


def _fit_windows(req: EvaluateTracksRequest, config: dict, log, warn):
    """The training windows the controls are fitted on, in the model's geometry: the Basenji set's
    train split, or the windows tiling --fit-regions/--fit-chroms less every window whose sequence
    reaches into an evaluated target span (train-tracks' rule), so no evaluated bin is fitted on."""
    if req.basenji:
        return _basenji_windows(req, config, "train")
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


def _basenji_windows(req: EvaluateTracksRequest, config: dict, split: str | None = None):
    """The split's records with their target columns in the model's track order (train-tracks
    regroups a Basenji set's targets by group, so column i of the set need not be track i)."""
    stats, w = read_statistics(req.basenji), config["window"]
    if (stats["seq_length"], stats["target_length"]) != (w["seq_len"], w["target_bins"]):
        raise InputError(f"{req.basenji}: sequences of {stats['seq_length']} bp with {stats['target_length']} target "
                         f"bins, but the model takes {w['seq_len']} bp -> {w['target_bins']} bins")
    in_set = basenji_tracks(req.basenji, stats["num_targets"])
    columns = [in_set.index(s) for s in match_tracks(config, in_set, req.basenji)]
    src, _ = basenji_windows(req.basenji, split or req.split, columns)
    return src


def _control(kind: str, reference: dict) -> tuple:
    """(unfitted ControlModel, config) predicting the reference model's tracks on its windows."""
    w = reference["window"]
    c = ControlConfig(kind, w["seq_len"], w["bin_size"], w["target_bins"], len(reference["tracks"]))
    return ControlModel(c), {**reference, "model": {"architecture": kind, **vars(c)}, "control": True}


def score(req: EvaluateTracksRequest, device: str, report: Reporter) -> dict:
    """Returns {"tracks", "groups", "pearson": [r (T,) per model], "labels", "windows": [source per model],
    "models": [(model, config) per model], "names": [model path, None or control name per model]}.
    Models are req.names(); a control takes its tracks and windows from the first real model (the
    built-in one when there is none) and is fitted first. Runs on `device` (the job resolves --device)."""
    names = req.names()
    real = {path: load_track_model(path) for path in names if path not in CONTROLS}
    if len(real) < len(names):
        reference = next(iter(real.values()), None) or load_track_model(None)
    results, labels, sources, models, tracks, loaded = [], [], [], [], None, {}
    for path in names:
        if path in CONTROLS:
            model, config = _control(path, reference[1])
        else:
            model, config = real[path]
        model.to(device)
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
        r, _ = evaluate(model, source, device, req.precision, req.batch_size,
                        rc_average=req.rc_average and path not in CONTROLS,
                        shifts=parse_shifts(req.shifts) if path not in CONTROLS else (0,))
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


def region_truth_and_prediction(model, config: dict, req: EvaluateTracksRequest, device: str, chrom: str, start: int,
                                end: int, warn) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """For the Figure-3 plot: (bin starts (n,), predicted (n, T), measured (n, T), track ids) over a
    region, predicted as predict-tracks does (overlapping windows, stitched)."""
    ref = Reference(req.fasta, warn)
    chrom = ref.resolve(chrom, "--plot-region")
    if not 0 <= start < end <= ref.lengths[chrom]:
        raise InputError(f"--plot-region {chrom}:{start}-{end} is off {chrom} (0-{ref.lengths[chrom]:,})")
    w = config["window"]
    specs = match_tracks(config, read_targets(req.targets), req.targets)
    starts, run_start, n_bins = plan_windows(start, end, ref.lengths[chrom], w["seq_len"], w["target_bins"],
                                             w["bin_size"], w["target_bins"] // 4)
    run = predict_run(model, w, ref, chrom, starts, run_start, n_bins, req.batch_size, device, req.precision,
                      False)
    truth = load_chromosome_targets(specs, ref, chrom, w["bin_size"], w.get("stat", "mean"), None, warn)
    b0 = run_start // w["bin_size"]
    return run.bin_starts(), run.values, soft_clip(truth[b0 : b0 + n_bins], w.get("clip")), [s.id for s in specs]
