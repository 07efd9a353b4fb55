"""SIGINT, SIGTERM and SIGHUP as an exception, so that every `with` block on the way out cleans up.

`timeout`, SLURM and Nextflow stop a job with SIGTERM; a dropped SSH session sends SIGHUP. While
a command runs (see `signals_as_exceptions`, entered by the CLI), each of them raises
`Interrupted` in the main thread (SIGHUP only where it is not ignored on entry: under `nohup`
it stays ignored); temporaries are then deleted by the context managers they belong to, and the
CLI exits with 128 + the signal number. A few steps must not be cut in two, e.g. creating a
temporary and registering it for clean-up, or renaming a set of outputs into place: they run
under `deferred()`, and a signal that arrives meanwhile is raised when the step is over.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP. A BaseException, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    depth = 0  # nesting of deferred() blocks
    pending: int | None = None  # a signal that arrived inside one


def _interrupt(signum: int) -> None:
    # later signals would interrupt the clean-up itself; the process ends right after it anyway
    for s in _SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def _handler(signum, frame) -> None:
    if _State.depth:
        _State.pending = signum
        return
    _interrupt(signum)


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise Interrupted (main thread only: handlers live
    there); SIGHUP ignored on entry (nohup) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in _SIGNALS
              if s != signal.SIGHUP or signal.getsignal(s) != signal.SIG_IGN}
    for s in before:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        _State.pending = None


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the block; one that arrived meanwhile is raised at its end
    (unless the block fails anyway, whose own error then stands)."""
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
    if _State.depth == 0 and _State.pending is not None:
        signum, _State.pending = _State.pending, None
        _interrupt(signum)
