"""Per-cycle base-quality profiles for read simulation (built-in HiSeq 2500 150 bp, or ART files).

A profile holds, for every sequencing cycle, the distribution of Phred qualities. Simulated reads
draw a quality per cycle and then a substitution error with probability 10^(-Q/10), which is how
an Illumina quality is defined and how ART turns its empirical profiles into errors.

ART's empirical profile format (e.g. HiSeq2500L150R1.txt in Debian's
art-nextgen-simulation-tools-profiles) has, per called base ('.' = all bases, then A, C, G, T, N)
and per 0-based cycle, two tab-separated lines: `<base> <cycle> q1 q2 ...` with the quality values
and `<base> <cycle> c1 c2 ...` with their cumulative counts. Only the '.' rows are used here.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from genointerp.errors import InputError

MAX_QUALITY = 63
N_QUALITY = 2  # Illumina reports no-calls (N) with Q2 ('#')


@dataclass(frozen=True)
class QualityProfile:
    """cdf: float64 (cycles, MAX_QUALITY + 1), cumulative P(Q <= q) for each cycle."""

    cdf: np.ndarray
    source: str

    @property
    def cycles(self) -> int:
        return self.cdf.shape[0]

    def mean_error_rate(self) -> np.ndarray:
        """Expected substitution rate per cycle, float64 (cycles,)."""
        pmf = np.diff(self.cdf, axis=1, prepend=0.0)
        return pmf @ phred_error(np.arange(MAX_QUALITY + 1))

    def sampler(self, length: int) -> "QualitySampler":
        """A sampler for reads of `length` cycles (refuses reads longer than the profile): its
        values uint8 (length, w) and thresholds float32 (length, w - 1)."""
        if length > self.cycles:
            raise InputError(
                f"quality profile {self.source} covers {self.cycles} cycles; "
                f"read length {length} needs a profile at least that long (--profile)"
            )
        values = np.zeros((length, MAX_QUALITY + 1), dtype=np.uint8)
        thresholds = np.full((length, MAX_QUALITY + 1), 2.0, dtype=np.float32)  # 2.0: never exceeded
        for c in range(length):
            pmf = np.diff(self.cdf[c], prepend=0.0)
            q = np.flatnonzero(pmf > 0)
            values[c, : q.size] = q
            thresholds[c, : q.size - 1] = self.cdf[c, q[:-1]]
        width = int((thresholds < 2.0).sum(axis=1).max()) + 1
        return QualitySampler(values[:, :width], thresholds[:, : width - 1])


@dataclass(frozen=True)
class QualitySampler:
    """Per cycle: the qualities that occur (values (cycles, w)) and the cumulative probabilities
    between them (thresholds (cycles, w - 1), padded with 2.0).

    Binned Illumina profiles have under ten distinct qualities per cycle, so counting how many
    thresholds a uniform exceeds takes a few vectorised comparisons over the whole batch.
    """

    values: np.ndarray
    thresholds: np.ndarray

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Qualities uint8 (n, cycles)."""
        cycles, width = self.values.shape
        u = rng.random((cycles, n), dtype=np.float32)  # cycle-major: each comparison streams rows
        idx = np.zeros((cycles, n), dtype=np.uint8)
        for j in range(width - 1):
            idx += u >= self.thresholds[:, j : j + 1]
        q = np.empty((cycles, n), dtype=np.uint8)
        for c in range(cycles):
            q[c] = self.values[c][idx[c]]
        return np.ascontiguousarray(q.T)


def phred_error(q: np.ndarray) -> np.ndarray:
    """Error probability of Phred quality q (number or array, any shape): float64 10^(-q/10)."""
    return np.power(10.0, -np.asarray(q, dtype=np.float64) / 10.0)


def load_art_profile(path: str | Path) -> QualityProfile:
    """Parse the '.' (all bases) rows of an ART empirical Illumina profile into a profile whose cdf
    is float64 (cycles, MAX_QUALITY + 1)."""
    rows: dict[int, list[list[int]]] = {}
    try:
        with open(path) as fh:
            for lineno, line in enumerate(fh, 1):
                fields = line.split("\t")
                if not line.strip() or fields[0] != ".":
                    continue
                try:
                    values = [int(x) for x in fields[1:]]
                except ValueError:
                    raise InputError(f"{path}: line {lineno}: not an ART profile row") from None
                rows.setdefault(values[0], []).append(values[1:])
    except UnicodeDecodeError:
        raise InputError(f"{path}: not an ART profile (binary content)") from None
    if not rows:
        raise InputError(f"{path}: no '.' rows found; is this an ART Illumina profile?")
    cycles = max(rows) + 1
    cdf = np.zeros((cycles, MAX_QUALITY + 1))
    for cycle in range(cycles):
        pair = rows.get(cycle)
        if pair is None or len(pair) != 2 or len(pair[0]) != len(pair[1]) or not pair[0]:
            raise InputError(f"{path}: cycle {cycle}: expected a quality row and a count row")
        quals, cum = np.array(pair[0]), np.array(pair[1], dtype=np.float64)
        if np.any(np.diff(cum) < 0) or np.any(quals > MAX_QUALITY) or np.any(quals < 0):
            raise InputError(f"{path}: cycle {cycle}: counts must be cumulative and qualities 0..{MAX_QUALITY}")
        step = np.zeros(MAX_QUALITY + 1)
        step[quals] = np.diff(cum, prepend=0.0)
        cdf[cycle] = np.cumsum(step) / cum[-1]
    return QualityProfile(cdf=cdf, source=str(path))


def save_profile_tsv(profile: QualityProfile, path: str | Path) -> None:
    """Write a compact profile table: cycle, quality, cumulative probability (non-zero steps only)."""
    with open(path, "w") as fh:
        fh.write("cycle\tquality\tcdf\n")
        for c in range(profile.cycles):
            pmf = np.diff(profile.cdf[c], prepend=0.0)
            for q in np.flatnonzero(pmf > 0):
                fh.write(f"{c}\t{q}\t{profile.cdf[c, q]:.6f}\n")


def load_profile_tsv(path: str | Path, source: str | None = None) -> QualityProfile:
    """Read a save_profile_tsv table back: cdf float64 (cycles, MAX_QUALITY + 1)."""
    table = np.loadtxt(path, delimiter="\t", skiprows=1, ndmin=2)
    cycles = int(table[:, 0].max()) + 1
    step = np.zeros((cycles, MAX_QUALITY + 1))
    for c, q, cum in table:
        step[int(c), int(q)] = cum
    # carry each cycle's cumulative value forward over qualities with no mass
    cdf = np.maximum.accumulate(step, axis=1)
    cdf /= cdf[:, -1:]
    return QualityProfile(cdf=cdf, source=source or str(path))


def builtin_profile(mate: int) -> QualityProfile:
    """The default HiSeq 2500 150 bp profile for read 1 or read 2 (see scripts/make_default_profile.py)."""
    name = f"hiseq2500_150_r{mate}.tsv"
    with resources.as_file(resources.files("genointerp.resources") / name) as p:
        return load_profile_tsv(p, source=f"built-in HiSeq 2500 150 bp R{mate}")
