"""The train-xvir job: kmerize datasets in, model directory (weights, config, metrics) out."""

from __future__ import annotations

import json

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.kmer_dataset import open_kmer_dataset
from genointerp.io.sequences import read_reference
from genointerp import options
from genointerp.options import arg, opt
from genointerp.model_folder import load_model_dir
from genointerp.models.xvir import POSITIONS, XVir, XVirConfig, count_parameters
from genointerp.seq.kmers import MAX_TOKEN_K
from genointerp.reads.kmerize import KmerizeRequest, read_truth_labels, tokenize_into
from genointerp.report import Reporter
from genointerp.runtime import job_device, use_threads
from genointerp.train.driver import TrainingJob, run_training
from genointerp.train.run_folder import checkpoint_dir, is_main_rank, model_folder
from genointerp.train.fingerprint import fingerprint
from genointerp.train.loop import TrainSettings
from genointerp.train.metrics import binary_metrics, plot_roc, recall_at_fpr, threshold_at_fpr
from genointerp.viral.classify.calling import CallingRule
from genointerp.viral.classify.model_process import score_windows
from genointerp.viral.evidence.seeds import CODON_SEED, KmerIndex, KmerSettings, build_index, load_index
from genointerp.viral.evidence.prebuilt import load_indexes, write_folder_index
from genointerp.viral.folded_model import write_folded
from genointerp.viral.typing.placement import store_panel_index
from genointerp.viral.evidence.protein import ProteinSettings, build_protein_index
from genointerp.viral.model_files import KMER_KEY, PROTEIN_KEY, REFS_FILE, RULE_KEY
from genointerp.viral.training.fresh import FreshReads, FreshReadTask, ReadSimulator
from genointerp.viral.training.task import (ReadClassificationTask, binary_targets, check_compatible,
                                            reverse_complement_table, split_indices)

METRIC_COLUMNS = ["epoch", "train_loss", "valid_loss", "valid_accuracy", "valid_auroc", "valid_tpr", "valid_tnr",
                  "valid_ppv", "seconds"]


FRESH_READS_PER_EPOCH = 200_000  # --reads-per-epoch's default


