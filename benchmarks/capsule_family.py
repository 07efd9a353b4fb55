"""capsule-train across genetic architectures: a family of planted cohorts, not one recipe (issue 60).

benchmarks/capsule.py plants each causal gene as one common SNP. Here a gene acts through its SNPs
in one of four ways (genointerp.genotypes.cohort.ARCHITECTURES: one common SNP; several SNPs with
random weights; a dense within-gene score over all its SNPs; a low-frequency burden), and a pair of
two more genes interacts in one of four ways (INTERACTIONS: none, XOR or co-occurrence of the two
genes' risk states, or the product of their scores). The liability is the standardised sum of
four additive genes' standardised scores, plus (with an interaction) the pair's standardised part
with as much variance, times sqrt(h2), plus noise; cases are the liabilities above the median.

Cohort: a mosaic of the real phased 1000 Genomes EUR chr21 haplotypes (as benchmarks/capsule.py;
one VCF and one gene-pca run per sample size and seed, every phenotype of the family a column of
its pheno.tsv). Each architecture draws its six causal genes (four additive, then the pair) among
the genes with Gene-PCs where it can be planted, from a generator of (seed, architecture); each
phenotype's noise from (seed, architecture, interaction, h2).

For every cohort: its Bayes limit and additive-only limit (benchmarks/capsule.py's
limits_from_parts, on the rows the CV folds score), then `genointerp capsule-train` (5-fold CV, a
balanced 20 % test set; --baselines all: logistic regression, SVM, random forest, AdaBoost, MLP and
the PRS on the same folds; --baselines lr: logistic regression alone, fitted here on capsule-train's
folds), each method's CV accuracy and share of the way from chance to the Bayes limit, the pair the
model reports as interacting against the planted one, and how many planted genes are among the
decisive genes or the reported pair.

Seeds: settings are chosen on the cohorts of one set of seeds (--seeds 11,12: "choose") and
reported on others (2,3: "report"; seed 1 reported the accuracy screen, and a false interaction
found on it shaped the pair test, so it no longer reports the pair); benchmarks/README.md says which.

--pair-test-only trains nothing: capsule-train's pair test on each phenotype's final-model rows, the
planted pair's z and rank and the best other pair's (seconds per phenotype, so every member of the
family: --h2 0.8,0.5, --samples 1000 and 3000), and whether another pair it reports is the planted
pair up to LD (each gene the planted one or linked to it, as the pair test's linked genes). With
--train-args "--burden-maf M" the genes' burden columns join the test's null model, as in capsule-train.

    python benchmarks/capsule_family.py --shared ../shared/data --samples 3000 --seeds 1 --h2 0.8 \\
        [--architectures single,several,dense,burden] [--interactions none,xor,cooccur,multiplicative] \\
        [--train-args "..."] [--gene-pca-args "..."] [--baselines lr|all] [--jobs 1] [--reuse] [--out DIR]

--train-args / --gene-pca-args: give each setting its own --out (cohorts are cached per --out:
the VCF and Gene-PCs are kept and reused when --reuse is given). Two processes must not share an
--out: each rewrites its pheno.tsv with the phenotypes it was given.

benchmarks/README.md's table: --seeds 1 --gene-pca-args "--pcs-rule inf:32,var:0.99" --train-args
"--folds 2" (the test-set view is the first: two-fold CV trains on fewer rows than the final model).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from capsule import BASELINES, METHODS, decisive_genes, dosages, fold_accuracy, limits_from_parts, way_to_limit  # noqa: E402
from capsule_primary import lr_accuracy, lr_fold_accuracy  # noqa: E402
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

from genointerp.genotypes.cohort import (ARCHITECTURES, INTERACTIONS, PlantedGene, plant_gene,  # noqa: E402
                                         planted_parts, planted_score, tile_genes, write_mosaic_vcf)
from genointerp.io.features import read_features  # noqa: E402
from genointerp.io.genes import read_genes  # noqa: E402

N_ADDITIVE = 4


def phenotype_name(architecture: str, interaction: str, h2: float) -> str:
    return f"{architecture}-{interaction}-h{h2:g}"


def own_snps(genes, pos: np.ndarray) -> dict[str, np.ndarray]:
    """gene name -> columns (k,) of the SNPs inside that gene and no other."""
    inside = {g.name: np.flatnonzero((pos > g.start) & (pos <= g.end)) for g in genes}
    count = np.zeros(len(pos), dtype=int)
    for cols in inside.values():
        count[cols] += 1
    return {name: cols[count[cols] == 1] for name, cols in inside.items()}


def plant(architecture: str, genes, pos: np.ndarray, dose: np.ndarray, feature_genes: set[str],
          seed: int) -> list[PlantedGene]:
    """Six planted genes of one architecture (four additive, then the pair), among the genes with
    Gene-PCs where the architecture can be planted; a generator of its own per (seed, architecture)."""
    rng = np.random.default_rng([seed, ARCHITECTURES.index(architecture)])
    af = dose.mean(0) / 2
    candidates = []
    for name, cols in own_snps(genes, pos).items():
        if name in feature_genes and len(cols):
            planted = plant_gene(architecture, name, cols, af[cols], rng)
            if planted is not None:
                candidates.append(planted)
    if len(candidates) < N_ADDITIVE + 2:
        sys.exit(f"only {len(candidates)} genes can carry a {architecture} effect; need {N_ADDITIVE + 2}")
    picks = rng.choice(len(candidates), size=N_ADDITIVE + 2, replace=False)
    return [candidates[i] for i in sorted(picks[:N_ADDITIVE])] + [candidates[i] for i in sorted(picks[N_ADDITIVE:])]


class FamilyCohort:
    """One mosaic cohort (n samples, seed) and the family's phenotypes on it."""

    def __init__(self, shared: str, n_samples: int, seed: int, out: Path, gene_pca_args: tuple[str, ...],
                 reuse: bool) -> None:
        geno = Path(shared) / "genotypes"
        vcf, bed, feats = out / "cohort.vcf.gz", out / "genes.bed", out / "genepcs"
        if not (reuse and vcf.exists() and bed.exists()):
            panel, layout = write_mosaic_vcf(vcf, str(geno / "1000G_EUR.chr21.phased.vcf.gz"),
                                             str(geno / "genetic_map_hg19_example.txt.gz"), n_samples, 1813, seed)
            genes = tile_genes(panel, read_genes(str(geno / "gencode_v28.hg19.protein_coding_genes.bed")), layout)
            bed.write_text("".join(f"{g.chrom}\t{g.start}\t{g.end}\t{g.name}\n" for g in genes))
        if not (reuse and (feats / "features.npy").exists()):
            timed(GENOINTERP + ["-q", "gene-pca", str(vcf), "-g", str(bed), "-o", str(feats), "--keep-dosages",
                                "--force", "--no-tsv", *gene_pca_args])
        self.genes = read_genes(str(bed))
        self.features = read_features(feats)
        self.feature_genes = {c.split(":")[1] for c in self.features.columns}
        self.samples, self.pos, self.dose = dosages(vcf)
        assert self.samples == self.features.samples
        self.seed, self.out, self.planted = seed, out, {}
        self.labels, self.parts, self.liabilities = {}, {}, {}

    def add(self, architecture: str, interaction: str, h2: float) -> str:
        """Plant one phenotype of the family; returns its pheno.tsv column name."""
        if architecture not in self.planted:
            self.planted[architecture] = plant(architecture, self.genes, self.pos, self.dose, self.feature_genes,
                                               self.seed)
        genes = self.planted[architecture]
        additive, pair = planted_parts(interaction, self.dose, genes[:N_ADDITIVE],
                                       None if interaction == "none" else (genes[N_ADDITIVE], genes[N_ADDITIVE + 1]))
        g = planted_score(additive, pair)
        rng = np.random.default_rng([self.seed, ARCHITECTURES.index(architecture), INTERACTIONS.index(interaction),
                                     int(round(h2 * 100))])
        li = math.sqrt(h2) * g + math.sqrt(1 - h2) * rng.normal(size=len(g))
        name = phenotype_name(architecture, interaction, h2)
        self.labels[name], self.parts[name], self.liabilities[name] = (li > np.median(li)).astype(int), (additive, pair), li
        self.h2 = {**getattr(self, "h2", {}), name: h2}
        return name

    def write_phenotypes(self) -> Path:
        names = list(self.labels)
        path = self.out / "pheno.tsv"
        path.write_text("sample\t" + "\t".join(names) + "\n" + "".join(
            f"{s}\t" + "\t".join(str(self.labels[k][i] + 1) for k in names) + "\n" for i, s in enumerate(self.samples)))
        return path

    def limits(self, name: str, rows) -> tuple[float, float]:
        additive, pair = self.parts[name]
        return limits_from_parts(additive, pair, self.h2[name], self.liabilities[name], rows)

    def causal(self, name: str) -> tuple[list[str], set[str]]:
        """(the phenotype's causal genes, its planted pair (empty without an interaction))."""
        architecture, interaction = name.split("-")[:2]
        genes = [g.name for g in self.planted[architecture]]
        return (genes[:N_ADDITIVE], set()) if interaction == "none" else (genes, set(genes[N_ADDITIVE:]))

    def about(self, architecture: str) -> str:
        return f"{architecture}: " + ", ".join(f"{g.name} ({len(g.columns)} SNPs)" for g in self.planted[architecture])


