"""The `genointerp` command line: the Typer application (cli/app.py) with every command module
registered on it. Command modules import heavy libraries (torch) inside their bodies, so that
`genointerp --help` starts without them.

`main` takes SIGINT, SIGTERM and SIGHUP before it imports Typer and the command modules, so that
Ctrl-C in the first half second ends the program with one line and the shell's status, like a
signal at any later moment (genointerp/__main__.py, the console script, covers the imports before
it); `app` is built on first use."""

from __future__ import annotations

import sys

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


def main() -> None:
    try:
        with signals_as_exceptions():
            _build_app()(prog_name="genointerp")
    except Interrupted as exc:  # before or after a command ran (while importing, parsing options)
        _stopped(exc.signum)
    except Exception:
        if received() is None:
            raise
        _stopped(received())  # an import that turned the interruption into an error of its own


def _stopped(signum: int) -> None:
    sys.stderr.write(message(signum) + "\n")
    sys.exit(128 + signum)
