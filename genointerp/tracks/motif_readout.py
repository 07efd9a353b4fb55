"""The starting weights of a new motif scan's read-out (models.motif_scan, `train-tracks
--motif-scan`): a least-squares fit, on training windows, of what the model's trunk leaves
unexplained.

The scan's features are fixed, and the read-out adds them linearly to the rates, so for each track
the weights that best predict the residual y - rate (rate: the model without the scan) solve a
ridge-regularised least-squares problem over the training bins; the trunk then fine-tunes around
them. Why not let training find them: the weights a strong motif needs are in the tens to hundreds
(a consensus REST site adds about 15 to a peak's signal through hinges of 0 to 1), and Adam moves a
weight by about the learning rate per step, so a stage of a few thousand steps at 3e-4 would leave
the read-out near 0.
"""

from __future__ import annotations

import numpy as np
import torch

MAX_WINDOWS = 8192  # evenly spaced training windows: the 216 x 216 normal equations settle long before
RIDGE = 1e-3  # of the features' mean variance, so features that never fire get weight 0


@torch.inference_mode()
def fit_motif_readout(model, source, batch_size: int = 32) -> dict:
    """Set the motif heads of track model `model` (0 on entry) to the least-squares fit (with
    intercept) of y - rate over the bins of up to MAX_WINDOWS windows of `source` (`batch(idx) -> (x
    (B, L, 4), y (B, bins, T))`, T = the model's tracks). Returns {"windows": n, "explained": the
    fraction of the residual's variance, summed over tracks, that the fit removes}."""
    out = model.output
    if any(h.weight.any() or h.bias.any() for h in out.motif_heads):
        raise ValueError("the motif read-out is fitted from 0 only (a trained one is fine-tuned)")
    was_training = model.training
    model.eval()
    idx = np.unique(np.linspace(0, len(source) - 1, min(len(source), MAX_WINDOWS)).round().astype(int))
    n_f = out.scan.n_features
    sff, sf, sfr, sr, srr, n = np.zeros((n_f, n_f)), np.zeros(n_f), 0.0, 0.0, 0.0, 0
    for a in range(0, len(idx), batch_size):
        x, y = source.batch(idx[a : a + batch_size])
        xt = torch.from_numpy(x)
        f = out.scan(xt).double().flatten(0, 1).numpy()  # (B * bins, F)
        r = (torch.from_numpy(y) - model(xt)).double().flatten(0, 1).numpy()  # (B * bins, T)
        sff, sf, sfr = sff + f.T @ f, sf + f.sum(0), sfr + f.T @ r
        sr, srr, n = sr + r.sum(0), srr + (r * r).sum(0), n + len(f)
    mf, mr = sf / n, sr / n
    cov = sff / n - np.outer(mf, mf)  # (F, F)
    cross = sfr / n - np.outer(mf, mr)  # (F, T)
    ridge = RIDGE * max(np.trace(cov) / n_f, 1e-12)
    w = np.linalg.solve(cov + ridge * np.eye(n_f), cross)  # (F, T)
    bias = mr - mf @ w  # (T,)
    explained = float((cross * w).sum() / max((srr / n - mr**2).sum(), 1e-12))
    start = 0
    for head in out.motif_heads:
        end = start + head.out_features
        head.weight.copy_(torch.from_numpy(w[:, start:end].T).float())
        head.bias.copy_(torch.from_numpy(bias[start:end]).float())
        start = end
    model.train(was_training)
    return {"windows": len(idx), "explained": explained}
