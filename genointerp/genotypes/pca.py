"""Per-gene PCA of genotype dosages (the DiseaseCapsule Gene-PCA features).

For one gene with m kept SNPs and n samples, X is an int8 (n, m) dosage matrix with MISSING (-1)
for missing calls. Fitting uses only the fit (training) rows:

- per-SNP mean over the fit rows' non-missing calls; every missing call (any row) is imputed with
  it, so held-out samples never influence the transform;
- centred fit matrix Xc (n_fit, m); the principal axes are the top eigenvectors of the smaller Gram
  matrix (Xc.T Xc when m <= n_fit, else Xc Xc.T mapped back through Xc.T): the same axes as an SVD
  of Xc, at the cost of one matrix product and a small symmetric eigensolve;
- each axis is signed so that its largest-|loading| SNP loads positively (the first such SNP on
  ties), making the features reproducible across LAPACK builds;
- scores for every row are (X_imputed - mean) @ W, float32.

How many PCs: `PcsRule` (default 1 PC for 1-4 SNPs, 4 for 5-20, 8 above), never more than the
rank of Xc, which is at most min(m, n_fit - 1). A rule with a variance target (`var:0.99`) keeps
the fewest PCs that explain that share of the gene's variance, the count steps as a cap: a gene
acting through low-frequency SNPs (a burden) varies little along them, so its leading PCs, which
follow the common SNPs, miss it (benchmarks/capsule_family.py).
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.jsonfile import read_json_object
from genointerp.io.vcf import MISSING

DEFAULT_RULE = "4:1,20:4,inf:8"
TRANSFORM_JSON, TRANSFORM_NPZ = "transform.json", "transform.npz"
TRANSFORM_FORMAT = "genointerp-gene-pca-transform"
TRANSFORM_VERSION = 1


@dataclass(frozen=True)
class PcsRule:
    """steps: ((max_snps, n_pcs), ...) ascending; a gene with m SNPs gets the first step's n_pcs
    whose max_snps >= m. variance: with it, fewer where fewer PCs explain that share of the gene's
    variance."""

    steps: tuple[tuple[float, int], ...]
    variance: float | None = None

    @classmethod
    def parse(cls, text: str) -> "PcsRule":
        """`4:1,20:4,inf:8`: up to 4 SNPs 1 PC, up to 20 4 PCs, any more 8 PCs; a `var:F` term
        (0 < F <= 1) adds the variance target. ValueError if bad."""
        steps, variance = [], None
        for part in text.split(","):
            bound, sep, k = part.strip().partition(":")
            if not sep:
                raise ValueError(f"expected MAX_SNPS:N_PCS pairs, got {part!r}")
            if bound.strip().lower() == "var":
                variance = float(k)
                if not 0 < variance <= 1:
                    raise ValueError(f"{part!r}: the variance target must be in (0, 1]")
                continue
            b = math.inf if bound.strip().lower() in ("inf", "*") else float(int(bound))
            n = int(k)
            if n < 1 or b < 1:
                raise ValueError(f"{part!r}: bounds and PC counts must be >= 1")
            steps.append((b, n))
        if [b for b, _ in steps] != sorted({b for b, _ in steps}):
            raise ValueError("SNP bounds must increase")
        if not steps or steps[-1][0] != math.inf:
            raise ValueError("the last step must be inf:N (genes of any size)")
        return cls(tuple(steps), variance)

    def n_pcs(self, n_snps: int, explained: np.ndarray | None = None) -> int:
        """PCs for a gene of n_snps SNPs; with a variance target, `explained` (the variance ratios
        of its PCs, descending) cuts the count to the fewest that reach it."""
        k = next(k for b, k in self.steps if n_snps <= b)
        if self.variance is not None and explained is not None and len(explained):
            # 1e-9: a target of 1 is reached where rounding leaves the sum a hair below it
            k = min(k, int(np.searchsorted(np.cumsum(explained), self.variance - 1e-9)) + 1)
        return k

    def __str__(self) -> str:
        return ",".join([f"{'inf' if b == math.inf else int(b)}:{k}" for b, k in self.steps]
                        + ([f"var:{self.variance:g}"] if self.variance is not None else []))


@dataclass
class GeneFit:
    """means float64 (m,), components float64 (m, k), explained float64 (k,) variance ratios,
    scores float32 (n, k) for every row of X."""

    means: np.ndarray
    components: np.ndarray
    explained: np.ndarray
    scores: np.ndarray


def impute(x: np.ndarray, means: np.ndarray) -> np.ndarray:
    """float64 (n, m) copy of int8 dosages x with MISSING replaced by the column's mean."""
    out = x.astype(np.float64)
    miss = x == MISSING
    if miss.any():
        out[miss] = np.broadcast_to(means, x.shape)[miss]
    return out


