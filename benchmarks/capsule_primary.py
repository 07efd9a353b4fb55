"""Conv against gene primary capsules (`capsule-train --primary conv|gene`) on planted cohorts.

For every seed, benchmarks/capsule.py's planted cohort (a mosaic of the real EUR chr21 haplotypes,
Gene-PCs from gene-pca, four causal genes; scenarios additive, cooccur and xor) is made anew with
that seed: other samples, other causal genes, other splits. Each scenario then runs
`genointerp capsule-train --no-baselines` once per primary-capsule kind with the same seed (so the
same test set and folds), and logistic regression is fitted here on those folds (split.tsv,
standardised on each training fold as capsule-train does). Reported: CV accuracy mean ± sd over
the 5 folds per seed, the mean over seeds, and how many of the scenario's causal genes are among
the decisive genes (top 5 % of genes.tsv; logistic regression's per-gene |coefficient| sums as a
linear reference). Both kinds train on the paper's schedule without the group penalty (`--lr 1e-3
--patience 10 --gene-penalty 0`, `--epochs` below), the setting this comparison was made in before
capsule-train's gene capsules got their penalty and schedule; benchmarks/capsule.py runs those.

    python benchmarks/capsule_primary.py --shared ../shared/data [--samples 1000] [--seeds 1,2] \\
        [--scenarios additive,cooccur,xor] [--jobs 1]

--jobs runs that many capsule-train processes at once (1 thread each); results do not depend on it.
--reuse keeps a model folder a run before finished (its seconds are kept beside it), so that seeds
run apart can be tabulated together: `--seeds 3` in another process, then `--seeds 1,2,3 --reuse`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from capsule import SCENARIOS, decisive_genes, lr_gene_ranking, planted_cohort, way_to_limit  # noqa: E402
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

from genointerp.capsule.baselines import baseline_models  # noqa: E402
from genointerp.capsule.scaler import Scaler  # noqa: E402

PRIMARY = ("conv", "gene")


def lr_fold_accuracy(x: np.ndarray, y: np.ndarray, split_tsv: Path, seed: int) -> list[float]:
    """Logistic regression's accuracy on each CV fold of a capsule-train split.tsv (rows = x's rows)."""
    sets = [line.split("\t")[2] for line in split_tsv.read_text().splitlines()[1:]]
    folds = sorted({s for s in sets if s != "test"}, key=lambda s: int(s[4:]))
    return [lr_accuracy(x, y, np.array([i for i, s in enumerate(sets) if s not in ("test", fold)]),
                        np.array([i for i, s in enumerate(sets) if s == fold]), seed) for fold in folds]


def lr_accuracy(x: np.ndarray, y: np.ndarray, train: np.ndarray, evaluate: np.ndarray, seed: int) -> float:
    """Logistic regression (capsule-train's baseline, standardised on the training rows as there)
    fitted on rows `train` of x (n, F), y (n,), its accuracy on rows `evaluate`."""
    scaler = Scaler.fit(x[train])
    model = baseline_models(seed, 1)["logistic_regression"]().fit(scaler(x[train]), y[train])
    return float((model.predict(scaler(x[evaluate])) == y[evaluate]).mean())


def fold_accuracy(model: Path) -> list[float]:
    return [float(line.split("\t")[2]) for line in (model / "folds.tsv").read_text().splitlines()[1:]]


def mean_sd(values) -> str:
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--h2", type=float, default=0.8)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--reuse", action="store_true", help="keep finished model folders of an earlier run")
    ap.add_argument("--out", default="bench-output/capsule_primary")
    args = ap.parse_args()
    kinds = tuple(args.scenarios.split(","))
    if not set(kinds) <= set(SCENARIOS):
        sys.exit(f"--scenarios: choose from {', '.join(SCENARIOS)}")
    seeds = [int(s) for s in args.seeds.split(",")]

    runs = []  # (seed, scenario, primary, cohort folder)
    cohorts = {}
    for seed in seeds:
        out = out_dir(f"{args.out}/seed{seed}")
        # made anew even with --reuse (the same bytes for the same seed): labels and causal genes come with it
        cohorts[seed] = planted_cohort(args.shared, args.samples, seed, args.h2, kinds, out)
        print(f"seed {seed}: {cohorts[seed].about}", flush=True)
        runs += [(seed, kind, primary, out) for kind in kinds for primary in PRIMARY]

    def train(run) -> float:
        seed, kind, primary, out = run
        model, stamp = out / f"{kind}_{primary}", out / f"{kind}_{primary}.seconds"
        if args.reuse and (model / "genes.tsv").exists() and stamp.exists():
            return float(stamp.read_text())
        t0 = time.perf_counter()
        timed(GENOINTERP + ["-q", "capsule-train", str(out / "genepcs"), "-p", str(out / "pheno.tsv"),
                            "--phenotype", kind, "--primary", primary, "--no-baselines", "-o",
                            str(model), "--threads", "1", "--seed", str(seed), "--epochs", str(args.epochs), "--lr", "1e-3",
                            "--patience", "10", "--force"] + (["--gene-penalty", "0"] if primary == "gene" else []))
        secs = time.perf_counter() - t0
        stamp.write_text(f"{secs:.1f}\n")
        print(f"seed {seed} {kind} {primary}: {secs:.0f} s", flush=True)
        return secs

    with ThreadPoolExecutor(args.jobs) as pool:  # threads only wait on the capsule-train processes
        seconds = dict(zip(runs, pool.map(train, runs)))

    per_seed, summary, acc = [], [], {}
    for seed in seeds:
        features, causal, labels = cohorts[seed].features, cohorts[seed].causal, cohorts[seed].labels
        out = Path(f"{args.out}/seed{seed}")
        for kind in kinds:
            causal_names = {g for g, _ in causal[:SCENARIOS[kind]]}
            y = labels[kind]
            found = {}
            for primary in PRIMARY:
                model = out / f"{kind}_{primary}"
                acc.setdefault((kind, primary), []).append(fold_accuracy(model))
                decisive, ranked = decisive_genes(model)
                found[primary] = (len(causal_names & set(decisive)),
                                  ",".join(str(i + 1) for i, g in enumerate(ranked) if g in causal_names))
            lr = lr_fold_accuracy(features.matrix.astype(np.float64), y, out / f"{kind}_conv" / "split.tsv", seed)
            acc.setdefault((kind, "lr"), []).append(lr)
            split = [line.split("\t") for line in (out / f"{kind}_conv" / "split.tsv").read_text().splitlines()[1:]]
            train_idx = [i for i, r in enumerate(split) if r[2] != "test"]
            lr_top = set(lr_gene_ranking(features, y[train_idx], train_idx)[:len(decisive)])
            n = len(causal_names)
            bayes, _ = cohorts[seed].limits(kind, train_idx)  # on the rows the CV folds score
            per_seed.append({
                "seed": seed, "scenario": kind, "Bayes": f"{bayes:.3f}",
                # each with its share of the way from chance to the Bayes limit
                **{m: f"{mean_sd(acc[(kind, m)][-1])} ({way_to_limit(np.mean(acc[(kind, m)][-1]), bayes):.0%})"
                   for m in ("conv", "gene", "lr")},
                "causal_in_decisive conv/gene/lr": f"{found['conv'][0]}/{n} {found['gene'][0]}/{n} "
                                                   f"{len(causal_names & lr_top)}/{n}",
                "causal_ranks conv | gene": f"{found['conv'][1]} | {found['gene'][1]}",
                "train_s conv/gene": f"{seconds[(seed, kind, 'conv', out)]:.0f}/{seconds[(seed, kind, 'gene', out)]:.0f}"})
    for kind in kinds:
        # mean over seeds of the per-seed CV mean, sd over seeds of it
        means = {m: [np.mean(a) for a in acc[(kind, m)]] for m in ("conv", "gene", "lr")}
        rows = [r for r in per_seed if r["scenario"] == kind]
        found = [r["causal_in_decisive conv/gene/lr"].split() for r in rows]
        summary.append({"scenario": kind, **{m: mean_sd(v) if len(v) > 1 else f"{v[0]:.3f}" for m, v in means.items()},
                        "causal_in_decisive conv/gene/lr": " ".join(
                            f"{sum(int(f[i].split('/')[0]) for f in found)}/{sum(int(f[i].split('/')[1]) for f in found)}"
                            for i in range(3))})
    cols = ["seed", "scenario", "Bayes", "conv", "gene", "lr", "causal_in_decisive conv/gene/lr", "causal_ranks conv | gene",
            "train_s conv/gene"]
    print(table(per_seed, cols))
    print()
    print(table(summary, ["scenario", "conv", "gene", "lr", "causal_in_decisive conv/gene/lr"]))
    Path(f"{args.out}/result.json").write_text(json.dumps(
        {"per_seed": per_seed, "summary": summary, "samples": args.samples, "seeds": seeds,
         "causal": {seed: [g for g, _ in cohorts[seed].causal] for seed in seeds}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
