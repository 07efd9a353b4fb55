"""Which rows train, validate and test: the balanced test set and stratified folds of capsule-train,
the repeated fold splits of capsule-search, the inner validation part of every training and the
subsamples of --train-fraction. Every split comes from a numpy generator seeded by the caller, so
a seed gives the same rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp.errors import InputError


@dataclass
class Split:
    """Row indices into the aligned matrix: the held-out test set and the folds of the rest."""

    test: np.ndarray
    train: np.ndarray  # every non-test row
    fold_of: np.ndarray  # (len(train),) fold number of each non-test row

    def fold(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.train[self.fold_of != k], self.train[self.fold_of == k]


def make_split(y: np.ndarray, classes: list[str], folds: int, test_fraction: float, seed) -> Split:
    """Balanced test set of round(test_fraction * n / C) samples per class, then stratified folds.
    `seed`: anything numpy's default_rng takes (an int, or capsule-search's [seed, repeat])."""
    rng = np.random.default_rng(seed)
    n_classes = len(classes)
    per_class = [np.flatnonzero(y == c) for c in range(n_classes)]
    n_test = int(round(test_fraction * len(y) / n_classes))
    if test_fraction > 0 and n_test == 0:
        raise InputError(f"{len(y)} samples are too few for a --test-fraction of {test_fraction}")
    test, train, fold_of = [], [], []
    for c, rows in enumerate(per_class):
        rows = rng.permutation(rows)
        rest = len(rows) - n_test
        # 2 x folds: every training set then keeps at least 2 of each class, one for the inner validation
        if rest < 2 * folds:
            raise InputError(f"class {classes[c]!r} has {len(rows)} samples: too few for {folds} folds "
                             f"(need {2 * folds} outside the test set, which takes {n_test} of each class)")
        test.append(rows[:n_test])
        train.append(rows[n_test:])
        fold_of.append(np.arange(rest) % folds)
    order = np.argsort(np.concatenate(train), kind="stable")  # rows in input order: folds mix classes
    return Split(np.sort(np.concatenate(test)), np.concatenate(train)[order], np.concatenate(fold_of)[order])


def make_splits(y: np.ndarray, classes: list[str], folds: int, repeats: int, seed: int) -> list[Split]:
    """`repeats` stratified fold splits (no test set); repeat r is seeded with (seed, r)."""
    return [make_split(y, classes, folds, 0.0, [seed, r]) for r in range(repeats)]


def inner_split(y: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train, valid) positions into y; valid holds at least one and leaves one of each class."""
    tr, va = [], []
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = min(max(1, int(round(fraction * len(rows)))), len(rows) - 1)
        va.append(rows[:k])
        tr.append(rows[k:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(va))


def subsample(rows: np.ndarray, y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A stratified `fraction` of rows (at least 2 per class, so an inner validation split exists)."""
    keep = []
    for c in np.unique(y[rows]):
        members = rng.permutation(rows[y[rows] == c])
        keep.append(members[:max(2, int(round(fraction * len(members))))])
    return np.sort(np.concatenate(keep))
