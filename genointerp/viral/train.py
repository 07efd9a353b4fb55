"""The train-xvir job: kmerize datasets in, model directory (weights, config, metrics) out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.kmer_dataset import open_kmer_dataset
from genointerp.io.sequences import read_reference
from genointerp.report import Reporter
from genointerp.train.driver import TrainingJob, run_training
from genointerp.viral.calling import RULE_KEY, CallingRule
from genointerp.viral.evidence import CONFIG_KEY, REFS_FILE, KmerIndex, KmerSettings, build_index, load_index
from genointerp.viral.protein import CONFIG_KEY as PROTEIN_KEY, ProteinSettings, build_protein_index
from genointerp.viral.fresh import FreshReads, FreshReadTask, ReadSimulator
from genointerp.viral.task import (ReadClassificationTask, binary_targets, check_compatible, reverse_complement_table,
                                   split_indices)

METRIC_COLUMNS = ["epoch", "train_loss", "valid_loss", "valid_accuracy", "valid_auroc", "valid_tpr", "valid_tnr",
                  "valid_ppv", "seconds"]


@dataclass
class TrainRequest:
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
    from genointerp.reads.kmerize import KmerizeRequest, read_truth_labels
    from genointerp.reads.kmerize import run as kmerize

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
            req = KmerizeRequest(inputs=paths, k=k, length=length, truth=labels,
                                 name_field=None if labels is not None else label_field)
            stats, _ = kmerize(req, folder, None, None, report)
            report.log(f"{name}: {stats.kept:,} of {stats.reads_in:,} reads tokenised")
        out[name] = [str(folder)]
    return out


class XVirTraining(TrainingJob):
    """train-xvir for the shared driver: kmerize datasets, XVir, read classification, test AUROC and ROC."""

    metric_columns = METRIC_COLUMNS

    def __init__(self, req: TrainRequest, seed: int) -> None:
        self.req, self.seed = req, seed
        self.index_entry: dict | None = None
        self.protein_entry: dict | None = None
        self.index: KmerIndex | None = None
        self.calling: dict | None = None

    def fingerprint(self) -> dict:
        from genointerp.train.fingerprint import fingerprint

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
        from genointerp.models.xvir import XVirConfig

        header = self.header
        vocab = 4 ** header["k"] + (2 if header["vocab_size"] > 4 ** header["k"] else 0)
        config = XVirConfig(k=header["k"], read_length=header["length"], vocab_size=vocab, **self.req.model)
        config.validate()
        return config

    def build(self, config):
        from genointerp.models.xvir import XVir

        if not self.req.init_from:
            return XVir(config)
        from genointerp.model_folder import load_model_dir

        model, _ = load_model_dir(self.req.init_from, expect="xvir")
        if model.config != config:
            raise InputError(f"{self.req.init_from}: its architecture {model.config} does not match these data and "
                             f"settings ({config}); fine-tuning needs the same k, read length and model options")
        self.provenance.insert(0, {"initialised_from": str(self.req.init_from)})
        return model

    def describe(self, model) -> str:
        from genointerp.models.xvir import count_parameters

        return (f"XVir {count_parameters(model):,} parameters; train {len(self.train[1]):,}, "
                f"valid {len(self.valid[1]):,}, test {len(self.test_set[1]):,} reads")

    def task(self, settings):
        return ReadClassificationTask(self.train, self.valid, reverse_complement_table(self.header["k"]),
                                      settings.rc_augment, settings.device, settings.precision)

    def test(self, model, settings) -> dict:
        from genointerp.runtime import predict_proba
        from genointerp.train.metrics import binary_metrics, recall_at_fpr

        y = self.test_set[1]
        self.p = p = predict_proba(model, self.test_set[0], settings.device, settings.precision)
        if self.req.target_fpr is not None:
            self.calling = self.calibrate(model, settings)
        return {**binary_metrics(y, p), "recall_at_1pct_fpr": recall_at_fpr(y, p), "n": int(len(p))}

    def calibrate(self, model, settings) -> dict:
        """The calling threshold at req.target_fpr, on the test split's negatives (its reads were
        not trained on)."""
        from genointerp.train.metrics import threshold_at_fpr

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
            **({CONFIG_KEY: self.index_entry} if self.index_entry else {}),
            **({PROTEIN_KEY: self.protein_entry} if self.protein_entry else {}),
        }

    def write_extra(self, folder: Path) -> None:
        from genointerp.train.metrics import plot_roc

        plot_roc(self.test_set[1], self.p, folder / "roc.png", f"XVir test reads (n={len(self.p):,})")


class FreshXVirTraining(XVirTraining):
    """train-xvir on references: training reads simulated anew every epoch (genointerp.viral.fresh);
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
        from genointerp.models.xvir import count_parameters

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
    negative label of `sim`; the highest of their thresholds), for --evidence model. With a viral
    index, classify-reads' default rule weighs the evidence and the model in one score
    (genointerp.viral.calling); its settings are recorded beside the threshold."""
    from genointerp.runtime import predict_proba
    from genointerp.train.metrics import threshold_at_fpr

    labels = sim.labels()
    per_label = min(max(int(np.ceil(50 / target)), 10_000), 200_000)  # ~50 false calls allowed per kind
    _, tokens, label = sim.draw(per_label * len(labels), "calibration", shares={lab: 1.0 for lab in labels})
    p = predict_proba(model, tokens, device, precision)
    t = max(threshold_at_fpr(np.zeros(int((label == i).sum())), p[label == i], target) for i in range(1, len(labels)))
    called = p >= t
    return {"threshold": t, "target_fpr": target,
            "fpr": {labels[i]: float(called[label == i].mean()) for i in range(1, len(labels))},
            "tpr": float(called[label == 0].mean()), "n_reads": int(len(p)),
            "set_on": f"fresh reads drawn from the training references, about {per_label:,} per label",
            "rule": "p_viral >= threshold (--evidence model)",
            **({RULE_KEY: CallingRule().as_dict()} if index is not None else {})}


def run(req: TrainRequest, settings, folder: Path, output: str, resume: bool, report: Reporter) -> dict:
    """Train and fill `folder` (rank 0). Returns the test metrics.

    The k-mer index, when asked for, is built first: a bad reference fails the run before
    training, not after it."""
    job = (FreshXVirTraining if req.fresh is not None else XVirTraining)(req, settings.seed)
    if req.index is not None:
        ix = req.index
        job.index_entry = build_index(folder, ix.viral, ix.negatives, ix.settings, ix.circular, report)
        job.index = load_index(folder, {CONFIG_KEY: job.index_entry})
        job.protein_entry = build_protein_index(folder, read_reference(str(folder / REFS_FILE)), ix.negatives,
                                                ProteinSettings(), ix.circular, report)
    return run_training(job, settings, folder, output, resume, report)
