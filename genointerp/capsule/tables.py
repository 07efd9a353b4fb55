"""capsule-train's result tables (TSV text): results.tsv, folds.tsv, train_fraction.tsv, split.tsv
and metrics.tsv, from a protocol.TrainResult."""

from __future__ import annotations

import numpy as np

from genointerp.capsule.metrics import METRICS
from genointerp.capsule.protocol import TrainResult


def results_table(r: TrainResult) -> str:
    """results.tsv: per method, mean and sd over the folds, then the held-out test values."""
    methods = list(dict.fromkeys(row["method"] for row in r.fold_scores))
    head = ["method"] + [f"cv_{m}_{st}" for m in METRICS for st in ("mean", "sd")] + [f"test_{m}" for m in METRICS]
    lines = ["\t".join(head)]
    for method in methods:
        vals = [row for row in r.fold_scores if row["method"] == method]
        cells = [method]
        for m in METRICS:
            a = np.array([v[m] for v in vals])
            cells += [f"{a.mean():.4f}", f"{a.std(ddof=1) if len(a) > 1 else 0.0:.4f}"]
        test = r.test_scores.get(method)
        cells += [f"{test[m]:.4f}" if test else "NA" for m in METRICS]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def folds_table(r: TrainResult) -> str:
    lines = ["method\tfold\t" + "\t".join(METRICS)]
    lines += [f"{row['method']}\t{row['fold']}\t" + "\t".join(f"{row[m]:.4f}" for m in METRICS) for row in r.fold_scores]
    return "\n".join(lines) + "\n"


def curve_table(r: TrainResult) -> str:
    """train_fraction.tsv: accuracy mean and sd over the folds per training fraction and method."""
    lines = ["fraction\tn_train_mean\tmethod\taccuracy_mean\taccuracy_sd"]
    keys = list(dict.fromkeys((row["fraction"], row["method"]) for row in r.curve))
    for fraction, method in keys:
        rows = [row for row in r.curve if row["fraction"] == fraction and row["method"] == method]
        acc = np.array([row["accuracy"] for row in rows])
        n = np.mean([row["n_train"] for row in rows])
        lines.append(f"{fraction:g}\t{n:.1f}\t{method}\t{acc.mean():.4f}\t{acc.std(ddof=1) if len(acc) > 1 else 0.0:.4f}")
    return "\n".join(lines) + "\n"


def split_table(r: TrainResult, samples: list[str], y: np.ndarray, classes: list[str]) -> str:
    """split.tsv: sample, class, set (test or fold number) so that a run can be audited or repeated."""
    role = {int(i): "test" for i in r.split.test}
    role.update({int(i): f"fold{k + 1}" for i, k in zip(r.split.train, r.split.fold_of)})
    return "sample\tclass\tset\n" + "".join(f"{samples[i]}\t{classes[y[i]]}\t{role[i]}\n" for i in sorted(role))


def history_table(history: list[dict]) -> str:
    """metrics.tsv: the final model's losses and validation accuracy per epoch."""
    lines = ["epoch\ttrain_loss\tvalid_loss\tvalid_accuracy"]
    lines += [f"{h['epoch']}\t{h['train_loss']:.6f}\t{h['valid_loss']:.6f}\t{h['valid_accuracy']:.4f}" for h in history]
    return "\n".join(lines) + "\n"
