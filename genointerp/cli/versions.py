"""`genointerp versions`: the software versions a workflow reports (MultiQC / nf-core versions.yml)."""

from __future__ import annotations

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER
from genointerp.cli.options import force_option


@app.command(
    "versions",
    epilog=(
        "Examples:\n\n"
        "  genointerp versions\n\n"
        "  genointerp versions --process CLASSIFY_READS -o genointerp_mqc_versions.yml"
    ),
)
def versions_command(
    output: str = typer.Option("-", "-o", "--output", help="YAML file to write (- is stdout); name it *_mqc_versions.yml for MultiQC."),
    process: str = typer.Option("genointerp", "--process", help="Process/rule name the versions are reported under."),
    force: bool = force_option("an existing file"),
) -> None:
    """Print genointerp's version and its key libraries' as a versions.yml (MultiQC, nf-core)."""
    from genointerp.job import execute
    from genointerp.versions import VersionsRequest, run

    execute(run, VersionsRequest(output=output, process=process), force, REPORTER)
