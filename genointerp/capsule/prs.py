"""Polygenic risk score baseline for capsule-train: clumping and thresholding (C+T) on SNP dosages.

Every step is estimated on the training rows of one fit (a fold, a --train-fraction subsample, or
the final model's training set); held-out rows are only scored. Dosages d are int8 (n, S) with
MISSING (-1) for no call; a missing dosage takes the SNP's mean over the rows an estimate is made on.

1. Marginal effects: per SNP, least-squares regression of the 0/1 phenotype on the dosage, beta =
   Sxy / Sxx, with the two-sided p-value of its t statistic (n - 2 degrees of freedom), for all SNPs
   at once in closed form (one matrix product). Linear rather than logistic: for the small per-SNP
   effects of complex traits both rank SNPs alike, the closed form needs no iterations, and step 4
   recalibrates the score's scale anyway.
2. Clumping, PRSice's defaults: SNPs in increasing p order; each one not yet removed is kept as an
   index SNP and removes every SNP on its chromosome within 250 kb whose r^2 with it exceeds 0.1.
   r comes from the genotypes (never the phenotypes) of the fit's training rows, computed in blocks
   along the genome for SNP pairs within the window only (cost n x S x SNPs per window).
3. Thresholding: the p-value threshold (P_THRESHOLDS) is chosen on an inner split of the training
   rows: effects and clumping on its training part, the area under the ROC curve of each
   threshold's score on its validation part; the best AUC wins, ties going to the smallest
   threshold (the sparser score). Effects and clumping are then redone on all training rows, and
   the index SNPs with p <= threshold make the score sum_j beta_j (x_j - mean_j).
4. Calls: a logistic regression of the phenotype on the score (standardised with the training
   rows' mean and sd) fitted on the training rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import f as f_dist
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from genointerp.genotypes.pca import fit_means, impute

P_THRESHOLDS = (5e-8, 1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5, 1.0)
CLUMP_R2 = 0.1
CLUMP_KB = 250
BLOCK = 256  # SNPs per block: bounds the float64 copies at n x BLOCK (+ the window) values


@dataclass
class Effects:
    """Per-SNP marginal effects over one set of rows: beta, p and means float64 (S,) (the means
    impute missing dosages; a SNP without a call there has mean 0, beta 0 and p 1)."""

    beta: np.ndarray
    p: np.ndarray
    means: np.ndarray


def _centred(d: np.ndarray, means: np.ndarray, cols) -> np.ndarray:
    """float64 (n, k) dosages of columns `cols` minus their means, a missing call at 0 (its mean)."""
    return impute(d[:, cols], means[cols]) - means[cols]


def marginal_effects(d: np.ndarray, y: np.ndarray) -> Effects:
    """Least-squares effect of each SNP's dosage on y, one SNP at a time: d int8 (n, S), y 0/1 (n,)."""
    n, s = d.shape
    means = np.nan_to_num(fit_means(d), nan=0.0)  # no call at all: a constant 0 column, no effect
    yc = y.astype(np.float64) - y.mean()
    syy = float(yc @ yc)
    sxy, sxx = np.empty(s), np.empty(s)
    for a in range(0, s, BLOCK):
        xc = _centred(d, means, slice(a, a + BLOCK))
        sxy[a:a + BLOCK], sxx[a:a + BLOCK] = xc.T @ yc, np.einsum("ij,ij->j", xc, xc)
    informative = (sxx > 0) & (syy > 0)
    beta, p = np.zeros(s), np.ones(s)
    beta[informative] = sxy[informative] / sxx[informative]
    if n > 2:
        r2 = np.clip(sxy[informative] ** 2 / (sxx[informative] * syy), 0.0, 1.0)
        with np.errstate(divide="ignore"):  # r^2 = 1: t is infinite, p 0
            t2 = r2 * (n - 2) / (1 - r2)
        p[informative] = f_dist.sf(t2, 1, n - 2)  # t^2 ~ F(1, n - 2): the two-sided t-test
    return Effects(beta, p, means)


@dataclass
class Ld:
    """SNP pairs in LD (r^2 > CLUMP_R2 within CLUMP_KB on one chromosome), as adjacency lists in CSR
    form: the neighbours of SNP i are indices[indptr[i]:indptr[i + 1]] (int64, both directions)."""

    indptr: np.ndarray
    indices: np.ndarray


def ld_pairs(d: np.ndarray, chrom: list[str], pos: np.ndarray, r2_min: float = CLUMP_R2,
             kb: int = CLUMP_KB) -> Ld:
    """The SNP pairs of d int8 (n, S) with r^2 > r2_min, at most kb kilobases apart on one chromosome
    (chrom (S,), pos int64 (S,), any order); r over the n rows, missing calls at the SNP's mean."""
    n, s = d.shape
    codes = np.unique(np.asarray(chrom), return_inverse=True)[1].astype(np.int64)
    key = codes * (1 << 40) + pos  # positions < 2^31: chromosomes never meet within a window
    order = np.argsort(key, kind="stable")
    key = key[order]
    means = np.nan_to_num(fit_means(d), nan=0.0)
    window = kb * 1000
    left, right = [], []
    for a in range(0, s, BLOCK):
        b = min(a + BLOCK, s)
        hi = int(np.searchsorted(key, key[b - 1] + window, side="right"))
        z = _centred(d, means, order[a:hi])
        norm = np.sqrt(np.einsum("ij,ij->j", z, z))
        z /= np.where(norm > 0, norm, 1.0)  # unit columns: z_i . z_j is r; a constant SNP has r 0
        z32 = z.astype(np.float32)  # r only meets the 0.1 bound: float32 halves the dominant cost
        r = z32[:, : b - a].T @ z32  # (b - a, hi - a): each block SNP against itself and what follows
        i, j = np.nonzero(r * r > r2_min)
        i, j = i + a, j + a
        near = (j > i) & (key[j] - key[i] <= window)
        left.append(order[i[near]])
        right.append(order[j[near]])
    first, second = np.concatenate(left), np.concatenate(right)
    source, target = np.concatenate([first, second]), np.concatenate([second, first])
    by_source = np.lexsort((target, source))
    indptr = np.zeros(s + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=s), out=indptr[1:])
    return Ld(indptr, target[by_source].astype(np.int64))