def test_accuracy(model: Path) -> dict[str, float]:
    """method -> held-out test accuracy, from a capsule-train model folder's results.tsv ({} without a test set)."""
    rows = [line.split("\t") for line in (model / "results.tsv").read_text().splitlines()]
    col = rows[0].index("test_accuracy")
    return {r[0]: float(r[col]) for r in rows[1:] if r[col] != "NA"}


def model_pair(model: Path) -> tuple[set[str], str]:
    """(the pair a capsule-train model reports as interacting (config.json), empty where none; the z
    of the pair test's best pair, "-" where none passed the sparing gate)."""
    found = json.loads((model / "config.json").read_text()).get("interaction") or {}
    z = f"{found['z']:.1f}" if "z" in found else "-"
    return ({g.rpartition(":")[2] for g in found.get("genes", [])} if found.get("interacting") else set()), z


def ld_proxies(x: np.ndarray, genes: list[np.ndarray], names: list[str], reported: tuple[str, str],
               planted: set[str]) -> str:
    """Where a reported pair that is not the planted one is it up to LD: each reported gene the planted
    gene or linked to a different planted gene (their PCs' first canonical correlation above the pair
    test's LINKED_CORRELATION, as pair_screen.linked_pairs), "gene~planted gene, ..."; else ""."""
    from genointerp.capsule.pair_screen import LINKED_CORRELATION

    corr = x.T @ x / len(x)

    def canonical(a: str, b: str) -> float:
        return float(np.linalg.svd(corr[np.ix_(genes[names.index(a)], genes[names.index(b)])], compute_uv=False)[0])

    for first, second in (sorted(planted), sorted(planted)[::-1]):
        matches = [g == p or canonical(g, p) > LINKED_CORRELATION for g, p in zip(reported, (first, second))]
        if all(matches):
            return ", ".join(f"{g}~{p}" for g, p in zip(reported, (first, second)) if g != p)
    return ""


