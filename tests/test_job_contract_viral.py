"""The job contract (genointerp.job) for the reads and viral commands: simulate-reads, kmerize,
train-xvir, classify-reads, merge-calls, find-integrations and versions. Each case builds a
request that breaks one rule without the CLI and expects the one-line UsageError the command line
gets (exit 2, the same words), and nothing written."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from contract_cases import check_case

from genointerp.integrations.job import run as find_integrations
from genointerp.integrations.request import IntegrationRequest
from genointerp.io.calls_table import HEADER
from genointerp.job import execute
from genointerp.reads.kmerize import KmerizeRequest
from genointerp.reads.kmerize import run as kmerize
from genointerp.reads.simulate import SimulateReadsRequest
from genointerp.reads.simulate import run as simulate_reads
from genointerp.versions import VersionsRequest
from genointerp.versions import run as versions
from genointerp.viral.classify.job import run as classify_reads
from genointerp.viral.classify.request import ClassifyRequest
from genointerp.viral.classify.merge_calls import MergeCallsRequest
from genointerp.viral.classify.merge_calls import run as merge_calls
from genointerp.viral.training.job import TrainXvirRequest
from genointerp.viral.training.job import run as train_xvir

DATA = Path(__file__).resolve().parent.parent / "test-data"
HPV = str(DATA / "hpv4.fa")
FQ = str(DATA / "tumor_small.fq.gz")
HOST = str(DATA / "integrations" / "host.fa")
R1, R2 = str(DATA / "integrations" / "R1.fq.gz"), str(DATA / "integrations" / "R2.fq.gz")


@pytest.fixture(scope="module")
def calls_tsv(tmp_path_factory) -> str:
    """A chunk's calls TSV (one read): an input of merge-calls."""
    path = tmp_path_factory.mktemp("chunks") / "c1.tsv"
    path.write_text(HEADER + "r1\t150\tNA\tnot_viral\tscored\t0\tnone\t0.00\tNA\n")
    return str(path)


