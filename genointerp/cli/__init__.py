"""The `genointerp` command line: the Typer application (cli/app.py) with every command module
registered on it. Command modules import heavy libraries (torch) inside their bodies, so that
`genointerp --help` starts without them.

`main` takes SIGINT, SIGTERM and SIGHUP before it imports Typer and the command modules, so that
Ctrl-C in the first half second ends the program with one line and the shell's status, like a
signal at any later moment (genointerp/__main__.py, the console script, covers the imports before
it); `app` is built on first use. Where the command line names a command, `main` hands Typer that
command alone: Typer turns every registered command into its click form at each start (about
0.05 s of a 0.5 s classify-reads start, for 18 commands) though one runs, and what that command
prints and does is the same with or without the others.

`main` also keeps Python's cyclic collector off while the program's modules are imported (its
own, Typer's, then the command's job module and numpy; genointerp.cli.collector says why); the
command's runner (genointerp.cli.declare) turns it back on once the job's module is in."""

from __future__ import annotations

import sys

from genointerp.cli import collector
from genointerp.interrupts import Interrupted, message, received, signals_as_exceptions

__all__ = ["app", "main"]


def _build_app():
    from genointerp.cli.app import app

    # imported to register their commands, in the order --help and docs/cli.md list them: a
    # workflow's order, reads to viral calls to integration sites, then tracks, attention,
    # genotypes, versions
    from genointerp.cli import reads, viral, integrations, tracks, variants, ism, attention, genotypes, capsule, versions  # noqa: F401, I001

    globals()["app"] = app  # the Typer application, not the submodule of that name importing set here
    return app


def __getattr__(name: str):
    if name == "app":
        return _build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the options the application itself takes before a command name that do not end the program there
_RUN_OPTIONS = frozenset({"-q", "--quiet", "--debug"})


def _named_command(app, argv: list[str]):
    """The registered command that argv (the arguments after the program's name) runs, or None
    where it names none (no command, --help or --version first, a name Typer would refuse)."""
    name = next((a for a in argv if a not in _RUN_OPTIONS), None)
    if name is None or name.startswith("-"):
        return None
    from typer.main import get_command_name

    return next((c for c in app.registered_commands
                 if (c.name or get_command_name(c.callback.__name__)) == name), None)


def main() -> None:
    collector.hold()
    try:
        with signals_as_exceptions():
            app = _build_app()
            command = _named_command(app, sys.argv[1:])
            if command is not None:
                app.registered_commands = [command]
            app(prog_name="genointerp")
    except Interrupted as exc:  # before or after a command ran (while importing, parsing options)
        _stopped(exc.signum)
    except Exception:
        if received() is None:
            raise
        _stopped(received())  # an import that turned the interruption into an error of its own
    finally:
        collector.back()  # a command that ran no job (--help, a refused option)


def _stopped(signum: int) -> None:
    sys.stderr.write(message(signum) + "\n")
    sys.exit(128 + signum)
