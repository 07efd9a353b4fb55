"""How a job talks to its user: one Reporter carrying log, warn and progress.

Every job's `run` (and the training driver and loop) takes a `report: Reporter` as its last
argument and hands `report.log` / `report.warn` down to the plain callables that io readers and
data helpers take (io never depends on this module). The CLI builds its reporter from the stderr
functions in genointerp.cli.common (`cli.common.REPORTER`); library callers and tests use `SILENT`,
or `dataclasses.replace(SILENT, log=lines.append)` to keep what a job logs.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, ContextManager, Iterator

Advance = Callable[..., None]  # advance(n=1): n more items done


@dataclass(frozen=True)
class Reporter:
    log: Callable[[str], None]  # a progress line ("[genointerp] ..." on the CLI)
    warn: Callable[[str], None]  # something the user should look at ("genointerp: warning: ...")
    progress: Callable[[str, int | None], ContextManager[Advance]]  # progress(description, total or None)


def _ignore(message: str) -> None:
    pass


@contextmanager
def _no_progress(description: str, total: int | None) -> Iterator[Advance]:
    yield lambda n=1: None


SILENT = Reporter(log=_ignore, warn=_ignore, progress=_no_progress)
