"""Capsule panel: capsule-train, capsule-predict and capsule-search (DiseaseCapsule). Each command
builds its job's request (genointerp.capsule.*_job) and runs it through genointerp.job.execute; the
job modules import torch, so they are imported inside the commands: `genointerp --help` must not
import torch."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command
from genointerp.cli.genotypes import PANEL


@command(
    "capsule-train",
    "genointerp.capsule.train_job:CapsuleTrainRequest",
    job="genointerp.capsule.train_job:run",
    force="an existing model directory",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp capsule-train genepcs/ --phenotypes pheno.tsv -o capsule_model\n\n"
        "  genointerp capsule-train genepcs/ -p pheno.tsv --phenotype T2D --train-fraction 0.1,0.25,0.5,1 -o m\n\n"
        "  genointerp capsule-train genepcs/ -p pheno.tsv --gene-sets c5.go.bp.v2024.1.Hs.symbols.gmt -o m"
    ),
)
def capsule_train(req, result: dict) -> None:
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

    decisive = result["decisive_genes"]
    chosen = result["primary_capsule"]
    read_out = "gene capsules' coupling" if chosen is None else f"primary capsule {chosen}"
    pair = result["interacting_pair"]
    log(f"wrote {req.output}: {read_out}; decisive genes: {', '.join(decisive[:10])}"
        + (" ..." if len(decisive) > 10 else "") + (f"; interacting pair: {' x '.join(pair)}" if pair else ""))


@command(
    "capsule-predict",
    "genointerp.capsule.predict_job:CapsulePredictRequest",
    job="genointerp.capsule.predict_job:run",
    force="an existing output file",
    rich_help_panel=PANEL,
    epilog=("Examples:\n\n  genointerp gene-pca new.vcf.gz --apply genepcs/ -o new_genepcs\n\n"
            "  genointerp capsule-predict capsule_model new_genepcs/ -o predictions.tsv"),
)
def capsule_predict(req, result: dict) -> None:
    """Score samples with a capsule-train model: per-class probabilities and the called class."""

    log(f"scored {result['samples']} samples")


@command(
    "capsule-search",
    "genointerp.capsule.search_job:CapsuleSearchRequest",
    job="genointerp.capsule.search_job:run",
    force="an existing output folder",
    rich_help_panel=PANEL,
    epilog=("Examples:\n\n"
            "  genointerp capsule-search genepcs/ -p pheno.tsv --phenotype T2D -o search\n\n"
            "  genointerp capsule-search genepcs/ -p pheno.tsv --subset-size 2-4 --population 32 --generations 20 "
            "--time-budget 3600 -t 8 -o search"),
)
def capsule_search(req, result: dict) -> None:
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

    log(f"wrote {req.output}: best subset {','.join(result['best_genes'])}: capsule {result['cv_capsule']:.3f} vs "
        f"logistic {result['cv_logistic']:.3f} CV accuracy, chance gate {result['chance_threshold']:.3f} "
        f"(fitness {result['fitness']:+.4f}); {result['subsets_evaluated']} subsets evaluated")
