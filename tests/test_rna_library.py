"""classify-reads --library rna, through the CLI, on test-data/rna/ (made by
test-data/make_rna_data.py: 40 reads of HPV16's spliced E6*I/E7 transcript, donor nt 226 joined to
acceptor nt 409, and 560 chr20 reads): reads per million beside the reads, copies per genome
empty with the flag rna_library, spliced reads typed; and the same report through chunks and
merge-calls."""

from __future__ import annotations

import json

from conftest import DATA, read_tsv
from genointerp.viral.report.sample_report import summary_line

RNA = DATA / "rna" / "rna.fq.gz"
JUNCTION = 226 - 83 + 1  # the transcript base after E6*I's donor: E6 starts at nt 83


def test_rna_report_gives_reads_per_million_and_no_copies(cli, tmp_path):
    res = cli("classify-reads", RNA, "--library", "rna", "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv",
              "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    calls = read_tsv(tmp_path / "c.tsv")
    viral = [c for c in calls if c["read_id"].startswith("e6i_e7|")]
    assert len(viral) == 40 and all(c["call"] == "viral" and c["reference"] == "HPV16" for c in viral)
    spliced = [c for c in viral if int(c["read_id"].split("|")[3]) < JUNCTION < int(c["read_id"].split("|")[4])]
    assert len(spliced) >= 5  # reads across the splice junction are typed as the others
    assert all(c["call"] == "not_viral" for c in calls if c["read_id"].startswith("human|"))
    rows = read_tsv(tmp_path / "r.tsv")
    assert list(rows[0])[3:5] == ["reads", "reads_per_million"]
    assert [(r["type"], r["reads"], r["reads_per_million"], r["copies_per_genome"], r["flags"], r["status"])
            for r in rows] == [("HPV16", "40.00", f"{40 / 600 * 1e6:.4f}", "NA", "rna_library", "detected")]
    vr = json.loads((tmp_path / "s.json").read_text())["viral_report"]
    assert vr["library"] == "rna" and vr["reads"] == 600 and vr["flags"] == ["rna_library"]
    assert vr["viral_reads_per_million"] == round(40 / 600 * 1e6, 4)
    assert summary_line(vr) in res.stderr and "reads per million" in summary_line(vr)


def test_dna_report_is_unchanged_by_the_option(cli, tmp_path):
    """The default (dna) report has no reads_per_million column, copies per genome and no rna flag."""
    assert cli("-q", "classify-reads", RNA, "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv").exit_code == 0
    rows = read_tsv(tmp_path / "r.tsv")
    assert "reads_per_million" not in rows[0] and rows[0]["copies_per_genome"] != "NA"
    assert "rna_library" not in rows[0]["flags"]


def test_chunks_and_merge_calls_give_the_same_rna_report(cli, tmp_path):
    assert cli("-q", "classify-reads", RNA, "--library", "rna", "-o", tmp_path / "all.tsv", "--report",
               tmp_path / "all.report.tsv").exit_code == 0
    for i in (1, 2):
        assert cli("-q", "classify-reads", RNA, "--library", "rna", "--chunk", f"{i}/2", "-o", tmp_path / f"c{i}.tsv",
                   "--summary", tmp_path / f"c{i}.json").exit_code == 0
    res = cli("-q", "merge-calls", tmp_path / "c1.tsv", tmp_path / "c2.tsv", tmp_path / "c1.json", tmp_path / "c2.json",
              "-o", tmp_path / "m.tsv", "--report", tmp_path / "m.report.tsv")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.report.tsv").read_bytes() == (tmp_path / "all.report.tsv").read_bytes()
    # a chunk run as DNA does not merge with RNA chunks
    assert cli("-q", "classify-reads", RNA, "--chunk", "2/2", "-o", tmp_path / "d2.tsv", "--summary",
               tmp_path / "d2.json").exit_code == 0
    res = cli("merge-calls", tmp_path / "c1.tsv", tmp_path / "d2.tsv", tmp_path / "c1.json", tmp_path / "d2.json",
              "-o", tmp_path / "x.tsv", "--report", tmp_path / "x.report.tsv")
    assert res.exit_code == 1 and "--library" in res.stderr and not (tmp_path / "x.report.tsv").exists()
