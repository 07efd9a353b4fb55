"""capsule-train's protocol (DiseaseCapsule's): cross-validation against the baselines, the
--train-fraction curve, and the final model.

A balanced held-out test set (equal numbers of each class) is set aside first; the rest is split
into stratified folds for cross-validation (splits.make_split). Inside every training set an inner
stratified validation part (`valid_fraction`) decides early stopping on the margin loss and is not
used for gradient steps (fit.fit_capsule). Features are standardised with the mean/sd of the
training set at hand (scaler.Scaler). The saved model is trained on all non-test samples (minus its
inner validation part) and scored on the test set; the folds only estimate how well that procedure
does. Every split comes from one numpy generator seeded with `seed`, so a seed gives the same
outputs. The baselines fit on the same rows; with SNP dosages (gene-pca --keep-dosages) a polygenic
risk score (prs.py) joins them, its threshold chosen on the capsule network's own inner split.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from genointerp.capsule.baselines import fit_predict_baselines, fit_prs
from genointerp.capsule.fit import fit_capsule
from genointerp.capsule.metrics import scores
from genointerp.capsule.predict import capsule_lengths
from genointerp.capsule.scaler import Scaler
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import Split, make_split, subsample
from genointerp.io.features import Dosages
from genointerp.models.capsule import CapsuleConfig, CapsuleNet
from genointerp.report import Reporter


@dataclass
class TrainResult:
    model: CapsuleNet
    scaler: Scaler
    split: Split
    fold_scores: list[dict]  # {method, fold, accuracy, precision, recall, f1}
    test_scores: dict[str, dict]  # method -> scores (empty without a test set)
    test_lengths: np.ndarray  # (n_test, C)
    history: list[dict]  # per-epoch losses of the final model
    curve: list[dict] = field(default_factory=list)  # {fraction, method, fold, n_train, accuracy}
    prs: dict | None = None  # the final model's PRS: threshold, inner validation AUC, SNPs used


def fold_seed(s: CapsuleSettings, fold: int) -> int:
    """The training seed of CV fold `fold` (0-based); the final model uses s.seed itself."""
    return s.seed + fold + 1


def fold_run(x, y, train, evaluate, config, s, seed, history=None, dosages: Dosages | None = None, prs_fits=None):
    """Capsule (+ baselines, + PRS with dosages aligned to x's rows) fit on rows `train`, 0/1 calls on
    rows `evaluate`; standardised per fit. `prs_fits`, a list, gets the PRS fit."""
    scaler = Scaler.fit(x[train])
    xt, xe = scaler(x[train]), scaler(x[evaluate])
    model = fit_capsule(xt, y[train], config, s, seed, history)
    if not len(evaluate):  # --test-fraction 0: the final model has nothing held out
        return model, scaler, np.zeros((0, config.n_classes)), {}
    lengths = capsule_lengths(model, xe, s.device)
    calls = {"capsule": lengths.argmax(1)}
    if s.baselines:
        calls.update(fit_predict_baselines(xt, y[train], xe, seed, s.threads))
        if dosages is not None:
            fit = fit_prs(dosages, y, train, s, seed)
            calls["prs"] = fit.predict(dosages.matrix[evaluate])
            if prs_fits is not None:
                prs_fits.append(fit)
    return model, scaler, lengths, calls


def train(x: np.ndarray, y: np.ndarray, classes: list[str], config: CapsuleConfig, s: CapsuleSettings,
          report: Reporter, dosages: Dosages | None = None) -> TrainResult:
    """The whole protocol on aligned x (n, F) float64, y (n,) int64 (binary: label 1 is the case);
    with `dosages` (int8 (n, S), rows aligned to x) the baselines include the PRS."""
    split = make_split(y, classes, s.folds, s.test_fraction, s.seed)
    fold_scores = []
    for k in range(s.folds):
        tr, ev = split.fold(k)
        _, _, _, calls = fold_run(x, y, tr, ev, config, s, fold_seed(s, k), dosages=dosages)
        for method, call in calls.items():
            fold_scores.append({"method": method, "fold": k + 1, **scores(y[ev], call)})
        report.log(f"fold {k + 1}/{s.folds}: capsule accuracy {fold_scores[-len(calls)]['accuracy']:.3f} "
                   f"on {len(ev)} samples")
    curve = []
    for fraction in s.train_fractions:
        rng = np.random.default_rng([s.seed, int(round(fraction * 1e6))])
        for k in range(s.folds):
            tr, ev = split.fold(k)
            sub = subsample(tr, y, fraction, rng)
            _, _, _, calls = fold_run(x, y, sub, ev, config, s, fold_seed(s, k), dosages=dosages)
            curve += [{"fraction": fraction, "method": m, "fold": k + 1, "n_train": len(sub),
                       "accuracy": scores(y[ev], c)["accuracy"]} for m, c in calls.items()]
        report.log(f"training fraction {fraction:g}: done")
    history: list[dict] = []
    prs_fits: list = []
    model, scaler, lengths, calls = fold_run(x, y, split.train, split.test, config, s, s.seed, history, dosages,
                                             prs_fits)
    test_scores = {m: scores(y[split.test], c) for m, c in calls.items()} if len(split.test) else {}
    if test_scores:
        report.log(f"test set ({len(split.test)} samples): capsule accuracy {test_scores['capsule']['accuracy']:.3f}")
    prs = None
    if prs_fits:
        fit = prs_fits[0]
        prs = {"p_threshold": fit.threshold, "inner_valid_auc": round(fit.valid_auc, 6), "n_snps": fit.n_snps,
               "n_snps_available": int(dosages.matrix.shape[1])}
        report.log(f"PRS (final fit): p <= {fit.threshold:g} chosen on the inner validation part (AUC "
                   f"{fit.valid_auc:.3f}); {fit.n_snps} of {prs['n_snps_available']} SNPs in the score")
    return TrainResult(model, scaler, split, fold_scores, test_scores, lengths, history, curve, prs)
