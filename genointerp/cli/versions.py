"""`genointerp versions`: the software versions a workflow reports (MultiQC / nf-core versions.yml)."""

from __future__ import annotations


import typer

from genointerp.cli import app
from genointerp.cli.options import force_option

# What shapes this package's numbers: the model runtime and the file-format libraries.
COMPONENTS = ("torch", "numpy", "pysam", "pyBigWig", "safetensors", "scikit-learn")


def versions() -> dict[str, str]:
    """{package: version} from the installed distributions' metadata (no heavy imports)."""
    from importlib.metadata import PackageNotFoundError, version

    from genointerp import __version__

    out = {"genointerp": __version__}
    for name in COMPONENTS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def versions_yaml(process: str, found: dict[str, str]) -> str:
    """nf-core's versions.yml layout, which MultiQC reads from files named *_mqc_versions.yml:
    the process name, then one `tool: version` line per tool, versions quoted as strings."""
    lines = [f'"{process}":'] + [f'    {tool}: "{ver}"' for tool, ver in found.items()]
    return "\n".join(lines) + "\n"


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
    from genointerp.io.atomic import STDOUT, AtomicOutputs

    text = versions_yaml(process, versions())
    if output == STDOUT:
        typer.echo(text, nl=False)
        return
    with AtomicOutputs(force) as outputs:
        outputs.file(output).write_text(text)
