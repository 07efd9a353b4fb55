"""XVir's folded inference form in numpy: the CPU model of classify-reads, without torch.

The first encoder layer's input is LayerNorm(embed[t] + pos[p]) for k-mer t at position p, and its
Q, K, V projection is linear in that, so both depend on (t, p) alone:

    x0  = γ ⊙ (e_t + p_p − μ_tp) · r_tp + β          (μ, r: mean and 1/std of e_t + p_p)
    qkv = W x0 + b = (W γe_t + W γp_p − μ_tp W γ) · r_tp + (W β + b)

and the mean is additive, μ_tp = μ_t + μ_p (each vector's own mean), so with tables
A = [γ(e − μ_e) | Wγ(e − μ_e)] per k-mer (V, 4d), P = [γ(p − μ_p) | Wγ(p − μ_p)] per position
(n, 4d) and r per (k-mer, position) (V·n,), x0 and qkv together are one gather, one add, one
multiply and one add per element instead of a (n, d) x (d, 3d) GEMM: 14.3 of the built-in
model's 67.8 MFLOP per read. genointerp.models.xvir_fold builds the tables from a trained module (in
float64, so the logits match the module's to float32 rounding, about 1e-6); a viral model folder
stores them beside its weights (genointerp.viral.folded_model).

Why numpy, not torch: importing torch takes 2-3 s of CPU on a 2-core machine, more than
classify-reads needs for most inputs; the tables load in milliseconds, and numpy's float32
GEMMs (OpenBLAS) are as fast as torch's. The element-wise steps between the GEMMs (the
embedding, the softmax's numerators, the division by its sums, bias + ReLU, residual +
LayerNorm) run in compiled kernels (genointerp._fused) that touch each row once: in numpy
they took 45 % of the forward pass, a pass over memory per operation.

Windows go through in micro-batches of MICRO so that a pass's activations (a head's scores
(MICRO, n, n), the feed-forward's (MICRO·n, 4d)) stay in cache. Every micro-batch has that shape
(the last one is padded), or as many rows as its caller says are real (classify-reads' scoring
blocks, which fix that number for every run), and is computed by one thread with single-threaded
BLAS, so a window's logit depends on neither the windows beside it (given its place among them
and their number) nor the number of threads: with `threads` > 1, micro-batches run side by side
in a thread pool (numpy and the kernels release the GIL). Denormals are flushed to zero in every thread that computes, as
torch does for its models (genointerp.runtime.use_threads).

Only what the built-in model family needs is folded: absolute (sinusoidal or learned) positions,
post-LayerNorm layers, no attention masks (`foldable`); other models run through the module.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from genointerp import _fused
from genointerp._scan import flush_denormals
from genointerp.errors import InputError

MICRO = 16  # windows per micro-batch: 16 x 145 tokens keeps a pass's activations within L2/L3
_NONE = np.empty(0, np.float32)  # no bias (genointerp._fused.add_layer_norm)
FORMAT = 2  # of the stored tables; raise when their layout or meaning changes (older files become stale)


def foldable(model_config: dict) -> bool:
    """Whether config.json's "model" entry describes an XVir the folded form can run."""
    return (model_config.get("architecture") == "xvir" and model_config.get("position", "sinusoidal")
            in ("sinusoidal", "learned") and not model_config.get("norm_first", False))


