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

import gc
import hashlib
from collections import Counter
from concurrent.futures import Future
from contextlib import contextmanager
from itertools import chain, islice
from typing import Callable, Iterator

import numpy as np

from genointerp.errors import InputError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.calls_table import HEADER, summary_json
from genointerp.io.inputs import is_stream
from genointerp.io.sequences import iter_read_batches, sniff_format
from genointerp.io.viral_report import sample_name, write_sample_report
from genointerp.pools import OrderedPool, in_order, this_process_only
from genointerp.seq.joined import join
from genointerp.report import Reporter
from genointerp.runtime import end_at_once, reuse_freed_memory, usable_threads
from genointerp.viral.classify.batch_work import EvidenceWork
from genointerp.viral.classify.classifier import MIN_LENGTH, BatchCalls, Classifier, batch_classifier, load_classifier
from genointerp.viral.classify.request import ClassifyRequest
from genointerp.viral.classify.scatter import chunk_fields, chunk_range, count_records
from genointerp.viral.evidence.seeds import index_files
from genointerp.viral.model_files import CONFIG, WEIGHTS
from genointerp.viral.report.host_depth import MappedBases, mapped_host_bases, sum_mapped
from genointerp.viral.report.sample_report import report_from_typing
from genointerp.viral.classify.sample_tally import SampleTally
from genointerp.viral.report.typing_data import sample_spec
from genointerp.viral.typing.typer import Typer

BATCH = 8192  # reads per step; a multiple of BLOCK, so that every step starts on a block boundary
# reads per step once the input's end is in sight (the last full batch and the short one after it):
# the job ends when the last step does, and at -t 2 one core waited for the other's last batch of
# 8,192 all-viral reads (about a quarter of a second); a multiple of BLOCK
TAIL = 2048
# reads parsed at a time: a run's first batch (TAIL reads, for a worker at once) is handed on once
# its reads are parsed, not a whole BATCH's (8,192 all-HPV reads: 4 ms more of the one-core start
# at -t 2); the steps are cut from the reads as before, whatever the lists they come in
READ_LISTS = TAIL
LOOKAHEAD = 24  # batches that may wait for the model's process while it loads (about 3 s; 200,000 reads, 100 MB)
STATUSES = ("scored", "model_abstained", "too_short", "ambiguous")
EVIDENCE_LABELS = ("kmer", "both", "model", "none")
# From this many workers the typer's aligner is built before they fork and shared. With one, the
# copy it saves (65 MB) is not worth the 0.13 s every run would then spend on one core at its
# start, with or without a read to type: 7 % of a 2-thread run of 320,000 reads.
SHARED_TYPER_WORKERS = 2
# allocations (net of those freed) between the cyclic collector's first-generation passes
# (steady_collector): more than a job holds at once, so that a steady run makes none. At 50,000 the
# one pass a run made came as the first batches were read at -t 2 (some 50,000 reads' tuples and
# strings, each visited: 18-23 ms of the job's process at the start of a run of 108,181 all-HPV
# reads); a job that holds more (batches waiting for the model's process) would walk them all at
# every pass.
COLLECT_AFTER = 1_000_000


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
    it = chain.from_iterable(_read_batches(req, one_format))
    first = next(it, None)
    return it if first is None else chain([first], it)


def _read_batches(req: ClassifyRequest, one_format: bool) -> Iterator[list[tuple[str, str, str | None]]]:
    """The reads of every input in order, in the lists genointerp.io.sequences.iter_read_batches
    gives (each input's first read alone), so that no Python code runs per read on the way."""
    kinds: dict[bool, str] = {}  # has qualities -> the first input that showed it
    for path in req.reads:
        batches = iter_read_batches(path, READ_LISTS, req.unmapped_only, req.reference)
        for batch in batches:
            if one_format:
                kinds.setdefault(batch[0][2] is not None, path)
                if len(kinds) > 1:
                    raise InputError(_mixed_formats(kinds[True], kinds[False]))
            yield batch
            yield from batches
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


