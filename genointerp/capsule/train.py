"""capsule-train orchestration: splits, standardisation, capsule training, baselines, result tables.

Protocol (DiseaseCapsule's): a balanced held-out test set (equal numbers of each class) is set aside
first; the rest is split into stratified folds for cross-validation. Inside every training set an
inner stratified validation part (`valid_fraction`) decides early stopping on the margin loss and is
not used for gradient steps. Features are standardised with the mean/sd of the training set at hand
(a constant feature gets sd 1). The saved model is trained on all non-test samples (minus its inner
validation part) and scored on the test set; the folds only estimate how well that procedure does.
Every split comes from one numpy generator seeded with `seed`, so a seed gives the same outputs.
The baselines fit on the same rows; with SNP dosages (gene-pca --keep-dosages) a polygenic risk
score (capsule/prs.py) joins them, its threshold chosen on the capsule network's own inner split.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from genointerp.errors import InputError
from genointerp.io.features import Dosages, Features, Phenotypes
from genointerp.models.capsule import CapsuleConfig, CapsuleNet
from genointerp.report import Reporter

METRICS = ("accuracy", "precision", "recall", "f1")
BASELINES = ("logistic_regression", "svm", "random_forest", "adaboost", "mlp")


@dataclass
class CapsuleSettings:
    folds: int = 5
    test_fraction: float = 0.2
    valid_fraction: float = 0.15
    epochs: int = 100
    patience: int = 10
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    lr_decay: float = 0.97  # exponential: lr * lr_decay ** epoch
    gene_penalty: float = 0.0  # group lasso weight at PENALTY_ROWS training rows (penalty_weight); 0: none
    pair_screen: bool = False  # exempt the pair screen's best gene pair from the group penalty
    seed: int = 1
    device: str = "cpu"
    threads: int = 1
    baselines: bool = True
    train_fractions: list[float] = field(default_factory=list)


@dataclass
class Split:
    """Row indices into the aligned matrix: the held-out test set and the folds of the rest."""

    test: np.ndarray
    train: np.ndarray  # every non-test row
    fold_of: np.ndarray  # (len(train),) fold number of each non-test row

    def fold(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.train[self.fold_of != k], self.train[self.fold_of == k]


@dataclass
class Scaler:
    mean: np.ndarray
    sd: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> "Scaler":
        sd = x.std(0)
        return cls(x.mean(0), np.where(sd > 0, sd, 1.0))  # a constant feature stays 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.sd).astype(np.float32)

    def to_dict(self) -> dict:
        return {"mean": [float(v) for v in self.mean], "sd": [float(v) for v in self.sd]}

    @classmethod
    def from_dict(cls, d: dict) -> "Scaler":
        return cls(np.asarray(d["mean"], dtype=np.float64), np.asarray(d["sd"], dtype=np.float64))


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


CASE_NAMES = ("case", "cases", "affected", "disease", "yes", "true", "t", "y")


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


def make_split(y: np.ndarray, classes: list[str], folds: int, test_fraction: float, seed: int) -> Split:
    """Balanced test set of round(test_fraction * n / C) samples per class, then stratified folds."""
    rng = np.random.default_rng(seed)
    n_classes = len(classes)
    per_class = [np.flatnonzero(y == c) for c in range(n_classes)]
    n_test = int(round(test_fraction * len(y) / n_classes))
    if test_fraction > 0 and n_test == 0:
        raise InputError(f"{len(y)} samples are too few for a --test-fraction of {test_fraction}")
    test, train, fold_of = [], [], []
    for c, rows in enumerate(per_class):
        rows = rng.permutation(rows)
        rest = len(rows) - n_test
        # 2 x folds: every training set then keeps at least 2 of each class, one for the inner validation
        if rest < 2 * folds:
            raise InputError(f"class {classes[c]!r} has {len(rows)} samples: too few for {folds} folds "
                             f"(need {2 * folds} outside the test set, which takes {n_test} of each class)")
        test.append(rows[:n_test])
        train.append(rows[n_test:])
        fold_of.append(np.arange(rest) % folds)
    order = np.argsort(np.concatenate(train), kind="stable")  # rows in input order: folds mix classes
    return Split(np.sort(np.concatenate(test)), np.concatenate(train)[order], np.concatenate(fold_of)[order])


def inner_split(y: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train, valid) positions into y; valid holds at least one and leaves one of each class."""
    tr, va = [], []
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = min(max(1, int(round(fraction * len(rows)))), len(rows) - 1)
        va.append(rows[:k])
        tr.append(rows[k:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(va))


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


def screened_pair(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, seed: int) -> tuple[int, ...]:
    """The best gene pair (gene numbers of config.gene_index) of capsule-search's pair screen on
    standardised x (n, F), y (n,) — 3 folds of these rows only — or () where no pair's products beat
    an additive fit and the chance gate. Why: the group penalty gives a gene without a marginal
    effect no reason to keep its map, so an XOR pair stays switched off unless it is exempted."""
    from genointerp.capsule import search as cs

    index = np.asarray(config.gene_index)
    genes = [np.flatnonzero(index == g) for g in range(config.n_genes)]
    split = cs.make_splits(y, ["0", "1"], 3, 1, seed)[0]
    # gate 2 SE: capsule-search's default --gate
    pair, score, _, _ = cs.screen_gene_pairs(x.astype(np.float64), y, genes, split, 3, 2.0)[0]
    return tuple(pair) if score > 0 else ()


def spared_genes(model: CapsuleNet, columns: list[str]) -> list[str]:
    """Names (chrom:gene, as gene_groups spells them) of the genes the model's group penalty spared
    (its `screened_pair`, set by fit_capsule); [] where it spared none."""
    from genointerp.capsule.interpret import gene_groups

    names = [name for name, _ in gene_groups(columns)]
    return [names[g] for g in model.screened_pair]


def fit_capsule(x: np.ndarray, y: np.ndarray, config: CapsuleConfig, s: CapsuleSettings, seed: int,
                history: list | None = None) -> CapsuleNet:
    """Train on standardised x (n, F) float32, y (n,): Adam + exponential LR decay, early stopping on
    the inner validation margin loss; returns the best epoch's model (eval mode, on s.device). With
    s.gene_penalty > 0 (gene primary capsules only) the group penalty, weighted by penalty_weight,
    joins the training loss (with s.pair_screen, sparing screened_pair's genes, which the model's
    `screened_pair` attribute records); the validation loss that stops training is the margin loss alone."""
    rng = np.random.default_rng(seed)
    tr, va = inner_split(y, s.valid_fraction, rng)
    torch.manual_seed(seed)
    model = CapsuleNet(config).to(s.device)
    penalise = s.gene_penalty > 0
    if penalise and config.primary != "gene":
        raise ValueError("gene_penalty needs gene primary capsules")
    weight = penalty_weight(s, len(tr))
    exempt = screened_pair(x, y, config, seed) if penalise and s.pair_screen else ()
    model.screened_pair = exempt  # the final model's is reported in config.json
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=s.lr_decay)
    xt, yt = torch.from_numpy(x[tr]).to(s.device), torch.from_numpy(y[tr]).to(s.device)
    xv, yv = torch.from_numpy(x[va]).to(s.device), torch.from_numpy(y[va]).to(s.device)
    gen = torch.Generator().manual_seed(seed)
    best, best_state, wait = math.inf, None, 0
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


