"""capsule-train on simulated phenotypes over real haplotypes: capsule vs baselines, causal-gene recovery,
and capsule-search on the interaction scenarios (issue 18's done-when).

Cohort: a mosaic of the real phased 1000 Genomes EUR chr21 haplotypes (genointerp.genotypes.cohort;
real allele frequencies and LD, more samples than the 379 of the panel), with the GENCODE genes of
the region; Gene-PCs from `genointerp gene-pca`. Phenotypes are simulated from one causal SNP in each
of six causal genes (each SNP inside exactly one gene, minor allele frequency 0.22-0.36), on a
liability scale with heritability h2, cases = liability above the median (balanced):

- additive:  liability = sum of the standardised dosages of genes 1-4;
- cooccur:   liability = 1 where a sample carries the minor allele of both genes 1 and 2 (risk only
  when the two risk alleles co-occur; each gene alone has a marginal effect);
- xor:       liability = 1 where it carries exactly one of the two (XOR epistasis; with carrier
  frequencies near 0.5, MAF 0.22-0.36, neither gene alone says anything: a linear model is blind);
- mixed:     the additive sum of genes 1-4 plus an XOR pair of genes 5 and 6, each part standardised
  (the pair carries half the genetic variance, each additive gene an eighth).

Genes 5 and 6 and the mixed scenario's noise come from generators of their own, so genes 1-4 and
the other scenarios' phenotypes are what they were before the mixed scenario existed.

For every seed (--seeds 1,2,3: each seed its own cohort, causal genes and splits) each scenario runs
`genointerp capsule-train` (5-fold CV + balanced 20 % test set; --primary gene with every baseline on
the same folds: logistic regression, SVM, random forest, AdaBoost, MLP and the PRS, gene-pca keeps
the SNP dosages; a second kind, --primary gene,conv, with --no-baselines on the same folds;
--primary conv --scenarios additive,cooccur,xor is the first capsule-train table of benchmarks/README.md). Printed: CV
accuracy per seed, mean ± sd over the seeds of each seed's 5-fold mean, capsule minus logistic
regression and the best baseline, and how many causal genes are among the decisive genes (top 5 %
of genes.tsv; logistic regression's per-gene |coefficient| sums as a linear reference). Beside
each accuracy, its share of the way from chance (0.5) to the cohort's Bayes limit: the accuracy of
the planted score without its noise, thresholded as the phenotype was (accuracy_limits), on the
rows the folds score; and the additive-only limit (the best call from the additive genes alone,
the pair integrated out), which a model must pass to show it uses the interaction. The pair each
model reports as interacting (config.json's interaction) is checked against the planted one. With
--search, capsule-search runs on those scenarios' cohorts: its top subset, and the planted pair's
rank in best.tsv and in the pair screen.

    python benchmarks/capsule.py --shared ../shared/data [--samples 1000] [--seeds 1,2,3] [--h2 0.8] \
        [--scenarios additive,cooccur,xor,mixed] [--primary gene[,conv]] [--search cooccur,xor,mixed] \
        [--search-args "--population 8 --generations 4"] [--gene-pca-args "--pcs-rule 4:2,20:8,inf:16"] \
        [--train-args "--gene-penalty 0 --lr 1e-3 --patience 10 --epochs 100"] [--jobs 2] [--reuse]

--train-args passes capsule-train options to every training (the example gives the gene capsules as
they were before the group penalty).

--jobs runs that many genointerp processes at once (1 thread each); results do not depend on it.
--reuse keeps model and search folders a run before finished (their seconds are kept beside them),
so seeds or searches run apart can be tabulated together.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

from genointerp.capsule.interpret import gene_groups  # noqa: E402
from genointerp.genotypes.cohort import tile_genes, write_mosaic_vcf  # noqa: E402
from genointerp.io.features import Features, read_features  # noqa: E402
from genointerp.io.genes import read_genes  # noqa: E402
from genointerp.io.vcf import VcfGenotypes  # noqa: E402

N_CAUSAL = 4


def dosages(vcf: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(samples, positions (m,), dosage int8 (n, m)) of the mosaic VCF (no missing calls there)."""
    reader = VcfGenotypes(str(vcf))
    sites = list(reader)
    return reader.samples, np.array([s.pos for s in sites]), np.stack([s.dosage for s in sites], axis=1)


