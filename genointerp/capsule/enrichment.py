"""Gene-set enrichment of a capsule network's decisive genes (capsule-train --gene-sets).

DiseaseCapsule reads biology out of the genes that drive the network's calls (the `decisive` rows
of genes.tsv, see interpret.py) by asking which known gene sets (GO terms, MSigDB collections)
hold more of them than chance would. Here that question is a one-sided hypergeometric test per set:

    universe N  feature genes named by at least one set of the file (tested or not)
    n           decisive genes in the universe
    K           the set's genes in the universe (= its genes among the feature genes)
    k           decisive genes in the set
    p           P(X >= k), X ~ Hypergeometric(N, K, n) = scipy.stats.hypergeom.sf(k - 1, N, K, n)

The universe leaves out feature genes that no set names, as GO tools restrict to annotated genes:
such a gene says nothing about any set, and counting it would tie the p-values to how fully the
file annotates the features (well-studied genes are both annotated and often found). Sets with
K outside [min_size, max_size] are not tested (tiny sets give unstable p-values, huge ones say
little); Benjamini-Hochberg FDR is taken over the sets tested. Genes are matched by symbol, case-
sensitively, as MSigDB does (its human symbols are upper case, its mouse ones not: `CD4` and `Cd4`
are genes of two species).

GMT (the Broad's gene-matrix-transposed format): one set per line, tab-separated: name,
description (may be empty or a URL), then gene symbols.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import hypergeom

from genointerp.errors import InputError
from genointerp.io.inputs import read_lines

MIN_SET_SIZE = 5
MAX_SET_SIZE = 500
COLUMNS = ("set", "description", "set_size", "overlap", "decisive_in_universe", "universe", "p_value", "fdr", "genes")


@dataclass(frozen=True)
class GeneSet:
    name: str
    description: str
    genes: tuple[str, ...]  # distinct symbols, in file order


def read_gmt(path: str | os.PathLike) -> list[GeneSet]:
    """The gene sets of a GMT file (plain, gzip or a pipe), in file order.

    Fields and symbols are stripped of surrounding whitespace, a symbol repeated within a set
    counts once, blank lines are skipped. One InputError line for a missing or empty file, a line
    without a name, a description and at least one gene, or a set name given twice.
    """
    sets: list[GeneSet] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")]
        genes = tuple(dict.fromkeys(g for g in fields[2:] if g))
        if len(fields) < 3 or not fields[0] or not genes:
            hint = " (is it tab-separated?)" if len(fields) == 1 else ""
            raise InputError(f"{path}: line {number}: a gene set needs a name, a description and genes, "
                             f"tab-separated; found {sum(1 for f in fields if f)} non-empty field(s){hint}")
        name = fields[0]
        if name in first_line:
            raise InputError(f"{path}: line {number}: gene set {name!r} is given twice (first on line {first_line[name]})")
        first_line[name] = number
        sets.append(GeneSet(name, fields[1], genes))
    if not sets:
        raise InputError(f"{path}: empty gene-set file (no gene sets)")
    return sets


def universe_of(sets: Sequence[GeneSet], feature_genes: Iterable[str]) -> set[str]:
    """The test's universe: feature gene symbols named by at least one of `sets`."""
    named = {g for s in sets for g in s.genes}
    return {g for g in feature_genes if g in named}


def check_gene_sets(sets: Sequence[GeneSet], feature_genes: Sequence[str], path: str | os.PathLike,
                    min_size: int = MIN_SET_SIZE, max_size: int = MAX_SET_SIZE) -> str:
    """Refuse gene sets that cannot give a test, before any training: none names a feature gene,
    or none has min_size..max_size feature genes. Returns a log line (sets read, tested, universe)."""
    universe = universe_of(sets, feature_genes)
    if not universe:
        example = f" (features name e.g. {feature_genes[0]!r}, the sets e.g. {sets[0].genes[0]!r})" if feature_genes and sets else ""
        raise InputError(f"{path}: none of the {len(sets)} gene sets names a gene of the features: "
                         f"gene symbols differ?{example}")
    sizes = [sum(g in universe for g in s.genes) for s in sets]
    tested = sum(min_size <= k <= max_size for k in sizes)
    if not tested:
        raise InputError(f"{path}: no gene set has {min_size} to {max_size} genes of the features "
                         f"(the largest has {max(sizes)}); see --min-set-size/--max-set-size")
    return (f"{path}: {len(sets)} gene sets, {tested} with {min_size} to {max_size} feature genes to test; "
            f"universe {len(universe)} of {len(set(feature_genes))} feature genes")


def bh_fdr(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values float64 (m,) for p-values (m,), in the input order:
    q_(i) = min over j >= i of p_(j) * m / j (ascending ranks); never above 1, as q_(m) = p_(m)."""
    p = np.asarray(p, dtype=np.float64)
    if not len(p):
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * len(p) / np.arange(1, len(p) + 1)
    q = np.minimum.accumulate(scaled[::-1])[::-1]  # monotone: a smaller p never gets a larger q
    out = np.empty_like(q)
    out[order] = q
    return out


def enrichment(sets: Sequence[GeneSet], feature_genes: Iterable[str], decisive: Sequence[str],
               min_size: int = MIN_SET_SIZE, max_size: int = MAX_SET_SIZE) -> list[dict]:
    """One row per tested set, sorted by p-value then set name.

    sets: the GMT's sets; feature_genes: symbols of the genes in the features; decisive: the
    decisive symbols, most decisive first (the order of each row's `genes`). A row is a dict with
    the keys of COLUMNS: set (str), description (str), set_size K, overlap k, decisive_in_universe
    n, universe N (ints), p_value, fdr (floats), genes (list of str, the overlap).
    """
    universe = universe_of(sets, feature_genes)
    hits = [g for g in dict.fromkeys(decisive) if g in universe]
    rows = []
    for s in sets:
        members = {g for g in s.genes if g in universe}
        if not min_size <= len(members) <= max_size:
            continue
        overlap = [g for g in hits if g in members]
        p = float(hypergeom.sf(len(overlap) - 1, len(universe), len(members), len(hits)))
        rows.append({"set": s.name, "description": s.description, "set_size": len(members),
                     "overlap": len(overlap), "decisive_in_universe": len(hits), "universe": len(universe),
                     "p_value": min(max(p, 0.0), 1.0), "genes": overlap})  # sf's rounding may leave [0, 1]
    for row, q in zip(rows, bh_fdr(np.array([r["p_value"] for r in rows]))):
        row["fdr"] = float(q)
    return sorted(rows, key=lambda r: (r["p_value"], r["set"]))


def enrichment_table(rows: Sequence[dict]) -> str:
    """enrichment.tsv text: COLUMNS, p-values and FDR with 6 significant digits (same bytes every run)."""
    lines = ["\t".join(COLUMNS)]
    lines += [f"{r['set']}\t{r['description']}\t{r['set_size']}\t{r['overlap']}\t{r['decisive_in_universe']}\t"
              f"{r['universe']}\t{r['p_value']:.6g}\t{r['fdr']:.6g}\t{','.join(r['genes'])}" for r in rows]
    return "\n".join(lines) + "\n"
