"""Scatter/gather for classify-reads: N cluster jobs cover one read stream exactly once.

Scatter (`classify-reads --chunk i/n`). Chunk i of n takes the contiguous range of records
[floor((i-1)*N/n), floor(i*N/n)) of the input stream, where N is the number of records in that
stream. Contiguous ranges are what make `cat chunk1.tsv chunk2.tsv ...` (header once) equal the
unchunked TSV byte for byte; round-robin blocks would need a re-interleaving gather, and byte
offsets only work for seekable, uncompressed or BGZF input, not the plain-gzip FASTQ that
sequencers write. So every job first counts N, with no index and no side files:

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
- stdin cannot be chunked (it cannot be read twice, and each job would need all of it).

Gather (`merge-calls`): concatenate the chunk TSVs (one header), the chunk viral-read files,
and sum the chunk summaries, refusing chunk sets that are incomplete, duplicated, or come from
other inputs, models or thresholds.
"""

from __future__ import annotations

import gzip
import os
from typing import BinaryIO, Callable, Iterable

from genointerp.errors import InputError
from genointerp.io.jsonfile import json_object

# Summary fields that describe one chunk only; the merged summary drops them.
CHUNK_KEYS = ("chunk", "chunk_range", "input_reads_total")
_COUNT_KEYS = ("reads_total", "reads_scored", "reads_called_viral")
_BLOCK = 1 << 20


# --- scatter ------------------------------------------------------------------------------------

def parse_chunk(text: str) -> tuple[int, int]:
    """'3/8' -> (3, 8); ValueError with a user-facing message for anything else."""
    i, sep, n = text.partition("/")
    if not (sep and i.strip().isdigit() and n.strip().isdigit()):
        raise ValueError(f"expected I/N such as 3/8 (chunk I of N, 1-based), got {text!r}")
    i, n = int(i), int(n)
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"{text!r}: need 1 <= I <= N")
    return i, n


def chunk_range(i: int, n: int, total: int) -> tuple[int, int]:
    """Records [start, stop) of chunk i (1-based) of n over `total` records.

    Consecutive chunks share their boundaries, so chunks 1..n tile [0, total) exactly once;
    sizes differ by at most one, and chunks past the last record (n > total) are empty.
    """
    return (i - 1) * total // n, i * total // n


def count_records(stream: Iterable, advance: Callable[[int], None]) -> int:
    n = 0
    for _ in stream:
        n += 1
        if n % 65536 == 0:
            advance(65536)
    return n


def chunk_fields(i: int, n: int, start: int, stop: int, total: int) -> dict:
    """What a chunk's summary adds, so that gather can check the set of chunks."""
    return {"chunk": f"{i}/{n}", "chunk_range": [start, stop], "input_reads_total": total}


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
    first_path, first = summaries[0]
    for path, s in summaries[1:]:
        if s["threshold"] != first["threshold"]:
            raise InputError(f"{path}: threshold {s['threshold']} differs from {first_path}'s {first['threshold']}")
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
    statuses = dict.fromkeys(k for _, s in summaries for k in s["status_counts"])
    merged["status_counts"] = {k: sum(int(s["status_counts"].get(k, 0)) for _, s in summaries) for k in statuses}
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
        for key in ("inputs", "input_reads_total"):
            if s.get(key) != first.get(key):
                raise InputError(f"{path}: a chunk of other input than {first_path} ({key} differs)")
        parsed.append(i)
    n = parse_chunk(str(first["chunk"]))[1]
    missing = [i for i in range(1, n + 1) if i not in parsed]
    twice = sorted({i for i in parsed if parsed.count(i) > 1})
    if missing or twice:
        problems = [f"chunk{'s' * (len(missing) > 1)} {_join(missing)} missing"] if missing else []
        problems += [f"chunk{'s' * (len(twice) > 1)} {_join(twice)} given twice"] if twice else []
        raise InputError(f"chunk{'s' * (len(parsed) > 1)} {_join(sorted(parsed))} of {n}: {'; '.join(problems)}")
    return sorted(range(len(parsed)), key=parsed.__getitem__)


def _join(numbers: list[int]) -> str:
    return ",".join(map(str, numbers))


