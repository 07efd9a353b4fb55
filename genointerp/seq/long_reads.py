"""Long-read simulation (nanopore-like and HiFi-like) with exact ground truth.

A read is drawn as pbsim draws one: its length from a log-normal distribution (mean and standard
deviation in bases, truncated to [min_length, max_length] and to the contig's length), its
accuracy from a normal distribution around the platform's mean (clipped to [MIN_ACCURACY,
MAX_ACCURACY]), and then each template base is, independently, deleted, substituted or followed by
one inserted random base, with probabilities (1 - accuracy) times the platform's error shares.
Nanopore-like reads default to 90 % accuracy with errors shared 40:25:35 (substitutions,
insertions, deletions: R9-era nanopore reads lose more bases than they gain); HiFi-like reads to
99 % with errors shared 35:30:35 (homopolymer indels as often as substitutions). Every base of a
read gets the Phred quality of the read's error rate (long-read qualities say little per base).

Truth coordinates are those of genointerp.seq.simulate: 0-based half-open on the source contig's
forward strand (a circular contig's `end` may pass its length); START..END is the template the read
consumed. Draws are made read by read from one generator, so the same seed gives the same reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from genointerp.errors import InputError
from genointerp.seq.alphabet import N_CODE, reverse_complement_codes
from genointerp.seq.simulate import Source, _truth_coordinates

MIN_ACCURACY, MAX_ACCURACY = 0.70, 0.9999
MAX_QUALITY = 60
_MAX_TRIES = 200  # draws of a template with too many N before giving up on a source


@dataclass(frozen=True)
class LongReadModel:
    """A long-read platform: read lengths (log-normal mean and sd, truncated to [min_length,
    max_length]) and errors (mean accuracy and its sd across reads; the shares of substitutions,
    insertions and deletions among errors, summing to 1)."""

    name: str
    length_mean: float = 8000.0
    length_sd: float = 5000.0
    min_length: int = 1000
    max_length: int = 20000
    accuracy: float = 0.90
    accuracy_sd: float = 0.02
    shares: tuple[float, float, float] = (0.40, 0.25, 0.35)  # substitution, insertion, deletion

    def check(self) -> None:
        if not (0 < self.min_length <= self.max_length):
            raise InputError(f"{self.name}: long reads need 0 < min length <= max length "
                             f"({self.min_length}, {self.max_length})")
        if not (MIN_ACCURACY <= self.accuracy <= MAX_ACCURACY):
            raise InputError(f"{self.name}: accuracy {self.accuracy:g} is outside {MIN_ACCURACY}-{MAX_ACCURACY}")


PLATFORMS = {
    "nanopore": LongReadModel("nanopore", accuracy=0.90, accuracy_sd=0.02, shares=(0.40, 0.25, 0.35)),
    "hifi": LongReadModel("hifi", length_mean=12000.0, length_sd=4000.0, accuracy=0.99, accuracy_sd=0.003,
                          shares=(0.35, 0.30, 0.35)),
}


@dataclass
class LongReads:
    """m simulated long reads: codes and quals, lists of m uint8 arrays (each read's own length);
    contig int64 (m,) into the source's contigs; start, end int64 (m,) truth coordinates; reverse
    bool (m,); errors int32 (m,) substituted + inserted + deleted bases."""

    codes: list[np.ndarray]
    quals: list[np.ndarray]
    contig: np.ndarray
    start: np.ndarray
    end: np.ndarray
    reverse: np.ndarray
    errors: np.ndarray


def draw_lengths(model: LongReadModel, m: int, rng: np.random.Generator) -> np.ndarray:
    """int64 (m,) read lengths: log-normal with the model's mean and sd, truncated to its bounds."""
    sigma2 = math.log(1 + (model.length_sd / model.length_mean) ** 2)
    mu = math.log(model.length_mean) - sigma2 / 2
    lengths = np.rint(rng.lognormal(mu, math.sqrt(sigma2), size=m)).astype(np.int64)
    return np.clip(lengths, model.min_length, model.max_length)


def sequence_template(tmpl: np.ndarray, accuracy: float, shares: tuple[float, float, float],
                      rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """A read of template codes (t,) at `accuracy`: (codes (~t,), errors). Each template base is
    deleted, substituted (to one of the 3 other bases; N stays N) or followed by an inserted
    random base, with probabilities (1 - accuracy) * shares."""
    e = 1.0 - accuracy
    p_sub, p_ins, p_del = (e * s for s in shares)
    u = rng.random(tmpl.size)
    dele = u < p_del
    sub = (u >= p_del) & (u < p_del + p_sub) & (tmpl < N_CODE)
    ins = (u >= p_del + p_sub) & (u < p_del + p_sub + p_ins)
    bases = tmpl.copy()
    bases[sub] = (bases[sub] + rng.integers(1, 4, size=int(sub.sum()), dtype=np.uint8)) % 4
    copies = 1 - dele.astype(np.int64) + ins
    out = np.repeat(bases, copies)
    ends = np.cumsum(copies)
    out[ends[ins] - 1] = rng.integers(0, 4, size=int(ins.sum()), dtype=np.uint8)
    return out, int(dele.sum() + sub.sum() + ins.sum())


def simulate_long(source: Source, m: int, model: LongReadModel, max_n_frac: float,
                  rng: np.random.Generator) -> LongReads:
    """m long reads of `source` (built with a Layout whose read_length is model.max_length, so that
    circular contigs are padded for the longest read). Contigs are drawn by length; a read longer
    than its contig is cut to the contig's length; templates with more than max_n_frac N are drawn
    again."""
    lengths = source.lengths
    weights = lengths / lengths.sum()
    codes, quals = [], []
    contig = np.zeros(m, np.int64)
    start, consumed = np.zeros(m, np.int64), np.zeros(m, np.int64)
    reverse, errors = np.zeros(m, bool), np.zeros(m, np.int32)
    for i in range(m):
        for _ in range(_MAX_TRIES):
            c = int(rng.choice(lengths.size, p=weights))
            t = int(min(draw_lengths(model, 1, rng)[0], lengths[c]))
            s = int(rng.integers(0, lengths[c] if source.circular else lengths[c] - t + 1))
            rev = bool(rng.integers(0, 2))
            tmpl = source.padded[source.offsets[c] + s : source.offsets[c] + s + t]
            if (tmpl == N_CODE).sum() <= max_n_frac * t:
                break
        else:
            raise InputError(f"source {source.label}: could not find a long-read template with at most "
                             f"{max_n_frac:g} N in {_MAX_TRIES} tries; raise --max-n-frac or check the reference")
        if rev:
            tmpl = reverse_complement_codes(tmpl)
        accuracy = float(np.clip(rng.normal(model.accuracy, model.accuracy_sd), MIN_ACCURACY, MAX_ACCURACY))
        read, nerr = sequence_template(tmpl, accuracy, model.shares, rng)
        q = min(MAX_QUALITY, max(1, round(-10 * math.log10(1 - accuracy))))
        qual = np.full(read.size, q, np.uint8)
        qual[read == N_CODE] = 2
        codes.append(read)
        quals.append(qual)
        contig[i], start[i], consumed[i], reverse[i], errors[i] = c, s, t, rev, nerr
    s, e = _truth_coordinates(source, contig, start, start + consumed)
    return LongReads(codes, quals, contig, s, e, reverse, errors)
