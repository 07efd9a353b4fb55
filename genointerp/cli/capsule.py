"""Capsule panel: capsule-train, capsule-predict and capsule-search (DiseaseCapsule). Each command
builds its job's request (genointerp.capsule.*_job) and runs it through genointerp.job.execute; the
job modules import torch, so they are imported inside the commands: `genointerp --help` must not
import torch."""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, log
from genointerp.cli.genotypes import PANEL
from genointerp.cli.options import device_option, force_option, seed_option, threads_option
from genointerp.job import execute


def _fractions(value: Optional[str]) -> list[float]:
    if not value:
        return []
    try:
        return [float(v) for v in value.split(",")]
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {value!r}", param_hint="--train-fraction") from None


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
    pair_screen: Optional[bool] = typer.Option(None, "--pair-screen/--no-pair-screen", help="Spare one gene pair from the group penalty: the best pair of capsule-search's pair screen (least squares with and without the products of the two genes' PCs), run on each training set's rows only, if it passes the screen's chance gate; recorded as training.screened_pair in config.json. Without it an interacting pair with no marginal effect (XOR) stays switched off at ~1,000 samples. Costs one screen per training, which grows with the square of the genes \\[default: on for gene capsules under the group penalty]."),
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
    coupling.tsv/.png, genes.tsv (ranked genes; top 5 % decisive), pair.tsv where the pair screen
    found an interacting pair (case rates by each gene's interacting axis), train_fraction.tsv with
    --train-fraction and enrichment.tsv with --gene-sets (gene sets enriched in the decisive genes).
    """
    from genointerp.capsule.train_job import CapsuleTrainRequest, run

    req = CapsuleTrainRequest(
        features=features_path, phenotypes=phenotypes, output=output, phenotype=phenotype, case=case, folds=folds,
        test_fraction=test_fraction, valid_fraction=valid_fraction, epochs=epochs, patience=patience,
        batch_size=batch_size, lr=lr, weight_decay=weight_decay, pair_screen=pair_screen, gene_penalty=gene_penalty,
        lr_decay=lr_decay, hidden=hidden, capsule_channels=capsule_channels, capsule_dim=capsule_dim,
        kernel_size=kernel_size, stride=stride, class_dim=class_dim, routing=routing, primary=primary,
        input_dropout=input_dropout, dropout=dropout, baselines=baselines, train_fraction=_fractions(train_fraction),
        primary_capsule=primary_capsule, gene_sets=gene_sets, min_set_size=min_set_size, max_set_size=max_set_size,
        device=device, threads=threads, seed=seed)
    summary = execute(run, req, force, REPORTER)
    decisive = summary["decisive_genes"]
    chosen = summary["primary_capsule"]
    read_out = "gene capsules' coupling" if chosen is None else f"primary capsule {chosen}"
    pair = summary["interacting_pair"]
    log(f"wrote {output}: {read_out}; decisive genes: {', '.join(decisive[:10])}"
        + (" ..." if len(decisive) > 10 else "") + (f"; interacting pair: {' x '.join(pair)}" if pair else ""))


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
    from genointerp.capsule.predict_job import CapsulePredictRequest, run

    summary = execute(run, CapsulePredictRequest(model_dir=model_dir, features=features_path, output=output,
                                                 device=device, threads=threads), force, REPORTER)
    log(f"scored {summary['samples']} samples")


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
    screen: bool = typer.Option(True, "--screen/--no-screen", help="Start from the best pairs of a pair screen (every gene pair, a least-squares classifier with and without the products of the two genes' PCs; screen.tsv) instead of random subsets; needs --subset-size of at least 2."),
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
    from genointerp.capsule.search_job import CapsuleSearchRequest, run

    req = CapsuleSearchRequest(
        features=features_path, phenotypes=phenotypes, output=output, phenotype=phenotype, case=case,
        population=population, generations=generations, subset_size=subset_size, folds=folds, repeats=repeats,
        gate=gate, screen=screen, size_penalty=size_penalty, elite=elite, mutation_rate=mutation_rate,
        time_budget=time_budget, resume=resume, primary=primary, epochs=epochs, patience=patience,
        batch_size=batch_size, lr=lr, valid_fraction=valid_fraction, hidden=hidden, kernel_size=kernel_size,
        capsule_dim=capsule_dim, class_dim=class_dim, routing=routing, threads=threads, seed=seed)
    best = execute(run, req, force, REPORTER)
    log(f"wrote {output}: best subset {','.join(best['best_genes'])}: capsule {best['cv_capsule']:.3f} vs "
        f"logistic {best['cv_logistic']:.3f} CV accuracy, chance gate {best['chance_threshold']:.3f} "
        f"(fitness {best['fitness']:+.4f}); {best['subsets_evaluated']} subsets evaluated")
