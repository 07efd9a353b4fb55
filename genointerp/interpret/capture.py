"""Capture the attention weights of every attention module of a model during one forward pass.

    with AttentionCapture(model) as cap:
        out = model(x)
    layers = cap.layers()   # one LayerMaps per attention module, in forward order

Each MultiHeadAttention has a `.capture` hook; setting it switches that module from torch's fused
kernel to the explicit softmax(QK^T/sqrt(d) + bias) V, which computes the same numbers (up to
float rounding), and hands the weights over. The hooks are removed on leaving the block.

Every captured layer is laid out the same way, whatever the model:

    weights  float32 (B, heads, windows, query, key)   rows (query) sum to 1
    token_index  int (windows, w)   token (in the layer's own sequence) at each window slot
    grid     TokenGrid: token t covers input bp [offset_bp + t * resolution_bp, ... + span_bp)

Full-attention layers have one window holding all tokens in order. 1D-Swin window layers have
tokens / window windows; a shifted layer's window w holds tokens (w * window + shift + i) % tokens
(the roll wraps, so the last shifted window joins the sequence's end and start).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from genointerp.errors import InputError

# torch is imported inside the two functions that run a model: summaries and plots import this
# module's data classes (TokenGrid, LayerMaps) and stay numpy-only (interpret/__init__).

ATTENTION_ARCHITECTURES = ("xvir", "swin1d", "enformer-like")


@dataclass(frozen=True)
class TokenGrid:
    """Where a layer's tokens sit in the model input (bp from the input window start, or read offset).

    Token t covers [offset_bp + t * resolution_bp, offset_bp + t * resolution_bp + span_bp).
    span_bp = resolution_bp for track models (tokens tile the input); XVir's k-mer tokens step by
    1 bp and span k bp.
    """

    tokens: int
    resolution_bp: int
    offset_bp: int = 0
    span_bp: int | None = None

    def __post_init__(self) -> None:
        if self.span_bp is None:
            object.__setattr__(self, "span_bp", self.resolution_bp)

    def starts(self) -> np.ndarray:
        """int64 (tokens,) first bp of every token."""
        return self.offset_bp + np.arange(self.tokens, dtype=np.int64) * self.resolution_bp

    def centres(self) -> np.ndarray:
        """float64 (tokens,) centre of every token in bp (used for distances)."""
        return self.starts() + (self.span_bp - 1) / 2.0

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "resolution_bp": self.resolution_bp, "offset_bp": self.offset_bp,
                "span_bp": self.span_bp}


@dataclass
class LayerMaps:
    """One attention module's weights for a batch, with what maps its tokens to input positions."""

    index: int  # position in forward order
    name: str  # qualified module name, e.g. blocks.2.attn2.attn
    kind: str  # "window", "shifted-window" or "global"
    stage: int  # 1D-Swin block (K for the transformer after the crop); layer number for XVir
    grid: TokenGrid
    window: int  # tokens per window (= tokens for global layers)
    shift: int  # tokens the sequence is rolled left by before windowing
    weights: np.ndarray = field(repr=False)  # float32 (B, H, n_windows, window, window)

    @property
    def heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n_windows(self) -> int:
        return self.grid.tokens // self.window

    @property
    def token_index(self) -> np.ndarray:
        """int64 (n_windows, window): the token at each window slot."""
        return window_token_index(self.grid.tokens, self.window, self.shift)

    def describe(self) -> dict:
        """JSON-ready description (no arrays)."""
        return {"index": self.index, "name": self.name, "kind": self.kind, "stage": self.stage,
                **self.grid.to_dict(), "window": self.window, "shift": self.shift, "heads": self.heads,
                "n_windows": self.n_windows, "window_bp": self.window * self.grid.resolution_bp}

    def with_weights(self, weights: np.ndarray) -> "LayerMaps":
        """A copy holding `weights`, float32 (B', H, n_windows, window, window) for any B'."""
        return replace(self, weights=weights)


