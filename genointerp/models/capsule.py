"""DiseaseCapsule (Luo, Kang, Schönhuth, Nature Machine Intelligence): a capsule network over Gene-PCs.

Two kinds of primary capsules (`primary`):

"conv" (the paper's): Gene-PC vector x (B, F) -> [dropout] -> dense layer + ReLU -> [dropout] -> hidden (B, H) -> 1-D convolution over the hidden
vector (1 input channel, P*D_p output channels, kernel k, stride s) -> primary capsules u
(B, N, D_p) with N = P * L, L = (H - k) // s + 1, squashed -> prediction vectors û_{j|i} = W_ij u_i
(B, C, N, D_c) -> dynamic routing by agreement (r iterations) -> phenotype capsules v (B, C, D_c);
the score of class j is the length |v_j| (in [0, 1)). Coupling coefficients c_ij (B, N, C) say how
much primary capsule i sends to phenotype capsule j; they are the network's interpretation read-out.
Trainable parameters: F*H + H (dense) + P*D_p*k + P*D_p (convolution) + N*C*D_c*D_p (W).

"gene": one primary capsule per gene, N = G. Capsule g sees only its own gene's K_g PCs:
u_g = squash(x_g A_g + b_g) with A_g (K_g, D_p), b_g (D_p,), weights not shared between genes (a
gene's PC axes are its own LD structure: pc1 of one gene and pc1 of another have nothing in common
that a shared map could exploit). The ragged genes are held zero-padded: A (G, K_max, D_p) whose
rows past a gene's K_g are 0 at initialisation and get no gradient (their inputs are masked to 0),
so they stay 0 under Adam with L2 weight decay. The rest (W, routing, lengths) is the conv path's,
so c_gj is directly how much gene g sends to phenotype capsule j. The dense layer, the
convolution and `dropout` are not used. `gene_index` (F,) gives each feature column's gene (0..G-1).
Trainable parameters: G*K_max*D_p (A, of which G*K_max - F rows are padding) + G*D_p (b) + N*C*D_c*D_p (W),
plus (with a `pair`) Q*D_p + D_p for the pair capsule below. `genes_off` (gene numbers): genes whose
slots are all masked like padding, so A_g stays 0 and the gene's capsule is the constant squash(b_g)
(capsule-train's gene screen switched them off before training: fit.screened_out). `columns_off`
(feature column numbers): slots masked the same way in their gene's capsule only (capsule-train's
burden view: the PCs of a gene whose burden column carries what they would add, fit.pcs_screened_out);
the pair capsule below reads all of its two genes' columns but its own `pair_columns_off` (the
burden view of a pair found in its genes' burden columns: their PCs, fit.fit_capsule).

"gene" with `pair` = (a, b): one more primary capsule, last (N = G + 1), for an interacting gene pair
(capsule-train's pair screen finds it): u_pair = squash(z P + p), z = [x_a, x_b, vec(x_a x_b^T)]
(B, Q), Q = K_a + K_b + K_a K_b, P (Q, D_p), p (D_p,): the design of the screen's product model
(pair_screen.pair_design), learned end to end. Gene capsules are linear in their own PCs before
the squash, so an exclusive-or of two genes, which no single gene's capsule carries, reaches the
phenotype capsules only through routing's nonlinearity; the products give it a capsule of its own.
With `pair_axes` (w_a (K_a,), w_b (K_b,): each gene's additive-score axis, fitted once in training
and fixed) z gets one more input, last, the rank-1 view (x_a . w_a)(x_b . w_b): Q = K_a + K_b +
K_a K_b + 1; with `pair_products` False z = [x_a, x_b, (x_a . w_a)(x_b . w_b)], Q = K_a + K_b + 1.
With `pair_interaction_axes` (v_a (K_a,), v_b (K_b,): each gene's interacting axis, the rank-1
bilinear term of a logistic fit in training, fixed) one more input after those, (x_a . v_a)(x_b . v_b):
an exclusive-or of two genes has no additive axis to multiply, but it does act along one direction
of each gene. capsule-train gives a pair both axes, the cut points below and no PC products
(fit.fit_capsule); a config.json of an older capsule-train may hold the products, with or without
`pair_axes`, and no cuts.
With `pair_cuts` (cut points c_a (C_a,), c_b (C_b,) on the two interacting scores, fitted in
training as their starting points) z gets, last, the soft steps h_a = sigmoid((x_a . (v_a + d_a) -
c_a - e_a) / pair_cut_width) (B, C_a), h_b (B, C_b) likewise, and every product h_a,i h_b,j:
Q += C_a + C_b + C_a C_b. d_a (K_a,), d_b (K_b,), e_a (C_a,), e_b (C_b,) are learned with the rest
from 0 (`pair_step_axis_a` ...; a learned split: the step's direction and cut move from the
interacting axis and its quantile to where the phenotype steps). A product of two linear scores is
a saddle, while an exclusive-or or a co-occurrence of two genes' risk states is a step in each
score: the 2 x 2 table of h_a, h_b (with the linear terms around it) carries any function of the
two states. Soft, not 0/1: the cut and direction need a gradient, and a sample whose score sits at
a cut would otherwise flip with the last bit of its float32 score.
Trainable parameters with pair_cuts: + K_a + K_b + C_a + C_b.
`group_penalty()` is the group lasso sum_g sqrt(K_g) |A_g|_F that capsule-train adds to the training
loss (--gene-penalty): it drives whole genes' maps to 0, so most of ~100 genes stop feeding noise
into the phenotype capsules (a gene with A_g = 0 sends the same squash(b_g) for every sample).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from genointerp.models.config import ModelConfig


@dataclass(frozen=True)
class CapsuleConfig(ModelConfig):
    ARCHITECTURE: ClassVar[str] = "capsule"
    LABEL: ClassVar[str] = "a capsule"

    n_features: int
    n_classes: int = 2
    hidden: int = 256  # dense layer width H
    primary_channels: int = 32  # capsule channels P of the convolution
    primary_dim: int = 4  # D_p
    kernel_size: int = 9
    stride: int = 2
    class_dim: int = 16  # D_c, the phenotype capsules' dimension
    routing_iterations: int = 3
    m_plus: float = 0.9  # margin loss
    m_minus: float = 0.1
    lambda_: float = 0.5
    input_dropout: float = 0.0  # dropout on the Gene-PC input (training only)
    dropout: float = 0.0  # dropout on the dense layer's output (training only)
    # "conv" is the default here so that a config.json written before the option existed loads as
    # what it is; capsule-train picks its own default (--primary)
    primary: str = "conv"
    gene_index: tuple[int, ...] = ()  # "gene": the gene (0..G-1) of every feature column, (F,)
    pair: tuple[int, ...] = ()  # "gene": two gene numbers with a pair capsule of their PCs' products, or ()
    # with a pair: each gene's additive-score axis over its columns (K_a floats, K_b floats), fitted in
    # training (fit.pair_axes), whose product joins the pair capsule's inputs; () for none
    pair_axes: tuple[tuple[float, ...], ...] = ()
    # with a pair: whether the pair capsule reads every PC product PC_a x PC_b (False: the rank-1 view
    # alone, the two genes' PCs and the product of their scores)
    pair_products: bool = True
    # with a pair: each gene's interacting axis over its columns (K_a floats, K_b floats), the rank-1
    # bilinear term fitted in training (fit.interaction_axes), whose product joins the pair capsule's
    # inputs after the additive scores' product; () for none (a config.json written before it)
    pair_interaction_axes: tuple[tuple[float, ...], ...] = ()
    # with pair_interaction_axes: cut points on each gene's interacting score (C_a floats, C_b floats,
    # each increasing), fitted in training (fit.pair_cuts), where the learned split starts; its soft
    # steps (width pair_cut_width, in the scores' sd) and their products join the pair capsule's inputs
    # last; () for none (a config.json written before them)
    pair_cuts: tuple[tuple[float, ...], ...] = ()
    pair_cut_width: float = 0.0
    # "gene": gene numbers whose capsule reads none of its columns (capsule-train's gene screen found no
    # evidence the gene acts: fit.screened_out), so it sends the same squash(b_g) for every sample
    genes_off: tuple[int, ...] = ()
    # "gene": feature columns (0..F-1) that their gene's capsule does not read, masked as genes_off's are
    # (capsule-train's burden view: fit.pcs_screened_out switches off the PCs of a gene whose burden
    # column carries what they would add), () for none (a config.json written before it)
    columns_off: tuple[int, ...] = ()
    # with a pair: columns of its two genes that the pair capsule does not read (capsule-train's burden
    # view of a pair that the pair test found in its genes' burden columns: their PCs), () for none
    pair_columns_off: tuple[int, ...] = ()

    PRIMARY_KINDS: ClassVar[tuple[str, ...]] = ("conv", "gene")

    def __post_init__(self) -> None:
        # config.json gives a list; a tuple keeps the frozen config hashable and == its round trip
        object.__setattr__(self, "gene_index", tuple(self.gene_index))
        object.__setattr__(self, "pair", tuple(self.pair))
        object.__setattr__(self, "genes_off", tuple(self.genes_off))
        object.__setattr__(self, "columns_off", tuple(self.columns_off))
        object.__setattr__(self, "pair_columns_off", tuple(self.pair_columns_off))
        for name in ("pair_axes", "pair_interaction_axes", "pair_cuts"):
            object.__setattr__(self, name, tuple(tuple(float(w) for w in axis) for axis in getattr(self, name)))

    @property
    def n_positions(self) -> int:
        return (self.hidden - self.kernel_size) // self.stride + 1

    @property
    def n_genes(self) -> int:
        return max(self.gene_index) + 1 if self.gene_index else 0

    @property
    def max_pcs(self) -> int:
        """K_max: the most PCs of any gene ("gene" primary capsules)."""
        return max(gene_sizes(self.gene_index)) if self.gene_index else 0

    @property
    def n_primary(self) -> int:
        """Primary capsules N: one per gene, then the pair's ("gene"), or channels x convolution
        positions, ordered channel-major ("conv")."""
        if self.primary == "gene":
            return self.n_genes + (1 if self.pair else 0)
        return self.primary_channels * self.n_positions

    @property
    def pair_inputs(self) -> int:
        """Q = K_a + K_b + K_a K_b (+ 1 with pair_axes, + 1 with pair_interaction_axes, + C_a + C_b
        + C_a C_b with pair_cuts), the pair capsule's inputs (0 without a pair)."""
        if not self.pair:
            return 0
        ka, kb = (gene_sizes(self.gene_index)[g] for g in self.pair)
        ca, cb = (len(c) for c in self.pair_cuts) if self.pair_cuts else (0, 0)
        return (ka + kb + ka * kb * self.pair_products + bool(self.pair_axes) + bool(self.pair_interaction_axes)
                + ca + cb + ca * cb)

    def validate(self) -> None:
        if self.primary not in self.PRIMARY_KINDS:
            raise ValueError(f"primary must be one of {', '.join(self.PRIMARY_KINDS)}, not {self.primary!r}")
        for name in ("n_features", "hidden", "primary_channels", "primary_dim", "kernel_size", "stride",
                     "class_dim", "routing_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.n_classes < 2:
            raise ValueError("n_classes must be at least 2")
        if self.primary == "conv" and self.kernel_size > self.hidden:
            raise ValueError(f"kernel_size {self.kernel_size} is larger than the hidden layer ({self.hidden})")
        for name in ("input_dropout", "dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1)")
        if not 0 <= self.m_minus < self.m_plus <= 1:
            raise ValueError("margins need 0 <= m_minus < m_plus <= 1")
        if self.primary == "gene":
            self._validate_genes()
        elif self.pair or self.pair_axes or self.pair_interaction_axes or self.pair_cuts or self.pair_columns_off:
            raise ValueError("a pair capsule needs gene primary capsules")
        elif self.genes_off or self.columns_off:
            raise ValueError("genes_off and columns_off need gene primary capsules")

    def _validate_genes(self) -> None:
        index = self.gene_index
        if len(index) != self.n_features:
            raise ValueError(f"gene_index gives the gene of {len(index)} columns, the network takes {self.n_features}")
        if any(not isinstance(g, int) or isinstance(g, bool) for g in index):
            raise ValueError("gene_index must hold whole numbers")
        if min(index) < 0 or set(index) != set(range(max(index) + 1)):
            raise ValueError("gene_index must number the genes 0, 1, ... without gaps")
        if self.pair and (len(self.pair) != 2 or len(set(self.pair)) != 2
                          or any(not isinstance(g, int) or isinstance(g, bool) or not 0 <= g < self.n_genes
                                 for g in self.pair)):
            raise ValueError(f"pair must be two different gene numbers below {self.n_genes}")
        for name in ("pair_axes", "pair_interaction_axes"):
            axes = getattr(self, name)
            if axes and (not self.pair or [len(a) for a in axes] != [gene_sizes(index)[g] for g in self.pair]):
                raise ValueError(f"{name} must give one weight per column of each of the pair's two genes")
        if self.pair_cuts:
            if not self.pair_interaction_axes:
                raise ValueError("pair_cuts cut the interacting scores: they need pair_interaction_axes")
            if len(self.pair_cuts) != 2 or any(not c or not all(math.isfinite(v) for v in c)
                                               or any(b <= a for a, b in zip(c, c[1:])) for c in self.pair_cuts):
                raise ValueError("pair_cuts must give each of the pair's two genes finite, increasing cut points")
            if not (math.isfinite(self.pair_cut_width) and self.pair_cut_width > 0):
                raise ValueError("pair_cut_width must be above 0 where pair_cuts are given")
        if self.pair and not (self.pair_products or self.pair_axes or self.pair_interaction_axes):
            raise ValueError("a pair capsule without the PC products needs pair_axes or pair_interaction_axes")
        if any(not isinstance(g, int) or isinstance(g, bool) or not 0 <= g < self.n_genes for g in self.genes_off) \
                or len(set(self.genes_off)) != len(self.genes_off) or set(self.genes_off) & set(self.pair):
            raise ValueError(f"genes_off must be different gene numbers below {self.n_genes}, not the pair's")
        if any(not isinstance(j, int) or isinstance(j, bool) or not 0 <= j < self.n_features for j in self.columns_off) \
                or len(set(self.columns_off)) != len(self.columns_off):
            raise ValueError(f"columns_off must be different column numbers below {self.n_features}")
        if any(not isinstance(j, int) or isinstance(j, bool) or not 0 <= j < self.n_features
               or self.gene_index[j] not in self.pair for j in self.pair_columns_off) \
                or len(set(self.pair_columns_off)) != len(self.pair_columns_off):
            raise ValueError("pair_columns_off must be different column numbers of the pair's two genes")


def gene_sizes(gene_index) -> list[int]:
    """PCs per gene: K_g for g in 0..G-1, from a (F,) sequence of gene numbers."""
    counts = [0] * (max(gene_index) + 1)
    for g in gene_index:
        counts[g] += 1
    return counts


def squash(s: torch.Tensor, dim: int = -1, eps: float = 1e-8) -> torch.Tensor:
    """v = |s|^2 / (1 + |s|^2) * s / |s| along `dim`: same direction, length in [0, 1).

    s: float, any shape -> v of the same shape and dtype.
    """
    sq = (s * s).sum(dim, keepdim=True)
    # eps inside the root keeps the gradient finite at s = 0
    return s * (sq / (1 + sq) / torch.sqrt(sq + eps))


def route(u_hat: torch.Tensor, iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic routing by agreement (Sabour et al. 2017).

    u_hat: float (B, C, N, D) prediction vectors û_{j|i} -> (v (B, C, D) output capsules, c (B, N, C)
    coupling coefficients of the last iteration; each c[b, i] sums to 1 over the C classes). Logits
    start at 0, so one iteration gives the uniform coupling 1/C. Class-major u_hat makes both
    reductions contiguous matrix-vector products (3x faster on CPU than (B, N, C, D) broadcasting).
    """
    b = torch.zeros(u_hat.shape[:3], dtype=u_hat.dtype, device=u_hat.device)  # (B, C, N) logits
    # gradients flow through the last iteration only (as in common CapsNet implementations): the
    # coupling is a routing decision, not a path to train W through; it also halves the backward pass
    frozen = u_hat.detach()
    for it in range(iterations):
        c = torch.softmax(b, dim=1)
        last = it == iterations - 1
        v = squash((c.unsqueeze(2) @ (u_hat if last else frozen)).squeeze(2))  # (B, C, D) = sum_i c_ij û_{j|i}
        if not last:
            b = b + (frozen @ v.unsqueeze(-1)).squeeze(-1)  # agreement <û_{j|i}, v_j>
    return v, c.transpose(1, 2)


def margin_loss(lengths: torch.Tensor, labels: torch.Tensor, m_plus: float = 0.9, m_minus: float = 0.1,
                lambda_: float = 0.5) -> torch.Tensor:
    """lengths float (B, C), labels int64 (B,) class indices -> scalar (0-d, lengths' dtype) mean
    over the batch of sum_k T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2."""
    t = torch.nn.functional.one_hot(labels, lengths.shape[1]).to(lengths.dtype)
    present = t * torch.clamp(m_plus - lengths, min=0) ** 2
    absent = lambda_ * (1 - t) * torch.clamp(lengths - m_minus, min=0) ** 2
    return (present + absent).sum(1).mean()


class CapsuleNet(nn.Module):
    def __init__(self, config: CapsuleConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        c = config
        self.input_drop = nn.Dropout(c.input_dropout)
        if c.primary == "gene":
            self._init_genes()
        else:
            self.dense = nn.Linear(c.n_features, c.hidden)
            self.hidden_drop = nn.Dropout(c.dropout)
            self.conv = nn.Conv1d(1, c.primary_channels * c.primary_dim, c.kernel_size, stride=c.stride)
        # one D_c x D_p matrix per (primary capsule, class); small init keeps early lengths well below 1
        self.W = nn.Parameter(0.01 * torch.randn(c.n_primary, c.n_classes, c.class_dim, c.primary_dim))

    def _init_genes(self) -> None:
        """A (G, K_max, D_p), b (G, D_p) and the padding layout: `gene_columns` int64 (G, K_max), the
        feature column of each slot (column 0 in padding slots), and `gene_mask` float32 (G, K_max),
        1 for real slots. Buffers, not saved: the config's gene_index rebuilds them."""
        c = self.config
        sizes = gene_sizes(c.gene_index)
        columns = torch.zeros(c.n_genes, c.max_pcs, dtype=torch.int64)
        mask = torch.zeros(c.n_genes, c.max_pcs)
        filled = [0] * c.n_genes
        off, columns_off = set(c.genes_off), set(c.columns_off)
        for j, g in enumerate(c.gene_index):
            columns[g, filled[g]], mask[g, filled[g]] = j, float(g not in off and j not in columns_off)
            filled[g] += 1
        self.register_buffer("gene_columns", columns, persistent=False)
        self.register_buffer("gene_mask", mask, persistent=False)
        # group lasso weights sqrt(K_g): a gene is not penalised for having more PCs than another
        self.register_buffer("gene_penalty_weight", torch.tensor(sizes, dtype=torch.float32).sqrt(), persistent=False)
        # nn.Linear's default init per gene, U(-1/sqrt(K_g), 1/sqrt(K_g)): a gene's fan-in is its own PCs
        bound = 1 / torch.tensor(sizes, dtype=torch.float32).sqrt()
        self.gene_weight = nn.Parameter((2 * torch.rand(c.n_genes, c.max_pcs, c.primary_dim) - 1)
                                        * bound[:, None, None] * mask[:, :, None])
        self.gene_bias = nn.Parameter((2 * torch.rand(c.n_genes, c.primary_dim) - 1) * bound[:, None])
        if c.pair:
            for name, g in zip(("pair_a", "pair_b"), c.pair):
                self.register_buffer(name, columns[g, :sizes[g]].clone(), persistent=False)
                read = [float(int(j) not in set(c.pair_columns_off)) for j in columns[g, :sizes[g]]]
                self.register_buffer(f"{name}_mask", torch.tensor(read), persistent=False)
            # fixed, from the config: capsule-predict applies what training fitted
            for names, axes in ((("axis_a", "axis_b"), c.pair_axes), (("joint_a", "joint_b"), c.pair_interaction_axes),
                                (("cut_a", "cut_b"), c.pair_cuts)):
                for name, axis in zip(names, axes):
                    self.register_buffer(name, torch.tensor(axis, dtype=torch.float32), persistent=False)
            if c.pair_cuts:  # the learned split's offsets from the fitted axes and cuts, from 0 (no random draw)
                for name, size in (("pair_step_axis_a", sizes[c.pair[0]]), ("pair_step_axis_b", sizes[c.pair[1]]),
                                   ("pair_step_cut_a", len(c.pair_cuts[0])), ("pair_step_cut_b", len(c.pair_cuts[1]))):
                    setattr(self, name, nn.Parameter(torch.zeros(size)))
            bound = 1 / c.pair_inputs ** 0.5  # nn.Linear's default init over the pair's Q inputs
            self.pair_weight = nn.Parameter((2 * torch.rand(c.pair_inputs, c.primary_dim) - 1) * bound)
            self.pair_bias = nn.Parameter((2 * torch.rand(c.primary_dim) - 1) * bound)

    def primary(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, F) standardised Gene-PCs -> squashed primary capsules u float32 (B, N, D_p):
        one per gene in gene_index order ("gene"), or channel-major ("conv")."""
        c = self.config
        if c.primary == "gene":
            x = self.input_drop(x)
            xg = x[:, self.gene_columns] * self.gene_mask  # (B, G, K_max), padding 0
            u = squash(torch.einsum("bgk,gkd->bgd", xg, self.gene_weight) + self.gene_bias)
            if not c.pair:
                return u
            return torch.cat([u, squash(self.pair_input(x) @ self.pair_weight + self.pair_bias).unsqueeze(1)], dim=1)
        h = self.hidden_drop(torch.relu(self.dense(self.input_drop(x)))).unsqueeze(1)  # (B, 1, H)
        a = self.conv(h)  # (B, P*D_p, L)
        a = a.view(x.shape[0], c.primary_channels, c.primary_dim, c.n_positions)
        return squash(a.permute(0, 1, 3, 2).reshape(x.shape[0], c.n_primary, c.primary_dim))

    def pair_input(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, F) standardised, after input dropout -> z float32 (B, Q): what the pair capsule
        reads (its two genes' columns but pair_columns_off, then the views the config gives: PC products,
        the additive and interacting axes' products, the learned split's soft steps; config.pair_inputs)."""
        c = self.config
        xa, xb = x[:, self.pair_a] * self.pair_a_mask, x[:, self.pair_b] * self.pair_b_mask  # (B, K_a), (B, K_b)
        z = [xa, xb] + ([(xa.unsqueeze(2) * xb.unsqueeze(1)).flatten(1)] if c.pair_products else [])
        if c.pair_axes:  # the rank-1 view: the product of the two genes' additive scores
            z.append(((xa @ self.axis_a) * (xb @ self.axis_b)).unsqueeze(1))
        if c.pair_interaction_axes:  # the product along the two genes' interacting axes
            z.append(((xa @ self.joint_a) * (xb @ self.joint_b)).unsqueeze(1))
        if c.pair_cuts:  # soft steps along the learned split's axes and cuts, and their 2-D products
            ha = torch.sigmoid(((xa @ (self.joint_a + self.pair_step_axis_a)).unsqueeze(1) - self.cut_a
                                - self.pair_step_cut_a) / c.pair_cut_width)  # (B, C_a)
            hb = torch.sigmoid(((xb @ (self.joint_b + self.pair_step_axis_b)).unsqueeze(1) - self.cut_b
                                - self.pair_step_cut_b) / c.pair_cut_width)  # (B, C_b)
            z += [ha, hb, (ha.unsqueeze(2) * hb.unsqueeze(1)).flatten(1)]
        return torch.cat(z, dim=1)

    def read_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, F) standardised -> float32 (B, k): every input the network reads ("gene" only):
        the columns its gene capsules read (of the genes the screen kept, less the columns the burden
        view switched off), in column order, then with a pair capsule its pair_input (Q). What a linear
        model of the same inputs sees (capsule-train's lr_network_inputs baseline)."""
        if self.config.primary != "gene":
            raise ValueError("the network's own inputs are defined for gene primary capsules")
        read = torch.unique(self.gene_columns[self.gene_mask > 0])  # sorted
        parts = [x[:, read]]
        if self.config.pair:
            parts.append(self.pair_input(x))
        return torch.cat(parts, dim=1)

    def gene_norms(self) -> torch.Tensor:
        """|A_g|_F float32 (G,): how strongly each gene's PCs move its capsule ("gene" only)."""
        # the eps keeps the gradient of a gene driven to exactly 0 finite
        return (self.gene_weight.pow(2).sum((1, 2)) + 1e-12).sqrt()

    def group_penalty(self, exempt: tuple[int, ...] = ()) -> torch.Tensor:
        """Group lasso sum_g sqrt(K_g) |A_g|_F over the genes not in `exempt` (gene numbers), a 0-d
        float32 tensor ("gene" primary capsules only)."""
        if self.config.primary != "gene":
            raise ValueError("the gene group penalty needs gene primary capsules")
        terms = self.gene_penalty_weight * self.gene_norms()
        if exempt:
            keep = torch.ones_like(terms)
            keep[list(exempt)] = 0
            terms = terms * keep
        return terms.sum()

    def forward(self, x: torch.Tensor, need_coupling: bool = False):
        """x float32 (B, F) -> lengths float32 (B, C) = class scores in [0, 1); with need_coupling
        also the coupling coefficients c float32 (B, N, C)."""
        u = self.primary(x)
        u_hat = torch.einsum("ncdp,bnp->bcnd", self.W, u)  # (B, C, N, D_c)
        v, coupling = route(u_hat, self.config.routing_iterations)
        lengths = v.norm(dim=-1)
        return (lengths, coupling) if need_coupling else lengths

    def loss(self, lengths: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """lengths float32 (B, C), labels int64 (B,) -> scalar margin loss with the config's margins."""
        c = self.config
        return margin_loss(lengths, labels, c.m_plus, c.m_minus, c.lambda_)


def parameter_count(config: CapsuleConfig) -> int:
    """The closed form of the module docstring (tests hold the module to it)."""
    c = config
    routing = c.n_primary * c.n_classes * c.class_dim * c.primary_dim
    if c.primary == "gene":
        # the learned split's offsets: K_a + K_b on the axes, C_a + C_b on the cuts
        split = sum(gene_sizes(c.gene_index)[g] for g in c.pair) + sum(map(len, c.pair_cuts)) if c.pair_cuts else 0
        return (c.n_genes * (c.max_pcs + 1) * c.primary_dim + (c.pair_inputs + 1) * c.primary_dim * bool(c.pair)
                + split + routing)
    return c.n_features * c.hidden + c.hidden + c.primary_channels * c.primary_dim * (c.kernel_size + 1) + routing
