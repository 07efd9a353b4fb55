"""JSON objects read from user-supplied files: one clear error line for a missing file, invalid
JSON or text that is not an object, never a traceback (a JSON list would otherwise fail later
with an AttributeError on .get)."""

from __future__ import annotations

import json
from pathlib import Path

from genointerp.errors import InputError


def json_object(text: str | bytes, where: str, what: str = "a JSON object") -> dict:
    """The JSON object in text (bytes are decoded as UTF-8); `where` names the source in errors."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InputError(f"{where}: not {what}")
    return value


def read_json_object(path: str | Path, missing: str, what: str = "a JSON object") -> dict:
    """json_object of a file; `missing` is the whole error line when the file does not exist."""
    try:
        text = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(missing) from None
    return json_object(text, str(path), what)


def is_name_list(value: object) -> bool:
    """Whether a JSON value is a list of strings (sample, column or class names)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
