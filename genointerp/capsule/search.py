"""capsule-search: a seeded genetic algorithm over gene subsets for interactions.

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

Generation 1 comes from the pair screen (pair_screen.py, run on the problem by screen_pairs: every
gene pair, a least-squares classifier with and without the products of the two genes' PCs): with
~100 genes there are ~5,000 pairs and a GA of ~100 capsule evaluations started at random almost
never meets a pair without marginal effects (XOR); the screen's best pairs are where the capsule
fitness is spent first.
GA: a population of subsets (sizes within [min_size, max_size]); each generation is evaluated, then
the next is bred: the `elite` best are copied, every other child comes from two tournament-selected
parents (uniform crossover on the gene sets, repaired to a size within the bounds) and a mutation
that swaps genes in/out. Everything random comes from one numpy generator seeded with the seed; its
state is part of the checkpoint written after every generation.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

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
from genointerp.errors import InputError
from genointerp.models.capsule import CapsuleConfig
from genointerp.report import Reporter
from genointerp.runtime import use_threads
from genointerp.train.fingerprint import load_state, save_state


@dataclass
class SearchSettings:
    population: int = 16
    generations: int = 10
    min_size: int = 2
    max_size: int = 2
    folds: int = 3
    repeats: int = 2  # fold splits averaged over (each a different stratified split of the samples)
    gate: float = 2.0  # SEs above chance the capsule's CV accuracy must exceed to earn credit
    size_penalty: float = 0.005  # fitness cost of each gene beyond min_size
    screen: bool = True  # first generation from the pair screen's best pairs (else random)
    elite: int = 1
    tournament: int = 2
    mutation_rate: float = 0.5  # probability that a child gets one gene swap (then another with the same chance)
    seed: int = 1


# ---- GA operators (pure: a subset and a generator in, a subset out) ---------------------------------------

def random_subset(n_genes: int, min_size: int, max_size: int, rng: np.random.Generator) -> Subset:
    size = int(rng.integers(min_size, max_size + 1))
    return tuple(sorted(int(g) for g in rng.choice(n_genes, size, replace=False)))


def tournament(ranks: list[int], k: int, rng: np.random.Generator) -> int:
    """Index of the winner of a k-way tournament (drawn with replacement) on `ranks` (0 = best)."""
    drawn = rng.integers(0, len(ranks), size=k)
    return int(min(drawn, key=lambda i: (ranks[i], i)))


def crossover(a: Subset, b: Subset, n_genes: int, min_size: int, max_size: int, rng: np.random.Generator) -> Subset:
    """Uniform crossover of gene sets: genes in both parents stay, each gene of only one parent is
    taken with probability 1/2; then repaired to a size drawn between the parents' sizes (within
    [min_size, max_size]): extra picks dropped at random (shared genes last), missing ones filled from
    the parents' other genes, then from genes of neither."""
    both = sorted(set(a) & set(b))
    either = sorted(set(a) ^ set(b))
    picked = [g for g in either if rng.random() < 0.5]
    lo, hi = sorted((len(a), len(b)))
    target = int(np.clip(rng.integers(lo, hi + 1), min_size, max_size))
    child = both + picked
    if len(child) > target:
        order = list(rng.permutation(picked)) + list(rng.permutation(both))  # drop one-parent genes first
        drop = set(int(g) for g in order[:len(child) - target])
        child = [g for g in child if g not in drop]
    if len(child) < target:
        rest = [g for g in either if g not in picked]
        fill = [int(g) for g in rng.permutation(rest)] if rest else []
        outside = np.setdiff1d(np.arange(n_genes), np.asarray(both + either, dtype=np.int64))
        fill += [int(g) for g in rng.permutation(outside)]
        child += fill[:target - len(child)]
    return tuple(sorted(int(g) for g in child))


def mutate(subset: Subset, n_genes: int, swaps: int, rng: np.random.Generator) -> Subset:
    """Swap exactly `swaps` genes: that many of the subset out, as many genes outside it in (the
    size stays). Capped at what the subset and the genes outside it allow."""
    outside = np.setdiff1d(np.arange(n_genes), np.asarray(subset, dtype=np.int64))
    swaps = min(swaps, len(subset), len(outside))
    if swaps == 0:
        return tuple(subset)
    out = set(int(g) for g in rng.choice(np.asarray(subset), swaps, replace=False))
    new = [int(g) for g in rng.choice(outside, swaps, replace=False)]
    return tuple(sorted([g for g in subset if g not in out] + new))


