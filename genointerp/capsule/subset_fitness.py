"""capsule-search's fitness of a gene subset, and its evaluation in this process or a pool.

The fitness of a gene subset S rewards only what a sum of per-gene effects does not explain:

    fitness(S) = ACC_DC(S) - max(ACC_LR(S), chance + gate * SE) - size_penalty * (|S| - min_size)

ACC_DC and ACC_LR are the capsule network's and logistic regression's cross-validated accuracy on
the Gene-PCs of S only, averaged over `repeats` different fold splits (each sample is held out once
per repeat; a model never scores rows it was fit on). chance is the majority-class share, SE =
sqrt(chance (1 - chance) / n) the sd of a no-signal model's accuracy over n held-out samples. So a
subset earns credit only where the capsule network beats both the additive model and what a
no-signal subset reaches by luck: a difference of two accuracies alone rewarded logistic regression
falling below chance (cross-validation on noise is biased below chance), and one fold split
rewarded a lucky split. Training accuracies are kept too (they reward memorising, so they are
reported, not optimised).

The folds, standardisation, capsule fit and logistic regression are capsule-train's
(splits.make_splits with no test set, scaler.Scaler, fit.fit_capsule, baselines.baseline_models);
every subset is scored on the same splits and with the same training seeds, so a subset's fitness is
a pure function of the subset and the settings, which is what makes the cache, -t and --resume safe.
"""

from __future__ import annotations

import multiprocessing
import signal
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from genointerp.capsule.baselines import baseline_models
from genointerp.capsule.fit import fit_capsule
from genointerp.capsule.interpret import gene_index
from genointerp.capsule.pair_screen import Subset, chance_threshold, screen_gene_pairs
from genointerp.capsule.predict import capsule_lengths
from genointerp.capsule.scaler import Scaler
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import Split
from genointerp.models.capsule import CapsuleConfig
from genointerp.runtime import use_threads


@dataclass
class Problem:
    """What a fitness evaluation needs (sent once to each worker process)."""

    x: np.ndarray  # float64 (n, F) aligned features
    y: np.ndarray  # int64 (n,)
    gene_columns: list[np.ndarray]  # column indices of each gene
    columns: list[str]
    splits: list[Split]  # no test set, one per repeat
    settings: CapsuleSettings
    config: dict  # CapsuleConfig fields other than n_features/gene_index
    gate: float = 2.0
    size_penalty: float = 0.0
    min_size: int = 1


def repeat_fold_seed(seed: int, folds: int, repeat: int, fold: int) -> int:
    """The capsule training seed of fold `fold` of repeat `repeat` (repeat 0 = capsule-train's fold_seed)."""
    return seed + repeat * folds + fold + 1


def fitness_of(cv_capsule: float, cv_logistic: float, threshold: float, size: int, min_size: int,
               size_penalty: float) -> float:
    return cv_capsule - max(cv_logistic, threshold) - size_penalty * (size - min_size)


def evaluate(problem: Problem, subset: Subset) -> dict:
    """Mean over repeats x folds of the capsule network's and logistic regression's accuracy on the
    held-out fold (cv_*) and on the rows they were fit on (train_*), on the Gene-PCs of `subset`;
    cv_diff_sd is the sd over repeats of (capsule - logistic), and fitness the module's formula."""
    cols = np.concatenate([problem.gene_columns[g] for g in subset])
    names = [problem.columns[j] for j in cols]
    x, y, s = problem.x[:, cols], problem.y, problem.settings
    config = CapsuleConfig(n_features=len(cols), **problem.config,
                           gene_index=gene_index(names) if problem.config["primary"] == "gene" else ())
    acc = {"cv_capsule": [], "cv_logistic": [], "train_capsule": [], "train_logistic": []}
    diff = []
    for r, split in enumerate(problem.splits):
        correct = {"cv_capsule": 0, "cv_logistic": 0}
        for k in range(s.folds):
            tr, ev = split.fold(k)
            scaler = Scaler.fit(x[tr])
            xt, xe = scaler(x[tr]), scaler(x[ev])
            model = fit_capsule(xt, y[tr], config, s, repeat_fold_seed(s.seed, s.folds, r, k))
            hit = capsule_lengths(model, xe, s.device).argmax(1) == y[ev]
            correct["cv_capsule"] += int(hit.sum())
            acc["train_capsule"].append(np.mean(capsule_lengths(model, xt, s.device).argmax(1) == y[tr]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lr = baseline_models(repeat_fold_seed(s.seed, s.folds, r, k), 1)["logistic_regression"]().fit(xt, y[tr])
            correct["cv_logistic"] += int((lr.predict(xe) == y[ev]).sum())
            acc["train_logistic"].append(np.mean(lr.predict(xt) == y[tr]))
        n = len(split.train)  # every sample held out once per repeat: accuracy over all of them
        acc["cv_capsule"].append(correct["cv_capsule"] / n)
        acc["cv_logistic"].append(correct["cv_logistic"] / n)
        diff.append(acc["cv_capsule"][-1] - acc["cv_logistic"][-1])
    out = {k: round(float(np.mean(v)), 6) for k, v in acc.items()}
    out["cv_diff_sd"] = round(float(np.std(diff, ddof=1)) if len(diff) > 1 else 0.0, 6)
    _, threshold = chance_threshold(y, problem.gate)
    out["fitness"] = round(fitness_of(out["cv_capsule"], out["cv_logistic"], threshold, len(subset),
                                      problem.min_size, problem.size_penalty), 6)
    return out


def screen_pairs(problem: Problem) -> list[tuple[Subset, float, float, float]]:
    """pair_screen.screen_gene_pairs on the problem's genes, cross-validated on its first repeat's folds."""
    return screen_gene_pairs(problem.x, problem.y, problem.gene_columns, problem.splits[0],
                             problem.settings.folds, problem.gate)


_WORKER: dict = {}


def _worker_init(problem: Problem) -> None:
    # Ctrl-C reaches every process of the terminal's process group: the parent alone answers it
    # (one line, exit 130) and stops the workers; SIGINT was blocked while they started (Evaluator)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    use_threads(1)
    _WORKER["problem"] = problem


def _worker_evaluate(subset: Subset) -> dict:
    return evaluate(_WORKER["problem"], subset)


class Evaluator:
    """Fitness of many subsets: in this process (threads 1) or a pool of `threads` processes, one
    torch thread each; the results do not depend on which. A context manager: the pool is shut
    down on the way out, its workers stopped at once when an error or an interruption leaves."""

    def __init__(self, problem: Problem, threads: int) -> None:
        self.problem, self.threads, self.pool = problem, threads, None

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(abort=exc_type is not None)

    def __call__(self, subsets: list[Subset]) -> list[dict]:
        if self.threads <= 1 or len(subsets) <= 1:
            return [evaluate(self.problem, sub) for sub in subsets]
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.threads, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_worker_init, initargs=(self.problem,))
        # workers start as tasks are submitted, and inherit this thread's signal mask: with SIGINT
        # blocked, a Ctrl-C before _worker_init ignores it cannot reach them (this process gets it
        # when the mask is restored)
        before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            results = self.pool.map(_worker_evaluate, subsets)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        return list(results)

    def close(self, abort: bool = False) -> None:
        """Shut the pool down after its work, or with `abort` at once: its workers are stopped where
        they are instead of finishing subsets nobody will read."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        if abort:  # Python 3.14 has ProcessPoolExecutor.terminate_workers(); before it, only this
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