def fit_means(x_fit: np.ndarray) -> np.ndarray:
    """Per-SNP mean dosage float64 (m,) over non-missing calls of int8 (n_fit, m); NaN if none."""
    called = x_fit != MISSING
    total = np.where(called, x_fit, 0).sum(axis=0, dtype=np.int64)
    n = called.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / n


def project(x: np.ndarray, means: np.ndarray, components: np.ndarray) -> np.ndarray:
    """Scores float32 (n, k) of int8 dosages (n, m) on components (m, k); missing -> mean."""
    return ((impute(x, means) - means) @ components).astype(np.float32)


def fit_gene(x: np.ndarray, fit_rows: np.ndarray, rule: PcsRule) -> GeneFit:
    """PCA of one gene: x int8 (n, m), fit_rows int64 indices of the training rows."""
    x_fit = x[fit_rows]
    means = fit_means(x_fit)
    xc = impute(x_fit, means) - means
    n_fit, m = xc.shape
    if m <= n_fit:
        evals, evecs = np.linalg.eigh(xc.T @ xc)
        evals, axes = evals[::-1], evecs[:, ::-1]
    else:  # more SNPs than samples: eigenvectors of the n x n Gram matrix, mapped to SNP space
        evals, evecs = np.linalg.eigh(xc @ xc.T)
        evals, evecs = evals[::-1], evecs[:, ::-1]
        axes = None
    total = float(np.einsum("ij,ij->", xc, xc))
    evals = np.clip(evals, 0.0, None)
    # numerical rank of xc: the Gram matrix's eigenvalues carry rounding errors of about
    # lambda_max * eps, so an axis counts when its eigenvalue stands clear of that
    tol = (evals[0] if len(evals) else 0.0) * max(n_fit, m) * np.finfo(np.float64).eps
    rank = int((evals > tol).sum()) if total > 0 else 0
    k = min(rule.n_pcs(m, evals[:rank] / total if total > 0 else None), rank, m, max(n_fit - 1, 0))
    if axes is None:
        axes = xc.T @ evecs[:, :k] / np.sqrt(evals[:k])
    components = np.ascontiguousarray(axes[:, :k])
    for j in range(k):
        if components[np.argmax(np.abs(components[:, j])), j] < 0:
            components[:, j] *= -1
    explained = evals[:k] / total if total > 0 else np.zeros(0)
    return GeneFit(means, components, explained, project(x, means, components))


