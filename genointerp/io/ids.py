"""Lists of sample ids, one per line (the first tab- or space-separated word)."""

from __future__ import annotations

from genointerp.errors import InputError
from genointerp.io.inputs import read_lines


def read_ids(path: str, what: str) -> list[str]:
    """The ids in `path` (blank and # lines skipped; gzip and `-` read transparently, a binary file
    refused with one line); `what` names the option in messages."""
    try:
        lines = read_lines(path)
    except InputError as exc:
        raise InputError(f"{exc} ({what})") from None
    ids = [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    if not ids:
        raise InputError(f"{path}: no sample ids ({what})")
    return ids