def rank_key(subset: Subset, fitness: float) -> tuple:
    """Sort key: higher fitness first, then the smaller subset, then gene order (a total order)."""
    return (-fitness, len(subset), subset)


def next_population(population: list[Subset], fitness: list[float], s: SearchSettings, n_genes: int,
                    known, rng: np.random.Generator) -> list[Subset]:
    """Elites, then children of tournament-selected parents (crossover, mutation). A child that is
    already evaluated (or already in the new population) gets up to 10 further mutations to be new."""
    order = sorted(range(len(population)), key=lambda i: rank_key(population[i], fitness[i]))
    ranks = [0] * len(population)
    for r, i in enumerate(order):
        ranks[i] = r
    new = [population[i] for i in order[:min(s.elite, len(population))]]
    while len(new) < s.population:
        a = population[tournament(ranks, s.tournament, rng)]
        b = population[tournament(ranks, s.tournament, rng)]
        child = crossover(a, b, n_genes, s.min_size, s.max_size, rng)
        swaps = 0
        while swaps < len(child) and rng.random() < s.mutation_rate:
            swaps += 1
        child = mutate(child, n_genes, swaps, rng)
        for _ in range(10):
            if child not in known and child not in new:
                break
            child = mutate(child, n_genes, 1, rng)
        new.append(child)
    return new


# ---- fitness ----------------------------------------------------------------------------------------------

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


# ---- the first generation: from the pair screen ----------------------------------------------------------

def screen_pairs(problem: Problem) -> list[tuple[Subset, float, float, float]]:
    """pair_screen.screen_gene_pairs on the problem's genes, cross-validated on its first repeat's folds."""
    return screen_gene_pairs(problem.x, problem.y, problem.gene_columns, problem.splits[0],
                             problem.settings.folds, problem.gate)


def first_generation(n_genes: int, s: SearchSettings, rng: np.random.Generator,
                     screened: list | None) -> list[Subset]:
    """Generation 1: the screen's best pairs (each grown with random genes to a size drawn within
    [min_size, max_size]) where a screen ran, else random subsets; distinct where the genes allow."""
    population: list[Subset] = []
    pairs = [pair for pair, *_ in screened] if screened else []
    for i in range(s.population):
        if i < len(pairs):
            size = int(rng.integers(s.min_size, s.max_size + 1))
            rest = np.setdiff1d(np.arange(n_genes), np.asarray(pairs[i]))
            sub = tuple(sorted([*pairs[i], *(int(g) for g in rng.choice(rest, max(size - 2, 0), replace=False))]))
        else:
            sub = random_subset(n_genes, s.min_size, s.max_size, rng)
        for _ in range(10):
            if sub not in population:
                break
            sub = random_subset(n_genes, s.min_size, s.max_size, rng)
        population.append(sub)
    return population


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


# ---- the search, with a checkpoint per generation -------------------------------------------------------

@dataclass
class SearchResult:
    cache: dict  # subset -> evaluation
    history: list[dict]  # per generation
    stopped_by_budget: bool


def load_checkpoint(path: Path, fingerprint: dict) -> dict:
    """The checkpoint's state, refused (naming what differs) unless saved with this fingerprint."""
    return load_state(path, fingerprint, "capsule-search checkpoint",
                      "the checkpoint is of a search with other inputs or settings", "rerun those, or remove it to start afresh")