def run(req: ClassifyRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Classify every read into the calls TSV, and write whichever of the reads called viral, the
    summary JSON and the per-sample report files the request names; returns the summary (with the
    per-sample viral report, genointerp.viral.report.sample_report, when a report file is asked for)."""
    files = req.report_files()
    with outputs.streams(req.output, req.summary, req.viral_out, *(path for _, _, path in files),
                         plain=[req.summary]) as out:  # the summary is plain JSON whatever its name
        req.check_inputs()  # before the model loads
        summary = _classify(req, out[req.output], out.get(req.viral_out), report,
                            {fmt: out[path] for _, fmt, path in files})
        if req.summary:
            out[req.summary].write(summary_json(summary).encode())
    return summary


def _classify(req: ClassifyRequest, out, viral_out, report: Reporter, sample_out: dict) -> dict:
    """Classify every read; write TSV rows to `out` and reads called viral to `viral_out` (open
    binary streams, viral_out None for none); `sample_out` (format -> open binary stream or None,
    see genointerp.io.viral_report.write_sample_report) gets the per-sample report."""
    clf = load_classifier(req, report.log, report.warn)
    # --threads counts this process (reading, the calling rule, writing): N - 1 workers beside it
    workers = usable_threads(req.threads) - 1 if clf.index else 0
    # one typer for the job: the reads a batch's evidence calls viral, wherever the batch is
    # worked on, and those the model decides (SampleTally)
    typer = Typer(clf.path, clf.index, this_process_only(report.log)) if clf.index else None
    if workers >= SHARED_TYPER_WORKERS:
        # built before the fork, so that the workers share its aligner's pages rather than each
        # building its own (0.13 s, 65 MB) at its first viral read
        typer.load()
    work = EvidenceWork(clf.index, clf.protein, clf.rule, typer, MIN_LENGTH) if clf.index else None
    reuse_freed_memory()  # each batch's large arrays: from the heap again, in this process and the workers
    # The workers are forked here: after the indexes load (they share their pages), before any
    # input is opened (a worker would hold a copy of a stream's feeding pipe, whose reader would
    # then never see its end) and before any model loads (torch's threads do not survive a fork).
    try:
        with steady_collector(), OrderedPool(work or (lambda batch: None), workers) as pool, clf.model:
            summary = _classify_reads(req, clf, typer, pool, out, viral_out, report, sample_out)
    finally:
        if typer is not None:
            typer.close()
    # nothing the job holds needs freeing before the process ends: the aligner alone took
    # 0.016-0.02 s, on one core after the outputs are written
    end_at_once(typer, clf)
    return summary


@contextmanager
def steady_collector() -> Iterator[None]:
    """Python's cyclic collector, while the batches run (in this process and the workers forked
    in it), with what the start made frozen out of its passes and its first generation collected
    every COLLECT_AFTER allocations (700 by default): the reads' and rows' lists and tuples made
    180 first-generation passes in a -t 1 run of 108,181 all-HPV reads, each walking the
    young objects, and the older passes the modules and indexes' owners (0.04 s of CPU in all,
    about 0.03 s less this way). Nothing the job makes holds a cycle that must be freed before
    the end; the collector's settings are put back as they were when the job ends (a caller
    that had frozen objects itself keeps them so, and the job freezes none)."""
    thresholds, freeze = gc.get_threshold(), not gc.get_freeze_count()  # a caller's own frozen objects stay so
    if freeze:
        gc.freeze()
    gc.set_threshold(COLLECT_AFTER, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if freeze:
            # what the job made goes with the start's into the oldest generation: the first pass
            # after the job walked all of it that lives on (0.4-4.9 ms after 108,181 all-HPV reads)
            gc.freeze()
            gc.unfreeze()


def _classify_reads(req: ClassifyRequest, clf: Classifier, typer: Typer | None, pool: OrderedPool, out, viral_out,
                    report: Reporter, sample_out: dict) -> dict:
    """_classify with the classifier loaded and its worker processes started."""
    tally = SampleTally(clf.path, typer, clf.index, clf.protein)
    chunk = req.chunk_of()
    # the report's settings, the host's mapped bases included, before any read: a report that
    # cannot know the host depth is refused at once
    spec = report_spec(req, report.log) if req.reports() or (chunk and clf.index is not None) else None
    counts: Counter = Counter()
    evidence_counts: Counter = Counter()
    total = called = model_reads = 0
    it = records(req, one_format=viral_out is not None)
    ids = hashlib.sha256() if chunk else None  # the chunk's read names, for merge-calls to pair files
    if chunk:
        part, parts = chunk
        with report.progress(f"counting reads for chunk {part}/{parts}", None) as advance:
            n_input, input_sha256 = count_records(_read_batches(req, False), advance)
        start, stop = chunk_range(part, parts, n_input)
        report.log(f"chunk {part}/{parts}: reads {start + 1:,} to {stop:,} of {n_input:,}")
        it = islice(it, start, stop)
    classify = batch_classifier(clf, req, start if chunk else 0)
    out.write(HEADER.encode())
    at_end: list[bool] = []  # once steps has the input's last reads: the pool then works on them as its last batches
    batches = steps(it, BATCH, min(TAIL, BATCH), lambda: at_end.append(True), min(TAIL, BATCH) if pool.workers else 0)
    # each batch with its reads joined and measured once (genointerp.seq.joined.join): the payload
    # its worker gets, and the form the classifier and the rows below read
    joined = ((batch, join([r[1] for r in batch])) for batch in batches)
    with report.progress("classifying reads", None) as advance:
        # the model's own process starts at the first batch that needs it, at once where every read does
        if clf.evidence == "model" or (req.model_all and clf.evidence == "both"):
            clf.model.start()
        # batches wait here for the model's process while it loads, up to LOOKAHEAD of them
        calls = (((batch, reads[1]), classify(reads, found))
                 for (batch, reads), found in pool.map((((batch, reads), reads) for batch, reads in joined),
                                                       lambda: bool(at_end)))
        for (batch, lengths), got in in_order(calls, LOOKAHEAD):
            is_viral = got.call == "viral"
            names = [r[0] for r in batch]
            types = tally.add(batch, lengths, is_viral, got.typed)
            out.write(_rows(names, lengths, got, types).encode())
            if ids is not None:
                ids.update(("\n".join(names) + "\n").encode())
            viral = np.flatnonzero(is_viral)
            if viral_out is not None and viral.size:
                viral_out.write("".join(_record_text(batch[i]) for i in viral).encode())
            counts.update(got.status.tolist())
            evidence_counts.update(got.evidence.tolist())
            model_reads += got.model_reads
            total += len(batch)
            called += int(viral.size)
            advance(len(batch))
    pool.release()  # every batch is in: the workers end beside the summary and report
    # the model's digest (0.005 s of hashing, which lets other threads run) beside the report, on
    # the core the workers had, where they had one
    digest = _beside(model_sha256, clf.path, clf.config) if pool.workers else None
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
        "model_sha256": None,  # below, once the report is made
    }
    # a chunk's typing goes into its summary as text; a run's own report reads the placements as they are
    typing = tally.typing(spec, as_text=bool(chunk)) if spec is not None else None
    if chunk:
        summary.update(chunk_fields(part, parts, start, stop, n_input, input_sha256, ids.hexdigest()))
        if typing is not None:
            summary["typing"] = typing  # merge-calls builds the report from the chunks' typings
    if req.reports():
        # the EM on the cores the workers had: the same numbers on any number of threads
        summary["viral_report"], report_rows = report_from_typing(typing, pool.workers + 1)
        write_sample_report(sample_out, summary["viral_report"], report_rows, total, called)
    summary["model_sha256"] = digest.result() if digest is not None else model_sha256(clf.path, clf.config)
    return summary


def _beside(fn: Callable, *args) -> Future:
    """fn(*args) in a thread of its own, begun now: for work that leaves the interpreter's lock
    free (hashing files), so that it runs beside this thread's."""
    from concurrent.futures import ThreadPoolExecutor  # its module only where a thread is wanted

    executor = ThreadPoolExecutor(1)
    try:
        return executor.submit(fn, *args)
    finally:
        executor.shutdown(wait=False)


