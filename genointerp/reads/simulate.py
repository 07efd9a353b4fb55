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

from dataclasses import dataclass, replace
from typing import BinaryIO, Callable

import numpy as np

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.fastq import format_fastq, format_fastq_varied
from genointerp.io.junctions import write_bedpe
from genointerp.io.sequences import read_reference
from genointerp import options
from genointerp.job import one_stdout
from genointerp.options import numbers_by_key, one_pair, opt, pairs
from genointerp.report import Reporter
from genointerp.reads.insertions import BEDPE_EXTRA, InsertionPlan, apply_insertions, insertion_counts
from genointerp.reads.sample_mix import SamplePlan, sample_sources
from genointerp.seq.alphabet import clean_reference
from genointerp.seq.error_profile import QualityProfile, builtin_profile, load_art_profile
from genointerp.seq.mutate import mutate_codes
from genointerp.seq.long_reads import PLATFORMS, LongReadModel, simulate_long
from genointerp.seq.simulate import ErrorModel, Layout, Source, allocate, simulate

CHUNK = 50_000  # fragments per generation step: bounds memory, sets progress granularity
TRUTH_HEADER = "read_id\tlabel\tcontig\tstart\tend\tstrand\tmate\terrors\n"


@dataclass
class SimulateReadsRequest:
    """simulate-reads: the fields are its options, LABEL=VALUE ones as pairs or dicts (files as
    paths, `-` for stdout)."""

    source: list[tuple[str, str]] = opt(
        ..., "-s", "--source", metavar="LABEL=PATH", cli_type=list[str], parse=pairs("LABEL=PATH"),
        help='Reference with its label: FASTA (plain/gzip/bgzip) or GenBank. Repeat for more; a label may repeat.')
    output: str = opt(
        ..., "-o", "--output",
        help='FASTQ out (read 1, or interleaved pairs); .gz compresses; - is stdout.')
    num_reads: int | None = opt(None, "-n", "--num-reads", min=1, help='Total reads (fragments when paired).')
    count: dict[str, int] = opt(
        {}, "--count", metavar="LABEL=N", min=0, cli_type=list[str], parse=numbers_by_key("LABEL=N", int),
        help='Reads for one label (instead of -n); give every label.')
    balance: bool = opt(
        False, "--balance",
        help=('Equal reads per label (default: proportional to reference length); with --fraction, among the labels'
              ' without one.'))
    fraction: dict[str, float] = opt(
        {}, "--fraction", metavar="LABEL=F", min=0, max=1, cli_type=list[str], parse=numbers_by_key("LABEL=F",
        float),
        help='Fixed share of -n for a label, e.g. viral=0.001.')
    circular: list[str] = opt(
        [], "--circular", metavar="LABEL",
        help='Contigs of this label are circular (reads may span the origin).')
    read_length: int = opt(150, "-l", "--read-length", min=20, max=1000, help='Read length (bp).')
    paired: bool = opt(False, "--paired", help='Paired-end reads (with --output2, or interleaved in --output).')
    output2: str | None = opt(None, "--output2", help='FASTQ for read 2 of pairs.')
    fragment_mean: float = opt(400.0, "--fragment-mean", min=1, help='Mean fragment length (paired).')
    fragment_sd: float = opt(50.0, "--fragment-sd", min=0, help='Fragment length standard deviation (paired).')
    profile: str | None = opt(
        None, "--profile",
        help='ART empirical Illumina profile for read 1 (default: built-in HiSeq 2500 150 bp).')
    profile2: str | None = opt(
        None, "--profile2",
        help='ART profile for read 2 (default: --profile, else built-in R2).')
    read_ins_rate: float = opt(0.00009, "--read-ins-rate", min=0, max=0.1, help='Sequencing insertion rate per base.')
    read_del_rate: float = opt(0.00011, "--read-del-rate", min=0, max=0.1, help='Sequencing deletion rate per base.')
    sub_rate: float = opt(
        0.0, "--sub-rate", min=0, max=0.75,
        help='Mutate the references first: substitution rate (XVir used 0.0375-0.15).')
    ins_rate: float = opt(0.0, "--ins-rate", min=0, max=0.5, help='Mutate the references first: insertion rate.')
    del_rate: float = opt(0.0, "--del-rate", min=0, max=0.5, help='Mutate the references first: deletion rate.')
    max_n_frac: float = opt(
        0.05, "--max-n-frac", min=0, max=1,
        help='Skip reference windows with more N than this fraction of the read.')
    truth: str | None = opt(
        None, "--truth",
        help='Also write the truth as a TSV table (one row per read).')
    insert: tuple[str, str] | None = opt(
        None, "--insert", metavar="VIRAL=HOST", cli_type=str | None, parse=one_pair("VIRAL=HOST"),
        help=("Insertion mode: integrate fragments of the VIRAL label's genomes into the HOST label's contigs "
              "(VIRUSBreakend's protocol); reads come from the host with its insertions at --depth, other labels "
              'from --count.'))
    insertions: int = opt(
        10, "--insertions", min=1,
        help='Insertion mode: how many fragments to integrate (two junctions each).')
    insert_length: int = opt(
        2000, "--insert-length", min=50,
        help='Insertion mode: length of each viral fragment (bp).')
    host_deletion: int = opt(10, "--host-deletion", min=0, help='Insertion mode: host bases deleted at each site.')
    depth: float | None = opt(None, "--depth", min=0.01, help='Insertion mode: read depth of the host (instead of -n).')
    truth_bedpe: str | None = opt(
        None, "--truth-bedpe",
        help='Insertion mode: write the junctions as BEDPE (host first).')
    sample: tuple[str, str] | None = opt(
        None, "--viral-sample", metavar="VIRAL=HOST", cli_type=str | None, parse=one_pair("VIRAL=HOST"),
        deprecated=("--sample",),  # --sample names a sample in classify-reads and find-integrations
        help=("Sample mode: a tumour-like sample of the HOST label's reads (--count) holding the VIRAL label's "
              "genomes at --viral-load; each genome's reads are labelled VIRAL:CONTIG (e.g. viral:HPV16) in the "
              'names and the truth table.'))
    viral_load: float = opt(
        1.0, "--viral-load", min=0,
        help='Sample mode: viral copies per host haploid genome, all types together.')
    type_mix: dict[str, float] = opt(
        {}, "--type-mix", metavar="CONTIG=W", min=0, cli_type=list[str], parse=numbers_by_key("CONTIG=W", float),
        help=('Sample mode: weight of a viral genome (repeatable); genomes not named get none (default: equal '
              'weights).'))  # contig -> weight
    host_genome_size: float | None = opt(
        None, "--host-genome-size", min=1,
        help="Sample mode: the host genome size the copies refer to (default: the HOST label's length).")
    platform: str = opt(
        "illumina", "--platform", choices=("illumina",) + tuple(PLATFORMS),
        help=("Sequencer: illumina (short reads, -l, --profile); nanopore (log-normal lengths 1-20 kb, mean 8 kb, "
              "90 % accuracy, indel-rich) or hifi (mean 12 kb, 99 %): long single-end reads, pbsim-like."))
    long_mean: float | None = opt(None, "--long-mean", min=100,
                                  help="Long reads: mean length (bp; default the platform's).")
    long_sd: float | None = opt(None, "--long-sd", min=0, help="Long reads: length standard deviation (bp).")
    long_min: int | None = opt(None, "--long-min", min=50, help="Long reads: shortest read (bp; default 1000).")
    long_max: int | None = opt(None, "--long-max", min=50, max=1_000_000,
                               help="Long reads: longest read (bp; default 20000).")
    accuracy: float | None = opt(
        None, "--accuracy", min=0.7, max=0.9999,
        help="Long reads: mean per-read accuracy (default: nanopore 0.90, hifi 0.99).")
    seed: int = options.seed("Random seed: same inputs and seed give byte-identical output.")

    def long_model(self) -> LongReadModel | None:
        """The long-read platform with the options given (None: illumina)."""
        if self.platform == "illumina":
            return None
        base = PLATFORMS[self.platform]
        given = {"length_mean": self.long_mean, "length_sd": self.long_sd, "min_length": self.long_min,
                 "max_length": self.long_max, "accuracy": self.accuracy}
        return replace(base, **{k: v for k, v in given.items() if v is not None})

    def check(self) -> None:
        if self.platform == "illumina":
            given = [f for f, v in (("--long-mean", self.long_mean), ("--long-sd", self.long_sd),
                                    ("--long-min", self.long_min), ("--long-max", self.long_max),
                                    ("--accuracy", self.accuracy)) if v is not None]
            if given:
                raise UsageError(f"{given[0]}: long-read options need --platform nanopore or hifi")
        else:
            if self.paired or self.insert is not None or self.sample is not None or self.profile or self.profile2:
                raise UsageError(f"--platform: {self.platform} reads are single-end reads of -n/--count; drop "
                                 "--paired/--insert/--viral-sample/--profile")
            try:
                self.long_model().check()
            except InputError as exc:
                raise UsageError(f"--platform: {exc}") from None
        if self.sample is not None:
            if self.insert is not None or self.num_reads is not None or self.balance or self.fraction:
                raise UsageError("--viral-sample: with --viral-sample the viral reads come from --viral-load and the others from "
                                 "--count; drop --insert/-n/--balance/--fraction")
        elif self.type_mix or self.host_genome_size is not None:
            raise UsageError("--viral-sample: --type-mix and --host-genome-size belong to sample mode: give --viral-sample "
                             "VIRAL=HOST")
        if self.insert is not None:
            if self.depth is None:
                raise UsageError("--insert: insertion mode draws the host's reads at a depth: give --depth")
            if self.num_reads is not None or self.balance or self.fraction:
                raise UsageError("--insert: with --insert the reads come from --depth (and --count for other labels); "
                                 "drop -n/--balance/--fraction")
        elif self.depth is not None or self.truth_bedpe is not None:
            raise UsageError("--insert: --depth and --truth-bedpe belong to insertion mode: give --insert VIRAL=HOST")
        if self.insert is None and self.sample is None and (self.num_reads is None) == (not self.count):
            raise UsageError("--num-reads: give either -n/--num-reads or --count for every label")
        if self.count and (self.balance or self.fraction):
            raise UsageError("--count: --count fixes every label's reads; drop --balance/--fraction")
        if self.output2 and not self.paired:
            raise UsageError("--output2: --output2 needs --paired")
        if self.paired and self.fragment_mean < self.read_length:
            raise UsageError(f"--fragment-mean: fragment mean {self.fragment_mean:g} is shorter than the read length "
                             f"{self.read_length}")
        one_stdout(("--output", self.output), ("--output2", self.output2), ("--truth", self.truth),
                   ("--truth-bedpe", self.truth_bedpe))

    def inputs(self) -> list[str | None]:
        return [path for _, path in self.source] + [self.profile, self.profile2]

    def layout(self) -> Layout:
        model = self.long_model()
        if model is not None:  # max_span = the longest read: circular contigs are padded for it
            return Layout(model.min_length, True, float(model.max_length), 0.0)
        return Layout(self.read_length, self.paired, self.fragment_mean, self.fragment_sd,
                      max_n=int(self.max_n_frac * self.read_length))

    def insertion_plan(self) -> InsertionPlan | None:
        return None if self.insert is None else InsertionPlan(*self.insert, self.insertions, self.depth,
                                                              self.insert_length, self.host_deletion)

    def sample_plan(self) -> SamplePlan | None:
        return None if self.sample is None else SamplePlan(*self.sample, self.viral_load, dict(self.type_mix),
                                                           self.host_genome_size)