def clump(p: np.ndarray, ld: Ld) -> np.ndarray:
    """bool (S,): the index SNPs of greedy clumping by p float (S,) (ties: the lower index first)."""
    removed = np.zeros(len(p), dtype=bool)
    keep = np.zeros(len(p), dtype=bool)
    for i in np.argsort(p, kind="stable").tolist():
        if not removed[i]:
            keep[i] = True
            removed[ld.indices[ld.indptr[i]:ld.indptr[i + 1]]] = True
    return keep


def scores(d: np.ndarray, means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """float64 (n, k) scores (d - means) @ weights of d int8 (n, S), weights float (S, k); missing
    calls at the means."""
    out = np.zeros((d.shape[0], weights.shape[1]))
    for a in range(0, d.shape[1], BLOCK):
        if np.any(weights[a:a + BLOCK]):  # most blocks of a sparse score add nothing
            out += _centred(d, means, slice(a, a + BLOCK)) @ weights[a:a + BLOCK]
    return out


def choose_threshold(d: np.ndarray, y: np.ndarray, inner_train: np.ndarray, inner_valid: np.ndarray,
                     ld: Ld) -> tuple[float, list[float]]:
    """(the P_THRESHOLDS value whose score has the best validation AUC, the AUC of each): effects and
    clumping on rows inner_train, scores of rows inner_valid (int64 positions into d int8 (n, S), y)."""
    fit = marginal_effects(d[inner_train], y[inner_train])
    kept = clump(fit.p, ld)
    weights = np.stack([fit.beta * (kept & (fit.p <= t)) for t in P_THRESHOLDS], axis=1)  # (S, thresholds)
    valid = scores(d[inner_valid], fit.means, weights)
    auc = [float(roc_auc_score(y[inner_valid], valid[:, k])) for k in range(len(P_THRESHOLDS))]
    return P_THRESHOLDS[int(np.argmax(auc))], auc  # argmax: the first, smallest, of tied thresholds


@dataclass
class PrsFit:
    """A fitted score: weights and means float64 (S,) (score = (d - means) @ weights) and the
    1-feature logistic regression that turns scores into calls."""

    threshold: float
    valid_auc: float  # the chosen threshold's AUC on the inner validation rows
    n_snps: int  # SNPs in the score
    weights: np.ndarray
    means: np.ndarray
    calls: "Calibration"

    def predict(self, d: np.ndarray) -> np.ndarray:
        """0/1 calls int64 (n,) for d int8 (n, S)."""
        return self.calls.predict(scores(d, self.means, self.weights[:, None])[:, 0])


class Calibration:
    """A logistic regression of a 0/1 phenotype on one score, standardised with the training mean
    and sd (so the regression's default L2 penalty does not depend on the score's units)."""

    def __init__(self, score: np.ndarray, y: np.ndarray) -> None:
        """score float (n,), y 0/1 (n,): the training rows."""
        sd = score.std()
        self.centre, self.scale = float(score.mean()), float(sd) if sd > 0 else 1.0
        self.model = LogisticRegression().fit(self._standardised(score), y)

    def _standardised(self, score: np.ndarray) -> np.ndarray:
        return ((score - self.centre) / self.scale)[:, None]

    def predict(self, score: np.ndarray) -> np.ndarray:
        """0/1 calls int64 (n,) for scores float (n,)."""
        return self.model.predict(self._standardised(score)).astype(np.int64)


def fit_prs(d: np.ndarray, y: np.ndarray, chrom: list[str], pos: np.ndarray, inner_train: np.ndarray,
            inner_valid: np.ndarray) -> PrsFit:
    """C+T on the training rows d int8 (n, S), y 0/1 (n,); SNP positions chrom (S,), pos int64 (S,);
    inner_train/inner_valid: the inner split of the n rows (int64 positions) that picks the threshold."""
    ld = ld_pairs(d, chrom, pos)
    threshold, auc = choose_threshold(d, y, inner_train, inner_valid, ld)
    fit = marginal_effects(d, y)
    chosen = clump(fit.p, ld) & (fit.p <= threshold)
    weights = np.where(chosen, fit.beta, 0.0)
    calls = Calibration(scores(d, fit.means, weights[:, None])[:, 0], y)
    return PrsFit(threshold, auc[P_THRESHOLDS.index(threshold)], int(np.count_nonzero(weights)), weights, fit.means,
                  calls)