def steps(reads: Iterator, size: int, tail: int, at_end: Callable[[], None] | None = None,
          first: int = 0) -> Iterator[list]:
    """Lists of `size` reads of `reads`, in order, one full list held back until the next is read:
    where the input ends, that list and the short one after it go as lists of `tail` reads (both
    multiples of BLOCK, so that every list starts on a block boundary), so that the job's processes
    finish their last steps at nearly the same time; `at_end` is called before the first of them
    (genointerp.pools.OrderedPool.map then works on them as the last ones).

    With `first` (a multiple of BLOCK), a list of that many reads goes first, as soon as it is
    read, where the input holds as many: a worker waited for its first batch while this process read
    two full ones (16,384 reads: 0.03 s of a -t 2 run, the worker's core idle)."""
    held: list = []
    if first:
        batch = list(islice(reads, first))
        if len(batch) == first:
            yield batch
        else:
            reads = iter(batch)  # the whole input: cut as its end is
    while True:
        batch = list(islice(reads, size))
        if len(batch) == size:
            if held:
                yield held
            held = batch
            continue
        if at_end is not None:
            at_end()
        rest = held + batch
        for a in range(0, len(rest), tail):
            yield rest[a : a + tail]
        return


def report_spec(req: ClassifyRequest, log) -> dict:
    """The per-sample report's settings (genointerp.viral.report.typing_data.sample_spec): with
    --unmapped-only and no --host-bases, the bases of the mapped host reads left out, from the
    inputs' indexes. Refused where they cannot be known and a report is asked for; a chunk job
    records them as unknown (merge-calls then refuses its report)."""
    mapped: MappedBases | None = None
    # with --host-bases too, the index gives the reads --unmapped-only leaves out (the kraken-style
    # report's unclassified row); there, where it cannot, the report goes on without them
    if req.host_bases is None or req.unmapped_only:
        try:
            mapped = sum_mapped([mapped_host_bases(p, req.reference) if req.unmapped_only else MappedBases(0, 0, 0, {})
                                 for p in req.reads])
        except InputError as exc:
            if req.host_bases is not None:
                log(f"the kraken-style report's unclassified reads leave out the mapped reads: {exc}")
            elif req.reports():
                raise
            else:
                log(f"the host's bases are unknown, so merge-calls will refuse this chunk's report: {exc}")
        if mapped is not None and mapped.records and req.host_bases is None:
            log(f"host bases of the mapped reads --unmapped-only leaves out: {mapped.bases:,} "
                f"({'counted' if mapped.exact else f'estimated from {mapped.sampled:,} of'} {mapped.records:,} "
                "mapped records in the index)")
        if mapped is not None and mapped.viral_records:
            log("mapped to viral contigs, neither classified (--unmapped-only) nor host: "
                + ", ".join(f"{n:,} records on {c}" for c, n in mapped.viral_records.items()))
    return sample_spec(req.sample or sample_name(req.reads), req.host_genome_size, req.host_bases, mapped, req.library)


