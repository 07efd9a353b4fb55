"""capsule-train's protocol (DiseaseCapsule's): cross-validation against the baselines, the
--train-fraction curve, and the final model.

A balanced held-out test set (equal numbers of each class) is set aside first; the rest is split
into stratified folds for cross-validation (splits.make_split). Inside every training set an inner
stratified validation part (`valid_fraction`) decides early stopping on the margin loss and is not
used for gradient steps (fit.fit_capsule), unless s.refit trains the network anew on all the rows
for the epochs it chose (fit.refit). Features are standardised with the mean/sd of the training set
at hand (scaler.Scaler). The saved model is trained on all non-test samples and scored on the test
set; the folds only estimate how well that procedure does. Every split comes from one numpy
generator seeded with `seed`, so a seed gives the same outputs; every training runs on one thread,
several at once with --threads (train), so the thread count does not change them either. The
baselines fit on the same rows; with SNP dosages (gene-pca --keep-dosages) a polygenic risk score
(prs.py) joins them, its threshold chosen on the capsule network's own inner split.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from genointerp.capsule.baselines import NETWORK_LR, fit_predict_baselines, fit_predict_network_lr, fit_prs
from genointerp.capsule.fit import fit_capsule
from genointerp.capsule.metrics import scores
from genointerp.capsule.predict import capsule_lengths
from genointerp.capsule.scaler import Scaler
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import Split, make_split, subsample
from genointerp.io.features import Dosages
from genointerp.models.capsule import CapsuleConfig, CapsuleNet
from genointerp.pools import OrderedPool
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
        if config.primary == "gene":
            calls[NETWORK_LR] = fit_predict_network_lr(model, xt, y[train], xe, s.device)
        if dosages is not None:
            fit = fit_prs(dosages, y, train, s, seed)
            calls["prs"] = fit.predict(dosages.matrix[evaluate])
            if prs_fits is not None:
                prs_fits.append(fit)
    return model, scaler, lengths, calls


class Fit(NamedTuple):
    """One training of the protocol: rows `train` fit, rows `evaluate` scored, with `seed`; `final`:
    the saved model's (its weights and read-outs come back, not only the calls)."""

    train: np.ndarray
    evaluate: np.ndarray
    seed: int
    final: bool = False


@dataclass
class FinalFit:
    """What the final model's training gives back: the weights as numpy arrays (they cross from a
    worker process as plain arrays) and what fit_capsule recorded on the model."""

    state: dict
    config: CapsuleConfig  # with the pair capsule where fit_capsule gave it one
    screened_pair: tuple
    pair_evidence: dict | None
    scaler: Scaler
    lengths: np.ndarray
    calls: dict
    history: list
    prs: object | None  # prs.PrsFit

    def model(self, device: str) -> CapsuleNet:
        """The trained network, on `device`, in eval mode, with its screened_pair/pair_evidence."""
        with torch.random.fork_rng(devices=[]):  # its random init is overwritten: leave the generator be
            model = CapsuleNet(self.config)
        model.load_state_dict({k: torch.from_numpy(v) for k, v in self.state.items()})
        model.screened_pair, model.pair_evidence = self.screened_pair, self.pair_evidence
        return model.to(device).eval()


