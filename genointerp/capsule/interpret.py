"""Read-outs of a trained capsule network: coupling coefficients per class and per-gene scores.

coupling.tsv: one row per primary capsule (index i, then its convolution channel and position, or
its gene with `--primary gene`); column `c[j|t]` is the coupling c_ij to phenotype capsule j
averaged over the samples of true class t.

genes.tsv, conv primary capsules: DiseaseCapsule's gene read-out. For one primary capsule i (by
default the one with the highest mean coupling to the case capsule over the case samples), every
gene g gets the score
    mean over samples | |u_i(x with only g's PCs kept)| - |u_i(all PCs zeroed)| |
where "zeroed" means 0 after standardisation, i.e. the training mean.

coupling.tsv's last row, where capsule-train gave the model a pair capsule (an interacting pair:
models/capsule.py), is that capsule, its gene named `chrom:geneA x chrom:geneB`.

genes.tsv, gene primary capsules: capsule g is gene g, so its coupling is the gene's relevance:
    score_g = mean over classes t of c[t|t]_g - 1/C
how much more than uniformly gene g routes a sample to its own class (class-balanced; for two
classes it equals (c[case|case] - c[case|control]) / 2). 0: the gene routes the same whatever the
class; no masked forward passes are needed. A `map_norm` column gives |A_g|_F, the norm of the
gene's PC -> capsule map: near 0 where capsule-train's group penalty switched the gene off (its
capsule is then the same for every sample, whatever its coupling). Such a gene's coupling can still
lean to the true class (a constant capsule agrees with whichever phenotype capsule a sample's other
genes make long: a switched-off gene, map_norm 0.009, ranked first on a planted burden cohort), but
it says nothing about the sample, so genes whose map_norm is under SWITCHED_OFF of the largest are
ranked after the others (by score among themselves) and are never decisive.

Genes are the `chrom:gene` part of the feature columns `chrom:gene:pcN`. The top 5 % by score are
"decisive".
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from genointerp.models.capsule import CapsuleNet, squash

DECISIVE = 0.05
# a gene capsule's map under this share of the largest gene's counts as switched off. Not a gap in
# the norms (they run on from ~0), but on the family's tuning cohorts (seeds 11-12, h2 0.8, 20
# trainings) it moved 7 planted genes into the decisive genes and none out; the genes it moved out
# were 1-PC genes (TFF1, TFF2, KRTAP10-5, two CH507 genes) with the group penalty's near-zero maps
SWITCHED_OFF = 0.1


@torch.inference_mode()
def mean_coupling(model: CapsuleNet, x: np.ndarray, y: np.ndarray, n_classes: int, device: str,
                  batch_size: int = 256) -> np.ndarray:
    """x (n, F) standardised, y (n,) true classes -> float64 (n_classes true, N primary, C capsules);
    a class without samples gets NaN."""
    total = torch.zeros(n_classes, model.config.n_primary, model.config.n_classes, dtype=torch.float64)
    for a in range(0, len(x), batch_size):
        xb = torch.from_numpy(np.asarray(x[a:a + batch_size], dtype=np.float32)).to(device)
        _, c = model(xb, need_coupling=True)
        total.index_add_(0, torch.from_numpy(y[a:a + batch_size]), c.double().cpu())
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return total.numpy() / counts[:, None, None]


def default_primary(coupling: np.ndarray, case: int) -> int:
    """The primary capsule with the highest mean coupling to the case capsule among case samples."""
    return int(np.argmax(coupling[case, :, case]))


def gene_groups(columns: list[str]) -> list[tuple[str, np.ndarray]]:
    """[(chrom:gene, column indices)] in first-appearance order; a column without ':' is its own gene."""
    groups: dict[str, list[int]] = {}
    for j, name in enumerate(columns):
        groups.setdefault(name.rsplit(":", 1)[0] if name.count(":") >= 2 else name, []).append(j)
    return [(g, np.asarray(idx)) for g, idx in groups.items()]


def gene_index(columns: list[str]) -> list[int]:
    """The gene number (position in gene_groups) of every column: CapsuleConfig.gene_index."""
    index = [0] * len(columns)
    for g, (_, idx) in enumerate(gene_groups(columns)):
        for j in idx:
            index[j] = g
    return index


@torch.inference_mode()
def spared_genes(model: CapsuleNet, columns: list[str]) -> list[str]:
    """Names (chrom:gene, as gene_groups spells them) of the genes the model's group penalty spared
    (its `screened_pair`, set by fit.fit_capsule); [] where it spared none."""
    names = [name for name, _ in gene_groups(columns)]
    return [names[g] for g in model.screened_pair]


def primary_length_per_gene(model: CapsuleNet, x: np.ndarray, groups, primary: int) -> np.ndarray:
    """|u_i| float64 (G, n) for each gene kept alone (others at 0), plus a last row (1, n) for all at 0.

    Exact but cheap: the dense layer is linear before its ReLU, so keeping one gene only needs that
    gene's weight columns, and capsule i depends only on the kernel_size hidden units under its
    convolution window; no full forward pass per gene (genome-wide that would be hours).
    """
    c = model.config
    channel, position = divmod(primary, c.n_positions)
    window = slice(position * c.stride, position * c.stride + c.kernel_size)
    weight = model.dense.weight[window].detach().cpu().double().numpy()  # (k, F)
    bias = model.dense.bias[window].detach().cpu().double().numpy()
    chans = slice(channel * c.primary_dim, (channel + 1) * c.primary_dim)
    conv_w, conv_b = model.conv.weight[chans].detach().cpu().double(), model.conv.bias[chans].detach().cpu().double()
    pre = [x[:, idx] @ weight[:, idx].T + bias for _, idx in groups] + [np.broadcast_to(bias, (len(x), len(bias)))]
    h = torch.relu(torch.from_numpy(np.stack(pre)))  # (G + 1, n, k)
    a = F.conv1d(h.reshape(-1, 1, c.kernel_size), conv_w, conv_b).reshape(len(pre), len(x), c.primary_dim)
    return squash(a).norm(dim=-1).numpy()


def gene_scores(model: CapsuleNet, x: np.ndarray, columns: list[str], primary: int | None,
                coupling: np.ndarray | None = None) -> list[dict]:
    """Ranked [{chrom, gene, n_pcs, score, rank, decisive}] for standardised x (n, F): conv primary
    capsules read primary capsule `primary`; gene primary capsules read `coupling` (C true, G, C),
    mean_coupling's output (see the module docstring)."""
    groups = gene_groups(columns)
    norms = None
    if model.config.primary == "gene":
        n_classes = coupling.shape[0]
        genes = coupling[:, :len(groups)]  # a pair capsule, where there is one, comes after the genes
        score = np.nanmean(genes[np.arange(n_classes), :, np.arange(n_classes)], axis=0) - 1 / n_classes
        with torch.no_grad():
            norms = model.gene_norms().cpu().double().numpy()  # gene g of the model is groups[g]
    else:
        lengths = primary_length_per_gene(model.cpu(), np.asarray(x, dtype=np.float64), groups, primary)
        score = np.abs(lengths[:-1] - lengths[-1]).mean(1)
    off = norms < SWITCHED_OFF * norms.max() if norms is not None else np.zeros(len(groups), bool)
    order = np.lexsort((np.arange(len(groups)), -score, off))  # ties keep input order: deterministic
    top = max(1, math.ceil(DECISIVE * len(groups)))
    rows = []
    for rank, g in enumerate(order, start=1):
        name, idx = groups[g]
        chrom, _, gene = name.rpartition(":")
        rows.append({"chrom": chrom or ".", "gene": gene, "n_pcs": len(idx), "score": float(score[g]),
                     "rank": rank, "decisive": rank <= top and not off[g],
                     **({"map_norm": float(norms[g])} if norms is not None else {})})
    return rows


