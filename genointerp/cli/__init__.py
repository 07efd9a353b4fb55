"""The `genointerp` command line: the Typer application (cli/app.py) with every command module
registered on it. Command modules import heavy libraries (torch) inside their bodies, so that
`genointerp --help` starts without them."""

from __future__ import annotations

from genointerp.cli.app import app

# imported to register their commands, in the order --help and docs/cli.md list them: a workflow's
# order, reads to viral calls to integration sites, then tracks, attention, genotypes, versions
from genointerp.cli import reads, viral, integrations, tracks, attention, genotypes, capsule, versions  # noqa: I001

del reads, viral, integrations, tracks, attention, genotypes, capsule, versions

__all__ = ["app", "main"]


def main() -> None:
    app(prog_name="genointerp")
