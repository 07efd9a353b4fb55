"""Where and how torch runs: device, precision (autocast), threads, CPU feature detection.

Every command that runs a model goes through here: `use_threads` once for --threads (and
denormals flushed to zero), `device_for` for --device with --precision, `autocast` around
forward passes, and `predict_proba` for batched inference of a binary classifier. A shared
layer: it imports no method folder and nothing of training. Its module level imports no torch
(the CLI's option types come from here, and `genointerp --help` must stay free of torch); torch
is imported inside the functions that need it.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterator

from genointerp.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np

# cuBLAS's workspace: a fixed one is what makes its matrix products give the same bits on every run
# (torch's reproducibility notes). torch reads the setting once per process, when the first cuBLAS
# handle is made (the first matrix product on a GPU), so it is set here, when any job, model or
# test first imports this module, not where deterministic_kernels is entered: in a process that
# had already run a product on the GPU (a test suite, a notebook, a training run after a model
# ran) setting it there changed nothing, and torch's check of the variable passed all the same.
# A user's own value stands. Nothing changes on the CPU.
CUBLAS_WORKSPACE = ":4096:8"
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


class Precision(str, Enum):
    """--precision: fp32, or autocast to bf16 (CPU or CUDA) or fp16 (CUDA only)."""

    fp32 = "32"
    bf16 = "bf16"
    fp16 = "16"


class PrecisionUnsupported(UsageError):
    """--precision asks for an autocast type the device does not have (fp16 on CPU)."""


def usable_threads(requested: int) -> int:
    """--threads capped at the CPUs this process may run on (affinity/cgroup aware)."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(requested, available))


def single_threaded_numpy_blas() -> None:
    """For a command whose numpy never asks OpenBLAS for more than one thread (classify-reads'
    folded model runs its GEMMs single-threaded by design, genointerp.models.xvir_folded): numpy's
    OpenBLAS otherwise starts a thread per CPU as numpy loads, which spins 0.05-0.1 s of CPU at
    every start, on the core another process of the run or another job needs. Only effective
    before numpy is first imported, and never over the user's own OPENBLAS_NUM_THREADS."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def reuse_freed_memory() -> bool:
    """Have glibc's malloc serve blocks of up to 32 MB from its heap and keep up to 128 MB freed at
    the heap's top, where by default a block over its threshold (128 KB at first) is mapped fresh
    from the kernel and handed back when freed. A classify-reads batch makes and frees arrays of
    some 10 MB; in a worker process they kept coming back page by page from the kernel: 220,000
    page faults and 0.7-0.9 s of system time per 1.6 million reads at -t 2 (34,000 and 0.4 s
    so). Processes forked after this call keep the settings. False where the C library has no
    mallopt (not glibc)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, 32 << 20)) and bool(mallopt(m_trim_threshold, 128 << 20))


# what a job left for the program's end (end_at_once): held, never freed, until the process ends
_LEFT_TO_EXIT: list = []


def end_at_once(*left) -> None:
    """Ask the program to end at once once this command has succeeded (genointerp.__main__: its
    outputs committed and closed, the standard streams flushed, then os._exit), holding `left`
    (objects whose freeing only costs time, such as classify-reads' aligner: 65 MB of minimap2's
    index, 0.016-0.02 s to free) until then. The interpreter's own end (its modules torn down,
    every object left freed) and that freeing cost 0.025-0.04 s of a 1.3 s run, on one core after
    the outputs are written. Only the program's main ends so; a caller running jobs in its own
    process (a library user, a test) holds the last job's `left` until the next asks."""
    _LEFT_TO_EXIT[:] = [left]


def ends_at_once() -> bool:
    """Whether a command asked the program to end at once (end_at_once)."""
    return bool(_LEFT_TO_EXIT)


def use_threads(requested: int) -> int:
    """Set torch up for this process, once per command before any model runs: intra-op threads to
    --threads (capped by `usable_threads`), and denormals flushed to zero. Returns the number of
    threads set, for whatever else of the command runs in parallel (e.g. a random forest).

    Flushing denormals: float32 results below about 1e-38 in magnitude (float64: 2e-308) become 0,
    and such inputs count as 0. Training and inference lose nothing they could measure, and a CPU
    that handles denormals in microcode no longer crawls when they appear: train-xvir with
    --d-model 256 --layers 2 did not finish an epoch in 7 minutes without it (36 s with it), and a
    SIGTERM waited for minutes inside one backward pass. Torch's thread pool inherits the setting
    when its first parallel operation starts it: hence once, before any model runs."""
    import torch

    threads = usable_threads(requested)
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)  # False where the CPU cannot (no SSE3): denormals are then kept
    return threads