@torch.inference_mode()
def capsule_lengths(model: CapsuleNet, x: np.ndarray, device: str, batch_size: int = 512) -> np.ndarray:
    """Phenotype-capsule lengths float64 (n, C) for standardised x (n, F)."""
    out = [model(torch.from_numpy(np.ascontiguousarray(x[a:a + batch_size], dtype=np.float32)).to(device)).cpu()
           for a in range(0, len(x), batch_size)]
    return torch.cat(out).double().numpy()


def class_probabilities(lengths: np.ndarray) -> np.ndarray:
    """Lengths (n, C) normalised to sum 1 per sample; the call (argmax) is the same as on raw lengths."""
    return lengths / np.clip(lengths.sum(1, keepdims=True), 1e-12, None)


def scores(y: np.ndarray, call: np.ndarray) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of 0/1 calls for the case class (label 1)."""
    from genointerp.train.metrics import binary_metrics  # here: capsule-predict loads this module, not training

    m = binary_metrics(y, call.astype(np.float64))
    p, r = m["ppv"], m["tpr"]
    return {"accuracy": m["accuracy"], "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def baseline_models(seed: int, threads: int) -> dict[str, Callable]:
    """scikit-learn peers of the seed's table, each a factory of a fresh estimator."""
    from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    return {
        "logistic_regression": lambda: LogisticRegression(max_iter=2000),
        "svm": lambda: SVC(kernel="rbf", random_state=seed),
        "random_forest": lambda: RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=threads),
        "adaboost": lambda: AdaBoostClassifier(n_estimators=100, random_state=seed),
        "mlp": lambda: MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-2, max_iter=2000, random_state=seed),
    }


