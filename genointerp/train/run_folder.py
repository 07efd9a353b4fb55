"""The training-run folder OUTPUT.checkpoint/ beside a model directory OUTPUT: made, locked, resumed,
removed.

It holds what an interrupted run needs to go on (last.pt, metrics.tsv, run.json, data caches).
Its lifecycle, for every training job (train-tracks, train-xvir):

- before: refuse to resume what is not there, refuse to discard a run with finished epochs unless
  forced, never delete a folder genointerp did not write; lock it (one run at a time);
- after a failure or an interruption: kept only if it holds a finished epoch (what --resume needs),
  otherwise nothing of the run is left behind;
- after success: the model directory is renamed into place and the folder dropped, both under the lock.

Under torchrun only rank 0 touches it. A low module (no torch): train.loop and train.driver take
their file names from here.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from genointerp.errors import GenointerpError, UsageError
from genointerp.interrupts import deferred, on_abandon
from genointerp.io.atomic import MARKER, AtomicOutputs, check_replaceable_folder

CHECKPOINT = "last.pt"  # in checkpoint_dir: the state after the last finished epoch (train.loop writes it)
RUN = "run.json"  # in checkpoint_dir: the fingerprint of the run's inputs and options (train.fingerprint)


def checkpoint_dir(output: str) -> Path:
    """The training-run folder beside the model directory OUTPUT: last.pt, metrics.tsv, data caches."""
    return Path(f"{output}.checkpoint")


def finish(output: str) -> None:
    """After the model directory is in place: the checkpoint (and any data cache in it) has served its purpose."""
    shutil.rmtree(checkpoint_dir(output), ignore_errors=True)


def is_main_rank() -> bool:
    """Under torchrun only rank 0 writes files; a plain run is rank 0."""
    return os.environ.get("RANK", "0") == "0"


def check_resume(ckpt: Path, resume: bool) -> None:
    """UsageError when --resume finds no interrupted run in the training-run folder `ckpt` to go on from."""
    if resume and not (ckpt / CHECKPOINT).exists():
        raise UsageError(f"--resume: no checkpoint to resume in {ckpt}")


@contextmanager
def training_checkpoint(ckpt: Path, resume: bool, force: bool, warn: Callable[[str], None]) -> Iterator[None]:
    """The training-run folder `ckpt` around training (rank 0 only touches it), as the module says.

    The lock is a flock on the folder itself, released by the kernel when the process ends however
    it ends, so a second run into the same output fails at once, naming the folder and the run
    holding it. The caller finishes (renames the model directory into place, drops the folder)
    inside the block, under the lock."""
    check_resume(ckpt, resume)
    if not is_main_rank():
        yield
        return
    if os.path.lexists(ckpt) and not ckpt.is_dir():
        raise GenointerpError(f"{ckpt}: exists and is not a folder; the training run needs that name")
    lock, armed = None, False  # armed: a failure removes the folder (unless it holds a finished epoch)
    try:
        with deferred():  # a signal right after mkdir must not leave an empty run folder
            fresh, lock = _locked_run_folder(ckpt)
            armed = fresh
        if not fresh and not resume:
            if (ckpt / CHECKPOINT).exists() and not force:
                raise GenointerpError(f"{ckpt} holds an interrupted run: --resume it, or --force to start over")
            check_replaceable_folder(ckpt, str(ckpt))
            _empty(ckpt)  # no epoch finished there, or --force: nothing worth keeping (the folder, locked, stays)
        armed = True
        (ckpt / MARKER).write_text(f"training run of genointerp pid {os.getpid()} on {socket.gethostname()}\n")
        with on_abandon(lambda: _drop_unfinished(ckpt, warn)):  # a run ended from the signal watchdog
            yield
    except BaseException:
        if armed:
            _drop_unfinished(ckpt, warn)
        raise
    finally:
        if lock is not None:
            os.close(lock)


def _drop_unfinished(ckpt: Path, warn: Callable[[str], None]) -> None:
    """A failed run's folder: kept when it holds a finished epoch (for --resume), else removed."""
    if (ckpt / CHECKPOINT).exists():
        warn(f"the finished epochs are kept in {ckpt}: rerun with --resume to continue")
    else:
        shutil.rmtree(ckpt, ignore_errors=True)


def _locked_run_folder(ckpt: Path) -> tuple[bool, int]:
    """Make `ckpt` if need be and lock it: (whether this call made it, the locked descriptor)."""
    try:
        ckpt.mkdir()
        fresh = True
    except FileExistsError:
        fresh = False
    fd = os.open(ckpt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        try:
            holder = (ckpt / MARKER).read_text().strip().removeprefix("training run of ")
        except OSError:
            holder = "another run"
        raise GenointerpError(f"{ckpt}: in use by another training run ({holder}); wait for it to end, "
                              "or choose another output name") from None
    return fresh, fd


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@contextmanager
def model_folder(outputs: AtomicOutputs, output: str, resume: bool, warn: Callable[[str], None]) -> Iterator[Path]:
    """Inside a training job: yields the folder to fill, the model directory OUTPUT reserved in
    `outputs` on rank 0 (a scratch folder on other DDP ranks, which write nothing), with the
    training-run folder OUTPUT.checkpoint/ guarded and locked by training_checkpoint (`outputs.force`
    discards an interrupted run); once the
    body is done, the model directory is committed and the checkpoint dropped, both under the
    lock. The output is reserved before the checkpoint folder exists, so a refused run leaves nothing."""
    main_rank = is_main_rank()
    with tempfile.TemporaryDirectory() as scratch:
        folder = outputs.folder(output) if main_rank else Path(scratch)
        with training_checkpoint(checkpoint_dir(output), resume, outputs.force, warn):
            yield folder
            if main_rank:  # before the lock goes: no other run may take the folder over in between
                outputs.commit()
                finish(output)
