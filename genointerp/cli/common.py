"""Shared CLI plumbing: error reporting, logging/progress on stderr, KEY=VALUE options."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from enum import Enum
from typing import Iterator

import typer
from typer.core import TyperGroup

from genointerp.errors import GenointerpError


class Settings:
    """Global flags set by the app callback (-q/--debug)."""

    quiet = False
    debug = False


def _fail(message: str) -> typer.Exit:
    typer.echo(f"genointerp: error: {message}", err=True)
    return typer.Exit(1)


class ErrorReportingGroup(TyperGroup):
    """Turns data errors into one stderr line and exit 1; usage errors stay click's exit 2."""

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)  # keep declaration order in --help

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except GenointerpError as exc:
            if Settings.debug:
                raise
            raise _fail(str(exc)) from None
        except OSError as exc:
            if Settings.debug or isinstance(exc, BrokenPipeError):
                if isinstance(exc, BrokenPipeError):  # `genointerp ... | head` is not an error
                    sys.stderr.close()
                    os._exit(0)
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            raise _fail(f"{where}{exc.strerror or exc}") from None
        except MemoryError:
            if Settings.debug:
                raise
            raise _fail("out of memory; use smaller batches or fewer threads") from None


def log(message: str) -> None:
    if not Settings.quiet:
        typer.echo(f"[genointerp] {message}", err=True)


def warn(message: str) -> None:
    typer.echo(f"genointerp: warning: {message}", err=True)


@contextmanager
def progress(description: str, total: int | None) -> Iterator:
    """A rich progress bar on stderr (only when it is a terminal); yields advance(n)."""
    if Settings.quiet or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


def parse_pairs(values: list[str], option: str, what: str) -> list[tuple[str, str]]:
    """Split repeated KEY=VALUE option values; a missing '=' is a usage error (exit 2)."""
    pairs = []
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key or not val:
            raise typer.BadParameter(f"expected {what}, got {v!r}", param_hint=option)
        pairs.append((key, val))
    return pairs


def usable_threads(requested: int) -> int:
    """--threads capped at the CPUs this process may run on (affinity/cgroup aware)."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(requested, available))


def prepare_checkpoint_dir(ckpt, resume: bool, force: bool) -> bool:
    """The training-run folder OUTPUT.checkpoint/ before training: refuse to resume what is not
    there, refuse to discard a run with finished epochs unless forced. Returns whether this
    process is the main (rank 0) one, the only one that touches the folder."""
    import shutil

    main_rank = os.environ.get("RANK", "0") == "0"
    if resume and not (ckpt / "last.pt").exists():
        raise typer.BadParameter(f"no checkpoint to resume in {ckpt}", param_hint="--resume")
    if not resume and ckpt.exists() and main_rank:
        if (ckpt / "last.pt").exists() and not force:
            raise GenointerpError(f"{ckpt} holds an interrupted run: --resume it, or --force to start over")
        shutil.rmtree(ckpt)  # no epoch finished there: nothing worth keeping
    if main_rank:
        ckpt.mkdir(exist_ok=True)
    return main_rank


class Precision(str, Enum):
    fp32 = "32"
    bf16 = "bf16"
    fp16 = "16"


def device_for(requested: str, precision: Precision) -> str:
    """The torch device for --device, refusing fp16 autocast where only CUDA has it."""
    from genointerp.train.loop import resolve_device

    device = resolve_device(requested)
    if precision == Precision.fp16 and not device.startswith("cuda"):
        raise typer.BadParameter("16 needs a CUDA device; on CPU use bf16", param_hint="--precision")
    if precision == Precision.bf16 and device == "cpu" and not cpu_has_bf16():
        warn("this CPU has no native bf16 (AVX512-BF16 or AMX): bf16 is emulated and several times "
             "slower than --precision 32")
    return device


def cpu_has_bf16() -> bool:
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
