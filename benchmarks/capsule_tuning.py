"""Cross-validation accuracy of one capsule-train setting on a `benchmarks/capsule.py` output (tuning aid).

Runs only the capsule network's 5 CV folds (no baselines, no final model, no test set: settings are
chosen on CV accuracy alone), with logistic regression on the same folds for reference. Reads the
Gene-PCs and simulated phenotypes that benchmarks/capsule.py wrote (and, where it wrote limits.tsv,
prints each model's share of the way from chance to the scenario's Bayes limit):

    python benchmarks/capsule_tuning.py --scenario cooccur --config '{"hidden": 64, "dropout": 0.2}' \\
        --settings '{"weight_decay": 1e-2}' [--bench bench-output/capsule]

--config takes CapsuleConfig fields, --settings CapsuleSettings fields (JSON); "seed" in --settings
draws another split.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from genointerp.capsule import protocol
from genointerp.capsule.baselines import baseline_models
from genointerp.capsule.cohort import align, order_case_last
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import make_split
from genointerp.io.features import read_features, read_phenotypes
from genointerp.models.capsule import CapsuleConfig

sys.path.insert(0, str(Path(__file__).parent))
from capsule import way_to_limit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="bench-output/capsule", help="output folder of benchmarks/capsule.py")
    ap.add_argument("--scenario", default="cooccur")
    ap.add_argument("--config", default="{}", help="CapsuleConfig fields as JSON")
    ap.add_argument("--settings", default="{}", help="CapsuleSettings fields as JSON")
    args = ap.parse_args()
    torch.set_num_threads(1)

    features = read_features(f"{args.bench}/genepcs")
    pheno = order_case_last(read_phenotypes(f"{args.bench}/pheno.tsv", args.scenario), None, "pheno.tsv")
    x, y, _ = align(features, pheno, "pheno.tsv")
    config = CapsuleConfig(n_features=x.shape[1], **json.loads(args.config))
    s = CapsuleSettings(baselines=False, **json.loads(args.settings))
    split = make_split(y, pheno.classes, s.folds, s.test_fraction, s.seed)
    t0 = time.perf_counter()
    capsule, lr, epochs = [], [], []
    for k in range(s.folds):  # the same folds and fold seeds as capsule-train
        tr, ev = split.fold(k)
        history: list[dict] = []
        _, scaler, lengths, _ = protocol.fold_run(x, y, tr, ev, config, s, protocol.fold_seed(s, k), history)
        capsule.append(float((lengths.argmax(1) == y[ev]).mean()))
        logistic = baseline_models(s.seed, 1)["logistic_regression"]()
        lr.append(float((logistic.fit(scaler(x[tr]), y[tr]).predict(scaler(x[ev])) == y[ev]).mean()))
        epochs.append(len(history))
    limits = Path(args.bench) / "limits.tsv"  # written by benchmarks/capsule.py with the cohort
    bayes = next((float(line.split("\t")[1]) for line in limits.read_text().splitlines()[1:]
                  if line.split("\t")[0] == args.scenario), None) if limits.exists() else None
    share = "" if bayes is None else (f"\tBayes limit {bayes:.4f}: capsule {way_to_limit(np.mean(capsule), bayes):.0%}, "
                                      f"logistic regression {way_to_limit(np.mean(lr), bayes):.0%} of the way")
    print(f"{args.scenario}\tconfig {args.config}\tsettings {args.settings}\tcapsule {np.mean(capsule):.4f} ± "
          f"{np.std(capsule, ddof=1):.4f}\tlogistic regression {np.mean(lr):.4f} ± {np.std(lr, ddof=1):.4f}\t"
          f"epochs {epochs}\t{time.perf_counter() - t0:.0f} s{share}")


if __name__ == "__main__":
    main()
