"""The per-gene burden view: one more input column per gene, the copies of its low-frequency alleles.

A gene whose effect rides on its low-frequency alleles (a rare-variant burden) lies along its last
PCs, which follow its rarest SNPs; gene-pca's variance target keeps the PCs that hold most of the
gene's variance, and those may leave part of the burden out (on a planted family cohort, one burden
gene's score was carried by its Gene-PCs with R^2 0.70). With SNP dosages in the feature folder
(gene-pca --keep-dosages), capsule-train can give every gene one more column beside its PCs:

    burden_g = sum over the gene's SNPs j with 0 < MAF_j < maf of the copies of j's minor allele,

a missing call counted at its expected copies (2 MAF_j). The SNPs, their minor alleles and MAFs
are fixed once from the feature folder's own rows (the samples gene-pca wrote, whose genotypes fit
the PCs; no phenotype is read) and saved in config.json (`burden`), so that capsule-predict computes
the same column of a new cohort's dosages (gene-pca --apply --keep-dosages) with no refit. Only
genes with at least MIN_SNPS such SNPs get a column (one SNP's copies are already one of its
gene's directions). The columns are named `chrom:gene:burden`, so the gene's capsule reads them
with its PCs; they are appended after every PC column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.features import SNPS, Dosages, Features
from genointerp.io.inputs import read_lines
from genointerp.io.vcf import MISSING as MISSING_CALL

SUFFIX = "burden"
MIN_SNPS = 2
# capsule-train --burden-maf auto (its default): this MAF where the feature folder holds dosages
AUTO_BURDEN_MAF = 0.05


def burden_maf_value(text: str) -> float | None:
    """capsule-train --burden-maf's value: a number (0: no burden columns), or None for auto."""
    if text.strip().lower() == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither a number nor auto") from None
    if value != value:
        raise ValueError(f"{text!r} is not a number")
    return value


def snp_genes(folder: str | Path) -> list[list[str]]:
    """The genes column of a feature folder's snps.tsv: each SNP's genes (names without chrom)."""
    lines = read_lines(Path(folder) / SNPS)
    return [line.split("\t")[5].split(",") for line in lines[1:]]


def burden_plan(dosages: Dosages, genes_of_snp: list[list[str]], gene_names: list[str], maf: float) -> list[dict]:
    """Which SNPs make each gene's burden column: [{column, snps (ids), alt_minor (bool per SNP:
    the counted ALT is the minor allele), maf (per SNP)}] in `gene_names` order (chrom:gene, as
    gene_groups spells them), for the genes with at least MIN_SNPS SNPs of 0 < MAF < `maf`. MAFs from
    every row of `dosages` (n, S), missing calls left out."""
    d = dosages.matrix
    called = (d != MISSING_CALL).sum(0)
    copies = np.where(d == MISSING_CALL, 0, d).sum(0, dtype=np.int64)
    af = np.divide(copies, 2 * called, out=np.zeros(len(called)), where=called > 0)
    minor = np.minimum(af, 1 - af)
    rare = (minor > 0) & (minor < maf)
    by_gene: dict[tuple[str, str], list[int]] = {}
    for j, names in enumerate(genes_of_snp):
        if rare[j]:
            for name in names:
                by_gene.setdefault((dosages.chrom[j], name), []).append(j)
    plan = []
    for gene in gene_names:
        chrom, _, name = gene.partition(":")
        cols = by_gene.get((chrom, name), [])
        if len(cols) >= MIN_SNPS:
            plan.append({"column": f"{gene}:{SUFFIX}", "snps": [dosages.snps[j] for j in cols],
                         "alt_minor": [bool(af[j] <= 0.5) for j in cols],
                         "maf": [round(float(minor[j]), 8) for j in cols]})
    return plan


def burden_matrix(dosages: Dosages, plan: list[dict], source: str) -> np.ndarray:
    """float32 (n, len(plan)): each planned gene's minor-allele copies from dosages (n, S), a missing
    call at 2 x its MAF. A planned SNP absent from `dosages` is an InputError (`source` names them)."""
    where = {snp: j for j, snp in enumerate(dosages.snps)}
    missing = [snp for gene in plan for snp in gene["snps"] if snp not in where]
    if missing:
        raise InputError(f"{source}: {len(missing)} SNP(s) of the model's burden columns are not in its dosages, "
                         f"e.g. {missing[0]!r} (gene-pca --apply --keep-dosages on the training cohort's folder writes "
                         "them)")
    out = np.zeros((dosages.matrix.shape[0], len(plan)), dtype=np.float64)
    for k, gene in enumerate(plan):
        cols = [where[snp] for snp in gene["snps"]]
        d = dosages.matrix[:, cols].astype(np.float64)
        d = np.where(np.asarray(gene["alt_minor"]), d, 2 - d)
        out[:, k] = np.where(dosages.matrix[:, cols] == MISSING_CALL, 2 * np.asarray(gene["maf"]), d).sum(1)
    return out.astype(np.float32)


def with_burden(features: Features, dosages: Dosages, plan: list[dict], source: str) -> Features:
    """`features` with the plan's burden columns appended (rows of dosages = rows of features)."""
    if not plan:
        return features
    matrix = np.hstack([features.matrix, burden_matrix(dosages, plan, source)])
    return Features(features.samples, features.columns + [g["column"] for g in plan], matrix, features.info)
