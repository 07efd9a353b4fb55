"""A sample's viral load from any input, and the per-sample report from scattered chunks.

test-data/viral_load/ (made by test-data/make_viral_load_data.py): 2,000 human reads of
chr20_slice.fa.gz's 100 kb (host depth 3x) and 632 HPV16 reads (viral depth 632 * 150 / 7906 =
11.99x), 150 bp, planted at 3.997 copies per host genome; as FASTQ, and aligned to the slice as a
sorted, indexed BAM in which the human reads map and the HPV16 reads stay unmapped.
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import DATA, read_tsv

LOAD = DATA / "viral_load"
SLICE = 100_000  # the host genome of the copies
PLANTED = (632 * 150 / 7906) / (2000 * 150 / SLICE)  # 3.997 copies per genome


def report_rows(path) -> dict[str, dict]:
    return {r["type"]: r for r in read_tsv(path)}


def classify(cli, out, *args):
    res = cli("-q", "classify-reads", *args, "-o", out.with_suffix(".tsv"), "--report", out.with_suffix(".report.tsv"),
              "--summary", out.with_suffix(".json"), "--host-genome-size", SLICE)
    assert res.exit_code == 0, res.output
    return report_rows(out.with_suffix(".report.tsv")), json.loads(out.with_suffix(".json").read_text())["viral_report"]


def test_fastq_bam_and_unmapped_reads_give_the_same_load(cli, tmp_path):
    """The done-when of load from any input: FASTQ, BAM, BAM --unmapped-only; same top type and
    copies within 5 % (here exactly: the BAM index counts every mapped read)."""
    fq, fq_vr = classify(cli, tmp_path / "fq", LOAD / "sample.fq.gz")
    bam, bam_vr = classify(cli, tmp_path / "bam", LOAD / "sample.bam")
    unmapped, unmapped_vr = classify(cli, tmp_path / "unmapped", LOAD / "sample.bam", "--unmapped-only")
    for rows, vr in ((fq, fq_vr), (bam, bam_vr), (unmapped, unmapped_vr)):
        assert vr["top_type"] == "HPV16" and vr["host_bases"] == 2000 * 150 and vr["flags"] == []
        assert float(rows["HPV16"]["copies_per_genome"]) == pytest.approx(PLANTED, rel=0.05)
        assert float(rows["HPV16"]["host_depth"]) == 3.0 and rows["HPV16"]["flags"] == "."
    assert fq_vr["host_bases_from"]["mapped_reads"] == 0
    # --unmapped-only classified the 632 viral reads alone: the host's bases came from the index
    assert unmapped_vr["host_bases_from"] == {"given": None, "reads_not_called_viral": 0, "mapped_reads": 300_000,
                                              "mapped_records": 2000, "mapped_records_read": 2000}


def test_unmapped_only_without_counts_is_refused_unless_host_bases_given(cli, tmp_path):
    shutil.copy(LOAD / "sample.bam", tmp_path / "noindex.bam")
    res = cli("classify-reads", tmp_path / "noindex.bam", "--unmapped-only", "-o", tmp_path / "c.tsv",
              "--report", tmp_path / "r.tsv")
    errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error")]
    assert res.exit_code == 1 and len(errors) == 1 and "samtools index" in errors[0] and "--host-bases" in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noindex.bam"]
    rows, vr = classify(cli, tmp_path / "given", tmp_path / "noindex.bam", "--unmapped-only", "--host-bases", 300_000)
    assert vr["host_bases"] == 300_000 and vr["host_bases_from"]["given"] == 300_000
    assert float(rows["HPV16"]["copies_per_genome"]) == pytest.approx(PLANTED, rel=1e-3)
    # without a report nothing needs the host's bases: the calls alone run
    assert cli("-q", "classify-reads", tmp_path / "noindex.bam", "--unmapped-only",
               "-o", tmp_path / "calls.tsv").exit_code == 0


def test_a_shallow_host_flags_the_load(cli, tmp_path):
    """At GRCh38's size the 300 kb of host bases are 1e-4x: the copies are printed and flagged."""
    res = cli("-q", "classify-reads", LOAD / "sample.fq.gz", "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv",
              "--summary", tmp_path / "s.json")
    assert res.exit_code == 0
    row = report_rows(tmp_path / "r.tsv")["HPV16"]
    assert row["flags"] == "low_host_depth" and row["status"] == "detected"
    assert float(row["copies_per_genome"]) == pytest.approx(PLANTED * 3.1e9 / SLICE, rel=1e-3)
    assert json.loads((tmp_path / "s.json").read_text())["viral_report"]["flags"] == ["low_host_depth"]


