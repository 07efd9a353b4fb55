"""`genointerp versions`: the software versions a workflow reports (MultiQC / nf-core versions.yml)."""

from __future__ import annotations

from genointerp.cli.common import REPORTER
from genointerp.cli.declare import command


@command(
    "versions",
    "genointerp.versions:VersionsRequest",
    force="an existing file",
    epilog=(
        "Examples:\n\n"
        "  genointerp versions\n\n"
        "  genointerp versions --process CLASSIFY_READS -o genointerp_mqc_versions.yml"
    ),
)
def versions_command(req, force: bool) -> None:
    """Print genointerp's version and its key libraries' as a versions.yml (MultiQC, nf-core)."""
    from genointerp.job import execute
    from genointerp.versions import run

    execute(run, req, force, REPORTER)