def genes_table(rows: list[dict]) -> str:
    """genes.tsv: chrom, gene, n_pcs, score, rank, decisive, and map_norm for gene primary capsules."""
    norm = bool(rows) and "map_norm" in rows[0]
    lines = ["chrom\tgene\tn_pcs\tscore\trank\tdecisive" + ("\tmap_norm" if norm else "")]
    lines += [f"{r['chrom']}\t{r['gene']}\t{r['n_pcs']}\t{r['score']:.6g}\t{r['rank']}\t{'yes' if r['decisive'] else 'no'}"
              + (f"\t{r['map_norm']:.6g}" if norm else "") for r in rows]
    return "\n".join(lines) + "\n"


def primary_labels(model: CapsuleNet, columns: list[str]) -> tuple[list[str], list[tuple]]:
    """(column names, one tuple per primary capsule) saying where each primary capsule sits: its
    convolution channel and position, or its gene (chrom:gene)."""
    c = model.config
    if c.primary == "gene":
        names = [name for name, _ in gene_groups(columns)]
        return ["gene"], [(name,) for name in names] + ([("x".join(names[g] for g in c.pair),)] if c.pair else [])
    return ["channel", "position"], [divmod(i, c.n_positions) for i in range(c.n_primary)]


def coupling_table(coupling: np.ndarray, classes: list[str], label_names: list[str], labels: list[tuple]) -> str:
    """coupling (C true, N, C capsules) -> TSV text, one row per primary capsule, labelled as
    primary_labels gives."""
    pairs = [(t, j) for t in range(len(classes)) for j in range(len(classes))]
    lines = ["\t".join(["primary", *label_names, *(f"c[{classes[j]}|{classes[t]}]" for t, j in pairs)])]
    for i in range(coupling.shape[1]):
        lines.append("\t".join([str(i), *map(str, labels[i]), *(f"{coupling[t, i, j]:.6f}" for t, j in pairs)]))
    return "\n".join(lines) + "\n"


def plot_coupling(coupling: np.ndarray, classes: list[str], rows: int, path: Path,
                  axes_labels: tuple[str, str] = ("position", "capsule channel")) -> None:
    """Heatmaps of c_ij, one per (true class, capsule): the N primary capsules laid out as `rows`
    rows (capsule channel x convolution position; one row of genes for gene capsules)."""
    # here: capsule-predict and capsule-search's worker processes import this module and never plot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(classes)
    # colours centred on the uniform coupling 1/C: trained couplings often stay within 0.01 of it
    spread = max(float(np.nanmax(np.abs(coupling - 1 / n))), 1e-6)
    fig, axes = plt.subplots(n, n, figsize=(4.2 * n, 2.8 * n), squeeze=False, layout="constrained")
    for t in range(n):
        for j in range(n):
            ax = axes[t][j]
            im = ax.imshow(coupling[t, :, j].reshape(rows, -1), aspect="auto", cmap="RdBu_r",
                           vmin=1 / n - spread, vmax=1 / n + spread, interpolation="nearest")
            ax.set_title(f"c to capsule {classes[j]!r}, {classes[t]!r} samples", fontsize=8)
            ax.set_xlabel(axes_labels[0], fontsize=7)
            ax.set_ylabel(axes_labels[1], fontsize=7)
            ax.tick_params(labelsize=6)
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