def causal_snps(genes, pos, dose, feature_genes: set[str], rng, seed: int) -> list[tuple[str, int]]:
    """(gene, SNP column) for N_CAUSAL genes with Gene-PCs (a common SNP inside that gene only), then
    two more (the mixed scenario's pair)."""
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
    # the mixed scenario's interacting pair: two more genes, from a generator of their own so that the
    # four above (and every other draw of `rng`) are what they were before the mixed scenario existed
    rest = np.setdiff1d(np.arange(len(candidates)), picks)
    pair = np.random.default_rng([seed, 6]).choice(rest, size=2, replace=False)
    return [candidates[i] for i in sorted(picks)] + [candidates[i] for i in sorted(pair)]


SCENARIOS = {"additive": 4, "cooccur": 2, "xor": 2, "mixed": 6}  # scenario -> how many causal genes it uses
PAIR = {"cooccur": (0, 1), "xor": (0, 1), "mixed": (4, 5)}  # scenario -> its interacting pair (causal indices)


def minor_carrier(dose: np.ndarray, j: int) -> np.ndarray:
    d = dose[:, j]
    return (d if d.mean() <= 1 else 2 - d) > 0


def standardised(g: np.ndarray) -> np.ndarray:
    g = g.astype(float)
    return (g - g.mean()) / g.std()


