"""The capsule-train job: Gene-PCs + a binary phenotype in, a model directory out.

    from genointerp.job import execute
    from genointerp.capsule.train_job import CapsuleTrainRequest, run
    summary = execute(run, CapsuleTrainRequest(features="gene_pcs", phenotypes="pheno.tsv", output="model"))

The protocol is protocol.py's, the directory's contents model_dir.py's; with gene_sets the decisive
genes' enrichment goes to enrichment.tsv (enrichment.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from genointerp.capsule import enrichment as ce
from genointerp.capsule.burden import (AUTO_BURDEN_MAF, MIN_SNPS, burden_maf_value, burden_plan, snp_genes,
                                       with_burden)
from genointerp.capsule.cohort import align, class_counts, order_case_last
from genointerp.capsule.interpret import gene_groups, gene_index, spared_genes
from genointerp.capsule.model_dir import write_model_dir
from genointerp.capsule.protocol import train
from genointerp.capsule.rules import network, primary_kind
from genointerp.capsule.settings import CapsuleSettings, features_arg, phenotype_option, phenotypes_option
from genointerp.capsule.tables import results_table
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.features import read_dosages, read_features, read_phenotypes
from genointerp import options
from genointerp.job import one_stdin
from genointerp.options import opt
from genointerp.models.capsule import CapsuleConfig
from genointerp.report import Reporter
from genointerp.runtime import Precision, device_for, usable_threads, use_threads

# --burden-view's default for gene capsules. Chosen on the family's tuning seeds (benchmarks/capsule_family.py,
# 3,000 samples, capsule-train's final model on its held-out test set; docs/capsule.md): on the 63 burden
# cohorts of seeds 4, 5, 11-16 (both h2, every interaction) the gene capsules' view alone moved the test mean
# +0.0026 at 0.05 against +0.0016 at 0.001; with the pair view the 47 interacting ones +0.014; the 48 single,
# several and dense cohorts of seeds 4, 5, 11, 12 (h2 0.5) -0.0005.
BURDEN_VIEW = 0.05
# training defaults per kind of primary capsule (chosen on the planted cohorts of benchmarks/capsule.py,
# tuning seeds 11 and 12, not the seeds benchmarks/README.md reports; the pair screen was turned on by default
# after the seeds 1-3 tables of benchmarks/README.md: it lifts XOR at 1,000 samples and mixed at 3,000). Gene capsules
# under the group penalty learn more slowly than the paper's conv capsules overfit (benchmarks/capsule.py:
# best epochs 2-139, median 16, against 4-21 unpenalised), hence their longer schedule.
GENE_DEFAULTS = {"epochs": 200, "patience": 20, "lr": 3e-3, "gene_penalty": 0.0012, "pair_screen": True,
                 "gene_screen": 0.001, "burden_view": BURDEN_VIEW, "refit": True}
CONV_DEFAULTS = {"epochs": 100, "patience": 10, "lr": 1e-3, "gene_penalty": 0.0, "pair_screen": False,
                 "gene_screen": 0.0, "burden_view": 0.0, "refit": False}
# the screened pair gets a pair capsule (models/capsule.py) wherever the pair screen runs and the pair
# interacts beyond chance (benchmarks/capsule_family.py: issue 60)


@dataclass
class CapsuleTrainRequest:
    """capsule-train: the fields are its options (files as paths, `-` for stdin). epochs, patience,
    lr, gene_penalty and pair_screen left at None take the primary kind's default (GENE_DEFAULTS,
    CONV_DEFAULTS)."""

    features: str = features_arg()  # gene-pca folder or TSV
    phenotypes: str = phenotypes_option()
    output: str = opt(..., "-o", "--output", help='Model directory to write.')
    phenotype: str | None = phenotype_option()
    case: str | None = opt(
        None, "--case",
        help=('The value that marks cases (default: case/affected/yes/true if present, else the second in sort '
              'order: 2 of PLINK 1/2, 1 of 0/1).'))
    folds: int = opt(5, "--folds", min=2, help='Stratified cross-validation folds on the non-test samples.')
    test_fraction: float = opt(
        0.2, "--test-fraction", min=0, max=0.9,
        help='Held-out test set, equal numbers per class (0: none).')
    valid_fraction: float = opt(
        0.15, "--valid-fraction", min=0.01, max=0.5,
        help='Inner validation part of each training set, for early stopping.')
    epochs: int | None = opt(
        None, "--epochs", min=1,
        help='Most epochs per training \\[default: 200 gene capsules, 100 conv].')
    patience: int | None = opt(
        None, "--patience", min=1,
        help=('Stop after this many epochs without a lower validation margin loss \\[default: 20 gene capsules, 10 '
              'conv].'))
    batch_size: int = opt(32, "--batch-size", min=1)
    lr: float | None = opt(None, "--lr", min=0, help='Adam learning rate \\[default: 3e-3 gene capsules, 1e-3 conv].')
    weight_decay: float = opt(1e-4, "--weight-decay", min=0, help='Adam weight decay.')
    refit: bool | None = opt(
        None, "--refit/--no-refit",
        help=("After early stopping, train each network anew from its seed on all of its training set (the inner "
              'validation part too) for the epochs early stopping chose; its screens and pair views stay as fitted '
              'on the inner training rows, metrics.tsv shows the training that chose the epochs. About 1.5-2 times the '
              'training time \\[default: on for gene capsules, off for conv].'))
    pair_screen: bool | None = opt(
        None, "--pair-screen/--no-pair-screen",
        help=("Spare one gene pair from the group penalty: the best pair of score tests of every pair against an "
              "additive null model (two families: the products of the two genes' PCs, and the product of their "
              'additive scores), run on the rows of each training set only, if its z passes 2 '
              '(recorded as training.screened_pair in config.json); where it passes the bar that the best of all '
              'pairs passes by chance with probability 0.05 over both families (permutation max-T) it is reported as '
              'interacting and gets a pair capsule. Without it an interacting pair with no '
              'marginal effect (XOR) stays switched off at ~1,000 samples. Seconds per training at 3,000 samples x '
              '92 genes \\[default: on for gene capsules under the group penalty].'))
    gene_penalty: float | None = opt(
        None, "--gene-penalty", min=0,
        help=("Group lasso on gene capsules: sum over genes of sqrt(PCs) x the norm of the gene's map, weighted by "
              'this x (1000 / training rows)^1.5 (rows below 500 count as 500), is added to the training loss, so '
              'genes that do not help are switched off (0: none) \\[default: 0.0012, i.e. 0.003 at 1,000 samples and'
              ' 0.0006 at 3,000; gene capsules only].'))
    gene_screen: float | None = opt(
        None, "--gene-screen", min=0, max=1,
        help=("Switch off (before training, on each training set's own rows) the gene capsules of genes whose "
              "score test (the phenotype on the gene's columns, alone, then beside the genes kept before it) does "
              "not reach this p-value; the pair test's pair is always kept, and where no gene reaches it none is "
              "switched off (0: none) "
              f"\\[default: {GENE_DEFAULTS['gene_screen']:g} for gene capsules under the group penalty]."))
    burden_view: float | None = opt(
        None, "--burden-view", min=0, max=1,
        help=("Where a gene has a burden column (--burden-maf), switch off its PCs (before training, on each "
              "training set's own rows) unless they add to the burden column at this p-value: a gene acting "
              "through its low-frequency alleles is then read through that one column; where the pair test "
              "finds its pair in the genes' burden columns, the pair capsule reads only those (0: keep every PC) "
              f"\\[default: {BURDEN_VIEW:g} for gene capsules under the group penalty]."))
    lr_decay: float = opt(0.97, "--lr-decay", min=0.01, max=1, help='Exponential learning-rate decay per epoch.')
    hidden: int = opt(256, "--hidden", min=2, help='Dense layer width.')
    capsule_channels: int = opt(32, "--capsule-channels", min=1, help='Primary capsule channels.')
    capsule_dim: int = opt(4, "--capsule-dim", min=1, help='Primary capsule dimension.')
    kernel_size: int = opt(9, "--kernel-size", min=1, help='Convolution kernel over the dense layer.')
    stride: int = opt(2, "--stride", min=1, help='Convolution stride.')
    class_dim: int = opt(16, "--class-dim", min=1, help='Phenotype capsule dimension.')
    routing: int = opt(3, "--routing", min=1, help='Routing-by-agreement iterations.')
    primary: str = opt(
        "gene", "--primary", metavar="gene|conv",
        help=("Primary capsules: gene (one capsule per gene, fed only by that gene's PCs; its coupling is the "
              "gene's relevance, which genes.tsv ranks) or conv (the paper's: a convolution over a dense layer on "
              'all Gene-PCs). --hidden, --capsule-channels, --kernel-size, --stride, --dropout and '
              '--primary-capsule shape conv capsules only.'))
    input_dropout: float = opt(
        0.0, "--input-dropout", min=0, max=0.95,
        help='Dropout on the Gene-PC input while training.')
    dropout: float = opt(0.0, "--dropout", min=0, max=0.95, help="Dropout on the dense layer's output while training.")
    burden_maf: float | None = opt(
        None, "--burden-maf", metavar="MAF|auto", min=0, max=0.5, cli_type=str, parse=burden_maf_value,
        cli_default="auto",
        help=("Give every gene with at least 2 SNPs of minor allele frequency under this one more input column "
              'beside its PCs: the copies of those alleles (a rare-variant burden, which a gene\'s leading PCs may '
              'miss), which the pair test also reads; the SNPs and alleles are fixed from the feature folder\'s own '
              'rows and saved, and capsule-predict computes the column from the new cohort\'s dosages. Needs SNP '
              f'dosages (gene-pca --keep-dosages); 0: none; auto: {AUTO_BURDEN_MAF:g} where FEATURES holds dosages '
              'and the primary capsules are gene capsules, else none.'))
    baselines: bool = opt(
        True, "--baselines/--no-baselines",
        help=('Also score logistic regression, SVM, random forest, AdaBoost, an MLP, with gene capsules a logistic '
              "regression of the trained network's own inputs (lr_network_inputs) and, when FEATURES holds SNP "
              'dosages (gene-pca --keep-dosages), a polygenic risk score on the same folds.'))
    train_fraction: list[float] = opt(
        [], "--train-fraction", metavar="F,F,...", min=0, min_open=True, max=1, cli_type=str | None,
        parse=options.comma_numbers,
        help=('Data-efficiency curve: accuracy when training on these fractions of each training fold '
              '(train_fraction.tsv).'))
    primary_capsule: int | None = opt(
        None, "--primary-capsule", min=0,
        help='Primary capsule for the gene scores (default: highest mean coupling to the case capsule).')
    gene_sets: str | None = opt(
        None, "--gene-sets", metavar="FILE.gmt",
        help=('Gene sets (GMT: name, description, gene symbols; tab-separated; gzip or - read too), e.g. an MSigDB '
              'or GO export: test the decisive genes for enrichment in each (hypergeometric, Benjamini-Hochberg '
              'FDR) into enrichment.tsv. Example: --gene-sets h.all.v2024.1.Hs.symbols.gmt'))
    min_set_size: int = opt(
        5, "--min-set-size", min=1,
        help='With --gene-sets: test only sets with at least this many feature genes.')
    max_set_size: int = opt(
        500, "--max-set-size", min=1,
        help='With --gene-sets: test only sets with at most this many feature genes.')
    device: str = options.device()
    threads: int = options.threads(
        'Trainings at once on the CPU (CV folds, --train-fraction subsamples, the final model), one thread each; '
        'the outputs do not depend on it.')
    seed: int = options.seed('Seeds splits, initialisation and shuffling: same inputs and seed, same outputs.')

    def check(self) -> None:
        primary_kind(self.primary)
        if self.primary == "conv" and self.pair_screen:  # only an explicit --pair-screen: None is the default
            raise UsageError("--pair-screen: the pair screen spares genes from the gene capsules' group penalty: "
                             "use --primary gene")
        if self.primary == "conv" and self.gene_penalty:
            raise UsageError("--gene-penalty: the group penalty switches genes off, and conv capsules mix all genes "
                             "in a dense layer: use --primary gene")
        if self.pair_screen and not self.settings().gene_penalty:
            raise UsageError("--pair-screen: the pair screen spares a pair from the group penalty, and "
                             "--gene-penalty 0 turns the penalty off")
        for flag, value, what, off in (("--gene-screen", self.gene_screen, "the gene screen", "gene capsules"),
                                       ("--burden-view", self.burden_view, "the burden view", "a gene capsule's PCs")):
            if self.primary == "conv" and value:
                raise UsageError(f"{flag}: {what} switches off {off}: use --primary gene")
            if value and not self.settings().gene_penalty:
                raise UsageError(f"{flag}: {what} works beside the group penalty, and --gene-penalty 0 turns the "
                                 "penalty off")
        if self.primary == "gene" and self.primary_capsule is not None:
            raise UsageError("--primary-capsule: gene primary capsules are the genes, and genes.tsv reads their "
                             "coupling; --primary-capsule picks a conv capsule")
        if self.min_set_size > self.max_set_size:
            raise UsageError(f"--min-set-size: {self.min_set_size} is above --max-set-size {self.max_set_size}")
        one_stdin(("FEATURES", self.features), ("--phenotypes", self.phenotypes), ("--gene-sets", self.gene_sets))
        n_primary = network(**self.network_fields()).n_primary
        if self.primary_capsule is not None and self.primary_capsule >= n_primary:
            raise UsageError(f"--primary-capsule: the network has {n_primary} primary capsules")

    def inputs(self) -> list[str | None]:
        return [self.features, self.phenotypes, self.gene_sets]

    def network_fields(self) -> dict:
        """The CapsuleConfig fields the options set (all but the input's n_features and gene_index)."""
        return {"n_classes": 2, "hidden": self.hidden, "primary_channels": self.capsule_channels,
                "primary_dim": self.capsule_dim, "kernel_size": self.kernel_size, "stride": self.stride,
                "class_dim": self.class_dim, "routing_iterations": self.routing, "input_dropout": self.input_dropout,
                "dropout": self.dropout, "primary": self.primary}

    def settings(self, device: str = "cpu", threads: int = 1) -> CapsuleSettings:
        """The training settings, the primary kind's defaults filled in; with no group penalty the
        pair screen is off by default (there is nothing to spare a pair from)."""
        defaults = GENE_DEFAULTS if self.primary == "gene" else CONV_DEFAULTS
        given = {name: getattr(self, name) for name in ("epochs", "patience", "lr", "gene_penalty")}
        chosen = {name: defaults[name] if value is None else value for name, value in given.items()}
        pair_screen = (defaults["pair_screen"] and chosen["gene_penalty"] > 0) if self.pair_screen is None \
            else self.pair_screen
        gene_screen, burden_view = ((defaults[name] if chosen["gene_penalty"] > 0 else 0.0) if value is None else value
                                    for name, value in (("gene_screen", self.gene_screen),
                                                        ("burden_view", self.burden_view)))
        return CapsuleSettings(folds=self.folds, test_fraction=self.test_fraction, valid_fraction=self.valid_fraction,
                               batch_size=self.batch_size, weight_decay=self.weight_decay, lr_decay=self.lr_decay,
                               pair_screen=pair_screen, pair_capsule=pair_screen, gene_screen=gene_screen,
                               burden_view=burden_view, refit=defaults["refit"] if self.refit is None else self.refit,
                               seed=self.seed, device=device, threads=threads,
                               baselines=self.baselines, train_fractions=list(self.train_fraction), **chosen)


def run(req: CapsuleTrainRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Train and write the model directory (and enrichment.tsv with gene_sets); return the summary:
    samples, spared genes (None without the pair screen), the interacting pair (None where the
    spared pair is within chance or none was spared), primary capsule read (None: gene capsules),
    decisive genes."""
    log = report.log
    folder = outputs.folder(req.output)
    features = read_features(req.features)
    dosages = read_dosages(req.features, len(features.samples)) if req.baselines or req.burden_maf != 0 else None
    maf = req.burden_maf
    if maf is None:  # auto
        maf = AUTO_BURDEN_MAF if dosages is not None and req.primary == "gene" else 0.0
    plan = []
    if maf:
        if dosages is None:
            raise InputError(f"--burden-maf: {req.features} has no SNP dosages (dosages.npy and snps.tsv, written by "
                             "gene-pca --keep-dosages)")
        pcs = features
        plan = burden_plan(dosages, snp_genes(req.features), [name for name, _ in gene_groups(features.columns)], maf)
        features = with_burden(features, dosages, plan, req.features)
        log(f"burden columns: {len(plan)} of {len(gene_groups(pcs.columns))} genes have at least {MIN_SNPS} SNPs of "
            f"minor allele frequency under {maf:g}")
    if req.baselines and dosages is None:
        log(f"PRS baseline skipped: {req.features} has no SNP dosages (dosages.npy and snps.tsv, "
            "written by gene-pca --keep-dosages)")
    if req.gene_sets is not None:  # checked before training: a bad file should not cost a training run
        sets = ce.read_gmt(req.gene_sets)
        symbols = [name.rpartition(":")[2] for name, _ in gene_groups(features.columns)]
        log(ce.check_gene_sets(sets, symbols, req.gene_sets, req.min_set_size, req.max_set_size))
    pheno = order_case_last(read_phenotypes(req.phenotypes, req.phenotype), req.case, req.phenotypes)
    x, y, samples = align(features, pheno, req.phenotypes)
    log(f"{len(samples)} samples ({class_counts(y, pheno.classes)}), {x.shape[1]} features"
        + (f"; {pheno.dropped} without a phenotype value dropped" if pheno.dropped else ""))
    config = CapsuleConfig(n_features=x.shape[1], **req.network_fields(),
                           gene_index=gene_index(features.columns) if req.primary == "gene" else ())
    # torch on one thread here too (the read-outs): --threads is trainings at once (protocol.train)
    use_threads(1)
    threads = usable_threads(req.threads)
    s = replace(req.settings(device_for(req.device, Precision.fp32, report.warn), threads), burden_columns=len(plan))
    r = train(x, y, pheno.classes, config, s, report, dosages.take(features.rows(samples)) if dosages is not None else None)

    read = write_model_dir(folder, r, x, y, samples, features, req.features, pheno, req.phenotypes, config, s,
                           req.primary_capsule, {"maf_below": maf, "genes": plan} if plan else None)
    decisive = [g["gene"] for g in read.genes if g["decisive"]]
    if req.gene_sets is not None:
        enriched = ce.enrichment(sets, symbols, decisive, req.min_set_size, req.max_set_size)
        (folder / "enrichment.tsv").write_text(ce.enrichment_table(enriched))
        best = enriched[0]
        log(f"enrichment.tsv: {len(enriched)} gene sets tested; lowest p {best['p_value']:.3g} "
            f"(FDR {best['fdr']:.3g}): {best['set']}, {best['overlap']} of {best['set_size']} genes decisive")
    spared = spared_genes(r.model, features.columns) if s.pair_screen else None
    if spared is not None:
        log(f"pair screen: the final model spared {' and '.join(spared)} from the group penalty" if spared else
            "pair screen: no gene pair's products beat both the additive fit and the chance gate; "
            "every gene was penalised")
    if read.pair_line:
        log(read.pair_line)
    for line in results_table(r).splitlines():
        log(line)
    interacting = read.interaction["genes"] if read.interaction and read.interaction["interacting"] else None
    return {"samples": len(samples), "features": int(x.shape[1]), "spared_genes": spared,
            "interacting_pair": interacting, "primary_capsule": read.primary_capsule, "decisive_genes": decisive,
            "test_accuracy": (r.test_scores.get("capsule") or {}).get("accuracy")}
