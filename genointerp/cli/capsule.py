"""Capsule panel: capsule-train and capsule-predict (DiseaseCapsule)."""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli import app
from genointerp.cli.common import REPORTER, device_for, log, warn
from genointerp.cli.options import device_option, force_option, seed_option, threads_option
from genointerp.cli.genotypes import PANEL
from genointerp.job import one_stdin
from genointerp.runtime import Precision, usable_threads, use_threads


def _fractions(value: Optional[str]) -> list[float]:
    if not value:
        return []
    try:
        fractions = [float(v) for v in value.split(",")]
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {value!r}", param_hint="--train-fraction") from None
    if any(not 0 < f <= 1 for f in fractions):
        raise typer.BadParameter("fractions must be in (0, 1]", param_hint="--train-fraction")
    return fractions


# capsule-train's training defaults per kind of primary capsule (chosen on the planted cohorts of
# benchmarks/capsule.py, tuning seeds 11 and 12, not the seeds benchmarks/README.md reports; the pair screen
# was turned on by default after the seeds 1-3 tables of benchmarks/README.md: it lifts XOR at 1,000 samples and mixed at 3,000)
GENE_DEFAULTS = {"epochs": 200, "patience": 20, "lr": 3e-3, "gene_penalty": 0.0012, "pair_screen": True}
CONV_DEFAULTS = {"epochs": 100, "patience": 10, "lr": 1e-3, "gene_penalty": 0.0, "pair_screen": False}


def _torch_device(requested: str, threads: int) -> str:
    use_threads(threads)
    return device_for(requested, Precision.fp32)


