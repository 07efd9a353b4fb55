"""The cohort a capsule command learns from: the feature rows of the phenotyped samples, with a
binary phenotype whose case class is label 1."""

from __future__ import annotations

import numpy as np

from genointerp.errors import InputError
from genointerp.io.features import Features, Phenotypes

CASE_NAMES = ("case", "cases", "affected", "disease", "yes", "true", "t", "y")


def align(features: Features, phenotypes: Phenotypes, pheno_path: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(x float64 (n, F), y int64 (n,), samples) for the phenotyped samples, in phenotype-table order.

    A phenotyped sample without features is an error (a silently smaller cohort hides sample-id
    mix-ups); feature rows without a phenotype are simply not used.
    """
    known = set(features.samples)
    missing = [s for s in phenotypes.samples if s not in known]
    if missing:
        raise InputError(f"{pheno_path}: {len(missing)} phenotyped sample(s) have no features, e.g. {missing[0]!r}")
    sub = features.subset(phenotypes.samples)
    return sub.matrix.astype(np.float64), phenotypes.labels, phenotypes.samples


def order_case_last(phenotypes: Phenotypes, case: str | None, pheno_path: str) -> Phenotypes:
    """Binary phenotypes with the case class as label 1: `case` if given, else a class named like a
    case (case, affected, yes, ...), else the second in sort order (PLINK 2 of 1/2, 1 of 0/1)."""
    classes = phenotypes.classes
    if len(classes) != 2:
        raise InputError(f"{pheno_path}: {phenotypes.column!r} has {len(classes)} classes; capsule-train needs 2")
    if case is None:
        case = next((c for c in classes if c.lower() in CASE_NAMES), classes[1])
    if case not in classes:
        raise InputError(f"{pheno_path}: --case {case!r} is not a value of {phenotypes.column!r} ({', '.join(classes)})")
    if case == classes[1]:
        return phenotypes
    return Phenotypes(phenotypes.samples, 1 - phenotypes.labels, classes[::-1], phenotypes.column, phenotypes.dropped)


def class_counts(y: np.ndarray, classes: list[str]) -> str:
    """'control: 30, case: 30' for y (n,) int labels into `classes`."""
    return ", ".join(f"{c}: {int((y == i).sum())}" for i, c in enumerate(classes))
