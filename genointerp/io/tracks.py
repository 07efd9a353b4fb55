"""Target tracks: the targets table and binned signal from bigWig, bedGraph and BED/narrowPeak.

Every track file is read as a piecewise-constant signal over each chromosome: uncovered bases are
0, and intervals of one track that overlap combine by max (two peak calls over one base do not
make the base twice as strong). Values: bigWig = its values (exact intervals, not zoom levels),
bedGraph = column 4, narrowPeak = column 7 (signalValue), BED5+ = column 5 (score), BED3/4 = 1.0.

One text file may hold many tracks: ENCODE-DREAM ships 186 peak sets in one narrowPeak whose
column 4 is `CELL|TF|SET`; a TrackSpec's `name` keeps only the rows with that column 4. Each file
is parsed once (and cached) for all the specs that share it.

Binning uses interval arithmetic: every constant segment is split over the bins it touches and
added with bincount, so the cost follows the number of intervals, not the number of bases.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from genointerp.errors import InputError
from genointerp.io.chroms import chrom_alias
from genointerp.io.inputs import is_stream, open_binary, read_lines
from genointerp.io.reference import Reference

Warn = Callable[[str], None]
STATS = ("mean", "sum", "max")
FORMATS = ("bigwig", "bedgraph", "narrowpeak", "bed")

_FORMAT_PATTERNS = [
    ("bigwig", re.compile(r"\.(bw|bigwig)$", re.IGNORECASE)),
    ("bedgraph", re.compile(r"\.(bedgraph|bg)(\.gz)?$", re.IGNORECASE)),
    ("narrowpeak", re.compile(r"\.narrowpeak(\.gz)?$", re.IGNORECASE)),
    ("bed", re.compile(r"\.bed(\.gz)?$", re.IGNORECASE)),
]
_SUPPORTED = ".bw/.bigWig, .bedGraph/.bg[.gz], .narrowPeak[.gz], .bed[.gz]"
_BAD_ID = re.compile(r"[/\\\s]")


def _quiet(msg: str) -> None:
    pass


def track_format(path: str) -> str | None:
    """'bigwig', 'bedgraph', 'narrowpeak' or 'bed' from the file name; None if unsupported."""
    return next((fmt for fmt, pat in _FORMAT_PATTERNS if pat.search(path)), None)


@dataclass(frozen=True)
class TrackSpec:
    """One target track: `id` (names outputs, e.g. `<id>.bw`), file `path`, `group` (DNase, ChIP,
    CAGE... one head per group), free-text `description`, and `name`: for BED/narrowPeak, keep
    only rows whose column 4 equals it ("" = all rows)."""

    id: str
    path: str
    group: str
    description: str
    name: str = ""

    @property
    def format(self) -> str | None:
        return track_format(self.path)


# --- targets table -----------------------------------------------------------------------------

def read_targets(path: str) -> list[TrackSpec]:
    """Read a tab-separated targets table: header with `id` and `path` (required), `group`
    (default "signal"), `description`, `name` (optional). Relative track paths are taken from the
    targets file's folder. Raises InputError (file:line) on any problem, before any track is read.
    """
    path = str(path)
    lines = read_lines(path)
    numbered = [(i, line) for i, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise InputError(f"{path}: empty targets file (expected a header line with id and path)")
    head_line, head = numbered[0]
    columns = [c.strip() for c in head.lstrip("#").split("\t")]
    for need in ("id", "path"):
        if need not in columns:
            raise InputError(f"{path}:{head_line}: header has no '{need}' column (found {', '.join(columns)})")
    base = os.path.dirname(path)
    specs: list[TrackSpec] = []
    first_seen: dict[str, int] = {}
    for lineno, line in numbered[1:]:
        if line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) > len(columns):
            raise InputError(f"{path}:{lineno}: {len(fields)} tab-separated fields but the header has {len(columns)}")
        row = dict(zip(columns, fields + [""] * (len(columns) - len(fields))))
        specs.append(_target_row(row, path, lineno, base, first_seen))
    if not specs:
        raise InputError(f"{path}: no tracks (only a header line)")
    return specs


def tracks_named_in(path: str | None) -> list[str]:
    """The track files a targets table names, for a request's inputs(): files a run reads that no
    output may replace. Nothing for a stream (it can be read once, by the job) or a table that
    cannot be read (the job reports it with its line)."""
    if path is None or is_stream(path):
        return []
    try:
        return [spec.path for spec in read_targets(path)]
    except InputError:
        return []


def _target_row(row: dict, path: str, lineno: int, base: str, first_seen: dict[str, int]) -> TrackSpec:
    where = f"{path}:{lineno}"
    tid, tpath, name = row["id"], row["path"], row.get("name", "")
    if not tid or not tpath:
        raise InputError(f"{where}: empty id or path")
    if _BAD_ID.search(tid) or tid in (".", ".."):
        raise InputError(f"{where}: track id {tid!r} cannot name an output file (no /, \\ or spaces)")
    if tid in first_seen:
        raise InputError(f"{where}: duplicate track id {tid!r} (first on line {first_seen[tid]})")
    first_seen[tid] = lineno
    full = os.path.normpath(os.path.join(base, os.path.expanduser(tpath)))
    fmt = track_format(full)
    if fmt is None:
        raise InputError(f"{where}: {tpath}: unsupported track format (expected {_SUPPORTED})")
    if not os.path.isfile(full):
        raise InputError(f"{where}: track file {full} does not exist")
    if name and fmt not in ("bed", "narrowpeak"):
        raise InputError(f"{where}: name {name!r} selects BED/narrowPeak column 4 rows; {tpath} is {fmt}")
    group = row.get("group", "") or "signal"
    return TrackSpec(tid, full, group, row.get("description", ""), name)


# --- binned signal -----------------------------------------------------------------------------

def binned_signals(specs: Sequence[TrackSpec], ref: Reference, chrom: str, bin_size: int,
                   stat: str = "mean", warn: Warn | None = None) -> np.ndarray:
    """Binned signal of every track on reference chromosome `chrom`: float32 (n_bins, n_tracks),
    n_bins = ceil(length / bin_size), columns in `specs` order.

    stat: mean (over every base of the bin, uncovered = 0), sum, or max; the last partial bin is
    summarised over the bases it has. Track chromosome names are matched to `chrom` with
    chr20 <-> 20 aliasing (one warning). A track with no intervals there gives zeros and a warning.
    """
    warn = warn or _quiet
    if stat not in STATS:
        raise InputError(f"bin statistic {stat!r}: expected one of {', '.join(STATS)}")
    if bin_size < 1:
        raise InputError(f"bin size {bin_size}: must be at least 1 bp")
    length = ref.length(chrom)
    n_bins = -(-length // bin_size)
    out = np.zeros((n_bins, len(specs)), dtype=np.float32)
    by_file: dict[str, list[int]] = {}
    for j, spec in enumerate(specs):
        by_file.setdefault(spec.path, []).append(j)
    for path, cols in by_file.items():
        done: dict[str, tuple] = {}  # name -> sparse binned column, so repeated specs cost nothing
        source = _TrackSource(path, ref, chrom, warn)
        for j in cols:
            spec = specs[j]
            if spec.name not in done:
                s, e, v = source.intervals(spec.name)
                if s.size == 0:
                    what = f"rows named {spec.name!r}" if spec.name else "intervals"
                    warn(f"track {spec.id}: {path} has no {what} on {chrom}; its signal there is all zeros")
                done[spec.name] = _bin(*_flatten(s, e, v), length, bin_size, stat)
            at, values = done[spec.name]
            out[at, j] = values
    return out


class _TrackSource:
    """The intervals of one track file on one reference chromosome, read once for every spec."""

    def __init__(self, path: str, ref: Reference, chrom: str, warn: Warn) -> None:
        self.path, self.ref, self.chrom, self.warn = path, ref, chrom, warn
        self.format = track_format(path)
        if self.format is None:
            raise InputError(f"{path}: unsupported track format (expected {_SUPPORTED})")
        if not os.path.isfile(path):
            raise InputError(f"{path}: no such file")
        self.length = ref.length(chrom)
        if self.format == "bigwig":
            self._all = _bigwig_intervals(path, ref, chrom, warn)
            return
        st = os.stat(path)
        full = os.path.abspath(path)  # cache key that survives a change of folder
        try:
            self.table = _parse_text(full, self.format, st.st_mtime_ns, st.st_size)
        except InputError as exc:  # report the path as the user gave it
            msg = str(exc)
            raise InputError(path + msg[len(full):] if msg.startswith(full) else msg) from None
        file_chrom = chrom_alias(chrom, self.table.chroms)
        if file_chrom is None:
            self.rows = np.zeros(0, dtype=np.int64)
        else:
            if file_chrom != chrom:
                ref.resolve(file_chrom, path, warn)  # one warning per (file, name)
            self.rows = np.flatnonzero(self.table.chrom == self.table.chroms[file_chrom])
            past = self.rows[self.table.end[self.rows] > self.length]
            if past.size:
                i = past[0]
                raise InputError(
                    f"{path}:{self.table.line[i]}: interval {file_chrom}:{self.table.start[i]}-{self.table.end[i]} "
                    f"runs past the end of {chrom} ({self.length:,} bp in the reference FASTA); another assembly?")

    def intervals(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts int64, ends int64, values float64) of the rows named `name` ("" = all)."""
        if self.format == "bigwig":
            if name:
                raise InputError(f"{self.path}: a bigWig holds one track; name {name!r} applies to BED/narrowPeak")
            return self._all
        rows = self.rows
        if name:
            code = self.table.names.get(name)
            if code is None:
                some = [repr(n) for n in self.table.names if n][:3] or ["none"]
                raise InputError(f"{self.path}: no rows named {name!r} in column 4 "
                                 f"(names there: {', '.join(some)}{', ...' if len(self.table.names) > 4 else ''})")
            rows = rows[self.table.name[rows] == code]
        t = self.table
        return t.start[rows], t.end[rows], t.value[rows]


