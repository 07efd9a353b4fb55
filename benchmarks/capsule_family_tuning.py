"""capsule-train's final model on benchmarks/capsule_family.py's cohorts, under one setting (tuning aid).

For each cohort and phenotype asked for: capsule-train's split for the cohort's seed, then only the
final model (trained on every non-test row, scored on the held-out test set, the cohort's seed as
training seed: what capsule_family.py's "capsule test" column reports, without its CV folds and
baselines, so a setting over 50 cohorts takes minutes, not hours). One JSON line per phenotype on
stdout (test accuracy, the Bayes and additive-only limits on the same test rows, share of the way,
what the model switched off, the pair capsule's genes, and `lr_inputs`: a logistic regression of the
inputs the trained network reads, on the same rows); with --compare, a summary against an earlier
run's lines, per architecture and interacting/additive:

    python benchmarks/capsule_family_tuning.py --out bench-output/tune --seeds 4,5 \\
        --architectures burden --interactions xor,cooccur --h2 0.5,0.8 \\
        --settings '{"burden_view": 0}' > bench-output/bv0.jsonl
    python benchmarks/capsule_family_tuning.py ... --compare bench-output/bv0.jsonl > bench-output/bv.jsonl

--out: a capsule_family.py output folder whose n{samples}_seed{seed} cohorts exist (built there with
--gene-pca-args "--pcs-rule inf:32,var:0.99", as benchmarks/README.md's family runs; reused, not
built here). --settings takes CapsuleSettings fields (JSON) over capsule-train's gene-capsule
defaults; --burden-maf as capsule-train's (default: auto, 0.05 with the folder's dosages). Choose
settings on one set of seeds and report on others (benchmarks/README.md names them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from capsule_family import FamilyCohort, per_scenario  # noqa: E402

from genointerp.capsule.baselines import fit_predict_network_lr  # noqa: E402
from genointerp.capsule.burden import AUTO_BURDEN_MAF, burden_plan, snp_genes, with_burden  # noqa: E402
from genointerp.capsule.interpret import gene_groups, gene_index  # noqa: E402
from genointerp.capsule.protocol import fold_run  # noqa: E402
from genointerp.capsule.settings import CapsuleSettings  # noqa: E402
from genointerp.capsule.splits import make_split  # noqa: E402
from genointerp.capsule.train_job import CapsuleTrainRequest  # noqa: E402
from genointerp.io.features import read_dosages, read_features  # noqa: E402
from genointerp.models.capsule import CapsuleConfig  # noqa: E402


def cohort_features(folder: Path, burden_maf: float):
    """The cohort's Gene-PCs with capsule-train's burden columns appended, and how many there are."""
    feats = read_features(str(folder))
    if not burden_maf:
        return feats, 0
    dosages = read_dosages(str(folder), len(feats.samples))
    plan = burden_plan(dosages, snp_genes(folder), [name for name, _ in gene_groups(feats.columns)], burden_maf)
    return with_burden(feats, dosages, plan, str(folder)), len(plan)


def final_model_row(cohort: FamilyCohort, name: str, feats, n_burden: int, overrides: dict) -> dict:
    """One phenotype: capsule-train's final model under `overrides`, scored on its test set."""
    y = cohort.labels[name].astype(np.int64)
    x = feats.matrix.astype(np.float64)
    req = CapsuleTrainRequest(features="", phenotypes="", output="", seed=cohort.seed, baselines=False)
    s = replace(req.settings(), burden_columns=n_burden, **overrides)
    config = CapsuleConfig(n_features=x.shape[1], **req.network_fields(), gene_index=gene_index(feats.columns))
    split = make_split(y, ["1", "2"], s.folds, s.test_fraction, s.seed)
    bayes, limit = cohort.limits(name, split.test)
    t0 = time.perf_counter()
    model, scaler, lengths, _ = fold_run(x, y, split.train, split.test, config, s, s.seed)
    secs = time.perf_counter() - t0
    acc = float((lengths.argmax(1) == y[split.test]).mean())
    c = model.config
    return {"seed": cohort.seed, "name": name, "settings": overrides, "acc": round(acc, 6), "bayes": round(bayes, 6),
            "limit": round(limit, 6), "share": round((acc - 0.5) / (bayes - 0.5), 4), "genes_off": len(c.genes_off),
            "columns_off": len(c.columns_off), "pair_columns_off": len(c.pair_columns_off), "pair": list(c.pair),
            "lr_inputs": round(lr_on_inputs(model, scaler(x), y, split.train, split.test), 6), "secs": round(secs, 1)}


