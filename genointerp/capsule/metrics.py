"""The scores of 0/1 calls that capsule-train's tables report, per method and fold."""

from __future__ import annotations

import numpy as np

from genointerp.train.metrics import binary_metrics

METRICS = ("accuracy", "precision", "recall", "f1")


def scores(y: np.ndarray, call: np.ndarray) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of 0/1 calls (n,) for the case class (label 1) of y (n,)."""
    m = binary_metrics(y, call.astype(np.float64))
    p, r = m["ppv"], m["tpr"]
    return {"accuracy": m["accuracy"], "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}