def genetic_parts(kind: str, dose: np.ndarray, causal) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(additive part, pair part) of a scenario's genetic score, each standardised (n,), None where the
    scenario has none: the sum of genes 1-4's standardised dosages (additive, mixed), the pair's
    co-occurrence or XOR of minor-allele carriers (cooccur, xor: genes 1 and 2; mixed: genes 5 and 6)."""
    cols = [j for _, j in causal[:SCENARIOS[kind]]]
    additive = standardised(sum(standardised(dose[:, j]) for j in cols[:4])) if kind in ("additive", "mixed") else None
    if kind == "additive":
        return additive, None
    a, b = (minor_carrier(dose, j) for j in cols[-2:])
    return additive, standardised((a & b) if kind == "cooccur" else (a ^ b))


def genetic_score(kind: str, dose: np.ndarray, causal) -> np.ndarray:
    """The planted genetic score g (n,), standardised: the liability without its noise."""
    additive, pair = genetic_parts(kind, dose, causal)
    if additive is None or pair is None:
        return additive if pair is None else pair
    # mixed: the XOR pair with as much variance as the four additive genes
    return standardised(additive + pair)


def liability(kind: str, dose: np.ndarray, causal, h2: float, rng) -> np.ndarray:
    g = genetic_score(kind, dose, causal)
    return math.sqrt(h2) * g + math.sqrt(1 - h2) * rng.normal(size=len(g))


def accuracy_limits(kind: str, dose: np.ndarray, causal, h2: float, li: np.ndarray, rows) -> tuple[float, float | None]:
    """(Bayes accuracy, additive-only limit) of a planted phenotype on `rows`, li the liability (n,)
    the labels were cut from (limits_from_parts); the additive-only limit is the best call from
    genes 1-4 alone (additive, mixed; None for the pair-only scenarios)."""
    additive, pair = genetic_parts(kind, dose, causal)
    if additive is None:
        return limits_from_parts(pair, None, h2, li, rows)[0], None
    return limits_from_parts(additive, pair, h2, li, rows)


def limits_from_parts(additive: np.ndarray, pair: np.ndarray | None, h2: float, li: np.ndarray,
                      rows) -> tuple[float, float]:
    """(Bayes accuracy, additive-only limit) on `rows` of a phenotype cut at the median t of the
    liability li (n,) = sqrt(h2) g + sqrt(1 - h2) noise, g = standardised(additive + pair) (the
    additive part alone where pair is None), both parts (n,). A sample is a case with probability
    Phi((sqrt(h2) g - t) / sqrt(1 - h2)), so the best call from the genotypes is sqrt(h2) g > t: the
    planted score without the noise, thresholded as the phenotype was. The additive-only limit is
    the best call from the additive part alone: the pair's part integrated out over its cohort
    distribution (the pair's genes are other genes than the additive ones, so independent of them
    up to chr21 LD), call where that probability passes 1/2."""
    from scipy.stats import norm

    t = float(np.median(li))
    labels = li > t
    rows = np.asarray(rows)
    total = additive if pair is None else additive + pair
    g = (total - total.mean()) / total.std()
    bayes = float(np.mean((math.sqrt(h2) * g > t)[rows] == labels[rows]))
    if pair is None:
        return bayes, bayes
    values, counts = np.unique(pair, return_counts=True)
    p_case = np.zeros(len(li))
    for value, count in zip(values, counts):
        g = (additive + value - total.mean()) / total.std()
        p_case += count / len(pair) * norm.cdf((math.sqrt(h2) * g - t) / math.sqrt(1 - h2))
    return bayes, float(np.mean((p_case > 0.5)[rows] == labels[rows]))


def lr_gene_ranking(features, pheno_labels: np.ndarray, samples_idx) -> list[str]:
    """Genes by the sum of |standardised logistic-regression coefficients| of their PCs."""
    from sklearn.linear_model import LogisticRegression

    x = features.matrix[samples_idx]
    x = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1)
    coef = np.abs(LogisticRegression(max_iter=5000).fit(x, pheno_labels).coef_[0])
    score = {name.rpartition(":")[2]: float(coef[idx].sum()) for name, idx in gene_groups(features.columns)}
    return sorted(score, key=lambda g: -score[g])


class Cohort(NamedTuple):
    features: Features
    causal: list[tuple[str, int]]  # (gene, SNP column of dose)
    labels: dict[str, np.ndarray]  # scenario -> 0/1 (n,)
    about: str  # a one-line description
    dose: np.ndarray  # int8 (n, m) SNP dosages
    liabilities: dict[str, np.ndarray]  # scenario -> liability (n,) the labels were cut from
    h2: float

    def limits(self, kind: str, rows) -> tuple[float, float | None]:
        """(Bayes accuracy, additive-only limit) of scenario `kind` on `rows` (accuracy_limits)."""
        return accuracy_limits(kind, self.dose, self.causal, self.h2, self.liabilities[kind], rows)


def way_to_limit(accuracy: float, limit: float) -> float:
    """The share of the way from chance (0.5: the phenotypes are cut at the median) to `limit`."""
    return (accuracy - 0.5) / (limit - 0.5)


def planted_cohort(shared: str, n_samples: int, seed: int, h2: float, kinds: tuple[str, ...], out: Path,
                   gene_pca_args: tuple[str, ...] = ()) -> Cohort:
    """The mosaic cohort, its Gene-PCs (out/genepcs, with SNP dosages), causal SNPs and one
    phenotype column per scenario in out/pheno.tsv (2 = case). One generator seeded with `seed`
    draws the cohort's causal SNPs, then each scenario's liability noise in order."""
    rng = np.random.default_rng(seed)
    geno = Path(shared) / "genotypes"
    vcf, bed, feats = out / "cohort.vcf.gz", out / "genes.bed", out / "genepcs"
    panel, layout = write_mosaic_vcf(vcf, str(geno / "1000G_EUR.chr21.phased.vcf.gz"),
                                     str(geno / "genetic_map_hg19_example.txt.gz"), n_samples, 1813, seed)
    genes = tile_genes(panel, read_genes(str(geno / "gencode_v28.hg19.protein_coding_genes.bed")), layout)
    bed.write_text("".join(f"{g.chrom}\t{g.start}\t{g.end}\t{g.name}\n" for g in genes))
    t_pca = timed(GENOINTERP + ["-q", "gene-pca", str(vcf), "-g", str(bed), "-o", str(feats), "--keep-dosages",
                                "--force", *gene_pca_args])
    features = read_features(feats)
    feature_genes = {c.split(":")[1] for c in features.columns}
    samples, pos, dose = dosages(vcf)
    assert samples == features.samples
    causal = causal_snps(genes, pos, dose, feature_genes, rng, seed)
    about = (f"cohort: {n_samples} mosaic samples x {len(pos)} SNPs (real EUR chr21 haplotypes), {len(feature_genes)} "
             f"genes with Gene-PCs, {len(features.columns)} features (gene-pca {t_pca:.1f} s); causal genes: "
             f"{', '.join(f'{g} (MAF {min(dose[:, j].mean() / 2, 1 - dose[:, j].mean() / 2):.2f})' for g, j in causal)}; "
             f"h2 {h2}")
    labels, liabilities = {}, {}
    for kind in kinds:
        # mixed draws its noise from a generator of its own: the other scenarios' stay as they were
        li = liability(kind, dose, causal, h2, np.random.default_rng([seed, 7]) if kind == "mixed" else rng)
        labels[kind], liabilities[kind] = (li > np.median(li)).astype(int), li
    (out / "pheno.tsv").write_text("sample\t" + "\t".join(kinds) + "\n" + "".join(
        f"{s}\t" + "\t".join(str(labels[k][i] + 1) for k in kinds) + "\n" for i, s in enumerate(samples)))
    cohort = Cohort(features, causal, labels, about, dose, liabilities, h2)
    # over every sample, for capsule_tuning.py (the tables here take the rows the CV folds score)
    limits = {kind: cohort.limits(kind, np.arange(n_samples)) for kind in kinds}
    (out / "limits.tsv").write_text("scenario\tbayes\tadditive_limit\n" + "".join(
        f"{k}\t{b:.4f}\t{'NA' if a is None else f'{a:.4f}'}\n" for k, (b, a) in limits.items()))
    return cohort


def decisive_genes(model: Path) -> tuple[list[str], list[str]]:
    """(decisive genes, all genes ranked) of a capsule-train model directory's genes.tsv."""
    ranked = [line.split("\t") for line in (model / "genes.tsv").read_text().splitlines()[1:]]
    return [r[1] for r in ranked if r[5] == "yes"], [r[1] for r in ranked]


