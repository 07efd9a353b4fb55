"""The contract every command keeps, so that a library caller gets what the CLI gets.

A command is two pieces:

- a **request**: a dataclass of the command's inputs, outputs and settings, named as its options
  are (``--max-missing`` is ``max_missing``). ``check()`` applies every rule about how settings
  combine and raises ``UsageError`` (one line naming the option, exit status 2 from the CLI) when the
  request cannot run as given; ``inputs()`` lists the paths it reads, which no output may replace.
- a **job**: ``run(req, outputs, report) -> dict`` reads the inputs, reserves every output through
  ``outputs`` (an open ``AtomicOutputs``: nothing appears until all of them are complete) and returns
  the summary it also logs.

The CLI only turns the command line into a request and calls :func:`execute`; so does a library
caller::

    from genointerp.job import execute
    from genointerp.genotypes.gene_pca import GenePcaRequest, run
    summary = execute(run, GenePcaRequest(vcf="cohort.vcf.gz", genes="genes.bed", output="gene_pcs"))

Errors are ``genointerp.errors`` exceptions with one-line messages: ``UsageError`` for a request that
cannot run, ``InputError`` for data that cannot be read.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, Iterable, Iterator, Protocol, TypeVar

from genointerp.errors import UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.paths import names_stdin, names_stdout, same_input
from genointerp.options import check_declared, declared
from genointerp.report import SILENT, Reporter


class Request(Protocol):
    def check(self) -> None:
        """UsageError unless the settings can run together."""

    def inputs(self) -> Iterable[str | None]:
        """The paths the job reads (None and `-` allowed): outputs may not replace them."""


R = TypeVar("R", bound=Request)
Job = Callable[[R, AtomicOutputs, Reporter], dict]


def execute(run: Job, req: R, force: bool = False, report: Reporter | None = None) -> dict:
    """Check `req`, then run the job with its outputs committed together when it succeeds (and
    removed when it fails). `force` lets outputs replace existing files; `report` receives logs,
    warnings and progress (silent by default)."""
    check_values(req)
    req.check()
    with AtomicOutputs(force, inputs=req.inputs()) as outputs:
        return run(req, outputs, report or SILENT)


# characters no output format here can hold in a name or value: TSV and BED columns end at a tab,
# rows at a line end, VCF and JSON lines likewise; the other control characters are never text
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\udc80-\udcff]")  # how Python holds command-line bytes that are not UTF-8


def check_values(req) -> None:
    """The rules every request's values obey, whatever the command, so that none can reach an
    output it would break: a number is finite (no option means "unbounded" by inf; a missing bound
    is None), and text (names, labels, paths) holds no tab, line end or other control character.
    A field declared as an option (genointerp.options) is also held to its declared bounds and
    choices, the ones the command line enforces. A field (or each item of a list field) is named
    as its option: its declared name, else `--field-name`."""
    for f in dataclasses.fields(req):
        decl = declared(f)
        option = decl.name if decl is not None and decl.name else "--" + f.name.replace("_", "-")
        if decl is not None and (wrong := check_declared(getattr(req, f.name), decl)) is not None:
            raise UsageError(f"{option}: {wrong}")
        for item in _leaves(getattr(req, f.name)):
            if isinstance(item, float) and not math.isfinite(item):
                raise UsageError(f"{option}: {item} is not a finite number")
            if isinstance(item, str) and (bad := _CONTROL.search(item)) is not None:
                raise UsageError(f"{option}: {item!r} holds the control character {bad[0]!r}, which tab-separated "
                                 "tables, BED and VCF cannot hold")
            if isinstance(item, str) and _SURROGATE.search(item) is not None:  # bytes that were not UTF-8
                raise UsageError(f"{option}: {item!r} is not UTF-8 text, which every output here is written in")


def _leaves(value) -> Iterator:
    """The numbers and strings inside a field's value: itself, or the items (and keys) of the lists,
    tuples and dicts it holds (LABEL=VALUE options are pairs or dicts)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(key)
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def one_stdin(*inputs: tuple[str, str | None]) -> None:
    """UsageError when two of the (option, path) inputs are stdin (`-`, `/dev/stdin`, ...): it can
    be read only once."""
    names = [name for name, value in inputs if names_stdin(value)]
    if len(names) > 1:
        raise UsageError(f"{names[1]}: {names[0]} and {names[1]} are both - (stdin), which can be read only once")


def distinct_inputs(*inputs: tuple[str, str | None], why: str) -> None:
    """UsageError when two of the (option, path) inputs name one file, however spelt (`./x`, a
    link, another hard link, stdin by any name); `why` says why they must differ."""
    given = [(name, value) for name, value in inputs if value is not None]
    for i, (name, value) in enumerate(given):
        for first, earlier in given[:i]:
            if same_input(earlier, value):
                raise UsageError(f"{name}: {first} and {name} name the same file ({earlier}, {value}); {why}")


def stdin_once(option: str, paths: list[str], why: str) -> None:
    """UsageError when `-` (stdin) is among the values of one repeatable input `option` twice or more."""
    n = sum(names_stdin(p) for p in paths)
    if n > 1:
        raise UsageError(f"{option}: - (stdin) is given {n} times: {why}")


def one_stdout(*outputs: tuple[str, str | None]) -> None:
    """UsageError when two of the (option, path) outputs are `-` (stdout)."""
    names = [name for name, value in outputs if names_stdout(value)]
    if len(names) > 1:
        raise UsageError(f"{names[1]}: only one output can be - (stdout), and {names[0]} is - too")