class _Workspace:
    """One thread's buffers for a micro-batch of m windows. Made once: a fresh array per step
    (several MB each) would be a fresh mapping of memory, faulted in page by page, and that took
    longer than the arithmetic."""

    def __init__(self, m: int, n: int, d: int, h: int, d_ff: int) -> None:
        f32 = np.float32
        self.m, self.n = m, n
        self.qkv = np.empty((m, n, 3 * d), f32)
        self.scores, self.row = np.empty((m, n, n), f32), np.empty((m, n, 1), f32)
        self.head, self.attn = np.empty((m, n, d // h), f32), np.empty((m, n, d), f32)
        self.x, self.sum = np.empty((m * n, d), f32), np.empty((m * n, d), f32)
        self.hidden = np.empty((m * n, d_ff), f32)

    def first(self, m: int) -> "_Workspace":
        """The buffers of this workspace's first m windows (views: a pass of fewer windows)."""
        if m == self.m:
            return self
        view, n = _Workspace.__new__(_Workspace), self.n
        view.m, view.n = m, n
        view.qkv, view.scores, view.row = self.qkv[:m], self.scores[:m], self.row[:m]
        view.head, view.attn = self.head[:m], self.attn[:m]
        view.x, view.sum, view.hidden = self.x[: m * n], self.sum[: m * n], self.hidden[: m * n]
        return view


class FoldedXVir:
    """logits float32 (B,) for tokens int (B, n_tokens), from the folded tables.

    tables (float32): rstd (V·n,), kmer (V, 4d), pos (n, 4d), offset (4d,),
    head_w (n·d,), head_b (1,), and per layer i: `i.wo` (d, d), `i.w1` (d, f), `i.b1` (f,),
    `i.w2` (f, d), `i.b2` (d,), `i.norm1.weight`/`.bias`, `i.norm2.weight`/`.bias` (d,), and for
    i > 0 `i.bo` (d,), `i.wqkv` (d, 3d), `i.bqkv` (3d,) (Q's columns scaled by 1/sqrt(d_head)).
    shape: n_tokens, d_model, n_heads, n_layers, and eps (the LayerNorms' eps, per layer [norm1,
    norm2])."""

    def __init__(self, tables: dict[str, np.ndarray], shape: dict, threads: int = 1) -> None:
        self.tables = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tables.items()}
        self.shape = dict(shape)
        self.n, self.d, self.h = shape["n_tokens"], shape["d_model"], shape["n_heads"]
        self.n_layers, self.eps = shape["n_layers"], shape["eps"]
        self.d_head = self.d // self.h
        self.positions = np.arange(self.n)
        self.threads = max(1, int(threads))
        self._pool: ThreadPoolExecutor | None = None
        self._local = threading.local()

    def __call__(self, tokens: np.ndarray, real: np.ndarray | None = None) -> np.ndarray:
        """tokens int (B, n_tokens) -> logits float32 (B,). With `real` (int (B / MICRO,), B a
        multiple of MICRO): micro-batch i's first real[i] windows only, as a forward pass of that
        many rows, the rest (padding) NaN; a window's logit then depends on how many windows its
        micro-batch holds, which its caller fixes (genointerp.viral.classify.blocks)."""
        from threadpoolctl import threadpool_limits

        b = len(tokens)
        if b == 0:
            return np.empty(0, np.float32)
        tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        if tokens.shape[1] != self.n or tokens.min() < 0 or tokens.max() >= len(self.tables["kmer"]):
            raise ValueError(f"tokens must be (B, {self.n}) k-mer ids below {len(self.tables['kmer'])}")
        pad = -b % MICRO
        if pad:
            tokens = np.concatenate([tokens, np.repeat(tokens[:1], pad, axis=0)])
        if real is not None and (len(real) * MICRO != len(tokens) or np.any((real < 1) | (real > MICRO))):
            raise ValueError(f"real must count 1 to {MICRO} windows for each micro-batch of {MICRO}")
        out = np.full(len(tokens), np.nan, np.float32) if real is not None else np.empty(len(tokens), np.float32)

        def one(start: int) -> None:
            m = MICRO if real is None else int(real[start // MICRO])
            out[start : start + m] = self._micro(tokens[start : start + m])

        starts = range(0, len(tokens), MICRO)
        # One BLAS thread per micro-batch: parallel work is over micro-batches, which keeps each
        # window's arithmetic the same for any --threads.
        with threadpool_limits(1, user_api="blas"):
            if self.threads == 1 or len(starts) == 1:
                flush_denormals()
                for start in starts:
                    one(start)
            else:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="xvir", initializer=flush_denormals)
                list(self._pool.map(one, starts))
        return out[:b]

    def _workspace(self) -> "_Workspace":
        """This thread's buffers (made at its first micro-batch)."""
        work = getattr(self._local, "work", None)
        if work is None:
            work = self._local.work = _Workspace(MICRO, self.n, self.d, self.h, self.tables["0.w1"].shape[1])
        return work

    def _micro(self, tokens: np.ndarray) -> np.ndarray:
        """tokens int64 (m, n), m <= MICRO -> logits float32 (m,)."""
        t, m, n, d = self.tables, tokens.shape[0], self.n, self.d
        w = self._workspace().first(m)
        # the embedding LayerNorm's output (+ out_proj bias) into x (m n, d), Q, K, V into qkv (m, n, 3d)
        _fused.embed(t["kmer"], t["pos"], t["rstd"], t["offset"], tokens, w.x, w.qkv, n, d)
        for i in range(self.n_layers):
            if i:
                np.matmul(w.x, t[f"{i}.wqkv"], out=w.qkv.reshape(m * n, 3 * d))
                w.qkv += t[f"{i}.bqkv"]
            self._layer(i, w)
        return w.x.reshape(m, n * d) @ t["head_w"] + t["head_b"]

    def _layer(self, i: int, w: "_Workspace") -> None:
        """Post-LN encoder layer i on w.x (m·n, d), in place, given w.qkv (m, n, 3d)."""
        t, d, dh, qkv = self.tables, self.d, self.d_head, w.qkv
        scores, row = w.scores, w.row
        for j in range(self.h):
            q, k, v = (qkv[..., s * d + j * dh : s * d + (j + 1) * dh] for s in range(3))  # (m, n, dh) each
            np.matmul(q, k.transpose(0, 2, 1), out=scores)  # (m, n, n), Q already scaled
            _fused.softmax_numerators(scores, row, self.n)
            # the softmax's division after the product with V: (m, n, dh) values to divide, not (m, n, n)
            np.matmul(scores, v, out=w.head)
            _fused.divide_rows(w.head, row, w.attn, dh, d, j * dh)
        np.matmul(w.attn.reshape(-1, d), t[f"{i}.wo"], out=w.sum)
        _fused.add_layer_norm(w.x, w.sum, t[f"{i}.bo"] if i else _NONE, t[f"{i}.norm1.weight"],
                              t[f"{i}.norm1.bias"], self.eps[i][0], d)
        np.matmul(w.x, t[f"{i}.w1"], out=w.hidden)
        _fused.bias_relu(w.hidden, t[f"{i}.b1"], w.hidden.shape[1])
        np.matmul(w.hidden, t[f"{i}.w2"], out=w.sum)
        _fused.add_layer_norm(w.x, w.sum, t[f"{i}.b2"], t[f"{i}.norm2.weight"], t[f"{i}.norm2.bias"],
                              self.eps[i][1], d)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


META = "genointerp_folded"  # the one metadata entry (a JSON object): several would be written in any order


def source_digest(weights: Path, model_config: dict) -> str:
    """SHA-256 (hex) of what tables are folded from: the weights file's bytes and the model's
    config.json entry. Stored tables are used only beside those."""
    h = hashlib.sha256(json.dumps(model_config, sort_keys=True).encode())
    with open(weights, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def save_folded(engine: FoldedXVir, path: Path, weights: Path, model_config: dict) -> None:
    """Store `engine`'s tables at `path` (written beside it and renamed: readers see all or none),
    recording the format and the digest of the weights and model config they were folded from."""
    from safetensors.numpy import save_file

    meta = {"format": FORMAT, "digest": source_digest(weights, model_config), "shape": engine.shape}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        save_file(engine.tables, tmp, metadata={META: json.dumps(meta, sort_keys=True)})
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _metadata(path: Path) -> dict | str:
    """The stored tables' metadata, or a str saying why it cannot be read."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="np") as fh:
            meta = json.loads((fh.metadata() or {}).get(META, "null"))
    except (OSError, ValueError, SafetensorError) as exc:
        return f"damaged ({exc})"
    return meta if isinstance(meta, dict) else "damaged (no genointerp metadata)"


def _usable_metadata(path: Path, weights: Path, model_config: dict) -> dict | str:
    """The stored tables' metadata where they can be used beside `weights` and `model_config`, else
    a str saying why not (missing, another format, folded from other weights or settings, damaged);
    reads only the file's header (and hashes the weights)."""
    if not path.is_file():
        return "missing"
    meta = _metadata(path)
    if isinstance(meta, str):
        return meta
    if meta.get("format") != FORMAT:
        return "stale (an older genointerp's format)"
    if meta.get("digest") != source_digest(weights, model_config):
        return "stale (folded from other weights or settings)"
    return meta


def stale_folded(path: Path, weights: Path, model_config: dict) -> str | None:
    """Why the stored tables at `path` cannot be used beside `weights` and `model_config`, None
    when they can (_usable_metadata)."""
    meta = _usable_metadata(path, weights, model_config)
    return meta if isinstance(meta, str) else None


def load_folded(path: Path, weights: Path, model_config: dict, threads: int = 1) -> FoldedXVir | str:
    """The stored tables at `path` as a FoldedXVir, or a str saying why they are not to be used
    (stale_folded). Tables whose header is current but whose data does not read are an InputError:
    a damaged file, not an old one (nor a silent detour through torch)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    meta = _usable_metadata(path, weights, model_config)
    if isinstance(meta, str):
        return meta
    try:
        return FoldedXVir(load_file(str(path)), meta["shape"], threads)
    except (OSError, ValueError, KeyError, TypeError, SafetensorError) as exc:
        raise InputError(f"{path}: damaged or not a safetensors file ({exc})") from None
