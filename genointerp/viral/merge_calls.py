"""The merge-calls job: classify-reads --chunk outputs in, the unchunked run's outputs out.

The inputs are told apart by content (genointerp.viral.scatter.open_chunk_files); how they are
checked and joined is genointerp.viral.scatter's gather.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from genointerp.errors import UsageError
from genointerp.io.atomic import AtomicOutputs, open_streams
from genointerp.io.paths import file_id
from genointerp.io.calls_table import summary_json
from genointerp.job import one_stdout, stdin_once
from genointerp.report import Reporter
from genointerp.viral.scatter import ChunkFile, merge_calls, open_chunk_files


@dataclass
class MergeCallsRequest:
    """merge-calls: the fields are its options (files as paths, `-` for stdout)."""

    chunks: list[str]  # CHUNK...: calls TSVs, summary JSONs and viral-read files of the chunk jobs
    output: str = "-"  # merged calls TSV
    summary: str | None = None  # merged summary JSON (needs the chunks' summaries)
    viral_out: str | None = None  # merged reads called viral (needs the chunks' viral-read files)

    def check(self) -> None:
        one_stdout(("--output", self.output), ("--summary", self.summary), ("--viral-out", self.viral_out))
        stdin_once("CHUNK...", self.chunks, "one stream cannot be two chunk files")

    def inputs(self) -> list[str]:
        return list(self.chunks)


def run(req: MergeCallsRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Join the chunks into the request's outputs; returns {"chunks": how many calls TSVs, "summary":
    the merged summary or None without the chunks' summaries}."""
    paths = outputs.files(req.output, req.summary, req.viral_out)  # refused outputs cost no reading
    with tempfile.TemporaryDirectory(prefix="genointerp-merge-") as scratch:  # copies of piped inputs
        kinds: dict[str, list[ChunkFile]] = {"calls": [], "summary": [], "viral": []}
        for cf in open_chunk_files(req.chunks, scratch):
            kinds[cf.kind].append(cf)
        tables, summaries, virals = kinds["calls"], kinds["summary"], kinds["viral"]
        _check_kinds(req, tables, summaries, virals)
        with open_streams(paths, plain=[req.summary]) as out:  # the summary is plain JSON whatever its name
            merged = merge_calls(tables, summaries, virals, out[req.output], out.get(req.viral_out))
            if req.summary:
                out[req.summary].write(summary_json(merged).encode())
    return {"chunks": len(tables), "summary": merged}


def _check_kinds(req: MergeCallsRequest, tables: list, summaries: list, virals: list) -> None:
    """The rules that need the inputs' kinds: a calls TSV at least, one summary and viral-read file
    per TSV when there are any, and each merged output backed by its chunk files."""
    if not tables:
        raise UsageError("CHUNK...: no calls TSV among them")
    if not summaries:  # with summaries, the chunk set check names a repeated chunk by its number
        _each_file_once([cf.path for cf in tables + virals])
    for what, given in (("summary JSONs", summaries), ("viral-read files", virals)):
        if given and len(given) != len(tables):
            raise UsageError(f"CHUNK...: {len(given)} {what} for {len(tables)} calls TSVs: give one per chunk")
    if req.summary and not summaries:
        raise UsageError("--summary: needs the chunks' summary JSONs among the inputs")
    if req.viral_out and not virals:
        raise UsageError("--viral-out: needs the chunks' --viral-out files among the inputs")
    if virals and not req.viral_out:
        names = ", ".join(v.path for v in virals[:3]) + (", ..." if len(virals) > 3 else "")
        raise UsageError(f"CHUNK...: viral-read files given ({names}; an empty file is one, from a chunk that called "
                         "no read viral): name the merged file with --viral-out")


def _each_file_once(paths: list[str]) -> None:
    """Refuse one chunk file given twice, however it is spelt (relative and absolute, a link):
    without summaries nothing else would notice, and its reads would be merged twice."""
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        key = file_id(path)
        if key is None or not os.path.isfile(path):
            continue  # a missing file gets its own error when opened; pipes are each their own stream
        if key in seen:
            same = "" if seen[key] == path else f" (as {seen[key]} and {path})"
            raise UsageError(f"CHUNK...: {path} is given twice{same}: each chunk file once")
        seen[key] = path