def label_counts(req: SimulateReadsRequest, lengths: dict[str, int]) -> dict[str, int]:
    """Reads per label from --count, or from -n with --balance / --fraction / length-proportional."""
    labels = list(lengths)
    for name in list(req.count) + list(req.fraction) + sorted(set(req.circular)):
        if name not in lengths:
            raise InputError(f"label {name!r} names no --source (labels: {', '.join(labels)})")
    if req.count:
        missing = [lab for lab in labels if lab not in req.count]
        if missing:
            raise InputError(f"--count given for some labels but not for {', '.join(missing)}")
        return {lab: req.count[lab] for lab in labels}
    assert req.num_reads is not None
    fixed = sum(req.fraction.values())
    if fixed > 1 + 1e-9:
        raise InputError(f"--fraction values add up to {fixed:g}, more than 1")
    rest = [lab for lab in labels if lab not in req.fraction]
    if req.balance and not rest:
        raise InputError("--balance: --fraction already fixes every label's share, so there is nothing to balance")
    if not rest and abs(fixed - 1) > 1e-9:
        raise InputError(f"--fraction covers every label but adds up to {fixed:g}, not 1")
    weights = {lab: req.fraction[lab] for lab in req.fraction}
    rest_weight = {lab: 1.0 if req.balance else float(lengths[lab]) for lab in rest}
    total_rest = sum(rest_weight.values())
    for lab in rest:
        weights[lab] = (1 - fixed) * rest_weight[lab] / total_rest
    return allocate(req.num_reads, {lab: weights[lab] for lab in labels})


