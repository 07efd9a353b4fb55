"""The pair screen: every gene pair scored in seconds for an interaction an additive model misses.

A ridge least-squares classifier on the two genes' PCs with and without the products of their PCs,
cross-validated: where the products win by more than chance allows, the pair likely interacts.
capsule-search starts its GA from the best pairs (screen.tsv); capsule-train --pair-screen spares
the best pair from the group penalty (`screened_pair`). The chance gate (`chance_threshold`) is the
one capsule-search's fitness applies.
"""

from __future__ import annotations

import numpy as np

from genointerp.capsule.scaler import Scaler
from genointerp.capsule.splits import Split, make_splits
from genointerp.models.capsule import CapsuleConfig

Subset = tuple[int, ...]  # sorted gene numbers

SCREEN_RIDGE = 1.0
SCREEN_COLUMNS = ("rank", "genes", "score", "cv_accuracy_products", "cv_accuracy_additive")


def chance_threshold(y: np.ndarray, gate: float) -> tuple[float, float]:
    """(chance, chance + gate * SE): the majority-class share, and what a no-signal model's
    held-out accuracy over len(y) samples exceeds with probability ~ Phi(-gate)."""
    chance = float(max(y.mean(), 1 - y.mean()))
    return chance, chance + gate * float(np.sqrt(chance * (1 - chance) / len(y)))


def pair_design(xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, int]:
    """The screen's design for genes a and b: [1, PCs of a, PCs of b, every product PC_a x PC_b],
    float64 (n, 1 + K_a + K_b + K_a K_b) from xa (n, K_a), xb (n, K_b); and how many of its
    columns come before the products (the additive model's design)."""
    n = len(xa)
    main = np.hstack([np.ones((n, 1)), xa, xb])
    return np.hstack([main, (xa[:, :, None] * xb[:, None, :]).reshape(n, -1)]), main.shape[1]


def ridge_fit(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Ridge least-squares weights (ridge SCREEN_RIDGE) of target (n,) on design (n, p): (p,)."""
    return np.linalg.solve(design.T @ design + SCREEN_RIDGE * np.eye(design.shape[1]), design.T @ target)


def screen_gene_pairs(x: np.ndarray, y: np.ndarray, genes: list[np.ndarray], split: Split, folds: int,
                      gate: float) -> list[tuple[Subset, float, float, float]]:
    """Every gene pair (a, b) of x (n, F) float64, y (n,) int64, `genes` the column indices of each
    gene, scored in seconds: a ridge least-squares classifier (labels -1/+1, ridge SCREEN_RIDGE,
    sign of the fit as the call) on [1, PCs of a, PCs of b, every product PC_a x PC_b] against the
    same without the products, cross-validated on `split`'s `folds` folds (standardised on each
    training fold). Returns (pair, score, cv_accuracy_products,
    cv_accuracy_additive), best first, score = products - max(additive, chance + `gate` SE) as the
    fitness has it: the products are what an additive model lacks, and the gate keeps pure noise
    at the bottom."""
    t = 2.0 * y - 1
    n_genes = len(genes)
    correct = np.zeros((2, n_genes, n_genes))
    for k in range(folds):
        tr, ev = split.fold(k)
        xs = Scaler.fit(x[tr])(x).astype(np.float64)
        hit_tr, hit_ev = t[tr], y[ev] == 1
        for a in range(n_genes):
            xa = xs[:, genes[a]]
            for b in range(a + 1, n_genes):
                full, n_main = pair_design(xa, xs[:, genes[b]])
                for m, design in enumerate((full, full[:, :n_main])):
                    w = ridge_fit(design[tr], hit_tr)
                    correct[m, a, b] += np.sum((design[ev] @ w > 0) == hit_ev)
    _, threshold = chance_threshold(y, gate)
    out = []
    for a in range(n_genes):
        for b in range(a + 1, n_genes):
            products, additive = correct[0, a, b] / len(y), correct[1, a, b] / len(y)
            out.append(((a, b), round(products - max(additive, threshold), 6), round(products, 6), round(additive, 6)))
    return sorted(out, key=lambda r: (-r[1], r[0]))


def _gene_columns(config: CapsuleConfig) -> list[np.ndarray]:
    index = np.asarray(config.gene_index)
    return [np.flatnonzero(index == g) for g in range(config.n_genes)]


def _screen_split(y: np.ndarray, seed: int) -> Split:
    """capsule-train's screen: 3 folds of the training rows at hand."""
    return make_splits(y, ["0", "1"], 3, 1, seed)[0]


def screened_pair(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, seed: int) -> Subset:
    """The best gene pair (gene numbers of config.gene_index) of the pair screen on standardised
    x (n, F), y (n,) — 3 folds of these rows only — or () where no pair's products beat an additive
    fit and the chance gate. Why: the group penalty gives a gene without a marginal effect no reason
    to keep its map, so an XOR pair stays switched off unless it is exempted."""
    # gate 2 SE: capsule-search's default --gate
    pair, score, _, _ = screen_gene_pairs(x.astype(np.float64), y, _gene_columns(config), _screen_split(y, seed),
                                          3, 2.0)[0]
    return tuple(pair) if score > 0 else ()


# The chance of calling an interaction where no pair interacts, over all the screen's pairs
INTERACTION_ALPHA = 0.05


def pair_interaction(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, pair: Subset, seed: int) -> dict:
    """Whether screened_pair's pair (on the same x (n, F), y (n,) and seed) interacts beyond what
    the best of all G (G - 1) / 2 pairs reaches by chance. The spared pair is the screen's maximum,
    so it passes the 2 SE gate that sparing needs even where no pair interacts (a gene pair of an
    additive cohort, 92 genes x 3,000 samples: gains of 0.021-0.028); to be called interacting its
    gain, products' CV accuracy less the larger of the additive fit's and chance, must pass
    z SE with z = Phi^-1(1 - INTERACTION_ALPHA / pairs) (Bonferroni: 4.4 SE, 0.043 there, where
    planted XOR pairs gain 0.19-0.22). Returns {cv_accuracy_products, cv_accuracy_additive, gain,
    chance_gain, pairs, interacting}."""
    from scipy.stats import norm

    genes = _gene_columns(config)
    _, _, products, additive = screen_gene_pairs(x.astype(np.float64), y, [genes[g] for g in pair],
                                                 _screen_split(y, seed), 3, 2.0)[0]
    chance, _ = chance_threshold(y, 0.0)
    pairs = config.n_genes * (config.n_genes - 1) // 2
    bar = float(norm.isf(INTERACTION_ALPHA / pairs)) * float(np.sqrt(chance * (1 - chance) / len(y)))
    gain = products - max(additive, chance)
    return {"cv_accuracy_products": products, "cv_accuracy_additive": additive, "gain": round(gain, 6),
            "chance_gain": round(bar, 6), "pairs": pairs, "interacting": bool(gain > bar)}


def screen_table(screened: list, gene_names: list[str], top: int = 100) -> str:
    """screen.tsv: the `top` pairs of the screen, best first."""
    lines = ["\t".join(SCREEN_COLUMNS)]
    lines += [f"{r}\t{gene_names[a]},{gene_names[b]}\t{score:.4f}\t{products:.4f}\t{additive:.4f}"
              for r, ((a, b), score, products, additive) in enumerate(screened[:top], 1)]
    return "\n".join(lines) + "\n"
