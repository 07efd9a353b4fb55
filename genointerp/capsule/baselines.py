"""The peers capsule-train scores the capsule network against on the same rows: scikit-learn
classifiers on the standardised Gene-PCs, and the polygenic risk score (prs.py) on SNP dosages.
capsule-search's fitness takes its logistic regression from here too."""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import torch
from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from genointerp.capsule import prs
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import inner_split
from genointerp.io.features import Dosages

BASELINES = ("logistic_regression", "svm", "random_forest", "adaboost", "mlp")
NETWORK_LR = "lr_network_inputs"  # gene capsules: logistic regression of the trained network's own inputs


def baseline_models(seed: int, threads: int) -> dict[str, Callable]:
    """scikit-learn peers of the seed's table, each a factory of a fresh estimator."""
    return {
        "logistic_regression": lambda: LogisticRegression(max_iter=2000),
        "svm": lambda: SVC(kernel="rbf", random_state=seed),
        "random_forest": lambda: RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=threads),
        "adaboost": lambda: AdaBoostClassifier(n_estimators=100, random_state=seed),
        "mlp": lambda: MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-2, max_iter=2000, random_state=seed),
    }


def fit_predict_baselines(x_train, y_train, x_eval, seed: int, threads: int) -> dict[str, np.ndarray]:
    """method -> 0/1 calls on x_eval of each baseline fit on (x_train, y_train) (standardised)."""
    calls = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, make in baseline_models(seed, threads).items():
            calls[name] = make().fit(x_train, y_train).predict(x_eval)
    return calls


def fit_predict_network_lr(model, x_train, y_train, x_eval, device: str = "cpu") -> np.ndarray:
    """0/1 calls on x_eval of the logistic regression baseline fit on the trained gene-capsule network's
    own inputs (CapsuleNet.read_inputs of the standardised x_train (n, F), x_eval (m, F)): what a
    linear model makes of the genes, columns and pair view that the network's screens chose, so that
    the table shows what the capsule layers add beyond those choices."""
    with torch.inference_mode():
        read = [model.read_inputs(torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)).to(device)).cpu().numpy()
                for v in (x_train, x_eval)]
    if not read[0].shape[1]:  # every gene screened off, no pair: the network reads nothing either
        return np.full(len(x_eval), np.bincount(y_train).argmax())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return baseline_models(0, 1)["logistic_regression"]().fit(read[0], y_train).predict(read[1])


def fit_prs(dosages: Dosages, y: np.ndarray, train: np.ndarray, s: CapsuleSettings, seed: int) -> prs.PrsFit:
    """The PRS baseline fit on rows `train` of dosages int8 (n, S) and y (n,), its p-value threshold
    chosen on the inner validation part that fit_capsule(seed) holds out of the same rows."""
    tr, va = inner_split(y[train], s.valid_fraction, np.random.default_rng(seed))
    return prs.fit_prs(dosages.matrix[train], y[train], dosages.chrom, dosages.pos, tr, va)
