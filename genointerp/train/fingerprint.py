"""Fingerprints of resumable runs: --resume goes on only with the inputs and options it started with.

A run that keeps its state between sessions (train-xvir's and train-tracks' OUTPUT.checkpoint/,
capsule-search's OUTPUT.checkpoint) saves a fingerprint with that state: a JSON-ready dict of the
options that define the run and of the content of its input files (size and SHA-256 of each, by
the option that named it). Resuming compares it with the fingerprint of the command at hand and
refuses, in one line naming what differs, to go on with anything else: the result would match
neither run. Content is compared, not paths: a moved copy of the same data resumes, a file
edited or swapped in place does not. The cost is one read of every input file at the start.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from genointerp.errors import InputError

PATHS = "paths"  # a fingerprint's section of file names: saved for the record, never compared


def file_digest(path: str | Path) -> str:
    """'BYTES:SHA256' of a regular file's content; of a folder, of its files' relative names and
    contents (hidden entries, such as an output folder's marker, left out). A stream (stdin, a
    pipe) cannot be read twice: it is named, not read."""
    path = Path(path)
    if str(path) == "-" or not (path.is_file() or path.is_dir()):
        return f"stream:{path}"
    if path.is_file():
        return _digest_file(path, hashlib.sha256())
    total, h = 0, hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            file = Path(root) / name
            if not stat.S_ISREG(file.stat().st_mode):
                continue
            h.update(str(file.relative_to(path)).encode() + b"\0")
            size, digest = _digest_file(file, hashlib.sha256()).split(":")
            h.update(digest.encode())
            total += int(size)
    return f"{total}:{h.hexdigest()}"


def _digest_file(path: Path, h) -> str:
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
            size += len(block)
    return f"{size}:{h.hexdigest()}"


def fingerprint(inputs: dict[str, str | list | None], options: dict) -> dict:
    """The fingerprint of a run: `inputs` maps each option that names input files (e.g. "--targets")
    to its path or paths (None or [] for none), `options` the settings that define the run."""
    paths = {name: [str(p) for p in ([value] if isinstance(value, (str, Path)) else value or [])]
             for name, value in inputs.items()}
    return {"inputs": {name: [file_digest(p) for p in files] for name, files in paths.items()},
            "options": options, PATHS: paths}


def differences(saved, current, prefix: str = "") -> list[str]:
    """The names (dotted where nested, the PATHS section left out) whose values differ."""
    if not (isinstance(saved, dict) and isinstance(current, dict)):
        return [] if saved == current else [prefix or "everything"]
    out = []
    for key in list(saved) + [k for k in current if k not in saved]:
        if key == PATHS and not prefix:
            continue
        name = f"{prefix}.{key}" if prefix else str(key)
        if key not in saved or key not in current:
            out.append(name)
        else:
            out += differences(saved[key], current[key], name)
    return out


def check(saved: dict, current: dict, where: str, what: str, remedy: str) -> None:
    """Refuse (InputError, one line) to go on from a state saved with fingerprint `saved` under the
    fingerprint `current`, naming what differs: '{where}: {what}: X, Y; {remedy}'.
    The 'inputs.' and 'options.' section names are left out of the names shown."""
    diff = differences(saved, current)
    if diff:
        names = [d.split(".", 1)[1] if d.split(".", 1)[0] in ("inputs", "options") and "." in d else d for d in diff]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        raise InputError(f"{where}: {what}: {shown}; {remedy}")


def save_state(path: Path, state: dict) -> None:
    """Replace the JSON state file `path` in one step (never half written)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(state))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def load_state(path: Path, current: dict, kind: str, what: str, remedy: str) -> dict:
    """The JSON state file `path`, a `kind` (e.g. "capsule-search checkpoint") saved with its
    fingerprint under "fingerprint", checked against the fingerprint `current` (see check)."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable {kind} ({exc})") from None
    if not isinstance(state, dict) or not isinstance(state.get("fingerprint"), dict):
        raise InputError(f"{path}: holds no record of the run's inputs (an older genointerp wrote it); {remedy}")
    check(state["fingerprint"], json.loads(json.dumps(current)), str(path), what, remedy)  # tuples as saved: lists
    return state
