"""The training loop of a capsule network: Adam with exponential learning-rate decay, early stopping
on the inner validation part's margin loss, and (gene primary capsules) the group penalty that
switches off genes which do not help, sparing the pair screen's best pair where asked, and the gene
screen that switches off, before training, the genes whose score test shows no effect of their own."""

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

# A network with a pair capsule takes its best epoch from PAIR_MIN_EPOCHS on: the states before it count
# as the best only until then. The inner validation margin loss of an interacting cohort at 3,000
# samples can bottom out at epoch 2-3, where the pair capsule's weights have not grown yet (on a
# tuning cohort's dense XOR the weight on the interacting axes' product 0.8-1.0 there, 1.9-2.1 by
# epoch 10, test accuracy 0.647-0.657 against 0.690-0.702): the gene screen leaves few genes to
# overfit, and the noise of 360 validation rows picked the early minimum. Tried at 10 only, on tuning
# seeds 4, 5, 11-13 (benchmarks/capsule_family.py's interacting cohorts, 3,000 samples, h2 0.5, two
# training seeds each): test accuracy up in 19 of 60 trainings, down in 8, mean +0.003 (docs/capsule.md).
PAIR_MIN_EPOCHS = 10


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


def null_weights(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The pair test's additive model on these rows: an L2 logistic regression (C = NULL_C) of y (n,)
    0/1 on every column of x (n, F) float32 standardised. (weights float64 (F,), intercept)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = LogisticRegression(C=NULL_C, max_iter=1000).fit(x.astype(np.float64), y)
    return fitted.coef_[0], float(fitted.intercept_[0])


def _unit_sd(x: np.ndarray, w: np.ndarray) -> tuple[float, ...]:
    """w scaled so that the score x . w has sd 1 on the rows of x (0s where it has none)."""
    sd = float((x @ w).std())
    return tuple(float(v) for v in (w / sd if sd > 0 else np.zeros_like(w)))


def pair_axes(x: np.ndarray, y: np.ndarray, config: CapsuleConfig,
              null: tuple[np.ndarray, float] | None = None) -> tuple[tuple[float, ...], ...]:
    """The pair capsule's rank-1 view: each of config.pair's two genes' additive-score
    axis, the weights of its columns (PCs and any burden column) in the pair test's additive model
    (null_weights on x (n, F) float32 standardised, y (n,) 0/1: these rows only; `null` its answer where
    already fitted), scaled so that the gene's score x_g . w_g has sd 1 on these rows (a
    gene with no weight gets 0s). ((K_a floats), (K_b floats)), fixed from then on (config.pair_axes)."""
    coef, _ = null_weights(x, y) if null is None else null
    xd, index = x.astype(np.float64), np.asarray(config.gene_index)
    return tuple(_unit_sd(xd[:, cols], coef[cols]) for cols in (np.flatnonzero(index == g) for g in config.pair))


# The interacting axes' fit: alternations of the two genes' axes, and the ridge on each axis's weights
# (the additive model's own, 1 / NULL_C on the summed log-likelihood)
JOINT_ROUNDS = 4
JOINT_RIDGE = 1 / NULL_C


def _offset_logistic(f: np.ndarray, offset: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    """Weights w (K,) of the logistic regression logit = offset + b + f w of y (n,) 0/1 on f (n, K)
    float64, ridge `ridge` on w (not on the intercept b), by Newton's method from 0."""
    design = np.hstack([np.ones((len(y), 1)), f])
    penalty = ridge * np.eye(design.shape[1])
    penalty[0, 0] = 0.0
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(offset + design @ w)))
        step = np.linalg.solve(design.T @ ((p * (1 - p))[:, None] * design) + penalty + 1e-9 * np.eye(len(w)),
                               design.T @ (y - p) - penalty @ w)
        w += step
        if np.abs(step).max() < 1e-10:
            break
    return w[1:]


def _oriented(v: np.ndarray) -> np.ndarray:
    """v of unit length, its largest loading positive (0s stay 0s)."""
    norm = float(np.linalg.norm(v))
    if norm == 0:
        return v
    v = v / norm
    return v * np.sign(v[np.argmax(np.abs(v))])


