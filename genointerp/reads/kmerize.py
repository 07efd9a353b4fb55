"""The kmerize job: reads in, k-mer token dataset / inspection TSV / k-mer counts out, in batches."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import BinaryIO, Callable, Iterator

import numpy as np

from genointerp import __version__
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import STDOUT, AtomicOutputs
from genointerp.io.inputs import open_text
from genointerp.io.kmer_dataset import KmerDatasetWriter
from genointerp.io.sequences import iter_records
from genointerp.job import one_stdout, stdin_once
from genointerp.options import arg, opt
from genointerp.report import Reporter
from genointerp.seq.alphabet import INVALID, N_CODE
from genointerp.seq.joined import encode_joined
from genointerp.seq.kmers import (MAX_COUNT_K, MAX_TOKEN_K, KmerCounter, PAD_CODE, decode_kmers, pad_token, tokenize,
                                  unknown_token)

BATCH = 65_536  # reads per vectorised step
TOKEN_CONVENTION = "A=0,C=1,G=2,T=3; first base most significant; id = sum code[i]*4^(k-1-i)"


POLICIES = {"--n-policy": ("drop", "token"), "--short": ("drop", "pad"), "--long": ("truncate", "tile")}


@dataclass
class KmerizeRequest:
    """kmerize: the fields are its options (files as paths, `-` for stdin/stdout)."""

    reads: list[str] = arg(metavar="READS...", help='FASTQ/FASTA files (gzip ok); - is stdin.')
    output: str | None = opt(
        None, "-o", "--output",
        help='Dataset folder for train-xvir (tokens.npy, labels.npy, read_ids.txt, header.json).')
    tsv: str | None = opt(
        None, "--tsv",
        help='Tokens as TSV for inspection (read_id, label, space-separated ids).')
    counts: str | None = opt(
        None, "--counts",
        help='k-mer counts TSV (like jellyfish dump -c -t, sorted); counts every k-mer of every read.')
    k: int = opt(
        6, "-k", min=1, max=MAX_TOKEN_K, deprecated=("--k",),
        help='k-mer size for tokens (ids are uint16).')
    count_k: int | None = opt(
        None, "--count-k", min=1, max=MAX_COUNT_K,
        help='k for --counts (default: -k).')  # k of the counts; None: k
    canonical: bool = opt(
        False, "--canonical",
        help='Count canonical k-mers (k-mer or reverse complement, whichever is smaller; jellyfish -C).')
    length: int = opt(
        150, "--length", min=1, max=100_000,
        help='Model read length in bases: tokens per read = length - k + 1.')
    n_policy: str = opt(
        'drop', "--n-policy", choices=POLICIES["--n-policy"],
        help='Reads with N/IUPAC letters: drop them (XVir) or use the UNKNOWN token (4^k).')  # drop | token
    short: str = opt(
        'drop', "--short", choices=POLICIES["--short"],
        help='Reads shorter than --length: drop, or pad with the PAD token (4^k+1).')  # drop | pad
    long: str = opt(
        'truncate', "--long", choices=POLICIES["--long"],
        help=('Reads longer than --length: keep the first --length bases, or tile into consecutive pieces (ids get '
              '#0, #1, ...).'))  # truncate | tile
    label: list[str] = opt(
        [], "--label",
        help='Label of each input file, in order (give one per input).')  # one per input, or empty
    truth: str | None = opt(
        None, "--truth",
        help='Labels from a truth TSV (read_id, label columns; simulate-reads --truth).')
    label_field: int | None = opt(
        None, "--label-field", min=0,
        help='Labels from this 0-based field of the read name (simulate-reads names: 0).')
    label_sep: str = opt("|", "--label-sep", help='Read-name field separator for --label-field.')

    def check(self) -> None:
        if not (self.output or self.tsv or self.counts):
            raise UsageError("--output: nothing to write: give -o/--output, --tsv and/or --counts")
        if (self.output or self.tsv) and self.length < self.k:
            raise UsageError(f"--length: --length {self.length} is shorter than k={self.k}")
        if sum(x is not None for x in (self.label or None, self.truth, self.label_field)) > 1:
            raise UsageError("--label: choose one label source: --label, --truth or --label-field")
        if self.label and len(self.label) != len(self.reads):
            raise UsageError(f"--label: {len(self.label)} labels for {len(self.reads)} input files")
        if not self.label_sep:
            raise UsageError("--label-sep: the separator cannot be empty")
        stdin_once("READS...", self.reads, "it can be read only once")
        if self.output == STDOUT:
            raise UsageError("--output: the dataset is a folder and cannot go to stdout; use --tsv - for text")
        one_stdout(("--tsv", self.tsv), ("--counts", self.counts))

    def inputs(self) -> list[str | None]:
        return [*self.reads, self.truth]


@dataclass
class Stats:
    reads_in: int = 0
    kept: int = 0
    tiles: int = 0
    dropped: Counter = field(default_factory=Counter)


def read_truth_labels(path: str) -> dict[str, str]:
    """Map read id -> label from a TSV with `read_id` and `label` columns (simulate-reads --truth)."""
    with open_text(path) as fh:  # read once: a named pipe or <(zcat truth.tsv.gz) works too
        header = fh.readline().rstrip("\n").split("\t")
        if "read_id" not in header or "label" not in header:
            raise InputError(f"{path}: truth table needs 'read_id' and 'label' columns")
        ri, li = header.index("read_id"), header.index("label")
        table = {}
        for lineno, line in enumerate(fh, 2):
            f = line.rstrip("\n").split("\t")
            if len(f) != len(header):
                raise InputError(f"{path}: line {lineno}: {len(f)} columns, header has {len(header)}")
            table[f[ri]] = f[li]
    return table


def _labelled_records(req: KmerizeRequest, truth: dict[str, str] | None,
                      begun: list[tuple[int, str]] | None = None) -> Iterator[tuple[str, str, str | None]]:
    """(name, sequence, label) of every record of every input, labels from req.label, `truth`
    (read id -> label) or req.label_field; `begun` gets (records before it, path) as each input
    begins, so that a record's place in the stream names its file and number."""
    n = 0
    for i, path in enumerate(req.reads):
        if begun is not None:
            begun.append((n, path))
        for name, seq, _ in iter_records(path):
            n += 1
            if req.label:
                label = req.label[i]
            elif truth is not None:
                label = truth.get(name)
                if label is None:
                    raise InputError(f"{path}: read {name} is not in the truth table")
            elif req.label_field is not None:
                parts = name.split(req.label_sep)
                if req.label_field >= len(parts):
                    raise InputError(f"{path}: read {name} has no field {req.label_field} when split on {req.label_sep!r}")
                label = parts[req.label_field]
            else:
                label = None
            yield name, seq, label