# (id, (job, request) for an output path and a calls TSV, the same command line (None: the library
# only, where the CLI's own option types refuse the value first), the message both give)
CASES = [
    ("simulate-reads: --depth without --insert",
     lambda o, c: (simulate_reads, SimulateReadsRequest([("v", HPV)], o, num_reads=5, depth=5.0)),
     ["simulate-reads", "-s", f"v={HPV}", "-n", "5", "--depth", "5"],
     "--insert: --depth and --truth-bedpe belong to insertion mode"),
    ("simulate-reads: --output2 without --paired",
     lambda o, c: (simulate_reads, SimulateReadsRequest([("v", HPV)], o, num_reads=5, output2=o + "2")),
     ["simulate-reads", "-s", f"v={HPV}", "-n", "5", "--output2", "{out}2"], "--output2: --output2 needs --paired"),
    ("simulate-reads: a read length out of range",
     lambda o, c: (simulate_reads, SimulateReadsRequest([("v", HPV)], o, num_reads=5, read_length=5)),
     None, "--read-length: 5 is outside 20..1000"),
    ("kmerize: two label sources",
     lambda o, c: (kmerize, KmerizeRequest([FQ], output=o, label=["a"], label_field=0)),
     ["kmerize", FQ, "--label", "a", "--label-field", "0"], "--label: choose one label source"),
    ("kmerize: k too large for uint16 tokens",
     lambda o, c: (kmerize, KmerizeRequest([FQ], output=o, k=9)),
     ["kmerize", FQ, "-k", "9"], "-k: 9 is outside 1..7"),
    ("train-xvir: a fresh-read option with datasets",
     lambda o, c: (train_xvir, TrainXvirRequest([FQ], o, mix={"viral": 1.0})),
     ["train-xvir", FQ, "--mix", "viral=1"], "--mix: --mix is for training on fresh reads (no DATASET)"),
    ("train-xvir: --negative without --viral",
     lambda o, c: (train_xvir, TrainXvirRequest([FQ], o, negative=[("human", HPV)])),
     ["train-xvir", FQ, "--negative", f"human={HPV}"], "--viral: --negative and --circular describe --viral"),
    ("train-xvir: neither datasets nor references",
     lambda o, c: (train_xvir, TrainXvirRequest([], o)), ["train-xvir"], "DATASET: give kmerize datasets"),
    ("classify-reads: a report of a chunk",
     lambda o, c: (classify_reads, ClassifyRequest([FQ], output=o, chunk="1/2", report=o + ".report")),
     ["classify-reads", FQ, "--chunk", "1/2", "--report", "{out}.report"],
     "--report: the per-sample report needs every read of the sample"),
    ("classify-reads: a chunk past the last",
     lambda o, c: (classify_reads, ClassifyRequest([FQ], output=o, chunk="3/2")),
     ["classify-reads", FQ, "--chunk", "3/2"], "--chunk: '3/2': need 1 <= I <= N"),
    ("classify-reads: stdin twice",
     lambda o, c: (classify_reads, ClassifyRequest(["-", "-"], output=o)),
     ["classify-reads", "-", "-"], "READS...: - (stdin) is given 2 times"),
    ("classify-reads: a threshold above 1",
     lambda o, c: (classify_reads, ClassifyRequest([FQ], output=o, threshold=1.5)),
     ["classify-reads", FQ, "--threshold", "1.5"], "--threshold: 1.5 is outside 0..1"),
    ("merge-calls: two outputs to stdout",
     lambda o, c: (merge_calls, MergeCallsRequest([c], output=o, summary="-", viral_out="-")),
     ["merge-calls", "{calls}", "--summary", "-", "--viral-out", "-"],
     "--viral-out: only one output can be - (stdout)"),
    ("merge-calls: --summary without the chunks' summaries",
     lambda o, c: (merge_calls, MergeCallsRequest([c], output=o, summary=o + ".json")),
     ["merge-calls", "{calls}", "--summary", "{out}.json"], "--summary: needs the chunks' summary JSONs"),
    ("find-integrations: a BAM from stdin",
     lambda o, c: (find_integrations, IntegrationRequest(HOST, bam="-", output=o)),
     ["find-integrations", "-", "-R", HOST], "BAM: the BAM must be an indexed file, not stdin"),
    ("find-integrations: a BAM and FASTQ",
     lambda o, c: (find_integrations, IntegrationRequest(HOST, bam=HOST, reads1=R1, reads2=R2, output=o)),
     ["find-integrations", HOST, "--reads1", R1, "--reads2", R2, "-R", HOST], "BAM: give a host-aligned BAM/CRAM"),
    ("versions: an empty process name",
     lambda o, c: (versions, VersionsRequest(output=o, process="")),
     ["versions", "--process", ""], "--process: the process name cannot be empty"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_request_gets_the_cli_error_without_the_cli(case, cli, tmp_path, calls_tsv):
    message = check_case(case, cli, tmp_path, calls_tsv)
    assert message.startswith(case[3].split(":")[0] + ":")  # the option's name first


def test_classify_reads_runs_as_a_library_call(tmp_path):
    """classify-reads through execute() with the built-in model writes the calls and the summary
    the command writes, and returns that summary; the caller's garbage collector is as it was
    (the job changes its settings while its batches run: steady_collector)."""
    req = ClassifyRequest([FQ], output=str(tmp_path / "calls.tsv"), summary=str(tmp_path / "summary.json"))
    collector = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    summary = execute(classify_reads, req)
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == collector
    rows = (tmp_path / "calls.tsv").read_text().splitlines()
    assert rows[0] + "\n" == HEADER and len(rows) - 1 == summary["reads_total"] > 0
    assert summary["reads_called_viral"] == sum(r.split("\t")[3] == "viral" for r in rows[1:]) > 0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
