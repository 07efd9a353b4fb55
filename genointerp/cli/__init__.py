"""The `genointerp` command line: the Typer application (cli/app.py) with every command module
registered on it. Command modules import heavy libraries (torch) inside their bodies, so that
`genointerp --help` starts without them."""

from __future__ import annotations

from genointerp.cli import attention, capsule, genotypes, integrations, reads, tracks, versions, viral
from genointerp.cli.app import app

del attention, capsule, genotypes, integrations, reads, tracks, versions, viral  # imported to register their commands

__all__ = ["app", "main"]


def main() -> None:
    app(prog_name="genointerp")