def read_summary(path: str) -> dict:
    with open_input(path) as fh:
        return json_object(fh.read(), path, "a classify-reads summary")


# --- gather: files ------------------------------------------------------------------------------

def open_input(path: str) -> BinaryIO:
    """A chunk output for reading, gzip (several members too) or plain."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def sniff_kind(path: str) -> str:
    """'calls', 'summary' or 'viral' (reads called viral; empty when a chunk called none)."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with open_input(path) as fh:
            head = fh.read(8)
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    if head.startswith(b"read_id\t"):
        return "calls"
    if head.lstrip().startswith(b"{"):
        return "summary"
    if head[:1] in (b"", b"@", b">"):
        return "viral"
    raise InputError(f"{path}: not a classify-reads calls TSV, summary JSON or viral-read file")


def copy_table(path: str, out: BinaryIO, header: bytes | None) -> tuple[bytes, int, int]:
    """Append a calls TSV to `out`, its header only when `header` is None (the first TSV);
    returns (header, rows, rows called viral). Refuses a header other than `header` and a last
    line cut off mid-row.
    """
    with open_input(path) as fh:
        head = fh.readline()
        if header is None:
            out.write(head)
        elif head != header:
            raise InputError(f"{path}: header {head.decode(errors='replace').strip()!r} differs from the first "
                             f"TSV's {header.decode(errors='replace').strip()!r}")
        rows = viral = 0
        carry = b""
        while block := fh.read(_BLOCK):
            block = carry + block
            cut = block.rfind(b"\n") + 1  # count whole lines only: a field never spans a block edge
            whole, carry = block[:cut], block[cut:]
            rows += whole.count(b"\n")
            viral += whole.count(b"\tviral\t")
            out.write(whole)
    if carry:
        raise InputError(f"{path}: truncated (the last line has no end)")
    return head, rows, viral


def copy_reads(path: str, out: BinaryIO) -> int:
    """Append a viral-read file (as classify-reads writes it: one-line FASTQ or FASTA records) to
    `out`; returns how many records it holds."""
    n = left = 0
    with open_input(path) as fh:
        for line in fh:
            if left == 0:
                if line[:1] not in (b"@", b">"):
                    raise InputError(f"{path}: record {n + 1}: not a FASTQ/FASTA header line")
                n += 1
                left = 3 if line[:1] == b"@" else 1
            else:
                left -= 1
            out.write(line)
    if left:
        raise InputError(f"{path}: record {n}: truncated")
    return n


def merge_calls(tables: list[str], summaries: list[str], virals: list[str], out: BinaryIO,
                viral_out: BinaryIO | None) -> dict | None:
    """Gather chunk outputs into `out` (TSV) and `viral_out`; returns the merged summary, if any.

    The three lists are paired by position (the k-th TSV, summary and viral-read file come from
    one job). Chunk summaries put all three in chunk order; without summaries, TSVs are taken in
    the order given. Each TSV's rows must match its summary's read count, and each viral-read
    file the TSV's viral calls, which catches lists given in different orders.
    """
    merged, loaded = None, []
    if summaries:
        loaded = [(p, read_summary(p)) for p in summaries]
        merged, order = merge_summaries(loaded)
        loaded = [loaded[k] for k in order]
        tables = [tables[k] for k in order]
        virals = [virals[k] for k in order] if virals else virals
    header, called = None, []
    for k, path in enumerate(tables):
        header, rows, viral = copy_table(path, out, header)
        if loaded:
            s_path, s = loaded[k]
            if (rows, viral) != (s["reads_total"], s["reads_called_viral"]):
                raise InputError(f"{path}: {rows} reads, {viral} called viral, but {s_path} counts "
                                 f"{s['reads_total']} and {s['reads_called_viral']} (list TSVs and summaries in the same order)")
        called.append(viral)
    if viral_out is not None:
        for path, table, expected in zip(virals, tables, called):
            n = copy_reads(path, viral_out)
            if n != expected:
                raise InputError(f"{path}: {n} reads, but {table} calls {expected} viral "
                                 "(list TSVs and viral-read files in the same order)")
    return merged