def window_token_index(tokens: int, window: int, shift: int) -> np.ndarray:
    """int64 (tokens / window, window) token indices of every window slot (shifted windows wrap)."""
    return (np.arange(tokens, dtype=np.int64) + shift).reshape(tokens // window, window) % tokens


def attention_layout(model) -> list[dict]:
    """Every attention module of `model` in forward order (see GenomicInterpreter.attention_layout)
    plus span_bp; XVir gets the same keys here (k-mer tokens: resolution 1 bp, span k bp).

    Raises InputError for models without attention modules (CNN track models, capsule networks).
    """
    config = getattr(model, "config", None)
    arch = getattr(config, "ARCHITECTURE", type(model).__name__)
    if arch == "xvir":
        layout = [{"name": f"layers.{i}.attn", "module": layer.attn, "kind": "global", "stage": i,
                   "resolution_bp": 1, "window": config.n_tokens, "shift": 0, "tokens": config.n_tokens,
                   "offset_bp": 0, "span_bp": config.k}
                  for i, layer in enumerate(model.layers)]
    elif hasattr(model, "attention_layout"):
        layout = [{**entry, "span_bp": entry["resolution_bp"]} for entry in model.attention_layout()]
    else:
        layout = []
    if not layout:
        raise InputError(f"a {arch} model has no attention layers; attn-maps needs an XVir model or a "
                         "track model with attention (swin1d, or enformer-like with transformer layers)")
    return layout


def output_grid(model) -> TokenGrid:
    """The grid of the tokens the model's output is read from: the target bins of a track model
    (after the central crop), every k-mer token of XVir (its head reads the flattened sequence)."""
    c = model.config
    if c.ARCHITECTURE == "xvir":
        return TokenGrid(c.n_tokens, 1, 0, c.k)
    return TokenGrid(c.target_bins, c.bin_size, c.crop_bins * c.bin_size)


class AttentionCapture:
    """Context manager: record the weights of every attention module of `model` (attention_layout).

    Every forward pass inside the block is recorded; layers() concatenates the passes along the
    batch axis and clears the record. Nothing about the model's outputs changes beyond float
    rounding (the explicit softmax path instead of the fused kernel).
    """

    def __init__(self, model) -> None:
        self.model = model
        self.layout = attention_layout(model)
        self._calls: list[list] = [[] for _ in self.layout]

    def __enter__(self) -> "AttentionCapture":
        for i, entry in enumerate(self.layout):
            if entry["module"].capture is not None:
                self._remove()
                raise RuntimeError(f"{entry['name']} is already being captured")
            entry["module"].capture = partial(self._hook, i)
        return self

    def __exit__(self, *exc) -> None:
        self._remove()

    def _remove(self) -> None:
        for i, entry in enumerate(self.layout):
            hook = entry["module"].capture
            if isinstance(hook, partial) and getattr(hook.func, "__self__", None) is self:
                entry["module"].capture = None

    def _hook(self, i: int, module, weights) -> None:
        self._calls[i].append(weights.detach().float().cpu())

    def clear(self) -> None:
        self._calls = [[] for _ in self.layout]

    def layers(self) -> list[LayerMaps]:
        """One LayerMaps per attention module (forward order) for every pass since the last call:
        weights float32 numpy (B, H, n_windows, window, window), B summed over the passes."""
        import torch

        out = []
        for i, (entry, calls) in enumerate(zip(self.layout, self._calls)):
            if not calls:
                raise RuntimeError(f"{entry['name']} was not called: run the model inside the capture block")
            tokens, window = entry["tokens"], entry["window"]
            n_win = tokens // window
            parts = []
            for w in calls:
                bw, h, q, k = w.shape
                if q != window or k != window or bw % n_win:
                    raise RuntimeError(f"{entry['name']}: captured weights {tuple(w.shape)} do not match "
                                       f"{n_win} windows of {window} tokens")
                parts.append(w.reshape(bw // n_win, n_win, h, q, k).permute(0, 2, 1, 3, 4))
            weights = torch.cat(parts).contiguous().numpy()
            grid = TokenGrid(tokens, entry["resolution_bp"], entry["offset_bp"], entry["span_bp"])
            out.append(LayerMaps(i, entry["name"], entry["kind"], entry["stage"], grid, window, entry["shift"], weights))
        self.clear()
        return out


def capture_attention(model, x):
    """(model output, [LayerMaps]) of one forward pass of `model` on `x` (inference mode): x as the
    model takes it (XVir: int (B, n_tokens) tokens; track models: float32 (B, seq_len, 4) one-hot),
    each LayerMaps with weights float32 (B, H, n_windows, window, window) on the CPU."""
    import torch

    with torch.inference_mode(), AttentionCapture(model) as cap:
        out = model(x)
    return out, cap.layers()
