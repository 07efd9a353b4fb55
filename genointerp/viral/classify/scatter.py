"""Scatter/gather for classify-reads: N cluster jobs cover one read stream exactly once.

Scatter (`classify-reads --chunk i/n`). Chunk i of n takes a contiguous range of records of the
input stream: with N records in that stream, in B = ceil(N / 16) blocks of 16 (the scoring blocks
of genointerp.viral.classify.blocks), chunk i holds blocks [floor((i-1)*B/n), floor(i*B/n)). Contiguous
ranges are what make `cat chunk1.tsv chunk2.tsv ...` (header once) equal the unchunked TSV byte
for byte; round-robin blocks would need a re-interleaving gather, and byte offsets only work for
seekable, uncompressed or BGZF input, not the plain-gzip FASTQ that sequencers write.
So every job first counts N, with no index and no side files:

- The count is one parsing pass through the very reader that classifies (same validation, same
  BAM/CRAM filter), so it cannot disagree with the records the job later takes, and a malformed
  record anywhere fails every chunk as it would fail the unchunked run.
- "The stream" is every input file in order, after BAM/CRAM filtering (primary records with a
  sequence, and only the unmapped ones with --unmapped-only): chunks of the filtered stream
  concatenate to the unchunked filtered output.
- Cost: counting 1,000,000 simulated 150 bp reads from a FASTQ.gz takes about 2.6 s on one
  core (htslib parsing plus validation), against about 15 minutes to classify them on that
  core; a job then parses (without scoring) the records before its range. On a GPU, where
  scoring is some 50x faster, the count is no longer negligible and fewer, larger chunks pay.
- stdin, a named pipe or `<(...)` cannot be chunked (it cannot be read twice, and each job would
  need all of it).

Gather (`merge-calls`): concatenate the chunk TSVs (one header), the chunk viral-read files,
join the chunks' typings into the per-sample report (genointerp.viral.report.typing_data.merge_typing),
and sum the chunk summaries, refusing chunk sets that are incomplete, duplicated, or come from
other inputs, models or thresholds. Every chunk digests the whole input's names and sequences
while it counts them (`input_sha256`: chunks of one file named two ways merge, chunks of two files
of one base name and count do not). A chunk summary records a digest of its reads' names
(`read_ids_sha256`), so that each TSV is matched to its own summary even where two chunks hold as
many reads and calls; a viral-read file must hold, by name and in order, the reads its TSV calls
viral.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterable

from genointerp.chunks import block_range, parse_chunk
from genointerp.errors import InputError
from genointerp.io.calls_table import HEADER
from genointerp.io.inputs import is_stream, open_binary
from genointerp.io.jsonfile import json_object
from genointerp.viral.classify.blocks import BLOCK

# Summary fields that describe one chunk only; the merged summary drops them.
CHUNK_KEYS = ("chunk", "chunk_range", "input_reads_total", "input_sha256", "read_ids_sha256", "typing")
_COUNT_KEYS = ("reads_total", "reads_scored", "reads_called_viral", "reads_model_scored")
_BLOCK = 1 << 20


# --- scatter ------------------------------------------------------------------------------------

def chunk_range(i: int, n: int, total: int) -> tuple[int, int]:
    """Records [start, stop) of chunk i (1-based) of n over `total` records: whole scoring blocks
    (genointerp.viral.classify.blocks.BLOCK records; the stream's last block may be short), so that a read
    is scored beside the same reads as in the unchunked run (genointerp.chunks.block_range)."""
    return block_range(i, n, total, BLOCK)


def count_records(batches: Iterable[list[tuple[str, str, str | None]]],
                  advance: Callable[[int], None]) -> tuple[int, str]:
    """(reads, the input's content digest) of the whole filtered read stream, given as lists of
    (name, sequence, quality). The digest is what tells merge-calls that chunks come from one
    input: paths do not (pipelines stage every sample's file under one base name; one file may be
    named relative in one job and absolute in another), and a count can coincide. It is SHA-256 of
    the SHA-256 of the reads' names and that of their sequences (each followed by a newline, in
    order), whatever the lists: 0.9 s per million 150 bp reads on a busy 2-core machine, beside
    the 2.6 s of the count itself."""
    n = 0
    names, seqs = hashlib.sha256(), hashlib.sha256()
    for batch in batches:
        names.update(("\n".join([r[0] for r in batch]) + "\n").encode())
        seqs.update(("\n".join([r[1] for r in batch]) + "\n").encode())
        n += len(batch)
        advance(len(batch))
    return n, hashlib.sha256(names.digest() + seqs.digest()).hexdigest()


def chunk_fields(i: int, n: int, start: int, stop: int, total: int, input_sha256: str, read_ids_sha256: str) -> dict:
    """What a chunk's summary adds, so that gather can check the set of chunks and pair each TSV
    with its summary (input_sha256: count_records' digest of the whole input; read_ids_sha256:
    SHA-256 of the chunk's read names, each followed by a newline, as in the TSV's first column)."""
    return {"chunk": f"{i}/{n}", "chunk_range": [start, stop], "input_reads_total": total,
            "input_sha256": input_sha256, "read_ids_sha256": read_ids_sha256}


# --- gather: summaries --------------------------------------------------------------------------

def merge_summaries(summaries: list[tuple[str, dict]]) -> tuple[dict, list[int]]:
    """Sum classify-reads summaries; returns (merged summary, order of the inputs).

    Chunk summaries must form one complete set (each chunk once, same n, inputs and model); the
    order then sorts them by chunk, and the merged summary is the unchunked run's. Whole-run
    summaries (no chunk field, e.g. one per sequencing lane) are summed in the order given, with
    their inputs listed one after another.
    """
    for path, s in summaries:
        missing = [k for k in (*_COUNT_KEYS, "status_counts", "threshold") if k not in s]
        if missing:
            raise InputError(f"{path}: not a classify-reads summary (no {missing[0]!r})")
        _check_types(path, s)
    first_path, first = summaries[0]
    for path, s in summaries[1:]:
        for key in ("threshold", "evidence", "rule", "kmer_index", "protein_index"):
            if s.get(key) != first.get(key):
                raise InputError(f"{path}: {key} {json.dumps(s.get(key))} differs from {first_path}'s {json.dumps(first.get(key))}")
        if s.get("model_sha256") != first.get("model_sha256"):
            raise InputError(f"{path}: made with another model than {first_path} (model_sha256 differs)")
        if ("chunk" in s) != ("chunk" in first):
            raise InputError(f"{path}: do not mix chunk summaries and whole-run summaries ({first_path})")
    order = list(range(len(summaries)))
    if "chunk" in first:
        order = _check_chunk_set(summaries)
    merged = {k: v for k, v in summaries[order[0]][1].items() if k not in CHUNK_KEYS}
    for k in _COUNT_KEYS:
        merged[k] = sum(int(s[k]) for _, s in summaries)
    for field in ("status_counts", "evidence_counts"):
        keys = dict.fromkeys(k for _, s in summaries for k in s.get(field, {}))
        merged[field] = {k: sum(int(s.get(field, {}).get(k, 0)) for _, s in summaries) for k in keys}
    scored = merged["reads_scored"]
    merged["fraction_viral_of_scored"] = merged["reads_called_viral"] / scored if scored else 0.0  # as classify-reads
    if "chunk" not in first:
        merged["inputs"] = [p for _, s in summaries for p in s.get("inputs", [])]
    return merged, order


def _check_chunk_set(summaries: list[tuple[str, dict]]) -> list[int]:
    """Refuse anything but chunks 1..n of one run, each once; return the input order by chunk."""
    first_path, first = summaries[0]
    parsed = []
    for path, s in summaries:
        try:
            i, n = parse_chunk(str(s["chunk"]))
        except ValueError as exc:
            raise InputError(f"{path}: bad chunk field ({exc})") from None
        if n != parse_chunk(str(first["chunk"]))[1]:
            raise InputError(f"{path}: chunk {s['chunk']} does not belong with {first_path}'s {first['chunk']}")
        if "input_sha256" not in s:
            raise InputError(f"{path}: a chunk summary without input_sha256 (an older genointerp's): run every chunk "
                             "with this version")
        for key in ("input_sha256", "input_reads_total"):  # content, not paths: see count_records
            if s.get(key) != first.get(key):
                raise InputError(f"{path}: a chunk of other input than {first_path} ({key} differs)")
        total = s.get("input_reads_total")
        expected = list(chunk_range(i, n, total)) if isinstance(total, int) and total >= 0 else None
        if expected is None or s.get("chunk_range") != expected:
            raise InputError(f"{path}: chunk {i}/{n} covers reads {s.get('chunk_range')}, not {expected} as chunks "
                             "of this genointerp version do (scoring blocks); run every chunk with one version")
        parsed.append(i)
    n = parse_chunk(str(first["chunk"]))[1]
    missing = [i for i in range(1, n + 1) if i not in parsed]
    twice = sorted({i for i in parsed if parsed.count(i) > 1})
    if missing or twice:
        problems = [f"chunk{'s' * (len(missing) > 1)} {_join(missing)} missing"] if missing else []
        problems += [f"chunk{'s' * (len(twice) > 1)} {_join(twice)} given twice"] if twice else []
        raise InputError(f"chunk{'s' * (len(parsed) > 1)} {_join(sorted(parsed))} of {n}: {'; '.join(problems)}")
    return sorted(range(len(parsed)), key=parsed.__getitem__)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# the summary fields merge-calls reads, and what each must be (a wrong type is one line, not a traceback)
_FIELD_TYPES = {
    **{k: ("a count", _is_count) for k in _COUNT_KEYS},
    "input_reads_total": ("a count", _is_count),
    "status_counts": ("an object of counts", lambda v: isinstance(v, dict) and all(map(_is_count, v.values()))),
    "evidence_counts": ("an object of counts", lambda v: isinstance(v, dict) and all(map(_is_count, v.values()))),
    "chunk": ("text I/N", lambda v: isinstance(v, str)),
    "input_sha256": ("text", lambda v: isinstance(v, str)),
    "read_ids_sha256": ("text", lambda v: isinstance(v, str)),
    "inputs": ("a list of paths", lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v)),
    "typing": ("an object", lambda v: isinstance(v, dict)),
}


def _check_types(path: str, s: dict) -> None:
    """InputError naming the first field of summary `s` (one of _FIELD_TYPES, where present) whose
    value has the wrong type: a damaged or hand-edited summary."""
    for key, (what, ok) in _FIELD_TYPES.items():
        if key in s and not ok(s[key]):
            raise InputError(f"{path}: {key} is {json.dumps(s[key])}, not {what}: a damaged classify-reads summary")


def _join(numbers: list[int]) -> str:
    return ",".join(map(str, numbers))


def read_summary(cf: ChunkFile) -> dict:
    with open_binary(cf.source) as fh:
        return json_object(fh.read(), cf.path, "a classify-reads summary")


# --- gather: files ------------------------------------------------------------------------------

@dataclass
class ChunkFile:
    """A merge-calls input: the path as given (named in errors), its kind, and the file to read
    (the path itself, or for a stream, a decompressed copy made while its kind was told)."""

    path: str
    kind: str  # 'calls', 'summary' or 'viral'
    source: str


def open_chunk_files(paths: list[str], scratch: str) -> list[ChunkFile]:
    """Tell each input's kind from its first line (gzip or plain, by content).

    The inputs are read in chunk order, not in the order given, so a stream (named pipe,
    `<(...)`, which can be read only once) is copied to a file under `scratch` as it is sniffed.
    """
    files = []
    for k, path in enumerate(paths):
        stream = is_stream(path)
        with open_binary(path) as fh:
            first = fh.readline(1 << 16)
            kind = _kind(path, first)
            source = path
            if stream:
                source = os.path.join(scratch, f"{k}.{kind}")
                with open(source, "wb") as copy:
                    copy.write(first)
                    shutil.copyfileobj(fh, copy, _BLOCK)
        files.append(ChunkFile(path, kind, source))
    return files


def _kind(path: str, first: bytes) -> str:
    """'calls', 'summary' or 'viral' (reads called viral; empty when a chunk called none)."""
    if first.startswith(b"read_id\t"):
        if first.rstrip(b"\r\n") != HEADER.rstrip("\n").encode():
            columns = first.decode(errors="replace").split()
            raise InputError(f"{path}: a table of {', '.join(columns[:6])}{', ...' * (len(columns) > 6)}, not a "
                             f"classify-reads calls TSV ({HEADER.strip().replace(chr(9), ', ')})")
        return "calls"
    if first.lstrip().startswith(b"{"):
        return "summary"
    if first[:1] in (b"", b"@", b">"):
        return "viral"
    raise InputError(f"{path}: not a classify-reads calls TSV, summary JSON or viral-read file")


_READ_ID = re.compile(rb"^([^\t\n]*)\t", re.M)
_CALLED_VIRAL = re.compile(rb"^([^\t\n]*)\t[^\t\n]*\t[^\t\n]*\tviral\t", re.M)


def copy_table(cf: ChunkFile, out: BinaryIO) -> tuple[int, list[bytes], str]:
    """Append the rows of a calls TSV (its header checked when its kind was told) to `out`;
    returns (rows, the names of the reads called viral, read_ids_sha256 as classify-reads --chunk
    writes it). Refuses a row without fields and a last line cut off mid-row.
    """
    rows, viral, ids = 0, [], hashlib.sha256()
    carry = b""
    with open_binary(cf.source) as fh:
        fh.readline(1 << 16)
        while block := fh.read(_BLOCK):
            block = carry + block
            cut = block.rfind(b"\n") + 1  # whole lines only: a field never spans a block edge
            whole, carry = block[:cut], block[cut:]
            names = _READ_ID.findall(whole)
            if len(names) != whole.count(b"\n"):
                bad = next(i for i, line in enumerate(whole.split(b"\n")) if b"\t" not in line)
                raise InputError(f"{cf.path}: line {rows + 2 + bad}: not a calls row (no tab)")
            if names:
                ids.update(b"\n".join(names) + b"\n")
            rows += len(names)
            viral += _CALLED_VIRAL.findall(whole)
            out.write(whole)
    if carry:
        raise InputError(f"{cf.path}: truncated (the last line has no end)")
    return rows, viral, ids.hexdigest()


def copy_reads(cf: ChunkFile, out: BinaryIO, expected: list[bytes], table: str) -> int:
    """Append a viral-read file (as classify-reads writes it: one-line FASTQ or FASTA records) to
    `out`, checking that its reads are, in order, those `table` calls viral; returns how many."""
    n = left = 0
    with open_binary(cf.source) as fh:
        for line in fh:
            if left == 0:
                if line[:1] not in (b"@", b">"):
                    raise InputError(f"{cf.path}: record {n + 1}: not a FASTQ/FASTA header line")
                name = line[1:].rstrip(b"\r\n")
                if n >= len(expected) or name != expected[n]:
                    want = f"{table} calls {len(expected)} reads viral" if n >= len(expected) else \
                        f"the next read {table} calls viral is {expected[n].decode(errors='replace')}"
                    raise InputError(f"{cf.path}: record {n + 1} is {name.decode(errors='replace')}, but {want} "
                                     "(list TSVs and viral-read files in the same order)")
                n += 1
                left = 3 if line[:1] == b"@" else 1
            else:
                left -= 1
            out.write(line)
    if left:
        raise InputError(f"{cf.path}: record {n}: truncated")
    if n != len(expected):
        raise InputError(f"{cf.path}: {n} reads, but {table} calls {len(expected)} viral "
                         "(list TSVs and viral-read files in the same order)")
    return n


def merge_calls(tables: list[ChunkFile], summaries: list[ChunkFile], virals: list[ChunkFile], out: BinaryIO,
                viral_out: BinaryIO | None) -> tuple[dict | None, list[tuple[str, dict]]]:
    """Gather chunk outputs into `out` (TSV) and `viral_out`; returns the merged summary, if any,
    and the summaries read, as (path, summary) in chunk order.

    The three lists are paired by position (the k-th TSV, summary and viral-read file come from
    one job). Chunk summaries put all three in chunk order; without summaries, TSVs are taken in
    the order given. Each TSV must hold its summary's reads (the read count, viral calls and the
    digest of the read names a chunk summary records), and each viral-read file the reads its TSV
    calls viral, by name and in order: this catches lists given in different orders.
    """
    merged, loaded = None, []
    if summaries:
        loaded = [(cf.path, read_summary(cf)) for cf in summaries]
        merged, order = merge_summaries(loaded)
        loaded = [loaded[k] for k in order]
        tables = [tables[k] for k in order]
        virals = [virals[k] for k in order] if virals else virals
    out.write(HEADER.encode())
    called = []
    for k, cf in enumerate(tables):
        rows, viral, ids = copy_table(cf, out)
        if loaded:
            s_path, s = loaded[k]
            if (rows, len(viral)) != (s["reads_total"], s["reads_called_viral"]):
                raise InputError(f"{cf.path}: {rows} reads, {len(viral)} called viral, but {s_path} counts "
                                 f"{s['reads_total']} and {s['reads_called_viral']} (list TSVs and summaries in the same order)")
            if s.get("read_ids_sha256", ids) != ids:
                raise InputError(f"{cf.path}: its reads are not the ones {s_path} (chunk {s.get('chunk')}) counts "
                                 "(read_ids_sha256 differs; list TSVs and summaries in the same order)")
        called.append(viral)
    if viral_out is not None:
        for cf, table, expected in zip(virals, tables, called):
            copy_reads(cf, viral_out, expected, table.path)
    return merged, loaded
