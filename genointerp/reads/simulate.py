"""The simulate-reads job: references in, FASTQ (+ truth table) out, streamed in chunks.

Read names carry the truth, `|`-separated (contig names may contain `|`: parse the first two
fields from the left and the rest from the right):

    single-end:  LABEL|SERIAL|CONTIG|START|END|STRAND|ERRORS
    paired-end:  LABEL|SERIAL|CONTIG|START|END|STRAND|ERRORS1,ERRORS2/MATE

SERIAL numbers fragments from 0 in output order; START/END are 0-based half-open forward-strand
coordinates of the read (single-end) or fragment (paired-end); STRAND is the strand of the read
(of read 1 for pairs); ERRORS counts sequencing errors (substitutions + inserted + deleted bases).
Both mates of a pair share the name up to `/1` / `/2`, as aligners expect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.io.fastq import format_fastq
from genointerp.io.junctions import write_bedpe
from genointerp.io.sequences import read_reference
from genointerp.report import Reporter
from genointerp.reads.insertions import BEDPE_EXTRA, InsertionPlan, apply_insertions, insertion_counts
from genointerp.reads.sample_mix import SamplePlan, sample_sources
from genointerp.seq.alphabet import clean_reference
from genointerp.seq.error_profile import QualityProfile, builtin_profile, load_art_profile
from genointerp.seq.mutate import mutate_codes
from genointerp.seq.simulate import ErrorModel, Layout, Source, allocate, simulate

CHUNK = 50_000  # fragments per generation step: bounds memory, sets progress granularity
TRUTH_HEADER = "read_id\tlabel\tcontig\tstart\tend\tstrand\tmate\terrors\n"


@dataclass
class SimulationRequest:
    sources: list[tuple[str, str]]  # (label, path), a label may repeat
    layout: Layout
    num_reads: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    fractions: dict[str, float] = field(default_factory=dict)
    balance: bool = False
    circular: set[str] = field(default_factory=set)
    profile: str | None = None
    profile2: str | None = None
    read_ins_rate: float = 0.00009
    read_del_rate: float = 0.00011
    sub_rate: float = 0.0
    ins_rate: float = 0.0
    del_rate: float = 0.0
    seed: int = 1
    insertion: InsertionPlan | None = None  # integrate viral fragments into a host (truth as BEDPE)
    sample: SamplePlan | None = None  # a type mix at a viral load over a host (genointerp.reads.sample_mix)


def label_counts(req: SimulationRequest, lengths: dict[str, int]) -> dict[str, int]:
    """Reads per label from --count, or from -n with --balance / --fraction / length-proportional."""
    labels = list(lengths)
    for name in list(req.counts) + list(req.fractions) + sorted(req.circular):
        if name not in lengths:
            raise InputError(f"label {name!r} names no --source (labels: {', '.join(labels)})")
    if req.counts:
        missing = [lab for lab in labels if lab not in req.counts]
        if missing:
            raise InputError(f"--count given for some labels but not for {', '.join(missing)}")
        return {lab: req.counts[lab] for lab in labels}
    assert req.num_reads is not None
    fixed = sum(req.fractions.values())
    if fixed > 1 + 1e-9:
        raise InputError(f"--fraction values add up to {fixed:g}, more than 1")
    rest = [lab for lab in labels if lab not in req.fractions]
    if req.balance and not rest:
        raise InputError("--balance: --fraction already fixes every label's share, so there is nothing to balance")
    if not rest and abs(fixed - 1) > 1e-9:
        raise InputError(f"--fraction covers every label but adds up to {fixed:g}, not 1")
    weights = {lab: req.fractions[lab] for lab in req.fractions}
    rest_weight = {lab: 1.0 if req.balance else float(lengths[lab]) for lab in rest}
    total_rest = sum(rest_weight.values())
    for lab in rest:
        weights[lab] = (1 - fixed) * rest_weight[lab] / total_rest
    return allocate(req.num_reads, {lab: weights[lab] for lab in labels})


def _profile(path: str | None, mate: int) -> QualityProfile:
    return load_art_profile(path) if path else builtin_profile(mate)


def load_sources(req: SimulationRequest, log: Callable[[str], None]) -> dict[str, Source]:
    ref_rng = np.random.default_rng([req.seed, 1])  # separate streams: reads stay the same when
    mut_rng = np.random.default_rng([req.seed, 2])  # only the augmentation rates change
    by_label: dict[str, list] = {}
    for label, path in req.sources:
        records = read_reference(path)
        resolved = []
        for name, seq in records:
            codes, n_resolved = clean_reference(name, seq, ref_rng)
            if n_resolved:
                resolved.append(f"{name} ({n_resolved})")
            mutated, origin = mutate_codes(codes, req.sub_rate, req.ins_rate, req.del_rate, mut_rng)
            by_label.setdefault(label, []).append((name, mutated, origin, codes.size))
        log(f"{label}: {path}: {len(records)} contigs, {sum(len(s) for _, s in records):,} bp")
        if resolved:
            log(f"{path}: IUPAC ambiguity letters resolved to a random matching base in {', '.join(resolved)}")
    names = [c[0] for contigs in by_label.values() for c in contigs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"contig name {dup!r} appears in more than one --source; truth would be ambiguous")
    return {lab: Source(lab, contigs, lab in req.circular, req.layout) for lab, contigs in by_label.items()}


def run(req: SimulationRequest, out1: BinaryIO, out2: BinaryIO | None, out_truth: BinaryIO | None,
        report: Reporter, out_bedpe: BinaryIO | None = None) -> dict[str, int]:
    """Simulate and write reads (to out1, read 2 of pairs to out2 or interleaved in out1 without it,
    the truth table to out_truth if given, an insertion run's junctions to out_bedpe); returns reads
    per label."""
    L = req.layout.read_length
    samplers = (_profile(req.profile, 1).sampler(L), _profile(req.profile2 or req.profile, 2).sampler(L))
    errors = ErrorModel(samplers, req.read_ins_rate, req.read_del_rate)
    sources = load_sources(req, report.log)
    if req.insertion is not None:
        sources, junctions = apply_insertions(sources, req.insertion, req.layout, np.random.default_rng([req.seed, 3]))
        counts = insertion_counts(sources, req.insertion, req.layout, req.counts)
        report.log(f"{req.insertion.count} insertions of {req.insertion.viral_label} into {req.insertion.host_label}, "
                   f"{len(junctions)} junctions")
        if out_bedpe is not None:
            write_bedpe(out_bedpe, junctions, BEDPE_EXTRA)
    elif req.sample is not None:
        sources, counts, lines = sample_sources(sources, req.sample, req.layout, req.counts)
        for line in lines:
            report.log(line)
    else:
        counts = label_counts(req, {lab: int(s.lengths.sum()) for lab, s in sources.items()})
    labels = list(sources)
    total = sum(counts.values())
    if total == 0:
        raise InputError("nothing to simulate: the read count is 0")
    rng = np.random.default_rng(req.seed)
    order = rng.permutation(np.repeat(np.arange(len(labels), dtype=np.int16), [counts[lab] for lab in labels]))
    contig_names = {lab: np.array([c.name for c in s.contigs], dtype=object) for lab, s in sources.items()}

    paired = req.layout.paired
    interleave = paired and out2 is None
    with report.progress("simulating reads", total) as advance:
        if out_truth:
            out_truth.write(TRUTH_HEADER.encode())
        for first in range(0, total, CHUNK):
            chunk = order[first : first + CHUNK]
            records = [[] for _ in range(2 if paired else 1)]  # per mate: (serials, names, codes, quals)
            truth_rows: list[tuple[int, str]] | None = [] if out_truth else None
            for li, lab in enumerate(labels):
                serial = first + np.flatnonzero(chunk == li)
                if serial.size == 0:
                    continue
                frags = simulate(sources[lab], serial.size, req.layout, errors, rng)
                _collect(lab, serial, frags, contig_names[lab], paired, records, truth_rows)
            if interleave:
                out1.write(_interleave(records))
            else:
                out1.write(_fastq_block(records[0]))
                if paired:
                    out2.write(_fastq_block(records[1]))
            if out_truth:
                truth_rows.sort(key=lambda r: r[0])
                out_truth.write("".join(row for _, row in truth_rows).encode())
            advance(chunk.size)
    return counts


def _collect(label, serial, frags, names, paired, records, truth_rows) -> None:
    """Format read names (and truth rows when truth_rows is a list) for one label's fragments."""
    # plain Python lists: formatting numpy scalars one by one costs several times more
    sid, contig = serial.tolist(), names[frags.contig].tolist()
    strand = np.where(frags.reverse, "-", "+").tolist()
    if paired:
        e1, e2 = frags.mates[0].errors.tolist(), frags.mates[1].errors.tolist()
        fs, fe = frags.start.tolist(), frags.end.tolist()
        stem = [f"{label}|{s}|{c}|{a}|{b}|{d}|{x},{y}/" for s, c, a, b, d, x, y in zip(sid, contig, fs, fe, strand, e1, e2)]
    else:
        r = frags.mates[0]
        stem = [f"{label}|{s}|{c}|{a}|{b}|{d}|{x}"
                for s, c, a, b, d, x in zip(sid, contig, r.start.tolist(), r.end.tolist(), strand, r.errors.tolist())]
    for mate, reads in enumerate(frags.mates):
        ids = [f"{s}{mate + 1}" for s in stem] if paired else stem
        if truth_rows is not None:
            mate_strand = np.where(reads.reverse, "-", "+").tolist()
            m = mate + 1 if paired else 0
            truth_rows += [
                (2 * s + mate, f"{i}\t{label}\t{c}\t{a}\t{b}\t{d}\t{m}\t{e}\n")
                for s, i, c, a, b, d, e in zip(sid, ids, contig, reads.start.tolist(), reads.end.tolist(),
                                               mate_strand, reads.errors.tolist())
            ]
        records[mate].append((serial, ids, reads.codes, reads.quals))


def _sorted_mate(mate_records):
    serial = np.concatenate([r[0] for r in mate_records])
    order = np.argsort(serial, kind="stable")
    names = [n for r in mate_records for n in r[1]]
    codes = np.concatenate([r[2] for r in mate_records])[order]
    quals = np.concatenate([r[3] for r in mate_records])[order]
    return [names[i] for i in order], codes, quals


def _fastq_block(mate_records) -> bytes:
    names, codes, quals = _sorted_mate(mate_records)
    return format_fastq(names, codes, quals)


def _interleave(records) -> bytes:
    (n1, c1, q1), (n2, c2, q2) = (_sorted_mate(r) for r in records)
    names = [n for pair in zip(n1, n2) for n in pair]
    codes = np.stack([c1, c2], axis=1).reshape(-1, c1.shape[1])
    quals = np.stack([q1, q2], axis=1).reshape(-1, q1.shape[1])
    return format_fastq(names, codes, quals)
