"""capsule-train on simulated phenotypes over real haplotypes: capsule vs baselines, causal-gene recovery.

Cohort: a mosaic of the real phased 1000 Genomes EUR chr21 haplotypes (genointerp.genotypes.cohort;
real allele frequencies and LD, more samples than the 379 of the panel), with the GENCODE genes of
the region; Gene-PCs from `genointerp gene-pca`. Phenotypes are simulated from one causal SNP in each
of four causal genes (each SNP inside exactly one gene, minor allele frequency 0.22-0.36), on a
liability scale with heritability h2, cases = liability above the median (balanced):

- additive:  liability = sum of the four standardised dosages;
- cooccur:   liability = 1 where a sample carries the minor allele of both genes 1 and 2 (risk only
  when the two risk alleles co-occur; each gene alone has a marginal effect);
- xor:       liability = 1 where it carries exactly one of the two (XOR epistasis; with carrier
  frequencies near 0.5, MAF 0.22-0.36, neither gene alone says anything: a linear model is blind).

Each scenario runs `genointerp capsule-train` once (5-fold CV + balanced 20 % test set, all
baselines on the same folds, the PRS among them: gene-pca keeps the SNP dosages); the table shows CV accuracy mean ± sd and test accuracy per method,
then how many of the scenario's causal genes are among the decisive genes (top 5 % of genes.tsv), next to
the same count for logistic regression's per-gene |coefficient| sums (a linear reference).

    python benchmarks/capsule.py --shared ../shared/data [--samples 1000] [--seed 1] [--h2 0.8] [--threads 1] [--scenarios additive,cooccur,xor] [--primary conv]

--primary is capsule-train's; conv (the paper's primary capsules) by default here, as in the
README's table, which was measured before gene capsules became capsule-train's default
(benchmarks/capsule_primary.py compares the two).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

from genointerp.capsule.interpret import gene_groups  # noqa: E402
from genointerp.genotypes.cohort import tile_genes, write_mosaic_vcf  # noqa: E402
from genointerp.io.features import read_features  # noqa: E402
from genointerp.io.genes import read_genes  # noqa: E402
from genointerp.io.vcf import VcfGenotypes  # noqa: E402

N_CAUSAL = 4


def dosages(vcf: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(samples, positions (m,), dosage int8 (n, m)) of the mosaic VCF (no missing calls there)."""
    reader = VcfGenotypes(str(vcf))
    sites = list(reader)
    return reader.samples, np.array([s.pos for s in sites]), np.stack([s.dosage for s in sites], axis=1)


def causal_snps(genes, pos, dose, feature_genes: set[str], rng) -> list[tuple[str, int]]:
    """(gene, SNP column) for N_CAUSAL genes with Gene-PCs: a common SNP inside that gene only."""
    maf = dose.mean(0) / 2
    maf = np.minimum(maf, 1 - maf)
    candidates = []
    for g in genes:
        if g.name not in feature_genes:
            continue
        inside = np.flatnonzero((pos > g.start) & (pos <= g.end) & (maf >= 0.22) & (maf <= 0.36))
        # a SNP of one gene only, so that "the causal gene" is unambiguous
        alone = [j for j in inside if sum(o.start < pos[j] <= o.end for o in genes) == 1]
        if alone:
            candidates.append((g.name, int(rng.choice(alone))))
    picks = rng.choice(len(candidates), size=N_CAUSAL, replace=False)
    return [candidates[i] for i in sorted(picks)]


SCENARIOS = {"additive": 4, "cooccur": 2, "xor": 2}  # scenario -> how many causal genes it uses


def liability(kind: str, dose: np.ndarray, causal, h2: float, rng) -> np.ndarray:
    cols = [j for _, j in causal[:SCENARIOS[kind]]]
    if kind == "additive":
        g = sum((dose[:, j] - dose[:, j].mean()) / dose[:, j].std() for j in cols)
    else:
        minor = [dose[:, j] if dose[:, j].mean() <= 1 else 2 - dose[:, j] for j in cols]
        a, b = (m > 0 for m in minor)
        g = (a & b) if kind == "cooccur" else (a ^ b)
        g = g.astype(float)
    g = (g - g.mean()) / g.std()
    return math.sqrt(h2) * g + math.sqrt(1 - h2) * rng.normal(size=len(g))


def lr_gene_ranking(features, pheno_labels: np.ndarray, samples_idx) -> list[str]:
    """Genes by the sum of |standardised logistic-regression coefficients| of their PCs."""
    from sklearn.linear_model import LogisticRegression

    x = features.matrix[samples_idx]
    x = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1)
    coef = np.abs(LogisticRegression(max_iter=5000).fit(x, pheno_labels).coef_[0])
    score = {name.rpartition(":")[2]: float(coef[idx].sum()) for name, idx in gene_groups(features.columns)}
    return sorted(score, key=lambda g: -score[g])