def interaction_axes(x: np.ndarray, y: np.ndarray, config: CapsuleConfig,
                     null: tuple[np.ndarray, float] | None = None) -> tuple[tuple[float, ...], ...]:
    """Each of config.pair's two genes' interacting axis: the directions v_a, v_b of the genes'
    columns (PCs and any burden column) whose product (x_a . v_a)(x_b . v_b) best adds to the pair
    test's additive model (null_weights on x (n, F) float32 standardised, y (n,) 0/1: these rows only;
    `null` its answer where already fitted), a rank-1 bilinear logistic term on top of the additive
    fit's logit (its offset). Started at the leading singular pair of sum_i r_i x_a x_b^T (r = y - p
    of the additive fit: the score-test direction), then JOINT_ROUNDS alternations, each fitting one
    gene's axis with the other's fixed (ridge JOINT_RIDGE). An exclusive-or has no additive axis, so
    the additive scores' product (pair_axes) misses it, and the K_a x K_b PC products leave the
    direction to be learnt from the rows among many noise products; the interaction of the planted
    family is a function of one score per gene, which lies along one direction of each gene.
    Each axis scaled so that x_g . v_g has sd 1 on these rows, its largest loading positive:
    ((K_a floats), (K_b floats)), fixed from then on (config.pair_interaction_axes)."""
    coef, intercept = null_weights(x, y) if null is None else null
    xd, index = x.astype(np.float64), np.asarray(config.gene_index)
    yd = y.astype(np.float64)
    offset = xd @ coef + intercept
    xa, xb = (xd[:, np.flatnonzero(index == g)] for g in config.pair)
    r = yd - 1 / (1 + np.exp(-offset))
    u, _, vt = np.linalg.svd(xa.T @ (r[:, None] * xb))
    va, vb = _oriented(u[:, 0]), _oriented(vt[0])
    for _ in range(JOINT_ROUNDS):
        va = _oriented(_offset_logistic(xa * (xb @ vb)[:, None], offset, yd, JOINT_RIDGE))
        vb = _oriented(_offset_logistic(xb * (xa @ va)[:, None], offset, yd, JOINT_RIDGE))
    return _unit_sd(xa, va), _unit_sd(xb, vb)


# The pair capsule's learned split (models/capsule.py, pair_cuts) starts at these quantiles of the inner
# training rows' interacting scores, its soft steps this wide (in the scores' sd, 1 on those rows). Why:
# an exclusive-or or co-occurrence of two genes' risk states is a step in each gene's score, which the
# product of two linear scores only approximates. Chosen on tuning seeds 4, 5, 12, 13 (benchmarks/
# capsule_family.py's several- and dense-gene XOR and co-occurrence cohorts, 3,000 samples, h2 0.5,
# two training seeds: 32 trainings; docs/capsule.md): steps at fixed medians (axis and cut not learned)
# test accuracy mean +0.002, up 19, down 11 (59 trainings with seeds 11, 14-16: +0.0015, the bars'
# counts unchanged); the learned split +0.006, up 23, down 7 (XOR +0.011, 14 of 16 up; co-occurrence
# +0.002), the worst margin over the additive-only limit -0.022 -> -0.005.
PAIR_CUT_QUANTILES: tuple[float, ...] = (0.5,)
PAIR_CUT_WIDTH = 0.2


def pair_cuts(x: np.ndarray, config: CapsuleConfig, quantiles=None) -> tuple[tuple[float, ...], ...]:
    """Cut points on each of config.pair's two interacting scores x_g . v_g (config.pair_interaction_axes)
    over x (n, F) float32 standardised, these rows only: the `quantiles` (default PAIR_CUT_QUANTILES)
    of each score, ((C floats), (C floats)), saved as config.pair_cuts: where the pair capsule's
    learned split starts (its learned offsets are weights). Quantiles need no labels; the network
    moves the cut and the step's direction where the phenotype steps."""
    q = PAIR_CUT_QUANTILES if quantiles is None else quantiles
    xd, index = x.astype(np.float64), np.asarray(config.gene_index)
    cuts = []
    for g, axis in zip(config.pair, config.pair_interaction_axes):
        score = xd[:, np.flatnonzero(index == g)] @ np.asarray(axis)
        c = [float(v) for v in np.quantile(score, q)]
        # equal quantiles (a score with few distinct values, as a burden count) cut once
        cuts.append(tuple(v for i, v in enumerate(c) if i == 0 or v > c[i - 1]))
    return tuple(cuts)


