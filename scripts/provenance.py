"""Provenance without machine paths: what the built-in models' config.json files may record.

A training run records the paths it read (its inputs, the model it started from). In a shipped
model those would name the build machine's folders; `relative_paths` rewrites every string that
starts with one of the given folders to the name it has for every user (`../shared/data/...`,
`build/default-model/...`, `genointerp/resources/...`), so a config.json names its sources the
way kmer_index.sources does.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def relative_paths(value, roots: dict[str, str]):
    """`value` (a config.json object) with each string that starts with a key of `roots` (an
    absolute folder) starting with that key's label instead; lists and objects recursively."""
    if isinstance(value, dict):
        return {k: relative_paths(v, roots) for k, v in value.items()}
    if isinstance(value, list):
        return [relative_paths(v, roots) for v in value]
    if isinstance(value, str):
        label, sep, path = value.rpartition("=") if "=" in value else ("", "", value)  # LABEL=PATH entries
        for root, name in sorted(roots.items(), key=lambda kv: -len(kv[0])):  # the deepest folder first
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                return f"{label}{sep}{name}{path[len(root):]}"
    return value


def shipped_roots(shared: Path, work: Path | None = None) -> dict[str, str]:
    """The folders a build reads, by the names users know them by."""
    roots = {str(Path(shared).resolve()): "../shared/data", str(ROOT): "."}
    if work is not None:
        roots[str(Path(work).resolve())] = str(Path(work).resolve().relative_to(ROOT)) \
            if Path(work).resolve().is_relative_to(ROOT) else "WORK"
    return roots
