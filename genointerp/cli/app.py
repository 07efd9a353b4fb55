"""The `genointerp` Typer application and its global options; the command modules register on it."""

from __future__ import annotations

import typer

from genointerp import __version__
from genointerp.cli.common import ErrorReportingGroup, Settings

app = typer.Typer(
    name="genointerp",
    cls=ErrorReportingGroup,
    help="Interpretable deep learning for sequencing pipelines: simulate and tokenise reads, "
    "detect viral reads, predict genomic tracks, read out attention.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"genointerp {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No log lines or progress bars on stderr."),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors."),
) -> None:
    Settings.quiet, Settings.debug = quiet, debug