def _span(a: np.ndarray) -> np.ndarray:
    """An orthonormal basis (n, r) of the columns of a (n, k) float64, r its numerical rank."""
    u, sv, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, sv > sv[0] * 1e-8] if sv.size and sv[0] > 0 else u[:, :0]


def _score_test_p(u: np.ndarray, r: np.ndarray) -> float:
    """The p-value of n R^2 against chi-square(r columns of u): R^2 of the least-squares fit of the
    residuals r (n,) on the orthonormal columns u (n, k) (the logistic score test of adding them)."""
    from scipy.stats import chi2

    return float(chi2.sf(len(r) * float(np.sum((u.T @ r) ** 2) / (r @ r)), u.shape[1]))


def _added_p(cols: np.ndarray, null: np.ndarray, yc: np.ndarray) -> float | None:
    """The score test's p-value that centred columns cols (n, k) add nothing to centred y (n,) beside
    the orthonormal null basis (n, r) (both with the null projected out); None where nothing of cols
    is left outside the null."""
    u = _span(cols - null @ (null.T @ cols))
    return _score_test_p(u, yc - null @ (null.T @ yc)) if u.shape[1] else None


def gene_screen_p(x: np.ndarray, y: np.ndarray, gene_index) -> np.ndarray:
    """Each gene's marginal score test on these rows: p-values float64 (G,) of the test that y (n,) 0/1
    does not depend on the gene's columns of x (n, F) (PCs and any burden column), n R^2 of the least-
    squares fit of y on them against chi-square with as many degrees of freedom as the columns' rank
    (the logistic score test of an intercept-only null)."""
    xd = x.astype(np.float64) - x.mean(0)
    yc = y.astype(np.float64) - y.mean()
    index = np.asarray(gene_index)
    p = np.ones(index.max() + 1)
    for g in range(len(p)):
        u = _span(xd[:, index == g])
        if u.shape[1]:
            p[g] = _score_test_p(u, yc)
    return p


def screened_out(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, level: float, keep=()) -> tuple[int, ...]:
    """The genes the gene screen switches off, on x (n, F) standardised, y (n,): a gene is kept where
    its gene_screen_p is under `level` and its columns add to those of the genes kept before it at
    the same level (genes taken in order of that p-value, the pair test's pair `keep` kept first
    whatever its p-values: the score test of gene_screen_p with the kept genes' columns in the
    null); none is switched off where no gene passes the marginal test.
    Why the screen: the group penalty weighs a gene's noise against its use only through the
    training loss, and at h2 0.5 the ~85 noise genes of ~90 left enough noise in the calls to keep
    cohorts of dense genes under 70 % of the way to the Bayes limit, where a model of the planted
    genes alone passed it. A gene that adds has a marginal effect; one that acts only through an
    exclusive-or with another has none, and is the pair test's to find (kept where it is the pair).
    Why conditional: a gene in linkage disequilibrium with a causal one passes the marginal test on
    its neighbour's signal and adds nothing once the neighbour is in the model (on the family's 112
    tuning cohorts of 92 genes, six planted, the genes kept went from ~10 to ~6 on average)."""
    p = gene_screen_p(x, y, config.gene_index)
    if not (p < level).any():
        return ()
    xd = x.astype(np.float64) - x.mean(0)
    yc = y.astype(np.float64) - y.mean()
    index = np.asarray(config.gene_index)
    kept = [int(g) for g in keep]
    for g in np.argsort(p, kind="stable"):
        if p[g] >= level:
            break
        if g in kept:
            continue
        if kept:
            added = _added_p(xd[:, index == g], _span(xd[:, np.isin(index, kept)]), yc)
            if added is None or added >= level:
                continue
        kept.append(int(g))
    return tuple(g for g in range(len(p)) if g not in kept)