METHODS = {"capsule_gene": "capsule (gene)", "capsule_conv": "capsule (conv)", "logistic_regression": "LR",
           "svm": "SVM", "random_forest": "RF", "adaboost": "AdaBoost", "mlp": "MLP", "prs": "PRS",
           "lr_network_inputs": "LR of its inputs"}
# the peers; capsule-train's lr_network_inputs is not one (it reads what the network's screens chose)
BASELINES = ("logistic_regression", "svm", "random_forest", "adaboost", "mlp", "prs")


def fold_accuracy(model: Path) -> dict[str, list[float]]:
    """method -> CV accuracy of each fold, from a capsule-train model folder's folds.tsv."""
    acc: dict[str, list[float]] = {}
    for line in (model / "folds.tsv").read_text().splitlines()[1:]:
        f = line.split("\t")
        acc.setdefault(f[0], []).append(float(f[2]))
    return acc


def mean_sd(values, fmt: str = ".3f") -> str:
    return (f"{np.mean(values):{fmt}} ± {np.std(values, ddof=1):{fmt}}" if len(values) > 1
            else f"{values[0]:{fmt}}")


def reported_pair(model: Path, planted: set[str]) -> str:
    """The gene pair a capsule-train model reports as interacting (config.json's interaction, where
    it is called interacting), '(planted)' where it is the planted pair; '-' where it reports none."""
    found = json.loads((model / "config.json").read_text()).get("interaction") or {}
    names = {g.rpartition(":")[2] for g in found.get("genes", [])} if found.get("interacting") else set()
    return "-" if not names else ",".join(sorted(names)) + (" (planted)" if names == planted else "")


