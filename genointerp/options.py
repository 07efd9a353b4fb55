"""An option is declared once, on its request's field: flags, help, default, bounds and choices.

A request dataclass (genointerp.job) declares each command-line option as a field made by `opt`
(an option) or `arg` (a positional argument)::

    min_bits: float | None = opt(None, "--min-bits", min=0, min_open=True, help="...")

The CLI builds the command from these fields (genointerp.cli.declare), and `genointerp.job.execute`
checks a request's bounds and choices from the same declaration, so a library caller gets the
limits the command line enforces and no bound is written twice. What several commands share (a
model run's -m, --device, --precision, -t and --batch-size; the outputs' -o and --summary; --seed;
the reference FASTA) is declared here once, by the field factories below, which a request calls
with its own default or help where its command differs (deepTools' parent parsers, as fields).

This module imports no heavy library: the CLI reads the declarations of the request modules it
imports lazily, and `genointerp --help` must stay free of torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import MISSING, dataclass
from typing import Any, Callable

# the seeds every command's random generators take: numpy's and torch's take more, scikit-learn's
# (capsule-train's baselines) no more than 2**32 - 1
SEED_MAX = 2**32 - 1

# --precision's values (genointerp.runtime.Precision: fp32, bf16 autocast, fp16 autocast on CUDA)
PRECISIONS = ("32", "bf16", "16")


@dataclass(frozen=True)
class Declared:
    """How a request field is given on the command line.

    flags: the option's names (`-o`, `--output`; `--tsv/--no-tsv` for a flag pair); none for a
    positional argument. min/max: inclusive bounds (min_open: the lower one excluded), checked by
    the CLI and by `execute` alike. choices: the values allowed. cli_type: what the command line
    holds where it differs from the field's type (e.g. list[str] of LABEL=VALUE for a dict), and
    parse turns it into the field's value (raising ValueError with the message to show).
    deprecated: old spellings still accepted, each with a one-line warning. help may be a
    callable, called when the help is shown (a default read from the model folder)."""

    flags: tuple[str, ...] = ()
    help: str | Callable[[], str] = ""
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    cli_type: Any = None
    parse: Callable[[Any], Any] | None = None
    cli_default: Any = None  # the command line's default where it differs from the field's (with has_cli_default)
    has_cli_default: bool = False
    deprecated: tuple[str, ...] = ()
    show_default: bool | str = True
    hidden: bool = False

    @property
    def argument(self) -> bool:
        return not self.flags

    @property
    def name(self) -> str:
        """The option as messages name it: its long flag (`--min-bits`), or its metavar."""
        longs = [f.split("/")[0] for f in self.flags if f.startswith("--")]
        return longs[0] if longs else (self.flags[0] if self.flags else (self.metavar or ""))

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help


def opt(default: Any = MISSING, *flags: str, default_factory: Any = MISSING, **declared: Any) -> Any:
    """A request field that is the option `flags` (see Declared for the rest); a default of ...
    makes it required."""
    if default is ...:
        default = MISSING
    if isinstance(default, list):  # a mutable default is given as a copy per request
        default_factory, default = (lambda v=tuple(default): list(v)), MISSING
    elif isinstance(default, dict):
        default_factory, default = (lambda v=tuple(default.items()): dict(v)), MISSING
    if "cli_default" in declared:
        declared["has_cli_default"] = True
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={"cli": Declared(flags=flags, **declared)})


def arg(default: Any = MISSING, *, metavar: str, **declared: Any) -> Any:
    """A request field that is a positional argument, shown as `metavar`."""
    return opt(default, metavar=metavar, **declared)


def declared(field: dataclasses.Field) -> Declared | None:
    """The field's command-line declaration, None for a field no option sets."""
    return field.metadata.get("cli")


def check_declared(value: Any, decl: Declared) -> str | None:
    """What is wrong with `value` (each item of a list, each value of a dict) against its declared
    bounds and choices ("OPTION: VALUE is below LO", "... is outside LO..HI"); None: nothing. A value of None
    (an option not given) is not checked."""
    if value is None:
        return None
    items = list(value.values()) if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if decl.choices is not None and item not in decl.choices:
            return f"{item!r} is not one of {', '.join(decl.choices)}"
        if (decl.min is None and decl.max is None) or isinstance(item, bool) or not isinstance(item, (int, float)):
            continue
        if item != item:
            return f"{item} is not a number"
        if decl.min_open and (item <= decl.min or (decl.max is not None and item > decl.max)):
            return f"{item} is not above {decl.min}" if decl.max is None else f"{item} is not in ({decl.min}, {decl.max}]"
        if (decl.min is not None and item < decl.min) or (decl.max is not None and item > decl.max):
            if decl.max is None:
                return f"{item} is below {decl.min}"
            return f"{item} is outside {'' if decl.min is None else decl.min}..{decl.max}"
    return None


