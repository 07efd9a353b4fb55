"""Genotype panel: gene-pca (per-gene PCA of VCF genotypes)."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command

PANEL = "Genotypes (DiseaseCapsule)"


@command(
    "gene-pca",
    "genointerp.genotypes.gene_pca:GenePcaRequest",
    job="genointerp.genotypes.gene_pca:run",
    force="an existing output folder",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp gene-pca cohort.vcf.gz -g genes.bed --fit-samples train.txt -o gene_pcs\n\n"
        "  genointerp gene-pca new_cohort.vcf.gz --apply gene_pcs -o new_gene_pcs\n\n"
        "  genointerp gene-pca cohort.bcf -g gencode.gtf.gz --phenotypes pheno.tsv --nearest-gene -t 2 -o gene_pcs"
    ),
)
def gene_pca(req, result: dict) -> None:
    """Per-gene PCA of genotypes: the Gene-PC features of DiseaseCapsule (capsule-train input).

    Dosages are ALT-allele counts 0/1/2 from GT (phased or not; haploid calls count 0 or 2; at
    multi-allelic sites every ALT counts). SNPs in a gene (overlapping genes each count it) that pass
    --maf/--max-missing in the fit samples are centred on the fit-sample means (missing calls take
    the mean) and reduced to the gene's top principal components. The fitted transform is saved so
    that a new cohort can be projected with --apply.
    """

    n_features = result.get("genes_with_pcs")
    log(f"wrote {req.output}/" + (f" ({n_features} genes with PCs)" if n_features is not None else ""))