def _profile(path: str | None, mate: int) -> QualityProfile:
    return load_art_profile(path) if path else builtin_profile(mate)


def load_sources(sources: list[tuple[str, str]], layout: Layout, circular: set[str], seed: int,
                 log: Callable[[str], None], sub_rate: float = 0.0, ins_rate: float = 0.0,
                 del_rate: float = 0.0) -> dict[str, Source]:
    """The (label, path) references by label, mutated first at the given rates (seeded by `seed`)."""
    ref_rng = np.random.default_rng([seed, 1])  # separate streams: reads stay the same when
    mut_rng = np.random.default_rng([seed, 2])  # only the augmentation rates change
    by_label: dict[str, list] = {}
    for label, path in sources:
        records = read_reference(path)
        resolved = []
        for name, seq in records:
            codes, n_resolved = clean_reference(name, seq, ref_rng)
            if n_resolved:
                resolved.append(f"{name} ({n_resolved})")
            mutated, origin = mutate_codes(codes, sub_rate, ins_rate, del_rate, mut_rng)
            by_label.setdefault(label, []).append((name, mutated, origin, codes.size))
        log(f"{label}: {path}: {len(records)} contigs, {sum(len(s) for _, s in records):,} bp")
        if resolved:
            log(f"{path}: IUPAC ambiguity letters resolved to a random matching base in {', '.join(resolved)}")
    names = [c[0] for contigs in by_label.values() for c in contigs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"contig name {dup!r} appears in more than one --source; truth would be ambiguous")
    return {lab: Source(lab, contigs, lab in circular, layout) for lab, contigs in by_label.items()}


