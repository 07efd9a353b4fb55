"""`genointerp versions`: the software versions a workflow reports (MultiQC / nf-core versions.yml)."""

from __future__ import annotations

from genointerp.cli.declare import command


@command(
    "versions",
    "genointerp.versions:VersionsRequest",
    job="genointerp.versions:run",
    force="an existing file",
    epilog=(
        "Examples:\n\n"
        "  genointerp versions\n\n"
        "  genointerp versions --process CLASSIFY_READS -o genointerp_mqc_versions.yml"
    ),
)
def versions_command(req, result: dict) -> None:
    """Print genointerp's version and its key libraries' as a versions.yml (MultiQC, nf-core)."""
