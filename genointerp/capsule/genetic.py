"""capsule-search's genetic algorithm over gene subsets: its settings and its operators.

A population of subsets (sizes within [min_size, max_size]); each generation is evaluated
(genointerp.capsule.subset_fitness), then the next is bred: the `elite` best are copied, every
other child comes from two tournament-selected parents (uniform crossover on the gene sets,
repaired to a size within the bounds) and a mutation that swaps genes in/out. Generation 1 comes
from the pair screen's best pairs where it ran (see genointerp.capsule.search). The operators are
pure: a subset and a numpy generator in, a subset out; everything random comes from the one
generator seeded with the seed (genointerp.capsule.search checkpoints its state).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp.capsule.pair_screen import Subset


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
