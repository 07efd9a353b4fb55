"""Training windows for track models: DNA windows of a reference with their binned target signal.

A window is `seq_len` bp from `start`; its targets are `target_bins` bins of `bin_size` bp over the
centre (see `WindowGeometry`). Whole chromosomes are held as uint8 codes and their binned targets
as float32 (n_bins, n_tracks) arrays, read once (and cached on disk), so epochs after the first
never touch the bigWig/bedGraph/peak files again. Windows tile the target signal without overlap;
validation and test windows come from held-out chromosomes, region lists, or by default the last
20 % of every chromosome, and training windows whose sequence reaches into a held-out target span
are dropped so no held-out base is ever seen in training.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.io.tfrecord import BasenjiDataset
from genointerp.io.tracks import TrackSpec, binned_signals
from genointerp.seq.alphabet import N_CODE
from genointerp.seq.onehot import one_hot

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class WindowGeometry:
    seq_len: int
    bin_size: int
    target_bins: int

    @property
    def crop(self) -> int:
        """bp of sequence context on each side of the target span."""
        return (self.seq_len - self.target_bins * self.bin_size) // 2

    @property
    def target_span(self) -> int:
        return self.target_bins * self.bin_size

    def check(self) -> None:
        extra = self.seq_len - self.target_span
        if self.bin_size < 1 or self.target_bins < 1 or extra < 0 or extra % 2:
            raise InputError(f"window of {self.seq_len} bp cannot centre {self.target_bins} bins of {self.bin_size} bp "
                             "(the sequence must be at least as long as the target span, with an even difference)")


def soft_clip(y: np.ndarray, clip: float | None) -> np.ndarray:
    """Basenji's soft clipping: values above `clip` become clip + sqrt(value - clip). Peak signal
    spans four orders of magnitude; unclipped, a few extreme bins dominate the Poisson gradient."""
    if not clip:
        return y
    return np.where(y > clip, clip + np.sqrt(np.maximum(y - clip, 0)), y).astype(y.dtype)


class GenomeWindows:
    """Windows over in-memory chromosomes: starts (W,) and chromosome indices (W,) into `chroms`.
    Targets come out soft-clipped at `clip` (None: as measured)."""

    def __init__(self, geometry: WindowGeometry, chroms: list[str], codes: list[np.ndarray],
                 targets: list[np.ndarray], chrom_index: np.ndarray, starts: np.ndarray,
                 clip: float | None = None) -> None:
        self.g, self.chroms, self.codes, self.targets = geometry, chroms, codes, targets
        self.chrom_index, self.starts = chrom_index.astype(np.int64), starts.astype(np.int64)
        self.clip = clip

    def __len__(self) -> int:
        return len(self.starts)

    def subset(self, idx: np.ndarray) -> "GenomeWindows":
        return GenomeWindows(self.g, self.chroms, self.codes, self.targets, self.chrom_index[idx], self.starts[idx],
                             self.clip)

    def sequence_codes(self, i: int, shift: int = 0) -> np.ndarray:
        """uint8 (seq_len,) codes of window i moved by `shift` bp; N past the chromosome ends."""
        codes = self.codes[self.chrom_index[i]]
        a = self.starts[i] + shift
        out = np.full(self.g.seq_len, N_CODE, dtype=np.uint8)
        lo, hi = max(a, 0), min(a + self.g.seq_len, len(codes))
        if hi > lo:
            out[lo - a : hi - a] = codes[lo:hi]
        return out

    def target(self, i: int) -> np.ndarray:
        """float32 (target_bins, n_tracks)."""
        b0 = (self.starts[i] + self.g.crop) // self.g.bin_size
        return soft_clip(self.targets[self.chrom_index[i]][b0 : b0 + self.g.target_bins], self.clip)

    def targets_of(self, idx: np.ndarray) -> np.ndarray:
        """float32 (B, target_bins, n_tracks) of windows idx, as batch() gives them unaugmented."""
        return np.stack([self.target(i) for i in idx])

    def batch(self, idx: np.ndarray, shifts: np.ndarray | None = None,
              flips: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One-hot float32 (B, seq_len, 4) and targets float32 (B, target_bins, n_tracks).

        A flip reverse-complements the sequence and reverses the bins; a shift moves the sequence
        only (by less than a bin, so the targets stay those of the unshifted window).
        """
        codes = np.stack([self.sequence_codes(i, int(shifts[i]) if shifts is not None else 0) for i in idx])
        y = self.targets_of(idx)
        x = one_hot(codes)
        if flips is not None:
            f = flips[idx]
            x[f] = x[f][:, ::-1, ::-1]
            y[f] = y[f][:, ::-1]
        return x, y

    def coordinates(self, i: int) -> tuple[str, int, int]:
        """(chrom, start, end) of window i's target span."""
        a = int(self.starts[i]) + self.g.crop
        return self.chroms[self.chrom_index[i]], a, a + self.g.target_span