def run(req: SimulateReadsRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write the reads, and the truth table and junction BEDPE when named; returns {"reads_per_label":
    {label: reads (fragments when paired)}}."""
    with outputs.streams(req.output, req.output2, req.truth, req.truth_bedpe) as out:
        counts = _simulate(req, out[req.output], out.get(req.output2), out.get(req.truth), report,
                               out.get(req.truth_bedpe))
    return {"reads_per_label": counts}


def _simulate(req: SimulateReadsRequest, out1: BinaryIO, out2: BinaryIO | None, out_truth: BinaryIO | None,
              report: Reporter, out_bedpe: BinaryIO | None) -> dict[str, int]:
    """Simulate and write reads (to out1, read 2 of pairs to out2 or interleaved in out1 without it,
    the truth table to out_truth if given, an insertion run's junctions to out_bedpe); returns reads
    per label."""
    layout, insertion, sample, long_model = req.layout(), req.insertion_plan(), req.sample_plan(), req.long_model()
    L = layout.read_length
    if long_model is None:
        samplers = (_profile(req.profile, 1).sampler(L), _profile(req.profile2 or req.profile, 2).sampler(L))
        errors = ErrorModel(samplers, req.read_ins_rate, req.read_del_rate)
    sources = load_sources(req.source, layout, set(req.circular), req.seed, report.log, req.sub_rate, req.ins_rate,
                           req.del_rate)
    if insertion is not None:
        sources, junctions = apply_insertions(sources, insertion, layout, np.random.default_rng([req.seed, 3]))
        counts = insertion_counts(sources, insertion, layout, req.count)
        report.log(f"{insertion.count} insertions of {insertion.viral_label} into {insertion.host_label}, "
                   f"{len(junctions)} junctions")
        if out_bedpe is not None:
            write_bedpe(out_bedpe, junctions, BEDPE_EXTRA)
    elif sample is not None:
        sources, counts, lines = sample_sources(sources, sample, layout, req.count)
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

    paired = layout.paired
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
                if long_model is not None:
                    reads = simulate_long(sources[lab], serial.size, long_model, req.max_n_frac, rng)
                    _collect_long(lab, serial, reads, contig_names[lab], records, truth_rows)
                    continue
                frags = simulate(sources[lab], serial.size, layout, errors, rng)
                _collect(lab, serial, frags, contig_names[lab], paired, records, truth_rows)
            if long_model is not None:
                out1.write(_fastq_block_varied(records[0]))
            elif interleave:
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


def _collect_long(label, serial, reads, names, records, truth_rows) -> None:
    """Read names (and truth rows) of one label's long reads (genointerp.seq.long_reads.LongReads),
    named as single-end reads are."""
    sid, contig = serial.tolist(), names[reads.contig].tolist()
    strand = np.where(reads.reverse, "-", "+").tolist()
    ids = [f"{label}|{s}|{c}|{a}|{b}|{d}|{x}" for s, c, a, b, d, x in
           zip(sid, contig, reads.start.tolist(), reads.end.tolist(), strand, reads.errors.tolist())]
    if truth_rows is not None:
        truth_rows += [(s, f"{i}\t{label}\t{c}\t{a}\t{b}\t{d}\t0\t{e}\n") for s, i, c, a, b, d, e in
                       zip(sid, ids, contig, reads.start.tolist(), reads.end.tolist(), strand, reads.errors.tolist())]
    records[0].append((serial, ids, reads.codes, reads.quals))


def _fastq_block_varied(mate_records) -> bytes:
    """FASTQ of long reads (each read its own length), in serial order."""
    serial = np.concatenate([r[0] for r in mate_records])
    order = np.argsort(serial, kind="stable").tolist()
    names = [n for r in mate_records for n in r[1]]
    codes = [c for r in mate_records for c in r[2]]
    quals = [q for r in mate_records for q in r[3]]
    return format_fastq_varied([names[i] for i in order], [codes[i] for i in order], [quals[i] for i in order])


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
