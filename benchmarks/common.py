"""Helpers shared by the benchmark scripts: timing external commands side by side."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

GENOINTERP = [sys.executable, "-m", "genointerp"]


def require(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        sys.exit(f"missing peer tools: {', '.join(missing)} (run `make bench-deps`)")


def timed(cmd: list[str], stdout=None) -> float:
    """Run a command, fail loudly on error, return wall-clock seconds."""
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    return time.perf_counter() - t0


def peak_rss_children_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def table(rows: list[dict], columns: list[str]) -> str:
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(str(r[c]).ljust(w) for c, w in zip(columns, widths)) for r in rows]
    return "\n".join(lines)


def out_dir(path: str) -> Path:
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def read_calls(path) -> tuple[list[str], np.ndarray]:
    """Read ids and p_viral of a classify-reads TSV; unscored reads (NA) count as p = 0."""

    rows = [line.split("\t") for line in Path(path).read_text().splitlines()[1:]]
    return [r[0] for r in rows], np.array([float(r[2]) if r[2] != "NA" else 0.0 for r in rows])
