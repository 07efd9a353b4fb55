"""Regions to train on or predict over: a BED file checked against the reference, whole
chromosomes, or a `chr:start-end` option value. Coordinates are 0-based half-open; a Region's
`chrom` is always the reference's own spelling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from genointerp.errors import InputError, UsageError
from genointerp.io.chroms import chrom_alias
from genointerp.io.inputs import read_lines
from genointerp.io.reference import Reference

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Region:
    chrom: str  # reference name
    start: int  # 0-based
    end: int  # exclusive
    name: str = ""

    def __len__(self) -> int:
        return self.end - self.start


def parse_region(text: str, option: str = "--region") -> tuple[str, int, int]:
    """(chrom, start, end) of an option value `chr:start-end` (0-based, end exclusive; thousands
    separators allowed: chr20:31,000,000-31,000,200). The chromosome is as given, not yet matched
    to a reference. Raises UsageError (one line naming `option` and the value) when the text is not
    of that form or start >= end."""
    malformed = UsageError(f"{option} {text!r}: expected chr:start-end (0-based, end exclusive)")
    try:
        chrom, span = text.rsplit(":", 1)
        start, end = (int(v.replace(",", "")) for v in span.split("-"))
    except ValueError:
        raise malformed from None
    if not chrom:
        raise malformed
    if start >= end:
        raise UsageError(f"{option} {text!r}: empty or reversed region (need start < end)")
    return chrom, start, end


def read_regions(path: str, ref: Reference, warn: Warn | None = None) -> list[Region]:
    """Regions of a BED3+ file (gzip read transparently; `#`, `track`, `browser` lines skipped),
    in file order; name = column 4 unless missing or `.`. Chromosome names are matched to the
    reference with chr20 <-> 20 aliasing (one warning per name). Raises InputError (file:line)
    on a malformed line, start >= end, a region past the chromosome end, an unknown chromosome,
    or a file without regions."""
    path = str(path)
    lines = read_lines(path)
    regions = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith(("#", "track", "browser")):
            continue
        regions.append(_region(line.split("\t"), path, lineno, ref, warn))
    if not regions:
        raise InputError(f"{path}: no regions (expected BED lines: chrom, start, end)")
    return regions


def _region(f: list[str], path: str, lineno: int, ref: Reference, warn: Warn | None) -> Region:
    where = f"{path}:{lineno}"
    if len(f) < 3:
        raise InputError(f"{where}: a BED line needs chrom, start, end (tab-separated), found {len(f)} column(s)")
    try:
        start, end = int(f[1]), int(f[2])
    except ValueError:
        raise InputError(f"{where}: start/end {f[1]!r}, {f[2]!r} are not integers") from None
    if chrom_alias(f[0], ref.lengths) is None:
        shown = ", ".join(ref.names[:5]) + (", ..." if len(ref.names) > 5 else "")
        raise InputError(f"{where}: chromosome {f[0]} is not in the reference {ref.path} (it has {shown})")
    chrom = ref.resolve(f[0], path, warn)
    if start < 0 or start >= end:
        raise InputError(f"{where}: empty or reversed region {f[0]}:{start}-{end} (need 0 <= start < end)")
    length = ref.lengths[chrom]
    if end > length:
        raise InputError(f"{where}: region {f[0]}:{start:,}-{end:,} is off the end of {chrom} ({length:,} bp)")
    name = f[3].strip() if len(f) > 3 and f[3].strip() not in ("", ".") else ""
    return Region(chrom, start, end, name)


def whole_chromosomes(ref: Reference, names: Iterable[str] | None = None) -> list[Region]:
    """One region per chromosome (all in .fai order, or `names` in the given order, aliased)."""
    chroms = ref.names if names is None else [ref.resolve(n, "chromosome list") for n in names]
    return [Region(c, 0, ref.lengths[c], c) for c in chroms]