# --- text formats (bedGraph, BED, narrowPeak) --------------------------------------------------

@dataclass(frozen=True)
class _TextTable:
    """Every data row of one text track file: int codes for chromosome and column-4 name."""

    chroms: dict[str, int]
    names: dict[str, int]
    chrom: np.ndarray  # int32 (n,)
    name: np.ndarray  # int32 (n,)
    start: np.ndarray  # int64 (n,)
    end: np.ndarray  # int64 (n,)
    value: np.ndarray  # float64 (n,)
    line: np.ndarray  # int64 (n,) 1-based line numbers, for error messages


# (minimum columns, 0-based value column or None = 1.0 for short BED)
_LAYOUT = {"bedgraph": (4, 3), "narrowpeak": (7, 6), "bed": (3, 4)}


@functools.lru_cache(maxsize=4)
def _parse_text(path: str, fmt: str, mtime_ns: int, size: int) -> _TextTable:
    """Parse a whole text track file once (mtime/size in the key re-read a changed file)."""
    with open_binary(path) as fh:  # gzip and multi-member bgzip decompressed
        data = fh.read()
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    need, vcol = _LAYOUT[fmt]
    sep = None if fmt == "bedgraph" else b"\t"  # UCSC bedGraph may be space-separated
    maxsplit = max(vcol, 3) + 1
    named = fmt != "bedgraph"  # bedGraph column 4 is the value, not a name worth a dict entry
    chroms: dict[bytes, int] = {}
    names: dict[bytes, int] = {b"": 0}
    cl, nl, sl, el, vl, ll = [], [], [], [], [], []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line or line[:1] == b"#" or line.startswith((b"track", b"browser")):
            continue
        f = line.split(sep, maxsplit)
        if len(f) < need:
            if not line.strip():
                continue
            raise InputError(f"{path}:{lineno}: a {fmt} line needs at least {need} columns, found {len(f)}")
        try:
            s, e = int(f[1]), int(f[2])
        except ValueError:
            bad = ", ".join(repr(x[:20].decode(errors="replace")) for x in f[1:3])
            raise InputError(f"{path}:{lineno}: start/end {bad} are not integers") from None
        if len(f) > vcol:
            try:
                v = float(f[vcol])
            except ValueError:
                if fmt == "bed" and f[vcol] == b".":
                    v = 1.0
                else:
                    raise InputError(
                        f"{path}:{lineno}: value {f[vcol][:20].decode(errors='replace')!r} "
                        f"in column {vcol + 1} is not a number") from None
        else:
            v = 1.0
        cl.append(chroms.setdefault(f[0], len(chroms)))
        nl.append(names.setdefault(f[3], len(names)) if named and len(f) > 3 else 0)
        sl.append(s)
        el.append(e)
        vl.append(v)
        ll.append(lineno)
    if not ll:
        raise InputError(f"{path}: no intervals in this {fmt} file")
    t = _TextTable({k.decode(errors="replace"): c for k, c in chroms.items()},
                   {k.decode(errors="replace"): c for k, c in names.items()},
                   np.array(cl, dtype=np.int32), np.array(nl, dtype=np.int32),
                   np.array(sl, dtype=np.int64), np.array(el, dtype=np.int64),
                   np.array(vl, dtype=np.float64), np.array(ll, dtype=np.int64))
    bad = np.flatnonzero((t.start < 0) | (t.end < t.start))
    if bad.size:
        i = bad[0]
        raise InputError(f"{path}:{t.line[i]}: bad interval {t.start[i]}-{t.end[i]} (start must be >= 0 and <= end)")
    bad = np.flatnonzero(~np.isfinite(t.value))
    if bad.size:
        raise InputError(f"{path}:{t.line[bad[0]]}: value {t.value[bad[0]]} is not a finite number (NaN/inf)")
    return t