def search_outcome(folder: Path, pair: set[str]) -> dict:
    """What capsule-search returned: rank 1, and the planted pair's rank in best.tsv (top 10) or '>10'."""
    rows = [line.split("\t") for line in (folder / "best.tsv").read_text().splitlines()[1:]]
    genes = [{g.rpartition(":")[2] for g in r[1].split(",")} for r in rows]
    rank = next((i + 1 for i, g in enumerate(genes) if g == pair), None)
    holds = next((i + 1 for i, g in enumerate(genes) if pair <= g), None)
    info = json.loads((folder / "search.json").read_text())
    screened = [{g.rpartition(":")[2] for g in line.split("\t")[1].split(",")}
                for line in (folder / "screen.tsv").read_text().splitlines()[1:]] if (folder / "screen.tsv").exists() else []
    return {"top": ",".join(sorted(genes[0])), "top_fitness": rows[0][3], "top_cv_capsule": rows[0][4],
            "top_cv_logistic": rows[0][5], "pair_rank": rank or ">10", "pair_in_subset_rank": holds or ">10",
            "pair_fitness": rows[rank - 1][3] if rank else "",
            "pair_screen_rank": next((i + 1 for i, g in enumerate(screened) if g == pair), ">100"),
            "evaluated": info["subsets_evaluated"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seeds", default="1", help="comma-separated; each seed makes its own cohort, causal genes and splits")
    ap.add_argument("--h2", type=float, default=0.8, help="heritability on the liability scale")
    ap.add_argument("--epochs", type=int, default=None, help="capsule-train --epochs (default: capsule-train's own)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated subset of " + ", ".join(SCENARIOS))
    ap.add_argument("--primary", default="gene", help="capsule-train --primary kinds to run: gene, conv, gene,conv or "
                    "conv,gene (the first runs with every baseline, the other with --no-baselines on the same folds)")
    ap.add_argument("--search", default="", help="scenarios to run capsule-search on (e.g. cooccur,xor,mixed): "
                    "is the planted pair the top subset?")
    ap.add_argument("--search-args", default="--population 16 --generations 8",
                    help="capsule-search options (besides -o, --phenotype, --seed, -t 1)")
    ap.add_argument("--train-args", default="", help="extra capsule-train options, e.g. \"--gene-penalty 0\" for the "
                    "unpenalised gene capsules")
    ap.add_argument("--gene-pca-args", default="", help="extra gene-pca options (e.g. \"--pcs-rule 4:2,20:8,inf:16\"); give each setting its own --out")
    ap.add_argument("--jobs", type=int, default=1, help="capsule-train/-search processes at once (1 thread each)")
    ap.add_argument("--reuse", action="store_true", help="keep finished model/search folders of an earlier run")
    ap.add_argument("--out", default="bench-output/capsule")
    args = ap.parse_args()
    kinds = tuple(args.scenarios.split(","))
    searched = tuple(k for k in args.search.split(",") if k)
    primaries = tuple(args.primary.split(","))
    if not set(kinds) <= set(SCENARIOS) or not set(searched) <= set(PAIR) & set(kinds):
        sys.exit(f"--scenarios: choose from {', '.join(SCENARIOS)}; --search from the interaction ones of those")
    if not set(primaries) <= {"gene", "conv"}:
        sys.exit("--primary: gene, conv or gene,conv")
    seeds = [int(s) for s in args.seeds.split(",")]

    cohorts, runs = {}, []  # runs: (seed, scenario, what) with what = gene | conv | search
    for seed in seeds:
        out = out_dir(f"{args.out}/seed{seed}")
        cohorts[seed] = planted_cohort(args.shared, args.samples, seed, args.h2, kinds, out,
                                       tuple(args.gene_pca_args.split()))
        print(f"seed {seed}: {cohorts[seed].about}", flush=True)
        runs += [(seed, kind, what) for kind in kinds for what in primaries + (("search",) if kind in searched else ())]

    def run(job) -> float:
        seed, kind, what = job
        out = Path(f"{args.out}/seed{seed}")
        folder, stamp = out / f"{kind}_{what}", out / f"{kind}_{what}.seconds"
        done = folder / ("best.tsv" if what == "search" else "genes.tsv")
        if args.reuse and done.exists() and stamp.exists():
            return float(stamp.read_text())
        common = ["--phenotype", kind, "-o", str(folder), "-t", "1", "--seed", str(seed), "--force"]
        if what == "search":
            cmd = ["capsule-search", str(out / "genepcs"), "-p", str(out / "pheno.tsv"), *common,
                   *args.search_args.split()]
        else:
            cmd = ["capsule-train", str(out / "genepcs"), "-p", str(out / "pheno.tsv"), *common, "--primary", what,
                   *(["--epochs", str(args.epochs)] if args.epochs else []), *args.train_args.split()]
            cmd += ["--no-baselines"] if what != primaries[0] else []
        secs = timed(GENOINTERP + ["-q"] + cmd)
        stamp.write_text(f"{secs:.1f}\n")
        print(f"seed {seed} {kind} {what}: {secs:.0f} s", flush=True)
        return secs

    with ThreadPoolExecutor(args.jobs) as pool:  # threads only wait on the genointerp processes
        seconds = dict(zip(runs, pool.map(run, runs)))

    acc: dict = {}  # (scenario, method) -> per-seed CV mean
    per_seed, recovery, searches = [], [], []
    for seed in seeds:
        cohort = cohorts[seed]
        features, causal, labels = cohort.features, cohort.causal, cohort.labels
        out = Path(f"{args.out}/seed{seed}")
        for kind in kinds:
            causal_names = {g for g, _ in causal[:SCENARIOS[kind]]}
            model = out / f"{kind}_{primaries[0]}"
            split = [line.split("\t") for line in (model / "split.tsv").read_text().splitlines()[1:]]
            train_idx = [i for i, r in enumerate(split) if r[2] != "test"]
            # the limits on the rows the CV folds score: every non-test sample
            bayes, additive_limit = cohort.limits(kind, train_idx)
            acc.setdefault((kind, "bayes"), []).append(bayes)
            acc.setdefault((kind, "additive_limit"), []).append(additive_limit)
            row = {"seed": seed, "scenario": kind, "Bayes": f"{bayes:.3f}",
                   "additive limit": "" if additive_limit is None else f"{additive_limit:.3f}"}
            for what in primaries:
                for method, folds in fold_accuracy(out / f"{kind}_{what}").items():
                    method = f"capsule_{what}" if method == "capsule" else method
                    acc.setdefault((kind, method), []).append(float(np.mean(folds)))
                    row[METHODS[method]] = f"{np.mean(folds):.3f} ({way_to_limit(np.mean(folds), bayes):.0%})"
            per_seed.append(row)
            decisive, ranked = decisive_genes(model)
            lr_top = lr_gene_ranking(features, labels[kind][train_idx], train_idx)[:len(decisive)]
            recovery.append({"seed": seed, "scenario": kind, "decisive": len(decisive),
                             f"causal in decisive ({primaries[0]})": f"{len(causal_names & set(decisive))}/{len(causal_names)}",
                             "causal in LR top": f"{len(causal_names & set(lr_top))}/{len(causal_names)}",
                             "causal ranks": ",".join(str(i + 1) for i, g in enumerate(ranked) if g in causal_names),
                             "reported pair": reported_pair(model, {causal[i][0] for i in PAIR.get(kind, ())}),
                             "train_s": "/".join(f"{seconds[(seed, kind, w)]:.0f}" for w in primaries)})
            if kind in searched:
                pair = {causal[i][0] for i in PAIR[kind]}
                searches.append({"seed": seed, "scenario": kind, "planted pair": ",".join(sorted(pair)),
                                 **search_outcome(out / f"{kind}_search", pair),
                                 "search_s": f"{seconds[(seed, kind, 'search')]:.0f}"})
    methods = [m for m in METHODS if any((k, m) in acc for k in kinds)]
    summary = []
    for kind in kinds:
        bayes = acc[(kind, "bayes")]
        row = {"scenario": kind, "Bayes": mean_sd(bayes),
               "additive limit": "" if None in acc[(kind, "additive_limit")] else mean_sd(acc[(kind, "additive_limit")]),
               # per seed, the share of that seed's way to its own limit; then mean ± sd over the seeds
               **{METHODS[m]: f"{mean_sd(acc[(kind, m)])} ({mean_sd([way_to_limit(a, b) for a, b in zip(acc[(kind, m)], bayes)], '.0%')})"
                  for m in methods if (kind, m) in acc}}
        found = [r for r in recovery if r["scenario"] == kind]
        key = f"causal in decisive ({primaries[0]})"
        row["causal in decisive"] = (f"{sum(int(r[key].split('/')[0]) for r in found)}/"
                                     f"{sum(int(r[key].split('/')[1]) for r in found)}")
        row["LR top"] = (f"{sum(int(r['causal in LR top'].split('/')[0]) for r in found)}/"
                         f"{sum(int(r['causal in LR top'].split('/')[1]) for r in found)}")
        cap = acc.get((kind, f"capsule_{primaries[0]}"))
        if cap and (kind, "logistic_regression") in acc:
            lr = acc[(kind, "logistic_regression")]
            best = max((m for m in BASELINES if (kind, m) in acc), key=lambda m: np.mean(acc[(kind, m)]))
            row["capsule - LR"] = f"{np.mean(cap) - np.mean(lr):+.3f} (sd {np.std(lr, ddof=1) if len(lr) > 1 else 0:.3f})"
            row["best baseline"] = f"{METHODS[best]} {np.mean(acc[(kind, best)]):.3f}"
        summary.append(row)
    print("CV accuracy (share of the way from chance to the Bayes limit)")
    print(table(per_seed, ["seed", "scenario", "Bayes", "additive limit"] + [METHODS[m] for m in methods]))
    print()
    print(table(recovery, list(recovery[0])))
    print()
    cols = ["scenario", "Bayes", "additive limit"] + [METHODS[m] for m in methods] + ["causal in decisive", "LR top"]
    cols += [c for c in ("capsule - LR", "best baseline") if any(c in r for r in summary)]
    print(f"mean ± sd over seeds {','.join(map(str, seeds))} of each seed's {args.samples}-sample 5-fold CV accuracy")
    print(table([{c: r.get(c, "") for c in cols} for r in summary], cols))
    if searches:
        print()
        print(table(searches, list(searches[0])))
    Path(f"{args.out}/result.json").write_text(json.dumps(
        {"per_seed": per_seed, "recovery": recovery, "summary": summary, "search": searches, "samples": args.samples,
         "seeds": seeds, "causal": {seed: [g for g, _ in cohorts[seed].causal] for seed in seeds}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
