"""classify-reads' XVir model, in a process of its own.

Most reads never need the model: the evidence decides them. The first HERE_WINDOWS windows that
do are scored in the job's own process, from the stored folded tables (they load in
milliseconds), on a thread of their own (denormals are flushed where the model runs, never where
the evidence is computed). On the tumour-like and human benchmark reads that is every one (5
reads of 320,000), and the process below, about 0.5 s of CPU to start, is never needed. Past them
(or with no stored tables, another device or precision) the next batch holding a read the model
can change starts this process; it loads the model while the job goes on reading, looking up and
writing the batches before it, and the batches then queue for it (classify-reads keeps a bounded
number of batches waiting). `--model-all` and `--evidence model` start it at once. Where torch is
imported in the job's process already the model runs there instead (ModelProcess).

On CPU in float32 the model is the folded numpy form (genointerp.models.xvir_folded), read from
the tables `genointerp index-model` and train-xvir store in the model folder: loading takes
milliseconds and torch is never imported. Without current stored tables (an older folder), or for
another device, precision or a model that does not fold, the process imports torch (2-3 s of CPU
on a 2-core machine) and loads the weights; the classify job says so in one line
(genointerp.viral.classify.classifier.folded_note).

The process is spawned (a fresh interpreter), not forked: a fork would copy whatever torch or CUDA
state the starting process holds (a library caller's, or a test runner's), and neither a torch
thread pool nor a CUDA context survives a fork. It scores windows exactly as the job would in its
own process (`scorer`: the folded CPU form, or the module in passes of PASS, on the request's
device and threads), so the calls are the same bytes either way. With a GPU the job's process has
imported torch to find the device (genointerp.runtime.resolve_device), so the model runs there,
on the GPU, while the workers do the evidence.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import numpy as np

from genointerp.models.xvir_folded import MICRO, FoldedXVir
from genointerp.pools import Done, WorkerDied, end_now, start_processes
from genointerp.runtime import usable_threads
from genointerp.viral.classify.blocks import PASS
from genointerp.viral.folded_model import stored_folded

GPU_PASSES = 64  # passes per CUDA call: 1,024 windows, about 70 GFLOP (a few ms on a current GPU)
# Windows scored in the job's process before the model's own is started: about what one thread
# scores in the 0.5 s of CPU that starting that process costs (a fresh interpreter and its imports)
HERE_WINDOWS = 256


# (tokens (R, n_tokens), keys (R / PASS,) or None, real (R / PASS,) or None) -> P(viral) float64 (R,)
Scorer = Callable[..., np.ndarray]


def folded_scorer(engine: FoldedXVir) -> Scorer:
    """The folded form's scorer: windows (R, n_tokens), R a multiple of PASS, -> P(viral) float64
    (R,), NaN for a pass's padding where `real` (int (R / PASS,), each pass's windows that are not
    padding) says how many windows it has; a micro-batch is a pass, so the passes' keys are not
    needed."""
    assert MICRO == PASS, "the folded model's micro-batches must be the scoring passes"

    def score(tokens: np.ndarray, keys: np.ndarray | None = None, real: np.ndarray | None = None) -> np.ndarray:
        logits = engine(tokens, real).astype(np.float64).reshape(-1, PASS)
        # The sigmoid pass by pass: a vectorised loop computes the elements past its last whole
        # vector by another path, so over the whole array a logit's place would count.
        with np.errstate(over="ignore"):  # exp(-logit) = inf for logit < -709: P = 0, as it should be
            return np.concatenate([1 / (1 + np.exp(-row)) for row in logits]) if len(logits) else np.empty(0)

    return score


def scorer(model, device: str, precision: str, threads: int = 1) -> Scorer:
    """A function from token windows (R, n_tokens), R a multiple of PASS, the passes' keys
    (int (R / PASS,), genointerp.viral.classify.blocks.pass_keys; None: 0, 1, ...) and their real
    windows (int (R / PASS,), blocks.pass_rows; None: all), to P(viral) float64 (R,), computed in
    forward passes of rows [0, PASS), [PASS, 2 PASS), ...: genointerp.viral.classify.blocks lays
    windows out so that those passes are the same in every run.

    In float32 on CPU, an XVir of the paper's family runs in its folded form (numpy, micro-batches of
    a pass's real windows on `threads` threads: genointerp.models.xvir_folded; padding rows NaN);
    otherwise the module runs in whole passes of PASS.
    """
    from genointerp.models.xvir_fold import fold, supports
    from genointerp.runtime import predict_proba

    if device == "cpu" and precision == "32" and supports(model):
        return folded_scorer(fold(model, threads))
    if device.startswith("cuda"):
        return gpu_scorer(model, device, precision)
    return lambda tokens, keys=None, real=None: predict_proba(model, tokens, device, precision, PASS)


def score_windows(model, tokens: np.ndarray, device: str, precision: str) -> np.ndarray:
    """P(viral) float64 (N,) of token windows (N, n_tokens), as classify-reads scores them (scorer,
    on torch's threads) in passes of PASS in input order, the last one padded: train-xvir sets its
    calling threshold on the numbers classify-reads will compute."""
    import torch

    rows = len(tokens)
    if not rows:
        return np.empty(0)
    pad = -rows % PASS
    if pad:
        tokens = np.concatenate([tokens, np.repeat(tokens[:1], pad, axis=0)])
    return scorer(model, device, precision, torch.get_num_threads())(tokens)[:rows]


def gpu_scorer(model, device: str, precision: str) -> Scorer:
    """scorer's CUDA form: passes go to the GPU GPU_PASSES at a time, each in a fixed place.

    One pass per call, as on CPU, left the GPU idle between launches (a 16-window pass is a few
    microseconds of its arithmetic: 41,000 windows/s on an H200, 258,000 in calls of 64 passes).
    Every call has GPU_PASSES slots of PASS windows, and a pass always takes slot key % GPU_PASSES
    (its key, genointerp.viral.classify.blocks.pass_keys, is the same in every run); two passes
    of one slot go to separate calls, and empty slots repeat the first pass. So a window is scored
    in a call of one shape, at one row, in every run: the same bits by design, whatever the
    kernels do with a row's place (tests/hostile.py) and whichever passes share its call.
    """
    from genointerp.runtime import predict_proba

    def score(tokens: np.ndarray, keys: np.ndarray | None = None, real: np.ndarray | None = None) -> np.ndarray:
        passes = len(tokens) // PASS
        if not passes:
            return np.empty(0)
        slots = (np.arange(passes) if keys is None else np.asarray(keys, np.int64)) % GPU_PASSES
        # each pass's call: how many earlier passes took its slot
        order = np.argsort(slots, kind="stable")
        group = np.searchsorted(slots[order], slots[order])  # where each sorted slot's run starts
        call = np.empty(passes, np.int64)
        call[order] = np.arange(passes) - group
        calls = int(call.max()) + 1
        grid = np.broadcast_to(tokens[:PASS], (calls, GPU_PASSES, PASS, tokens.shape[1])).copy()
        grid[call, slots] = tokens.reshape(passes, PASS, -1)
        p = predict_proba(model, grid.reshape(-1, tokens.shape[1]), device, precision, GPU_PASSES * PASS)
        return p.reshape(calls, GPU_PASSES, PASS)[call, slots].reshape(-1)

    return score


_SCORER: Callable | BaseException | None = None  # the model process's, or what stopped it loading


def _scorer_here(path: str, device: str, precision: str, threads: int) -> Scorer:
    """The model folder's scorer, loaded in this process: on CPU in float32 from the folder's stored
    folded tables where they are current (torch is not imported), else from its weights."""
    if device == "cpu" and precision == "32":
        engine = stored_folded(path, usable_threads(threads))
        if not isinstance(engine, str):
            return folded_scorer(engine)
    from genointerp.model_folder import load_model_dir
    from genointerp.runtime import use_threads

    threads = use_threads(threads)
    model, _ = load_model_dir(path, expect="xvir")
    return scorer(model.to(device), device, precision, threads)


def _load(path: str, device: str, precision: str, threads: int) -> None:
    """The model process's start: the job decides about Ctrl-C (it reaches the whole process
    group); load the model, or keep the error to raise at the first batch (an initializer that
    raises breaks the pool, and the error's own line would be lost)."""
    global _SCORER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _SCORER = _scorer_here(path, device, precision, threads)
    except BaseException as exc:  # noqa: BLE001 - handed to the job, which reports it
        _SCORER = exc


def _score(tokens: np.ndarray, keys: np.ndarray | None, real: np.ndarray | None) -> np.ndarray:
    if isinstance(_SCORER, BaseException):
        raise _SCORER
    return _SCORER(tokens, keys, real)


class _Pending:
    """The model process's answer to one submission (.done(), .result()); its process ending
    before answering (killed, out of memory) is one error line, not a job that waits for ever."""

    def __init__(self, future) -> None:
        self.future = future

    def done(self) -> bool:
        return self.future.done()

    def result(self) -> np.ndarray:
        try:
            return self.future.result()
        except BrokenProcessPool:
            raise WorkerDied("the model's process ended before it answered (killed, out of memory?); "
                             "nothing was written") from None


class ModelProcess:
    """The model folder's XVir in a spawned process, started by `start` (or the first `submit`);
    `submit` hands it token windows and returns their pending P(viral) (.done(), .result()).

    Where torch is imported in this process already (a library caller, a test runner), importing
    it costs nothing more, so the model runs here instead, the same scorer on the same settings
    (the same bytes), each answer computed at `submit`. Unless told where (`here`), the first
    HERE_WINDOWS windows are scored here from the stored folded tables before `start`."""

    HERE: bool | None = None  # where the model runs when not told: None, here where torch is imported already

    def __init__(self, path: str, device: str, precision: str, threads: int, here: bool | None = None) -> None:
        self.args = (path, device, precision, threads)
        self.here = self.HERE if here is None else here
        self._pool = None
        self._here: Scorer | None = None
        self._first: Scorer | bool | None = None  # the first windows' scorer here (None: not known yet; False: none)
        self._first_left = HERE_WINDOWS
        self._first_thread: ThreadPoolExecutor | None = None

    def start(self) -> None:
        if self._pool is not None or self._here is not None:
            return
        if self.here or (self.here is None and "torch" in sys.modules):
            self._here = _scorer_here(*self.args)
        else:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_load,
                                             initargs=self.args)
            start_processes(self._pool)  # the process starts (and imports torch) now, not at the first batch

    def submit(self, tokens: np.ndarray, keys: np.ndarray | None = None, real: np.ndarray | None = None):
        """P(viral) of token windows (R, n_tokens) laid out in passes with their keys and real
        windows (see scorer), pending."""
        windows = len(tokens) if real is None else int(np.sum(real))  # what the folded form computes
        if self.here is None and self._pool is None and self._here is None and windows <= self._first_left:
            first = self._first_scorer()
            if first is not None:
                self._first_left -= windows
                if self._first_thread is None:  # the model's own thread: the job's keeps its floating-point state
                    self._first_thread = ThreadPoolExecutor(1, thread_name_prefix="xvir-first")
                return self._first_thread.submit(first, tokens, keys, real)
        self.start()
        if self._here is not None:
            return Done(self._here(tokens, keys, real))
        return _Pending(self._pool.submit(_score, tokens, keys, real))

    def _first_scorer(self) -> Scorer | None:
        """The stored folded model loaded in this process for the first windows (the model's own
        process scores with the same tables on the same threads: the same bytes); None where the
        model does not run from them (another device or precision, tables missing or stale:
        loading here would import torch)."""
        if self._first is None:
            path, device, precision, threads = self.args
            engine = stored_folded(path, usable_threads(threads)) if (device, precision) == ("cpu", "32") else ""
            self._first = False if isinstance(engine, str) else folded_scorer(engine)
        return self._first or None

    def close(self) -> None:
        """End the process at once (nothing it holds needs finishing)."""
        if self._first_thread is not None:
            self._first_thread.shutdown(wait=False, cancel_futures=True)
            self._first_thread = None
        if self._pool is not None:
            end_now(self._pool)
            self._pool = None

    def __enter__(self) -> "ModelProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