@app.command(
    "capsule-train",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp capsule-train genepcs/ --phenotypes pheno.tsv -o capsule_model\n\n"
        "  genointerp capsule-train genepcs/ -p pheno.tsv --phenotype T2D --train-fraction 0.1,0.25,0.5,1 -o m\n\n"
        "  genointerp capsule-train genepcs/ -p pheno.tsv --gene-sets c5.go.bp.v2024.1.Hs.symbols.gmt -o m"
    ),
)
def capsule_train(
    features_path: str = typer.Argument(..., metavar="FEATURES", help="gene-pca output folder, or a TSV (sample column first, then chrom:gene:pcN columns)."),
    phenotypes: str = typer.Option(..., "-p", "--phenotypes", help="Phenotype TSV (sample/IID column + phenotype columns; NA, -9, empty = missing)."),
    phenotype: Optional[str] = typer.Option(None, "--phenotype", help="Phenotype column (default: the first one); binary."),
    case: Optional[str] = typer.Option(None, "--case", help="The value that marks cases (default: case/affected/yes/true if present, else the second in sort order: 2 of PLINK 1/2, 1 of 0/1)."),
    output: str = typer.Option(..., "-o", "--output", help="Model directory to write."),
    folds: int = typer.Option(5, "--folds", min=2, help="Stratified cross-validation folds on the non-test samples."),
    test_fraction: float = typer.Option(0.2, "--test-fraction", min=0, max=0.9, help="Held-out test set, equal numbers per class (0: none)."),
    valid_fraction: float = typer.Option(0.15, "--valid-fraction", min=0.01, max=0.5, help="Inner validation part of each training set, for early stopping."),
    epochs: Optional[int] = typer.Option(None, "--epochs", min=1, help="Most epochs per training \\[default: 200 gene capsules, 100 conv]."),
    patience: Optional[int] = typer.Option(None, "--patience", min=1, help="Stop after this many epochs without a lower validation margin loss \\[default: 20 gene capsules, 10 conv]."),
    batch_size: int = typer.Option(32, "--batch-size", min=1),
    lr: Optional[float] = typer.Option(None, "--lr", min=0, help="Adam learning rate \\[default: 3e-3 gene capsules, 1e-3 conv]."),
    weight_decay: float = typer.Option(1e-4, "--weight-decay", min=0, help="Adam weight decay."),
    pair_screen: Optional[bool] = typer.Option(None, "--pair-screen/--no-pair-screen", help="Spare one gene pair from the group penalty: the best pair of capsule-search's pair screen (least squares with and without the products of the two genes' PCs), run on each training set's rows only, if it passes the screen's chance gate; recorded as training.screened_pair in config.json. Without it an interacting pair with no marginal effect (XOR) stays switched off at ~1,000 samples. Costs the screen per training (about 8 s at 1,000 samples x 92 genes) \\[default: on for gene capsules under the group penalty]."),
    gene_penalty: Optional[float] = typer.Option(None, "--gene-penalty", min=0, help="Group lasso on gene capsules: sum over genes of sqrt(PCs) x the norm of the gene's map, weighted by this x (1000 / training rows)^1.5 (rows below 500 count as 500), is added to the training loss, so genes that do not help are switched off (0: none) \\[default: 0.0012, i.e. 0.003 at 1,000 samples and 0.0006 at 3,000; gene capsules only]."),
    lr_decay: float = typer.Option(0.97, "--lr-decay", min=0.01, max=1, help="Exponential learning-rate decay per epoch."),
    hidden: int = typer.Option(256, "--hidden", min=2, help="Dense layer width."),
    capsule_channels: int = typer.Option(32, "--capsule-channels", min=1, help="Primary capsule channels."),
    capsule_dim: int = typer.Option(4, "--capsule-dim", min=1, help="Primary capsule dimension."),
    kernel_size: int = typer.Option(9, "--kernel-size", min=1, help="Convolution kernel over the dense layer."),
    stride: int = typer.Option(2, "--stride", min=1, help="Convolution stride."),
    class_dim: int = typer.Option(16, "--class-dim", min=1, help="Phenotype capsule dimension."),
    routing: int = typer.Option(3, "--routing", min=1, help="Routing-by-agreement iterations."),
    primary: str = typer.Option("gene", "--primary", metavar="gene|conv", help="Primary capsules: gene (one capsule per gene, fed only by that gene's PCs; its coupling is the gene's relevance, which genes.tsv ranks) or conv (the paper's: a convolution over a dense layer on all Gene-PCs). --hidden, --capsule-channels, --kernel-size, --stride, --dropout and --primary-capsule shape conv capsules only."),
    input_dropout: float = typer.Option(0.0, "--input-dropout", min=0, max=0.95, help="Dropout on the Gene-PC input while training."),
    dropout: float = typer.Option(0.0, "--dropout", min=0, max=0.95, help="Dropout on the dense layer's output while training."),
    baselines: bool = typer.Option(True, "--baselines/--no-baselines", help="Also score logistic regression, SVM, random forest, AdaBoost, an MLP and, when FEATURES holds SNP dosages (gene-pca --keep-dosages), a polygenic risk score on the same folds."),
    train_fraction: Optional[str] = typer.Option(None, "--train-fraction", metavar="F,F,...", help="Data-efficiency curve: accuracy when training on these fractions of each training fold (train_fraction.tsv)."),
    primary_capsule: Optional[int] = typer.Option(None, "--primary-capsule", min=0, help="Primary capsule for the gene scores (default: highest mean coupling to the case capsule)."),
    gene_sets: Optional[str] = typer.Option(None, "--gene-sets", metavar="FILE.gmt", help="Gene sets (GMT: name, description, gene symbols; tab-separated; gzip or - read too), e.g. an MSigDB or GO export: test the decisive genes for enrichment in each (hypergeometric, Benjamini-Hochberg FDR) into enrichment.tsv. Example: --gene-sets h.all.v2024.1.Hs.symbols.gmt"),
    min_set_size: int = typer.Option(5, "--min-set-size", min=1, help="With --gene-sets: test only sets with at least this many feature genes."),
    max_set_size: int = typer.Option(500, "--max-set-size", min=1, help="With --gene-sets: test only sets with at most this many feature genes."),
    device: str = device_option(),
    threads: int = threads_option("CPU threads (torch and the random forest)."),
    seed: int = seed_option("Seeds splits, initialisation and shuffling: same inputs and seed, same outputs."),
    force: bool = force_option("an existing model directory"),
) -> None:
    """Train a DiseaseCapsule network (capsule network over Gene-PCs) for a binary phenotype.

    A balanced test set is held out; the rest is cross-validated (--folds) against scikit-learn
    baselines and, when FEATURES holds SNP dosages (gene-pca --keep-dosages), a polygenic risk score
    (clumping + p-value threshold); the saved model is trained on all non-test samples. MODEL_DIR
    gets model.safetensors, config.json (feature columns, classes, scaler), results.tsv (mean/sd
    over folds + test), folds.tsv, split.tsv, metrics.tsv (final training), test_predictions.tsv,
    coupling.tsv/.png, genes.tsv (ranked genes; top 5 % decisive), train_fraction.tsv with
    --train-fraction and enrichment.tsv with --gene-sets (gene sets enriched in the decisive genes).
    """
    from genointerp.capsule import enrichment as ce
    from genointerp.capsule import train as ct
    from genointerp.capsule.interpret import gene_groups, gene_index
    from genointerp.io.atomic import AtomicOutputs
    from genointerp.io.features import read_dosages, read_features, read_phenotypes
    from genointerp.models.capsule import CapsuleConfig

    fractions = _fractions(train_fraction)
    if primary not in CapsuleConfig.PRIMARY_KINDS:
        raise typer.BadParameter(f"expected one of {', '.join(CapsuleConfig.PRIMARY_KINDS)}, got {primary!r}",
                                 param_hint="--primary")
    if primary == "conv" and pair_screen:  # only an explicit --pair-screen: None is the default
        raise typer.BadParameter("the pair screen spares genes from the gene capsules' group penalty: use --primary gene",
                                 param_hint="--pair-screen")
    if primary == "conv" and gene_penalty:
        raise typer.BadParameter("the group penalty switches genes off, and conv capsules mix all genes in a "
                                 "dense layer: use --primary gene", param_hint="--gene-penalty")
    # gene capsules under the group penalty learn more slowly than the paper's conv capsules overfit
    # (benchmarks/capsule.py: best epochs 2-139, median 16, against 4-21 unpenalised), hence their longer schedule
    defaults = GENE_DEFAULTS if primary == "gene" else CONV_DEFAULTS
    epochs = defaults["epochs"] if epochs is None else epochs
    patience = defaults["patience"] if patience is None else patience
    lr = defaults["lr"] if lr is None else lr
    gene_penalty = defaults["gene_penalty"] if gene_penalty is None else gene_penalty
    if pair_screen is None:  # with no penalty there is nothing to spare
        pair_screen = defaults["pair_screen"] and gene_penalty > 0
    elif pair_screen and not gene_penalty:
        raise typer.BadParameter("the pair screen spares a pair from the group penalty, and --gene-penalty 0 turns "
                                 "the penalty off", param_hint="--pair-screen")
    if primary == "gene" and primary_capsule is not None:
        raise typer.BadParameter("gene primary capsules are the genes, and genes.tsv reads their coupling; "
                                 "--primary-capsule picks a conv capsule", param_hint="--primary-capsule")
    if min_set_size > max_set_size:
        raise typer.BadParameter(f"{min_set_size} is above --max-set-size {max_set_size}", param_hint="--min-set-size")
    one_stdin(("FEATURES", features_path), ("--phenotypes", phenotypes), ("--gene-sets", gene_sets))
    with AtomicOutputs(force, inputs=[features_path, phenotypes, gene_sets]) as outputs:
        folder = outputs.folder(output)
        features = read_features(features_path)
        dosages = read_dosages(features_path, len(features.samples)) if baselines else None
        if baselines and dosages is None:
            log(f"PRS baseline skipped: {features_path} has no SNP dosages (dosages.npy and snps.tsv, "
                "written by gene-pca --keep-dosages)")
        if gene_sets is not None:  # checked before training: a bad file should not cost a training run
            sets = ce.read_gmt(gene_sets)
            symbols = [name.rpartition(":")[2] for name, _ in gene_groups(features.columns)]
            log(ce.check_gene_sets(sets, symbols, gene_sets, min_set_size, max_set_size))
        pheno = ct.order_case_last(read_phenotypes(phenotypes, phenotype), case, phenotypes)
        x, y, samples = ct.align(features, pheno, phenotypes)
        log(f"{len(samples)} samples ({', '.join(f'{c}: {int((y == i).sum())}' for i, c in enumerate(pheno.classes))}), "
            f"{x.shape[1]} features" + (f"; {pheno.dropped} without a phenotype value dropped" if pheno.dropped else ""))
        try:
            config = CapsuleConfig(n_features=x.shape[1], n_classes=2, hidden=hidden, primary_channels=capsule_channels,
                                   primary_dim=capsule_dim, kernel_size=kernel_size, stride=stride, class_dim=class_dim,
                                   routing_iterations=routing, input_dropout=input_dropout, dropout=dropout,
                                   primary=primary, gene_index=gene_index(features.columns) if primary == "gene" else ())
            config.validate()
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--kernel-size/--hidden") from None
        if primary_capsule is not None and primary_capsule >= config.n_primary:
            raise typer.BadParameter(f"the network has {config.n_primary} primary capsules", param_hint="--primary-capsule")
        s = ct.CapsuleSettings(folds=folds, test_fraction=test_fraction, valid_fraction=valid_fraction, epochs=epochs,
                               patience=patience, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                               lr_decay=lr_decay, gene_penalty=gene_penalty, pair_screen=pair_screen, seed=seed,
                               device=_torch_device(device, threads),
                               threads=usable_threads(threads), baselines=baselines, train_fractions=fractions)
        r = ct.train(x, y, pheno.classes, config, s, REPORTER,
                     dosages.take(features.rows(samples)) if dosages is not None else None)

        chosen, genes = ct.write_model_dir(folder, r, x, y, samples, features, features_path, pheno, phenotypes,
                                           config, s, primary_capsule)
        if gene_sets is not None:
            enriched = ce.enrichment(sets, symbols, [g["gene"] for g in genes if g["decisive"]], min_set_size, max_set_size)
            (folder / "enrichment.tsv").write_text(ce.enrichment_table(enriched))
            best = enriched[0]
            log(f"enrichment.tsv: {len(enriched)} gene sets tested; lowest p {best['p_value']:.3g} "
                f"(FDR {best['fdr']:.3g}): {best['set']}, {best['overlap']} of {best['set_size']} genes decisive")
    if pair_screen:
        spared = ct.spared_genes(r.model, features.columns)
        log(f"pair screen: the final model spared {' and '.join(spared)} from the group penalty" if spared else
            "pair screen: no gene pair's products beat both the additive fit and the chance gate; "
            "every gene was penalised")
    decisive = [g["gene"] for g in genes if g["decisive"]]
    read_out = "gene capsules' coupling" if chosen is None else f"primary capsule {chosen}"
    log(f"wrote {output}: {read_out}; decisive genes: {', '.join(decisive[:10])}"
        + (" ..." if len(decisive) > 10 else ""))
    for line in ct.results_table(r).splitlines():
        log(line)


