"""The training loop of a capsule network: Adam with exponential learning-rate decay, early stopping
on the inner validation part's margin loss, and (gene primary capsules) the group penalty that
switches off genes which do not help, sparing the pair screen's best pair where asked."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import torch

from genointerp.capsule.pair_screen import NULL_C, screened_pair
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import inner_split
from genointerp.models.capsule import CapsuleConfig, CapsuleNet
from genointerp.runtime import deterministic_kernels

# The group penalty's weight falls with the training rows n as (PENALTY_ROWS / n) ** PENALTY_EXPONENT:
# more rows estimate a gene's effect better, so fewer genes need switching off. Fitted, not derived:
# on the planted tuning cohorts (benchmarks/capsule.py, seeds 11 and 12) the best weight was about
# 0.003 at 544 training rows (1,000 samples) and about 0.0005 at 1,632 (3,000 samples), where
# 0.001 already lost 0.06-0.10 of CV accuracy under XOR and mixed effects: 6x for 3x the rows.
# Below PENALTY_MIN_ROWS the weight stays at its value there: extrapolated upwards, the rule would
# switch off every gene of a small cohort (60 samples: 50x the 1,000-sample weight).
PENALTY_ROWS, PENALTY_EXPONENT, PENALTY_MIN_ROWS = 1000, 1.5, 500


def penalty_weight(s: CapsuleSettings, n_rows: int) -> float:
    """The group penalty's weight in the loss of a training on n_rows rows."""
    return s.gene_penalty * (PENALTY_ROWS / max(n_rows, PENALTY_MIN_ROWS)) ** PENALTY_EXPONENT


def pcs_only(x: np.ndarray, config: CapsuleConfig, burden_columns: int) -> tuple[np.ndarray, CapsuleConfig]:
    """x (n, F) and its config without the last `burden_columns` columns (the per-gene burden
    columns, burden.py): what the pair test reads. Every gene with a burden column has PCs before
    it, so the genes keep their numbers."""
    if not burden_columns:
        return x, config
    keep = config.n_features - burden_columns
    return x[:, :keep], replace(config, n_features=keep, gene_index=config.gene_index[:keep])


def pair_axes(x: np.ndarray, y: np.ndarray, config: CapsuleConfig) -> tuple[tuple[float, ...], ...]:
    """The pair capsule's rank-1 view: each of config.pair's two genes' additive-score
    axis, the weights of its columns (PCs and any burden column) in the pair test's additive model
    (an L2 logistic regression, C = NULL_C, on every column of x (n, F) float32 standardised, y (n,)
    0/1: these rows only), scaled so that the gene's score x_g . w_g has sd 1 on these rows (a
    gene with no weight gets 0s). ((K_a floats), (K_b floats)), fixed from then on (config.pair_axes)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    xd = x.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        coef = LogisticRegression(C=NULL_C, max_iter=1000).fit(xd, y).coef_[0]
    index = np.asarray(config.gene_index)
    axes = []
    for g in config.pair:
        cols = np.flatnonzero(index == g)
        w = coef[cols]
        sd = float((xd[:, cols] @ w).std())
        axes.append(tuple(float(v) for v in (w / sd if sd > 0 else np.zeros_like(w))))
    return tuple(axes)


def fit_capsule(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, s: CapsuleSettings, seed: int,
                history: list | None = None) -> CapsuleNet:
    """Train on standardised x (n, F) float32, y (n,): Adam + exponential LR decay, early stopping on
    the inner validation margin loss; returns the best epoch's model (eval mode, on s.device). With
    s.gene_penalty > 0 (gene primary capsules only) the group penalty, weighted by penalty_weight,
    joins the training loss (with s.pair_screen, sparing screened_pair's genes, which the model's
    `screened_pair` attribute records, and its evidence `pair_evidence`; with s.pair_capsule too, a
    pair capsule for them where the evidence calls them interacting: the model's config then has the
    `pair`, its `pair_axes` (pair_axes, on the inner training rows) and `pair_products`, false
    where the scores family called the pair); the
    validation loss that stops training is the margin loss alone.
    `history`, a list, gets a {epoch, train_loss, valid_loss, valid_accuracy} row per epoch."""
    rng = np.random.default_rng(seed)
    tr, va = inner_split(y, s.valid_fraction, rng)
    penalise = s.gene_penalty > 0
    if penalise and config.primary != "gene":
        raise ValueError("gene_penalty needs gene primary capsules")
    weight = penalty_weight(s, len(tr))
    exempt, evidence = ((), None)
    if penalise and s.pair_screen:
        x_pcs, config_pcs = pcs_only(x, config, s.burden_columns)
        # the burden columns join the pair test's additive null model, not its products
        exempt, evidence = screened_pair(x_pcs, y, config_pcs, seed, x[:, config_pcs.n_features:],
                                         config.gene_index[config_pcs.n_features:])
    # the pair capsule only where the pair passes the bar that capsule-train's report applies
    # (interacting): the screen's best pair of an additive cohort would only add parameters
    if exempt and s.pair_capsule and evidence["interacting"]:
        # the rank-1 view joins the pair capsule; where the test called the pair from that view alone
        # (the scores family), the capsule reads it without the K_a x K_b PC products
        config = replace(config, pair=exempt, pair_products=evidence["test"] != "scores")
        config = replace(config, pair_axes=pair_axes(x[tr], y[tr], config))
    torch.manual_seed(seed)
    model = CapsuleNet(config).to(s.device)
    model.screened_pair = exempt  # the final model's is reported in config.json
    model.pair_evidence = evidence  # and the test's numbers for it
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=s.lr_decay)
    xt, yt = torch.from_numpy(x[tr]).to(s.device), torch.from_numpy(y[tr]).to(s.device)
    xv, yv = torch.from_numpy(x[va]).to(s.device), torch.from_numpy(y[va]).to(s.device)
    gen = torch.Generator().manual_seed(seed)
    best, best_state, wait = math.inf, None, 0
    with deterministic_kernels(s.device):  # the same seed gives the same model on a GPU too
        for epoch in range(1, s.epochs + 1):
            model.train()
            total = 0.0
            for idx in torch.randperm(len(tr), generator=gen).split(s.batch_size):
                idx = idx.to(s.device)
                loss = model.loss(model(xt[idx]), yt[idx])
                total += float(loss.detach()) * len(idx)
                if penalise:  # per batch, so its weight against the margin loss does not depend on the batch count
                    loss = loss + weight * model.group_penalty(exempt)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            sched.step()
            model.eval()
            with torch.inference_mode():
                lengths = model(xv)
                vloss = float(model.loss(lengths, yv))
                vacc = float((lengths.argmax(1) == yv).float().mean())
            if history is not None:
                history.append({"epoch": epoch, "train_loss": total / len(tr), "valid_loss": vloss, "valid_accuracy": vacc})
            if vloss < best - 1e-7:
                best, wait = vloss, 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                wait += 1
                if wait >= s.patience:
                    break
    model.load_state_dict(best_state)
    return model.eval()