class ArrayWindows:
    """Windows held as arrays (a Basenji TFRecord set): one-hot uint8 (W, L, 4), targets float32 (W, bins, T)."""

    def __init__(self, seqs: np.ndarray, targets: np.ndarray) -> None:
        self.seqs, self.targets = seqs, targets

    def __len__(self) -> int:
        return len(self.seqs)

    def targets_of(self, idx: np.ndarray) -> np.ndarray:
        """float32 (B, target_bins, n_tracks) of windows idx."""
        return np.asarray(self.targets[idx], dtype=np.float32)

    def batch(self, idx: np.ndarray, shifts: np.ndarray | None = None,
              flips: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Same contract as GenomeWindows.batch; a shift fills the bases it brings in with N (zeros)."""
        x = self.seqs[idx].astype(np.float32)
        y = self.targets[idx].copy()
        if shifts is not None:
            for j, i in enumerate(idx):
                s = int(shifts[i])
                if s > 0:
                    x[j, :-s], x[j, -s:] = x[j, s:].copy(), 0
                elif s < 0:
                    x[j, -s:], x[j, :-s] = x[j, :s].copy(), 0
        if flips is not None:
            f = flips[idx]
            x[f] = x[f][:, ::-1, ::-1]
            y[f] = y[f][:, ::-1]
        return x, y


def basenji_windows(folder: str, split: str, columns: list[int] | None = None) -> tuple[ArrayWindows, object]:
    """(all records of one split of a Basenji set in memory, its BasenjiDataset); target columns
    taken in the order `columns` (the model's track order) when given."""
    ds = BasenjiDataset(folder, split)
    seqs, targets = [], []
    for x, y in ds:
        seqs.append(x.astype(np.uint8))
        targets.append(y.astype(np.float32))
    if not seqs:
        raise InputError(f"{folder}: no {split} records")
    y = np.stack(targets)
    return ArrayWindows(np.stack(seqs), y if columns is None else y[..., columns]), ds


def basenji_tracks(folder: str, n: int) -> list:
    """Track specs of a Basenji set from its targets.txt (identifier, description; the group is the
    assay prefix of the description, e.g. `DNASE:` or `CHIP:`), or target_0.. when there is none."""
    path = Path(folder) / "targets.txt"
    if not path.exists():
        return [TrackSpec(f"target_{i}", "", "signal", "") for i in range(n)]
    lines = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    head, rows = lines[0], lines[1:]
    if len(rows) != n or "identifier" not in head:
        raise InputError(f"{path}: expected a header with `identifier` and {n} rows (statistics.json num_targets)")
    col = {name: head.index(name) for name in head}
    specs = []
    for row in rows:
        desc = row[col["description"]] if "description" in col else ""
        group = desc.split(":", 1)[0] if ":" in desc else "signal"
        specs.append(TrackSpec(row[col["identifier"]], "", group, desc))
    return specs


def tile_targets(region_start: int, region_end: int, length: int, g: WindowGeometry) -> np.ndarray:
    """Window starts (int64) whose target spans tile the bins inside [region_start, region_end) on
    the bin grid without overlap; only whole target spans that lie inside the chromosome."""
    first = -(-region_start // g.bin_size) * g.bin_size
    last = min(region_end, (length // g.bin_size) * g.bin_size)
    n = max((last - first) // g.target_span, 0)
    return first + np.arange(n, dtype=np.int64) * g.target_span - g.crop


def _cache_key(specs, chrom: str, length: int, bin_size: int, stat: str) -> str:
    """Changes when a track file, its selection or the binning changes."""
    parts = [chrom, str(length), str(bin_size), stat]
    for s in specs:
        st = os.stat(s.path)
        parts += [s.id, str(Path(s.path).resolve()), s.name, str(st.st_size), str(st.st_mtime_ns)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def load_chromosome_targets(specs, ref, chrom: str, bin_size: int, stat: str, cache: Path | None,
                            warn: Callable[[str], None]) -> np.ndarray:
    """float32 (ceil(length / bin_size), n_tracks), from the cache folder when it has them."""
    path = None
    if cache is not None:
        path = cache / f"targets.{chrom}.{_cache_key(specs, chrom, ref.lengths[chrom], bin_size, stat)}.npy"
        if path.exists():
            return np.load(path)
    values = binned_signals(specs, ref, chrom, bin_size, stat, warn)
    if path is not None:
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, values)
        os.replace(tmp, path)
    return values


@dataclass
class SplitRule:
    """Which target spans are held out: by chromosome, by region lists, or the default tail split."""

    valid_chroms: tuple[str, ...] = ()
    test_chroms: tuple[str, ...] = ()
    valid_regions: tuple = ()  # genointerp.io.regions.Region
    test_regions: tuple = ()
    tail: tuple[float, float] = (0.8, 0.9)  # default: [0.8, 0.9) of each chromosome validates, [0.9, 1) tests

    @property
    def default(self) -> bool:
        return not (self.valid_chroms or self.test_chroms or self.valid_regions or self.test_regions)

    def describe(self) -> dict:
        if self.default:
            return {"rule": "chromosome tail", "valid": f"{self.tail[0]:.0%}-{self.tail[1]:.0%} of each chromosome",
                    "test": f"{self.tail[1]:.0%}-100% of each chromosome"}
        return {"rule": "held out", "valid_chroms": list(self.valid_chroms), "test_chroms": list(self.test_chroms),
                "valid_regions": [f"{r.chrom}:{r.start}-{r.end}" for r in self.valid_regions],
                "test_regions": [f"{r.chrom}:{r.start}-{r.end}" for r in self.test_regions]}


def _overlaps(chrom: str, a: np.ndarray, b: np.ndarray, regions) -> np.ndarray:
    hit = np.zeros(len(a), dtype=bool)
    for r in regions:
        if r.chrom == chrom:
            hit |= (a < r.end) & (b > r.start)
    return hit


def assign_splits(windows: GenomeWindows, rule: SplitRule) -> np.ndarray:
    """int8 (W,): 0 train, 1 valid, 2 test, -1 dropped (training window whose sequence reaches
    into a held-out target span)."""
    g = windows.g
    split = np.zeros(len(windows), dtype=np.int8)
    t0 = windows.starts + g.crop
    t1 = t0 + g.target_span
    for ci, chrom in enumerate(windows.chroms):
        on = windows.chrom_index == ci
        if rule.default:
            length = len(windows.codes[ci])
            centre = (t0[on] + t1[on]) / 2 / length
            split[on] = np.where(centre >= rule.tail[1], 2, np.where(centre >= rule.tail[0], 1, 0))
            continue
        s = np.zeros(on.sum(), dtype=np.int8)
        if chrom in rule.valid_chroms:
            s[:] = 1
        s[_overlaps(chrom, t0[on], t1[on], rule.valid_regions)] = 1
        if chrom in rule.test_chroms:
            s[:] = 2
        s[_overlaps(chrom, t0[on], t1[on], rule.test_regions)] = 2
        split[on] = s
    held = split > 0
    for ci in range(len(windows.chroms)):
        on = windows.chrom_index == ci
        h0, h1 = t0[on & held], t1[on & held]
        if not len(h0):
            continue
        cand = np.flatnonzero(on & (split == 0))
        s0, s1 = windows.starts[cand], windows.starts[cand] + g.seq_len
        order = np.argsort(h0)
        h0, reach = h0[order], np.maximum.accumulate(h1[order])
        # a held-out span overlaps [s0, s1) iff it starts before s1 and ends after s0: test the
        # furthest end among the spans that start before s1
        j = np.searchsorted(h0, s1, side="left") - 1
        clash = (j >= 0) & (reach[np.maximum(j, 0)] > s0)
        split[cand[clash]] = -1
    return split


def build_windows(ref, specs, regions, g: WindowGeometry, stat: str, cache: Path | None,
                  max_n_fraction: float, log: Callable[[str], None], warn: Callable[[str], None],
                  clip: float | None = None) -> GenomeWindows:
    """Read each chromosome the regions touch once; tile the regions into windows."""
    chroms = list(dict.fromkeys(r.chrom for r in regions))
    codes, targets, chrom_index, starts = [], [], [], []
    for ci, chrom in enumerate(chroms):
        length = ref.lengths[chrom]
        codes.append(ref.codes(chrom, 0, length))
        targets.append(load_chromosome_targets(specs, ref, chrom, g.bin_size, stat, cache, warn))
        s = np.unique(np.concatenate([tile_targets(r.start, r.end, length, g) for r in regions if r.chrom == chrom]))
        chrom_index.append(np.full(len(s), ci))
        starts.append(s)
        log(f"{chrom}: {length:,} bp, {len(s):,} windows")
    w = GenomeWindows(g, chroms, codes, targets, np.concatenate(chrom_index), np.concatenate(starts), clip)
    keep = np.array([_n_fraction(w, i) <= max_n_fraction for i in range(len(w))], dtype=bool)
    if not keep.all():
        log(f"{int((~keep).sum()):,} windows skipped: more than {max_n_fraction:.0%} N in their target span (gaps)")
    w = w.subset(np.flatnonzero(keep))
    if not len(w):
        raise InputError("no windows: the regions are shorter than one target span "
                         f"({g.target_span:,} bp) or lie in gaps")
    return w


def _n_fraction(w: GenomeWindows, i: int) -> float:
    chrom, a, b = w.coordinates(i)
    return float((w.codes[w.chrom_index[i]][a:b] == N_CODE).mean())


def describe_split(windows: GenomeWindows, split: np.ndarray) -> str:
    counts = {name: int((split == k).sum()) for k, name in enumerate(SPLITS)}
    dropped = int((split < 0).sum())
    return ", ".join(f"{n} {c:,}" for n, c in counts.items()) + (f" windows ({dropped} dropped at split borders)" if dropped else " windows")
