"""The train-tracks job: reference + target tracks (or a Basenji TFRecord set) in, model directory out.

`TrackTrainRequest` holds what defines the data and the model (what --resume fingerprints);
`TrainTracksRequest` adds the training settings and the output: the command's request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.reference import Reference
from genointerp.io.regions import read_regions, whole_chromosomes
from genointerp.io.tfrecord import read_statistics
from genointerp.io.tracks import read_targets, tracks_named_in
from genointerp import options
from genointerp.options import opt
from genointerp.model_folder import build_model
from genointerp.models.swin1d import widen_stem
from genointerp.models.track_configs import (TRACK_ARCHITECTURES, default_dropout, default_patch,
                                             default_track_config)
from genointerp.models.track_heads import add_motif_scan, add_track_groups, drop_track_groups, widen_head
from genointerp.report import Reporter
from genointerp.runtime import Precision, job_device, use_threads
from genointerp.tracks.data import (SPLITS, SplitRule, WindowGeometry, assign_splits, basenji_tracks, basenji_windows,
                                    build_windows, describe_split)
from genointerp.tracks.inference import TRACK_TASK, load_track_model
from genointerp.tracks.motif_readout import fit_motif_readout
from genointerp.tracks.motifs import RELEASE, apply_motif_filters, jaspar_filters, scan_motifs, stem_conv
from genointerp.tracks.pearson import group_means, write_evaluation_tsv
from genointerp.tracks.task import TrackTask, balanced_weights, evaluate, inverse_variance_weights
from genointerp.train.driver import TrainingJob, run_training
from genointerp.train.fingerprint import fingerprint
from genointerp.train.loop import TrainSettings
from genointerp.train.run_folder import check_resume, checkpoint_dir, model_folder

METRIC_COLUMNS = ["epoch", "train_loss", "valid_loss", "valid_pearson", "seconds"]


STATS = ("mean", "sum", "max")  # how a bin summarises its bases' signal (--stat)


@dataclass
class TrackTrainRequest:
    fasta: str | None = options.reference(required=False)
    targets: str | None = opt(
        None, "--targets",
        help='Tracks TSV: id, path (bigWig, bedGraph, narrowPeak/BED), group, description, name.')
    regions: str | None = opt(
        None, "--regions",
        help='BED of regions to train on (default: whole chromosomes, see --chroms).')  # BED of training regions; default: every chromosome in `chroms`
    chroms: list[str] = opt(
        [], "--chroms", cli_type=str | None, parse=options.comma_list,
        help='Comma-separated chromosomes to use (default: all in the FASTA).')
    valid_chroms: list[str] = opt(
        [], "--valid-chroms", cli_type=str | None, parse=options.comma_list,
        help='Chromosomes held out for validation.')
    test_chroms: list[str] = opt(
        [], "--test-chroms", cli_type=str | None, parse=options.comma_list,
        help='Chromosomes held out for testing.')
    valid_regions: str | None = opt(None, "--valid-regions", help='BED of regions held out for validation.')
    test_regions: str | None = opt(
        None, "--test-regions",
        help=('BED of regions held out for testing. Without any held-out option: 80-90 % of each chromosome '
              'validates, 90-100 % tests.'))
    basenji: str | None = opt(
        None, "--basenji",
        help='Train on a Basenji/Enformer TFRecord data set folder instead (statistics.json + tfrecords/).')  # a Basenji/Enformer TFRecord data set folder instead of fasta + targets
    arch: str = opt(
        'swin1d', "--arch", choices=TRACK_ARCHITECTURES,
        help="swin1d (Genomic Interpreter) or a baseline of the paper's Table 1.")
    width: int = opt(
        64, "--width", min=8,
        help='Model width (channels of the first stage); baselines are matched to it.')
    dropout: float | None = opt(
        None, "--dropout", min=0, max=0.9,
        help='Dropout rate inside the model (default: 0 for swin1d, 0.1 for the baselines).')  # None: default_dropout
    patch: int = opt(
        0, "--patch", min=0,
        help=('bp per token after the stem: 1 = single-nucleotide tokens (the paper\'s); 0 = 8 for swin1d (its stem '
              'pooled, as Swin embeds patches: with 1 bp tokens it barely learns and costs ~5x per step), 1 for '
              'the baselines.'))  # bp per token after the stem; 0: models.track_configs.default_patch
    seq_len: int = opt(4096, "--seq-len", min=64, help='bp of DNA per window.')
    bin_size: int = opt(128, "--bin-size", min=1, help='bp per target bin.')
    target_bins: int = opt(16, "--target-bins", min=1, help='Bins predicted at the centre of each window.')
    stat: str = opt('mean', "--stat", choices=STATS, help='How a bin summarises the signal of its bases.')
    clip: float | None = opt(
        32.0, "--clip", min=0, parse=lambda value: value or None,
        help="Soft-clip targets above this: clip + sqrt(excess) (Basenji's); 0 = off.")
    max_n_fraction: float = opt(
        0.5, "--max-n", min=0, max=1,
        help='Skip windows whose target span has more N than this fraction.')
    motif_init: str = opt(
        'none', "--motif-init", choices=('none', 'jaspar', 'jaspar-centred'),
        help=("jaspar: start the stem's filters as JASPAR motifs, the tracked factors' first, then one per TF "
              'family (needs pyjaspar), each firing near its matches; jaspar-centred: the same motifs, mean-centred'
              ' and scaled like random filters.'))
    motif_freeze_epochs: int = opt(
        0, "--motif-freeze-epochs", min=0,
        help='Keep the --motif-init filters fixed for this many first epochs.')
    motif_filters: int = opt(
        0, "--motif-filters", min=0,
        help='How many stem filters --motif-init sets (0: all; the rest keep their random start).')
    init_from: str | None = opt(
        None, "--init-from",
        help=("Fine-tune: start from this track model's weights (its architecture; same tracks and window "
              'geometry).'))
    motif_scan: str = opt(
        'none', "--motif-scan", choices=('none', 'jaspar'),
        help=('jaspar: scan the JASPAR motifs of the factors the track ids name on both strands of each bin and let'
              ' every track read the match scores beside the trunk (needs pyjaspar to train, not to predict). It '
              'teaches long, rare motifs (REST, CEBPB) that a small model does not learn from one chromosome. Its '
              'read-out starts from a least-squares fit of what the trunk leaves unexplained on the training '
              'windows. With --init-from: add it to that model.'))
    stem_filters: int = opt(
        0, "--stem-filters", min=0,
        help=("swin1d: motif detectors in the stem's convolution, pooled and projected to width/2 per token (0: "
              'width/2 of them). More lets the first layer hold more motifs; with 48 the stem is about a third of '
              "the cost per bp. With --init-from: widen that model's stem to this many (it starts predicting as "
              'before).'))
    head_width: int = opt(
        0, "--head-width", min=0,
        help=('Hidden units of the output head, read by every track (0: twice the final width). It runs once per '
              "bin, so it costs little per bp. With --init-from: widen that model's head to this many (it starts "
              'predicting as before).'))
    track_weights: str = opt(
        'none', "--track-weights", choices=('none', 'balanced'),
        help=('none: every bin of every track weighs the same in the Poisson loss, so high-signal tracks steer '
              "training; balanced: each track's loss is rescaled as if its mean training signal were the tracks' "
              'common mean.'))
    # tracks trained alongside as auxiliary tasks (own heads, shared trunk), dropped from the saved
    # model; validation and test r are over `targets` only
    aux_targets: str | None = opt(
        None, "--aux-targets",
        help=('Tracks TSV like --targets, trained alongside as auxiliary tasks (e.g. relaxed peak sets beside '
              'conservative ones): they share the trunk, get heads of their own, and are dropped from the saved '
              'model; validation and test r are over --targets only.'))
    loss: str = opt(
        'poisson', "--loss", choices=('poisson', 'mse'),
        help=("poisson: Poisson NLL of the rates (Enformer's); mse: squared error over each track's training "
              "variance, which weighs the peaks as the per-track Pearson r does (metrics.tsv's valid_loss stays the"
              ' Poisson NLL, comparable between runs).'))

    def check(self) -> None:
        """The rules between the data and model options (UsageError naming the option)."""
        if self.basenji and (self.fasta or self.targets):
            raise UsageError("--basenji: give either --basenji or -R/--reference and --targets")
        if not self.basenji and not (self.fasta and self.targets):
            raise UsageError("--reference: give -R/--reference and --targets (or --basenji DIR)")
        if self.loss == "mse" and self.track_weights != "none":
            raise UsageError("--track-weights: --loss mse weighs each track by its training variance already")
        if self.basenji and self.motif_scan != "none":
            raise UsageError("--motif-scan: the motif scan names its motifs from track ids: give -R/--reference and "
                             "--targets, not --basenji")
        if self.basenji and self.aux_targets:
            raise UsageError("--aux-targets: auxiliary tracks need -R/--reference and --targets, not --basenji")
        if self.init_from and self.motif_init != "none":
            raise UsageError("--init-from: --init-from starts from trained filters: leave out --motif-init")
        if self.motif_freeze_epochs and self.motif_init == "none":
            raise UsageError("--motif-freeze-epochs: freezes the --motif-init filters: give --motif-init jaspar")
        if self.motif_filters and self.motif_init == "none":
            raise UsageError("--motif-filters: sets how many --motif-init filters: give --motif-init jaspar")



@dataclass
class TrainTracksRequest(TrackTrainRequest):
    """train-tracks: the fields are its options (clip None: --clip 0, off; max_n_fraction: --max-n)."""

    output: str = opt(
        "", "-o", "--output", cli_default=...,
        help='Model directory to write (model.safetensors, config.json, metrics).')  # model directory; OUTPUT.checkpoint/ beside it holds the run until it is in place
    epochs: int = opt(20, "--epochs", min=1)
    patience: int = opt(
        5, "--patience", min=1,
        help='Stop after this many epochs without a better validation Pearson r.')
    batch_size: int = options.batch_size(16)
    lr: float = opt(3e-4, "--lr", min=0, help='Adam learning rate (the paper: 3e-4), cosine-annealed to 0.')
    weight_decay: float = opt(0.0, "--weight-decay", min=0)
    rc_augment: bool = opt(
        True, "--rc-augment/--no-rc-augment",
        help='Reverse-complement half of the windows each epoch.')
    shift: int = opt(3, "--shift", min=0, help='Shift each training window by up to this many bp (augmentation).')
    grad_clip: float = opt(1.0, "--grad-clip", min=0, help='Clip the gradient norm to this (0 = off).')
    device: str = options.device()
    precision: str = options.precision()
    threads: int = options.threads()
    seed: int = options.seed()
    resume: bool = opt(
        False, "--resume",
        help=('Continue an interrupted run from OUTPUT.checkpoint/, with the inputs (by content) and options it was'
              ' started with; others are refused.'))

    def check(self) -> None:
        if not self.output:
            raise UsageError("--output: give the model directory to write")
        super().check()
        check_resume(checkpoint_dir(self.output), self.resume)

    def inputs(self) -> list[str | None]:
        return [self.fasta, self.targets, self.regions, self.valid_regions, self.test_regions, self.basenji,
                self.init_from, *tracks_named_in(self.targets), *tracks_named_in(self.aux_targets)]

    def settings(self, device: str) -> TrainSettings:
        """The loop's settings, on `device` (resolved from --device)."""
        return TrainSettings(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, weight_decay=self.weight_decay,
                             patience=self.patience, seed=self.seed, rc_augment=self.rc_augment, device=device,
                             precision=Precision(self.precision).value, schedule="cosine", shift_augment=self.shift,
                             grad_clip=self.grad_clip)


