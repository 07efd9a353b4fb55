"""Write signal tracks: bigWig per track, bedGraph, TSV, and called peaks as BED6+.

Inputs are `BinnedRun`s (float32 (n_bins, T) bins of one chromosome), the record type of binned
signal defined here so that the track method hands io its stitched predictions, or variable-span
`Intervals` (e.g. per-bp attention rollout with equal neighbours joined) for the
`write_intervals_*` writers. Writers write to the paths they are given (the caller passes
AtomicOutputs temporaries) and never print. Numbers in text outputs use `%.6g`, as UCSC's
bigWigToBedGraph does.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from genointerp.errors import InputError
from genointerp.io.atomic import STDOUT, make_readable, open_output, wants_gzip

_UNSAFE_ID = re.compile(r"[/\\\x00-\x1f\x7f]")
_CHUNK = 1 << 16  # bins per formatted text block: bounded memory on whole chromosomes

Peak = tuple[str, int, int, float, float]  # chrom, start, end, max, mean
# variable-span intervals of one chromosome: chrom, starts int64 (n,), ends int64 (n,), values (n,)
Intervals = tuple[str, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class BinnedRun:
    """Consecutive bins `[start + i * bin_size, ...)` of one chromosome.

    values: float32 (n_bins, T). The last bin may be partial (clipped at `chrom_length`); `end`
    is clipped accordingly.
    """

    chrom: str
    start: int
    bin_size: int
    values: np.ndarray
    chrom_length: int

    @property
    def n_bins(self) -> int:
        return int(self.values.shape[0])

    @property
    def end(self) -> int:
        return min(self.start + self.n_bins * self.bin_size, self.chrom_length)

    def bin_starts(self) -> np.ndarray:
        """int64 (n_bins,) start of every bin."""
        return self.start + np.arange(self.n_bins, dtype=np.int64) * self.bin_size

    def bin_ends(self) -> np.ndarray:
        """int64 (n_bins,) end of every bin, clipped to the chromosome length."""
        return np.minimum(self.bin_starts() + self.bin_size, self.chrom_length)


def check_track_ids(track_ids: Sequence[str]) -> None:
    """Track ids become file names and BED/TSV fields: refuse path separators, NUL and control
    characters (tab/newline would break the text formats), a leading dot (hidden files, `..`),
    empty ids and duplicates (two tracks would overwrite one file)."""
    seen: set[str] = set()
    for tid in track_ids:
        if not tid or tid.startswith(".") or _UNSAFE_ID.search(tid):
            raise InputError(
                f"track id {tid!r} is not a safe file name (no '/', '\\', control characters, "
                "leading '.' or empty id)"
            )
        if tid in seen:
            raise InputError(f"track id {tid!r} is given twice")
        seen.add(tid)


def _ordered_runs(
    runs: Sequence[BinnedRun], chrom_sizes: Sequence[tuple[str, int]], n_tracks: int
) -> list[BinnedRun]:
    """Runs sorted by (reference order, start); ValueError on overlap, unknown chromosome,
    length mismatch, bins past the chromosome end, track count mismatch or non-finite values."""
    rank = {c: i for i, (c, _) in enumerate(chrom_sizes)}
    sizes = dict(chrom_sizes)
    for run in runs:
        where = f"run {run.chrom}:{run.start}"
        if run.chrom not in rank:
            raise ValueError(f"{where}: chromosome not in the reference")
        if run.chrom_length != sizes[run.chrom]:
            raise ValueError(f"{where}: chromosome length {run.chrom_length} != {sizes[run.chrom]}")
        if run.values.ndim != 2 or run.values.shape[1] != n_tracks:
            raise ValueError(
                f"{where}: values of shape {run.values.shape}, expected (n, {n_tracks})"
            )
        if run.start < 0 or run.start % run.bin_size:
            raise ValueError(f"{where}: start is not on the bin grid")
        if run.n_bins == 0 or run.start + (run.n_bins - 1) * run.bin_size >= run.chrom_length:
            raise ValueError(f"{where}: empty, or bins past the chromosome end")
        if not np.all(np.isfinite(run.values)):
            raise ValueError(f"{where}: values are not all finite")
    ordered = sorted(runs, key=lambda r: (rank[r.chrom], r.start))
    for a, b in zip(ordered, ordered[1:]):
        if a.chrom == b.chrom and b.start < a.end:
            raise ValueError(f"runs {a.chrom}:{a.start}-{a.end} and {b.start}-{b.end} overlap")
    return ordered


@contextmanager
def _bigwig(path: Path | str, chrom_sizes: Sequence[tuple[str, int]]) -> Iterator:
    """A pyBigWig writer with the header `chrom_sizes` in the given (.fai) order; closed on exit,
    and made readable when the body succeeds."""
    import pyBigWig

    bw = pyBigWig.open(str(path), "w")
    if bw is None:
        raise InputError(f"{path}: cannot create the bigWig file")
    try:
        bw.addHeader([(c, int(n)) for c, n in chrom_sizes])
        yield bw
    finally:
        bw.close()
    make_readable(path)


def write_bigwigs(
    folder: Path,
    track_ids: Sequence[str],
    chrom_sizes: Sequence[tuple[str, int]],
    runs: Sequence[BinnedRun],
    suffix: str = ".bw",
) -> list[Path]:
    """One `<track id><suffix>` (`<track id>.bw`) per track in `folder`; returns their paths in track order.

    Track t is column t of every run's float32 (n_bins, T) values. Header: `chrom_sizes` in the
    given (.fai) order. Entries are fixed-span/fixed-step blocks of `bin_size` per run, in header
    order then position; a partial last bin at a chromosome end is its own entry with the shorter
    span, so no value is claimed past the chromosome.
    """
    check_track_ids(track_ids)
    ordered = _ordered_runs(runs, chrom_sizes, len(track_ids))
    paths = []
    for t, tid in enumerate(track_ids):
        path = Path(folder) / f"{tid}{suffix}"
        with _bigwig(path, chrom_sizes) as bw:
            for run in ordered:
                # pyBigWig's numpy path reads float64; float32 values convert exactly
                values = run.values[:, t].astype(np.float64)
                whole = run.n_bins
                last_len = run.end - (run.start + (run.n_bins - 1) * run.bin_size)
                if last_len < run.bin_size:
                    whole -= 1
                if whole:
                    bw.addEntries(
                        run.chrom, int(run.start), values=values[:whole],
                        span=run.bin_size, step=run.bin_size,
                    )
                if whole < run.n_bins:
                    bw.addEntries(
                        run.chrom, int(run.start + whole * run.bin_size), values=values[whole:],
                        span=int(last_len), step=int(last_len),
                    )
        paths.append(path)
    return paths


def write_intervals_bigwig(
    path: Path | str, chrom_sizes: Sequence[tuple[str, int]], intervals: Iterable[Intervals]
) -> None:
    """bigWig of variable-span intervals (bedGraph-style entries), one (chrom, starts, ends, values)
    block per chromosome: starts/ends int64 (n,), values float32 (n,), sorted and non-overlapping,
    blocks in header order. Header: every chromosome of `chrom_sizes` in the given (.fai) order."""
    with _bigwig(path, chrom_sizes) as bw:
        for chrom, starts, ends, values in intervals:
            bw.addEntries([chrom] * starts.size, starts.tolist(), ends=ends.tolist(),
                          values=values.astype(np.float64).tolist())


@contextmanager
def _text_output(path: Path | str) -> Iterator:
    """A binary stream to `path`, gzip when the name ends in .gz, `-` = stdout; the file is made
    readable when the body succeeds."""
    with open_output(path, gz=wants_gzip(path)) as out:
        yield out
    if str(path) != STDOUT:
        make_readable(path)


def _format_rows(chrom: str, starts: np.ndarray, ends: np.ndarray, values: np.ndarray) -> bytes:
    """Text lines `chrom start end v1 [v2 ...]` for values (n, k)."""
    fmt = f"{chrom}\t%d\t%d" + "\t%.6g" * values.shape[1] + "\n"
    cols = [starts.tolist(), ends.tolist()]
    cols += [values[:, j].tolist() for j in range(values.shape[1])]
    return "".join(fmt % row for row in zip(*cols)).encode()


def _write_rows(path: Path | str, header: str | None, blocks: Iterable[tuple], columns) -> None:
    """Text lines `chrom start end v...` of blocks (chrom, starts (n,), ends (n,), values (n, k)),
    values[:, columns] formatted _CHUNK rows at a time. gzip when the name ends in .gz; `-` = stdout."""
    with _text_output(path) as out:
        if header is not None:
            out.write(header.encode())
        for chrom, starts, ends, values in blocks:
            for lo in range(0, len(starts), _CHUNK):
                hi = min(lo + _CHUNK, len(starts))
                out.write(_format_rows(chrom, starts[lo:hi], ends[lo:hi], values[lo:hi, columns]))


def _bin_rows(runs: Iterable[BinnedRun]) -> Iterator[tuple]:
    for run in runs:
        yield run.chrom, run.bin_starts(), run.bin_ends(), run.values


def _sorted_by_position(runs: Sequence[BinnedRun], chrom_order: Sequence[str] | None):
    if chrom_order is None:
        return list(runs)  # the caller's order (already reference order from merge_regions)
    rank = {c: i for i, c in enumerate(chrom_order)}
    return sorted(runs, key=lambda r: (rank[r.chrom], r.start))


def write_bedgraph(
    path: Path | str,
    track_id: str,
    runs: Sequence[BinnedRun],
    track_index: int,
    chrom_order: Sequence[str] | None = None,
) -> None:
    """bedGraph of one track, column `track_index` of the runs' float32 (n_bins, T) values:
    `chrom start end value`, one line per bin, no track line (so that bedGraphToBigWig and
    bedtools read it as is). gzip when the name ends in .gz; `-` = stdout. Runs in the given
    order, or sorted by `chrom_order` when given."""
    check_track_ids([track_id])
    _write_rows(path, None, _bin_rows(_sorted_by_position(runs, chrom_order)), [track_index])


def write_intervals_bedgraph(path: Path | str, intervals: Iterable[Intervals]) -> None:
    """bedGraph `chrom start end value` of variable-span intervals, one line per interval, no track
    line: blocks (chrom, starts int64 (n,), ends int64 (n,), values float32 (n,)) written in the
    given order. gzip when the name ends in .gz; `-` = stdout."""
    _write_rows(path, None, ((c, s, e, v.reshape(-1, 1)) for c, s, e, v in intervals), [0])


def write_tsv(
    path: Path | str,
    track_ids: Sequence[str],
    runs: Sequence[BinnedRun],
    chrom_order: Sequence[str] | None = None,
) -> None:
    """TSV with header `chrom start end <track ids...>` and one line per bin with all T columns of
    the runs' float32 (n_bins, T) values. gzip when the name ends in .gz; `-` = stdout."""
    check_track_ids(track_ids)
    header = "\t".join(["chrom", "start", "end", *track_ids]) + "\n"
    _write_rows(path, header, _bin_rows(_sorted_by_position(runs, chrom_order)), list(range(len(track_ids))))


