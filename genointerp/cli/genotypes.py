"""Genotype panel: gene-pca (per-gene PCA of VCF genotypes)."""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, log
from genointerp.cli.options import force_option, threads_option

PANEL = "Genotypes (DiseaseCapsule)"


@app.command(
    "gene-pca",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp gene-pca cohort.vcf.gz -g genes.bed --fit-samples train.txt -o gene_pcs\n\n"
        "  genointerp gene-pca new_cohort.vcf.gz --apply gene_pcs -o new_gene_pcs\n\n"
        "  genointerp gene-pca cohort.bcf -g gencode.gtf.gz --phenotypes pheno.tsv --nearest-gene -t 2 -o gene_pcs"
    ),
)
def gene_pca(
    vcf: str = typer.Argument(..., metavar="VCF", help="VCF (plain, gzip or bgzip; - or a pipe too) or BCF file with GT calls, sorted by position."),
    output: str = typer.Option(..., "-o", "--output", help="Output folder: features.npy/.json/.tsv, genes.tsv, transform.json/.npz (and dosages.npy, snps.tsv with --keep-dosages)."),
    genes: Optional[str] = typer.Option(None, "-g", "--genes", help="Gene annotation: BED (chrom start end \\[name]) or GTF 'gene' records (gene_name). Not with --apply."),
    apply: Optional[str] = typer.Option(None, "--apply", help="Project onto a transform fitted earlier (a gene-pca output folder) instead of fitting."),
    samples: Optional[str] = typer.Option(None, "--samples", help="Only these samples (one id per line)."),
    phenotypes: Optional[str] = typer.Option(None, "--phenotypes", help="Only the samples with a value in this phenotype TSV (sample/IID column + phenotype)."),
    phenotype_column: Optional[str] = typer.Option(None, "--phenotype-column", help="Phenotype column of --phenotypes (default: the first)."),
    fit_samples: Optional[str] = typer.Option(None, "--fit-samples", help="Fit means, filters and PCs on these samples only (one id per line; default: all selected). Every selected sample is projected."),
    maf: float = typer.Option(0.01, "--maf", min=0, max=0.5, help="Fit only: drop SNPs whose minor allele frequency in the fit samples is below this (monomorphic SNPs are always dropped)."),
    max_missing: float = typer.Option(0.1, "--max-missing", min=0, max=1, help="Fit only: drop SNPs missing in more than this fraction of the fit samples."),
    nearest_gene: bool = typer.Option(False, "--nearest-gene", help="Assign SNPs outside every gene to the nearest gene (default: drop them)."),
    pcs_rule: str = typer.Option("4:1,20:4,inf:8", "--pcs-rule", help="Fit only: PCs kept per gene as MAX_SNPS:N_PCS steps: the default keeps 1 PC for 1-4 SNPs, 4 for 5-20, 8 for more (never above the rank)."),
    threads: int = threads_option("Threads for the per-gene PCAs (parsing runs alongside)."),
    tsv: bool = typer.Option(True, "--tsv/--no-tsv", help="Also write features.tsv (text: about 10 bytes per value, 10 GB at 10,000 samples x 100,000 PCs; capsule-train reads features.npy)."),
    keep_dosages: bool = typer.Option(False, "--keep-dosages", help="Also write dosages.npy (int8 samples x SNPs, -1 missing) and snps.tsv: the SNPs behind the PCs, for capsule-train's PRS baseline. With --apply: the fit's SNPs, oriented as there. 1 byte per call: 45 MB at 3,000 samples x 15,000 SNPs."),
    force: bool = force_option("an existing output folder"),
) -> None:
    """Per-gene PCA of genotypes: the Gene-PC features of DiseaseCapsule (capsule-train input).

    Dosages are ALT-allele counts 0/1/2 from GT (phased or not; haploid calls count 0 or 2; at
    multi-allelic sites every ALT counts). SNPs in a gene (overlapping genes each count it) that pass
    --maf/--max-missing in the fit samples are centred on the fit-sample means (missing calls take
    the mean) and reduced to the gene's top principal components. The fitted transform is saved so
    that a new cohort can be projected with --apply.
    """
    from genointerp.genotypes.gene_pca import GenePcaRequest, run
    from genointerp.job import execute

    req = GenePcaRequest(vcf=vcf, output=output, genes=genes, apply=apply, samples=samples, phenotypes=phenotypes,
                         phenotype_column=phenotype_column, fit_samples=fit_samples, maf=maf, max_missing=max_missing,
                         nearest_gene=nearest_gene, pcs_rule=pcs_rule, threads=threads, tsv=tsv,
                         keep_dosages=keep_dosages)
    summary = execute(run, req, force, REPORTER)
    n_features = summary.get("genes_with_pcs")
    log(f"wrote {output}/" + (f" ({n_features} genes with PCs)" if n_features is not None else ""))
