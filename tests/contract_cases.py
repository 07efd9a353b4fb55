"""The job contract's check (genointerp.job), for a test module's cases: a request that breaks one
rule, built without the CLI, gets the one-line UsageError that the same command line gets (exit 2,
the same words); neither writes anything."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from genointerp.errors import UsageError
from genointerp.job import execute

# (id, job and request for an output path, the same command line or None, the message both give)
Case = tuple[str, Callable[[str], tuple], list[str] | None, str]


def check_case(case: Case, cli, tmp_path: Path, *context: str) -> str:
    """The command line's `{out}` stands for the output path, which `-o` also gives; `context`
    (paths a module's fixtures made) goes to the case's builder after the output path, and to the
    command line as `{calls}`. Returns the error's message."""
    _, build, argv, message = case
    out = str(tmp_path / "out")
    run, req = build(out, *context)
    with pytest.raises(UsageError) as raised:
        execute(run, req)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []
    if argv is not None:
        res = cli(*[a.format(out=out, calls=context[0] if context else "") for a in argv], "-o", out)
        assert res.exit_code == 2, res.stderr
        assert res.stderr.strip().splitlines()[-1] == f"genointerp: error: {raised.value}"
        assert list(tmp_path.iterdir()) == []
    return str(raised.value)
