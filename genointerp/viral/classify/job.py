"""The classify-reads job: reads in (FASTQ/FASTA/BAM/CRAM), per-read calls TSV out, streamed.

Evidence (a model folder with a viral index, as the built-in one). Every read of at least
MIN_LENGTH bases gets its evidence bits: how unlikely by chance its matches to the viral
references' seeds (genointerp.viral.evidence.seeds) and its alignments to their proteins
(genointerp.viral.evidence.protein, genointerp.viral.evidence.extension) are. The
calling rule (genointerp.viral.classify.calling) adds the model's vote where it can change the call:
reads whose bits are far from the line are called on their evidence alone, and the model
scores only the others (every read with `model_all`). Statuses: scored; model_abstained (the
model could have changed the call but cannot score the read: shorter than its windows, or every
window holding N; the evidence alone decided); too_short (under MIN_LENGTH: no call); ambiguous
(no seed window free of N: no call). The `evidence` column says what the call rests on: kmer
(the evidence alone reaches the line), both (the model lifted the evidence over it), none.

The model alone (evidence mode `model`, or a folder without an index): each read is cut into
windows of the model's read length (at 0, L, 2L, ... and one ending at the read's end, so every
base is covered); a read's p_viral is the highest of its windows, viral at p_viral >= threshold.
Windows with N or IUPAC letters are skipped when the model has no UNKNOWN token. Statuses:
scored, too_short (shorter than the model's read length), ambiguous (no window free of N).
Evidence mode `kmer` calls on the evidence alone and never runs the model.

With `chunk=(i, n)` the job classifies only chunk i of n of the read stream (see
genointerp.viral.classify.scatter): the chunks' outputs, concatenated, are the unchunked run's byte for byte.
That needs a read to be scored in the same forward pass, beside the same windows, in every run:
genointerp.viral.classify.blocks fixes the passes by the reads' positions in the input. Evidence bits are
per-read arithmetic (no sum runs across reads), so they need nothing of the kind.

Where the work runs: this process reads the input and writes the outputs; batches of BATCH reads
go to `--threads` worker processes (genointerp.pools) for their evidence and the typing of the
reads it may call viral (genointerp.viral.classify.batch_work); the model runs in a process of its own,
started when a batch first needs it (genointerp.viral.classify.model_process), so torch is imported only
then, and meanwhile up to LOOKAHEAD batches are read on. Every piece is per read or per fixed
block, so the outputs are the same bytes for any --threads, --chunk and batch size.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import Callable, Iterator

import numpy as np

from genointerp.chunks import chunk_option
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.calls_table import HEADER, summary_json
from genointerp.io.inputs import is_stream
from genointerp.io.sequences import iter_reads, sniff_format
from genointerp.io.viral_report import report_files, write_sample_report
from genointerp.job import one_stdout, stdin_once
from genointerp.model_folder import CONFIG, WEIGHTS, check_calling, read_model_config
from genointerp.pools import OrderedPool, in_order
from genointerp.seq.joined import encode_joined, join
from genointerp.report import Reporter
from genointerp.resources import builtin_model_dir
from genointerp.runtime import check_settings, usable_threads
from genointerp.seq.alphabet import INVALID, N_CODE
from genointerp.seq.kmers import tokenize
from genointerp.viral.classify.blocks import block_rows
from genointerp.viral.classify.calling import CallingRule, rule_of
from genointerp.viral.classify.batch_work import BatchEvidence, EvidenceWork
from genointerp.viral.evidence.seeds import KmerIndex, index_files
from genointerp.viral.classify.model_process import ModelProcess
from genointerp.viral.evidence.prebuilt import load_indexes
from genointerp.viral.evidence.protein import ProteinIndex
from genointerp.viral.report.host_depth import MappedBases, mapped_host_bases, sum_mapped
from genointerp.viral.report.sample_report import check_sample_name, report_from_typing, sample_name
from genointerp.viral.report.sample_tally import SampleTally
from genointerp.viral.report.typing_data import sample_spec
from genointerp.viral.classify.scatter import chunk_fields, chunk_range, count_records

BATCH = 8192  # reads per step; a multiple of BLOCK, so that every step starts on a block boundary
LOOKAHEAD = 24  # batches that may wait for the model's process while it loads (about 3 s; 200,000 reads, 100 MB)
EVIDENCE_MODES = ("both", "model", "kmer")
MIN_LENGTH = 50  # shorter reads get no call: too few seeds and codons to be evidence
STATUSES = ("scored", "model_abstained", "too_short", "ambiguous")
EVIDENCE_LABELS = ("kmer", "both", "model", "none")


@dataclass
class ClassifyRequest:
    """classify-reads: the fields are its options (files as paths, `-` for stdin/stdout)."""

    reads: list[str]  # READS...
    output: str = "-"  # per-read calls TSV
    model: str | None = None  # model folder; None: the built-in model; recorded in the summary with a digest of its files
    threshold: float | None = None  # None: the model's calibrated threshold (default_threshold)
    evidence: str | None = None  # both, model or kmer; None: both when the model has a k-mer index, else model
    min_bits: float | None = None  # None: the model folder's calling rule's
    model_all: bool = False  # run the model on every read, not only where it can change a call
    summary: str | None = None  # run summary JSON
    report: str | None = None  # per-sample viral report TSV (the reads typed by EM)
    kraken_report: str | None = None  # the report in kraken2's format
    multiqc: str | None = None  # the report's MultiQC general-statistics row (custom content, *_mqc.tsv)
    multiqc_types: str | None = None  # the report's MultiQC table of types (custom content, *_mqc.tsv)
    sample: str | None = None  # the report's sample name; None: from the first input's file name
    host_genome_size: float = 3.1e9  # the report's copies per genome: GRCh38's size by default
    host_bases: int | None = None  # the host's bases; None: counted (genointerp.viral.report.host_depth)
    viral_out: str | None = None  # the reads called viral
    unmapped_only: bool = False
    reference: str | None = None  # FASTA for CRAM decoding
    chunk: str | None = None  # "I/N": only chunk I of N of the read stream
    device: str = "cpu"  # a torch device (the CLI resolves --device auto)
    precision: str = "32"
    threads: int = 1

    def check(self) -> None:
        stdin_once("READS...", self.reads, "it cannot be read twice")
        one_stdout(("--output", self.output), ("--summary", self.summary), ("--viral-out", self.viral_out),
                   *self.reports())
        if self.evidence is not None and self.evidence not in EVIDENCE_MODES:
            raise UsageError(f"--evidence: must be one of {', '.join(EVIDENCE_MODES)}, not {self.evidence!r}")
        if self.min_bits is not None and not self.min_bits > 0:
            raise UsageError(f"--min-bits: must be above 0, not {self.min_bits}")
        if self.threshold is not None and not 0 <= self.threshold <= 1:
            raise UsageError(f"--threshold: must be from 0 to 1, not {self.threshold}")
        if not self.host_genome_size > 0:
            raise UsageError(f"--host-genome-size: must be above 0, not {self.host_genome_size}")
        if self.host_bases is not None and not self.host_bases > 0:
            raise UsageError(f"--host-bases: must be above 0, not {self.host_bases}")
        check_sample_name(self.sample)
        check_settings(self.threads, self.precision)
        if self.chunk is not None:
            self.chunk_of()
            reports = self.reports()
            if reports:
                raise UsageError(f"{reports[0][0]}: the per-sample report needs every read of the sample: give the "
                                 "chunks' --summary files to merge-calls with this option (a chunk's summary holds "
                                 "its share of the typing)")
            streams = [p for p in self.reads if is_stream(p)]
            if streams:
                what = "stdin (-)" if streams[0] == "-" else f"{streams[0]} (a pipe, not a file)"
                raise UsageError(f"--chunk: {what} cannot be chunked: every job must count the whole input, "
                                 "so it is read twice; give a file")

    def chunk_of(self) -> tuple[int, int] | None:
        """--chunk as (I, N), None without it."""
        return chunk_option(self.chunk)

    def reports(self) -> list[tuple[str, str]]:
        """(option, path) of the per-sample report files asked for."""
        return [(option, path) for option, _, path in self.report_files()]

    def report_files(self) -> list[tuple[str, str, str]]:
        """(option, format, path) of the per-sample report files asked for
        (genointerp.io.viral_report.report_files)."""
        return report_files(self.report, self.kraken_report, self.multiqc, self.multiqc_types)

    def model_folder(self) -> str:
        return self.model or str(builtin_model_dir())

    def inputs(self) -> list[str | None]:
        return [*self.reads, self.model_folder(), self.reference]


def default_threshold(config: dict, where: str = "model config.json") -> float:
    """The model's calibrated calling threshold (config.json "calling"), else the paper's 0.5.
    A damaged one (not a number from 0 to 1) is an InputError naming `where`."""
    threshold = check_calling(config, where)
    return 0.5 if threshold is None else threshold


def model_sha256(folder: str, config: dict) -> str:
    """SHA-256 over the model's config.json, weights and k-mer index files: tells summaries of
    different models apart even when the same model sits at different paths (host and container)."""
    digest = hashlib.sha256()
    for path in [f"{folder}/{CONFIG}", f"{folder}/{WEIGHTS}", *index_files(folder, config)]:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def records(req: ClassifyRequest, one_format: bool = False) -> Iterator[tuple[str, str, str | None]]:
    """The reads of every input in order. The first is read at once, so that an empty or unreadable
    first input (an empty stdin) fails before the caller writes anything, such as the TSV header.

    With `one_format` (for --viral-out, one FASTQ or FASTA file) every input must give reads of one
    kind, with qualities or without: regular files are sniffed before anything is read, and the
    first read of each input is checked (streams, BAM/CRAM).
    """
    if one_format:
        _check_one_read_format([p for p in req.reads if not is_stream(p)])
    it = _records(req, one_format)
    first = next(it, None)
    return it if first is None else chain([first], it)


def _records(req: ClassifyRequest, one_format: bool) -> Iterator[tuple[str, str, str | None]]:
    kinds: dict[bool, str] = {}  # has qualities -> the first input that showed it
    for path in req.reads:
        reads = iter_reads(path, req.unmapped_only, req.reference)
        for read in reads:
            if one_format:
                kinds.setdefault(read[2] is not None, path)
                if len(kinds) > 1:
                    raise InputError(_mixed_formats(kinds[True], kinds[False]))
            yield read
            yield from reads
            break


def _check_one_read_format(files: list[str]) -> None:
    formats = {}
    for path in files:
        formats.setdefault(sniff_format(path), path)
    if "fastq" in formats and "fasta" in formats:
        raise InputError(_mixed_formats(formats["fastq"], formats["fasta"]))


def _mixed_formats(fastq: str, fasta: str) -> str:
    return (f"{fastq} has base qualities (FASTQ) and {fasta} has none (FASTA): --viral-out writes one format; "
            "classify them in separate runs")


def window_starts(starts: np.ndarray, lengths: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets (into the joined codes) of every window, and the read each belongs to."""
    per = np.where(lengths >= L, -(-lengths // L), 0)  # ceil(len / L) windows, the last one end-aligned
    read = np.repeat(np.arange(lengths.size), per)
    j = np.arange(read.size) - np.repeat(np.cumsum(per) - per, per)
    offset = np.minimum(j * L, lengths[read] - L)
    return starts[read] + offset, read


@dataclass
class Windows:
    """The model's windows of reads `which` (int (m,)) of a batch: tokens uint16 (R, n_tokens), R a
    multiple of PASS, laid out in passes by genointerp.viral.classify.blocks; where int (W,), the row of each
    window; read int (W,), the position in `which` of each window's read; status object (m,) of
    reads no window scores (too_short, ambiguous)."""

    which: np.ndarray
    tokens: np.ndarray
    where: np.ndarray
    read: np.ndarray
    status: np.ndarray


def model_windows(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, L: int, k: int, has_unknown: bool,
                  which: np.ndarray | None = None) -> Windows:
    """The windows of the reads `which` (int (m,), ascending; None: all n) of a batch given as codes
    joined by N (flat uint8 (M,); starts, lengths int64 (n,); see encode_joined). The batch must
    start on a block boundary of the input stream (genointerp.viral.classify.blocks): a read's forward pass
    holds only the chosen reads of its own block."""
    which = np.arange(len(lengths)) if which is None else which
    flat = np.where(flat == INVALID, N_CODE, flat)  # any odd character counts as an unknown base
    wstart, wsub = window_starts(starts[which], lengths[which], L)
    status = np.where(lengths[which] < L, "too_short", "ambiguous").astype(object)
    tokens, where = np.zeros((0, L - k + 1), np.uint16), np.zeros(0, np.int64)
    if wstart.size:
        mat = np.lib.stride_tricks.sliding_window_view(flat, L)[wstart]
        if not has_unknown:
            clean = ~(mat == N_CODE).any(axis=1)
            mat, wsub = mat[clean], wsub[clean]
        if wsub.size:
            rows, where = block_rows(which[wsub])  # blocks by the reads' places in the batch
            tokens = tokenize(mat[rows], k)
    return Windows(which, tokens, where, wsub if wstart.size else np.zeros(0, np.int64), status)


def window_scores(windows: Windows, p_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p_viral float64 (m,) with NaN for unscored reads, and statuses object (m,), of the reads of
    `windows`, given P(viral) float64 (R,) of its token rows: a read's best window."""
    m = len(windows.which)
    p, status = np.full(m, np.nan), windows.status.copy()
    if windows.where.size:
        best = np.full(m, -1.0)
        np.maximum.at(best, windows.read, p_rows[windows.where])
        scored = best >= 0
        p[scored] = best[scored]
        status[scored] = "scored"
    return p, status


@dataclass
class Classifier:
    path: str  # the model folder
    model: ModelProcess  # the XVir module, in a process of its own started when first needed
    config: dict
    threshold: float  # the model alone calls on p_viral >= this
    index: KmerIndex | None  # the folder's seed index, None without one
    protein: ProteinIndex | None  # the folder's protein index, None without one
    rule: CallingRule  # how evidence and model make one call
    evidence: str  # both, model or kmer


def load_classifier(req: ClassifyRequest, log: Callable[[str], None]) -> Classifier:
    """The request's model folder (or the built-in one), with its threshold, calling rule and
    evidence indexes (bits and kmer_hits are reported in every mode that has them; prebuilt
    where the folder or the cache has them, genointerp.viral.evidence.prebuilt)."""
    path = req.model_folder()
    where = f"{path}/config.json"
    config = read_model_config(path, expect="xvir")
    threshold = req.threshold if req.threshold is not None else default_threshold(config, where)
    index, protein = load_indexes(path, config, log)
    rule = rule_of(config, where)
    if req.min_bits is not None:
        rule = replace(rule, min_bits=req.min_bits)
    evidence = req.evidence or ("both" if index is not None else "model")
    if index is None and evidence != "model":
        raise InputError(f"{path}: this model has no viral index (config.json 'kmer_index'), so only --evidence model "
                         "works; train-xvir --viral REF builds one")
    if index is None and req.min_bits is not None:
        raise InputError(f"{path}: --min-bits needs a model with a viral index")
    return Classifier(path, ModelProcess(path, req.device, req.precision, req.threads), config, threshold, index,
                      protein, rule, evidence)


def run(req: ClassifyRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Classify every read into the calls TSV, and write whichever of the reads called viral, the
    summary JSON and the per-sample report files the request names; returns the summary (with the
    per-sample viral report, genointerp.viral.report.sample_report, when a report file is asked for)."""
    files = req.report_files()
    with outputs.streams(req.output, req.summary, req.viral_out, *(path for _, _, path in files),
                         plain=[req.summary]) as out:  # the summary is plain JSON whatever its name
        summary = _classify(req, out[req.output], out.get(req.viral_out), report,
                            {fmt: out[path] for _, fmt, path in files})
        if req.summary:
            out[req.summary].write(summary_json(summary).encode())
    return summary


def _classify(req: ClassifyRequest, out, viral_out, report: Reporter, sample_out: dict) -> dict:
    """Classify every read; write TSV rows to `out` and reads called viral to `viral_out` (open
    binary streams, viral_out None for none); `sample_out` (format -> open binary stream or None,
    see genointerp.io.viral_report.write_sample_report) gets the per-sample report."""
    clf = load_classifier(req, report.log)
    work = EvidenceWork(clf.index, clf.protein, clf.rule, clf.path, MIN_LENGTH, report.log) if clf.index else None
    # The workers are forked here: after the indexes load (they share their pages), before any
    # input is opened (a worker would hold a copy of a stream's feeding pipe, whose reader would
    # then never see its end) and before any model loads (torch's threads do not survive a fork).
    # --threads counts this process (reading, the calling rule, writing): N - 1 workers beside it
    with OrderedPool(work or (lambda batch: None), usable_threads(req.threads) - 1 if work else 0) as pool, clf.model:
        return _classify_reads(req, clf, pool, out, viral_out, report, sample_out)


def _classify_reads(req: ClassifyRequest, clf: Classifier, pool: OrderedPool, out, viral_out, report: Reporter,
                    sample_out: dict) -> dict:
    """_classify with the classifier loaded and its worker processes started."""
    tally = SampleTally(clf.path, clf.index, report.log, clf.protein)
    chunk = req.chunk_of()
    # the report's settings, the host's mapped bases included, before any read: a report that
    # cannot know the host depth is refused at once
    spec = report_spec(req, report.log) if req.reports() or (chunk and clf.index is not None) else None
    counts: Counter = Counter()
    evidence_counts: Counter = Counter()
    total = called = model_reads = 0
    classify = batch_classifier(clf, req)
    it = records(req, one_format=viral_out is not None)
    ids = hashlib.sha256() if chunk else None  # the chunk's read names, for merge-calls to pair files
    if chunk:
        part, parts = chunk
        with report.progress(f"counting reads for chunk {part}/{parts}", None) as advance:
            n_input = count_records(records(req), advance)
        start, stop = chunk_range(part, parts, n_input)
        report.log(f"chunk {part}/{parts}: reads {start + 1:,} to {stop:,} of {n_input:,}")
        it = islice(it, start, stop)
    out.write(HEADER.encode())
    batches = iter(lambda: list(islice(it, BATCH)), [])
    with report.progress("classifying reads", None) as advance:
        # the model's own process starts at the first batch that needs it, at once where every read does
        if clf.evidence == "model" or (req.model_all and clf.evidence == "both"):
            clf.model.start()
        # batches wait here for the model's process while it loads, up to LOOKAHEAD of them
        for batch, got in in_order(((batch, classify(batch, found)) for batch, found in
                                    pool.map((batch, join([r[1] for r in batch])) for batch in batches)), LOOKAHEAD):
            status, call, evidence = got.status, got.call, got.evidence
            types = tally.add(batch, call == "viral", got.typed)
            out.write(_rows(batch, got, types).encode())
            if ids is not None:
                ids.update(("\n".join([r[0] for r in batch]) + "\n").encode())
            viral = np.flatnonzero(call == "viral")
            if viral_out is not None and viral.size:
                viral_out.write("".join(_record_text(batch[i]) for i in viral).encode())
            counts.update(status.tolist())
            evidence_counts.update(evidence.tolist())
            model_reads += got.model_reads
            total += len(batch)
            called += int(viral.size)
            advance(len(batch))
    if chunk and total != stop - start:
        raise InputError(f"{', '.join(req.reads)}: {start + total:,} reads on the second pass, {n_input:,} when "
                         "counted: did the input change while it was read?")
    scored = counts.get("scored", 0) + counts.get("model_abstained", 0)
    summary = {
        "reads_total": total,
        "reads_scored": scored,
        "reads_called_viral": called,
        "reads_model_scored": model_reads,
        "fraction_viral_of_scored": called / scored if scored else 0.0,
        "status_counts": {s: counts.get(s, 0) for s in STATUSES},
        "evidence_counts": {e: evidence_counts.get(e, 0) for e in EVIDENCE_LABELS},
        "evidence": clf.evidence,
        "threshold": clf.threshold,
        "rule": None if clf.index is None else clf.rule.as_dict(),
        "kmer_index": None if clf.index is None else {
            "k": clf.index.settings.k, "seed": clf.index.settings.seed,
            "min_entropy": clf.index.settings.min_entropy, "n_kmers": int(clf.index.ids.size)},
        "protein_index": None if clf.protein is None else {"k": clf.protein.settings.weight,
                                                          "seed": clf.protein.settings.seed,
                                                          "n_kmers": int(clf.protein.ids.size)},
        "inputs": list(req.reads),
        "model": clf.path,
        "model_sha256": model_sha256(clf.path, clf.config),
    }
    typing = tally.typing(spec) if spec is not None else None
    tally.close()
    if chunk:
        summary.update(chunk_fields(part, parts, start, stop, n_input, ids.hexdigest()))
        if typing is not None:
            summary["typing"] = typing  # merge-calls builds the report from the chunks' typings
    if req.reports():
        summary["viral_report"], report_rows = report_from_typing(typing)
        write_sample_report(sample_out, summary["viral_report"], report_rows, total, called)
    return summary


def report_spec(req: ClassifyRequest, log) -> dict:
    """The per-sample report's settings (genointerp.viral.report.sample_tally.sample_spec): with
    --unmapped-only and no --host-bases, the bases of the mapped host reads left out, from the
    inputs' indexes. Refused where they cannot be known and a report is asked for; a chunk job
    records them as unknown (merge-calls then refuses its report)."""
    mapped: MappedBases | None = None
    if req.host_bases is None:
        try:
            mapped = sum_mapped([mapped_host_bases(p, req.reference) if req.unmapped_only else MappedBases(0, 0, 0, {})
                                 for p in req.reads])
        except InputError as exc:
            if req.reports():
                raise
            log(f"the host's bases are unknown, so merge-calls will refuse this chunk's report: {exc}")
        if mapped is not None and mapped.records:
            log(f"host bases of the mapped reads --unmapped-only leaves out: {mapped.bases:,} "
                f"({'counted' if mapped.exact else f'estimated from {mapped.sampled:,} of'} {mapped.records:,} "
                "mapped records in the index)")
        if mapped is not None and mapped.viral_records:
            log("mapped to viral contigs, neither classified (--unmapped-only) nor host: "
                + ", ".join(f"{n:,} records on {c}" for c, n in mapped.viral_records.items()))
    return sample_spec(req.sample or sample_name(req.reads), req.host_genome_size, req.host_bases, mapped)


@dataclass
class BatchCalls:
    """classify-reads' answer for a batch of n reads, (n,) each: p_viral (NaN: not scored by the
    model), status, seed hits and evidence bits (None without an index), call, evidence label;
    and how many reads the model scored."""

    p: np.ndarray
    status: np.ndarray
    hits: np.ndarray | None
    bits: np.ndarray | None
    call: np.ndarray
    evidence: np.ndarray
    model_reads: int
    typed: dict = field(default_factory=dict)  # the typing of reads done by the batch's worker (batch_work)


class PendingCalls:
    """A batch's BatchCalls once its model scores (if any) are in, as a future: `done()` says
    whether they are, `result()` waits for them."""

    def __init__(self, finish: Callable[[np.ndarray | None], BatchCalls], scores=None) -> None:
        self.finish, self.scores = finish, scores  # scores: the model process's pending answer, or None

    def done(self) -> bool:
        return self.scores is None or self.scores.done()

    def result(self) -> BatchCalls:
        return self.finish(self.scores.result() if self.scores is not None else None)


def batch_classifier(clf: Classifier, req: ClassifyRequest) -> Callable[[list, BatchEvidence | None], PendingCalls]:
    """A function from a batch of records [(name, seq, qual)] (n), starting on a block boundary of
    the input stream, and its evidence (None without an index; genointerp.viral.classify.batch_work), to
    its PendingCalls: the windows the model must score are handed to the model process at once."""
    L, k = clf.config["model"]["read_length"], clf.config["model"]["k"]
    has_unknown = clf.config["model"]["vocab_size"] > 4**k
    runs_model = clf.evidence != "kmer"

    def scored(batch: list, which: np.ndarray | None, then: Callable[[np.ndarray, np.ndarray], BatchCalls]) -> PendingCalls:
        """The model's p_viral and statuses of reads `which` (None: all) handed to `then`."""
        windows = model_windows(*encode_joined([r[1] for r in batch]), L, k, has_unknown, which)
        if not windows.where.size:
            return PendingCalls(lambda _: then(*window_scores(windows, np.zeros(0))))
        return PendingCalls(lambda rows: then(*window_scores(windows, rows)), clf.model.submit(windows.tokens))

    def model_alone(batch: list, hits, bits, typed: dict) -> PendingCalls:
        def then(p: np.ndarray, status: np.ndarray) -> BatchCalls:
            with np.errstate(invalid="ignore"):
                viral = p >= clf.threshold
            call = np.where(viral, "viral", np.where(status == "scored", "not_viral", "NA")).astype(object)
            return BatchCalls(p, status, hits, bits, call, np.where(viral, "model", "none").astype(object),
                              int((status == "scored").sum()), typed)

        return scored(batch, None, then)

    def classify(batch: list, seeds: BatchEvidence | None) -> PendingCalls:
        if seeds is None:
            return model_alone(batch, None, None, {})
        bits = seeds.bits
        if clf.evidence == "model":
            return model_alone(batch, seeds.hits, bits, seeds.typed)
        lengths = np.fromiter(map(len, (r[1] for r in batch)), np.int64, len(batch))
        status = np.where(lengths < MIN_LENGTH, "too_short", np.where(seeds.clean > 0, "scored", "ambiguous")).astype(object)
        callable_ = status == "scored"  # before any turns model_abstained: those are called too
        undecided = callable_ & clf.rule.undecided(bits)
        which = np.flatnonzero(callable_ if req.model_all else undecided) if runs_model else np.zeros(0, np.int64)

        def then(p_which: np.ndarray | None, model_status: np.ndarray | None) -> BatchCalls:
            p = np.full(len(batch), np.nan)
            model_reads = 0
            if which.size:
                p[which] = p_which
                model_reads = int((model_status == "scored").sum())
                status[which[(model_status != "scored") & undecided[which]]] = "model_abstained"
            viral = callable_ & (clf.rule.score(bits, p) >= clf.rule.min_bits)
            call = np.where(viral, "viral", np.where(callable_, "not_viral", "NA")).astype(object)
            evidence = np.where(viral, np.where(bits >= clf.rule.min_bits, "kmer", "both"), "none").astype(object)
            return BatchCalls(p, status, seeds.hits, bits, call, evidence, model_reads, seeds.typed)

        if not which.size:
            return PendingCalls(lambda _: then(None, None))
        return scored(batch, which, then)

    return classify


def _rows(batch: list, got: BatchCalls, types: list[str]) -> str:
    """The calls TSV's rows of a batch (HEADER's columns), built column by column."""
    n = len(batch)
    p_text = ["NA"] * n
    for i, q in zip(np.flatnonzero(~np.isnan(got.p)).tolist(), got.p[~np.isnan(got.p)].tolist()):
        p_text[i] = f"{q:.6f}"
    hit_text = got.hits.astype(str).tolist() if got.hits is not None else ["NA"] * n
    bits_text = [f"{b:.2f}" for b in got.bits.tolist()] if got.bits is not None else ["NA"] * n
    columns = ([r[0] for r in batch], [str(len(r[1])) for r in batch], p_text, got.call.tolist(), got.status.tolist(),
               hit_text, got.evidence.tolist(), bits_text, types)
    return "".join(f"{row}\n" for row in map("\t".join, zip(*columns)))


def _record_text(rec) -> str:
    name, seq, qual = rec
    return f"@{name}\n{seq}\n+\n{qual}\n" if qual is not None else f">{name}\n{seq}\n"