def fit_predict_baselines(x_train, y_train, x_eval, seed: int, threads: int) -> dict[str, np.ndarray]:
    """method -> 0/1 calls on x_eval of each baseline fit on (x_train, y_train) (standardised)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    calls = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, make in baseline_models(seed, threads).items():
            calls[name] = make().fit(x_train, y_train).predict(x_eval)
    return calls


@dataclass
class TrainResult:
    model: CapsuleNet
    scaler: Scaler
    split: Split
    fold_scores: list[dict]  # {method, fold, accuracy, precision, recall, f1}
    test_scores: dict[str, dict]  # method -> scores (empty without a test set)
    test_lengths: np.ndarray  # (n_test, C)
    history: list[dict]  # per-epoch losses of the final model
    curve: list[dict] = field(default_factory=list)  # {fraction, method, fold, n_train, accuracy}
    prs: dict | None = None  # the final model's PRS: threshold, inner validation AUC, SNPs used


def fold_seed(s: CapsuleSettings, fold: int) -> int:
    """The training seed of CV fold `fold` (0-based); the final model uses s.seed itself."""
    return s.seed + fold + 1


def fit_prs(dosages: Dosages, y: np.ndarray, train: np.ndarray, s: CapsuleSettings, seed: int):
    """The PRS baseline fit on rows `train` of dosages int8 (n, S) and y (n,), its p-value threshold
    chosen on the inner validation part that fit_capsule(seed) holds out of the same rows."""
    from genointerp.capsule import prs

    tr, va = inner_split(y[train], s.valid_fraction, np.random.default_rng(seed))
    return prs.fit_prs(dosages.matrix[train], y[train], dosages.chrom, dosages.pos, tr, va)


def fold_run(x, y, train, evaluate, config, s, seed, history=None, dosages: Dosages | None = None, prs_fits=None):
    """Capsule (+ baselines, + PRS with dosages aligned to x's rows) fit on rows `train`, 0/1 calls on
    rows `evaluate`; standardised per fit. `prs_fits`, a list, gets the PRS fit."""
    scaler = Scaler.fit(x[train])
    xt, xe = scaler(x[train]), scaler(x[evaluate])
    model = fit_capsule(xt, y[train], config, s, seed, history)
    if not len(evaluate):  # --test-fraction 0: the final model has nothing held out
        return model, scaler, np.zeros((0, config.n_classes)), {}
    lengths = capsule_lengths(model, xe, s.device)
    calls = {"capsule": lengths.argmax(1)}
    if s.baselines:
        calls.update(fit_predict_baselines(xt, y[train], xe, seed, s.threads))
        if dosages is not None:
            fit = fit_prs(dosages, y, train, s, seed)
            calls["prs"] = fit.predict(dosages.matrix[evaluate])
            if prs_fits is not None:
                prs_fits.append(fit)
    return model, scaler, lengths, calls


def subsample(rows: np.ndarray, y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A stratified `fraction` of rows (at least 2 per class, so an inner validation split exists)."""
    keep = []
    for c in np.unique(y[rows]):
        members = rng.permutation(rows[y[rows] == c])
        keep.append(members[:max(2, int(round(fraction * len(members))))])
    return np.sort(np.concatenate(keep))


def train(x: np.ndarray, y: np.ndarray, classes: list[str], config: CapsuleConfig, s: CapsuleSettings,
          report: Reporter, dosages: Dosages | None = None) -> TrainResult:
    """The whole protocol on aligned x (n, F) float64, y (n,) int64 (binary: label 1 is the case);
    with `dosages` (int8 (n, S), rows aligned to x) the baselines include the PRS."""
    split = make_split(y, classes, s.folds, s.test_fraction, s.seed)
    fold_scores = []
    for k in range(s.folds):
        tr, ev = split.fold(k)
        _, _, _, calls = fold_run(x, y, tr, ev, config, s, fold_seed(s, k), dosages=dosages)
        for method, call in calls.items():
            fold_scores.append({"method": method, "fold": k + 1, **scores(y[ev], call)})
        report.log(f"fold {k + 1}/{s.folds}: capsule accuracy {fold_scores[-len(calls)]['accuracy']:.3f} "
                   f"on {len(ev)} samples")
    curve = []
    for fraction in s.train_fractions:
        rng = np.random.default_rng([s.seed, int(round(fraction * 1e6))])
        for k in range(s.folds):
            tr, ev = split.fold(k)
            sub = subsample(tr, y, fraction, rng)
            _, _, _, calls = fold_run(x, y, sub, ev, config, s, fold_seed(s, k), dosages=dosages)
            curve += [{"fraction": fraction, "method": m, "fold": k + 1, "n_train": len(sub),
                       "accuracy": scores(y[ev], c)["accuracy"]} for m, c in calls.items()]
        report.log(f"training fraction {fraction:g}: done")
    history: list[dict] = []
    prs_fits: list = []
    model, scaler, lengths, calls = fold_run(x, y, split.train, split.test, config, s, s.seed, history, dosages,
                                             prs_fits)
    test_scores = {m: scores(y[split.test], c) for m, c in calls.items()} if len(split.test) else {}
    if test_scores:
        report.log(f"test set ({len(split.test)} samples): capsule accuracy {test_scores['capsule']['accuracy']:.3f}")
    prs = None
    if prs_fits:
        fit = prs_fits[0]
        prs = {"p_threshold": fit.threshold, "inner_valid_auc": round(fit.valid_auc, 6), "n_snps": fit.n_snps,
               "n_snps_available": int(dosages.matrix.shape[1])}
        report.log(f"PRS (final fit): p <= {fit.threshold:g} chosen on the inner validation part (AUC "
                   f"{fit.valid_auc:.3f}); {fit.n_snps} of {prs['n_snps_available']} SNPs in the score")
    return TrainResult(model, scaler, split, fold_scores, test_scores, lengths, history, curve, prs)


def results_table(r: TrainResult) -> str:
    """results.tsv: per method, mean and sd over the folds, then the held-out test values."""
    methods = list(dict.fromkeys(row["method"] for row in r.fold_scores))
    head = ["method"] + [f"cv_{m}_{st}" for m in METRICS for st in ("mean", "sd")] + [f"test_{m}" for m in METRICS]
    lines = ["\t".join(head)]
    for method in methods:
        vals = [row for row in r.fold_scores if row["method"] == method]
        cells = [method]
        for m in METRICS:
            a = np.array([v[m] for v in vals])
            cells += [f"{a.mean():.4f}", f"{a.std(ddof=1) if len(a) > 1 else 0.0:.4f}"]
        test = r.test_scores.get(method)
        cells += [f"{test[m]:.4f}" if test else "NA" for m in METRICS]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def folds_table(r: TrainResult) -> str:
    lines = ["method\tfold\t" + "\t".join(METRICS)]
    lines += [f"{row['method']}\t{row['fold']}\t" + "\t".join(f"{row[m]:.4f}" for m in METRICS) for row in r.fold_scores]
    return "\n".join(lines) + "\n"


def curve_table(r: TrainResult) -> str:
    """train_fraction.tsv: accuracy mean and sd over the folds per training fraction and method."""
    lines = ["fraction\tn_train_mean\tmethod\taccuracy_mean\taccuracy_sd"]
    keys = list(dict.fromkeys((row["fraction"], row["method"]) for row in r.curve))
    for fraction, method in keys:
        rows = [row for row in r.curve if row["fraction"] == fraction and row["method"] == method]
        acc = np.array([row["accuracy"] for row in rows])
        n = np.mean([row["n_train"] for row in rows])
        lines.append(f"{fraction:g}\t{n:.1f}\t{method}\t{acc.mean():.4f}\t{acc.std(ddof=1) if len(acc) > 1 else 0.0:.4f}")
    return "\n".join(lines) + "\n"


def split_table(r: TrainResult, samples: list[str], y: np.ndarray, classes: list[str]) -> str:
    """split.tsv: sample, class, set (test or fold number) so that a run can be audited or repeated."""
    role = {int(i): "test" for i in r.split.test}
    role.update({int(i): f"fold{k + 1}" for i, k in zip(r.split.train, r.split.fold_of)})
    return "sample\tclass\tset\n" + "".join(f"{samples[i]}\t{classes[y[i]]}\t{role[i]}\n" for i in sorted(role))


def history_table(history: list[dict]) -> str:
    lines = ["epoch\ttrain_loss\tvalid_loss\tvalid_accuracy"]
    lines += [f"{h['epoch']}\t{h['train_loss']:.6f}\t{h['valid_loss']:.6f}\t{h['valid_accuracy']:.4f}" for h in history]
    return "\n".join(lines) + "\n"


def settings_dict(s: CapsuleSettings) -> dict:
    d = asdict(s)
    d.pop("device"), d.pop("threads")  # where it ran does not describe the model
    return d


def write_model_dir(folder: Path, r: TrainResult, x: np.ndarray, y: np.ndarray, samples: list[str],
                    features: Features, features_path: str, pheno: Phenotypes, phenotypes_path: str,
                    config: CapsuleConfig, s: CapsuleSettings, primary_capsule: int | None) -> tuple[int | None, list[dict]]:
    """Fill a capsule-train model directory: weights + config.json, the result tables, the test
    predictions and the read-outs. x float (n, F) aligned features, y int (n,) classes.
    Returns (primary capsule used for the gene scores, None for gene primary capsules; ranked gene rows)."""
    from genointerp.capsule import interpret as interp
    from genointerp.capsule.predict import predictions_table
    from genointerp.model_folder import save_model_dir

    # interpretation on the samples the final model was trained on, standardised as it saw them
    xs = r.scaler(x[r.split.train])
    coupling = interp.mean_coupling(r.model, xs, y[r.split.train], 2, s.device)
    by_gene = config.primary == "gene"
    chosen = None if by_gene else (interp.default_primary(coupling, case=1) if primary_capsule is None else primary_capsule)
    genes = interp.gene_scores(r.model, xs, features.columns, chosen, coupling)
    read_out = ({"gene_score": "mean over classes t of c[t|t] of the gene's capsule, less 1/C"} if by_gene else
                {"primary_capsule": chosen, "primary_capsule_choice": "given" if primary_capsule is not None
                 else "highest mean coupling to the case capsule"})

    test_samples = [samples[i] for i in r.split.test]
    info = {
        "task": "binary phenotype from Gene-PCs (DiseaseCapsule)",
        "features": {"columns": features.columns, "source": str(features_path),
                     # scalars only: a feature folder may list every fit sample
                     "provenance": {k: v for k, v in features.info.items() if not isinstance(v, (list, dict))}},
        "phenotype": {"file": str(phenotypes_path), "column": pheno.column, "classes": pheno.classes,
                      "case": pheno.classes[1], "n_samples": len(samples)},
        "scaler": r.scaler.to_dict(),
        "training": {**settings_dict(s), "n_train": int(len(r.split.train)), "n_test": len(test_samples),
                     "final_model": "all non-test samples less the inner validation part",
                     # the genes the final model's group penalty spared (--pair-screen)
                     **({"screened_pair": spared_genes(r.model, features.columns)} if s.pair_screen else {})},
        "test_metrics": r.test_scores.get("capsule"),
        **({"prs": r.prs} if r.prs else {}),
        "interpretation": read_out,
    }
    save_model_dir(folder, r.model, info)
    (folder / "results.tsv").write_text(results_table(r))
    (folder / "folds.tsv").write_text(folds_table(r))
    (folder / "split.tsv").write_text(split_table(r, samples, y, pheno.classes))
    (folder / "metrics.tsv").write_text(history_table(r.history))
    if len(test_samples):
        (folder / "test_predictions.tsv").write_text(predictions_table(
            test_samples, class_probabilities(r.test_lengths), pheno.classes,
            [pheno.classes[y[i]] for i in r.split.test]))
    if s.train_fractions:
        (folder / "train_fraction.tsv").write_text(curve_table(r))
    (folder / "coupling.tsv").write_text(interp.coupling_table(coupling, pheno.classes,
                                                               *interp.primary_labels(r.model, features.columns)))
    interp.plot_coupling(coupling, pheno.classes, 1 if by_gene else config.primary_channels, folder / "coupling.png",
                         ("gene", "") if by_gene else ("position", "capsule channel"))
    (folder / "genes.tsv").write_text(interp.genes_table(genes))
    return chosen, genes
