"""Arithmetic that is hostile on purpose: every model output moves with its batch's shape.

CPU matrix kernels may sum a row's products in an order set by how many rows share the call
and where the row sits among them, so on some CPU a row's float result changes in its 7th digit
with its batch (seen on AVX-512 AMD, on Intel with AMX, under ATen's avx2/default kernels, each
differently). A test that passes on the CPU at hand proves nothing about the next one.

`hostile_arithmetic()` makes that dependence large and certain on every machine: while it is on,
the output of every torch module (and of the folded XVir inference form, which is not a module,
and of torch.sigmoid, which turns logits into the probabilities written) gets added an amount set by its row count R (the product of all but the last axis for a
module's 2-D+ output, the leading axis otherwise) and each row's index r among them, about
1e-4 of the value: enough to change the 6th decimal of most written numbers. A byte-identity test
that still passes under it holds because the runs it compares score every row in the same
shape at the same place, by design, not because this CPU's kernels happen to be kind.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

SCALE = 1e-4


def _shift(rows: int) -> torch.Tensor:
    """float32 (rows,) in [0, 1): a value per row index, different for every row count."""
    r = torch.arange(rows, dtype=torch.int64)
    return ((rows * 7919 + r * 104729 + 13) % 997).float() / 997


def perturb(out):
    """`out` with each row moved by SCALE * shift(R)[r] * (1 + |value|); rows are the leading axis
    of a 1-D or 2-D tensor, and every axis but the last of a higher one. Non-float values, and
    tuples/lists of them, pass through element by element."""
    if isinstance(out, (tuple, list)):
        return type(out)(perturb(o) for o in out)
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.dim() == 0 or out.numel() == 0:
        return out
    flat = out.reshape(out.shape[0], -1) if out.dim() <= 2 else out.reshape(-1, out.shape[-1])
    shift = _shift(flat.shape[0]).to(out.device)[:, None]
    moved = flat + (SCALE * shift * (1 + flat.abs().float())).to(out.dtype)
    return moved.reshape(out.shape)


@contextmanager
def hostile_arithmetic() -> Iterator[None]:
    from genointerp.models.xvir_inference import XVirInference

    handle = torch.nn.modules.module.register_module_forward_hook(lambda module, args, out: perturb(out))
    micro, sigmoid = XVirInference._micro, torch.sigmoid
    XVirInference._micro = lambda self, tokens: perturb(micro(self, tokens))
    torch.sigmoid = lambda x, *a, **k: perturb(sigmoid(x, *a, **k))
    try:
        yield
    finally:
        handle.remove()
        XVirInference._micro, torch.sigmoid = micro, sigmoid
