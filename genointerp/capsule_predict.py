"""capsule-predict: score samples with a trained capsule model; shared with capsule-train's test output.

Output TSV: sample, p_<class> for every class, call. p = phenotype-capsule lengths normalised to
sum 1 over the classes (raw lengths are independent numbers in [0, 1); normalised ones read as
class probabilities); call = the class with the longest capsule.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.io.features import Features


def model_matrix(features: Features, columns: list[str], source: str, warn: Callable[[str], None]) -> np.ndarray:
    """float64 (n, len(columns)): the model's feature columns in the model's order.

    A missing column is an error; extra columns are dropped with a warning.
    """
    where = {c: i for i, c in enumerate(features.columns)}
    missing = [c for c in columns if c not in where]
    if missing:
        raise InputError(f"{source}: {len(missing)} of the model's {len(columns)} feature columns are missing, "
                         f"e.g. {missing[0]!r}")
    extra = len(features.columns) - len(columns)
    if extra:
        warn(f"{source}: ignoring {extra} feature column(s) the model was not trained on")
    return features.matrix[:, [where[c] for c in columns]].astype(np.float64)


def predictions_table(samples: list[str], probabilities: np.ndarray, classes: list[str],
                      truth: list[str] | None = None) -> str:
    """probabilities (n, C) -> TSV text; `truth` adds a class column (capsule-train's test set)."""
    head = ["sample", *(f"p_{c}" for c in classes), "call"] + (["class"] if truth is not None else [])
    lines = ["\t".join(head)]
    calls = probabilities.argmax(1)
    for i, name in enumerate(samples):
        cells = [name, *(f"{v:.6f}" for v in probabilities[i]), classes[calls[i]]]
        lines.append("\t".join(cells + ([truth[i]] if truth is not None else [])))
    return "\n".join(lines) + "\n"