def burden_columns(cohort: FamilyCohort, burden_maf: float) -> tuple[np.ndarray, list[int]] | None:
    """capsule-train --burden-maf's per-gene burden columns of the cohort (n, genes with one) and each
    column's gene number, or None without --burden-maf: what capsule-train's pair test gives its
    additive null model beside the PCs."""
    if not burden_maf:
        return None
    from genointerp.capsule.burden import burden_matrix, burden_plan, snp_genes
    from genointerp.capsule.interpret import gene_groups
    from genointerp.io.features import read_dosages

    folder = cohort.out / "genepcs"
    dosages = read_dosages(folder, len(cohort.features.samples))
    names = [g for g, _ in gene_groups(cohort.features.columns)]
    plan = burden_plan(dosages, snp_genes(folder), names, burden_maf)
    return burden_matrix(dosages, plan, str(folder)), [names.index(g["column"].rpartition(":")[0]) for g in plan]


def pair_tests(cohorts: dict, runs: list[tuple[int, str]], burden_maf: float = 0.0) -> None:
    """capsule-train's pair test (pair_screen.interaction_screen) on the rows its final model trains on
    (the non-test rows of capsule-train's split for the cohort's seed, standardised on them; with
    `burden_maf`, as capsule-train --burden-maf, the genes' burden columns in its null model): the
    planted pair's z and rank, the best other pair's z, and whether the model would report the planted
    pair (best, past the bar) or another one. The same numbers as config.json's interaction of a
    capsule-train run, without training."""
    from genointerp.capsule.interpret import gene_groups
    from genointerp.capsule.pair_screen import interaction_screen
    from genointerp.capsule.scaler import Scaler
    from genointerp.capsule.splits import make_split

    rows, burden = [], {seed: burden_columns(cohort, burden_maf) for seed, cohort in cohorts.items()}
    for seed, name in runs:
        cohort = cohorts[seed]
        groups = gene_groups(cohort.features.columns)
        names = [g.rpartition(":")[2] for g, _ in groups]
        y = cohort.labels[name].astype(np.int64)
        train = make_split(y, ["1", "2"], 5, 0.2, seed).train  # capsule-train's defaults; --folds leaves train as is
        pcs = cohort.features.matrix.shape[1]
        extra, extra_genes = (None, None) if burden[seed] is None else burden[seed]
        full = cohort.features.matrix if extra is None else np.hstack([cohort.features.matrix, extra])
        xs = Scaler.fit(full[train])(full[train]).astype(np.float64)  # as capsule-train standardises its input
        x = xs[:, :pcs]
        found = interaction_screen(x, y[train], [idx for _, idx in groups], seed,
                                   None if extra is None else xs[:, pcs:], extra_genes)
        ranked = found.ranked()
        where = {tuple(names[g] for g in pair): i for i, pair in enumerate(found.pairs)}
        causal, planted = cohort.causal(name)
        key = tuple(sorted(planted, key=names.index)) if planted else None
        best_pair, family, best_z, bar = ranked[0]
        best_pair = tuple(names[g] for g in best_pair)
        rank = {tuple(names[g] for g in c[0]): i + 1 for i, c in enumerate(ranked)}
        other = next(c for c in ranked if tuple(names[g] for g in c[0]) != key)
        reported = best_pair if abs(best_z) > bar else None
        proxy = ld_proxies(x, [idx for _, idx in groups], names, reported, planted) if reported and key else None

        burdens = found.tested("burdens") > 0  # the burden family's z and bar third, where it tests a pair

        def zs(i: int) -> str:
            third = "" if not burdens else " / -" if np.isnan(found.burden_z[i]) else f" / {found.burden_z[i]:.1f}"
            return f"{found.block_z[i]:.1f} / {found.score_z[i]:.1f}" + third

        bars = f"{found.block_bar:.2f} / {found.score_bar:.2f}" + (f" / {found.burden_bar:.2f}" if burdens else "")
        rows.append({"seed": seed, "phenotype": name, "bars": bars,
                     "planted z": ("linked" if key not in where else zs(where[key])) if key else "",
                     "planted rank": str(rank[key]) if key in where else "",
                     "best other z": f"{zs(found.pairs.index(other[0]))} ({other[1]})",
                     "reported": "-" if reported is None else ("planted" if key and set(reported) == set(key)
                                                               else ",".join(reported)
                                                               + (f" (planted up to LD: {proxy})" if proxy else ""))
                     + (f" [{family}]" if reported else ""),
                     "_ok": bool(key) and reported is not None and set(reported) == set(key), "_any": reported is not None,
                     "_ld": bool(proxy)})
    cols = ["seed", "phenotype", "bars", "planted z", "planted rank", "best other z", "reported"]
    print(table([{c: r[c] for c in cols} for r in rows], cols))
    interacting = [r for r in rows if "-none-" not in r["phenotype"]]
    additive = [r for r in rows if "-none-" in r["phenotype"]]
    print(f"planted pair reported in {sum(r['_ok'] for r in interacting)}/{len(interacting)} interacting cohorts "
          f"(and up to LD in {sum(r['_ld'] for r in interacting)} more; another pair in "
          f"{sum(r['_any'] and not r['_ok'] and not r['_ld'] for r in interacting)}), "
          f"a pair in {sum(r['_any'] for r in additive)}/{len(additive)} additive ones")


