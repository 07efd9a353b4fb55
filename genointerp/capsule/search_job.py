"""The capsule-search job: Gene-PCs + a binary phenotype in, the gene subsets where the capsule
network beats logistic regression and chance out (best.tsv, screen.tsv, history.tsv/.png,
search.json). The GA and its fitness are search.py's; the state after every generation is kept in
OUTPUT.checkpoint until the outputs are in place (`resume` continues from it).

    from genointerp.job import execute
    from genointerp.capsule.search_job import CapsuleSearchRequest, run
    summary = execute(run, CapsuleSearchRequest(features="gene_pcs", phenotypes="pheno.tsv", output="search"))
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.capsule import search as cs
from genointerp.capsule.genetic import SearchSettings
from genointerp.capsule.subset_fitness import Evaluator, Problem, screen_pairs
from genointerp.capsule.cohort import align, class_counts, order_case_last
from genointerp.capsule.interpret import gene_groups
from genointerp.capsule.pair_screen import chance_threshold, screen_table
from genointerp.capsule.rules import network, primary_kind
from genointerp.capsule.settings import CapsuleSettings, features_arg, phenotype_option, phenotypes_option, settings_dict
from genointerp.capsule.splits import make_splits
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.features import read_features, read_phenotypes
from genointerp import options
from genointerp.job import one_stdin
from genointerp.options import opt
from genointerp.report import Reporter
from genointerp.runtime import usable_threads, use_threads


@dataclass
class CapsuleSearchRequest:
    """capsule-search: the fields are its options (files as paths, `-` for stdin)."""

    features: str = features_arg()  # gene-pca folder or TSV
    phenotypes: str = phenotypes_option()
    output: str = opt(
        ..., "-o", "--output",
        help='Folder to write: best.tsv, screen.tsv, history.tsv, history.png, search.json.')
    phenotype: str | None = phenotype_option()
    case: str | None = opt(None, "--case", help='The value that marks cases (as capsule-train).')
    population: int = opt(16, "--population", min=2, help='Gene subsets per generation.')
    generations: int = opt(10, "--generations", min=1, help='Generations (the first is random).')
    subset_size: str = opt(
        "2", "--subset-size", metavar="N|MIN-MAX",
        help='Genes per subset.')
    folds: int = opt(
        3, "--folds", min=2,
        help='Stratified cross-validation folds; every subset is scored on the same ones.')
    repeats: int = opt(
        2, "--repeats", min=1,
        help=('Fold splits (each a different stratified split) the accuracies are averaged over: more repeats, less'
              ' noise, proportionally more time.'))
    gate: float = opt(
        2.0, "--gate", min=0, metavar="SE",
        help=("A subset earns credit only where the capsule's CV accuracy exceeds chance (the majority-class share)"
              " by this many standard errors of a no-signal model's accuracy (sqrt(p(1-p)/n))."))
    screen: bool = opt(
        True, "--screen/--no-screen",
        help=('Start from the best pairs of a pair screen (every gene pair, a least-squares classifier with and '
              "without the products of the two genes' PCs; screen.tsv) instead of random subsets; needs "
              '--subset-size of at least 2.'))
    size_penalty: float = opt(
        0.005, "--size-penalty", min=0,
        help='Fitness cost of every gene beyond the smallest --subset-size (ties go to the smaller subset anyway).')
    elite: int = opt(1, "--elite", min=0, help='Best subsets copied unchanged into the next generation.')
    mutation_rate: float = opt(
        0.5, "--mutation-rate", min=0, max=0.99,
        help='Chance that a child gets a gene swapped in/out (then another, with the same chance).')
    time_budget: float | None = opt(
        None, "--time-budget", min=0, metavar="SECONDS",
        help=('Stop after the generation that crosses this many seconds (of search, summed over resumed runs), '
              'keeping the best so far.'))
    resume: bool = opt(
        False, "--resume",
        help=('Continue from OUTPUT.checkpoint, the state an interrupted search saved after its last finished '
              'generation (same inputs and settings: same result as an uninterrupted run).'))
    primary: str = opt("gene", "--primary", metavar="gene|conv", help="Primary capsules, as capsule-train's.")
    epochs: int = opt(30, "--epochs", min=1, help='Most epochs per capsule training (per fold and subset).')
    patience: int = opt(
        5, "--patience", min=1,
        help='Stop after this many epochs without a lower validation margin loss.')
    batch_size: int = opt(32, "--batch-size", min=1)
    lr: float = opt(3e-3, "--lr", min=0, help='Adam learning rate.')
    valid_fraction: float = opt(
        0.15, "--valid-fraction", min=0.01, max=0.5,
        help='Inner validation part of each training set, for early stopping.')
    hidden: int = opt(32, "--hidden", min=2, help='Dense layer width (conv primary capsules only).')
    kernel_size: int = opt(5, "--kernel-size", min=1, help='Convolution kernel (conv primary capsules only).')
    capsule_dim: int = opt(
        8, "--capsule-dim", min=1,
        help=('Primary capsule dimension (with 4, gene capsules fit a strong gene worse than logistic regression '
              'does).'))
    class_dim: int = opt(16, "--class-dim", min=1, help='Phenotype capsule dimension.')
    routing: int = opt(3, "--routing", min=1, help='Routing-by-agreement iterations.')
    threads: int = options.threads(
        'Fitness evaluations of a generation run in parallel in this many processes (one torch thread '
        'each); results do not depend on it.')
    seed: int = options.seed('Seeds the folds, the GA and every training: same inputs and seed, same result.')

    def check(self) -> None:
        self.subset_sizes()
        primary_kind(self.primary)
        if self.elite >= self.population:
            raise UsageError(f"--elite: {self.elite} elites leave no child in a population of {self.population}")
        one_stdin(("FEATURES", self.features), ("--phenotypes", self.phenotypes))
        network(**self.network_fields())

    def inputs(self) -> list[str | None]:
        return [self.features, self.phenotypes]

    def subset_sizes(self) -> tuple[int, int]:
        """(MIN, MAX) of --subset-size N|MIN-MAX."""
        lo, sep, hi = self.subset_size.partition("-")
        try:
            sizes = (int(lo), int(hi) if sep else int(lo))
        except ValueError:
            raise UsageError(f"--subset-size: expected N or MIN-MAX, got {self.subset_size!r}") from None
        if sizes[0] < 1 or sizes[1] < sizes[0]:
            raise UsageError(f"--subset-size: expected 1 <= MIN <= MAX, got {self.subset_size!r}")
        return sizes

    def network_fields(self) -> dict:
        """The CapsuleConfig fields of every subset's network (all but its n_features and gene_index);
        search.json records them as `capsule`."""
        return {"n_classes": 2, "hidden": self.hidden, "kernel_size": self.kernel_size, "primary_channels": 4,
                "primary_dim": self.capsule_dim, "stride": 2, "class_dim": self.class_dim,
                "routing_iterations": self.routing, "primary": self.primary}

    def checkpoint(self) -> Path:
        return Path(self.output.rstrip("/") + ".checkpoint")


def run(req: CapsuleSearchRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Search and write the output folder, then commit `outputs` and remove the checkpoint (which
    must outlive an output that fails to land); return the summary: the best subset's genes and
    evaluation, the chance threshold, the subsets evaluated."""
    log = report.log
    min_size, max_size = req.subset_sizes()
    checkpoint = req.checkpoint()
    folder = outputs.folder(req.output)
    features = read_features(req.features)
    groups = gene_groups(features.columns)
    gene_names = [name for name, _ in groups]
    if max_size > len(groups):
        raise InputError(f"--subset-size {req.subset_size}: {req.features} has only {len(groups)} genes")
    pheno = order_case_last(read_phenotypes(req.phenotypes, req.phenotype), req.case, req.phenotypes)
    x, y, samples = align(features, pheno, req.phenotypes)
    log(f"{len(samples)} samples ({class_counts(y, pheno.classes)}), {len(groups)} genes, {x.shape[1]} features")
    config = req.network_fields()
    s = CapsuleSettings(folds=req.folds, test_fraction=0.0, valid_fraction=req.valid_fraction, epochs=req.epochs,
                        patience=req.patience, batch_size=req.batch_size, lr=req.lr, seed=req.seed, device="cpu",
                        threads=1, baselines=False)
    splits = make_splits(y, pheno.classes, req.folds, req.repeats, req.seed)
    screen = req.screen and max_size >= 2
    gs = SearchSettings(population=req.population, generations=req.generations, min_size=min_size,
                           max_size=max_size, folds=req.folds, repeats=req.repeats, gate=req.gate,
                           size_penalty=req.size_penalty, screen=screen, elite=req.elite,
                           mutation_rate=req.mutation_rate, seed=req.seed)
    chance, threshold = chance_threshold(y, req.gate)
    inputs = {"features": str(req.features), "columns": len(features.columns), "genes": len(groups),
              "phenotypes": str(req.phenotypes), "phenotype": pheno.column, "classes": pheno.classes,
              "case": pheno.classes[1], "n_samples": len(samples)}
    # what a checkpoint must match to be resumed: the settings, the inputs and the data themselves
    fingerprint = {"search": cs.settings_dict(gs), "training": settings_dict(s), "capsule": config, "inputs": inputs,
                   "data": hashlib.sha256(np.ascontiguousarray(x).tobytes() + y.astype(np.int64).tobytes()).hexdigest()}
    problem = Problem(x, y, [idx for _, idx in groups], features.columns, splits, s, config, req.gate,
                         req.size_penalty, min_size)

    use_threads(1)  # torch's threads; the search runs --threads worker processes
    screened = None
    if screen:
        start = time.monotonic()
        screened = screen_pairs(problem)
        (a, b), score, products, additive = screened[0]
        log(f"pair screen: {len(screened)} pairs in {time.monotonic() - start:.1f} s; best {gene_names[a]},"
            f"{gene_names[b]} (with products {products:.3f} vs additive {additive:.3f} CV accuracy)")
        (folder / "screen.tsv").write_text(screen_table(screened, gene_names))
    with Evaluator(problem, usable_threads(req.threads)) as evaluator:
        result = cs.search(evaluator, len(groups), gs, fingerprint, checkpoint, req.resume, req.time_budget, report,
                           gene_names, screened)
    (folder / "best.tsv").write_text(cs.best_table(result.cache, gene_names))
    (folder / "history.tsv").write_text(cs.history_table(result.history, gene_names))
    cs.plot_history(result.history, folder / "history.png")
    best, ev = cs.ranked(result.cache)[0]
    (folder / "search.json").write_text(json.dumps({
        "task": "gene subsets where the capsule network beats logistic regression and chance (capsule-search)",
        "fitness": "ACC_capsule - max(ACC_logistic, chance + gate * SE) - size_penalty * (genes - min size): "
                   "held-out accuracy over repeats x folds on the subset's Gene-PCs",
        "chance": round(chance, 6), "chance_threshold": round(threshold, 6),
        "settings": {**cs.settings_dict(gs), "time_budget": req.time_budget}, "training": settings_dict(s),
        "capsule": config, "inputs": inputs, "generations_run": len(result.history),
        "stopped_by_time_budget": result.stopped_by_budget, "subsets_evaluated": len(result.cache),
        "best": {"genes": [gene_names[g] for g in best], **ev}}, indent=2) + "\n")
    outputs.commit()
    checkpoint.unlink(missing_ok=True)
    return {"best_genes": [gene_names[g] for g in best], **ev, "chance_threshold": threshold,
            "subsets_evaluated": len(result.cache)}
