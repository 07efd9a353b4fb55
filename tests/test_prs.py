"""The PRS baseline's pieces (genointerp/capsule/prs.py) on hand-made and planted dosages."""

import numpy as np
import pytest

from genointerp.capsule import prs

MISSING = -1


def test_marginal_effects_equal_the_closed_form_on_a_hand_made_matrix():
    # y = 0 0 1 1, so yc = -1/2 -1/2 1/2 1/2 and Syy = 1
    d = np.array([[0, 2, 1, MISSING],
                  [1, MISSING, 1, MISSING],
                  [2, 0, 1, MISSING],
                  [1, 0, 1, MISSING]], dtype=np.int8)
    fit = prs.marginal_effects(d, np.array([0, 0, 1, 1]))
    # SNP 0: xc = -1 0 1 0, Sxy = 1, Sxx = 2: beta 1/2, r^2 = 1/2, t^2 = r^2 (n - 2) / (1 - r^2) = 2;
    # a t with 2 degrees of freedom has two-sided p = 1 - |t| / sqrt(t^2 + 2)
    # SNP 1: the missing call takes the mean of 2, 0, 0 = 2/3, so xc = 4/3 0 -2/3 -2/3: Sxy = -4/3,
    # Sxx = 8/3: beta -1/2, r^2 = 2/3, t^2 = 4
    # SNP 2 is constant and SNP 3 never called: no effect, p 1
    assert fit.means == pytest.approx([1, 2 / 3, 1, 0])
    assert fit.beta == pytest.approx([0.5, -0.5, 0, 0])
    assert fit.p == pytest.approx([1 - np.sqrt(2) / 2, 1 - 2 / np.sqrt(6), 1, 1], rel=1e-12)


def test_marginal_effects_match_scipy_linregress_after_mean_imputation():
    from scipy.stats import linregress

    rng = np.random.default_rng(4)
    d = rng.binomial(2, 0.3, size=(70, 9)).astype(np.int8)
    d[rng.random(d.shape) < 0.05] = MISSING
    y = rng.integers(0, 2, 70)
    fit = prs.marginal_effects(d, y)
    for j in range(9):
        x = d[:, j].astype(float)
        x[x == MISSING] = x[x != MISSING].mean()
        ref = linregress(x, y)
        assert (fit.beta[j], fit.p[j]) == pytest.approx((ref.slope, ref.pvalue), rel=1e-9)


def test_a_planted_snp_is_recovered_with_the_right_sign_and_the_smallest_p():
    rng = np.random.default_rng(5)
    d = rng.binomial(2, 0.3, size=(400, 50)).astype(np.int8)
    # log-odds -1.5 per copy of SNP 17's allele: at n = 400 its z-score is near 10, while the smallest
    # of 49 null p-values is of the order of 1/49
    logit = -1.5 * (d[:, 17] - d[:, 17].mean())
    y = (rng.random(400) < 1 / (1 + np.exp(-logit))).astype(int)
    fit = prs.marginal_effects(d, y)
    assert int(np.argmin(fit.p)) == 17 and fit.beta[17] < 0 and fit.p[17] < 1e-10
    assert np.sort(fit.p)[1] > 1e-4


def test_two_rows_leave_no_degrees_of_freedom_and_every_p_at_1():
    fit = prs.marginal_effects(np.array([[0, 1], [2, 1]], dtype=np.int8), np.array([0, 1]))
    assert fit.beta == pytest.approx([0.5, 0]) and list(fit.p) == [1, 1]


def ld_snps():
    """Six SNPs over 8 samples, columns in no particular order: e, a, g, c, b, f with
    a = b = f = g (r = 1), c with r = 1/2 to a (r^2 = 0.25 > 0.1), e with r = 0 to a and 1/4 to c."""
    a = [0, 0, 0, 0, 2, 2, 2, 2]
    c = [0, 0, 0, 2, 2, 2, 2, 0]
    e = [0, 2, 0, 2, 0, 2, 0, 2]
    cols = {"e": (e, "1", 150_000), "a": (a, "1", 1_000), "g": (a, "2", 1_000), "c": (c, "1", 200_000),
            "b": (a, "1", 100_000), "f": (a, "1", 400_000)}
    names = list(cols)
    d = np.array([cols[k][0] for k in names], dtype=np.int8).T
    return names, d, [cols[k][1] for k in names], np.array([cols[k][2] for k in names])


def test_ld_pairs_are_the_snps_within_250_kb_with_r2_above_0_1():
    names, d, chrom, pos = ld_snps()
    ld = prs.ld_pairs(d, chrom, pos)
    pairs = {frozenset((names[i], names[j])) for i in range(len(names))
             for j in ld.indices[ld.indptr[i]:ld.indptr[i + 1]]}
    # f is 399 kb from a and 300 kb from b: too far, but 200 kb from c; g lies on chromosome 2
    assert pairs == {frozenset(p) for p in ("ab", "ac", "bc", "cf")}


def test_clumping_keeps_the_smallest_p_and_removes_its_ld_partners():
    names, d, chrom, pos = ld_snps()
    ld = prs.ld_pairs(d, chrom, pos)
    p = {"b": 0.001, "a": 0.002, "f": 0.003, "c": 0.004, "g": 0.01, "e": 0.5}
    keep = prs.clump(np.array([p[k] for k in names]), ld)
    # b removes a and c; f then has no partner left standing; g and e have none at all
    assert {k for k, kept in zip(names, keep) if kept} == {"b", "f", "g", "e"}


def test_scores_put_a_missing_call_at_the_mean():
    d = np.array([[MISSING], [0], [2]], dtype=np.int8)
    assert prs.scores(d, np.array([1.0]), np.array([[0.5]]))[:, 0] == pytest.approx([0, -0.5, 0.5])


def test_a_score_that_separates_the_classes_gives_accuracy_1():
    score = np.array([-3.0, -2.0, -1.5, 1.0, 2.0, 5.0])
    y = np.array([0, 0, 0, 1, 1, 1])
    calls = prs.Calibration(score, y)
    assert list(calls.predict(score)) == list(y)
    assert list(calls.predict(np.array([-10.0, 10.0]))) == [0, 1]


def test_fit_prs_keeps_the_causal_snp_and_calls_held_out_rows_right():
    rng = np.random.default_rng(6)
    d = rng.binomial(2, 0.3, size=(360, 60)).astype(np.int8)
    d[rng.random(d.shape) < 0.01] = MISSING
    d[:, 7] = rng.binomial(2, 0.3, 360)  # the causal SNP always called, so its carriers are known
    y = (d[:, 7] > 0).astype(int)  # cases carry SNP 7's allele
    chrom, pos = ["1"] * 60, np.arange(60) * 10_000 + 1
    train, test = np.arange(300), np.arange(300, 360)
    inner_valid = np.arange(0, 300, 5)
    inner_train = np.setdiff1d(np.arange(300), inner_valid)
    fit = prs.fit_prs(d[train], y[train], chrom, pos, inner_train, inner_valid)
    # SNP 7 alone separates the classes (r^2 near 0.5 at n = 240: p far below 5e-8) and gives a
    # validation AUC of 1; the smallest threshold reaching it wins, and no null SNP passes 5e-8
    assert fit.threshold == 5e-8 and fit.valid_auc == 1.0 and fit.n_snps == 1
    assert np.flatnonzero(fit.weights).tolist() == [7] and fit.weights[7] > 0
    assert (fit.predict(d[test]) == y[test]).all()