def per_scenario(results: list[tuple[str, dict]]) -> str:
    """The done-when summary per scenario (architecture x interaction x h2, the family's unit) of
    (phenotype, {capsule, bayes, limit[, lr]}) per cohort, each scenario's numbers the means over its
    seeds (its cohorts): one cohort's 600 test samples give its accuracy an sd of about 0.017, more
    than several of the margins measured. `lr`, capsule - LR, where every cohort has it."""
    by = defaultdict(list)
    for name, got in results:
        by[name].append(got)
    keys = ("capsule", "bayes", "limit") + (("lr",) if all("lr" in g for _, g in results) else ())
    means = {name: {k: float(np.mean([g[k] for g in got])) for k in keys} for name, got in by.items()}
    pairs = [m for name, m in means.items() if "-none-" not in name]
    seeds = sorted({len(got) for got in by.values()})
    lr = f"capsule - LR at least {min(m['lr'] for m in means.values()):+.3f}; " if "lr" in keys else ""
    return (f"per scenario (means over its {'/'.join(map(str, seeds))} seed{'s' if seeds != [1] else ''}): worst share "
            f"of the way {min(way_to_limit(m['capsule'], m['bayes']) for m in means.values()):.0%}; {lr}above the "
            f"additive-only limit in {sum(m['capsule'] > m['limit'] for m in pairs)}/{len(pairs)} interacting scenarios")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--seeds", default="1", help="comma-separated; each seed its own cohort, causal genes and splits")
    ap.add_argument("--h2", default="0.8", help="comma-separated heritabilities on the liability scale")
    ap.add_argument("--architectures", default=",".join(ARCHITECTURES))
    ap.add_argument("--interactions", default=",".join(INTERACTIONS))
    ap.add_argument("--train-args", default="", help="extra capsule-train options")
    ap.add_argument("--gene-pca-args", default="", help="extra gene-pca options (give each its own --out)")
    ap.add_argument("--baselines", choices=("lr", "all"), default="lr",
                    help="lr: capsule-train --no-baselines and logistic regression here on its folds; all: "
                         "capsule-train's baselines")
    ap.add_argument("--jobs", type=int, default=1, help="capsule-train processes at once (1 thread each)")
    ap.add_argument("--reuse", action="store_true", help="keep cohorts and finished models of an earlier run")
    ap.add_argument("--pair-test-only", action="store_true",
                    help="no training: capsule-train's pair test on each phenotype's final-model rows (seconds each)")
    ap.add_argument("--out", default="bench-output/capsule_family")
    args = ap.parse_args()
    archs, inters = args.architectures.split(","), args.interactions.split(",")
    if not set(archs) <= set(ARCHITECTURES) or not set(inters) <= set(INTERACTIONS):
        sys.exit(f"--architectures from {', '.join(ARCHITECTURES)}; --interactions from {', '.join(INTERACTIONS)}")
    seeds, h2s = [int(s) for s in args.seeds.split(",")], [float(h) for h in args.h2.split(",")]

    cohorts, runs = {}, []
    for seed in seeds:
        out = out_dir(f"{args.out}/n{args.samples}_seed{seed}")
        cohort = FamilyCohort(args.shared, args.samples, seed, out, tuple(args.gene_pca_args.split()), args.reuse)
        names = [cohort.add(a, i, h2) for a in archs for i in inters for h2 in h2s]
        cohort.write_phenotypes()
        cohorts[seed] = cohort
        for a in archs:
            print(f"seed {seed} {cohort.about(a)}", flush=True)
        runs += [(seed, name) for name in names]
    if args.pair_test_only:
        from genointerp.capsule.burden import AUTO_BURDEN_MAF, burden_maf_value

        train_args = argparse.ArgumentParser(add_help=False)
        train_args.add_argument("--burden-maf", type=burden_maf_value, default=None)
        maf = train_args.parse_known_args(args.train_args.split())[0].burden_maf
        # capsule-train's default, auto: AUTO_BURDEN_MAF, as every cohort's folder here holds dosages
        return pair_tests(cohorts, runs, AUTO_BURDEN_MAF if maf is None else maf)

    def run(job) -> float:
        seed, name = job
        out = Path(f"{args.out}/n{args.samples}_seed{seed}")
        folder, stamp = out / name, out / f"{name}.seconds"
        if args.reuse and (folder / "genes.tsv").exists() and stamp.exists():
            return float(stamp.read_text())
        secs = timed(GENOINTERP + ["-q", "capsule-train", str(out / "genepcs"), "-p", str(out / "pheno.tsv"),
                                   "--phenotype", name, "-o", str(folder), "-t", "1", "--seed", str(seed), "--force",
                                   *(["--no-baselines"] if args.baselines == "lr" else []), *args.train_args.split()])
        stamp.write_text(f"{secs:.1f}\n")
        print(f"seed {seed} {name}: {secs:.0f} s", flush=True)
        return secs

    with ThreadPoolExecutor(args.jobs) as pool:  # threads only wait on the genointerp processes
        seconds = dict(zip(runs, pool.map(run, runs)))

    rows = []
    for seed, name in runs:
        cohort, model = cohorts[seed], Path(f"{args.out}/n{args.samples}_seed{seed}/{name}")
        split = [line.split("\t")[2] for line in (model / "split.tsv").read_text().splitlines()[1:]]
        x, y = cohort.features.matrix.astype(np.float64), cohort.labels[name]
        cv_rows = np.array([i for i, r in enumerate(split) if r != "test"])
        test_rows = np.array([i for i, r in enumerate(split) if r == "test"])
        causal, planted_pair = cohort.causal(name)
        decisive, _ = decisive_genes(model)
        reported, pair_z = model_pair(model)
        found = set(causal) & (set(decisive) | reported)
        row = {"seed": seed, "phenotype": name,
               "pair": ("planted" if reported == planted_pair else ",".join(sorted(reported))) if reported else "-",
               "pair z": pair_z, "planted found": f"{len(found)}/{len(causal)}", "train_s": f"{seconds[(seed, name)]:.0f}",
               "_pair_ok": reported == planted_pair, "_found": len(found) / len(causal)}
        # two views: the CV folds (mean over folds, limits on the non-test rows) and the held-out test
        # set (the final model, trained as capsule-train's saved model is, limits on the test rows)
        tested = test_accuracy(model)
        views = {"cv": (cv_rows, {m: float(np.mean(f)) for m, f in fold_accuracy(model).items()}),
                 "test": (test_rows, tested)}
        for view, (where, acc) in views.items():
            if not len(where):
                continue
            if args.baselines == "lr":
                acc["logistic_regression"] = (
                    float(np.mean(lr_fold_accuracy(x, y, model / "split.tsv", seed))) if view == "cv"
                    else lr_accuracy(x, y, cv_rows, test_rows, seed))
            bayes, additive_limit = cohort.limits(name, where)
            row[f"{view}: Bayes"] = f"{bayes:.3f}"
            row[f"{view}: additive limit"] = f"{additive_limit:.3f}" if planted_pair else ""
            row.update({f"{view}: {METHODS.get(m, m)}": f"{a:.3f} ({way_to_limit(a, bayes):.0%})" for m, a in acc.items()})
            row[f"{view}: capsule - LR"] = f"{acc['capsule'] - acc['logistic_regression']:+.3f}"
            row[f"_{view}"] = {"share": way_to_limit(acc["capsule"], bayes), "lr": acc["capsule"] - acc["logistic_regression"],
                               "above": acc["capsule"] > additive_limit, "capsule": acc["capsule"],
                               "bayes": bayes, "limit": additive_limit}
        rows.append(row)
    interacting = [r for r in rows if "-none-" not in r["phenotype"]]
    additive = [r for r in rows if "-none-" in r["phenotype"]]
    for view in ("cv", "test"):
        methods = [f"{view}: {METHODS.get(m, m)}" for m in ("capsule", *BASELINES, "lr_network_inputs")
                   if any(f"{view}: {METHODS.get(m, m)}" in r for r in rows)]
        cols = ["seed", "phenotype", f"{view}: Bayes", f"{view}: additive limit", *methods, f"{view}: capsule - LR"]
        print(f"{'CV accuracy (mean over the folds)' if view == 'cv' else 'test-set accuracy (final model)'}: share of "
              "the way from chance to the Bayes limit in brackets")
        print(table([{c: r.get(c, "") for c in cols} for r in rows], cols))
        got = [r[f"_{view}"] for r in rows]
        print(f"{view}: worst share of the way {min(g['share'] for g in got):.0%}; capsule - LR at least "
              f"{min(g['lr'] for g in got):+.3f}; above the additive-only limit in "
              f"{sum(r[f'_{view}']['above'] for r in interacting)}/{len(interacting)} interacting cohorts")
        print(f"{view} " + per_scenario([(r["phenotype"], r[f"_{view}"]) for r in rows if f"_{view}" in r]) + "\n")
    cols = ["seed", "phenotype", "pair", "pair z", "planted found", "train_s"]
    print(table([{c: r[c] for c in cols} for r in rows], cols))
    print(f"planted pair reported in {sum(r['_pair_ok'] for r in interacting)}/{len(interacting)} interacting cohorts, "
          f"a pair in {sum(r['pair'] != '-' for r in additive)}/{len(additive)} additive ones; planted genes among the "
          f"decisive genes or the pair: >= 5 of 6 (all 4 of 4 additive) in "
          f"{sum(r['_found'] >= 5 / 6 - 1e-9 for r in rows)}/{len(rows)}")
    Path(f"{args.out}/result_n{args.samples}.json").write_text(json.dumps(
        {"rows": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], "samples": args.samples,
         "seeds": seeds, "train_args": args.train_args, "gene_pca_args": args.gene_pca_args,
         "planted": {seed: {a: [g.name for g in c.planted[a]] for a in archs} for seed, c in cohorts.items()}},
        indent=2) + "\n")


if __name__ == "__main__":
    main()