# --- bigWig -----------------------------------------------------------------------------------

_BIGWIG_MAGIC = bytes.fromhex("26fc8f88")  # 0x888FFC26, little-endian
_BW_WINDOW = 1 << 22  # bp per intervals() call: bounds the Python tuples held at once


def _bigwig_intervals(path: str, ref: Reference, chrom: str, warn: Warn):
    """(starts, ends, values) of a bigWig on reference chromosome `chrom`, exact base resolution."""
    import pyBigWig

    # Check the magic number first: libBigWig prints its own messages to stderr on a bad file.
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic not in (_BIGWIG_MAGIC, _BIGWIG_MAGIC[::-1]):
        raise InputError(f"{path}: not a bigWig file")
    try:
        bw = pyBigWig.open(path)
    except RuntimeError:
        bw = None
    if bw is None or not bw.isBigWig():
        raise InputError(f"{path}: not a readable bigWig file")
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    try:
        sizes = bw.chroms()
        name = chrom_alias(chrom, sizes)
        if name is None:
            return empty
        if name != chrom:
            ref.resolve(name, path, warn)
        length = ref.length(chrom)
        if sizes[name] != length:
            # Only the chromosome being read is compared: other assemblies differ on contigs
            # nobody asked for (hg19 chrM 16,571 bp vs GRCh37 MT 16,569 bp).
            raise InputError(f"{path}: {name} is {sizes[name]:,} bp here but {length:,} bp in the "
                             f"reference FASTA; another assembly?")
        parts = []
        for lo in range(0, length, _BW_WINDOW):
            hi = min(lo + _BW_WINDOW, length)
            iv = bw.intervals(name, lo, hi)
            if iv:
                a = np.array(iv, dtype=np.float64).reshape(-1, 3)
                # An interval straddling the window edge comes back in both windows: clip it.
                a[:, 0] = np.maximum(a[:, 0], lo)
                a[:, 1] = np.minimum(a[:, 1], hi)
                parts.append(a)
    finally:
        bw.close()
    if not parts:
        return empty
    a = np.concatenate(parts)
    if np.isnan(a[:, 2]).any():
        i = int(np.flatnonzero(np.isnan(a[:, 2]))[0])
        raise InputError(f"{path}: NaN value at {name}:{int(a[i, 0])}-{int(a[i, 1])}")
    return a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), a[:, 2]


