"""Gene annotations: BED (chrom start end [name]) or GTF `gene` records.

BED is 0-based half-open. The gene name is column 4, or column 5 when column 4 is `.` (the
GENCODE protein-coding BED shipped with selene has `chrom start end . NAME`), else `chrom:start-end`.
GTF is 1-based inclusive: a `gene` record from `start` to `end` becomes [start-1, end); its name is
the `gene_name` attribute (else `gene_id`). gzip/bgzip files, `-` and pipes are read transparently
(`io.inputs`); a binary file is one error line.

Gene names repeated on one chromosome (paralog copies with one symbol, e.g. HIST2H2AA4) get `~2`,
`~3`, ... in start order, so that every gene has a distinct feature column.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from genointerp.errors import InputError
from genointerp.io.inputs import open_text

_GTF_ATTR = re.compile(r'(\S+)\s+"([^"]*)"')


@dataclass(frozen=True)
class Gene:
    name: str
    chrom: str
    start: int  # 0-based
    end: int  # exclusive


def read_genes(path: str) -> list[Gene]:
    """Genes sorted by (chrom in first-seen order, start, end, name).

    BED or GTF by the name (`.gtf`/`.gff`/`.gff2`, `.gz` or not), else by the first data line (9
    columns, integer columns 4-5, `gene_id "` in column 9: GTF), so that `-` and pipes work too."""
    path = str(path)
    is_gtf = re.search(r"\.(gtf|gff2?)(\.gz)?$", path) is not None
    by_name = is_gtf or re.search(r"\.bed(\.gz)?$", path) is not None
    genes: list[Gene] = []
    with open_text(path) as fh:  # streamed: a GENCODE GTF is over a GB of text
        for lineno, line in enumerate(fh, start=1):
            if not line.strip() or line.startswith(("#", "track", "browser")):
                continue
            if "\x00" in line:
                raise InputError(f"{path}: not a text file (it holds NUL bytes)")
            f = line.rstrip("\n").split("\t")
            if not by_name:
                is_gtf, by_name = _looks_like_gtf(f), True
            gene = _gtf_gene(f, path, lineno) if is_gtf else _bed_gene(f, path, lineno)
            if gene is not None:
                genes.append(gene)
    if not genes:
        raise InputError(f"{path}: no genes (expected BED lines or GTF 'gene' records)")
    order = {c: i for i, c in enumerate(dict.fromkeys(g.chrom for g in genes))}
    genes.sort(key=lambda g: (order[g.chrom], g.start, g.end, g.name))
    return _unique_names(genes)


def _looks_like_gtf(f: list[str]) -> bool:
    return len(f) == 9 and f[3].isdigit() and f[4].isdigit() and 'gene_id "' in f[8]


def _bed_gene(f: list[str], path: str, lineno: int) -> Gene | None:
    if len(f) < 3:
        raise InputError(f"{path}: line {lineno}: a BED line needs chrom, start, end")
    start, end = _coords(f[1], f[2], path, lineno)
    name = next((v for v in f[3:5] if v not in ("", ".")), f"{f[0]}:{start}-{end}")
    return Gene(name, f[0], start, end)


def _gtf_gene(f: list[str], path: str, lineno: int) -> Gene | None:
    if len(f) != 9:
        raise InputError(f"{path}: line {lineno}: a GTF line has 9 tab-separated columns, found {len(f)}")
    if f[2] != "gene":
        return None
    start, end = _coords(f[3], f[4], path, lineno)
    attrs = dict(_GTF_ATTR.findall(f[8]))
    name = attrs.get("gene_name") or attrs.get("gene_id")
    if not name:
        raise InputError(f"{path}: line {lineno}: gene record without gene_name or gene_id")
    return Gene(name, f[0], start - 1, end)


def _coords(start: str, end: str, path: str, lineno: int) -> tuple[int, int]:
    try:
        s, e = int(start), int(end)
    except ValueError:
        raise InputError(f"{path}: line {lineno}: start/end {start!r}, {end!r} are not integers") from None
    if s < 0 or e < s:
        raise InputError(f"{path}: line {lineno}: bad interval {start}-{end}")
    return s, e


def _unique_names(genes: list[Gene]) -> list[Gene]:
    seen: Counter = Counter()
    out = []
    for g in genes:
        seen[(g.chrom, g.name)] += 1
        k = seen[(g.chrom, g.name)]
        out.append(g if k == 1 else Gene(f"{g.name}~{k}", g.chrom, g.start, g.end))
    return out