@dataclass
class TrainXvirRequest:
    """train-xvir: the fields are its options (files and folders as paths)."""

    datasets: list[str] = arg(
        metavar="[DATASET]...", cli_default=None,
        help=('kmerize dataset folders, or FASTQ/FASTA files (tokenised with -k/--length, labels from --truth or '
              '--label-field). None: train on fresh reads simulated from --viral and --negative references.'))
    output: str = opt(
        ..., "-o", "--output",
        help='Model directory to write (model.safetensors, config.json, metrics).')
    valid: list[str] = opt([], "--valid", help='Validation dataset(s) instead of the 8:1:1 split (with --test).')
    test: list[str] = opt([], "--test", help='Test dataset(s) instead of the 8:1:1 split (with --valid).')
    positive: str = opt("viral", "--positive", help='The label that counts as viral; every other label is not.')
    truth: str | None = opt(
        None, "--truth",
        help='Read files only: labels from a truth TSV (simulate-reads --truth).')
    label_field: int = opt(
        0, "--label-field", min=0,
        help="Read files only: label = this '|'-separated field of the read name.")
    k: int = opt(6, "-k", min=1, max=MAX_TOKEN_K, help='Read files and fresh reads: k-mer size.')
    length: int = opt(150, "--length", min=1, help='Read files and fresh reads: model read length.')
    epochs: int = opt(25, "--epochs", min=1, help='Most epochs to train.')
    patience: int = opt(5, "--patience", min=1, help='Stop after this many epochs without a better validation AUROC.')
    batch_size: int = opt(256, "--batch-size", min=1)
    lr: float = opt(1e-3, "--lr", min=0, help='Adam learning rate.')
    weight_decay: float = opt(1e-6, "--weight-decay", min=0)
    rc_augment: bool = opt(False, "--rc-augment", help='Reverse-complement half of the training reads each epoch.')
    d_model: int = opt(128, "--d-model", min=4)
    heads: int = opt(4, "--heads", min=1)
    layers: int = opt(1, "--layers", min=1)
    dropout: float = opt(0.1, "--dropout", min=0, max=0.9)
    position: str = opt(
        'sinusoidal', "--position", choices=POSITIONS,
        help='Position encoding (the paper: sinusoidal).')
    pre_norm: bool = opt(False, "--pre-norm", help='LayerNorm before each block (the paper: after).')
    device: str = options.device()
    precision: str = options.precision('Autocast precision: 32, bf16 (CPU or CUDA), 16 (CUDA).')
    threads: int = options.threads()
    seed: int = options.seed()
    viral: list[str] = opt(
        [], "--viral", metavar="REF",
        help=('Viral reference (FASTA/GenBank; repeatable): the model folder gets a k-mer index of it, '
              "classify-reads' exact-match evidence beside the model; without DATASET, training reads are simulated"
              ' from it.'))
    negative: list[tuple[str, str]] = opt(
        [], "--negative", metavar="LABEL=REF", cli_type=list[str],
        parse=options.pairs("LABEL=REF (e.g. human=chr20.fa.gz)"),
        help=('Negative reference (repeatable; with --viral), e.g. human=chr20.fa.gz: its k-mers are left out of '
              'the index; without DATASET, negative training reads are simulated from it.'))
    circular: bool = opt(
        False, "--circular",
        help='The --viral references are circular genomes (k-mers across the origin count).')
    kmer_seed: str | None = opt(
        None, "--kmer-seed", metavar="PATTERN",
        help=('Seed of the index: 1 = compared base, 0 = skipped (a palindrome, at least 11 compared bases, at most'
              ' 31 long). Default 11011011011011011011011011: every third base skipped, which tolerates the '
              'synonymous codon changes between related viral types.'))
    kmer_k: int | None = opt(None, "--kmer-k", min=11, max=31, help='Plain k-mers of this k instead of --kmer-seed.')
    kmer_min_entropy: float = opt(
        1.5, "--kmer-min-entropy", min=0, max=2,
        help=('Leave out windows whose base composition has less Shannon entropy (bits): low-complexity stretches '
              'match other genomes by chance.'))
    reads_per_epoch: int | None = opt(
        None, "--reads-per-epoch", min=100,
        help=('Fresh reads only: reads simulated for each epoch (default 200,000; validation and test sets a tenth '
              'each).'))  # fresh reads; None: FRESH_READS_PER_EPOCH
    mix: dict[str, float] = opt(
        {}, "--mix", metavar="LABEL=W", min=0, cli_type=list[str], parse=options.numbers_by_key("LABEL=WEIGHT",
        float, "weight"),
        help=('Fresh reads only: weight of each label (viral and every --negative label), e.g. --mix viral=0.4 '
              '--mix human=0.4 --mix bacterial=0.2 (default: half viral, the rest split evenly).'))  # label -> weight
    viral_sub_rate: float = opt(
        0.0, "--viral-sub-rate", min=0, max=0.3,
        help=('Fresh reads only: half the viral reads come from genomes mutated anew each epoch with this '
              'substitution rate (unseen strains).'))
    target_fpr: float | None = opt(
        None, "--target-fpr", min=0, max=0.5,
        help=("Set the model's calling threshold so that at most this share of negative reads is called viral: per "
              "negative label on fresh reads (with the k-mer index, under classify-reads' combined rule), or on the"
              ' test split for datasets.'))
    init_from: str | None = opt(
        None, "--init-from",
        help="Start from this model directory's weights (fine-tuning; same architecture).")
    resume: bool = opt(
        False, "--resume",
        help=('Continue an interrupted run from OUTPUT.checkpoint/, with the inputs (by content) and options it was'
              ' started with; others are refused.'))

    def check(self) -> None:
        if self.viral:
            if self.kmer_k is not None and self.kmer_seed is not None:
                raise UsageError("--kmer-k: give --kmer-seed or --kmer-k, not both")
        elif self.negative or self.circular:
            raise UsageError("--viral: --negative and --circular describe --viral references; give --viral")
        fresh_options = [name for name, given in (("--reads-per-epoch", self.reads_per_epoch is not None),
                                                  ("--mix", self.mix), ("--viral-sub-rate", self.viral_sub_rate > 0))
                         if given]
        if self.datasets and fresh_options:
            raise UsageError(f"{fresh_options[0]}: {fresh_options[0]} is for training on fresh reads (no DATASET)")
        if not self.datasets and not (self.viral and self.negative):
            raise UsageError("DATASET: give kmerize datasets or read files, or --viral and --negative references to "
                             "train on fresh reads")
        if (self.valid or self.test) and not self.datasets:
            raise UsageError("--valid: fresh-read training draws its own validation and test reads")
        if not is_main_rank() and not all(os.path.isdir(p) for p in self.datasets + self.valid + self.test):
            raise UsageError("DATASET: under torchrun, give kmerize dataset folders (kmerize first)")

    def inputs(self) -> list[str | None]:
        return [*self.datasets, *self.valid, *self.test, self.truth, self.init_from, *self.viral,
                *(path for _, path in self.negative)]

    def settings(self) -> TrainSettings:
        return TrainSettings(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, weight_decay=self.weight_decay,
                             patience=self.patience, seed=self.seed, rc_augment=self.rc_augment, device=self.device,
                             precision=self.precision)

    def plan(self) -> TrainPlan:
        """What to train on and what to build beside the model (datasets as given: read files are
        tokenised by the job)."""
        plan = TrainPlan(list(self.datasets), list(self.valid), list(self.test), self.positive, init_from=self.init_from,
                         target_fpr=self.target_fpr, model={
                             "d_model": self.d_model, "n_heads": self.heads, "n_layers": self.layers,
                             "d_ff": 4 * self.d_model, "dropout": self.dropout, "position": self.position,
                             "norm_first": self.pre_norm})
        if self.viral:
            shape = KmerSettings.contiguous(self.kmer_k) if self.kmer_k is not None else KmerSettings(self.kmer_seed or CODON_SEED)
            plan.index = IndexRequest(list(self.viral), [path for _, path in self.negative],
                                      replace(shape, min_entropy=self.kmer_min_entropy), self.circular)
        if not self.datasets:
            plan.fresh = FreshReads(list(self.viral), list(self.negative), self.circular,
                                    self.reads_per_epoch or FRESH_READS_PER_EPOCH, dict(self.mix), self.viral_sub_rate,
                                    self.k, self.length)
        return plan