def test_mapped_host_bases_estimated_from_a_sample_of_records(monkeypatch):
    """Past SAMPLE mapped records the bases are records x bases per record read; exact below."""
    from genointerp.viral.report import host_depth

    exact = host_depth.mapped_host_bases(str(LOAD / "sample.bam"))
    assert (exact.bases, exact.records, exact.sampled, exact.exact) == (300_000, 2000, 2000, True)
    monkeypatch.setattr(host_depth, "SAMPLE", 500)
    estimate = host_depth.mapped_host_bases(str(LOAD / "sample.bam"))
    assert (estimate.bases, estimate.sampled, estimate.exact) == (300_000, 500, False)  # reads of one length
    fastq = host_depth.mapped_host_bases(str(LOAD / "sample.fq.gz"))
    assert (fastq.bases, fastq.records) == (0, 0)


def test_merge_calls_builds_the_whole_runs_report(cli, hostile, tmp_path):
    """merge-calls' report, kraken-style report, MultiQC files and summary equal one unchunked
    run's byte for byte (chunks given out of order; the model moved by the hostile arithmetic)."""
    reports = {"--report": "r.tsv", "--kraken-report": "s.genointerp.kreport", "--multiqc": "s_mqc.tsv",
               "--multiqc-types": "s.types_mqc.tsv"}
    common = ["--unmapped-only", "--host-genome-size", SLICE, "--sample", "T1"]
    whole = tmp_path / "whole"
    whole.mkdir()
    args = [a for option, name in reports.items() for a in (option, whole / name)]
    assert cli("-q", "classify-reads", LOAD / "sample.bam", *common, "-o", whole / "calls.tsv",
               "--summary", whole / "s.json", *args).exit_code == 0
    for i in (1, 2, 3):
        res = cli("-q", "classify-reads", LOAD / "sample.bam", *common, "--chunk", f"{i}/3", "-o", tmp_path / f"c{i}.tsv",
                  "--summary", tmp_path / f"c{i}.json")
        assert res.exit_code == 0, res.output
    merged = tmp_path / "merged"
    merged.mkdir()
    args = [a for option, name in reports.items() for a in (option, merged / name)]
    res = cli("-q", "merge-calls", *(tmp_path / f"c{i}.tsv" for i in (3, 1, 2)), *(tmp_path / f"c{i}.json" for i in (3, 1, 2)),
              "-o", merged / "calls.tsv", "--summary", merged / "s.json", *args)
    assert res.exit_code == 0, res.output
    for name in ("calls.tsv", "s.json", *reports.values()):
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    assert "typing" not in json.loads((merged / "s.json").read_text())
    assert float(report_rows(whole / "r.tsv")["HPV16"]["copies_per_genome"]) == pytest.approx(PLANTED, rel=0.05)


def test_merge_calls_report_needs_matching_typings(cli, tmp_path):
    for i, sample in ((1, "A"), (2, "B")):
        assert cli("-q", "classify-reads", LOAD / "sample.fq.gz", "--chunk", f"{i}/2", "--sample", sample,
                   "-o", tmp_path / f"c{i}.tsv", "--summary", tmp_path / f"c{i}.json").exit_code == 0
    chunks = [tmp_path / "c1.tsv", tmp_path / "c2.tsv", tmp_path / "c1.json", tmp_path / "c2.json"]
    res = cli("merge-calls", *chunks, "-o", tmp_path / "m.tsv", "--report", tmp_path / "r.tsv")
    assert res.exit_code == 1 and "--sample" in res.stderr and "c2.json" in res.stderr
    # a report needs the summaries; and the same merge without one is fine
    res = cli("merge-calls", *chunks[:2], "-o", tmp_path / "m.tsv", "--report", tmp_path / "r.tsv")
    assert res.exit_code == 2 and "summary" in res.stderr
    assert not (tmp_path / "r.tsv").exists() and not (tmp_path / "m.tsv").exists()
    assert cli("-q", "merge-calls", *chunks, "-o", tmp_path / "m.tsv").exit_code == 0