def _rows(names: list[str], lengths: np.ndarray, got: BatchCalls, types: list[str]) -> str:
    """The calls TSV's rows of a batch of n reads (HEADER's columns), built column by column from
    their names and reference labels (lists (n,)), lengths (int64 (n,)) and calls."""
    n = len(names)
    p_text = _text(got.p, ~np.isnan(got.p), "NA", "{:.6f}".format)
    hit_text = _text(got.hits, got.hits != 0, "0", str) if got.hits is not None else ["NA"] * n
    # -0.0 is written "-0.00": only +0.0 shares the text "0.00"
    bits_text = (_text(got.bits, (got.bits != 0) | np.signbit(got.bits), "0.00", "{:.2f}".format)
                 if got.bits is not None else ["NA"] * n)
    length_text = _text(lengths, lengths != lengths[0], str(int(lengths[0])), str)  # mostly the first read's
    columns = (names, length_text, p_text, got.call.tolist(), got.status.tolist(), hit_text,
               got.evidence.tolist(), bits_text, types)
    return "\n".join(map("\t".join, zip(*columns))) + "\n"


def _text(values: np.ndarray, own: np.ndarray, usual: str, fmt: Callable[[object], str]) -> list[str]:
    """`values` (n,) as text: `fmt` of those where `own` (bool (n,)), `usual` for the others. Most
    reads of a batch share one text (no p_viral, no seed hits, 0 bits): it is made once, not per
    read; and so is each distinct value's (by its bits: -0.0 is not 0.0), put in place through
    object arrays (an all-viral batch of 8,192 reads has about 3,300 distinct bits and 70 seed
    hit counts: its rows took 6 ms, each value formatted and placed in turn, on the job's process)."""
    where = np.flatnonzero(own)
    if where.size * 4 < len(values):  # a few (a human sample's bits): each in turn, in a list of `usual`
        text = [usual] * len(values)
        for i, value in zip(where.tolist(), values[where].tolist()):
            text[i] = fmt(value)
        return text
    picked = values[where]
    key = picked.view(f"i{picked.itemsize}") if picked.dtype.kind == "f" else picked
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    shown = np.array(list(map(fmt, picked[first].tolist())), dtype=object)[inverse.ravel()]
    if where.size == len(values):
        return shown.tolist()
    text = np.full(len(values), usual, dtype=object)
    text[where] = shown
    return text.tolist()


def _record_text(rec) -> str:
    name, seq, qual = rec
    return f"@{name}\n{seq}\n+\n{qual}\n" if qual is not None else f">{name}\n{seq}\n"
