"""The train-xvir job: kmerize datasets in, model directory (weights, config, metrics) out."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.io.kmer_dataset import open_kmer_dataset
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


def _load(paths: list[str], positive: str):
    sets = [open_kmer_dataset(p) for p in paths]
    header = check_compatible(sets)
    tokens = sets[0].tokens if len(sets) == 1 else np.concatenate([np.asarray(s.tokens) for s in sets])
    y = np.concatenate([binary_targets(s, positive) for s in sets])
    return header, tokens, y, [{"path": str(s.folder), "n_reads": s.header["n_reads"],
                                "label_counts": s.header["label_counts"]} for s in sets]


def tokenize_read_files(groups: dict[str, list[str]], dest: Path, k: int, length: int, truth: str | None,
                        label_field: int, log: Callable[[str], None], progress: Callable) -> dict[str, list[str]]:
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
            stats, _ = kmerize(req, folder, None, None, log, progress)
            log(f"{name}: {stats.kept:,} of {stats.reads_in:,} reads tokenised")
        out[name] = [str(folder)]
    return out


def checkpoint_dir(output: str) -> Path:
    return Path(f"{output}.checkpoint")


def run(req: TrainRequest, settings, folder: Path, output: str, resume: bool, log: Callable[[str], None],
        progress: Callable) -> dict:
    """Train and fill `folder` (rank 0). Returns the test metrics."""
    import torch

    from genointerp.checkpoint import save_model_dir
    from genointerp.models.xvir import XVir, XVirConfig, count_parameters
    from genointerp.runtime import predict_proba
    from genointerp.train.loop import epoch_table, fit, init_distributed
    from genointerp.train.metrics import binary_metrics, plot_roc, recall_at_fpr

    dist = init_distributed(settings.device)
    if bool(req.valid) != bool(req.test):
        raise InputError("give both --valid and --test datasets, or neither (8:1:1 split)")
    header, tokens, y, provenance = _load(req.datasets + req.valid + req.test, req.positive)
    if req.valid:  # explicit files: the training sets (memory-mapped when there is one) first
        n_train = sum(p["n_reads"] for p in provenance[: len(req.datasets)])
        n_valid = sum(p["n_reads"] for p in provenance[len(req.datasets) : len(req.datasets) + len(req.valid)])
        a, b, c = np.arange(n_train), np.arange(n_train, n_train + n_valid), np.arange(n_train + n_valid, len(y))
    else:
        a, b, c = split_indices(len(y), settings.seed)
    train = (tokens, y) if len(a) == len(y) else (np.asarray(tokens[a]), y[a])
    valid, test = (np.asarray(tokens[b]), y[b]), (np.asarray(tokens[c]), y[c])
    for name, (_, t) in (("training", train), ("validation", valid), ("test", test)):
        if len(t) == 0 or t.min() == t.max():
            raise InputError(f"the {name} set needs reads of both classes ({req.positive} and other); "
                             f"has {int(t.sum())} {req.positive} of {len(t)}")
    vocab = 4 ** header["k"] + (2 if header["vocab_size"] > 4 ** header["k"] else 0)
    config = XVirConfig(k=header["k"], read_length=header["length"], vocab_size=vocab, **req.model)
    try:
        config.validate()
    except ValueError as exc:
        raise InputError(f"model settings: {exc}") from None
    torch.manual_seed(settings.seed)
    if req.init_from:
        from genointerp.checkpoint import load_model_dir

        model, _ = load_model_dir(req.init_from, expect="xvir")
        if model.config != config:
            raise InputError(f"{req.init_from}: its architecture {model.config} does not match these data and "
                             f"settings ({config}); fine-tuning needs the same k, read length and model options")
        provenance.insert(0, {"initialised_from": str(req.init_from)})
    else:
        model = XVir(config)
    log(f"XVir {count_parameters(model):,} parameters; train {len(train[1]):,}, valid {len(valid[1]):,}, "
        f"test {len(test[1]):,} reads ({dist.world} process{'es' if dist.world > 1 else ''}, {settings.device})")
    ckpt = checkpoint_dir(output)
    if dist.main:
        ckpt.mkdir(exist_ok=True)
    metrics_tsv = ckpt / "metrics.tsv"
    on_epoch = epoch_table(metrics_tsv, METRIC_COLUMNS, fresh=not resume and dist.main)

    task = ReadClassificationTask(train, valid, reverse_complement_table(header["k"]), settings.rc_augment,
                                  settings.device, settings.precision)
    best, history = fit(model, task, settings, ckpt, resume, dist, log, progress, on_epoch)
    model.load_state_dict(best)
    p = predict_proba(model, test[0], settings.device, settings.precision)
    test_metrics = {**binary_metrics(test[1], p), "recall_at_1pct_fpr": recall_at_fpr(test[1], p), "n": int(len(p))}
    if dist.main:
        model.cpu()
        labels = sorted({lab for prov in provenance for lab in prov.get("label_counts", {})})
        save_model_dir(folder, model, {
            "task": "viral read classification",
            "positive_label": req.positive,
            "negative_labels": [lab for lab in labels if lab != req.positive],
            "tokens": {key: header[key] for key in ("k", "length", "token_convention", "special_tokens")},
            "training": {**asdict(settings), "data": provenance, "epochs_run": len(history),
                         "best_epoch": int(max(history, key=lambda r: r["valid_auroc"])["epoch"])},
            "test_metrics": test_metrics,
        })
        shutil.copy(metrics_tsv, folder / "metrics.tsv")
        (folder / "test_metrics.json").write_text(json.dumps(test_metrics, indent=2) + "\n")
        plot_roc(test[1], p, folder / "roc.png", f"XVir test reads (n={len(p):,})")
    return test_metrics


def finish(output: str) -> None:
    """After the model directory is in place: the checkpoint has served its purpose."""
    shutil.rmtree(checkpoint_dir(output), ignore_errors=True)

