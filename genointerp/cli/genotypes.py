"""Genotype panel: gene-pca (per-gene PCA of VCF genotypes)."""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli import app
from genointerp.cli.common import REPORTER, log
from genointerp.runtime import usable_threads

PANEL = "Genotypes (DiseaseCapsule)"


def _read_ids(path: str, what: str) -> list[str]:
    """Sample ids, one per line (first tab/space-separated word; blank and # lines skipped); gzip
    and `-` read transparently, a binary file refused with one line."""
    from genointerp.errors import InputError
    from genointerp.io.inputs import read_lines

    try:
        lines = read_lines(path)
    except InputError as exc:
        raise InputError(f"{exc} ({what})") from None
    ids = [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    if not ids:
        raise InputError(f"{path}: no sample ids ({what})")
    return ids


def one_stdin(*inputs: tuple[str, Optional[str]]) -> None:
    """A usage error when two inputs are `-`: stdin can be read only once."""
    names = [name for name, value in inputs if value == "-"]
    if len(names) > 1:
        raise typer.BadParameter(f"{names[0]} and {names[1]} are both - (stdin), which can be read only once",
                                 param_hint=names[1])


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
    threads: int = typer.Option(1, "-t", "--threads", min=1, help="Threads for the per-gene PCAs (parsing runs alongside)."),
    tsv: bool = typer.Option(True, "--tsv/--no-tsv", help="Also write features.tsv (at 10,000 samples x 100,000 PCs that is 10 GB and most of the run time; capsule-train reads features.npy)."),
    keep_dosages: bool = typer.Option(False, "--keep-dosages", help="Also write dosages.npy (int8 samples x SNPs, -1 missing) and snps.tsv: the SNPs behind the PCs, for capsule-train's PRS baseline. With --apply: the fit's SNPs, oriented as there. 1 byte per call: 45 MB at 3,000 samples x 15,000 SNPs."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output folder."),
) -> None:
    """Per-gene PCA of genotypes: the Gene-PC features of DiseaseCapsule (capsule-train input).

    Dosages are ALT-allele counts 0/1/2 from GT (phased or not; haploid calls count 0 or 2; at
    multi-allelic sites every ALT counts). SNPs in a gene (overlapping genes each count it) that pass
    --maf/--max-missing in the fit samples are centred on the fit-sample means (missing calls take
    the mean) and reduced to the gene's top principal components. The fitted transform is saved so
    that a new cohort can be projected with --apply.
    """
    from threadpoolctl import threadpool_limits

    from genointerp.genotypes.gene_pca import GenePcaRequest, run
    from genointerp.genotypes.pca import PcsRule
    from genointerp.io.atomic import AtomicOutputs
    from genointerp.io.features import read_phenotypes

    if apply is None and genes is None:
        raise typer.BadParameter("give a gene annotation (-g), or --apply a fitted transform", param_hint="--genes")
    if apply is not None:
        changed = [name for name, given in (("--genes", genes), ("--fit-samples", fit_samples),
                                            ("--nearest-gene", nearest_gene or None)) if given is not None]
        if changed:
            raise typer.BadParameter(f"{changed[0]} is fixed by the fitted transform", param_hint="--apply")
    if samples is not None and phenotypes is not None:
        raise typer.BadParameter("give --samples or --phenotypes, not both", param_hint="--samples")
    one_stdin(("VCF", vcf), ("--genes", genes), ("--samples", samples), ("--phenotypes", phenotypes),
              ("--fit-samples", fit_samples))
    try:
        rule = PcsRule.parse(pcs_rule)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--pcs-rule") from None
    selected = None
    if samples is not None:
        selected = _read_ids(samples, "--samples")
    elif phenotypes is not None:
        pheno = read_phenotypes(phenotypes, phenotype_column)
        selected = pheno.samples
        if pheno.dropped:
            log(f"{pheno.dropped} sample(s) without a {pheno.column!r} value left out")
    req = GenePcaRequest(vcf=vcf, genes=genes, apply=apply, samples=selected,
                         fit_samples=_read_ids(fit_samples, "--fit-samples") if fit_samples else None,
                         maf=maf, max_missing=max_missing, nearest=nearest_gene, rule=rule,
                         threads=usable_threads(threads), table=tsv, dosages=keep_dosages)
    # parallelism is over genes: one BLAS thread per fit keeps the cores for them (and results stable)
    with threadpool_limits(1), AtomicOutputs(force, inputs=[vcf, genes, apply, samples, phenotypes, fit_samples]) as outputs:
        folder = outputs.folder(output)
        summary = run(req, folder, REPORTER)
    n_features = summary.get("genes_with_pcs")
    log(f"wrote {output}/" + (f" ({n_features} genes with PCs)" if n_features is not None else ""))