@contextmanager
def one_thread():
    """One torch and one BLAS thread for the block, the settings before restored after it. Every
    training of the protocol runs so, in this process or a worker: its small matrices (a batch of
    32 rows) gained nothing from a second thread, and on a busy machine two spinning threads made a
    fold 5-7x slower in wall time and CPU time alike (3,000 samples x 748 Gene-PCs, load 5)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


def run_fit(x, y, config, s, dosages, fit: Fit):
    """One Fit of the protocol on one thread: the calls dict (method -> 0/1 calls on fit.evaluate), or
    for the final model a FinalFit. A pure function of its arguments: the same wherever it runs."""
    history, prs_fits = ([], []) if fit.final else (None, None)
    with one_thread():
        model, scaler, lengths, calls = fold_run(x, y, fit.train, fit.evaluate, config, s, fit.seed, history,
                                                 dosages, prs_fits)
    if not fit.final:
        return calls
    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    return FinalFit(state, model.config, tuple(model.screened_pair), model.pair_evidence, scaler, lengths, calls,
                    history, prs_fits[0] if prs_fits else None)


def workers_for(s: CapsuleSettings, fits: int) -> int:
    """Worker processes besides this one for `fits` trainings: s.threads - 1 on the CPU (every
    training takes one thread), none on a GPU (its trainings queue for the one device anyway)."""
    return max(0, min(s.threads, fits) - 1) if s.device == "cpu" else 0


def train(x: np.ndarray, y: np.ndarray, classes: list[str], config: CapsuleConfig, s: CapsuleSettings,
          report: Reporter, dosages: Dosages | None = None) -> TrainResult:
    """The whole protocol on aligned x (n, F) float64, y (n,) int64 (binary: label 1 is the case);
    with `dosages` (int8 (n, S), rows aligned to x) the baselines include the PRS.

    Every training (CV folds, --train-fraction subsamples, the final model) is a Fit, worked on by
    run_fit on one thread: on the CPU with s.threads > 1 they run s.threads at a time, here and on
    forked workers (pools.OrderedPool), their answers taken in order. Each is a pure function of
    its rows and seed, so the outputs do not depend on s.threads."""
    split = make_split(y, classes, s.folds, s.test_fraction, s.seed)
    fits = [Fit(*split.fold(k), fold_seed(s, k)) for k in range(s.folds)]
    for fraction in s.train_fractions:
        rng = np.random.default_rng([s.seed, int(round(fraction * 1e6))])
        for k in range(s.folds):
            tr, ev = split.fold(k)
            fits.append(Fit(subsample(tr, y, fraction, rng), ev, fold_seed(s, k)))
    fits.append(Fit(split.train, split.test, s.seed, final=True))
    workers = workers_for(s, len(fits))
    pooled = replace(s, threads=1) if workers else s  # the random forest's n_jobs: one per process too
    with OrderedPool(partial(run_fit, x, y, config, pooled, dosages), workers) as pool:
        answers = pool.map((fit, fit) for fit in fits)
        fold_scores = []
        for k in range(s.folds):
            _, calls = next(answers)
            ev = fits[k].evaluate
            for method, call in calls.items():
                fold_scores.append({"method": method, "fold": k + 1, **scores(y[ev], call)})
            report.log(f"fold {k + 1}/{s.folds}: capsule accuracy {fold_scores[-len(calls)]['accuracy']:.3f} "
                       f"on {len(ev)} samples")
        curve = []
        for fraction in s.train_fractions:
            for k in range(s.folds):
                fit, calls = next(answers)
                curve += [{"fraction": fraction, "method": m, "fold": k + 1, "n_train": len(fit.train),
                           "accuracy": scores(y[fit.evaluate], c)["accuracy"]} for m, c in calls.items()]
            report.log(f"training fraction {fraction:g}: done")
        _, final = next(answers)
    model = final.model(s.device)
    calls = final.calls
    test_scores = {m: scores(y[split.test], c) for m, c in calls.items()} if len(split.test) else {}
    if test_scores:
        report.log(f"test set ({len(split.test)} samples): capsule accuracy {test_scores['capsule']['accuracy']:.3f}")
    prs = None
    if final.prs is not None:
        fit = final.prs
        prs = {"p_threshold": fit.threshold, "inner_valid_auc": round(fit.valid_auc, 6), "n_snps": fit.n_snps,
               "n_snps_available": int(dosages.matrix.shape[1])}
        report.log(f"PRS (final fit): p <= {fit.threshold:g} chosen on the inner validation part (AUC "
                   f"{fit.valid_auc:.3f}); {fit.n_snps} of {prs['n_snps_available']} SNPs in the score")
    return TrainResult(model, final.scaler, split, fold_scores, test_scores, final.lengths, final.history, curve, prs)
