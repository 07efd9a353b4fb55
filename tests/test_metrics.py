"""Classification metrics and the calibrated calling threshold."""

import numpy as np
import pytest

from genointerp.train.metrics import binary_metrics, recall_at_fpr, threshold_at_fpr


def test_binary_metrics_counts():
    y = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    p = np.array([0.9, 0.6, 0.2, 0.7, 0.1, 0.1, 0.3, 0.4])
    m = binary_metrics(y, p)
    # calls at 0.5: TP 2, FN 1, FP 1, TN 4
    assert m["accuracy"] == 6 / 8 and m["tpr"] == 2 / 3 and m["tnr"] == 4 / 5 and m["ppv"] == 2 / 3
    assert m["auroc"] == pytest.approx(11 / 15)  # 5 + 4 + 2 of the 15 positive-negative pairs ranked right


def test_threshold_at_fpr_bounds_the_false_positive_rate():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(500), np.zeros(1000)].astype(int)
    p = np.r_[rng.beta(5, 2, 500), rng.beta(2, 5, 1000)]
    for fpr in (0.0, 0.01, 0.05, 0.2):
        t = threshold_at_fpr(y, p, fpr)
        assert (p[y == 0] >= t).mean() <= fpr
        # and it is the lowest such threshold up to its 4-decimal rounding
        assert (p[y == 0] >= t - 1e-4).mean() > fpr or t == 0.0
    assert threshold_at_fpr(y, p, 1.0) == 0.0


def test_threshold_at_fpr_with_ties_and_exact_counts():
    y = np.array([0] * 10 + [1])
    p = np.array([0.1] * 8 + [0.5, 0.5, 0.9])
    assert threshold_at_fpr(y, p, 0.1) == 0.5001  # one negative allowed, but the top two tie
    assert threshold_at_fpr(y, p, 0.2) == 0.1001  # two allowed: both 0.5s may be called
    with pytest.raises(ValueError):
        threshold_at_fpr(np.ones(3, int), np.ones(3), 0.1)


def test_recall_at_fpr():
    y = np.array([1, 1, 0, 0, 0])
    p = np.array([0.9, 0.4, 0.5, 0.2, 0.1])
    assert recall_at_fpr(y, p, 0.0) == 0.5 and recall_at_fpr(y, p, 0.34) == 1.0