# ---- what several commands share, declared once ----

def seed(help: str = "Random seed: same inputs and seed, same outputs.") -> Any:
    """--seed (default 1; 0 to 2**32 - 1)."""
    return opt(1, "--seed", min=0, max=SEED_MAX, help=help)


def threads(help: str = "CPU threads for torch.") -> Any:
    """-t/--threads (default 1; capped at the CPUs this process may use when the job runs)."""
    return opt(1, "-t", "--threads", min=1, help=help)


def device(auto: str = "a GPU when there is one") -> Any:
    """--device auto|cpu|cuda|cuda:N (default auto, resolved by genointerp.job.execute); `auto`
    says what auto picks."""
    return opt("auto", "--device", help=f"auto ({auto}), cpu, cuda or cuda:N.")


def precision(help: str = "Autocast precision: 32, bf16, 16 (CUDA).") -> Any:
    """--precision 32|bf16|16 (default 32)."""
    return opt("32", "--precision", choices=PRECISIONS, help=help)


def batch_size(default: int, help: str = "") -> Any:
    """--batch-size (at least 1)."""
    return opt(default, "--batch-size", min=1, help=help)


def model(help: str, default: Any = None, **more: Any) -> Any:
    """-m/--model: a model folder the command reads."""
    return opt(default, "-m", "--model", help=help, **more)


def reference(required: bool = True, more: str = "", help: str | None = None, deprecated: tuple[str, ...] = ("--fasta",)) -> Any:
    """-R/--reference, the reference FASTA (samtools' and GATK's --reference; -R as GATK's, since
    bcftools' and samtools' -r means regions); `more` is said after its format."""
    text = help or f"Reference FASTA (plain or bgzip) with a .fai index (and .gzi){'; ' + more if more else ''}."
    return opt(MISSING if required else None, "-R", "--reference", help=text, metavar="FASTA", deprecated=deprecated)


def output(help: str, default: Any = MISSING) -> Any:
    """-o/--output (required where there is no default)."""
    return opt(default, "-o", "--output", help=help)


def summary(help: str = "Also write a summary JSON.") -> Any:
    """--summary: the run summary as JSON."""
    return opt(None, "--summary", help=help)


def comma_list(value: str | None) -> list[str]:
    """A comma-separated option value (--chroms chr1,chr2) as its items, empty ones dropped."""
    return [c.strip() for c in (value or "").split(",") if c.strip()]


def comma_numbers(value: str) -> list[float]:
    """parse for a comma-separated list of numbers (--train-fraction 0.1,0.5,1)."""
    try:
        return [float(v) for v in value.split(",")] if value else []
    except ValueError:
        raise ValueError(f"expected comma-separated numbers, got {value!r}") from None


def pairs(what: str) -> Callable[[list[str]], list[tuple[str, str]]]:
    """parse for a repeated KEY=VALUE option: its (key, value) pairs; `what` names the form."""
    def parse(values: list[str]) -> list[tuple[str, str]]:
        out = []
        for v in values:
            key, sep, val = v.partition("=")
            if not sep or not key or not val:
                raise ValueError(f"expected {what}, got {v!r}")
            out.append((key, val))
        return out
    return parse


def one_pair(what: str) -> Callable[[str], tuple[str, str]]:
    """parse for a single KEY=VALUE option: its (key, value)."""
    many = pairs(what)
    return lambda value: many([value])[0]


def number(text: str, kind: type, min_value=None, max_value=None, name: str = ""):
    """`text` (a value inside an option, e.g. the F of --fraction LABEL=F) as int or float; a
    ValueError saying what is wrong unless it is a finite number within min_value..max_value;
    `name` says which value it is in the message."""
    what = f"{name} {text!r}" if name else repr(text)
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{what} is not a {'whole ' if kind is int else ''}number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} is not a finite number")
    if (min_value is not None and value < min_value) or (max_value is not None and value > max_value):
        lo, hi = ("" if v is None else f"{v:g}" for v in (min_value, max_value))
        raise ValueError(f"{what} is outside {lo}..{hi}")
    return value


def numbers_by_key(what: str, kind: type, named: str = "") -> Callable[[list[str]], dict]:
    """parse for a repeated KEY=NUMBER option (--fraction viral=0.001): {key: number}, each a
    finite number of `kind` (named "KEY `named`" in messages where `named` is given); the field's
    declared bounds apply to the numbers."""
    many = pairs(what)

    def parse(values: list[str]) -> dict:
        return {key: number(text, kind, name=f"{key} {named}" if named else "") for key, text in many(values)}
    return parse
