"""The gene-pca job: VCF + genes in, per-gene PCA features + gene table + fitted transform out.

Streams the VCF once, gene by gene: a gene's dosages (int8, samples x its SNPs) are buffered until
the stream has passed every position that could still belong to it, then handed to a thread pool
for the PCA (numpy releases the GIL in the matrix product and eigensolver) while parsing goes on.
Memory: the buffers of the genes open at one position plus the pending fits (at most 2 x threads),
plus the output matrix. Results are put back into gene order, so threads never change the output.
With `dosages` the int8 dosages of the SNPs behind the PCs are kept too (dosages.npy + snps.tsv),
through a scratch file rather than memory (io.features.DosageWriter).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from genointerp import __version__
from genointerp.errors import InputError, UsageError
from genointerp.genotypes.assign import GeneAssigner
from genointerp.genotypes.pca import DEFAULT_RULE, GeneFit, PcsRule, Transform, fit_gene, project
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.features import DOSAGES, DosageWriter, Features, read_phenotypes, write_features
from genointerp.io.ids import read_ids
from genointerp import options
from genointerp.job import one_stdin
from genointerp.options import arg, opt
from genointerp.io.chroms import chrom_alias
from genointerp.io.genes import Gene, read_genes
from genointerp.io.vcf import MISSING, Site, VcfGenotypes
from genointerp.report import Reporter
from genointerp.runtime import usable_threads

GENES_TABLE = "genes.tsv"


@dataclass
class GenePcaRequest:
    """gene-pca: the fields are its options (files as paths, `-` for stdin)."""

    vcf: str = arg(
        metavar="VCF",
        help='VCF (plain, gzip or bgzip; - or a pipe too) or BCF file with GT calls, sorted by position.')
    output: str = opt(
        ..., "-o", "--output",
        help=('Output folder: features.npy/.json/.tsv, genes.tsv, transform.json/.npz (and dosages.npy, snps.tsv '
              'with --keep-dosages).'))
    genes: str | None = opt(
        None, "-g", "--genes",
        help="Gene annotation: BED (chrom start end \\[name]) or GTF 'gene' records (gene_name). Not with --apply.")
    apply: str | None = opt(
        None, "--apply",
        help='Project onto a transform fitted earlier (a gene-pca output folder) instead of fitting.')
    samples: str | None = opt(None, "--samples", help='Only these samples (one id per line).')
    phenotypes: str | None = opt(
        None, "-p", "--phenotypes",
        help='Only the samples with a value in this phenotype TSV (sample/IID column + phenotype).')
    phenotype_column: str | None = opt(
        None, "--phenotype-column",
        help='Phenotype column of --phenotypes (default: the first).')
    fit_samples: str | None = opt(
        None, "--fit-samples",
        help=('Fit means, filters and PCs on these samples only (one id per line; default: all selected). Every '
              'selected sample is projected.'))
    maf: float = opt(
        0.01, "--maf", min=0, max=0.5,
        help=('Fit only: drop SNPs whose minor allele frequency in the fit samples is below this (monomorphic SNPs '
              'are always dropped).'))
    max_missing: float = opt(
        0.1, "--max-missing", min=0, max=1,
        help='Fit only: drop SNPs missing in more than this fraction of the fit samples.')
    nearest_gene: bool = opt(
        False, "--nearest-gene",
        help='Assign SNPs outside every gene to the nearest gene (default: drop them).')
    pcs_rule: str = opt(
        DEFAULT_RULE, "--pcs-rule",
        help=('Fit only: PCs kept per gene as MAX_SNPS:N_PCS steps: the default keeps 1 PC for 1-4 SNPs, 4 for '
              '5-20, 8 for more (never above the rank). A var:F term keeps the fewest PCs that explain the share F of '
              "the gene's variance, the steps a cap (inf:32,var:0.99: for genes acting through many or rare SNPs)."))
    threads: int = options.threads('Threads for the per-gene PCAs (parsing runs alongside).')
    tsv: bool = opt(
        True, "--tsv/--no-tsv",
        help=('Also write features.tsv (text: about 10 bytes per value, 10 GB at 10,000 samples x 100,000 PCs; '
              'capsule-train reads features.npy).'))
    keep_dosages: bool | None = opt(
        None, "--keep-dosages/--no-keep-dosages",
        help=('Also write dosages.npy (int8 samples x SNPs, -1 missing) and snps.tsv: the SNPs behind the PCs, for '
              "capsule-train's PRS baseline and burden columns. With --apply: the fit's SNPs, oriented as there. 1 "
              'byte per call: 45 MB at 3,000 samples x 15,000 SNPs \\[default: off when fitting; with --apply, on '
              'where the fitted folder holds dosages, as a model trained on them needs them].'))

    def check(self) -> None:
        if self.apply is None and self.genes is None:
            raise UsageError("--genes: give a gene annotation (-g), or --apply a fitted transform")
        if self.apply is not None:
            fixed = [name for name, given in (("--genes", self.genes), ("--fit-samples", self.fit_samples),
                                              ("--nearest-gene", self.nearest_gene or None)) if given is not None]
            if fixed:
                raise UsageError(f"--apply: {fixed[0]} is fixed by the fitted transform")
        if self.samples is not None and self.phenotypes is not None:
            raise UsageError("--samples: give --samples or --phenotypes, not both")
        one_stdin(("VCF", self.vcf), ("--genes", self.genes), ("--samples", self.samples),
                  ("--phenotypes", self.phenotypes), ("--fit-samples", self.fit_samples))
        self.rule()

    def dosages(self) -> bool:
        """Whether dosages.npy is written: as --keep-dosages says, else only with --apply of a folder
        fitted with them, so that a new cohort projected for capsule-predict carries the SNP dosages
        a model's burden columns and PRS read (the user need not remember how the fit was run)."""
        if self.keep_dosages is not None:
            return self.keep_dosages
        return self.apply is not None and (Path(self.apply) / DOSAGES).is_file()

    def rule(self) -> PcsRule:
        try:
            return PcsRule.parse(self.pcs_rule)
        except ValueError as exc:
            raise UsageError(f"--pcs-rule: {exc}") from None

    def inputs(self) -> list[str | None]:
        return [self.vcf, self.genes, self.apply, self.samples, self.phenotypes, self.fit_samples]


