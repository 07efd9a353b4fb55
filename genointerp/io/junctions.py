"""Junctions between two sequences (e.g. a host chromosome and a viral genome) as VCF 4.3
breakends and BEDPE, and BEDPE read back.

A junction joins base `pos` (0-based) of `chrom` to base `mate_pos` of `mate_chrom`. Strands
follow BEDPE's breakpoint convention: '+' means the sequence kept on that side lies at and before
the base (the junction leaves it going right), '-' at and after it. In VCF breakend notation
(a record on `chrom` and its mate record on `mate_chrom`, both contigs declared in the header):

    strand '+', mate '-':  t[mate:pos[      strand '+', mate '+':  t]mate:pos]
    strand '-', mate '+':  ]mate:pos]t      strand '-', mate '-':  [mate:pos[t

The mate record is the same junction seen from the other side (its strand and the mate's
swapped), so `t[HPV16:367[` on the host pairs with `]20:2259]t` on HPV16. The two carry each
other's ID in MATEID and the junction's id in EVENT, as VCF 4.3 pairs breakends.

BEDPE: chrom1 start1 end1 chrom2 start2 end2 name score strand1 strand2, then any extra columns;
0-based half-open intervals (a precise breakpoint is its one base; an imprecise one its
confidence interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from genointerp.errors import InputError
from genointerp.io.inputs import open_text

BEDPE_COLUMNS = ["chrom1", "start1", "end1", "chrom2", "start2", "end2", "name", "score", "strand1", "strand2"]


@dataclass(frozen=True)
class Junction:
    id: str
    chrom: str
    pos: int  # 0-based base at the junction on chrom
    strand: str
    mate_chrom: str
    mate_pos: int
    mate_strand: str
    score: int
    start: int | None = None  # confidence interval on chrom, 0-based half-open (default: the base)
    end: int | None = None
    info: dict = field(default_factory=dict)  # VCF INFO, in order: value True is a flag, None left out
    extra: tuple = ()  # BEDPE extra columns

    def interval(self) -> tuple[int, int]:
        return (self.pos if self.start is None else self.start, self.pos + 1 if self.end is None else self.end)


def breakend_alt(j: Junction, ref_base: str) -> str:
    mate = f"{j.mate_chrom}:{j.mate_pos + 1}"
    if j.strand == "+":
        return f"{ref_base}[{mate}[" if j.mate_strand == "-" else f"{ref_base}]{mate}]"
    return f"]{mate}]{ref_base}" if j.mate_strand == "+" else f"[{mate}[{ref_base}"


# VCF 4.3's reserved INFO keys that pair breakends; write_vcf declares them itself
MATE_INFO_DEFS = [
    'ID=MATEID,Number=.,Type=String,Description="ID of mate breakends"',
    'ID=EVENT,Number=1,Type=String,Description="ID of the event (junction) the breakend belongs to"',
]
# INFO keys that describe `chrom`'s side of a junction alone: the mate record leaves them out
_OWN_SIDE_INFO = {"CIPOS"}


def _info_text(info: dict) -> str:
    parts = []
    for key, value in info.items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(key)
        elif isinstance(value, (list, tuple)):
            parts.append(f"{key}={','.join(str(v) for v in value)}")
        else:
            parts.append(f"{key}={value}")
    return ";".join(parts) or "."


def mate_of(j: Junction) -> Junction:
    """The junction seen from its mate's side: on mate_chrom at mate_pos, strands swapped, the
    mate's position taken as exact (start/end unset), INFO less the keys of `chrom`'s side alone
    (CIPOS)."""
    info = {k: v for k, v in j.info.items() if k not in _OWN_SIDE_INFO}
    return Junction(j.id, j.mate_chrom, j.mate_pos, j.mate_strand, j.chrom, j.pos, j.strand, j.score, info=info,
                    extra=j.extra)


def write_vcf(out: BinaryIO, junctions: list[Junction], contigs: list[tuple[str, int]], ref_bases: list[str],
              mate_bases: list[str], meta: list[str], info_defs: list[str], sides: tuple[str, str]) -> None:
    """Sites-only VCF 4.3: `meta` lines (without ##), `info_defs` (##INFO lines' insides) and
    MATEID/EVENT, then a pair of breakend records per junction: on `chrom` at its base
    (`ref_bases[i]`), ID `{id}_{sides[0]}`, and on `mate_chrom` at the mate's base (`mate_bases[i]`),
    ID `{id}_{sides[1]}`; each names the other in MATEID and the junction id in EVENT. Records are
    sorted by contig (in the order of `contigs`, which must declare every chrom and mate_chrom),
    position and ID, as tabix needs them; junction ids must be unique."""
    lines = ["##fileformat=VCFv4.3"] + [f"##{m}" for m in meta]
    lines += [f"##contig=<ID={name},length={length}>" for name, length in contigs]
    lines += [f"##INFO=<{d}>" for d in info_defs + MATE_INFO_DEFS]
    lines.append("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO")
    order = {name: i for i, name in enumerate(name for name, _ in contigs)}
    records = []
    for j, base, mate_base in zip(junctions, ref_bases, mate_bases, strict=True):
        own, other = f"{j.id}_{sides[0]}", f"{j.id}_{sides[1]}"
        for side, rec_id, mate_id, b in ((j, own, other, base), (mate_of(j), other, own, mate_base)):
            info = {"SVTYPE": side.info.get("SVTYPE"), "MATEID": mate_id, "EVENT": j.id}
            info.update((k, v) for k, v in side.info.items() if k not in info)
            text = f"{side.chrom}\t{side.pos + 1}\t{rec_id}\t{b}\t{breakend_alt(side, b)}\t.\tPASS\t{_info_text(info)}"
            records.append(((order[side.chrom], side.pos, rec_id), text))
    lines += [text for _, text in sorted(records)]
    out.write(("\n".join(lines) + "\n").encode())


def write_bedpe(out: BinaryIO, junctions: list[Junction], extra_columns: list[str]) -> None:
    """BEDPE with a `#`-prefixed header line naming the columns."""
    rows = ["#" + "\t".join(BEDPE_COLUMNS + extra_columns)]
    for j in junctions:
        lo, hi = j.interval()
        rows.append("\t".join(str(v) for v in (j.chrom, lo, hi, j.mate_chrom, j.mate_pos, j.mate_pos + 1, j.id,
                                               j.score, j.strand, j.mate_strand, *j.extra)))
    out.write(("\n".join(rows) + "\n").encode())


@dataclass(frozen=True)
class BedpeRow:
    chrom1: str
    start1: int
    end1: int
    chrom2: str
    start2: int
    end2: int
    name: str
    strand1: str
    strand2: str
    extra: tuple


def read_bedpe(path: str) -> list[BedpeRow]:
    """Rows of a BEDPE file (header and comment lines skipped); one error line for a bad row."""
    rows = []
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip() or line.startswith(("#", "track", "browser")):
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) < 10:
                raise InputError(f"{path}: line {lineno}: BEDPE needs 10 columns, found {len(f)}")
            try:
                s1, e1, s2, e2 = int(f[1]), int(f[2]), int(f[4]), int(f[5])
            except ValueError:
                raise InputError(f"{path}: line {lineno}: start/end columns are not integers") from None
            if f[8] not in "+-." or f[9] not in "+-.":
                raise InputError(f"{path}: line {lineno}: strands must be +, - or .")
            rows.append(BedpeRow(f[0], s1, e1, f[3], s2, e2, f[6], f[8], f[9], tuple(f[10:])))
    return rows