def _codes_matrix(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, length: int) -> np.ndarray:
    """Rows of codes uint8 (n, length) from a concatenation `flat` of n reads starting at `starts`.

    Reads longer than `length` keep their first `length` codes; shorter ones are filled with
    PAD_CODE past their end.
    """
    if lengths.min() >= length:  # the common case: a row is a contiguous slice
        return np.lib.stride_tricks.sliding_window_view(flat, length)[starts]
    keep = np.minimum(lengths, length)
    mat = np.full((lengths.size, length), PAD_CODE, dtype=np.uint8)
    rows = np.repeat(np.arange(lengths.size), keep)
    cols = np.arange(rows.size) - np.repeat(np.cumsum(keep) - keep, keep)
    mat[rows, cols] = flat[np.repeat(starts, keep) + cols]
    return mat


def _check_letters(batch: list[tuple[str, str, str | None]], flat: np.ndarray, starts: np.ndarray,
                   where: Callable[[int], str] | None = None) -> None:
    bad = np.flatnonzero(flat == INVALID)
    if bad.size:
        i = int(np.searchsorted(starts, bad[0], side="right") - 1)
        name, seq = batch[i][0], batch[i][1]
        pos = int(bad[0] - starts[i])
        at = f"{where(i)} ({name})" if where is not None else f"read {name}"
        raise InputError(f"{at}: position {pos + 1}: {seq[pos]!r} is not a nucleotide letter")


def process_batch(req: KmerizeRequest, batch, stats: Stats, counter: KmerCounter | None,
                  where: Callable[[int], str] | None = None):
    """Apply length/N policies to a batch and tokenise it: (tokens (n, L-k+1), labels, ids).
    `where(i)` names the file and record of the batch's i-th record in errors."""
    L, k = req.length, req.k
    names, seqs, labels = [r[0] for r in batch], [r[1] for r in batch], [r[2] for r in batch]
    flat, starts, lengths = encode_joined(seqs)
    _check_letters(batch, flat, starts, where)
    stats.reads_in += len(batch)
    if counter is not None:
        counter.add(flat)
    if lengths.max() > L and req.long == "tile":
        tiled_names, tiled_seqs, tiled_labels = [], [], []
        for name, seq, label in batch:
            pieces = max(1, math.ceil(len(seq) / L))  # an empty read stays one (empty, dropped) piece
            tiled_names += [f"{name}#{t}" for t in range(pieces)] if pieces > 1 else [name]
            tiled_seqs += [seq[t * L : (t + 1) * L] for t in range(pieces)]
            tiled_labels += [label] * pieces
            stats.tiles += pieces > 1
        names, labels = tiled_names, tiled_labels
        flat, starts, lengths = encode_joined(tiled_seqs)
    lens = np.minimum(lengths, L)
    keep = np.ones(lens.size, dtype=bool)
    too_short_k = lens < k
    stats.dropped["shorter_than_k"] += int(too_short_k.sum())
    keep &= ~too_short_k
    if req.short == "drop":
        short = keep & (lens < L)
        stats.dropped["shorter_than_length"] += int(short.sum())
        keep &= ~short
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return None
    mat = _codes_matrix(flat, starts[idx], lengths[idx], L)
    if req.n_policy == "drop":
        has_n = (mat == N_CODE).any(axis=1)
        stats.dropped["ambiguous_bases"] += int(has_n.sum())
        mat, idx = mat[~has_n], idx[~has_n]
        if idx.size == 0:
            return None
    stats.kept += idx.size
    if idx.size < len(names):
        names, labels = [names[i] for i in idx], [labels[i] for i in idx]
    return tokenize(mat, k), labels, names