@dataclass
class _Gene:
    """A gene with SNPs in the VCF: its buffered sites, then its fit."""

    gene: Gene
    chrom: str  # VCF spelling
    order: tuple[int, int]  # (VCF chromosome rank, annotation rank): output order
    n_sites: int = 0
    keys: list = field(default_factory=list)  # (pos, ref, alt) of kept SNPs
    rows: list = field(default_factory=list)  # int8 (n,) dosages of kept SNPs
    fit: GeneFit | Future | None = None


class _Aliases:
    """VCF chromosome -> annotation chromosome (chr21 <-> 21 with one warning), or None."""

    def __init__(self, known, warn: Callable[[str], None], what: str) -> None:
        self.known, self.warn, self.what, self.cache = known, warn, what, {}

    def __call__(self, chrom: str) -> str | None:
        if chrom not in self.cache:
            alias = chrom_alias(chrom, self.known)
            if alias is not None and alias != chrom:
                self.warn(f"VCF chromosome {chrom} is {alias} in {self.what}; matched them")
            self.cache[chrom] = alias
        return self.cache[chrom]


def _check_overlap(vcf: VcfGenotypes, known, what: str) -> None:
    """Fail before streaming when the VCF header's contigs cannot meet the annotation's."""
    if vcf.contigs and not any(chrom_alias(c, known) for c in vcf.contigs):
        raise InputError(f"no chromosome of {vcf.path} ({', '.join(vcf.contigs[:5])}...) is in {what} "
                         f"({', '.join(sorted(known)[:5])}...)")


