"""The versions job: the software versions a workflow reports (MultiQC / nf-core versions.yml)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from genointerp import __version__
from genointerp.errors import UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.options import opt, output
from genointerp.report import Reporter

# What shapes this package's numbers: the model runtime and the file-format libraries.
COMPONENTS = ("torch", "numpy", "pysam", "pyBigWig", "safetensors", "scikit-learn")


@dataclass
class VersionsRequest:
    """versions: the fields are its options (`-` for stdout)."""

    output: str = output("YAML file to write (- is stdout); name it *_mqc_versions.yml for MultiQC.", "-")
    process: str = opt("genointerp", "--process", help="Process/rule name the versions are reported under.")

    def check(self) -> None:
        if not self.process:
            raise UsageError("--process: the process name cannot be empty")

    def inputs(self) -> list[str]:
        return []


def versions() -> dict[str, str]:
    """{package: version} from the installed distributions' metadata (no heavy imports)."""
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


def run(req: VersionsRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write the versions.yml; returns {package: version}."""
    found = versions()
    with outputs.streams(req.output, plain=[req.output]) as out:
        out[req.output].write(versions_yaml(req.process, found).encode())
    return found
