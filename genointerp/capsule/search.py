"""capsule-search: a seeded genetic algorithm over gene subsets for interactions.

A subset's fitness is what the capsule network's cross-validated accuracy on its genes' Gene-PCs
gains over logistic regression and over chance (genointerp.capsule.subset_fitness); the GA's
settings and operators are in genointerp.capsule.genetic. This module runs the search, one
generation at a time with a checkpoint after each (--resume continues from it), and writes its
tables.

Generation 1 comes from the pair screen (pair_screen.py, run on the problem by screen_pairs: every
gene pair, a least-squares classifier with and without the products of the two genes' PCs): with
~100 genes there are ~5,000 pairs and a GA of ~100 capsule evaluations started at random almost
never meets a pair without marginal effects (XOR); the screen's best pairs are where the capsule
fitness is spent first.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from genointerp.capsule.genetic import SearchSettings, first_generation, next_population, rank_key
from genointerp.capsule.pair_screen import Subset
from genointerp.capsule.subset_fitness import Evaluator
from genointerp.errors import InputError
from genointerp.report import Reporter
from genointerp.train.fingerprint import load_state, save_state


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
