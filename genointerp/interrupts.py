"""SIGINT, SIGTERM and SIGHUP as an exception, so that every `with` block on the way out cleans up,
wherever the program is when the signal comes.

`timeout`, SLURM and Nextflow stop a job with SIGTERM; a dropped SSH session sends SIGHUP. While
a command runs (see `signals_as_exceptions`, entered by the CLI before it imports anything heavy),
each of them raises `Interrupted` in the main thread (SIGHUP only where it is not ignored on
entry: under `nohup` it stays ignored); temporaries are then deleted by the context managers they
belong to, and the CLI exits with 128 + the signal number. A few steps must not be cut in two, e.g.
creating a temporary and registering it for clean-up, or renaming a set of outputs into place:
they run under `deferred()`, and a signal that arrives meanwhile is raised when the step is over.

Python runs a signal handler only when the main thread executes Python code. Inside a C library
that retries its reads after a signal (htslib reading an idle pipe), or in a C call that does not
return for a long time, the handler would wait as long. So a watchdog thread learns of every
signal through `signal.set_wakeup_fd`. When the main thread has not taken the signal within
`GRACE` seconds, the watchdog sends it to the main thread itself (which breaks an interruptible
wait), and when even that is not taken, ends the run the same way from its own thread: the
clean-ups registered with `on_abandon` are run (the outputs' temporaries, an unfinished
training-run folder), the same line is printed and the process exits with 128 + the signal number.

A signal that a library swallows and turns into an error of its own (a model file "damaged"
because its read was cut off) is still an interruption: `received()` tells the CLI to report it so.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE = 0.3  # seconds the main thread has to take a signal, before the watchdog acts (twice: ~0.6 s in all)


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP. A BaseException, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def message(signum: int) -> str:
    """The one line an interrupted command prints."""
    return f"genointerp: interrupted by {signal.Signals(signum).name}; unfinished outputs removed"


class _State:
    depth = 0  # nesting of deferred() blocks
    pending: int | None = None  # a signal that arrived inside one
    received: int | None = None  # the first signal of this command
    taken = threading.Event()  # set when the main thread's handler has run for it
    active = 0  # nesting of signals_as_exceptions()
    abandon: dict[int, Callable[[], None]] = {}  # clean-ups for the watchdog, by registration id
    next_id = 0


def received() -> int | None:
    """The signal that interrupted this command, if one did (also when something swallowed it)."""
    return _State.received


def _interrupt(signum: int) -> None:
    # later signals would interrupt the clean-up itself; the process ends right after it anyway
    for s in _SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def _handler(signum, frame) -> None:
    if _State.received is None:
        _State.received = signum
    _State.taken.set()
    if _State.depth:
        _State.pending = signum
        return
    _interrupt(signum)


def add_abandon(cleanup: Callable[[], None]) -> int:
    """Register `cleanup()` as what the watchdog runs if it has to end the run from its own thread
    (the main thread stuck in a C call): the same clean-up that an `except`/`finally` of the caller
    does when the interruption arrives as an exception. It must be quick. Returns the key that
    `remove_abandon` takes when the caller is done."""
    _State.next_id += 1
    _State.abandon[_State.next_id] = cleanup
    return _State.next_id


def remove_abandon(key: int) -> None:
    _State.abandon.pop(key, None)


@contextmanager
def on_abandon(cleanup: Callable[[], None]) -> Iterator[None]:
    """`add_abandon(cleanup)` for the block."""
    key = add_abandon(cleanup)
    try:
        yield
    finally:
        remove_abandon(key)


def _abandon_run(signum: int) -> None:
    """End the run from the watchdog thread: clean-ups newest first, worker processes stopped, the
    line, exit status 128 + signum."""
    for key in sorted(_State.abandon, reverse=True):
        cleanup = _State.abandon.get(key)
        if cleanup is None:
            continue
        try:
            cleanup()
        except BaseException:  # noqa: BLE001 - best effort: the process ends next, whatever happens here
            pass
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        for child in mp.active_children():
            child.terminate()
    try:
        os.write(2, (message(signum) + "\n").encode())
    except OSError:
        pass
    os._exit(128 + signum)


def _watch(fd: int, main_ident: int, over: threading.Event) -> None:
    """The watchdog: reads the signal numbers Python's C-level handler writes to the wakeup pipe.
    It closes the pipe's read end itself, so that its descriptor number is never reused under it."""
    try:
        _watch_pipe(fd, main_ident, over)
    finally:
        os.close(fd)


def _watch_pipe(fd: int, main_ident: int, over: threading.Event) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data or over.is_set():  # the command is over: the pipe was closed
            return
        ours = [s for s in data if s in _SIGNALS]
        if not ours or _State.taken.wait(GRACE):
            continue
        signum = _State.received or ours[0]
        try:  # breaks an interruptible wait (a lock, a sleep, a read that Python itself retries)
            signal.pthread_kill(main_ident, signum)
        except (OSError, ValueError):
            pass
        if _State.taken.wait(GRACE):
            continue
        if _State.received is None:
            _State.received = signum
        _abandon_run(signum)


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise Interrupted (main thread only: handlers live
    there); SIGHUP ignored on entry (nohup) stays ignored. A watchdog makes sure that a signal is
    acted on within about a second wherever the main thread is. Re-entrant: an inner block (the
    CLI's around each command, inside the one around the whole program) changes nothing."""
    if threading.current_thread() is not threading.main_thread() or _State.active:
        yield
        return
    before = {s: signal.getsignal(s) for s in _SIGNALS
              if s != signal.SIGHUP or signal.getsignal(s) != signal.SIG_IGN}
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    _State.received, _State.pending = None, None
    _State.taken.clear()
    old_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    over = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(read_end, threading.get_ident(), over),
                                name="genointerp signals", daemon=True)
    watchdog.start()
    for s in before:
        signal.signal(s, _handler)
    _State.active += 1
    try:
        yield
    finally:
        _State.active -= 1
        for s, handler in before.items():
            signal.signal(s, handler)
        over.set()
        signal.set_wakeup_fd(old_wakeup)
        os.close(write_end)  # the watchdog reads the end of the pipe and stops
        watchdog.join(timeout=2 * GRACE + 1)
        _State.pending = None


def _forget_in_child() -> None:
    """A process forked inside a command (a worker) must not report its own signals to the
    parent's watchdog through the inherited wakeup pipe."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from a thread other than the main one: no wakeup fd to reset there
        pass


os.register_at_fork(after_in_child=_forget_in_child)


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