def write_peaks_bed(
    path: Path | str, track_id: str, peaks: Sequence[Peak], chrom_order: Sequence[str]
) -> None:
    """BED6+2: chrom start end name score strand max mean, sorted by reference order.

    name = `<track id>_<n>` (n from 1 in output order); score = min(1000, int(1000 * max / top))
    with top the track's highest peak maximum, so the strongest peak scores 1000 (0 when top is
    not positive); strand `.`. gzip when the name ends in .gz; `-` = stdout.
    """
    check_track_ids([track_id])
    rank = {c: i for i, c in enumerate(chrom_order)}
    for p in peaks:
        if p[0] not in rank:
            raise ValueError(f"peak on {p[0]}: chromosome not in the reference")
    ordered = sorted(peaks, key=lambda p: (rank[p[0]], p[1], p[2]))
    top = max((p[3] for p in ordered), default=0.0)
    lines = []
    for n, (chrom, start, end, vmax, vmean) in enumerate(ordered, 1):
        score = min(1000, int(1000.0 * vmax / top)) if top > 0 else 0
        name = f"{track_id}_{n}"
        lines.append(f"{chrom}\t{start}\t{end}\t{name}\t{max(score, 0)}\t.\t{vmax:.6g}\t{vmean:.6g}\n")
    with _text_output(path) as out:
        out.write("".join(lines).encode())

