"""Arithmetic that is hostile on purpose: every model output moves with its batch's shape.

CPU matrix kernels may sum a row's products in an order set by how many rows share the call
and where the row sits among them, so on some CPU a row's float result changes in its 7th digit
with its batch (seen on AVX-512 AMD, on Intel with AMX, under ATen's avx2/default kernels, each
differently). A test that passes on the CPU at hand proves nothing about the next one.

`hostile_arithmetic()` (in this process) and `subprocess_env()` (for commands run as processes, through
tests/hostile_site/sitecustomize.py) make that dependence large and certain on every machine: while it is on,
the output of every torch module (and of the folded numpy XVir's micro-batches, and of
torch.sigmoid, which turns logits into the probabilities written) gets added an amount set by its
row count R (the product of all but the last axis for a module's 2-D+ output, the leading axis
otherwise) and each row's index r among them, about 1e-4 of the value: enough to change the 6th
decimal of most written numbers. torch is imported only to hook torch: a process that runs the
folded numpy model alone stays without it. A byte-identity test
that still passes under it holds because the runs it compares score every row in the same
shape at the same place, by design, not because this CPU's kernels happen to be kind.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

SCALE = 1e-4


def _shift(rows: int) -> np.ndarray:
    """float32 (rows,) in [0, 1): a value per row index, different for every row count."""
    r = np.arange(rows, dtype=np.int64)
    return (((rows * 7919 + r * 104729 + 13) % 997) / 997).astype(np.float32)


def perturb_array(out: np.ndarray) -> np.ndarray:
    """A 1-D float numpy array with each element moved by SCALE * shift(R)[r] * (1 + |value|)."""
    return (out + SCALE * _shift(len(out)) * (1 + np.abs(out))).astype(out.dtype)


def perturb(out):
    """`out` with each row moved by SCALE * shift(R)[r] * (1 + |value|); rows are the leading axis
    of a 1-D or 2-D tensor, and every axis but the last of a higher one. Non-float values, and
    tuples/lists of them, pass through element by element."""
    import torch

    if isinstance(out, (tuple, list)):
        return type(out)(perturb(o) for o in out)
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.dim() == 0 or out.numel() == 0:
        return out
    flat = out.reshape(out.shape[0], -1) if out.dim() <= 2 else out.reshape(-1, out.shape[-1])
    shift = torch.from_numpy(_shift(flat.shape[0])).to(out.device)[:, None]
    moved = flat + (SCALE * shift * (1 + flat.abs().float())).to(out.dtype)
    return moved.reshape(out.shape)


def hook_modules():
    """Perturb every torch module's output and torch.sigmoid's; returns a function that undoes it."""
    import torch

    handle = torch.nn.modules.module.register_module_forward_hook(lambda module, args, out: perturb(out))
    sigmoid = torch.sigmoid
    torch.sigmoid = lambda x, *a, **k: perturb(sigmoid(x, *a, **k))

    def undo() -> None:
        handle.remove()
        torch.sigmoid = sigmoid

    return undo


def patch_folded_xvir():
    """Perturb the folded XVir form's logits per micro-batch; returns a function that undoes it."""
    from genointerp.models.xvir_folded import FoldedXVir

    micro = FoldedXVir._micro
    FoldedXVir._micro = lambda self, tokens: perturb_array(micro(self, tokens))
    return lambda: setattr(FoldedXVir, "_micro", micro)


@contextmanager
def hostile_arithmetic() -> Iterator[None]:
    """Hostile arithmetic in this process, and in the Python processes it starts meanwhile
    (classify-reads' model process is spawned afresh: subprocess_env's PYTHONPATH reaches it)."""
    import os

    undo = [hook_modules(), patch_folded_xvir()]
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = subprocess_env()["PYTHONPATH"]
    try:
        yield
    finally:
        for u in undo:
            u()
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def subprocess_env(env: dict | None = None) -> dict:
    """`env` (default os.environ) with tests/hostile_site on PYTHONPATH: Python processes started
    with it run under hostile arithmetic from their first torch import."""
    import os

    base = dict(os.environ if env is None else env)
    site = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_site")
    base["PYTHONPATH"] = os.pathsep.join(p for p in (site, base.get("PYTHONPATH")) if p)
    return base