def search(evaluator: Evaluator, n_genes: int, s: SearchSettings, fingerprint: dict, checkpoint: Path,
           resume: bool, time_budget: float | None, report: Reporter, gene_names: list[str],
           screened: list | None = None) -> SearchResult:
    """Run the GA (generation 1 from `screened`, screen_pairs' answer, where given); after every
    generation the state goes to `checkpoint` (--resume continues from it)."""
    if resume and checkpoint.exists():
        state = load_checkpoint(checkpoint, fingerprint)
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng"]
        population = [tuple(p) for p in state["population"]]
        cache = {tuple(k): v for k, v in state["cache"]}
        history, elapsed = state["history"], state["elapsed"]
        report.log(f"resuming {checkpoint}: {len(history)} of {s.generations} generations done, "
                   f"{len(cache)} subsets evaluated")
    else:
        if checkpoint.exists():
            raise InputError(f"{checkpoint}: an interrupted search's checkpoint: --resume it, or remove it to start afresh")
        rng = np.random.default_rng(s.seed)
        population = first_generation(n_genes, s, rng, screened)
        cache, history, elapsed = {}, [], 0.0
    stopped = bool(history) and time_budget is not None and elapsed >= time_budget
    while len(history) < s.generations and not stopped:
        start = time.monotonic()
        todo = list(dict.fromkeys(p for p in population if p not in cache))
        cache.update(zip(todo, evaluator(todo)))
        fitness = [cache[p]["fitness"] for p in population]
        best = min(population, key=lambda p: rank_key(p, cache[p]["fitness"]))
        generation = len(history) + 1
        if generation < s.generations:
            population_next = next_population(population, fitness, s, n_genes, cache, rng)
        else:
            population_next = population
        seconds = time.monotonic() - start
        elapsed += seconds
        history.append({"generation": generation, "evaluated": len(todo), "best_fitness": cache[best]["fitness"],
                        "mean_fitness": round(float(np.mean(fitness)), 6), "best_subset": list(best),
                        "seconds": round(seconds, 3)})
        stopped = time_budget is not None and elapsed >= time_budget and generation < s.generations
        population = population_next
        save_state(checkpoint, {"fingerprint": fingerprint, "rng": rng.bit_generator.state,
                                     "population": [list(p) for p in population],
                                     "cache": [[list(k), v] for k, v in cache.items()],
                                     "history": history, "elapsed": elapsed})
        report.log(f"generation {generation}/{s.generations}: best fitness {cache[best]['fitness']:+.4f} "
                   f"({','.join(gene_names[g] for g in best)}), mean {np.mean(fitness):+.4f}, "
                   f"{len(todo)} new subsets in {seconds:.1f} s"
                   + ("; time budget reached" if stopped else ""))
    return SearchResult(cache, history, stopped)


def ranked(cache: dict) -> list[tuple[Subset, dict]]:
    return sorted(cache.items(), key=lambda kv: rank_key(kv[0], kv[1]["fitness"]))


BEST_COLUMNS = ("rank", "genes", "n_genes", "fitness", "cv_accuracy_capsule", "cv_accuracy_logistic",
                "cv_difference_sd", "train_accuracy_capsule", "train_accuracy_logistic")


def best_table(cache: dict, gene_names: list[str], top: int = 10) -> str:
    """best.tsv: the `top` best subsets evaluated (rank 1 is the answer)."""
    lines = ["\t".join(BEST_COLUMNS)]
    for r, (sub, ev) in enumerate(ranked(cache)[:top], 1):
        lines.append(f"{r}\t{','.join(gene_names[g] for g in sub)}\t{len(sub)}\t{ev['fitness']:.4f}\t"
                     f"{ev['cv_capsule']:.4f}\t{ev['cv_logistic']:.4f}\t{ev['cv_diff_sd']:.4f}\t{ev['train_capsule']:.4f}\t{ev['train_logistic']:.4f}")
    return "\n".join(lines) + "\n"


HISTORY_COLUMNS = ("generation", "evaluated", "best_fitness", "mean_fitness", "best_subset", "seconds")


def history_table(history: list[dict], gene_names: list[str]) -> str:
    lines = ["\t".join(HISTORY_COLUMNS)]
    lines += [f"{h['generation']}\t{h['evaluated']}\t{h['best_fitness']:.4f}\t{h['mean_fitness']:.4f}\t"
              f"{','.join(gene_names[g] for g in h['best_subset'])}\t{h['seconds']:.2f}" for h in history]
    return "\n".join(lines) + "\n"


def plot_history(history: list[dict], path: Path) -> None:
    """history.png: best and mean fitness by generation."""
    # here: the worker processes (spawned) import this module and never plot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gen = [h["generation"] for h in history]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(gen, [h["best_fitness"] for h in history], marker="o", label="best")
    ax.plot(gen, [h["mean_fitness"] for h in history], marker=".", label="mean")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("generation")
    ax.set_ylabel("fitness: ACC capsule - max(ACC logistic, chance gate)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def settings_dict(s: SearchSettings) -> dict:
    return asdict(s)