@dataclass
class Transform:
    """A fitted Gene-PCA, saved as transform.json (genes, parameters) + transform.npz (arrays).

    genes: dicts with name, chrom, start, end, n_snps, n_pcs, first (row of its first SNP).
    Per gene-SNP row r (a SNP in two genes has two rows): chrom[r] str, pos[r] int64, ref[r]/alt[r]
    str, means[r] float64; components float64 (rows, max_pcs), zero beyond the gene's n_pcs.
    """

    genes: list[dict]
    chrom: np.ndarray
    pos: np.ndarray
    ref: np.ndarray
    alt: np.ndarray
    means: np.ndarray
    components: np.ndarray
    info: dict

    def gene_rows(self, i: int) -> slice:
        g = self.genes[i]
        return slice(g["first"], g["first"] + g["n_snps"])

    def gene_of_row(self) -> np.ndarray:
        """int64 (R,): the index into `genes` of each stacked SNP row."""
        return np.repeat(np.arange(len(self.genes)), [g["n_snps"] for g in self.genes])

    def snp_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct SNPs (chrom, pos, ref, alt) among the R gene-SNP rows, in the fitting VCF's
        order: (first row of each of the S SNPs int64 (S,), the SNP of each row int64 (R,)).

        The transform does not store the VCF's order, but it can be rebuilt: genes are stacked by
        VCF chromosome first, so a chromosome's first row gives its rank; within a chromosome the
        VCF is sorted by position; and SNPs sharing a position fall in the same genes (assignment
        looks at the position only), where rows keep the stream order. So fit and --apply order
        the dosage columns alike without the fitting VCF."""
        keys = list(zip(self.chrom.tolist(), self.pos.tolist(), self.ref.tolist(), self.alt.tolist()))
        first: dict[tuple, int] = {}
        for r, key in enumerate(keys):
            first.setdefault(key, r)
        chrom_rank: dict[str, int] = {}
        for c in self.chrom.tolist():
            chrom_rank.setdefault(c, len(chrom_rank))
        distinct = sorted(first.values(), key=lambda r: (chrom_rank[keys[r][0]], keys[r][1], r))
        column = {keys[r]: j for j, r in enumerate(distinct)}
        return np.array(distinct, dtype=np.int64), np.array([column[k] for k in keys], dtype=np.int64)

    def fingerprint(self) -> str:
        """SHA-256 of what the projection is: each gene's name, chromosome and PC count, its SNPs'
        chrom/pos/REF/ALT, means and loadings (float64 bytes). gene-pca records it in the features it
        writes, fit or --apply (the same transform, the same digest: the arrays round-trip exactly
        through transform.npz), and capsule-train keeps it in the model's config, so that
        capsule-predict can tell features of another fit (other axes, other signs) from a projection
        on the model's own."""
        import hashlib

        digest = hashlib.sha256()
        genes = [[g["name"], g["chrom"], int(g["n_snps"]), int(g["n_pcs"])] for g in self.genes]
        snps = [list(map(str, self.chrom.tolist())), [int(p) for p in self.pos.tolist()],
                list(map(str, self.ref.tolist())), list(map(str, self.alt.tolist()))]
        digest.update(json.dumps([genes, snps]).encode())
        for array in (self.means, self.components):
            digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
        return digest.hexdigest()

    def save(self, folder: Path) -> None:
        meta = {"format": TRANSFORM_FORMAT, "version": TRANSFORM_VERSION, **self.info, "genes": self.genes}
        (folder / TRANSFORM_JSON).write_text(json.dumps(meta, indent=1) + "\n")
        np.savez(folder / TRANSFORM_NPZ, chrom=self.chrom.astype(str), pos=self.pos, ref=self.ref.astype(str),
                 alt=self.alt.astype(str), means=self.means, components=self.components)

    @classmethod
    def load(cls, folder: str | Path) -> "Transform":
        folder = Path(folder)
        if not folder.is_dir():
            raise InputError(f"{folder}: no such folder (--apply takes a gene-pca output folder)")
        if not (folder / TRANSFORM_JSON).exists() or not (folder / TRANSFORM_NPZ).exists():
            raise InputError(f"{folder}: not a gene-pca transform (needs {TRANSFORM_JSON} and {TRANSFORM_NPZ})")
        meta = read_json_object(folder / TRANSFORM_JSON, f"{folder}/{TRANSFORM_JSON}: no such file",
                                "a gene-pca transform")
        try:
            with np.load(folder / TRANSFORM_NPZ, allow_pickle=False) as z:
                arrays = {k: z[k] for k in ("chrom", "pos", "ref", "alt", "means", "components")}
        except (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(f"{folder}: damaged gene-pca transform ({exc})") from None
        if meta.get("format") != TRANSFORM_FORMAT:
            raise InputError(f"{folder}/{TRANSFORM_JSON}: not a gene-pca transform")
        if meta.get("version") != TRANSFORM_VERSION:
            raise InputError(f"{folder}: transform version {meta.get('version')} (this genointerp reads {TRANSFORM_VERSION})")
        genes = meta.pop("genes", None)
        rows = len(arrays["pos"])
        try:
            firsts = np.cumsum([0] + [g["n_snps"] for g in genes])[:-1].tolist()
            ok = (all(len(a) == rows for a in arrays.values()) and arrays["components"].ndim == 2
                  and sum(g["n_snps"] for g in genes) == rows
                  and all(0 < g["n_pcs"] <= arrays["components"].shape[1] for g in genes)
                  and [g["first"] for g in genes] == firsts
                  and all(isinstance(g["name"], str) and isinstance(g["chrom"], str) for g in genes))
        except (TypeError, KeyError, AttributeError):
            ok = False
        if not ok:
            raise InputError(f"{folder}: damaged gene-pca transform (gene table and arrays disagree)")
        return cls(genes, arrays["chrom"], arrays["pos"], arrays["ref"], arrays["alt"], arrays["means"],
                   arrays["components"], meta)