def run(req: TrainTracksRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Train and fill the model directory req.output (rank 0); returns the test metrics
    (pearson_mean, pearson_by_group, poisson_loss, n_windows)."""
    use_threads(req.threads)  # first: torch's thread pool takes its settings when it starts
    settings = req.settings(job_device(req.device, req.precision, report.warn))
    with model_folder(outputs, req.output, req.resume, report.warn) as folder:
        return run_training(TrackTraining(req, req.resume), settings, folder, req.output, req.resume, report)


def _group_order(specs) -> list:
    """Tracks regrouped so each group is contiguous (one output head per group), order otherwise kept."""
    groups = list(dict.fromkeys(s.group for s in specs))
    return [s for g in groups for s in specs if s.group == g]


def _group_sizes(groups: list[str]) -> tuple[int, ...]:
    """Tracks per group, groups in order of first appearance (one output head each)."""
    return tuple(groups.count(g) for g in dict.fromkeys(groups))


AUX = "aux:"  # group-name prefix of auxiliary tracks while training


def _with_aux(specs: list, aux: list) -> list:
    """`specs` then the auxiliary tracks, each aux group renamed "aux:GROUP" so that it gets heads of
    its own (the saved model drops them) and kept contiguous."""
    clash = sorted({s.id for s in specs} & {s.id for s in aux})
    if clash:
        raise InputError(f"--aux-targets: track id {clash[0]!r} is in --targets too (ids must be unique)")
    return specs + _group_order([replace(s, group=AUX + s.group) for s in aux])


def load_genome_data(req: TrackTrainRequest, cache: Path | None, log, warn):
    """(windows, split int8 (W,), track specs (the --targets tracks, then any auxiliary ones),
    reference description, split rule)."""
    g = WindowGeometry(req.seq_len, req.bin_size, req.target_bins)
    g.check()
    ref = Reference(req.fasta, warn)
    specs = _group_order(read_targets(req.targets))
    if req.aux_targets:
        specs = _with_aux(specs, read_targets(req.aux_targets))
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
    specs = basenji_tracks(folder, read_statistics(folder)["num_targets"])
    ordered = _group_order(specs)
    columns = [specs.index(s) for s in ordered]
    sources = []
    for split in SPLITS:
        src, ds = basenji_windows(folder, split, columns)
        sources.append(src)
        log(f"{folder}: {len(src):,} {split} sequences of {ds.seq_length:,} bp, {ds.num_targets} targets")
    return sources, WindowGeometry(ds.seq_length, ds.pool_width, ds.target_length), ordered


class TrackTraining(TrainingJob):
    """train-tracks for the shared driver: genome windows or a Basenji set, a track model, Poisson
    regression, test Pearson r per track (test_pearson.tsv)."""

    metric_columns = METRIC_COLUMNS

    def __init__(self, req: TrackTrainRequest, resume: bool = False) -> None:
        self.req = req
        self.resume = resume  # the checkpoint holds every weight: nothing to fit before training

    def fingerprint(self) -> dict:
        """The data files (FASTA, BED, the targets tables and every track file they name, a Basenji
        set, a model to start from) and the request's other data and model fields (TrackTrainRequest's:
        the training settings are checked by train.loop, the output and --threads may change)."""
        req = self.req
        files = ("fasta", "targets", "aux_targets", "regions", "valid_regions", "test_regions", "basenji", "init_from")
        inputs = {f"--{name.replace('_', '-')}": getattr(req, name) for name in files}
        for name in ("targets", "aux_targets"):
            # a table through a pipe can be read once, by training: named, its tracks not listed
            if getattr(req, name) and not req.basenji and Path(getattr(req, name)).is_file():
                option = f"--{name.replace('_', '-')}"
                inputs.update({f"{option} track {spec.id}": spec.path for spec in read_targets(getattr(req, name))})
        options = {f.name: getattr(req, f.name) for f in fields(TrackTrainRequest) if f.name not in files}
        return fingerprint(inputs, options)

    def load(self, dist, cache, report) -> None:
        req = self.req
        if req.basenji:
            (self.train, self.valid, self.test_set), self.g, self.specs = load_basenji_data(req.basenji, report.log)
            self.data_info = {"basenji": str(Path(req.basenji).resolve())}
        else:
            windows, split, self.specs, self.reference, rule = load_genome_data(req, cache, report.log, report.warn)
            self.g = windows.g
            self.train, self.valid, self.test_set = (windows.subset(np.flatnonzero(split == k)) for k in range(3))
            self.data_info = {"fasta": self.reference["path"], "targets": str(Path(req.targets).resolve()),
                              "regions": req.regions, "split": rule.describe(), "stat": req.stat}
        self.log = report.log
        for name, src in zip(SPLITS, (self.train, self.valid, self.test_set)):
            if len(src) == 0:
                raise InputError(f"no {name} windows: check the held-out chromosomes/regions and --regions")
        self.all_specs = self.specs
        self.all_sizes = _group_sizes([s.group for s in self.all_specs])
        # the tracks the model keeps and is scored on; auxiliary ones (tracks.train._with_aux) follow them
        self.specs = [s for s in self.specs if not s.group.startswith(AUX)]
        self.groups = [s.group for s in self.specs]
        self.sizes = _group_sizes(self.groups)
        self.aux_sizes = self.all_sizes[len(self.sizes):]  # tracks per auxiliary group, after the kept groups
        if self.aux_sizes:
            report.log(f"{sum(self.aux_sizes)} auxiliary tracks in {len(self.aux_sizes)} group(s) are trained on and "
                       "dropped from the saved model")

    def model_config(self):
        req, g = self.req, self.g
        self.scan = self._scan_motifs()
        if req.init_from:
            return self._init_config()
        patch = req.patch or default_patch(req.arch, g.bin_size)
        stages = (g.bin_size // patch).bit_length() - 1
        if patch * 2**stages != g.bin_size:
            raise InputError(f"--patch {patch}: bin size {g.bin_size} is not the patch times a power of 2")
        config = default_track_config(req.arch, g.seq_len, g.bin_size, g.target_bins, len(self.all_specs),
                                      self.all_sizes, req.width,
                                      dropout=default_dropout(req.arch) if req.dropout is None else req.dropout,
                                      max_stages=stages,
                                      stem_filters=req.stem_filters, head_width=req.head_width)
        return replace(config, **self._scan_config()) if self.scan else config

    def _scan_motifs(self) -> list:
        """--motif-scan jaspar: the tracked factors' JASPAR matrices (tracks.motifs.scan_motifs)."""
        if self.req.motif_scan == "none":
            return []
        scan = scan_motifs([{"id": s.id, "name": s.name} for s in self.specs])
        self.log(f"motif scan: {len(scan)} JASPAR profiles of the tracked factors ({', '.join(f.name for f in scan[:8])}"
                 f"{' ...' if len(scan) > 8 else ''}), {scan[0].weight.shape[1]} bp wide, beside the trunk")
        return scan

    def _scan_config(self) -> dict:
        return {"motifs": tuple(f"{f.matrix_id} {f.name}" for f in self.scan), "motif_kernel": self.scan[0].weight.shape[1]}

    def _scan_matrices(self):
        return torch.from_numpy(np.stack([f.weight for f in self.scan]))

    def _init_config(self):
        """The --init-from model's architecture, once its windows and tracks are checked against the data."""
        src = self.req.init_from
        self.init_model, cfg = load_track_model(src)
        w, g = cfg["window"], self.g
        if (w["seq_len"], w["bin_size"], w["target_bins"]) != (g.seq_len, g.bin_size, g.target_bins):
            raise InputError(f"--init-from {src}: windows of {w['seq_len']} bp -> {w['target_bins']} x {w['bin_size']} bp, "
                             f"but these data have {g.seq_len} bp -> {g.target_bins} x {g.bin_size} bp "
                             "(give the same --seq-len, --bin-size, --target-bins)")
        ids = [t["id"] for t in cfg["tracks"]]
        if ids != [s.id for s in self.specs]:
            raise InputError(f"--init-from {src}: its {len(ids)} tracks are not these {len(self.specs)} tracks in the same "
                             "order (match the targets file's ids and groups)")
        self.init_info = {"path": str(Path(src).resolve()), "valid_pearson": cfg["training"].get("valid_pearson"),
                          "test_pearson": cfg.get("test_metrics", {}).get("pearson_mean"),
                          "arch": cfg["training"].get("arch"), "width": cfg["training"].get("width")}
        config = self.init_model.config
        if self.req.stem_filters:
            have = getattr(config, "stem_filters", None)
            if have is None or self.req.stem_filters <= (have or config.d_model):
                raise InputError(f"--stem-filters {self.req.stem_filters}: --init-from {src} is "
                                 + ("not a swin1d" if have is None else f"a swin1d with {have or config.d_model} stem "
                                    "filters; fine-tuning can only add filters"))
            config = replace(config, stem_filters=self.req.stem_filters)
        if self.req.head_width:
            have = self.init_model.output.pointwise.out_features
            if self.req.head_width <= have:
                raise InputError(f"--head-width {self.req.head_width}: --init-from {src} has {have} hidden units in its "
                                 "output head; fine-tuning can only add units")
            config = replace(config, head_width=self.req.head_width)
        if self.scan:
            if config.motifs:
                raise InputError(f"--motif-scan: --init-from {src} has a motif scan already ({len(config.motifs)} motifs); "
                                 "leave out --motif-scan to fine-tune it")
            config = replace(config, **self._scan_config())
        if self.aux_sizes:
            groups = config.track_groups + self.aux_sizes
            config = replace(config, track_groups=groups, n_tracks=sum(groups))
        return config

    def build(self, config):
        if self.req.init_from:
            self.model = self._init_model()
            assert self.model.config == config
        else:
            self.model = build_model(config.to_dict())
            if self.scan:
                with torch.no_grad():
                    self.model.output.scan.pwm.copy_(self._scan_matrices())
        if self.scan and not self.resume:
            fit = fit_motif_readout(self.model, self.train)
            self.log(f"motif read-out fitted by least squares to the model's residuals on {fit['windows']:,} training "
                     f"windows: it removes {100 * fit['explained']:.1f} % of their variance")
        self.motifs = []
        if self.req.motif_init != "none" and not self.req.init_from:
            conv = stem_conv(self.model)
            tracks = [{"id": s.id, "name": s.name} for s in self.specs]
            n = min(self.req.motif_filters or conv.out_channels, conv.out_channels)
            scale = "centred" if self.req.motif_init == "jaspar-centred" else "threshold"
            self.motifs = jaspar_filters(tracks, n, conv.kernel_size[0], scale=scale)
            apply_motif_filters(self.model, self.motifs)
            factors = [f.name for f in self.motifs if f.why == "factor"]
            self.log(f"stem: {len(self.motifs)} of {conv.out_channels} filters from {RELEASE} "
                     f"({len(factors)} for the tracked factors: {', '.join(factors[:8])}{' ...' if len(factors) > 8 else ''})")
        return self.model

    def _init_model(self):
        """The --init-from model, its stem widened by --stem-filters and its head by --head-width,
        a --motif-scan added, with zero-weight heads for the auxiliary tracks."""
        src, model = self.req.init_from, self.init_model
        self.log(f"weights from --init-from {src} (its --arch/--width/--patch; the options given here are not used)")
        if self.req.stem_filters:
            before = model.config.stem_filters or model.config.d_model
            model = widen_stem(model, self.req.stem_filters)
            self.log(f"its stem widened from {before} to {self.req.stem_filters} filters (the new ones are read "
                     "with weight 0: training starts from the same predictions)")
        if self.req.head_width:
            before = model.output.pointwise.out_features
            model = widen_head(model, self.req.head_width)
            self.log(f"its output head widened from {before} to {self.req.head_width} hidden units (the new ones are "
                     "read with weight 0: training starts from the same predictions)")
        if self.scan:
            model = add_motif_scan(model, list(self._scan_config()["motifs"]), self._scan_matrices())
            self.log("a motif scan added beside its trunk")
        if self.aux_sizes:
            return add_track_groups(model, self.aux_sizes)
        if model is self.init_model:  # a fresh copy in training mode, like every other path
            model = build_model(model.config.to_dict())
            model.load_state_dict(self.init_model.state_dict())
        return model

    def describe(self, model) -> str:
        g = self.g
        n_params = sum(p.numel() for p in model.parameters())
        return (f"{self._arch_info()['arch']}: {n_params:,} parameters; {len(self.specs)} tracks in {len(self.sizes)} group(s); "
                f"windows of {g.seq_len:,} bp -> {g.target_bins} x {g.bin_size} bp bins; train {len(self.train):,}, "
                f"valid {len(self.valid):,}, test {len(self.test_set):,}")

    def task(self, settings):
        frozen = []
        if self.req.motif_freeze_epochs and self.motifs:
            frozen = list(stem_conv(self.model).parameters())
        weights = None
        if self.req.track_weights == "balanced":
            weights = balanced_weights(self.train)
            order = np.argsort(weights)
            self.log(f"track loss weights {weights.min():.2f}-{weights.max():.2f} (lowest {self.all_specs[order[0]].id}, "
                     f"highest {self.all_specs[order[-1]].id})")
        if self.req.loss == "mse":
            weights = inverse_variance_weights(self.train)
        return TrackTask(self.train, self.valid, settings.rc_augment, settings.shift_augment, settings.device,
                         settings.precision, frozen=frozen, freeze_epochs=self.req.motif_freeze_epochs, weights=weights,
                         scored=len(self.specs), loss=self.req.loss)

    def test(self, model, settings) -> dict:
        self.r, loss = evaluate(model, self.test_set, settings.device, settings.precision, tracks=len(self.specs))
        return {"pearson_mean": float(np.nanmean(self.r)), "pearson_by_group": group_means(self.r, self.groups),
                "poisson_loss": loss, "n_windows": len(self.test_set)}

    def model_info(self, settings, history, best_row, test_metrics) -> dict:
        req, g = self.req, self.g
        return {
            "task": TRACK_TASK,
            "tracks": [{"id": s.id, "group": s.group, "description": s.description} for s in self.specs],
            "window": {"seq_len": g.seq_len, "bin_size": g.bin_size, "target_bins": g.target_bins,
                       "stat": req.stat, "clip": None if req.basenji else req.clip},
            "reference": {"chroms": self.reference["chroms"]} if not req.basenji else None,
            "training": {**asdict(settings), **self._arch_info(), "data": self.data_info,
                         "motif_init": self.motif_info(), "init_from": getattr(self, "init_info", None),
                         "track_weights": req.track_weights, "loss": req.loss, "aux_targets": self.aux_info(),
                         "windows": {"train": len(self.train), "valid": len(self.valid), "test": len(self.test_set)},
                         "epochs_run": len(history), "best_epoch": int(best_row["epoch"]),
                         "valid_pearson": float(best_row["valid_pearson"])},
            "test_metrics": test_metrics,
        }

    def aux_info(self) -> dict | None:
        aux = self.all_specs[len(self.specs):]
        if not aux:
            return None
        return {"path": str(Path(self.req.aux_targets).resolve()), "tracks": [s.id for s in aux]}

    def export(self, model):
        return drop_track_groups(model, len(self.sizes)) if self.aux_sizes else model

    def _arch_info(self) -> dict:
        if self.req.init_from:
            return {"arch": self.init_info["arch"], "width": self.init_info["width"]}
        return {"arch": self.req.arch, "width": self.req.width}

    def motif_info(self) -> dict | None:
        if not self.motifs:
            return None
        return {"source": f"{RELEASE} CORE vertebrates (pyjaspar)", "init": self.req.motif_init,
                "freeze_epochs": self.req.motif_freeze_epochs,
                "filters": [f"{f.matrix_id} {f.name} ({f.why})" for f in self.motifs]}

    def write_extra(self, folder: Path) -> None:
        write_evaluation_tsv(folder / "test_pearson.tsv", [s.id for s in self.specs], self.groups, self.r)

