"""Files written by attn-maps: a byte-reproducible .npz, and rollout tracks as bedGraph and bigWig
(per-bp pieces merged into intervals here, written by io.track_writers).

np.savez stamps every member with the current time; write_npz gives every member a fixed date so
the same arrays give the same bytes (members are stored uncompressed: attention weights hardly
compress, and np.load reads them without inflating).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from genointerp.io.atomic import make_readable
from genointerp.io.track_writers import write_intervals_bedgraph, write_intervals_bigwig

_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(path: Path | str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz (np.load-able) holding `arrays` in the given order, reproducible byte for byte."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
    make_readable(path)


Piece = tuple[str, int, np.ndarray]  # chrom, first bp, per-bp values


def merge_pieces(pieces: Sequence[Piece], chrom_sizes: Sequence[tuple[str, int]]):
    """Per-bp pieces (possibly overlapping, possibly hanging off a chromosome end) -> sorted,
    non-overlapping intervals [(chrom, starts int64 (n,), ends int64 (n,), values float32 (n,))],
    one per chromosome with pieces, overlaps averaged (in float64) and runs of equal values joined,
    chromosomes in `chrom_sizes` order. A piece's values are per bp, (L,) of any float dtype."""
    sizes = dict(chrom_sizes)
    by_chrom: dict[str, list[tuple[int, np.ndarray]]] = {}
    for chrom, start, values in pieces:
        lo, hi = max(start, 0), min(start + values.size, sizes[chrom])
        if lo < hi:
            by_chrom.setdefault(chrom, []).append((lo, np.asarray(values[lo - start: hi - start], np.float64)))
    out = []
    for chrom, _ in chrom_sizes:
        if chrom not in by_chrom:
            continue
        parts = sorted(by_chrom[chrom], key=lambda p: p[0])
        clusters: list[list[tuple[int, np.ndarray]]] = []
        end = -1
        for lo, v in parts:
            if lo < end:
                clusters[-1].append((lo, v))
            else:
                clusters.append([(lo, v)])
            end = max(end, lo + v.size)
        starts, ends, values = [], [], []
        for cl in clusters:
            c0 = cl[0][0]
            c1 = max(lo + v.size for lo, v in cl)
            total, count = np.zeros(c1 - c0), np.zeros(c1 - c0)
            for lo, v in cl:
                total[lo - c0: lo - c0 + v.size] += v
                count[lo - c0: lo - c0 + v.size] += 1
            vals = (total / count).astype(np.float32)
            change = np.flatnonzero(np.r_[True, vals[1:] != vals[:-1]])
            starts.append(c0 + change)
            ends.append(c0 + np.r_[change[1:], vals.size])
            values.append(vals[change])
        out.append((chrom, np.concatenate(starts), np.concatenate(ends), np.concatenate(values)))
    return out


def write_bedgraph(path: Path | str, intervals) -> None:
    """bedGraph `chrom start end value` (%.6g), no track line, from merge_pieces' intervals
    [(chrom, starts int64 (n,), ends int64 (n,), values float32 (n,))]; gzip when the name ends
    in .gz."""
    write_intervals_bedgraph(path, intervals)


def write_bigwig(path: Path | str, intervals, chrom_sizes: Sequence[tuple[str, int]]) -> None:
    """bigWig of merge_pieces' intervals [(chrom, starts int64 (n,), ends int64 (n,), values
    float32 (n,))]; header = every chromosome of the reference in .fai order."""
    write_intervals_bigwig(path, chrom_sizes, intervals)