@app.command(
    "capsule-predict",
    rich_help_panel=PANEL,
    epilog=("Examples:\n\n  genointerp gene-pca new.vcf.gz --apply genepcs/ -o new_genepcs\n\n"
            "  genointerp capsule-predict capsule_model new_genepcs/ -o predictions.tsv"),
)
def capsule_predict(
    model_dir: str = typer.Argument(..., metavar="MODEL_DIR", help="Model directory from capsule-train."),
    features_path: str = typer.Argument(..., metavar="FEATURES", help="gene-pca output folder or TSV with the model's feature columns (extra columns are ignored); for a new cohort, gene-pca --apply the training cohort's folder."),
    output: str = typer.Option("-", "-o", "--output", help="TSV: sample, p_<class> (capsule lengths normalised to sum 1), call; - is stdout."),
    device: str = device_option(),
    threads: int = threads_option(),
    force: bool = force_option("an existing output file"),
) -> None:
    """Score samples with a capsule-train model: per-class probabilities and the called class."""
    from genointerp.capsule.predict import model_fields, model_matrix, predictions_table
    from genointerp.capsule.train import Scaler, capsule_lengths, class_probabilities
    from genointerp.model_folder import load_model_dir
    from genointerp.io.atomic import STDOUT, AtomicOutputs
    from genointerp.io.features import read_features

    with AtomicOutputs(force, inputs=[model_dir, features_path]) as outputs:
        target = outputs.file(output) if output != STDOUT else None
        dev = _torch_device(device, threads)
        model, config = load_model_dir(model_dir, expect="capsule")
        columns, scaler, classes = model_fields(config, model_dir, model.config)
        features = read_features(features_path)
        x = model_matrix(features, columns, features_path, warn)
        lengths = capsule_lengths(model.to(dev), Scaler.from_dict(scaler)(x), dev)
        text = predictions_table(features.samples, class_probabilities(lengths), classes)
        if target is None:
            typer.echo(text, nl=False)
        else:
            target.write_text(text)
    log(f"scored {len(features.samples)} samples")