def resolve_device(requested: str) -> str:
    """The torch device for --device auto|cpu|cuda|cuda:N, refusing anything else with one line.

    Under torchrun, plain `cuda` is this rank's GPU (LOCAL_RANK)."""
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", requested):
        raise UsageError(f"--device {requested}: expected auto, cpu, cuda or cuda:N")
    if requested == "cpu" or (requested == "auto" and not _gpu_driver_present()):
        return "cpu"  # without importing torch (2-3 s on a small machine): no driver, no CUDA device
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {requested}: no CUDA device is available")
    if ":" in requested and int(requested.split(":")[1]) >= torch.cuda.device_count():
        raise InputError(f"--device {requested}: only {torch.cuda.device_count()} CUDA device(s) here")
    if requested == "cuda" and "LOCAL_RANK" in os.environ:
        return f"cuda:{os.environ['LOCAL_RANK']}"
    return requested


def _gpu_driver_present() -> bool:
    """Whether an NVIDIA (or ROCm) kernel driver is loaded: torch can find a CUDA device only then."""
    return any(os.path.exists(p) for p in ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd"))


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX) rather than emulating it."""
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def device_for(requested: str, precision: Precision | str, warn: Callable[[str], None]) -> str:
    """The torch device for --device, checked against --precision: fp16 autocast needs CUDA
    (PrecisionUnsupported otherwise); bf16 on a CPU that emulates it runs, with a warning."""
    device = resolve_device(requested)
    if precision == Precision.fp16 and not device.startswith("cuda"):
        raise PrecisionUnsupported("16 needs a CUDA device; on CPU use bf16")
    if precision == Precision.bf16 and device == "cpu" and not cpu_has_bf16():
        warn("this CPU has no native bf16 (AVX512-BF16 or AMX): bf16 is emulated and several times "
             "slower than --precision 32")
    return device


def job_device(requested: str, precision: Precision | str, warn: Callable[[str], None]) -> str:
    """`device_for` in a job: an unsupported --precision is that option's one-line UsageError."""
    try:
        return device_for(requested, precision, warn)
    except PrecisionUnsupported as exc:
        raise UsageError(f"--precision: {exc}") from None


def autocast(device: str, precision: str):
    """The autocast context for a forward pass: none for "32", else bf16 (also on CPU, where the
    module runs about 1.6x faster on CPUs with AVX512-BF16) or, on CUDA, fp16 for "16"."""
    import torch

    if precision == "32":
        return torch.autocast("cpu", enabled=False)
    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
    return torch.autocast("cpu", dtype=torch.bfloat16)


@contextmanager
def deterministic_kernels(device: str) -> Iterator[None]:
    """Training on a CUDA device with kernels that give the same bits on every run (torch's
    deterministic algorithms, cuBLAS with a fixed workspace, attention by its plain formula), so
    that a seed, or an interrupted run resumed from its checkpoint, gives the weights of an
    uninterrupted one there as on the CPU. An operation that has no deterministic CUDA kernel warns
    instead of failing. Nothing changes on the CPU, whose kernels are deterministic already; the
    previous settings come back on exit."""
    if not device.startswith("cuda"):
        yield
        return
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)  # set at import already (see there)
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        # the fused memory-efficient attention adds its backward pass in atomic order (seen on an
        # H200 with torch 2.11: it warns, and stays non-deterministic, under warn_only)
        with sdpa_kernel(SDPBackend.MATH):
            yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def predict_proba(model, tokens: np.ndarray, device: str, precision: str = "32", batch_size: int = 1024) -> np.ndarray:
    """P(positive) float64 (n,) of a binary classifier returning logits (B,) for token rows
    int64 (B, n_tokens), given tokens (n, n_tokens); in eval mode, passes of `batch_size` rows."""
    import numpy as np
    import torch

    with torch.inference_mode():
        model.eval()
        out = []
        for a in range(0, len(tokens), batch_size):
            x = torch.from_numpy(np.asarray(tokens[a : a + batch_size], dtype=np.int64)).to(device)
            with autocast(device, precision):
                out.append(torch.sigmoid(model(x).float()).cpu().numpy())
        return np.concatenate(out).astype(np.float64) if out else np.empty(0)
