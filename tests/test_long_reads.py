"""Long reads end to end, through the CLI: simulate-reads --platform nanopore|hifi, classify-reads'
typing of long reads (one call per read, placed with minimap2's long-read preset) and its summary
line, and find-integrations on a long-read BAM. Fixtures in test-data/long_reads/, made by
test-data/make_long_read_data.py (24 HPV16/HPV18 reads and 12 chr20 reads per platform; four
HPV insertions into 40 kb of chr20 read by 40 nanopore-like reads, aligned with minimap2 -ax map-ont)."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import DATA, assert_one_error_line, read_tsv, run_cli
from genointerp.io.junctions import read_bedpe
from genointerp.viral.panel import name_reference
from genointerp.viral.report.sample_report import summary_line

LONG = DATA / "long_reads"
# the virus inserted in each integration template (make_long_read_data.INSERTIONS)
INSERTED = {"ins1": "HPV16", "ins2": "HPV18", "ins3": "HPV16", "ins4": "HPV18"}


def fastq(path) -> list[tuple[str, str, str]]:
    op = gzip.open if str(path).endswith(".gz") else open
    with op(path, "rt") as fh:
        lines = fh.read().splitlines()
    return [(lines[i][1:], lines[i + 1], lines[i + 3]) for i in range(0, len(lines), 4)]


def test_long_read_profiles_lengths_errors_and_truth(cli, data, tmp_path):
    """--platform nanopore: lengths within the bounds, about 10 % errors with indels (read lengths
    differ from the template's), the truth in the names; hifi about 1 %; the same seed gives the
    same bytes."""
    rates = {}
    for platform in ("nanopore", "hifi"):
        out = tmp_path / f"{platform}.fq"
        args = ["-q", "simulate-reads", "-s", f"hpv={data / 'hpv4.fa'}", "--circular", "hpv", "-n", "40",
                "--platform", platform, "--long-mean", "3000", "--long-min", "1000", "--long-max", "6000",
                "--seed", "3"]
        assert cli(*args, "-o", out, "--truth", tmp_path / f"{platform}.tsv").exit_code == 0
        reads = fastq(out)
        assert len(reads) == 40
        spans = []
        errors = 0
        for name, seq, qual in reads:
            label, _, contig, start, end, strand, nerr = name.split("|")
            assert label == "hpv" and contig in {"HPV16", "HPV18", "HPV6", "HPV142"} and strand in "+-"
            span = int(end) - int(start)
            assert 1000 <= span <= 6000 and len(seq) == len(qual)
            spans.append((span, len(seq)))
            errors += int(nerr)
        assert any(n != s for s, n in spans)  # indels change the read's length
        rates[platform] = errors / sum(s for s, _ in spans)
        truth = read_tsv(tmp_path / f"{platform}.tsv")
        assert [t["read_id"] for t in truth] == [r[0] for r in reads]
        assert cli(*args, "-o", tmp_path / f"{platform}.again.fq").exit_code == 0
        assert (tmp_path / f"{platform}.again.fq").read_bytes() == out.read_bytes()
    assert 0.07 < rates["nanopore"] < 0.13 and 0.003 < rates["hifi"] < 0.02


@pytest.mark.parametrize("args,message", [
    (["--platform", "nanopore", "--paired"], "--platform"),
    (["--long-mean", "5000"], "--long-mean"),
    (["--platform", "hifi", "--long-min", "9000", "--long-max", "3000"], "--platform"),
    (["--platform", "pacbio"], "--platform"),
])
def test_long_read_usage_errors(cli, data, tmp_path, args, message):
    res = cli("simulate-reads", "-s", f"hpv={data / 'hpv4.fa'}", "-n", "5", "-o", tmp_path / "r.fq", *args)
    assert res.exit_code == 2 and message in res.stderr, res.stderr
    assert not (tmp_path / "r.fq").exists()


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory):
    """classify-reads with its report on the nanopore-like and the HiFi-like fixture."""

    out = tmp_path_factory.mktemp("long")
    logs = {}
    for name in ("ont", "hifi"):
        res = run_cli("classify-reads", str(LONG / f"{name}.fq.gz"), "-o", str(out / f"{name}.tsv"),
                      "--report", str(out / f"{name}.report.tsv"), "--summary",
                      str(out / f"{name}.json"))
        assert res.exit_code == 0, res.output
        logs[name] = res.stderr
    return out, logs


@pytest.mark.parametrize("name", ["ont", "hifi"])
def test_long_hpv_reads_are_called_and_typed(long_runs, name):
    """Every HPV read called viral and typed to its genome's type (one call per read, never NA),
    no human read called; the report holds the two types, each detected."""
    out, _ = long_runs
    calls = read_tsv(out / f"{name}.tsv")
    hpv = [c for c in calls if c["read_id"].startswith("hpv|")]
    human = [c for c in calls if c["read_id"].startswith("human|")]
    assert len(hpv) == 24 and len(human) == 12
    assert all(c["call"] == "viral" and c["status"] == "scored" for c in hpv)
    typed = sum(c["reference"] == c["read_id"].split("|")[2] for c in hpv)
    assert typed >= 0.9 * len(hpv)
    assert all(c["call"] == "not_viral" and c["reference"] == "NA" for c in human)
    report = {r["type"]: r for r in read_tsv(out / f"{name}.report.tsv")}
    assert set(report) == {"HPV16", "HPV18"} and all(r["status"] == "detected" for r in report.values())
    assert sum(float(r["reads"]) for r in report.values()) == 24


def test_the_summary_line_agrees_with_the_report(long_runs):
    out, logs = long_runs
    vr = json.loads((out / "ont.json").read_text())["viral_report"]
    line = summary_line(vr)
    assert line in logs["ont"] and "HPV16 (" in line and "HPV18 (" in line
    # reads called viral but short of a detection: the line says what they came to, never "no virus detected"
    few = {**vr, "types": [{**t, "status": "low_evidence"} for t in vr["types"]]}
    line = summary_line(few)
    assert "no virus detected" not in line and "24 reads called viral" in line and "HPV16 (" in line
    nothing = {**vr, "types": [], "viral_reads_placed": 0, "viral_reads_unplaced": 0}
    assert "no virus detected" in summary_line(nothing)


def test_long_reads_across_an_insertion_are_typed_by_their_viral_part(cli, tmp_path):
    """Reads of host + virus + host (the integration templates) called viral are placed, on the
    type inserted, though most of each read is host sequence; reads of host alone are not called."""
    assert cli("-q", "classify-reads", LONG / "integration.fq.gz", "-o", tmp_path / "c.tsv").exit_code == 0
    calls = read_tsv(tmp_path / "c.tsv")
    viral = [c for c in calls if c["call"] == "viral"]
    assert len(viral) >= 20
    assert all(c["reference"] == INSERTED[c["read_id"].split("|")[2]] for c in viral)
    assert all(c["call"] in ("viral", "not_viral") for c in calls)


def test_find_integrations_on_a_long_read_bam(cli, tmp_path):
    """Every junction of the four insertions (8), from the reads' supplementary alignments and the
    insertions minimap2 keeps inside one host alignment: host and viral positions within 10 bp,
    its orientation and type; no other junction."""
    res = cli("-q", "find-integrations", LONG / "integration.bam", "-R", LONG / "host.fa", "-o", tmp_path / "j.tsv")
    assert res.exit_code == 0, res.output
    calls = read_tsv(tmp_path / "j.tsv")
    truth = read_bedpe(str(LONG / "truth.bedpe"))
    assert len(truth) == 8 and len(calls) == 8
    for t in truth:
        hit = [c for c in calls if c["host_strand"] == t.strand1 and abs(int(c["host_pos"]) - 1 - t.start1) <= 10]
        assert len(hit) == 1, (t, calls)
        c = hit[0]
        assert c["orientation"] == t.strand1 + t.strand2 and c["type"] == t.chrom2
        assert name_reference(c["viral_contig"]).type == t.chrom2
        if c["viral_contig"] == t.chrom2:
            assert abs(int(c["viral_pos"]) - 1 - t.start2) <= 10, (t, c)


def test_no_long_read_options_for_short_read_runs(cli, tmp_path):
    res = cli("simulate-reads", "-s", f"hpv={DATA / 'hpv4.fa'}", "-n", "5", "-o", tmp_path / "r.fq", "--accuracy", "0.9")
    assert_one_error_line(res, "--accuracy")


def test_long_read_calls_are_the_same_bytes_for_any_threads(cli, tmp_path):
    """Long reads' evidence and typing are per read: -t 1 and -t 3 write the same calls and report."""
    outs = []
    for t in ("1", "3"):
        assert cli("-q", "classify-reads", LONG / "ont.fq.gz", "-t", t, "-o", tmp_path / f"c{t}.tsv", "--report",
                   tmp_path / f"r{t}.tsv").exit_code == 0
        outs.append(((tmp_path / f"c{t}.tsv").read_bytes(), (tmp_path / f"r{t}.tsv").read_bytes()))
    assert outs[0] == outs[1]