def pcs_screened_out(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, burden_columns: int,
                     level: float) -> tuple[int, ...]:
    """The PC columns the burden view switches off: for each gene with a burden column (the last
    `burden_columns` columns of x (n, F) standardised), its PCs where the test that they add nothing
    to y (n,) 0/1 beside the burden column does not reach `level`: n R^2 of the least-squares fit of
    y on the PCs, both with the burden column (and the mean) projected out, against chi-square with
    the projected PCs' rank as degrees of freedom (the score test of gene_screen_p, with the burden
    column in the null); none at level 0. The pair test's pair is screened too: its pair capsule
    reads all of its columns whatever its gene capsules read. Why: a gene acting through its
    low-frequency alleles is carried by its burden column alone, and its 10-30 PCs then only add
    directions to learn from the rows (on the family's burden cohorts, a logistic model of the
    planted genes' burden columns and the true pair term reached the Bayes limit; one of the same
    genes' PCs and burden columns fell 0.01-0.035 short)."""
    if not burden_columns or level <= 0:  # level 0: the view is off
        return ()
    xd = x.astype(np.float64) - x.mean(0)
    yc = y.astype(np.float64) - y.mean()
    index = np.asarray(config.gene_index)
    first_burden = config.n_features - burden_columns
    off = []
    for j in range(first_burden, config.n_features):
        pcs = np.flatnonzero(index[:first_burden] == index[j])
        added = _added_p(xd[:, pcs], _span(xd[:, [j]]), yc)
        if added is not None and added >= level:
            off.extend(int(c) for c in pcs)
    return tuple(sorted(off))


def pair_pcs(config: CapsuleConfig, burden_columns: int) -> tuple[int, ...]:
    """The PC columns of config.pair's two genes (every column before the last `burden_columns`, the
    burden columns): what the pair capsule leaves out where the pair test found the pair in its burden
    family. Why: there the interaction rides on the two genes' rare-allele counts. On the family's
    tuning seeds (4, 5, 11-16: burden co-occurrences and products, both h2) a logistic model of the six
    planted genes' burden columns and the product of the pair's two passed the additive-only limit in
    all 32 cohorts, one of the planted genes' PCs and burden columns and the true pair term in 28."""
    first_burden = config.n_features - burden_columns
    return tuple(j for j in range(first_burden) if config.gene_index[j] in config.pair)


def fit_capsule(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, s: CapsuleSettings, seed: int,
                history: list | None = None) -> CapsuleNet:
    """Train on standardised x (n, F) float32, y (n,): Adam + exponential LR decay, early stopping on
    the inner validation margin loss; returns the best epoch's model (eval mode, on s.device). With
    s.gene_penalty > 0 (gene primary capsules only) the group penalty, weighted by penalty_weight,
    joins the training loss (with s.pair_screen, sparing screened_pair's genes, which the model's
    `screened_pair` attribute records, and its evidence `pair_evidence`; with s.pair_capsule too, a
    pair capsule for them where the evidence calls them interacting: the model's config then has the
    `pair`, its `pair_axes` (pair_axes) and `pair_interaction_axes` (interaction_axes), both fitted on
    the inner training rows, `pair_cuts` (pair_cuts, the learned split's start, on the same rows) and
    `pair_products` false). With s.gene_screen > 0 (under the group penalty) the genes whose score
    test on the inner training rows (marginal, then beside the genes kept before them) does not reach
    that level are switched off (screened_out: the config's `genes_off`; the screened pair is kept); with
    s.burden_view > 0 (under the group penalty) the PCs of each gene whose burden column carries what they
    would add (pcs_screened_out: the config's `columns_off`). The
    validation loss that stops training is the margin loss alone; with a pair capsule the best epoch
    is taken from PAIR_MIN_EPOCHS on. With s.refit the returned network is refit's: trained anew on
    all of x for the best epoch's count, the first training's screens and pair views kept.
    `history`, a list, gets a {epoch, train_loss, valid_loss, valid_accuracy} row per epoch (of the
    training that chose the epoch count)."""
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
        # two rank-1 views, each the product of one direction of each gene, fitted on the inner
        # training rows and fixed: the additive scores' (co-occurrence: the genes also act alone) and
        # the interacting axes' (an exclusive-or has no additive axis). Not the K_a x K_b PC products:
        # on the tuning cohorts they only added noise to fit once the interacting axes were there
        config = replace(config, pair=exempt, pair_products=False)
        if s.burden_view > 0 and evidence["test"] == "burdens":
            config = replace(config, pair_columns_off=pair_pcs(config, s.burden_columns))
        seen = x[tr].copy()  # the columns the pair capsule reads, the others 0: its axes and cuts see no more
        seen[:, list(config.pair_columns_off)] = 0
        null = null_weights(seen, y[tr])
        config = replace(config, pair_axes=pair_axes(seen, y[tr], config, null),
                         pair_interaction_axes=interaction_axes(seen, y[tr], config, null))
        if PAIR_CUT_QUANTILES:
            config = replace(config, pair_cuts=pair_cuts(seen, config), pair_cut_width=PAIR_CUT_WIDTH)
    if penalise and s.gene_screen > 0:
        config = replace(config, genes_off=screened_out(x[tr], y[tr], config, s.gene_screen, exempt))
    if penalise and s.burden_view > 0:
        config = replace(config, columns_off=pcs_screened_out(x[tr], y[tr], config, s.burden_columns, s.burden_view))
    model = new_network(config, s, seed, exempt, evidence)
    opt, sched, gen = optimiser(model, s, seed)
    xt, yt = torch.from_numpy(x[tr]).to(s.device), torch.from_numpy(y[tr]).to(s.device)
    xv, yv = torch.from_numpy(x[va]).to(s.device), torch.from_numpy(y[va]).to(s.device)
    best, best_state, best_epoch, wait = math.inf, None, 0, 0
    floor = PAIR_MIN_EPOCHS if config.pair else 0  # epochs whose state counts as the best whatever its loss
    with deterministic_kernels(s.device):  # the same seed gives the same model on a GPU too
        for epoch in range(1, s.epochs + 1):
            total = train_epoch(model, opt, xt, yt, gen, s, weight if penalise else 0.0, exempt)
            sched.step()
            model.eval()
            with torch.inference_mode():
                lengths = model(xv)
                vloss = float(model.loss(lengths, yv))
                vacc = float((lengths.argmax(1) == yv).float().mean())
            if history is not None:
                history.append({"epoch": epoch, "train_loss": total / len(tr), "valid_loss": vloss, "valid_accuracy": vacc})
            if vloss < best - 1e-7 or epoch <= floor:
                best, best_epoch, wait = vloss, epoch, 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                wait += 1
                if wait >= s.patience:
                    break
    if s.refit:
        return refit(x, y, model.config, s, seed, best_epoch, exempt, evidence)
    model.load_state_dict(best_state)
    return model.eval()


