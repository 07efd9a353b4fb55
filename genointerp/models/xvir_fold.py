"""Folding a trained XVir module into the tables of its numpy inference form
(genointerp.models.xvir_folded, whose docstring gives the algebra)."""

from __future__ import annotations

import math
import torch

from genointerp.models.xvir import XVir
from genointerp.models.xvir_folded import FoldedXVir, foldable


def supports(model: XVir) -> bool:
    """Whether `model` can be folded (absolute positions, post-LayerNorm layers)."""
    return foldable(model.config.to_dict())


def fold(model: XVir, threads: int = 1) -> FoldedXVir:
    """The folded form of `model` (float64 arithmetic, float32 tables)."""
    if not supports(model):
        raise ValueError("the folded XVir needs absolute positions and post-LayerNorm layers")
    c = model.config
    d, dh = c.d_model, c.d_model // c.n_heads
    q_scale = torch.ones(3 * d, dtype=torch.float64)
    q_scale[:d] = 1 / math.sqrt(dh)  # the scores' 1/sqrt(d_head), folded into Q
    with torch.no_grad():
        tables = _input_tables(model, q_scale)
        for i, layer in enumerate(model.layers):
            tables.update(_layer_tables(i, layer, q_scale))
        tables["head_w"] = model.head.weight.reshape(-1)  # (n*d,)
        tables["head_b"] = model.head.bias
        arrays = {k: v.detach().float().cpu().contiguous().numpy() for k, v in tables.items()}
    eps = [[float(layer.norm1.eps), float(layer.norm2.eps)] for layer in model.layers]
    shape = {"n_tokens": c.n_tokens, "d_model": d, "n_heads": c.n_heads, "n_layers": c.n_layers, "eps": eps}
    return FoldedXVir(arrays, shape, threads)


def _input_tables(model: XVir, q_scale: torch.Tensor) -> dict[str, torch.Tensor]:
    """rstd, kmer, pos, offset (float64): the first layer's input and Q, K, V."""
    attn, norm = model.layers[0].attn, model.norm
    gamma, beta = norm.weight.double(), norm.bias.double()
    w = attn.in_proj.weight.double() * q_scale[:, None]  # (3d, d)
    b = attn.in_proj.bias.double() * q_scale
    emb = model.embed.weight.double()  # (V, d)
    pos = model.positions.table[: model.config.n_tokens].double()  # (n, d)
    wg = w * gamma  # (3d, d)
    centre = torch.cat([gamma, wg.sum(1)])  # (4d,): what the mean of z multiplies
    # z = e_t + p_p: its mean is additive, so each table takes its own part's; its variance has the
    # cross term 2 e.p, so 1/std is per (t, p): E[z^2] = (|e|^2 + 2 e.p + |p|^2) / d, in float64
    # so that the difference E[z^2] - mean^2 stays exact enough.
    d = emb.shape[1]
    mean_e, mean_p = emb.sum(1) / d, pos.sum(1) / d  # (V,), (n,)
    mean = mean_e[:, None] + mean_p[None]  # (V, n)
    square = ((emb * emb).sum(1)[:, None] + 2 * emb @ pos.T + (pos * pos).sum(1)[None]) / d
    var = square - mean * mean
    return {
        "rstd": torch.rsqrt(var + norm.eps).reshape(-1),  # row t*n + p
        "kmer": torch.cat([emb * gamma, emb @ wg.T], 1) - mean_e[:, None] * centre,  # (V, 4d)
        "pos": torch.cat([pos * gamma, pos @ wg.T], 1) - mean_p[:, None] * centre,  # (n, 4d)
        # The first layer's attention output bias joins x0's offset: x0 only enters that layer's residual.
        "offset": torch.cat([beta + attn.out_proj.bias.double(), w @ beta + b]),  # (4d,)
    }


def _layer_tables(i: int, layer, q_scale: torch.Tensor) -> dict[str, torch.Tensor]:
    """Layer i's weights, transposed for x @ w; later layers project Q, K, V explicitly."""
    ff_in, ff_out = layer.ff[0], layer.ff[3]
    tables = {f"{i}.wo": layer.attn.out_proj.weight.T, f"{i}.w1": ff_in.weight.T, f"{i}.b1": ff_in.bias,
              f"{i}.w2": ff_out.weight.T, f"{i}.b2": ff_out.bias,
              f"{i}.norm1.weight": layer.norm1.weight, f"{i}.norm1.bias": layer.norm1.bias,
              f"{i}.norm2.weight": layer.norm2.weight, f"{i}.norm2.bias": layer.norm2.bias}
    if i:
        tables[f"{i}.bo"] = layer.attn.out_proj.bias
        tables[f"{i}.wqkv"] = (layer.attn.in_proj.weight.double() * q_scale[:, None]).T
        tables[f"{i}.bqkv"] = layer.attn.in_proj.bias.double() * q_scale
    return tables
