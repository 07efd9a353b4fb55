"""Shared CLI plumbing: error reporting, logging/progress on stderr, KEY=VALUE options."""

from __future__ import annotations

import inspect
import os
import sys
from contextlib import contextmanager
from typing import Iterator

import typer
from typer.core import TyperGroup

from genointerp.errors import GenointerpError, UsageError
from genointerp.interrupts import Interrupted, message, received, signals_as_exceptions
from genointerp.report import Reporter


# click's UsageError as Typer raises it (Typer 0.29 vendors click as typer._click, which it does
# not export; BadParameter, which it does export, derives from it)
UsageErrorBase = typer.BadParameter.__mro__[1]


class Settings:
    """Global flags set by the app callback (-q/--debug)."""

    quiet = False
    debug = False


def _fail(message: str, code: int = 1) -> typer.Exit:
    from genointerp.io.atomic import user_facing  # name the user's output, not its hidden temporary

    typer.echo(f"genointerp: error: {user_facing(message)}", err=True)
    return typer.Exit(code)


def _set_quiet(ctx, param, value: bool) -> None:
    if value:
        Settings.quiet = True


def _set_debug(ctx, param, value: bool) -> None:
    if value:
        Settings.debug = True


def run_options() -> list:
    """-q/--quiet and --debug as a command's own options, so that they work after its name too
    (`genointerp classify-reads -q ...`), as before it; hidden from the command's help, which the
    application's lists them in."""
    from typer.core import TyperOption

    return [TyperOption(param_decls=["-q", "--quiet"], is_flag=True, expose_value=False, callback=_set_quiet,
                        hidden=True, help="No log lines or progress bars on stderr."),
            TyperOption(param_decls=["--debug"], is_flag=True, expose_value=False, callback=_set_debug,
                        hidden=True, help="Show Python tracebacks for errors.")]


class ErrorReportingGroup(TyperGroup):
    """Turns data errors into one stderr line and exit 1, usage errors into exit 2, and SIGINT/SIGTERM
    into a clean stop with the shell's status for them (130/143). Every command also takes -q and
    --debug after its name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            later = getattr(command, "later_params", None)  # a declared command's, built on first use
            (later if later is not None else command.params).extend(run_options())

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)  # keep declaration order in --help

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageErrorBase as exc:  # e.g. an unknown command
            _plain_usage_error(exc)
            raise

    def invoke(self, ctx):
        try:
            with signals_as_exceptions():
                return super().invoke(ctx)
        except UsageErrorBase as exc:  # a command's arguments or options
            _plain_usage_error(exc)
            raise
        except Interrupted as exc:
            raise _interrupted(exc.signum) from None
        except Exception as exc:
            if received() is not None:  # a library turned the interruption into an error of its own
                raise _interrupted(received()) from None
            if isinstance(exc, BrokenPipeError):
                _broken_pipe(exc)
            failed = None if Settings.debug else _error_exit(exc)
            if failed is None:
                raise
            raise failed from None


def _error_exit(exc: Exception) -> typer.Exit | None:
    """The one line and exit status for an error the user can act on; None for a bug (a traceback)."""
    if isinstance(exc, UsageError):
        return _fail(str(exc), 2)
    if isinstance(exc, GenointerpError):
        return _fail(str(exc))
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")
    if isinstance(exc, MemoryError):
        return _fail("out of memory; use smaller batches or fewer threads")
    return None


def _interrupted(signum: int) -> typer.Exit:
    typer.echo(message(signum), err=True)
    return typer.Exit(128 + signum)


def _broken_pipe(exc: BrokenPipeError) -> None:
    """The reader of an output pipe closed it. stdout alone closed early (`genointerp ... | head`)
    is not an error: exit 0. File outputs pending meanwhile are finished with stdout dropped
    (genointerp.io.atomic); where a write bypassed that and they were lost, or a named pipe given
    as an output was closed, the outputs are not complete: one line, and SIGPIPE's status 141."""
    from genointerp.io.atomic import stdout_lost_outputs

    lost = stdout_lost_outputs()
    if exc.filename is not None:
        raise _fail(f"{exc.filename}: its reader closed it before the output was complete", 141)
    if lost:
        raise _fail(f"stdout was closed before the output was complete; not written: {', '.join(lost)}", 141)
    sys.stderr.close()
    os._exit(0)


def _plain_usage_error(exc) -> None:
    """Where stderr is not a terminal (a pipeline's log), a usage error is one line like every
    other error, instead of click's usage text and a box drawn around the message."""
    if sys.stderr.isatty() or Settings.debug:
        return
    where = f" (see '{exc.ctx.command_path} -h')" if exc.ctx is not None else ""
    raise _fail(f"{_option_first(exc)}{where}", exc.exit_code)


def _option_first(exc) -> str:
    """A bad option value as every other usage error reads, `--option: what is wrong`, instead of
    click's "Invalid value for '--option': ..."."""
    # MissingParameter (a BadParameter) already reads "Missing option '--x'"
    if not isinstance(exc, typer.BadParameter) or type(exc).__name__ == "MissingParameter":
        return exc.format_message()
    hint = exc.param_hint
    if hint is None and exc.param is not None:
        get_hint = exc.param.get_error_hint  # takes the context in click and in typer's releases but 0.29's
        hint = get_hint(exc.ctx) if "ctx" in inspect.signature(get_hint).parameters else get_hint()
    if hint is None:
        return exc.format_message()
    if not isinstance(hint, str):
        hint = " / ".join(hint)
    hint = hint.replace("'", "")  # click quotes the option: '--x'
    return f"{hint}: {exc.message}"


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


# The reporter every job gets from the CLI: the three functions above (quiet with -q, progress bars
# only on a terminal).
REPORTER = Reporter(log=log, warn=warn, progress=progress)


# train-xvir (cli/viral.py) asks this by its old name here; the training-run
# folder's lifecycle lives in genointerp.train.run_folder, imported when called: inference commands
# load nothing of genointerp.train (tests/test_runtime.py).
def is_main_rank() -> bool:
    """genointerp.train.run_folder.is_main_rank."""
    from genointerp.train import run_folder

    return run_folder.is_main_rank()