def _subset_size(value: str) -> tuple[int, int]:
    lo, sep, hi = value.partition("-")
    try:
        sizes = (int(lo), int(hi) if sep else int(lo))
    except ValueError:
        raise typer.BadParameter(f"expected N or MIN-MAX, got {value!r}", param_hint="--subset-size") from None
    if sizes[0] < 1 or sizes[1] < sizes[0]:
        raise typer.BadParameter(f"expected 1 <= MIN <= MAX, got {value!r}", param_hint="--subset-size")
    return sizes


@app.command(
    "capsule-search",
    rich_help_panel=PANEL,
    epilog=("Examples:\n\n"
            "  genointerp capsule-search genepcs/ -p pheno.tsv --phenotype T2D -o search\n\n"
            "  genointerp capsule-search genepcs/ -p pheno.tsv --subset-size 2-4 --population 32 --generations 20 "
            "--time-budget 3600 -t 8 -o search"),
)
def capsule_search(
    features_path: str = typer.Argument(..., metavar="FEATURES", help="gene-pca output folder, or a TSV (sample column first, then chrom:gene:pcN columns)."),
    phenotypes: str = typer.Option(..., "-p", "--phenotypes", help="Phenotype TSV (sample/IID column + phenotype columns; NA, -9, empty = missing)."),
    phenotype: Optional[str] = typer.Option(None, "--phenotype", help="Phenotype column (default: the first one); binary."),
    case: Optional[str] = typer.Option(None, "--case", help="The value that marks cases (as capsule-train)."),
    output: str = typer.Option(..., "-o", "--output", help="Folder to write: best.tsv, screen.tsv, history.tsv, history.png, search.json."),
    population: int = typer.Option(16, "--population", min=2, help="Gene subsets per generation."),
    generations: int = typer.Option(10, "--generations", min=1, help="Generations (the first is random)."),
    subset_size: str = typer.Option("2", "--subset-size", metavar="N|MIN-MAX", help="Genes per subset."),
    folds: int = typer.Option(3, "--folds", min=2, help="Stratified cross-validation folds; every subset is scored on the same ones."),
    repeats: int = typer.Option(2, "--repeats", min=1, help="Fold splits (each a different stratified split) the accuracies are averaged over: more repeats, less noise, proportionally more time."),
    gate: float = typer.Option(2.0, "--gate", min=0, metavar="SE", help="A subset earns credit only where the capsule's CV accuracy exceeds chance (the majority-class share) by this many standard errors of a no-signal model's accuracy (sqrt(p(1-p)/n))."),
    screen: bool = typer.Option(True, "--screen/--no-screen", help="Start from the best pairs of a pair screen (seconds: every gene pair, a least-squares classifier with and without the products of the two genes' PCs; screen.tsv) instead of random subsets; needs --subset-size of at least 2."),
    size_penalty: float = typer.Option(0.005, "--size-penalty", min=0, help="Fitness cost of every gene beyond the smallest --subset-size (ties go to the smaller subset anyway)."),
    elite: int = typer.Option(1, "--elite", min=0, help="Best subsets copied unchanged into the next generation."),
    mutation_rate: float = typer.Option(0.5, "--mutation-rate", min=0, max=0.99, help="Chance that a child gets a gene swapped in/out (then another, with the same chance)."),
    time_budget: Optional[float] = typer.Option(None, "--time-budget", min=0, metavar="SECONDS", help="Stop after the generation that crosses this many seconds (of search, summed over resumed runs), keeping the best so far."),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUTPUT.checkpoint, the state an interrupted search saved after its last finished generation (same inputs and settings: same result as an uninterrupted run)."),
    primary: str = typer.Option("gene", "--primary", metavar="gene|conv", help="Primary capsules, as capsule-train's."),
    epochs: int = typer.Option(30, "--epochs", min=1, help="Most epochs per capsule training (per fold and subset)."),
    patience: int = typer.Option(5, "--patience", min=1, help="Stop after this many epochs without a lower validation margin loss."),
    batch_size: int = typer.Option(32, "--batch-size", min=1),
    lr: float = typer.Option(3e-3, "--lr", min=0, help="Adam learning rate."),
    valid_fraction: float = typer.Option(0.15, "--valid-fraction", min=0.01, max=0.5, help="Inner validation part of each training set, for early stopping."),
    hidden: int = typer.Option(32, "--hidden", min=2, help="Dense layer width (conv primary capsules only)."),
    kernel_size: int = typer.Option(5, "--kernel-size", min=1, help="Convolution kernel (conv primary capsules only)."),
    capsule_dim: int = typer.Option(8, "--capsule-dim", min=1, help="Primary capsule dimension (with 4, gene capsules fit a strong gene worse than logistic regression does)."),
    class_dim: int = typer.Option(16, "--class-dim", min=1, help="Phenotype capsule dimension."),
    routing: int = typer.Option(3, "--routing", min=1, help="Routing-by-agreement iterations."),
    threads: int = threads_option("Fitness evaluations of a generation run in parallel in this many processes (one torch thread each); results do not depend on it."),
    seed: int = seed_option("Seeds the folds, the GA and every training: same inputs and seed, same result."),
    force: bool = force_option("an existing output folder"),
) -> None:
    """Search for gene subsets whose genes act together: a genetic algorithm maximising how far the
    capsule network's cross-validated accuracy exceeds logistic regression's, both on the subset's Gene-PCs.

    Fitness = ACC_capsule - max(ACC_logistic, chance + --gate SE) - --size-penalty per extra gene,
    accuracies on the held-out folds averaged over --repeats fold splits (the same for every
    subset): credit only for what an additive model misses, and only where the capsule network is
    above what a subset without signal reaches by luck. Training accuracies are reported, not optimised. GA: tournament selection, uniform crossover
    of gene sets repaired to --subset-size, gene-swap mutation, elitism; each subset is scored once.
    Generation 1 is the best pairs of a pair screen (--screen; screen.tsv), the capsule fitness is
    then spent where interactions are likely. OUTPUT gets best.tsv (the best subsets, rank 1
    first), screen.tsv, history.tsv and history.png (fitness by generation) and search.json
    (settings and inputs). The state after each generation is kept in
    OUTPUT.checkpoint until the search finishes (--resume continues it). Costly: every new subset is
    --folds x --repeats capsule trainings.
    """
    import hashlib
    import json as jsonlib
    from pathlib import Path

    import numpy as np

    from genointerp.capsule import search as cs
    from genointerp.capsule import train as ct
    from genointerp.capsule.interpret import gene_groups
    from genointerp.errors import InputError
    from genointerp.io.atomic import AtomicOutputs
    from genointerp.io.features import read_features, read_phenotypes
    from genointerp.models.capsule import CapsuleConfig

    min_size, max_size = _subset_size(subset_size)
    if primary not in CapsuleConfig.PRIMARY_KINDS:
        raise typer.BadParameter(f"expected one of {', '.join(CapsuleConfig.PRIMARY_KINDS)}, got {primary!r}",
                                 param_hint="--primary")
    if elite >= population:
        raise typer.BadParameter(f"{elite} elites leave no child in a population of {population}", param_hint="--elite")
    one_stdin(("FEATURES", features_path), ("--phenotypes", phenotypes))
    checkpoint = Path(output.rstrip("/") + ".checkpoint")
    with AtomicOutputs(force, inputs=[features_path, phenotypes]) as outputs:
        folder = outputs.folder(output)
        features = read_features(features_path)
        groups = gene_groups(features.columns)
        gene_names = [name for name, _ in groups]
        if max_size > len(groups):
            raise InputError(f"--subset-size {subset_size}: {features_path} has only {len(groups)} genes")
        pheno = ct.order_case_last(read_phenotypes(phenotypes, phenotype), case, phenotypes)
        x, y, samples = ct.align(features, pheno, phenotypes)
        log(f"{len(samples)} samples ({', '.join(f'{c}: {int((y == i).sum())}' for i, c in enumerate(pheno.classes))}), "
            f"{len(groups)} genes, {x.shape[1]} features")
        config = {"n_classes": 2, "hidden": hidden, "kernel_size": kernel_size, "primary_channels": 4, "primary_dim": capsule_dim,
                  "stride": 2, "class_dim": class_dim, "routing_iterations": routing, "primary": primary}
        smallest = min(len(idx) for _, idx in groups) * min_size
        try:
            CapsuleConfig(n_features=smallest, **config).validate() if primary == "conv" else None
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--kernel-size/--hidden") from None
        s = ct.CapsuleSettings(folds=folds, test_fraction=0.0, valid_fraction=valid_fraction, epochs=epochs,
                               patience=patience, batch_size=batch_size, lr=lr, seed=seed, device="cpu", threads=1,
                               baselines=False)
        splits = cs.make_splits(y, pheno.classes, folds, repeats, seed)
        screen = screen and max_size >= 2
        gs = cs.SearchSettings(population=population, generations=generations, min_size=min_size, max_size=max_size,
                               folds=folds, repeats=repeats, gate=gate, size_penalty=size_penalty, screen=screen,
                               elite=elite, mutation_rate=mutation_rate, seed=seed)
        chance, threshold = cs.chance_threshold(y, gate)
        inputs = {"features": str(features_path), "columns": len(features.columns), "genes": len(groups),
                  "phenotypes": str(phenotypes), "phenotype": pheno.column, "classes": pheno.classes,
                  "case": pheno.classes[1], "n_samples": len(samples)}
        fingerprint = {"search": cs.settings_dict(gs), "training": ct.settings_dict(s), "capsule": config,
                       "inputs": inputs,
                       "data": hashlib.sha256(np.ascontiguousarray(x).tobytes() + y.astype(np.int64).tobytes()).hexdigest()}
        problem = cs.Problem(x, y, [idx for _, idx in groups], features.columns, splits, s, config, gate, size_penalty,
                             min_size)
        import time

        use_threads(1)  # torch's threads; the search runs --threads worker processes
        screened = None
        if screen:
            start = time.monotonic()
            screened = cs.screen_pairs(problem)
            (a, b), score, products, additive = screened[0]
            log(f"pair screen: {len(screened)} pairs in {time.monotonic() - start:.1f} s; best {gene_names[a]},"
                f"{gene_names[b]} (with products {products:.3f} vs additive {additive:.3f} CV accuracy)")
            (folder / "screen.tsv").write_text(cs.screen_table(screened, gene_names))
        with cs.Evaluator(problem, usable_threads(threads)) as evaluator:
            result = cs.search(evaluator, len(groups), gs, fingerprint, checkpoint, resume, time_budget, REPORTER,
                               gene_names, screened)
        (folder / "best.tsv").write_text(cs.best_table(result.cache, gene_names))
        (folder / "history.tsv").write_text(cs.history_table(result.history, gene_names))
        cs.plot_history(result.history, folder / "history.png")
        best, ev = cs.ranked(result.cache)[0]
        (folder / "search.json").write_text(jsonlib.dumps({
            "task": "gene subsets where the capsule network beats logistic regression and chance (capsule-search)",
            "fitness": "ACC_capsule - max(ACC_logistic, chance + gate * SE) - size_penalty * (genes - min size): "
                       "held-out accuracy over repeats x folds on the subset's Gene-PCs",
            "chance": round(chance, 6), "chance_threshold": round(threshold, 6),
            "settings": {**cs.settings_dict(gs), "time_budget": time_budget}, "training": ct.settings_dict(s),
            "capsule": config, "inputs": inputs, "generations_run": len(result.history),
            "stopped_by_time_budget": result.stopped_by_budget, "subsets_evaluated": len(result.cache),
            "best": {"genes": [gene_names[g] for g in best], **ev}}, indent=2) + "\n")
    checkpoint.unlink(missing_ok=True)
    log(f"wrote {output}: best subset {','.join(gene_names[g] for g in best)}: capsule {ev['cv_capsule']:.3f} vs "
        f"logistic {ev['cv_logistic']:.3f} CV accuracy, chance gate {threshold:.3f} (fitness {ev['fitness']:+.4f}); "
        f"{len(result.cache)} subsets evaluated")