@dataclass
class TrainPlan:
    """What XVirTraining trains on (from a TrainXvirRequest)."""

    datasets: list[str]
    valid: list[str] = field(default_factory=list)
    test: list[str] = field(default_factory=list)
    positive: str = "viral"
    model: dict = field(default_factory=dict)  # XVirConfig fields other than k/read_length/vocab_size
    init_from: str | None = None  # start from this model directory's weights (fine-tuning)
    index: IndexRequest | None = None  # a k-mer index for the model folder (classify-reads' k-mer evidence)
    fresh: FreshReads | None = None  # train on reads simulated anew each epoch from references, not on datasets
    target_fpr: float | None = None  # set the calling threshold so at most this share of negatives is called viral
    # where datasets were tokenised from read files (into OUTPUT.checkpoint/, kept for --resume): those
    # files by option and the options that tokenised them, {"inputs": {...}, "options": {...}}; what
    # --resume checks instead of the tokenised copies
    read_files: dict | None = None


@dataclass
class IndexRequest:
    viral: list[str]  # viral references (FASTA/GenBank)
    negatives: list[str]  # references whose k-mers the index must not hold
    settings: KmerSettings = field(default_factory=KmerSettings)
    circular: bool = False  # the viral references are circular genomes


def _load(paths: list[str], positive: str):
    sets = [open_kmer_dataset(p) for p in paths]
    header = check_compatible(sets)
    tokens = sets[0].tokens if len(sets) == 1 else np.concatenate([np.asarray(s.tokens) for s in sets])
    y = np.concatenate([binary_targets(s, positive) for s in sets])
    return header, tokens, y, [{"path": str(s.folder), "n_reads": s.header["n_reads"],
                                "label_counts": s.header["label_counts"]} for s in sets]