def planted_cohort(shared: str, n_samples: int, seed: int, h2: float, kinds: tuple[str, ...], out: Path):
    """The mosaic cohort, its Gene-PCs (out/genepcs, with SNP dosages), causal SNPs and one
    phenotype column per scenario in out/pheno.tsv (2 = case). Returns (features, causal
    [(gene, SNP column)], labels {scenario: 0/1 (n,)}, a one-line description). One generator
    seeded with `seed` draws the cohort's causal SNPs, then each scenario's liability noise in order."""
    rng = np.random.default_rng(seed)
    geno = Path(shared) / "genotypes"
    vcf, bed, feats = out / "cohort.vcf.gz", out / "genes.bed", out / "genepcs"
    panel, layout = write_mosaic_vcf(vcf, str(geno / "1000G_EUR.chr21.phased.vcf.gz"),
                                     str(geno / "genetic_map_hg19_example.txt.gz"), n_samples, 1813, seed)
    genes = tile_genes(panel, read_genes(str(geno / "gencode_v28.hg19.protein_coding_genes.bed")), layout)
    bed.write_text("".join(f"{g.chrom}\t{g.start}\t{g.end}\t{g.name}\n" for g in genes))
    t_pca = timed(GENOINTERP + ["-q", "gene-pca", str(vcf), "-g", str(bed), "-o", str(feats), "--keep-dosages",
                                "--force"])
    features = read_features(feats)
    feature_genes = {c.split(":")[1] for c in features.columns}
    samples, pos, dose = dosages(vcf)
    assert samples == features.samples
    causal = causal_snps(genes, pos, dose, feature_genes, rng)
    about = (f"cohort: {n_samples} mosaic samples x {len(pos)} SNPs (real EUR chr21 haplotypes), {len(feature_genes)} "
             f"genes with Gene-PCs, {len(features.columns)} features (gene-pca {t_pca:.1f} s); causal genes: "
             f"{', '.join(f'{g} (MAF {min(dose[:, j].mean() / 2, 1 - dose[:, j].mean() / 2):.2f})' for g, j in causal)}; "
             f"h2 {h2}")
    labels = {}
    for kind in kinds:
        li = liability(kind, dose, causal, h2, rng)
        labels[kind] = (li > np.median(li)).astype(int)
    (out / "pheno.tsv").write_text("sample\t" + "\t".join(kinds) + "\n" + "".join(
        f"{s}\t" + "\t".join(str(labels[k][i] + 1) for k in kinds) + "\n" for i, s in enumerate(samples)))
    return features, causal, labels, about


def decisive_genes(model: Path) -> tuple[list[str], list[str]]:
    """(decisive genes, all genes ranked) of a capsule-train model directory's genes.tsv."""
    ranked = [line.split("\t") for line in (model / "genes.tsv").read_text().splitlines()[1:]]
    return [r[1] for r in ranked if r[5] == "yes"], [r[1] for r in ranked]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--h2", type=float, default=0.8, help="heritability on the liability scale")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated subset of " + ", ".join(SCENARIOS))
    ap.add_argument("--primary", default="conv", choices=("conv", "gene"), help="capsule-train --primary")
    ap.add_argument("--out", default="bench-output/capsule")
    args = ap.parse_args()
    out = out_dir(args.out)
    kinds = tuple(args.scenarios.split(","))
    if not set(kinds) <= set(SCENARIOS):
        sys.exit(f"--scenarios: choose from {', '.join(SCENARIOS)}")
    features, causal, labels, about = planted_cohort(args.shared, args.samples, args.seed, args.h2, kinds, out)
    feats = out / "genepcs"
    print(about)

    rows, recovery = [], []
    for kind in kinds:
        causal_names = {g for g, _ in causal[:SCENARIOS[kind]]}
        model = out / f"model_{kind}"
        t0 = time.perf_counter()
        timed(GENOINTERP + ["-q", "capsule-train", str(feats), "-p", str(out / "pheno.tsv"), "--phenotype", kind,
                            "-o", str(model), "--threads", str(args.threads), "--seed", str(args.seed),
                            "--epochs", str(args.epochs), "--primary", args.primary, "--force"])
        secs = time.perf_counter() - t0
        for line in (model / "results.tsv").read_text().splitlines()[1:]:
            f = line.split("\t")
            rows.append({"scenario": kind, "method": f[0], "cv_accuracy": f"{f[1]} ± {f[2]}", "test_accuracy": f[9]})
        decisive, ranked = decisive_genes(model)
        split = [line.split("\t") for line in (model / "split.tsv").read_text().splitlines()[1:]]
        train_idx = [i for i, r in enumerate(split) if r[2] != "test"]
        lr_top = lr_gene_ranking(features, labels[kind][train_idx], train_idx)[:len(decisive)]
        cfg = json.loads((model / "config.json").read_text())
        recovery.append({"scenario": kind, "decisive_genes": len(decisive),
                         "capsule_causal_in_top": f"{len(causal_names & set(decisive))}/{len(causal_names)}",
                         "lr_causal_in_top": f"{len(causal_names & set(lr_top))}/{len(causal_names)}",
                         "capsule_causal_ranks": ",".join(str(i + 1) for i, g in enumerate(ranked) if g in causal_names),
                         "primary_capsule": cfg["interpretation"].get("primary_capsule", "genes"), "train_s": f"{secs:.0f}"})
    print(table(rows, ["scenario", "method", "cv_accuracy", "test_accuracy"]))
    print()
    print(table(recovery, ["scenario", "decisive_genes", "capsule_causal_in_top", "lr_causal_in_top",
                           "capsule_causal_ranks", "primary_capsule", "train_s"]))
    (out / "result.json").write_text(json.dumps({"accuracy": rows, "recovery": recovery,
                                                 "causal": [g for g, _ in causal]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
