"""The merge-calls job: classify-reads --chunk outputs in, the unchunked run's outputs out (the
per-sample report included, from the typing each chunk summary holds).

The inputs are told apart by content (genointerp.viral.classify.scatter.open_chunk_files); how they are
checked and joined is genointerp.viral.classify.scatter's gather.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs, open_streams
from genointerp.io.paths import file_id
from genointerp.io.calls_table import summary_json
from genointerp.job import one_stdout, stdin_once
from genointerp.options import arg, opt
from genointerp.io.viral_report import report_files, write_sample_report
from genointerp.report import Reporter
from genointerp.viral.report.sample_report import report_from_typing
from genointerp.viral.report.typing_data import merge_typing
from genointerp.viral.classify.request import kraken_report_field, multiqc_field, multiqc_types_field, report_field
from genointerp.viral.classify.scatter import ChunkFile, merge_calls, open_chunk_files


@dataclass
class MergeCallsRequest:
    """merge-calls: the fields are its options (files as paths, `-` for stdout)."""

    chunks: list[str] = arg(
        metavar="CHUNK...",
        help=('Outputs of classify-reads --chunk jobs: calls TSVs, and their summary JSONs and --viral-out files if'
              ' any, told apart by content (gzip ok). List each kind in the same order.'))
    output: str = opt("-", "-o", "--output", help='Merged calls TSV; - is stdout.')
    summary: str | None = opt(None, "--summary", help="Write the merged summary JSON (needs the chunks' summaries).")
    viral_out: str | None = opt(
        None, "--viral-out",
        help="Write the merged reads called viral (needs the chunks' --viral-out files).")
    report: str | None = report_field()  # from the chunk summaries' typings
    kraken_report: str | None = kraken_report_field()
    multiqc: str | None = multiqc_field()  # *_mqc.tsv
    multiqc_types: str | None = multiqc_types_field()  # *_mqc.tsv

    def check(self) -> None:
        one_stdout(("--output", self.output), ("--summary", self.summary), ("--viral-out", self.viral_out),
                   *((option, path) for option, _, path in self.report_files()))
        stdin_once("CHUNK...", self.chunks, "one stream cannot be two chunk files")

    def report_files(self) -> list[tuple[str, str, str]]:
        """(option, format, path) of the per-sample report files asked for."""
        return report_files(self.report, self.kraken_report, self.multiqc, self.multiqc_types)

    def inputs(self) -> list[str]:
        return list(self.chunks)


def run(req: MergeCallsRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Join the chunks into the request's outputs; returns {"chunks": how many calls TSVs, "summary":
    the merged summary or None without the chunks' summaries}."""
    files = req.report_files()
    # refused outputs cost no reading
    paths = outputs.files(req.output, req.summary, req.viral_out, *(path for _, _, path in files))
    with tempfile.TemporaryDirectory(prefix="genointerp-merge-") as scratch:  # copies of piped inputs
        kinds: dict[str, list[ChunkFile]] = {"calls": [], "summary": [], "viral": []}
        for cf in open_chunk_files(req.chunks, scratch):
            kinds[cf.kind].append(cf)
        tables, summaries, virals = kinds["calls"], kinds["summary"], kinds["viral"]
        _check_kinds(req, tables, summaries, virals)
        with open_streams(paths, plain=[req.summary]) as out:  # the summary is plain JSON whatever its name
            merged, loaded = merge_calls(tables, summaries, virals, out[req.output], out.get(req.viral_out))
            if files:
                merged["viral_report"], rows = report_from_typing(merge_typing(_typings(loaded)))
                write_sample_report({fmt: out[path] for _, fmt, path in files}, merged["viral_report"], rows,
                                    merged["reads_total"], merged["reads_called_viral"])
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
    if req.report_files() and not summaries:
        raise UsageError(f"{req.report_files()[0][0]}: the report is built from the typing the chunks' summary JSONs "
                         "hold: give them among the inputs")
    if req.viral_out and not virals:
        raise UsageError("--viral-out: needs the chunks' --viral-out files among the inputs")
    if virals and not req.viral_out:
        names = ", ".join(v.path for v in virals[:3]) + (", ..." if len(virals) > 3 else "")
        raise UsageError(f"CHUNK...: viral-read files given ({names}; an empty file is one, from a chunk that called "
                         "no read viral): name the merged file with --viral-out")


def _typings(loaded: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The typing of each chunk summary (in chunk order); InputError for a summary without one."""
    for path, s in loaded:
        if "typing" not in s:
            why = ("a whole-run summary: give the chunks' summaries" if "chunk" not in s else
                   "a chunk of a model without a viral index, or of an older genointerp")
            raise InputError(f"{path}: holds no typing to build the report from ({why})")
    return [(path, s["typing"]) for path, s in loaded]


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
