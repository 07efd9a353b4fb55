"""Learned bounds for benchmarks/capsule_family.py's cohorts: how far a model that knew the planted
genes (and the planted interaction) gets on the same rows, against the additive-only limit.

For each interacting phenotype of the family: capsule-train's split for the cohort's seed (the
non-test rows train, the balanced test set scores; the same rows as the family's test view), then
two logistic regressions scored on the test rows:
- true features: the four additive genes' standardised planted scores and the planted pair term
  (C = 1e4, nearly unpenalised): close to the Bayes limit;
- planted columns: the six planted genes' own Gene-PCs and burden columns (--burden-maf, as
  capsule-train --burden-maf makes them) standardised on the training rows, plus the true pair term
  (C = 1): what a model reaches that knows which genes act and the interaction exactly, but has to
  learn each gene's direction from its columns.
Where even the second stays under the additive-only limit, "above the additive-only limit" asks more
than these features give at this sample size.

    python benchmarks/capsule_family_oracle.py --out bench-output/h60r05s --seeds 2,3 --h2 0.5,0.8

--out: a capsule_family.py output folder whose n{samples}_seed{seed} cohorts exist (reused, not built).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from capsule_family import N_ADDITIVE, FamilyCohort, burden_columns  # noqa: E402

from genointerp.capsule.interpret import gene_groups  # noqa: E402
from genointerp.capsule.splits import make_split  # noqa: E402
from genointerp.genotypes.cohort import standardised  # noqa: E402


def main() -> None:
    from sklearn.linear_model import LogisticRegression

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--seeds", default="2,3")
    ap.add_argument("--h2", default="0.5")
    ap.add_argument("--architectures", default="single,several,dense,burden")
    ap.add_argument("--interactions", default="xor,cooccur,multiplicative")
    ap.add_argument("--burden-maf", type=float, default=0.05)
    args = ap.parse_args()
    print("seed\tphenotype\tbayes\tadditive_limit\ttrue_features\tplanted_columns\tplanted_columns_above_limit")
    for seed in (int(s) for s in args.seeds.split(",")):
        cohort = FamilyCohort("", args.samples, seed, Path(f"{args.out}/n{args.samples}_seed{seed}"), (), True)
        groups = gene_groups(cohort.features.columns)
        names = [g.rpartition(":")[2] for g, _ in groups]
        extra, extra_genes = burden_columns(cohort, args.burden_maf) or (np.zeros((len(cohort.samples), 0)), [])
        for architecture in args.architectures.split(","):
            for interaction in args.interactions.split(","):
                for h2 in (float(h) for h in args.h2.split(",")):
                    name = cohort.add(architecture, interaction, h2)
                    y = cohort.labels[name]
                    genes = cohort.planted[architecture]
                    split = make_split(y, ["1", "2"], 2, 0.2, seed)  # capsule-train's test set for this seed
                    tr, te = split.train, split.test
                    bayes, limit = cohort.limits(name, te)
                    pair = cohort.parts[name][1][:, None]
                    scores = np.column_stack([standardised(g.score(cohort.dose)) for g in genes[:N_ADDITIVE]])
                    true = np.hstack([scores, pair])
                    planted = [names.index(g.name) for g in genes]
                    x = np.hstack([cohort.features.matrix[:, np.concatenate([groups[g][1] for g in planted])],
                                   extra[:, [j for j, g in enumerate(extra_genes) if g in planted]]]).astype(np.float64)
                    x = (x - x[tr].mean(0)) / (x[tr].std(0) + 1e-12)
                    cols = np.hstack([x, pair])
                    a_true = LogisticRegression(C=1e4, max_iter=5000).fit(true[tr], y[tr]).score(true[te], y[te])
                    a_cols = LogisticRegression(C=1, max_iter=5000).fit(cols[tr], y[tr]).score(cols[te], y[te])
                    print(f"{seed}\t{name}\t{bayes:.3f}\t{limit:.3f}\t{a_true:.3f}\t{a_cols:.3f}\t"
                          f"{'yes' if a_cols > limit else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