def lr_on_inputs(model, z: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    """Test accuracy of capsule-train's lr_network_inputs baseline (baselines.fit_predict_network_lr:
    logistic regression of the inputs the trained network reads) fit on the rows `train` of z (n, F)
    standardised."""
    calls = fit_predict_network_lr(model, z[train], y[train], z[test])
    return float((calls == y[test]).mean())


def interacting(row: dict) -> bool:
    return "-none-" not in row["name"]


def compare(rows: list[dict], before_path: str) -> str:
    """Mean test accuracy change, up/down, above-the-additive-only-limit counts (interacting
    phenotypes) and the lowest share of the way, per architecture x interacting/additive and in all."""
    before = {(r["seed"], r["name"]): r for r in map(json.loads, Path(before_path).read_text().splitlines())}
    groups = defaultdict(list)
    for r in rows:
        b = before.get((r["seed"], r["name"]))
        if b is not None:
            kind = "interacting" if interacting(r) else "additive"
            groups[f"{r['name'].split('-')[0]} {kind}"].append((b, r))
            groups["all"].append((b, r))
    lines = ["group\tcohorts\tmean change\tup\tdown\tabove the limit (before -> now)\tlowest share (before -> now)"]
    for g, pairs in sorted(groups.items()):
        d = [r["acc"] - b["acc"] for b, r in pairs]
        above = [sum(x["acc"] > x["limit"] for x in side if interacting(x)) for side in zip(*pairs)]
        inter = sum(interacting(r) for _, r in pairs)
        lows = [min(x["share"] for x in side) for side in zip(*pairs)]
        lines.append(f"{g}\t{len(pairs)}\t{np.mean(d):+.4f}\t{sum(v > 0 for v in d)}\t{sum(v < 0 for v in d)}\t"
                     f"{above[0]} -> {above[1]} of {inter}\t{lows[0]:.3f} -> {lows[1]:.3f}")
    return "\n".join(lines)


def inputs_summary(rows: list[dict]) -> str:
    """The network against a logistic regression of its own inputs (lr_inputs), per architecture and
    in all: mean difference, cohorts where each is ahead."""
    groups = defaultdict(list)
    for r in rows:
        groups[r["name"].split("-")[0]].append(r["acc"] - r["lr_inputs"])
        groups["all"].append(r["acc"] - r["lr_inputs"])
    lines = ["group\tcohorts\tcapsule - LR of its inputs (mean)\tcapsule ahead\tLR ahead"]
    lines += [f"{g}\t{len(d)}\t{np.mean(d):+.4f}\t{sum(v > 0 for v in d)}\t{sum(v < 0 for v in d)}"
              for g, d in sorted(groups.items())]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="capsule_family.py output folder holding the cohorts")
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--seeds", required=True, help="comma-separated cohort seeds")
    ap.add_argument("--architectures", default="single,several,dense,burden")
    ap.add_argument("--interactions", default="none,xor,cooccur,multiplicative")
    ap.add_argument("--h2", default="0.5,0.8")
    ap.add_argument("--settings", default="{}", help="CapsuleSettings fields as JSON, over capsule-train's defaults")
    ap.add_argument("--burden-maf", type=float, default=AUTO_BURDEN_MAF, help="0: no burden columns")
    ap.add_argument("--compare", help="an earlier run's JSON lines: print the summary against them (stderr)")
    args = ap.parse_args()
    try:
        overrides = json.loads(args.settings)
    except json.JSONDecodeError as e:
        ap.error(f"--settings: not JSON ({e})")
    if not isinstance(overrides, dict):
        ap.error("--settings: a JSON object of CapsuleSettings fields, e.g. '{\"burden_view\": 0}'")
    unknown = sorted(set(overrides) - set(CapsuleSettings.__dataclass_fields__))
    if unknown:
        ap.error(f"--settings: not CapsuleSettings fields: {', '.join(unknown)}")
    torch.set_num_threads(1)  # capsule-train's trainings run on one thread each
    rows = []
    for seed in (int(v) for v in args.seeds.split(",")):
        folder = Path(args.out) / f"n{args.samples}_seed{seed}"
        if not (folder / "genepcs" / "features.npy").exists():
            sys.exit(f"{folder}: no cohort there; build it with benchmarks/capsule_family.py --out {args.out} "
                     f"--seeds {seed} --samples {args.samples} first")
        cohort = FamilyCohort("", args.samples, seed, folder, (), True)
        names = [cohort.add(a, i, float(h)) for a in args.architectures.split(",")
                 for i in args.interactions.split(",") for h in args.h2.split(",")]
        feats, n_burden = cohort_features(folder / "genepcs", args.burden_maf)
        for name in names:
            rows.append(final_model_row(cohort, name, feats, n_burden, overrides))
            print(json.dumps(rows[-1]), flush=True)
    print(inputs_summary(rows), file=sys.stderr)
    print(per_scenario([(r["name"], {"capsule": r["acc"], "bayes": r["bayes"], "limit": r["limit"]}) for r in rows]),
          file=sys.stderr)
    if args.compare:
        print(compare(rows, args.compare), file=sys.stderr)


if __name__ == "__main__":
    main()