def _fit_rows(vcf: VcfGenotypes, fit_samples: list[str] | None) -> np.ndarray:
    if fit_samples is None:
        if len(vcf.samples) < 2:
            raise InputError(f"PCA needs at least 2 fit samples; {len(vcf.samples)} of {vcf.path} selected")
        return np.arange(len(vcf.samples), dtype=np.int64)
    where = {s: i for i, s in enumerate(vcf.samples)}
    missing = [s for s in fit_samples if s not in where]
    if missing:
        raise InputError(f"{len(missing)} fit sample(s) not among the selected VCF samples, e.g. {missing[0]!r}")
    rows = np.array(sorted({where[s] for s in fit_samples}), dtype=np.int64)
    if len(rows) < 2:
        raise InputError("PCA needs at least 2 fit samples")
    return rows


def run(req: GenePcaRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write features.*, genes.tsv and (fit mode) transform.* into the output folder; return the summary."""
    selected = _selected_samples(req, report.log)
    fit_ids = read_ids(req.fit_samples, "--fit-samples") if req.fit_samples else None
    folder = outputs.folder(req.output)
    # parallelism is over genes: one BLAS thread per fit keeps the cores for them (and results stable)
    with threadpool_limits(1), VcfGenotypes(req.vcf, selected) as vcf:  # a pipe stays open from header to records
        if req.apply:
            summary = _apply(req, vcf, folder, report.log, report.warn)
        else:
            summary = _fit(req, vcf, folder, report.log, report.warn, fit_ids, req.rule())
    if vcf.duplicates:
        report.warn(f"{req.vcf}: {vcf.duplicates:,} exact duplicate record(s) dropped (same CHROM, POS, REF, ALT and "
                    "genotypes as an earlier record, which is kept)")
    return summary


def _selected_samples(req: GenePcaRequest, log) -> list[str] | None:
    if req.samples is not None:
        return read_ids(req.samples, "--samples")
    if req.phenotypes is not None:
        pheno = read_phenotypes(req.phenotypes, req.phenotype_column)
        if pheno.dropped:
            log(f"{pheno.dropped} sample(s) without a {pheno.column!r} value left out")
        return pheno.samples
    return None


def _fit(req: GenePcaRequest, vcf: VcfGenotypes, folder: Path, log, warn, fit_ids: list[str] | None,
         rule: PcsRule) -> dict:
    """Fit mode: per-gene PCA on the fit samples, written with the transform; returns the counts."""
    fit_rows = _fit_rows(vcf, fit_ids)
    annotation = read_genes(req.genes)
    by_chrom: dict[str, list[Gene]] = {}
    for g in annotation:
        by_chrom.setdefault(g.chrom, []).append(g)
    aliases = _Aliases(by_chrom, warn, req.genes)
    _check_overlap(vcf, by_chrom, req.genes)
    log(f"{len(vcf.samples)} samples ({len(fit_rows)} fit), {len(annotation)} genes; PCs per gene: {rule}")

    writer = DosageWriter(folder, len(vcf.samples)) if req.dosages() else None
    scratch_row: dict[tuple, int] = {}  # (chrom, pos, ref, alt) -> scratch row of its dosages

    def keep(site: Site) -> None:  # a duplicated record ends as its last copy, as in --apply
        scratch_row[(site.chrom, site.pos, site.ref, site.alt)] = writer.append(site.dosage)

    with _Fitter(fit_rows, rule, usable_threads(req.threads)) as fitter:
        counts, vcf_chroms = _gene_sites(req, vcf, fit_rows, by_chrom, aliases, fitter.close,
                                         keep if writer is not None else None)
        fitter.wait()
    done = fitter.done
    if not done:
        raise InputError(f"no SNP of {req.vcf} (chromosomes {', '.join(vcf_chroms[:5])}) falls in "
                         f"{'or near ' if req.nearest_gene else ''}a gene of {req.genes}")
    done.sort(key=lambda item: item.order)
    fitted = [item for item in done if item.fit is not None and item.fit.components.shape[1] > 0]
    if not fitted:
        raise InputError(f"no gene has a SNP left after the filters (MAF >= {req.maf}, missing <= {req.max_missing}); "
                         f"{counts['maf']} SNPs failed MAF, {counts['missing']} missingness")
    log(f"{counts['sites']} sites: {counts['kept']} kept in genes, {counts['outside']} outside genes, "
        f"{counts['other_chrom']} on chromosomes without genes, {counts['maf']} below MAF, "
        f"{counts['missing']} too often missing; {counts['imputed']} missing calls imputed with fit-sample means")

    genes_meta = _gene_table(done)
    info = {"program": f"genointerp {__version__} gene-pca", "vcf": req.vcf, "genes": req.genes,
            "maf": req.maf, "max_missing": req.max_missing, "nearest_gene": req.nearest_gene, "pcs_rule": str(rule),
            "n_fit_samples": int(len(fit_rows)), "fit_samples": [vcf.samples[i] for i in fit_rows]}
    transform = _stack_transform(fitted, genes_meta, info)
    transform.save(folder)
    scores = [item.fit.scores for item in fitted]
    summary = {**counts, "genes_with_sites": len(done), "genes_with_pcs": len(fitted)}
    if writer is not None:
        summary["dosage_snps"] = _finish_dosages(writer, transform, log, scratch_row)
    _write(folder, vcf.samples, fitted_columns(transform.genes), scores, genes_meta,
           {**info, **summary, "transform_sha256": transform.fingerprint()}, req.tsv)
    return summary


class _Fitter:
    """Fits each gene the stream closes: inline, or on a thread pool with at most 2 x threads fits
    pending so that the buffered dosage matrices stay bounded. `done` holds every closed gene (with
    or without kept SNPs) in closing order; after `wait()` each fit is a GeneFit (or None: no SNP kept).
    As a context manager it shuts the pool down, cancelling what is queued when the stream fails."""

    def __init__(self, fit_rows: np.ndarray, rule: PcsRule, threads: int) -> None:
        self.fit_rows, self.rule, self.threads = fit_rows, rule, threads
        self.done: list[_Gene] = []
        self.pending: deque[_Gene] = deque()
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def __enter__(self) -> "_Fitter":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def close(self, item: _Gene) -> None:
        """Stack the gene's buffered rows into int8 (n, m) and fit (or queue) its PCA."""
        if item.keys:
            x = np.stack(item.rows, axis=1)  # (n, m) int8
            item.rows = []
            if self.pool is None:
                item.fit = fit_gene(x, self.fit_rows, self.rule)
            else:
                item.fit = self.pool.submit(fit_gene, x, self.fit_rows, self.rule)
                self.pending.append(item)
                while len(self.pending) > 2 * self.threads:  # bound the buffered matrices
                    oldest = self.pending.popleft()
                    oldest.fit = oldest.fit.result()
        self.done.append(item)

    def wait(self) -> None:
        """Replace every pending Future by its GeneFit."""
        for item in self.pending:
            item.fit = item.fit.result()


def _gene_sites(req: GenePcaRequest, vcf: VcfGenotypes, fit_rows: np.ndarray, by_chrom: dict[str, list[Gene]],
                aliases: _Aliases, close: Callable[[_Gene], None],
                keep: Callable[[Site], None] | None = None) -> tuple[dict, list[str]]:
    """Stream the VCF once, buffering each kept SNP's int8 (n,) dosages in the genes it falls in (or
    near, with req.nearest_gene) and handing every gene to `close` once the stream is past its reach, in
    the order genes close; `keep` also gets every kept site. Returns (site counts by fate, the VCF's
    chromosomes in stream order)."""
    subset = len(fit_rows) < len(vcf.samples)
    counts = {"sites": 0, "outside": 0, "other_chrom": 0, "maf": 0, "missing": 0, "kept": 0, "imputed": 0}
    chrom_rank: dict[str, int] = {}
    assigner: GeneAssigner | None = None
    open_genes: dict[int, _Gene] = {}
    for site in vcf:
        counts["sites"] += 1
        if site.chrom not in chrom_rank:
            for i in sorted(open_genes):
                close(open_genes.pop(i))
            chrom_rank[site.chrom] = len(chrom_rank)
            alias = aliases(site.chrom)
            assigner = GeneAssigner(by_chrom[alias], req.nearest_gene) if alias else None
        if assigner is None:
            counts["other_chrom"] += 1
            continue
        p = site.pos - 1
        for i in [i for i in open_genes if assigner.reach[i] <= p]:
            close(open_genes.pop(i))
        targets = assigner.assign(p)
        if not targets:
            counts["outside"] += 1
            continue
        for i in targets:
            if i not in open_genes:
                open_genes[i] = _Gene(assigner.genes[i], site.chrom, (chrom_rank[site.chrom], i))
            open_genes[i].n_sites += 1
        fate, imputed = _site_fate(site.dosage, fit_rows, subset, req.maf, req.max_missing)
        counts[fate] += 1
        if fate != "kept":
            continue
        counts["imputed"] += imputed
        if keep is not None:
            keep(site)
        for i in targets:
            open_genes[i].keys.append((site.pos, site.ref, site.alt))
            open_genes[i].rows.append(site.dosage)
    for i in sorted(open_genes):
        close(open_genes.pop(i))
    return counts, list(chrom_rank)


def _site_fate(dosage: np.ndarray, fit_rows: np.ndarray, subset: bool, min_maf: float,
               max_missing: float) -> tuple[str, int]:
    """dosage: int8 (n,) over the selected samples (MISSING for no call); fit_rows: int64 (n_fit,).
    Returns ("missing" | "maf" | "kept", calls of all n samples to impute: nonzero only when kept)."""
    # one pass: how many fit samples are missing / 0 / 1 / 2
    tally = np.bincount(dosage[fit_rows] + 1 if subset else dosage + 1, minlength=4)
    n_called = int(tally[1:].sum())
    if n_called == 0 or 1 - n_called / len(fit_rows) > max_missing:
        return "missing", 0
    af = (tally[2] + 2 * tally[3]) / (2 * n_called)
    maf = min(af, 1 - af)
    if maf < min_maf or maf == 0:
        return "maf", 0
    return "kept", int(np.count_nonzero(dosage == MISSING)) if subset else int(tally[0])


def _gene_table(done: list[_Gene]) -> list[dict]:
    """One genes.tsv / transform record per gene with sites, in output order; `first` is the gene's
    first row in the transform's stacked SNP arrays (genes without PCs take no rows)."""
    genes_meta, first = [], 0
    for item in done:
        fit = item.fit
        k = fit.components.shape[1] if fit is not None else 0
        m = len(item.keys)
        genes_meta.append({"name": item.gene.name, "chrom": item.chrom, "start": item.gene.start, "end": item.gene.end,
                           "n_sites": item.n_sites, "n_snps": m, "n_pcs": k,
                           "explained": [float(v) for v in fit.explained] if k else [], "first": first})
        first += m if k else 0
    return genes_meta


def _stack_transform(fitted: list[_Gene], genes_meta: list[dict], info: dict) -> Transform:
    """The fitted genes' SNPs stacked in gene order: chrom/ref/alt str (R,), pos int64 (R,), means
    float64 (R,) and components float64 (R, k_max), each gene's (m, k) block zero-padded on the right."""
    kmax = max(item.fit.components.shape[1] for item in fitted)
    keys = [(item.chrom, *key) for item in fitted for key in item.keys]
    components = np.zeros((len(keys), kmax))
    row = 0
    for item in fitted:
        c = item.fit.components
        components[row: row + len(c), : c.shape[1]] = c
        row += len(c)
    return Transform([g for g in genes_meta if g["n_pcs"]], np.array([k[0] for k in keys]),
                     np.array([k[1] for k in keys], dtype=np.int64), np.array([k[2] for k in keys]),
                     np.array([k[3] for k in keys]), np.concatenate([item.fit.means for item in fitted]),
                     components, info)


def _finish_dosages(writer: DosageWriter, t: Transform, log, scratch_row: dict[tuple, int] | None = None) -> int:
    """dosages.npy + snps.tsv of the transform's S distinct SNPs, in the fitting VCF's order; the
    dosages of SNP (chrom, pos, ref, alt) are in scratch row scratch_row[SNP] (None: the scratch rows
    are already in that order). Returns S."""
    first, column = t.snp_columns()
    order = np.arange(len(first))
    if scratch_row is not None:
        order = np.array([scratch_row[(t.chrom[r], int(t.pos[r]), t.ref[r], t.alt[r])] for r in first], dtype=np.int64)
    genes: list[list[str]] = [[] for _ in first]
    for r, gi in enumerate(t.gene_of_row().tolist()):
        if t.genes[gi]["name"] not in genes[column[r]]:
            genes[column[r]].append(t.genes[gi]["name"])
    writer.finish(order, [(t.chrom[r], int(t.pos[r]), t.ref[r], t.alt[r], ",".join(g)) for r, g in zip(first, genes)])
    log(f"dosages.npy: {len(first)} SNPs x {writer.n} samples (int8, missing calls -1); SNPs in snps.tsv")
    return len(first)


def fitted_columns(genes: list[dict]) -> list[str]:
    return [f"{g['chrom']}:{g['name']}:pc{j + 1}" for g in genes for j in range(g["n_pcs"])]


def _apply(req: GenePcaRequest, vcf: VcfGenotypes, folder: Path, log, warn) -> dict:
    """Apply mode: project every sample on a saved transform's axes; returns the counts."""
    t = Transform.load(req.apply)
    known = {str(c) for c in t.chrom}
    what = f"the transform {req.apply}"
    aliases = _Aliases(known, warn, what)
    _check_overlap(vcf, known, what)
    n = len(vcf.samples)
    counts = {"sites": 0, "matched": 0, "flipped": 0, "allele_mismatch": 0, "imputed_calls": 0}
    writer, column = None, None
    if req.dosages():  # the fit's SNP columns, in its order; an absent SNP stays missing (-1) for everyone
        first, column = t.snp_columns()
        writer = DosageWriter(folder, n, len(first))
    scores, found = _project_sites(t, vcf, aliases, counts, writer, column)
    absent = _distinct_snps(t, ~found)
    if absent == _distinct_snps(t, np.ones(len(found), dtype=bool)):
        raise InputError(f"no SNP of the transform {req.apply} is in {req.vcf} (matched by chrom/pos/REF/ALT)")
    if absent:
        warn(f"{absent} SNP(s) of the transform are not in {req.vcf} (or have other alleles): "
             f"imputed with the fit-sample means for all {n} samples")
    if counts["flipped"]:
        warn(f"{counts['flipped']} SNP(s) have REF/ALT swapped relative to the transform: dosages flipped (2 - d)")
    for gi, g in enumerate(t.genes):
        if gi not in scores:  # no SNP of this gene in the VCF: every sample sits at the mean
            scores[gi] = np.zeros((n, g["n_pcs"]), dtype=np.float32)
    counts["imputed_calls"] += n * absent
    counts["absent_snps"] = absent
    log(f"{counts['sites']} sites: {counts['matched']} matched the transform's SNPs ({counts['flipped']} flipped), "
        f"{absent} absent; {counts['imputed_calls']} calls imputed with fit-sample means")
    if writer is not None:
        counts["dosage_snps"] = _finish_dosages(writer, t, log)
    info = {"program": f"genointerp {__version__} gene-pca --apply", "vcf": req.vcf, "applied": req.apply,
            "fit_vcf": t.info.get("vcf"), "pcs_rule": t.info.get("pcs_rule"), "transform_sha256": t.fingerprint()}
    _write(folder, vcf.samples, fitted_columns(t.genes), [scores[i] for i in range(len(t.genes))], t.genes,
           {**info, **counts}, req.tsv)
    return counts


def _project_sites(t: Transform, vcf: VcfGenotypes, aliases: _Aliases, counts: dict,
                   writer: DosageWriter | None = None, column: np.ndarray | None = None) -> tuple[dict, np.ndarray]:
    """Stream the VCF once, filling each transform gene's int8 (n, m) dosage matrix (MISSING where its
    SNP is absent) and projecting it once the stream is past the gene's last SNP; with a `writer`,
    each matched row r's int8 (n,) dosages, oriented as the transform's, also go to its scratch row
    column[r] (int64 (R,), Transform.snp_columns). Adds to `counts`
    (sites, matched, flipped, allele_mismatch, imputed_calls). Returns (float32 (n, n_pcs) scores by
    gene index, for genes with a matched SNP; bool (R,) which transform rows were matched)."""
    n = len(vcf.samples)
    gene_of_row, lookup, last_pos = _row_index(t)
    buffers: dict[int, np.ndarray] = {}
    scores: dict[int, np.ndarray] = {}
    found = np.zeros(len(t.pos), dtype=bool)

    def finish(gi: int) -> None:
        rows, k = t.gene_rows(gi), t.genes[gi]["n_pcs"]
        x = buffers.pop(gi)
        scores[gi] = project(x, t.means[rows], t.components[rows, :k])

    current = None
    for site in vcf:
        counts["sites"] += 1
        tchrom = aliases(site.chrom)
        if site.chrom != current:
            for gi in sorted(buffers):
                finish(gi)
            current = site.chrom
        for gi in [gi for gi in buffers if last_pos[gi] < site.pos]:
            finish(gi)
        for r in lookup.get((tchrom, site.pos), ()) if tchrom else ():
            d, flipped = _oriented_dosage(site, t, r)
            if d is None:
                counts["allele_mismatch"] += 1
                continue
            counts["flipped"] += flipped
            gi = int(gene_of_row[r])
            if gi not in buffers:
                buffers[gi] = np.full((n, t.genes[gi]["n_snps"]), MISSING, dtype=np.int8)
            buffers[gi][:, r - t.genes[gi]["first"]] = d
            if writer is not None:
                writer.put(int(column[r]), d)
            found[r] = True
            counts["matched"] += 1
            counts["imputed_calls"] += int((d == MISSING).sum())
    for gi in sorted(buffers):
        finish(gi)
    return scores, found


def _row_index(t: Transform) -> tuple[np.ndarray, dict[tuple[str, int], list[int]], dict[int, int]]:
    """For the transform's R stacked SNP rows: (gene index int64 (R,) of each row, (chrom, pos) -> its
    rows, gene index -> the gene's last SNP position, 1-based as in the VCF)."""
    gene_of_row = t.gene_of_row()
    lookup: dict[tuple[str, int], list[int]] = {}
    for r, (c, p) in enumerate(zip(t.chrom.tolist(), t.pos.tolist())):
        lookup.setdefault((c, p), []).append(r)
    last_pos = {}
    for r, (gi, p) in enumerate(zip(gene_of_row.tolist(), t.pos.tolist())):
        last_pos[gi] = max(last_pos.get(gi, 0), p)
    return gene_of_row, lookup, last_pos


def _oriented_dosage(site, t: Transform, r: int) -> tuple[np.ndarray | None, bool]:
    """(the site's int8 (n,) dosages of transform row r's ALT allele, whether REF/ALT were swapped):
    flipped to 2 - d (MISSING kept) when swapped, (None, False) when the alleles differ otherwise."""
    d = site.dosage
    if (site.ref, site.alt) != (t.ref[r], t.alt[r]):
        if (site.ref, site.alt) == (t.alt[r], t.ref[r]):
            return np.where(d == MISSING, MISSING, 2 - d).astype(np.int8), True
        return None, False
    return d, False


def _distinct_snps(t: Transform, mask: np.ndarray) -> int:
    """SNPs (chrom, pos, ref, alt) among the gene-SNP rows selected by `mask`."""
    return len({(t.chrom[r], int(t.pos[r]), t.ref[r], t.alt[r]) for r in np.flatnonzero(mask)})


def _write(folder: Path, samples: list[str], columns: list[str], scores: list[np.ndarray], genes: list[dict],
           info: dict, table: bool) -> None:
    """scores: float32 (n, k_gene) blocks, in column order."""
    matrix = np.concatenate(scores, axis=1)
    write_features(folder, Features(samples, columns, matrix, info), table)
    with open(folder / GENES_TABLE, "w") as fh:
        fh.write("gene\tchrom\tstart\tend\tn_sites\tn_snps\tn_pcs\texplained_total\texplained_per_pc\n")
        for g in genes:
            ev = g["explained"]
            fh.write(f"{g['name']}\t{g['chrom']}\t{g['start']}\t{g['end']}\t{g.get('n_sites', '')}\t{g['n_snps']}\t"
                     f"{g['n_pcs']}\t{sum(ev):.6g}\t{','.join(f'{v:.6g}' for v in ev)}\n")
