"""Illumina-like short-read simulation with exact ground truth, vectorised over reads.

Model: a fragment is drawn uniformly from a source's contigs (weighted by the number of valid start
positions; circular contigs wrap); single-end reads are the fragment itself, paired-end reads are its
two ends read towards each other. Each read gets one Phred quality per cycle from a QualityProfile,
a substitution with probability 10^(-Q/10), and insertions/deletions at per-base rates (the ART
Illumina model). Reads are exactly `read_length` long; a deletion makes the read consume one more
reference base, an insertion one fewer.

Truth coordinates are 0-based half-open on the source contig (forward strand). On a circular
contig `end` may exceed the contig length when a read spans the origin. When the source was
mutated with indels first (--ins-rate/--del-rate) the coordinates are mapped back to the
unmutated contig.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from genointerp.errors import InputError
from genointerp.seq.alphabet import N_CODE, reverse_complement_codes
from genointerp.seq.error_profile import N_QUALITY, QualitySampler, phred_error

MARGIN = 16  # template bases beyond the read so that deletions have reference to consume
_MAX_ROUNDS = 200  # rejection rounds before giving up on a source full of N
_P_ERR = phred_error(np.arange(256)).astype(np.float32)


@dataclass(frozen=True)
class Layout:
    read_length: int = 150
    paired: bool = False
    fragment_mean: float = 400.0
    fragment_sd: float = 50.0
    max_n: int = 7  # most N bases allowed in a read's reference window

    @property
    def max_span(self) -> int:
        if not self.paired:
            return self.read_length
        return max(self.read_length, math.ceil(self.fragment_mean + 6 * self.fragment_sd))


@dataclass(frozen=True)
class ErrorModel:
    """samplers: per-mate quality samplers for read_length cycles (see error_profile)."""

    samplers: tuple[QualitySampler, QualitySampler]
    ins_rate: float = 0.00009
    del_rate: float = 0.00011


@dataclass
class Contig:
    name: str
    length: int  # of the sequence reads are drawn from (mutated, if it was)
    offset: int  # index of position 0 in Source.padded
    origin: np.ndarray | None  # mutated position -> unmutated position, or None
    origin_length: int


class Source:
    """Every contig of one label, concatenated into one padded code array for vectorised gathers.

    padded: uint8 (total,) codes; each contig is surrounded by MARGIN bases on its left and
    max_span + MARGIN on its right: N for linear contigs, the contig's own sequence (wrapping
    around the origin) for circular ones.
    """

    def __init__(
        self,
        label: str,
        contigs: list[tuple[str, np.ndarray, np.ndarray | None, int]],
        circular: bool,
        layout: Layout,
    ) -> None:
        self.label = label
        self.circular = circular
        self.contigs: list[Contig] = []
        blocks = []
        right = layout.max_span + MARGIN
        pos = 0
        for name, codes, origin, origin_length in contigs:
            n = codes.size
            if circular:
                left_pad = codes[np.arange(-MARGIN, 0) % n]
                right_pad = codes[np.arange(n, n + right) % n]
            else:
                left_pad = np.full(MARGIN, N_CODE, np.uint8)
                right_pad = np.full(right, N_CODE, np.uint8)
            blocks += [left_pad, codes, right_pad]
            self.contigs.append(Contig(name, n, pos + MARGIN, origin, origin_length))
            pos += MARGIN + n + right
        self.padded = np.concatenate(blocks)
        lengths = np.array([c.length for c in self.contigs], dtype=np.int64)
        self.lengths = lengths
        self.offsets = np.array([c.offset for c in self.contigs], dtype=np.int64)
        starts = lengths if circular else np.maximum(lengths - layout.read_length + 1, 0)
        if starts.sum() == 0:
            raise InputError(f"source {label}: no contig is at least {layout.read_length} bp long")
        self.weights = starts / starts.sum()


@dataclass
class Reads:
    """One mate of m simulated fragments. codes/quals: uint8 (m, read_length)."""

    codes: np.ndarray
    quals: np.ndarray
    start: np.ndarray  # int64 (m,)
    end: np.ndarray
    reverse: np.ndarray  # bool (m,)
    errors: np.ndarray  # int32 (m,): substitutions + inserted + deleted bases


@dataclass
class Fragments:
    contig: np.ndarray  # int64 (m,) index into Source.contigs
    start: np.ndarray  # fragment start/end, 0-based half-open, truth coordinates
    end: np.ndarray
    reverse: np.ndarray  # fragment strand (= strand of read 1)
    mates: list[Reads]


def simulate(source: Source, m: int, layout: Layout, errors: ErrorModel, rng: np.random.Generator) -> Fragments:
    """Draw m fragments from `source` and sequence them (1 or 2 mates each): contig int64 (m,),
    start/end int64 (m,), reverse bool (m,), and per mate Reads with codes/quals uint8
    (m, read_length)."""
    L = layout.read_length
    contig, fstart, flen, frev, templates = _draw_templates(source, m, layout, rng)
    mates = []
    for mate, (p5, rev, tmpl) in enumerate(templates):
        codes, quals, consumed, nerr = _sequence(tmpl, errors.samplers[mate], errors.ins_rate, errors.del_rate, rng, L)
        start = np.where(rev, p5 + 1 - consumed, p5)
        mates.append(Reads(codes, quals, start, start + consumed, rev, nerr))
    for reads in mates:
        reads.start, reads.end = _truth_coordinates(source, contig, reads.start, reads.end)
    fs, fe = _truth_coordinates(source, contig, fstart, fstart + flen)
    return Fragments(contig, fs, fe, frev, mates)


def _draw_templates(source: Source, m: int, layout: Layout, rng: np.random.Generator):
    """Rejection-sample m fragments whose reads have at most layout.max_n N bases.

    Returns contig, fragment start, fragment length, fragment strand (each (m,)) and per mate
    (5' position, reverse flag, template codes uint8 (m, read_length + MARGIN)) in read orientation.
    """
    L, W = layout.read_length, layout.read_length + MARGIN
    kept: list[tuple] = []
    have, tried, accepted = 0, 0, 0
    for _ in range(_MAX_ROUNDS):
        need = m - have
        if need <= 0:
            break
        rate = max(accepted / tried, 0.02) if tried else 1.0
        batch = min(int(need / rate * 1.1) + 16, 4 * m + 64)
        contig = rng.choice(len(source.contigs), size=batch, p=source.weights)
        clen = source.lengths[contig]
        if layout.paired:
            flen = np.rint(rng.normal(layout.fragment_mean, layout.fragment_sd, size=batch)).astype(np.int64)
            flen = np.clip(flen, L, layout.max_span)
            if not source.circular:
                flen = np.minimum(flen, clen)
        else:
            flen = np.full(batch, L, dtype=np.int64)
        high = clen if source.circular else clen - flen + 1
        fstart = rng.integers(0, high)
        frev = rng.integers(0, 2, size=batch).astype(bool)
        # read 1 starts at the fragment's 5' end on its strand; read 2 at the other end, opposite strand
        left, right = fstart, fstart + flen - 1
        ends = [(np.where(frev, right, left), frev)]
        if layout.paired:
            ends.append((np.where(frev, left, right), ~frev))
        base = source.offsets[contig]
        templates, ok = [], np.ones(batch, dtype=bool)
        windows = np.lib.stride_tricks.sliding_window_view(source.padded, W)  # row copies beat index grids
        for p5, rev in ends:
            first = base + np.where(rev, p5 + 1 - W, p5)
            tmpl = windows[first]
            tmpl[rev] = reverse_complement_codes(tmpl[rev])
            ok &= (tmpl[:, :L] == N_CODE).sum(axis=1) <= layout.max_n
            templates.append((p5, rev, tmpl))
        tried += batch
        take = np.flatnonzero(ok)[:need]
        accepted += int(ok.sum())
        kept.append((contig[take], fstart[take], flen[take], frev[take], [(p[take], r[take], t[take]) for p, r, t in templates]))
        have += take.size
    if have < m:
        raise InputError(
            f"source {source.label}: could not find {m} read windows with at most {layout.max_n} N "
            f"(accepted {accepted} of {tried} tries); raise --max-n-frac or check the reference"
        )
    contig, fstart, flen, frev = (np.concatenate([k[i] for k in kept]) for i in range(4))
    mates = [
        tuple(np.concatenate([k[4][j][i] for k in kept]) for i in range(3)) for j in range(len(kept[0][4]))
    ]
    return contig, fstart, flen, frev, mates


def _sequence(tmpl: np.ndarray, sampler: QualitySampler, ins_rate: float, del_rate: float, rng: np.random.Generator, L: int):
    """Turn templates (m, L + MARGIN) into reads: (codes (m, L), quals (m, L), consumed (m,), errors (m,))."""
    m = tmpl.shape[0]
    codes = tmpl[:, :L].copy()
    consumed = np.full(m, L, dtype=np.int64)
    n_ins = rng.binomial(L, ins_rate, size=m) if ins_rate > 0 else np.zeros(m, np.int64)
    n_del = rng.binomial(L, del_rate, size=m) if del_rate > 0 else np.zeros(m, np.int64)
    n_del = np.minimum(n_del, MARGIN)
    rows = np.flatnonzero((n_ins + n_del) > 0)  # about 3 % of 150 bp reads
    if rows.size:
        codes[rows], consumed[rows] = _apply_indels(tmpl[rows], n_ins[rows], n_del[rows], L, rng)
    quals = sampler.sample(m, rng)
    is_n = codes == N_CODE
    quals[is_n] = N_QUALITY
    p_err = _P_ERR[quals]
    hit = (rng.random((m, L), dtype=np.float32) < p_err) & ~is_n
    codes[hit] = (codes[hit] + rng.integers(1, 4, size=int(hit.sum()), dtype=np.uint8)) % 4
    nerr = hit.sum(axis=1, dtype=np.int32) + n_ins.astype(np.int32) + n_del.astype(np.int32)
    return codes, quals, consumed, nerr


def _apply_indels(tmpl: np.ndarray, n_ins: np.ndarray, n_del: np.ndarray, L: int, rng: np.random.Generator):
    """Reads with indels: templates (r, L + MARGIN) -> (codes (r, L), reference bases consumed (r,)).

    Each read gets n_ins + n_del distinct random cycles. A deletion at cycle c skips one template
    base before cycle c is read; an insertion at cycle c emits a random base without consuming the
    template. So cycle c reads template position c - (insertions before c) + (deletions up to c).
    """
    r = tmpl.shape[0]
    rank = np.argsort(np.argsort(rng.random((r, L)), axis=1), axis=1)  # a random order of cycles per read
    ins = rank < n_ins[:, None]
    dele = (rank >= n_ins[:, None]) & (rank < (n_ins + n_del)[:, None])
    t = np.arange(L) - (np.cumsum(ins, axis=1) - ins) + np.cumsum(dele, axis=1)
    out = np.take_along_axis(tmpl, t, axis=1)
    out[ins] = rng.integers(0, 4, size=int(ins.sum()), dtype=np.uint8)
    return out, L - n_ins + n_del


def _truth_coordinates(source: Source, contig: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Wrap (circular) or clip (linear) coordinates, then map mutated positions back to the unmutated contig."""
    length = source.lengths[contig]
    if source.circular:
        span = end - start
        start = start % length
        end = start + span
    else:
        start = np.clip(start, 0, length)
        end = np.clip(end, 0, length)
    if all(c.origin is None for c in source.contigs):
        return start, end
    start, end = start.copy(), end.copy()
    for idx in np.unique(contig):
        c = source.contigs[idx]
        if c.origin is None:
            continue
        sel = contig == idx
        s, e = start[sel], end[sel]
        os_ = c.origin[s % c.length]
        oe = c.origin[(e - 1) % c.length] + 1
        oe = np.where(oe <= os_, oe + c.origin_length, oe)  # wrapped past the origin
        start[sel], end[sel] = os_, oe
    return start, end


def allocate(total: int, weights: dict[str, float]) -> dict[str, int]:
    """Split `total` reads over labels proportionally to weights, summing exactly (largest remainder)."""
    labels = list(weights)
    w = np.array([weights[k] for k in labels], dtype=np.float64)
    exact = total * w / w.sum()
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return dict(zip(labels, counts.tolist()))