def _batches(req: KmerizeRequest, truth: dict[str, str] | None) -> Iterator[tuple[list, Callable[[int], str]]]:
    """Batches of BATCH records, each with a function from a record's index in the batch to
    "PATH: record N" (N counted in its file)."""
    begun: list[tuple[int, str]] = []
    records = _labelled_records(req, truth, begun)
    done = 0
    while batch := list(islice(records, BATCH)):
        def where(i: int, first: int = done) -> str:
            before, path = next(b for b in reversed(begun) if b[0] <= first + i)
            return f"{path}: record {first + i - before + 1}"

        yield batch, where
        done += len(batch)


def run(req: KmerizeRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write whichever of the dataset folder, the token TSV and the k-mer counts the request names;
    returns {"stats": Stats, "header": the dataset's header.json or None}."""
    truth = read_truth_labels(req.truth) if req.truth else None
    folder = outputs.folder(req.output) if req.output else None
    with outputs.streams(req.tsv, req.counts) as out:
        stats, header = tokenize_into(req, truth, folder, out.get(req.tsv), out.get(req.counts), report)
    return {"stats": stats, "header": header}


def tokenize_into(req: KmerizeRequest, truth: dict[str, str] | None, dataset_dir, tsv: BinaryIO | None,
                  counts: BinaryIO | None, report: Reporter) -> tuple[Stats, dict | None]:
    """Stream all inputs once (labels from `truth`, read id -> label, when given), writing the
    dataset into the folder dataset_dir, the token TSV to `tsv`, the k-mer counts to `counts`;
    None skips one."""
    stats = Stats()
    counter = KmerCounter(req.count_k or req.k, req.canonical) if counts is not None else None
    writer = KmerDatasetWriter(dataset_dir, req.length - req.k + 1) if dataset_dir else None
    with report.progress("kmerizing reads", None) as advance:
        if tsv:
            tsv.write(b"read_id\tlabel\ttokens\n")
        for batch, where in _batches(req, truth):
            out = process_batch(req, batch, stats, counter, where)
            advance(len(batch))
            if out is None:
                continue
            tokens, labels, ids = out
            if writer:
                writer.append(tokens, labels, ids)
            if tsv:
                rows = (" ".join(map(str, row)) for row in tokens.tolist())
                tsv.write("".join(f"{i}\t{'' if lab is None else lab}\t{r}\n" for i, lab, r in zip(ids, labels, rows)).encode())
    if (writer or tsv) and stats.kept == 0:
        raise InputError(f"no reads left to tokenise ({_dropped_text(stats)}); see --n-policy/--short/--length")
    header = None
    if writer:
        header = writer.close({
            "k": req.k,
            "length": req.length,
            "n_tokens": req.length - req.k + 1,
            "token_convention": TOKEN_CONVENTION,
            "vocab_size": 4**req.k + (2 if req.n_policy == "token" or req.short == "pad" else 0),
            "special_tokens": {"unknown": unknown_token(req.k), "pad": pad_token(req.k)},
            "policies": {"n": req.n_policy, "short": req.short, "long": req.long},
            "reads_in": stats.reads_in,
            "dropped": dict(sorted(stats.dropped.items())),
            "inputs": list(req.reads),
            "genointerp_version": __version__,
        })
    if counter is not None:
        write_counts(counter, counts)
    return stats, header


def write_counts(counter: KmerCounter, fh: BinaryIO) -> None:
    """k-mer<TAB>count lines in lexicographic k-mer order (jellyfish dump -c -t, sorted)."""
    width = counter.k + 1
    for ids, counts in counter.result():
        for a in range(0, ids.size, 1 << 20):
            letters = decode_kmers(ids[a : a + (1 << 20)], counter.k)
            tab = np.full((letters.shape[0], 1), ord("\t"), np.uint8)
            kmers = np.hstack([letters, tab]).tobytes().decode()
            fh.write("".join([f"{kmers[i * width:(i + 1) * width]}{c}\n"
                              for i, c in enumerate(counts[a : a + (1 << 20)].tolist())]).encode())


def _dropped_text(stats: Stats) -> str:
    parts = [f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(stats.dropped.items()) if n]
    return f"{stats.reads_in} reads in, dropped: " + (", ".join(parts) or "none")