def tokenize_read_files(groups: dict[str, list[str]], dest: Path, k: int, length: int, truth: str | None,
                        label_field: int, report: Reporter) -> dict[str, list[str]]:
    """Turn FASTQ/FASTA inputs into kmerize datasets under `dest` (kept for --resume); returns their paths.

    Groups that already are dataset folders are passed through unchanged.
    """
    labels = read_truth_labels(truth) if truth else None
    out = {}
    for name, paths in groups.items():
        if not paths or all(Path(p).is_dir() for p in paths):
            out[name] = paths
            continue
        if any(Path(p).is_dir() for p in paths):
            raise InputError(f"{name}: give either kmerize dataset folders or read files, not both")
        folder = dest / f"{name}.kmers"
        if not (folder / "header.json").exists():
            folder.mkdir(parents=True, exist_ok=True)
            req = KmerizeRequest(paths, k=k, length=length, truth=truth,
                                 label_field=None if labels is not None else label_field)
            stats, _ = tokenize_into(req, labels, folder, None, None, report)
            report.log(f"{name}: {stats.kept:,} of {stats.reads_in:,} reads tokenised")
        out[name] = [str(folder)]
    return out


class XVirTraining(TrainingJob):
    """train-xvir for the shared driver: kmerize datasets, XVir, read classification, test AUROC and ROC."""

    metric_columns = METRIC_COLUMNS

    def __init__(self, req: TrainPlan, seed: int) -> None:
        self.req, self.seed = req, seed
        self.index_entry: dict | None = None
        self.protein_entry: dict | None = None
        self.index: KmerIndex | None = None
        self.calling: dict | None = None

    def fingerprint(self) -> dict:
        req = self.req
        inputs = {"DATASET": req.datasets, "--valid": req.valid, "--test": req.test, "--init-from": req.init_from}
        options = {"positive": req.positive}
        if req.read_files:
            inputs.update(req.read_files["inputs"])
            options.update(req.read_files["options"])
        if req.fresh is not None:
            spec = req.fresh
            inputs.update({"--viral": spec.viral, "--negative": [path for _, path in spec.negatives]})
            options["fresh"] = {**asdict(spec), "viral": None, "negatives": [label for label, _ in spec.negatives]}
        return fingerprint(inputs, options)

    def load(self, dist, cache, report) -> None:
        req = self.req
        if bool(req.valid) != bool(req.test):
            raise InputError("give both --valid and --test datasets, or neither (8:1:1 split)")
        self.header, tokens, y, self.provenance = _load(req.datasets + req.valid + req.test, req.positive)
        if req.valid:  # explicit files: the training sets (memory-mapped when there is one) first
            n_train = sum(p["n_reads"] for p in self.provenance[: len(req.datasets)])
            n_valid = sum(p["n_reads"] for p in self.provenance[len(req.datasets) : len(req.datasets) + len(req.valid)])
            a, b, c = np.arange(n_train), np.arange(n_train, n_train + n_valid), np.arange(n_train + n_valid, len(y))
        else:
            a, b, c = split_indices(len(y), self.seed)
        self.train = (tokens, y) if len(a) == len(y) else (np.asarray(tokens[a]), y[a])
        self.valid, self.test_set = (np.asarray(tokens[b]), y[b]), (np.asarray(tokens[c]), y[c])
        for name, (_, t) in (("training", self.train), ("validation", self.valid), ("test", self.test_set)):
            if len(t) == 0 or t.min() == t.max():
                raise InputError(f"the {name} set needs reads of both classes ({req.positive} and other); "
                                 f"has {int(t.sum())} {req.positive} of {len(t)}")

    def model_config(self):
        header = self.header
        vocab = 4 ** header["k"] + (2 if header["vocab_size"] > 4 ** header["k"] else 0)
        config = XVirConfig(k=header["k"], read_length=header["length"], vocab_size=vocab, **self.req.model)
        config.validate()
        return config

    def build(self, config):
        if not self.req.init_from:
            return XVir(config)
        model, _ = load_model_dir(self.req.init_from, expect="xvir")
        if model.config != config:
            raise InputError(f"{self.req.init_from}: its architecture {model.config} does not match these data and "
                             f"settings ({config}); fine-tuning needs the same k, read length and model options")
        self.provenance.insert(0, {"initialised_from": str(self.req.init_from)})
        return model

    def describe(self, model) -> str:
        return (f"XVir {count_parameters(model):,} parameters; train {len(self.train[1]):,}, "
                f"valid {len(self.valid[1]):,}, test {len(self.test_set[1]):,} reads")

    def task(self, settings):
        return ReadClassificationTask(self.train, self.valid, reverse_complement_table(self.header["k"]),
                                      settings.rc_augment, settings.device, settings.precision)

    def test(self, model, settings) -> dict:
        y = self.test_set[1]
        self.p = p = score_windows(model, self.test_set[0], settings.device, settings.precision)
        if self.req.target_fpr is not None:
            self.calling = self.calibrate(model, settings)
        return {**binary_metrics(y, p), "recall_at_1pct_fpr": recall_at_fpr(y, p), "n": int(len(p))}

    def calibrate(self, model, settings) -> dict:
        """The calling threshold at req.target_fpr, on the test split's negatives (its reads were
        not trained on), scored in test() as classify-reads scores them."""
        y, p = self.test_set[1], self.p
        t = threshold_at_fpr(y, p, self.req.target_fpr)
        return {"threshold": t, "target_fpr": self.req.target_fpr, "fpr": float((p[y == 0] >= t).mean()),
                "tpr": float((p[y == 1] >= t).mean()), "n_reads": int(len(y)), "set_on": "the test split",
                "rule": "p_viral >= threshold"}

    def model_info(self, settings, history, best_row, test_metrics) -> dict:
        labels = sorted({lab for prov in self.provenance for lab in prov.get("label_counts", {})})
        return {
            "task": "viral read classification",
            "positive_label": self.req.positive,
            "negative_labels": [lab for lab in labels if lab != self.req.positive],
            "tokens": {key: self.header[key] for key in ("k", "length", "token_convention", "special_tokens")},
            "training": {**asdict(settings), "data": self.provenance, "epochs_run": len(history),
                         "best_epoch": int(best_row["epoch"])},
            "test_metrics": test_metrics,
            **({"calling": self.calling} if self.calling else {}),
            **({KMER_KEY: self.index_entry} if self.index_entry else {}),
            **({PROTEIN_KEY: self.protein_entry} if self.protein_entry else {}),
        }

    def write_extra(self, folder: Path) -> None:
        plot_roc(self.test_set[1], self.p, folder / "roc.png", f"XVir test reads (n={len(self.p):,})")
        write_folded(folder)  # classify-reads then runs the model without importing torch


