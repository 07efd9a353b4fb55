"""The classify-reads job: reads in (FASTQ/FASTA/BAM/CRAM), per-read P(viral) TSV out, streamed.

Each read is cut into windows of the model's read length (at 0, L, 2L, ... and one ending at the
read's end, so every base is covered); a read's p_viral is the highest of its windows. Windows
with N or IUPAC letters are skipped when the model has no UNKNOWN token. Status per read:
scored, too_short (shorter than the model's read length), ambiguous (no window free of N).

With `chunk=(i, n)` the job classifies only chunk i of n of the read stream (see
genointerp.viral.scatter): the chunks' outputs, concatenated, are the unchunked run's byte for byte.
That needs a read's p_viral to be independent of the reads it is batched with, which is why
every forward pass has the same shape (see window_scorer).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from itertools import islice
from typing import Callable, Iterator

import numpy as np

from genointerp.errors import InputError
from genointerp.io.sequences import iter_reads
from genointerp.reads.kmerize import encode_joined
from genointerp.report import Reporter
from genointerp.viral.scatter import chunk_fields, chunk_range, count_records
from genointerp.seq.alphabet import INVALID, N_CODE
from genointerp.seq.kmers import tokenize

BATCH = 8192  # reads per step
HEADER = "read_id\tlength\tp_viral\tcall\tstatus\n"


@dataclass
class ClassifyRequest:
    inputs: list[str]
    threshold: float | None = None  # None: the model's calibrated threshold (default_threshold)
    unmapped_only: bool = False
    reference: str | None = None
    device: str = "cpu"
    precision: str = "32"
    batch_windows: int = 256  # windows per forward pass: more only adds memory (~0.3 MB of activations each)
    chunk: tuple[int, int] | None = None  # (i, n): only chunk i of n of the read stream
    model_path: str | None = None  # None: the built-in model; recorded in the summary with a digest of its files


def default_threshold(config: dict, where: str = "model config.json") -> float:
    """The model's calibrated calling threshold (config.json "calling"), else the paper's 0.5.
    A damaged one (not a number from 0 to 1) is an InputError naming `where`."""
    from genointerp.checkpoint import check_calling

    threshold = check_calling(config, where)
    return 0.5 if threshold is None else threshold


def model_sha256(folder: str) -> str:
    """SHA-256 over the model's config.json and weights: tells summaries of different models apart
    even when the same model sits at different paths (host and container)."""
    from genointerp.checkpoint import CONFIG, WEIGHTS

    digest = hashlib.sha256()
    for name in (CONFIG, WEIGHTS):
        with open(f"{folder}/{name}", "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def records(req: ClassifyRequest) -> Iterator[tuple[str, str, str | None]]:
    for path in req.inputs:
        yield from iter_reads(path, req.unmapped_only, req.reference)


def window_starts(starts: np.ndarray, lengths: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets (into the joined codes) of every window, and the read each belongs to."""
    per = np.where(lengths >= L, -(-lengths // L), 0)  # ceil(len / L) windows, the last one end-aligned
    read = np.repeat(np.arange(lengths.size), per)
    j = np.arange(read.size) - np.repeat(np.cumsum(per) - per, per)
    offset = np.minimum(j * L, lengths[read] - L)
    return starts[read] + offset, read


def window_scorer(model, req: ClassifyRequest) -> Callable[[np.ndarray], np.ndarray]:
    """A function from token windows (W, n_tokens) to P(viral) float64 (W,) whose value for a
    window does not depend on the other windows it is given with.

    In float32 on CPU, an XVir of the paper's family runs in its folded inference form
    (genointerp.models.xvir_inference: a fifth less arithmetic, cache-sized micro-batches);
    otherwise the module runs in passes of req.batch_windows.
    """
    import torch

    from genointerp.models.xvir_inference import XVirInference, supports
    from genointerp.runtime import predict_proba

    if req.device == "cpu" and req.precision == "32" and supports(model):
        engine = XVirInference(model)
        return lambda tokens: torch.sigmoid(engine(torch.from_numpy(tokens.astype(np.int64)))).double().numpy()

    def module_scores(tokens: np.ndarray) -> np.ndarray:
        # Pad to whole forward passes: GEMM kernels sum in an order that depends on the batch
        # shape, so a window's score would shift in the 7th digit with the windows around it,
        # and chunked runs would not reproduce the unchunked TSV. Same shape, same bits.
        pad = -len(tokens) % req.batch_windows
        padded = np.concatenate([tokens, np.repeat(tokens[:1], pad, axis=0)]) if pad else tokens
        return predict_proba(model, padded, req.device, req.precision, req.batch_windows)[: len(tokens)]

    return module_scores


def score_batch(scorer: Callable[[np.ndarray], np.ndarray], batch, L: int, k: int, has_unknown: bool):
    """p_viral (n,) with NaN for unscored reads, and statuses (n,) for a batch of records."""
    flat, starts, lengths = encode_joined([r[1] for r in batch])
    flat = np.where(flat == INVALID, N_CODE, flat)  # any odd character counts as an unknown base
    wstart, wread = window_starts(starts, lengths, L)
    p = np.full(len(batch), np.nan)
    status = np.where(lengths < L, "too_short", "ambiguous").astype(object)
    if wstart.size:
        mat = np.lib.stride_tricks.sliding_window_view(flat, L)[wstart]
        if not has_unknown:
            clean = ~(mat == N_CODE).any(axis=1)
            mat, wread = mat[clean], wread[clean]
        if wread.size:
            pw = scorer(tokenize(mat, k))
            best = np.full(len(batch), -1.0)
            np.maximum.at(best, wread, pw)
            scored = best >= 0
            p[scored] = best[scored]
            status[scored] = "scored"
    return p, status


def load_classifier(req: ClassifyRequest):
    """(model folder, model on req.device, its config, the calling threshold) for the request: its
    model folder or the built-in one, and its threshold or the model's calibrated one."""
    from genointerp.checkpoint import load_model_dir
    from genointerp.resources import builtin_model_dir

    path = req.model_path or str(builtin_model_dir())
    model, config = load_model_dir(path, expect="xvir")
    threshold = req.threshold if req.threshold is not None else default_threshold(config, f"{path}/config.json")
    return path, model.to(req.device), config, threshold


def run(req: ClassifyRequest, out, viral_out, report: Reporter) -> dict:
    """Classify every read; write TSV rows to `out` and reads called viral to `viral_out` (open
    binary streams, viral_out None for none). Returns the run's summary."""
    model_path, model, config, threshold = load_classifier(req)
    L, k = config["model"]["read_length"], config["model"]["k"]
    has_unknown = config["model"]["vocab_size"] > 4**k
    counts: Counter = Counter()
    total = called = 0
    scorer = window_scorer(model, req)
    it = records(req)
    ids = hashlib.sha256() if req.chunk else None  # the chunk's read names, for merge-calls to pair files
    if req.chunk:
        part, parts = req.chunk
        with report.progress(f"counting reads for chunk {part}/{parts}", None) as advance:
            n_input = count_records(records(req), advance)
        start, stop = chunk_range(part, parts, n_input)
        report.log(f"chunk {part}/{parts}: reads {start + 1:,} to {stop:,} of {n_input:,}")
        it = islice(it, start, stop)
    out.write(HEADER.encode())
    with report.progress("classifying reads", None) as advance:
        while batch := list(islice(it, BATCH)):
            p, status = score_batch(scorer, batch, L, k, has_unknown)
            call = np.where(np.isnan(p), "NA", np.where(p >= threshold, "viral", "not_viral"))
            rows = [f"{r[0]}\t{len(r[1])}\t{'NA' if q != q else f'{q:.6f}'}\t{c}\t{s}\n"
                    for r, q, c, s in zip(batch, p.tolist(), call.tolist(), status.tolist())]
            out.write("".join(rows).encode())
            if ids is not None:
                ids.update(("\n".join([r[0] for r in batch]) + "\n").encode())
            viral = np.flatnonzero(call == "viral")
            if viral_out is not None and viral.size:
                viral_out.write("".join(_record_text(batch[i]) for i in viral).encode())
            counts.update(status.tolist())
            total += len(batch)
            called += int(viral.size)
            advance(len(batch))
    if req.chunk and total != stop - start:
        raise InputError(f"{', '.join(req.inputs)}: {start + total:,} reads on the second pass, {n_input:,} when "
                         "counted: did the input change while it was read?")
    scored = counts.get("scored", 0)
    summary = {
        "reads_total": total,
        "reads_scored": scored,
        "reads_called_viral": called,
        "fraction_viral_of_scored": called / scored if scored else 0.0,
        "status_counts": {s: counts.get(s, 0) for s in ("scored", "too_short", "ambiguous")},
        "threshold": threshold,
        "inputs": list(req.inputs),
        "model": model_path,
        "model_sha256": model_sha256(model_path),
    }
    if req.chunk:
        summary.update(chunk_fields(part, parts, start, stop, n_input, ids.hexdigest()))
    return summary


def _record_text(rec) -> str:
    name, seq, qual = rec
    return f"@{name}\n{seq}\n+\n{qual}\n" if qual is not None else f">{name}\n{seq}\n"


def summary_json(summary: dict) -> str:
    return json.dumps(summary, indent=2) + "\n"