def new_network(config: CapsuleConfig, s: CapsuleSettings, seed: int, exempt: tuple, evidence: dict | None) -> CapsuleNet:
    """The network of `config` initialised from seed on s.device, with the pair screen's pair
    (`screened_pair`, which config.json reports for the final model) and its evidence (`pair_evidence`)."""
    torch.manual_seed(seed)
    model = CapsuleNet(config).to(s.device)
    model.screened_pair, model.pair_evidence = exempt, evidence
    return model


def optimiser(model: CapsuleNet, s: CapsuleSettings, seed: int):
    """(Adam, its exponential learning-rate decay, the batch-order generator) of a training from seed."""
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    return opt, torch.optim.lr_scheduler.ExponentialLR(opt, gamma=s.lr_decay), torch.Generator().manual_seed(seed)


def train_epoch(model: CapsuleNet, opt, xt: torch.Tensor, yt: torch.Tensor, gen: torch.Generator, s: CapsuleSettings,
                penalty: float, exempt: tuple) -> float:
    """One pass over xt (n, F), yt (n,) in batches of s.batch_size drawn by gen; the group penalty at
    weight `penalty` (0: none) per batch, so that its weight against the margin loss does not depend
    on the batch count. Returns the summed margin loss (times the batch sizes)."""
    model.train()
    total = 0.0
    for idx in torch.randperm(len(yt), generator=gen).split(s.batch_size):
        idx = idx.to(s.device)
        loss = model.loss(model(xt[idx]), yt[idx])
        total += float(loss.detach()) * len(idx)
        if penalty:
            loss = loss + penalty * model.group_penalty(exempt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return total


def refit(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, s: CapsuleSettings, seed: int, epochs: int,
          exempt: tuple, evidence: dict | None) -> CapsuleNet:
    """The network of `config` (the screens, pair axes and cuts as the first training fitted them on
    its inner training rows) trained anew from the same seed on every row of x (n, F), y (n,), the
    inner validation part included, for the `epochs` early stopping chose: the validation rows then
    add to the weights, not only to the choice of when to stop (s.refit)."""
    model = new_network(config, s, seed, exempt, evidence)
    opt, sched, gen = optimiser(model, s, seed)
    xt, yt = torch.from_numpy(x).to(s.device), torch.from_numpy(y).to(s.device)
    penalty = penalty_weight(s, len(y)) if s.gene_penalty > 0 else 0.0
    with deterministic_kernels(s.device):
        for _ in range(epochs):
            train_epoch(model, opt, xt, yt, gen, s, penalty, exempt)
            sched.step()
    return model.eval()
