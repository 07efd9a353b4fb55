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
from genointerp.capsule.settings import CapsuleSettings, settings_dict
from genointerp.capsule.splits import make_splits
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.features import read_features, read_phenotypes
from genointerp.job import SEED_MAX, in_ranges, one_stdin
from genointerp.report import Reporter
from genointerp.runtime import usable_threads, use_threads


@dataclass
class CapsuleSearchRequest:
    """capsule-search: the fields are its options (files as paths, `-` for stdin)."""

    features: str  # gene-pca folder or TSV
    phenotypes: str
    output: str  # folder
    phenotype: str | None = None
    case: str | None = None
    population: int = 16
    generations: int = 10
    subset_size: str = "2"  # N or MIN-MAX genes per subset
    folds: int = 3
    repeats: int = 2
    gate: float = 2.0
    screen: bool = True
    size_penalty: float = 0.005
    elite: int = 1
    mutation_rate: float = 0.5
    time_budget: float | None = None  # seconds
    resume: bool = False
    primary: str = "gene"
    epochs: int = 30
    patience: int = 5
    batch_size: int = 32
    lr: float = 3e-3
    valid_fraction: float = 0.15
    hidden: int = 32
    kernel_size: int = 5
    capsule_dim: int = 8
    class_dim: int = 16
    routing: int = 3
    threads: int = 1  # worker processes
    seed: int = 1

    def check(self) -> None:
        self.subset_sizes()
        in_ranges(("--population", self.population, 2, None), ("--generations", self.generations, 1, None),
                  ("--folds", self.folds, 2, None), ("--repeats", self.repeats, 1, None), ("--gate", self.gate, 0, None),
                  ("--size-penalty", self.size_penalty, 0, None), ("--elite", self.elite, 0, None),
                  ("--mutation-rate", self.mutation_rate, 0, 0.99), ("--time-budget", self.time_budget, 0, None),
                  ("--epochs", self.epochs, 1, None), ("--patience", self.patience, 1, None),
                  ("--batch-size", self.batch_size, 1, None), ("--lr", self.lr, 0, None),
                  ("--valid-fraction", self.valid_fraction, 0.01, 0.5), ("--hidden", self.hidden, 2, None),
                  ("--kernel-size", self.kernel_size, 1, None), ("--capsule-dim", self.capsule_dim, 1, None),
                  ("--class-dim", self.class_dim, 1, None), ("--routing", self.routing, 1, None),
                  ("--threads", self.threads, 1, None), ("--seed", self.seed, 0, SEED_MAX))
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
