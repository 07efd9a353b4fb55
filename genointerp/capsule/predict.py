"""Scoring with a trained capsule network: capsule-predict's, and capsule-train's test output.

Output TSV: sample, p_<class> for every class, call. p = phenotype-capsule lengths normalised to
sum 1 over the classes (raw lengths are independent numbers in [0, 1); normalised ones read as
class probabilities); call = the class with the longest capsule.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from genointerp.capsule.interpret import gene_index
from genointerp.errors import InputError
from genointerp.io.features import Features
from genointerp.io.jsonfile import is_name_list
from genointerp.models.capsule import CapsuleConfig, CapsuleNet


@torch.inference_mode()
def capsule_lengths(model: CapsuleNet, x: np.ndarray, device: str, batch_size: int = 512) -> np.ndarray:
    """Phenotype-capsule lengths float64 (n, C) for standardised x (n, F).

    Every forward pass takes exactly `batch_size` rows (the last one padded with zero rows): a GPU's
    matrix kernels are chosen by shape, so without it a sample's lengths moved in the 6th decimal
    with the number of samples scored beside it (capsule-train's test rows against capsule-predict's
    whole table). The CPU gives the same bits either way."""
    out = [torch.zeros(0, model.config.n_classes)]
    for a in range(0, len(x), batch_size):
        rows = x[a:a + batch_size]
        block = np.zeros((batch_size, x.shape[1]), np.float32)
        block[:len(rows)] = rows
        out.append(model(torch.from_numpy(block).to(device))[:len(rows)].cpu())
    return torch.cat(out).double().numpy()


def class_probabilities(lengths: np.ndarray) -> np.ndarray:
    """Lengths (n, C) normalised to sum 1 per sample; the call (argmax) is the same as on raw lengths."""
    return lengths / np.clip(lengths.sum(1, keepdims=True), 1e-12, None)


def model_fields(config: dict, model_dir: str, network: CapsuleConfig) -> tuple[list[str], dict, list[str]]:
    """(feature columns, scaler dict, class names) from a capsule model's config.json, checked
    against the network it describes (`network`, its 'model' entry as load_model_dir built it): a
    missing or malformed entry is one InputError, like the other damage load_model_dir refuses,
    instead of a KeyError or NaN predictions later."""
    where = f"{model_dir}/config.json"
    n_features, n_classes = network.n_features, network.n_classes
    damaged = "the model directory is damaged or was not written by capsule-train"

    def entry(name: str, key: str) -> object:
        value = config.get(name)
        return value.get(key) if isinstance(value, dict) else None

    columns = entry("features", "columns")
    if not is_name_list(columns):
        raise InputError(f"{where}: no 'features' entry with a 'columns' list of names; {damaged}")
    if len(columns) != n_features or len(set(columns)) != len(columns):
        raise InputError(f"{where}: 'features' lists {len(columns)} columns ({len(set(columns))} distinct), "
                         f"the network takes {n_features}; {damaged}")
    # gene capsules read columns by gene: a grouping that disagrees with the names would feed one
    # gene's capsule another gene's PCs without any error
    if network.primary == "gene" and tuple(gene_index(columns)) != network.gene_index:
        raise InputError(f"{where}: the model's gene_index does not group its 'features' columns by gene "
                         f"(chrom:gene of chrom:gene:pcN); {damaged}")
    try:
        mean, sd = (np.asarray(entry("scaler", key), dtype=np.float64) for key in ("mean", "sd"))
        ok = (mean.shape == sd.shape == (n_features,) and np.isfinite(mean).all() and np.isfinite(sd).all()
              and (sd > 0).all())
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"{where}: no valid 'scaler' entry ({n_features} finite means and positive sds); {damaged}")
    classes = entry("phenotype", "classes")
    if not is_name_list(classes) or len(classes) != n_classes or len(set(classes)) != n_classes:
        raise InputError(f"{where}: no valid 'phenotype' entry (a 'classes' list of {n_classes} distinct names); "
                         f"{damaged}")
    return columns, config["scaler"], classes


def check_transform(config: dict, features: Features, source: str) -> None:
    """InputError when `features` come from another gene-pca transform than the model's training
    features: both record the transform's digest (transform_sha256, genointerp.genotypes.pca.
    Transform.fingerprint; capsule-train keeps its features' in config's features.provenance).
    PCs fitted anew, even on the same genes, have other axes and signs, and every probability would
    be wrong without a word. Features or models that record none (a TSV, an older genointerp) are
    not checked."""
    entry = config.get("features")
    provenance = entry.get("provenance") if isinstance(entry, dict) else None
    trained = provenance.get("transform_sha256") if isinstance(provenance, dict) else None
    given = features.info.get("transform_sha256")
    if isinstance(trained, str) and isinstance(given, str) and trained != given:
        fitted = entry.get("source", "its training features")
        raise InputError(f"{source}: made by another gene-pca transform than the model's (transform_sha256 "
                         f"{given[:12]}, the model's {trained[:12]}): PCs fitted anew have other axes; project the "
                         f"cohort with gene-pca --apply on the model's feature folder ({fitted})")


def burden_features(config: dict, features: Features, source: str) -> Features:
    """`features` with the model's burden columns (config.json's `burden`, burden.py) computed from the
    feature folder's SNP dosages as in training; `features` as they are for a model without them."""
    from genointerp.capsule.burden import with_burden
    from genointerp.io.features import read_dosages

    burden = config.get("burden")
    if not isinstance(burden, dict) or not burden.get("genes"):
        return features
    dosages = read_dosages(source, len(features.samples))
    if dosages is None:
        raise InputError(f"{source}: the model reads per-gene burden columns (capsule-train --burden-maf), which "
                         "need SNP dosages: project the cohort with gene-pca --apply --keep-dosages")
    return with_burden(features, dosages, burden["genes"], source)


def model_matrix(features: Features, columns: list[str], source: str, warn: Callable[[str], None]) -> np.ndarray:
    """float64 (n, len(columns)): the model's feature columns in the model's order.

    A missing column is an error; extra columns are dropped with a warning.
    """
    where = {c: i for i, c in enumerate(features.columns)}
    missing = [c for c in columns if c not in where]
    if missing:
        raise InputError(f"{source}: {len(missing)} of the model's {len(columns)} feature columns are missing, "
                         f"e.g. {missing[0]!r}")
    extra = len(features.columns) - len(columns)
    if extra:
        warn(f"{source}: ignoring {extra} feature column(s) the model was not trained on")
    return features.matrix[:, [where[c] for c in columns]].astype(np.float64)


def predictions_table(samples: list[str], probabilities: np.ndarray, classes: list[str],
                      truth: list[str] | None = None) -> str:
    """probabilities (n, C) -> TSV text; `truth` adds a class column (capsule-train's test set)."""
    head = ["sample", *(f"p_{c}" for c in classes), "call"] + (["class"] if truth is not None else [])
    lines = ["\t".join(head)]
    calls = probabilities.argmax(1)
    for i, name in enumerate(samples):
        cells = [name, *(f"{v:.6f}" for v in probabilities[i]), classes[calls[i]]]
        lines.append("\t".join(cells + ([truth[i]] if truth is not None else [])))
    return "\n".join(lines) + "\n"