class FreshXVirTraining(XVirTraining):
    """train-xvir on references: training reads simulated anew every epoch (genointerp.viral.training.fresh);
    validation, test and calibration reads are fresh draws of their own."""

    def load(self, dist, cache, report) -> None:
        spec = self.req.fresh
        self.sim = ReadSimulator(spec, self.seed, report)
        self.header = self.sim.header()
        n_eval = max(spec.reads_per_epoch // 10, 1000)
        self.valid, self.test_set = self._labelled("valid", n_eval), self._labelled("test", n_eval)
        shares = self.sim.shares
        self.provenance = [{"fresh_reads": {
            "viral": list(spec.viral), "negative": [f"{label}={path}" for label, path in spec.negatives],
            "circular": spec.circular, "reads_per_epoch": spec.reads_per_epoch, "viral_sub_rate": spec.viral_sub_rate,
            "shares": shares, "seed": self.seed},
            "label_counts": {label: round(spec.reads_per_epoch * w) for label, w in shares.items()}}]

    def _labelled(self, purpose: str, n: int) -> tuple[np.ndarray, np.ndarray]:
        _, tokens, label = self.sim.draw(n, purpose)
        return tokens, (label == 0).astype(np.float32)

    def describe(self, model) -> str:
        return (f"XVir {count_parameters(model):,} parameters; {self.req.fresh.reads_per_epoch:,} fresh reads per "
                f"epoch, valid {len(self.valid[1]):,}, test {len(self.test_set[1]):,} reads")

    def task(self, settings):
        return FreshReadTask(self.sim, self.req.fresh.reads_per_epoch, self.valid, reverse_complement_table(self.header["k"]),
                             settings.rc_augment, settings.device, settings.precision)

    def calibrate(self, model, settings) -> dict:
        return calibrate_on_fresh_reads(model, self.sim, self.index, self.req.target_fpr, settings.device, settings.precision)


def calibrate_on_fresh_reads(model, sim: ReadSimulator, index: KmerIndex | None, target: float, device: str,
                             precision: str) -> dict:
    """The model's threshold at `target` for every negative kind (fresh calibration reads of each
    negative label of `sim`, scored as classify-reads scores them; the highest of their
    thresholds), for --evidence model. With a viral
    index, classify-reads' default rule weighs the evidence and the model in one score
    (genointerp.viral.classify.calling); its settings are recorded beside the threshold."""
    labels = sim.labels()
    per_label = min(max(int(np.ceil(50 / target)), 10_000), 200_000)  # ~50 false calls allowed per kind
    _, tokens, label = sim.draw(per_label * len(labels), "calibration", shares={lab: 1.0 for lab in labels})
    p = score_windows(model, tokens, device, precision)
    t = max(threshold_at_fpr(np.zeros(int((label == i).sum())), p[label == i], target) for i in range(1, len(labels)))
    called = p >= t
    return {"threshold": t, "target_fpr": target,
            "fpr": {labels[i]: float(called[label == i].mean()) for i in range(1, len(labels))},
            "tpr": float(called[label == 0].mean()), "n_reads": int(len(p)),
            "set_on": f"fresh reads drawn from the training references, about {per_label:,} per label",
            "rule": "p_viral >= threshold (--evidence model)",
            **({RULE_KEY: CallingRule().as_dict()} if index is not None else {})}


def run(req: TrainXvirRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Train and fill the model folder req.output (rank 0; other DDP ranks write nothing), with the
    training-run folder OUTPUT.checkpoint/ guarded, locked and dropped once the model folder is in
    place (genointerp.train.run_folder.model_folder). Returns the test metrics."""
    use_threads(req.threads)
    req = replace(req, device=job_device(req.device, req.precision, report.warn))
    plan, settings = req.plan(), req.settings()
    with model_folder(outputs, req.output, req.resume, report.warn) as folder:
        if is_main_rank() and plan.datasets:
            if not all(os.path.isdir(p) for p in plan.datasets + plan.valid + plan.test):
                plan.read_files = {"inputs": {"DATASET": plan.datasets, "--valid": plan.valid, "--test": plan.test,
                                              "--truth": req.truth},
                                   "options": {"k": req.k, "length": req.length,
                                               "label_field": None if req.truth else req.label_field}}
            groups = tokenize_read_files({"train": plan.datasets, "valid": plan.valid, "test": plan.test},
                                         checkpoint_dir(req.output) / "data", req.k, req.length, req.truth,
                                         req.label_field, report)
            plan.datasets, plan.valid, plan.test = groups["train"], groups["valid"], groups["test"]
        return train(plan, settings, folder, req.output, req.resume, report)


def train(plan: TrainPlan, settings: TrainSettings, folder: Path, output: str, resume: bool, report: Reporter) -> dict:
    """Train and fill `folder` (rank 0). Returns the test metrics.

    The k-mer index, when asked for, is built first: a bad reference fails the run before
    training, not after it."""
    job = (FreshXVirTraining if plan.fresh is not None else XVirTraining)(plan, settings.seed)
    if plan.index is not None:
        ix = plan.index
        job.index_entry = build_index(folder, ix.viral, ix.negatives, ix.settings, ix.circular, report)
        job.index = load_index(folder, {KMER_KEY: job.index_entry})
        job.protein_entry = build_protein_index(folder, read_reference(str(folder / REFS_FILE)), ix.negatives,
                                                ProteinSettings(), ix.circular, report)
        # prebuilt for the folder's users (genointerp.viral.evidence.prebuilt), from the entries as config.json will hold them
        entries = json.loads(json.dumps({KMER_KEY: job.index_entry, PROTEIN_KEY: job.protein_entry}))
        write_folder_index(folder, entries)
        store_panel_index(folder, load_indexes(folder, entries, report.log)[0])
    return run_training(job, settings, folder, output, resume, report)
