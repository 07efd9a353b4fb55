"""Genomic Interpreter (ICML 2023 CompBio): a hierarchy of 1D shifted-window (1D-Swin) blocks.

x (B, seq_len, 4) -> stem conv (+ pooling by `patch`) -> tokens (B, seq_len/patch, d_0)
-> K 1D-Swin blocks, block k: (B, n_k, d_k) -> (B, n_k/2, d_(k+1)), d_(k+1) = round(2 d_k / alpha_k)
-> central crop to target_bins tokens (B, target_bins, d_K) -> pre-LN transformer layer(s) with
relative positions -> per-track-group heads -> softplus rates (B, target_bins, n_tracks).

Attention inside windows costs O(n * window) per layer, so the cost grows linearly with seq_len
even with single-nucleotide tokens (patch = 1, the paper's choice); only the transformer layers
after the crop attend over all target bins. LayerNorm throughout, no BatchNorm (the paper's
choice for small batches and multi-GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from genointerp.models.track_heads import Stem, TrackConfig, check_heads, crop_tokens, rebuilt, track_output
from genointerp.nn import EncoderLayer, WindowAttention


@dataclass(frozen=True)
class Swin1DConfig(TrackConfig):
    """Per-stage tuples windows, heads, alphas have one entry per 1D-Swin block (K = len(windows)).
    The defaults are default_track_config("swin1d", 4096, 128, 24, 1, (1,), width=64)."""

    ARCHITECTURE: ClassVar[str] = "swin1d"
    LABEL: ClassVar[str] = "a swin1d"

    d_model: int = 32  # token width after the stem (d_0)
    stem_kernel: int = 15
    # motif detectors in the stem conv; 0: d_model of them. More than d_model are pooled by `patch`,
    # then projected to d_model per token, so only the bp-resolution conv and pooling grow
    stem_filters: int = 0
    patch: int = 1  # bp per token after the stem; 1 = single-nucleotide tokens
    windows: tuple[int, ...] = (16, 16, 16, 16, 16, 16, 16)
    heads: tuple[int, ...] = (2, 2, 2, 2, 3, 3, 2)
    alphas: tuple[float, ...] = (2.0, 2.0, 1.6, 1.6666666666666667, 2.0, 1.7142857142857142, 1.75)
    ff_mult: int = 2  # feed-forward hidden size = ff_mult * width
    transformer_layers: int = 1
    transformer_heads: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "alphas", tuple(float(a) for a in self.alphas))

    @property
    def widths(self) -> list[int]:
        """d_0 .. d_K: token width entering each block, then after the last one."""
        d = [self.d_model]
        for alpha in self.alphas:
            d.append(round(2 * d[-1] / alpha))
        return d

    @property
    def stage_tokens(self) -> list[int]:
        """Token count entering each block."""
        return [self.seq_len // (self.patch * 2 ** k) for k in range(len(self.windows))]

    def validate(self) -> None:
        k = len(self.windows)
        if k < 1 or len(self.heads) != k or len(self.alphas) != k:
            raise ValueError(f"windows, heads and alphas need one entry per stage (got {len(self.windows)}, "
                             f"{len(self.heads)}, {len(self.alphas)})")
        if self.patch < 1 or self.seq_len % self.patch:
            raise ValueError(f"seq_len {self.seq_len} is not a multiple of patch {self.patch}")
        self.validate_common(self.patch * 2 ** k)
        if any(a <= 0 for a in self.alphas):
            raise ValueError("alphas must be positive")
        widths = self.widths
        for stage, (n, w, h, d) in enumerate(zip(self.stage_tokens, self.windows, self.heads, widths)):
            if w < 2:
                raise ValueError(f"stage {stage}: window {w} is too small to shift (need at least 2 tokens)")
            if n % w:
                raise ValueError(f"stage {stage}: token count {n} is not divisible by the window {w}")
            check_heads(d, h, f"stage {stage}")
        if widths[-1] < 1:
            raise ValueError(f"alphas shrink the width to {widths[-1]}")
        if self.transformer_layers < 0:
            raise ValueError("transformer_layers must be >= 0")
        check_heads(widths[-1], self.transformer_heads, "transformer")
        if self.ff_mult < 1 or self.stem_kernel < 1:
            raise ValueError("ff_mult and stem_kernel must be at least 1")
        if self.stem_filters < 0:
            raise ValueError(f"stem_filters must be 0 (d_model) or positive (got {self.stem_filters})")


class FeedForward(nn.Sequential):
    """Pre-LN feed-forward (B, T, D) -> (B, T, D), residual added by the caller."""

    def __init__(self, d: int, mult: int, dropout: float) -> None:
        super().__init__(nn.LayerNorm(d), nn.Linear(d, mult * d), nn.GELU(), nn.Dropout(dropout),
                         nn.Linear(mult * d, d), nn.Dropout(dropout))


class Swin1DBlock(nn.Module):
    """(B, n, d_in) -> (B, n/2, d_out): window MHA + FF, shifted-window MHA + FF (pre-LN residual
    sub-layers), then patch merging: concatenate tokens (2i, 2i+1) -> LayerNorm(2 d_in) -> linear.

    shift defaults to window // 2 (the paper's t); shift=0 gives a block without cross-window mixing.
    """

    def __init__(self, d_in: int, d_out: int, heads: int, window: int, ff_mult: int = 2, dropout: float = 0.0,
                 shift: int | None = None) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_in), nn.LayerNorm(d_in)
        self.attn1 = WindowAttention(d_in, heads, window, 0, dropout)
        self.attn2 = WindowAttention(d_in, heads, window, window // 2 if shift is None else shift, dropout)
        self.ff1, self.ff2 = FeedForward(d_in, ff_mult, dropout), FeedForward(d_in, ff_mult, dropout)
        self.drop = nn.Dropout(dropout)
        self.merge_norm = nn.LayerNorm(2 * d_in)
        self.merge = nn.Linear(2 * d_in, d_out, bias=False)  # Swin's reduction has no bias: LayerNorm has one

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, n, d_in) -> float32 (B, n/2, d_out)."""
        return self.merged(self.second_half(self.first_half(x)))

    def first_half(self, x: torch.Tensor) -> torch.Tensor:
        """Window MHA + FF: (B, n, d_in) -> (B, n, d_in); x may be a run of whole windows cut
        from the block's input at a window border (forward_pair's slices)."""
        x = x + self.drop(self.attn1(self.norm1(x))[0])
        return x + self.ff1(x)

    def second_half(self, x: torch.Tensor, aligned: bool = False) -> torch.Tensor:
        """Shifted-window MHA + FF: (B, n, d_in) -> (B, n, d_in); `aligned`: x is a run of whole
        shifted windows (from a shifted window's first token), attended without the roll."""
        a = self.attn2.aligned(self.norm2(x)) if aligned else self.attn2(self.norm2(x))[0]
        x = x + self.drop(a)
        return x + self.ff2(x)

    def merged(self, x: torch.Tensor) -> torch.Tensor:
        """Patch merging (B, n, d_in) -> (B, n/2, d_out)."""
        b, n, d = x.shape
        return self.merge(self.merge_norm(x.reshape(b, n // 2, 2 * d)))

    def local(self, states: tuple[torch.Tensor, ...], a: int, b: int, v: torch.Tensor):
        """This block's output where an input that equals the recorded one (`states`: the block's
        input, after first_half, after second_half; each (B, n, d_in)) but for tokens [a, b),
        which are `v` (B, b - a, d_in), differs from the recorded output: ((a', b'), values
        (B, b' - a', d_out)), computed only over the windows a change can reach. None when those
        windows would wrap round the end (the shifted windows do): run the block whole then."""
        x_in, x_mid, x_pre = states
        n, w, s = x_in.shape[1], self.attn1.window, self.attn2.shift
        a1, b1 = a // w * w, -(-b // w) * w  # the windows of [a, b)
        a2, b2 = (a1 - s) // w * w + s, -(-(b1 - s) // w) * w + s  # the shifted windows of [a1, b1)
        m0, m1 = a2 - a2 % 2, b2 + b2 % 2  # whole token pairs for the merge
        if a2 < 0 or b2 > n or m1 > n:
            return None
        n_alt = v.shape[0]  # the recorded run may be one window (broadcast) or as many as v
        x = x_in[:, a1:b1].expand(n_alt, -1, -1).clone()
        x[:, a - a1:b - a1] = v
        mid = self.first_half(x)
        x = x_mid[:, a2:b2].expand(n_alt, -1, -1).clone()
        x[:, a1 - a2:b1 - a2] = mid
        pre = self.second_half(x, aligned=True)
        x = x_pre[:, m0:m1].expand(n_alt, -1, -1).clone()
        x[:, a2 - m0:b2 - m0] = pre
        return (m0 // 2, m1 // 2), self.merged(x)


class GenomicInterpreter(nn.Module):
    """x (B, seq_len, 4) float32 one-hot -> (B, target_bins, n_tracks) non-negative rates."""

    def __init__(self, config: Swin1DConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        c, widths = config, config.widths
        filters = c.stem_filters or c.d_model
        self.stem = Stem(filters, c.stem_kernel, c.patch, pool="attention")
        # absent when the stem has d_model filters, so models saved before stem_filters load unchanged
        self.stem_proj = nn.Linear(filters, c.d_model) if filters != c.d_model else None
        self.blocks = nn.ModuleList(
            Swin1DBlock(widths[k], widths[k + 1], c.heads[k], c.windows[k], c.ff_mult, c.dropout)
            for k in range(len(c.windows)))
        self.transformer = nn.ModuleList(
            EncoderLayer(widths[-1], c.transformer_heads, c.ff_mult * widths[-1], c.dropout, norm_first=True,
                         position="relative")
            for _ in range(c.transformer_layers))
        self.output = track_output(widths[-1], c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float32 (B, seq_len, 4) one-hot -> float32 (B, target_bins, n_tracks) rates >= 0."""
        h = self.tokens(self.stem(x).transpose(1, 2))  # (B, seq_len/patch, d_0)
        for block in self.blocks:
            h = block(h)
        return self.head(h, x)

    def tokens(self, h: torch.Tensor) -> torch.Tensor:
        """Stem output (B, n, stem_filters) channels last -> the first block's tokens (B, n, d_0)."""
        return self.stem_proj(h) if self.stem_proj is not None else h

    def head(self, h: torch.Tensor, x: torch.Tensor, best: torch.Tensor | None = None) -> torch.Tensor:
        """The last block's tokens (B, n_K, d_K) and the input x (`best`: the motif scan's
        best_match(x), when known) -> rates (B, target_bins, n_tracks)."""
        h = crop_tokens(h, self.config.crop_bins)  # (B, target_bins, d_K)
        for layer in self.transformer:
            h = layer(h)[0]
        return self.output(h, x, best)

    def forward_pair(self, x_ref: torch.Tensor, x_alt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(forward(x_ref), the rates of x_alt) for one-hot windows x_ref, x_alt (B, seq_len, 4)
        that differ in a few bases (a variant's reference and alternate windows): the reference
        windows run whole and the alternate ones only over the tokens a difference can reach
        (the windows of the changed tokens, then the shifted windows of those, merged, stage by
        stage), the rest taken from the reference's run; a stage whose reach would wrap round the
        window's ends runs whole, as do the stages after it. The alternate rates equal
        forward(x_alt) up to float rounding (the sums are taken over other shapes); the shapes
        depend only on the bases of the windows given, never on how they were batched. x_ref may
        be one window against B alternates (ism's mutations of one window): its run is broadcast."""
        diff = torch.nonzero((x_ref != x_alt).any(-1).any(0))[:, 0]
        states = []
        h = self.tokens(self.stem(x_ref).transpose(1, 2))
        for block in self.blocks:
            mid = block.first_half(h)
            pre = block.second_half(mid)
            states.append((h, mid, pre))
            h = block.merged(pre)
        scan = self.output.scan
        ref_best = scan.best_match(x_ref) if scan is not None else None
        ref = self.head(h, x_ref, ref_best)
        n_alt = x_alt.shape[0]
        if not len(diff):
            return ref, ref.expand(n_alt, -1, -1).clone()
        alt_best = scan.best_match_changed(x_alt, ref_best, int(diff[0]), int(diff[-1]) + 1) if scan is not None else None
        a, b = self.stem.reach(int(diff[0]), int(diff[-1]) + 1)
        v = self.stem.tokens_between(x_alt, a, b)
        if v is None:  # the stem's reach leaves the window: run the alternates whole
            h = self.tokens(self.stem(x_alt).transpose(1, 2))
            for block in self.blocks:
                h = block(h)
            return ref, self.head(h, x_alt, alt_best)
        v = self.tokens(v)
        whole = None  # the alternates' tokens, once a stage runs whole
        for block, st in zip(self.blocks, states):
            if whole is None:
                got = block.local(st, a, b, v)
                if got is not None:
                    (a, b), v = got
                    continue
                whole = st[0].expand(n_alt, -1, -1).clone()
                whole[:, a:b] = v
            whole = block(whole)
        if whole is None:
            whole = h.expand(n_alt, -1, -1).clone()
            whole[:, a:b] = v
        return ref, self.head(whole, x_alt, alt_best)

    def attention_layout(self) -> list[dict]:
        """Every attention module in forward order, with what maps its tokens to coordinates.

        Keys: name (qualified module name), module (the MultiHeadAttention; set its .capture to
        receive weights), kind ("window", "shifted-window" or "global"), stage (block index; K for
        the transformer after the crop), resolution_bp (bp per token), window, shift (tokens),
        tokens (sequence length in tokens), offset_bp (bp of token 0 from the input window start).
        Token t covers input bp [offset_bp + t * resolution_bp, offset_bp + (t + 1) * resolution_bp).
        Window layers attend over (B * tokens / window) windows, so captured weights are
        (B * n_win, H, window, window) with n_win = tokens / window: row b * n_win + w holds, for
        batch item b, tokens (w * window + shift + i) % tokens, i = 0..window-1 (the roll wraps).
        """
        c, layout = self.config, []
        res, tokens = c.patch, c.seq_len // c.patch
        for k, block in enumerate(self.blocks):
            for part in ("attn1", "attn2"):
                wa = getattr(block, part)
                layout.append({"name": f"blocks.{k}.{part}.attn", "module": wa.attn,
                               "kind": "shifted-window" if wa.shift else "window", "stage": k,
                               "resolution_bp": res, "window": wa.window, "shift": wa.shift, "tokens": tokens,
                               "offset_bp": 0})
            res, tokens = res * 2, tokens // 2
        for i, layer in enumerate(self.transformer):
            layout.append({"name": f"transformer.{i}.attn", "module": layer.attn, "kind": "global",
                           "stage": len(self.blocks), "resolution_bp": c.bin_size, "window": c.target_bins,
                           "shift": 0, "tokens": c.target_bins, "offset_bp": c.crop_bins * c.bin_size})
        return layout


def widen_stem(model: GenomicInterpreter, filters: int) -> GenomicInterpreter:
    """A copy of `model` whose stem conv has `filters` (> its current count) filters, computing the
    same function: the old filters keep their weights, the new ones start random like a fresh conv,
    the pooling logits are block-diagonal (old channels' pooling sees old channels only; new ones
    start at 2 x identity like a fresh pool) and the projection to d_model reads the old channels
    as before and the new ones with weight 0, so fine-tuning grows the first layer from the trained
    model instead of starting again."""
    c = model.config
    old = c.stem_filters or c.d_model
    if filters <= old:
        raise ValueError(f"the stem has {old} filters already; widening needs more (got {filters})")
    wide = rebuilt(model, lambda k: not k.startswith(("stem.", "stem_proj.")), stem_filters=filters)
    with torch.no_grad():
        conv, new_conv = model.stem.conv, wide.stem.conv
        fresh = nn.Conv1d(4, filters - old, conv.kernel_size[0])  # from torch's RNG, seeded by the caller
        new_conv.weight.copy_(torch.cat([conv.weight, fresh.weight]))
        new_conv.bias.copy_(torch.cat([conv.bias, fresh.bias]))
        if hasattr(model.stem.pool, "logits"):
            w = 2 * torch.eye(filters)
            w[:old, :old] = model.stem.pool.logits.weight[:, :, 0]
            wide.stem.pool.logits.weight.copy_(w[:, :, None])
        proj = torch.zeros(c.d_model, filters)
        bias = torch.zeros(c.d_model)
        if model.stem_proj is None:
            proj[:, :old] = torch.eye(old)
        else:
            proj[:, :old], bias = model.stem_proj.weight, model.stem_proj.bias
        wide.stem_proj.weight.copy_(proj)
        wide.stem_proj.bias.copy_(bias)
    return wide