# --- interval arithmetic ----------------------------------------------------------------------

def _ranges(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated aranges [first[i], first[i] + counts[i]) as one int64 vector."""
    total = int(counts.sum())
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(first, counts) + offsets


def _flatten(s: np.ndarray, e: np.ndarray, v: np.ndarray):
    """Intervals (any order, may overlap) -> sorted, disjoint constant segments (s, e, v) where
    overlaps take the max value. Disjoint input (bigWig, bedGraph) takes the fast path."""
    keep = e > s
    s, e, v = s[keep], e[keep], v[keep]
    order = np.argsort(s, kind="stable")
    s, e, v = s[order], e[order], v[order]
    if s.size <= 1 or bool(np.all(s[1:] >= e[:-1])):
        return s, e, v
    # Cut at every interval edge; each elementary piece takes the max of the intervals covering it.
    edges = np.unique(np.concatenate([s, e]))
    a, b = np.searchsorted(edges, s), np.searchsorted(edges, e)
    piece = _ranges(a, b - a)
    best = np.full(edges.size - 1, -np.inf)
    np.maximum.at(best, piece, np.repeat(v, b - a))
    covered = best > -np.inf
    return edges[:-1][covered], edges[1:][covered], best[covered]


_CHUNK = 1 << 21  # segments per pass: bounds the temporary (segment, bin) arrays


def _bin(s: np.ndarray, e: np.ndarray, v: np.ndarray, length: int, bin_size: int, stat: str):
    """Disjoint sorted segments within [0, length) -> (bins int64 (k,), values float64 (k,)) for
    the k bins the segments touch; every other bin is 0 whatever the statistic. Sparse, because
    a peak set covers ~1 % of a chromosome and the (n_bins, n_tracks) output is large."""
    parts = []
    for c in range(0, s.size, _CHUNK):
        ss, ee, vv = s[c : c + _CHUNK], e[c : c + _CHUNK], v[c : c + _CHUNK]
        first = ss // bin_size
        counts = (ee - 1) // bin_size - first + 1
        bins = _ranges(first, counts)  # non-decreasing: segments are sorted and disjoint
        owner = np.repeat(np.arange(ss.size), counts)
        overlap = np.minimum(ee[owner], (bins + 1) * bin_size) - np.maximum(ss[owner], bins * bin_size)
        vals = vv[owner]
        run = np.flatnonzero(np.diff(bins, prepend=-1))
        parts.append((bins[run], np.add.reduceat(vals * overlap, run), np.add.reduceat(overlap, run),
                      np.maximum.reduceat(vals, run)))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0)
    at, total, covered, peak = (np.concatenate(x) for x in zip(*parts))
    if len(parts) > 1:  # a bin cut by a chunk boundary appears twice: merge its entries
        run = np.flatnonzero(np.diff(at, prepend=-1))
        at, total = at[run], np.add.reduceat(total, run)
        covered, peak = np.add.reduceat(covered, run), np.maximum.reduceat(peak, run)
    if stat == "sum":
        return at, total
    bin_len = np.minimum((at + 1) * bin_size, length) - at * bin_size  # last bin may be partial
    if stat == "mean":
        return at, total / bin_len
    # A bin with any uncovered base also holds a 0 (matters when all its values are negative).
    return at, np.where(covered < bin_len, np.maximum(peak, 0.0), peak)
