"""What a capsule-train model directory holds besides the result tables' text: the weights and
config.json (feature columns, classes, scaler, training settings), the test predictions and the
interpretation read-outs (coupling.tsv/.png, genes.tsv, and pair.tsv where the pair screen spared a
pair)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from genointerp.capsule import interaction
from genointerp.capsule import interpret as interp
from genointerp.capsule.predict import class_probabilities, predictions_table
from genointerp.capsule.protocol import TrainResult
from genointerp.capsule.settings import CapsuleSettings, settings_dict
from genointerp.capsule.tables import curve_table, folds_table, history_table, results_table, split_table
from genointerp.io.features import Features, Phenotypes
from genointerp.model_folder import save_model_dir
from genointerp.models.capsule import CapsuleConfig


class ReadOuts(NamedTuple):
    """What write_model_dir read out of the trained model, for the log and the job's summary."""

    primary_capsule: int | None  # the conv capsule the gene scores read; None for gene primary capsules
    genes: list[dict]  # ranked gene rows (genes.tsv)
    interaction: dict | None  # config.json's interaction: the spared pair's evidence; None where none was spared
    pair_line: str | None  # the log line saying whether that pair interacts


def write_model_dir(folder: Path, r: TrainResult, x: np.ndarray, y: np.ndarray, samples: list[str],
                    features: Features, features_path: str, pheno: Phenotypes, phenotypes_path: str,
                    config: CapsuleConfig, s: CapsuleSettings, primary_capsule: int | None,
                    burden: dict | None = None) -> ReadOuts:
    """Fill a capsule-train model directory: weights + config.json, the result tables, the test
    predictions and the read-outs. x float (n, F) aligned features, y int (n,) classes; `burden`:
    the burden columns' plan (burden.py: {maf_below, genes}), saved for capsule-predict."""
    # interpretation on the samples the final model was trained on, standardised as it saw them
    xs = r.scaler(x[r.split.train])
    coupling = interp.mean_coupling(r.model, xs, y[r.split.train], 2, s.device)
    by_gene = config.primary == "gene"
    chosen = None if by_gene else (interp.default_primary(coupling, case=1) if primary_capsule is None else primary_capsule)
    genes = interp.gene_scores(r.model, xs, features.columns, chosen, coupling)
    read_out = ({"gene_score": "mean over classes t of c[t|t] of the gene's capsule, less 1/C"} if by_gene else
                {"primary_capsule": chosen, "primary_capsule_choice": "given" if primary_capsule is not None
                 else "highest mean coupling to the case capsule"})

    pair, pair_line = None, None
    if s.pair_screen and r.model.screened_pair:
        # the pair test's numbers for the spared pair, as fit_capsule found them on these rows
        pair = dict(r.model.pair_evidence)
        groups = interp.gene_groups(features.columns)
        (name_a, cols_a), (name_b, cols_b) = (groups[g] for g in r.model.screened_pair)
        cells = interaction.interaction_rows(xs[:, cols_a].astype(np.float64), xs[:, cols_b].astype(np.float64),
                                             y[r.split.train])
        (folder / "pair.tsv").write_text(interaction.interaction_table(name_a, name_b, cells))
        pair_line = interaction.describe(name_a, name_b, cells, pair)
        pair = {"genes": [name_a, name_b], **pair}

    test_samples = [samples[i] for i in r.split.test]
    info = {
        "task": "binary phenotype from Gene-PCs (DiseaseCapsule)",
        "features": {"columns": features.columns, "source": str(features_path),
                     # scalars only: a feature folder may list every fit sample
                     "provenance": {k: v for k, v in features.info.items() if not isinstance(v, (list, dict))}},
        "phenotype": {"file": str(phenotypes_path), "column": pheno.column, "classes": pheno.classes,
                      "case": pheno.classes[1], "n_samples": len(samples)},
        "scaler": r.scaler.to_dict(),
        "training": {**settings_dict(s), "n_train": int(len(r.split.train)), "n_test": len(test_samples),
                     "final_model": "all non-test samples less the inner validation part",
                     # the genes the final model's group penalty spared (--pair-screen)
                     **({"screened_pair": interp.spared_genes(r.model, features.columns)} if s.pair_screen else {})},
        "test_metrics": r.test_scores.get("capsule"),
        **({"interaction": pair} if pair else {}),
        **({"prs": r.prs} if r.prs else {}),
        **({"burden": burden} if burden else {}),
        "interpretation": read_out,
    }
    save_model_dir(folder, r.model, info)
    (folder / "results.tsv").write_text(results_table(r))
    (folder / "folds.tsv").write_text(folds_table(r))
    (folder / "split.tsv").write_text(split_table(r, samples, y, pheno.classes))
    (folder / "metrics.tsv").write_text(history_table(r.history))
    if len(test_samples):
        (folder / "test_predictions.tsv").write_text(predictions_table(
            test_samples, class_probabilities(r.test_lengths), pheno.classes,
            [pheno.classes[y[i]] for i in r.split.test]))
    if s.train_fractions:
        (folder / "train_fraction.tsv").write_text(curve_table(r))
    (folder / "coupling.tsv").write_text(interp.coupling_table(coupling, pheno.classes,
                                                               *interp.primary_labels(r.model, features.columns)))
    interp.plot_coupling(coupling, pheno.classes, 1 if by_gene else config.primary_channels, folder / "coupling.png",
                         ("gene", "") if by_gene else ("position", "capsule channel"))
    (folder / "genes.tsv").write_text(interp.genes_table(genes))
    return ReadOuts(chosen, genes, pair, pair_line)
