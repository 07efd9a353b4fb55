"""Binary classification metrics over probabilities (numpy in, plain floats out)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve


def binary_metrics(y: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> dict[str, float]:
    """y: 0/1 (n,), p: P(positive) (n,). Accuracy, AUROC, TPR (recall), TNR, PPV (precision)."""
    call = p >= threshold
    pos, neg = y == 1, y == 0
    tp, tn = int((call & pos).sum()), int((~call & neg).sum())
    fp, fn = int((call & neg).sum()), int((~call & pos).sum())
    eps = 1e-7
    loss = float(-np.mean(y * np.log(np.clip(p, eps, 1)) + (1 - y) * np.log(np.clip(1 - p, eps, 1))))
    return {
        "loss": loss,
        "accuracy": (tp + tn) / max(len(y), 1),
        "auroc": float(roc_auc_score(y, p)) if pos.any() and neg.any() else float("nan"),
        "tpr": tp / max(tp + fn, 1),
        "tnr": tn / max(tn + fp, 1),
        "ppv": tp / max(tp + fp, 1),
    }


def recall_at_fpr(y: np.ndarray, p: np.ndarray, fpr: float = 0.01) -> float:
    """Largest TPR reachable with a false-positive rate at most `fpr`."""
    f, t, _ = roc_curve(y, p)
    return float(t[f <= fpr].max()) if (f <= fpr).any() else 0.0


def threshold_at_fpr(y: np.ndarray, p: np.ndarray, fpr: float, decimals: int = 4) -> float:
    """Lowest threshold (rounded up to `decimals`) at which at most `fpr` of the negatives score >= it.

    y: 0/1 (n,), p: P(positive) (n,). Rounding up only raises the threshold, so the bound holds.
    """
    neg = np.sort(p[y == 0])
    if neg.size == 0:
        raise ValueError("no negatives to set a threshold on")
    allowed = int(np.floor(fpr * neg.size + 1e-9))
    if allowed >= neg.size:
        return 0.0
    # every negative above index n - allowed - 1 may be called; that one and below must not be
    t = float(np.nextafter(neg[neg.size - allowed - 1], np.inf))
    return min(1.0, float(np.ceil(t * 10**decimals) / 10**decimals))


def plot_roc(y: np.ndarray, p: np.ndarray, path, title: str) -> None:
    import matplotlib  # here: only train-xvir's roc.png needs it, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, t, _ = roc_curve(y, p)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot(f, t, lw=1.5, label=f"AUROC {roc_auc_score(y, p):.4f}")
    ax.plot([0, 1], [0, 1], ls=":", c="grey")
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
