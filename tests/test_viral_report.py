"""classify-reads' per-sample viral report (issue 32): the reference column, typing by EM,
--report, --sample, --host-genome-size and summary.json's viral_report, on
test-data/viral_report/mix.fq.gz (made by test-data/make_viral_report_data.py: 1,500 human reads
of chr20_slice.fa.gz's 100 kb, 150 HPV16, 15 HPV31 and 40 HBV genotype C reads, 150 bp)."""

from __future__ import annotations

import json

import pytest

from conftest import DATA, read_tsv, run_cli, tsv_dicts

MIX = DATA / "viral_report" / "mix.fq.gz"
SLICE = 100_000  # bp of the human background: the host genome of the copies
TRUTH_READS = {"HPV16": 150, "HPV31": 15, "HBV genotype C": 40}
GENOMES = {"HPV16": 7906, "HPV31": 7912, "HBV genotype C": 3215}


@pytest.fixture(scope="module")
def mix_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mix")
    args = ["classify-reads", str(MIX), "-o", str(out / "calls.tsv"), "--summary", str(out / "s.json"),
            "--report", str(out / "report.tsv"), "--host-genome-size", str(SLICE), "--kraken-report", str(out / "k.txt"),
            "--multiqc", str(out / "mix_mqc.tsv"), "--multiqc-types", str(out / "mix.types_mqc.tsv")]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    return out


def test_reference_column_names_each_viral_read_by_its_type(mix_run):
    rows = read_tsv(mix_run / "calls.tsv")
    assert list(rows[0])[-1] == "reference"  # new columns go last
    names = {"HPV16": "HPV16", "HPV31": "HPV31", "HBV_4": "HBV genotype C"}
    viral = [r for r in rows if r["call"] == "viral"]
    assert all(r["reference"] == "NA" for r in rows if r["call"] != "viral")
    right = sum(names[r["read_id"].split("|")[2]] in r["reference"].split(",") for r in viral)
    assert right == len(viral) >= 200
    # a tie is the tied types joined by ',', sorted
    assert all(r["reference"].split(",") == sorted(r["reference"].split(",")) for r in viral)


def test_report_rows_types_reads_and_copies(mix_run):
    rows = {r["type"]: r for r in read_tsv(mix_run / "report.tsv")}
    assert {t: r["status"] for t, r in rows.items()} == {t: "detected" for t in TRUTH_READS}
    assert {t: r["virus"] for t, r in rows.items()} == {"HPV16": "HPV", "HPV31": "HPV", "HBV genotype C": "HBV"}
    host_depth = 1500 * 150 / SLICE
    for t, n in TRUTH_READS.items():
        r = rows[t]
        assert r["sample"] == "mix"
        assert float(r["reads"]) == pytest.approx(n, abs=0.5)  # every read of the type, shared ties aside
        assert 0 < int(r["unique_reads"]) <= n
        truth_depth = n * 150 / GENOMES[t]
        # depth counts aligned bases: within a few % of the simulated reads' bases
        assert float(r["mean_depth"]) == pytest.approx(truth_depth, rel=0.05)
        assert float(r["copies_per_genome"]) == pytest.approx(truth_depth / host_depth, rel=0.05)
        assert 0 < float(r["genome_fraction"]) <= 1
    assert float(rows["HPV16"]["genome_fraction"]) > 0.8  # 150 reads of 150 bp on 7.9 kb: 2.8x


def test_summary_holds_the_report(mix_run):
    vr = json.loads((mix_run / "s.json").read_text())["viral_report"]
    assert vr["sample"] == "mix" and vr["top_type"] == "HPV16"
    assert vr["host_bases"] == 1500 * 150 and vr["host_genome_size"] == SLICE
    assert "whole-genome sequencing" in vr["assumption"]
    assert vr["detected"] == ["HPV16", "HBV genotype C", "HPV31"]
    tsv = read_tsv(mix_run / "report.tsv")
    assert [t["type"] for t in vr["types"]] == [r["type"] for r in tsv]
    for t, r in zip(vr["types"], tsv):
        assert t["status"] == r["status"] and t["unique_reads"] == int(r["unique_reads"])
        assert t["reads"] == pytest.approx(float(r["reads"]), abs=0.01)


def test_same_inputs_give_byte_identical_report(mix_run, cli, tmp_path):
    res = cli("classify-reads", MIX, "-o", tmp_path / "calls.tsv", "--report", tmp_path / "report.tsv",
              "--host-genome-size", SLICE)
    assert res.exit_code == 0
    assert (tmp_path / "report.tsv").read_bytes() == (mix_run / "report.tsv").read_bytes()
    assert (tmp_path / "calls.tsv").read_bytes() == (mix_run / "calls.tsv").read_bytes()


def test_sample_name_and_default_host_size(mix_run, cli, tmp_path):
    res = cli("-q", "classify-reads", MIX, "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv", "--sample", "T-01")
    assert res.exit_code == 0
    rows, base = read_tsv(tmp_path / "r.tsv"), {r["type"]: r for r in read_tsv(mix_run / "report.tsv")}
    assert {r["sample"] for r in rows} == {"T-01"}
    for r in rows:  # GRCh38's 3.1e9 bp instead of 100 kb: 31,000 times the copies
        assert float(r["copies_per_genome"]) == pytest.approx(float(base[r["type"]]["copies_per_genome"]) * 31_000,
                                                              rel=1e-3)


def test_report_refuses_chunks_and_bad_host_size(cli, tmp_path):
    for option in ("--report", "--kraken-report", "--multiqc", "--multiqc-types"):
        res = cli("classify-reads", MIX, "--chunk", "1/2", "-o", tmp_path / "c.tsv", option, tmp_path / "r_mqc.tsv")
        assert res.exit_code == 2 and option in res.stderr and "merge-calls" in res.stderr
    res = cli("classify-reads", MIX, "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv", "--host-genome-size", "0")
    assert res.exit_code == 2 and "--host-genome-size" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_chunked_calls_keep_the_reference_column(mix_run, cli, tmp_path):
    for i in (1, 2):
        assert cli("classify-reads", MIX, "--chunk", f"{i}/2", "-o", tmp_path / f"c{i}.tsv",
                   "--summary", tmp_path / f"c{i}.json").exit_code == 0
    assert cli("merge-calls", tmp_path / "c1.tsv", tmp_path / "c2.tsv", tmp_path / "c1.json", tmp_path / "c2.json",
               "-o", tmp_path / "m.tsv").exit_code == 0
    assert (tmp_path / "m.tsv").read_bytes() == (mix_run / "calls.tsv").read_bytes()
    assert "viral_report" not in json.loads((tmp_path / "c1.json").read_text())


def test_a_type_whose_reads_all_match_a_detected_type_is_no_second_infection():
    from genointerp.viral.report.sample_report import build_rows
    from genointerp.viral.typing.typer import TypeRow

    major = TypeRow("HPV", "HPV16", 400.0, 380, 7000, 7906, 7.0, "HPV16", 400, {"HPV35": 20})
    shadow = TypeRow("HPV", "HPV35", 20.0, 0, 900, 7879, 0.3, "HPV35", 20, {"HPV16": 20})
    minor = TypeRow("HPV", "HPV31", 20.0, 18, 2500, 7912, 0.3, "HPV31", 20, {"HPV16": 2})
    rows = {r.type: r for r in build_rows("s", [major, shadow, minor], 1.0)}
    assert rows["HPV16"].status == "detected" and rows["HPV31"].status == "detected"
    assert rows["HPV35"].status == "not_detected" and rows["HPV35"].shared_with == "HPV16"


def test_kraken_report_in_kraken2s_format(mix_run):
    import re

    # the line MultiQC's kraken module parses (multiqc/modules/kraken), and kraken2's columns
    pattern = re.compile(r"^\s{0,2}(\d{1,3}\.\d{1,2})\t(\d+)\t(\d+)\t([URDKPCOFGS-]\d{0,2})\t(\d+)(\s+)(.+)")
    lines = (mix_run / "k.txt").read_text().splitlines()
    parsed = [pattern.match(line).groups() for line in lines]
    by_name = {g[6]: (int(g[1]), int(g[2]), g[3], int(g[4]), float(g[0])) for g in parsed}
    assert by_name["unclassified"][:3] == (1500, 1500, "U")
    assert by_name["Viruses"][:2] == (205, 0) and by_name["root"][0] == 205
    assert by_name["Human papillomavirus"] == (165, 0, "S", 10566, pytest.approx(100 * 165 / 1705, abs=0.01))
    assert by_name["HPV16"][:4] == (150, 150, "S1", 333760)  # NCBI's Human papillomavirus type 16
    assert by_name["HPV31"][:3] == (15, 15, "S1")
    # HBV's genotypes have no NCBI taxon of their own: their reads stay at HBV's node, as kraken2
    # leaves a read at the lowest taxon it can name, not on a row repeating HBV's taxid
    assert by_name["Hepatitis B virus"][:4] == (40, 40, "S", 10407) and "HBV genotype C" not in by_name
    assert len({g[4] for g in parsed}) == len(parsed)  # one row per taxon
    indent = {g[6]: len(g[5]) for g in parsed}
    assert indent["Viruses"] < indent["Human papillomavirus"] < indent["HPV16"]


def test_kraken_report_prints_no_empty_taxa(cli, tmp_path):
    """kraken2 leaves taxa without reads out of its report (without --report-zero-counts): a
    sample with no viral read has the unclassified line alone."""
    res = cli("-q", "classify-reads", DATA / "viral_report" / "negative.fq.gz", "-o", tmp_path / "c.tsv",
              "--kraken-report", tmp_path / "n.genointerp.kreport")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "n.genointerp.kreport").read_text() == "100.00\t600\t600\tU\t0\tunclassified\n"


def test_multiqc_custom_content_row(mix_run):
    text = (mix_run / "mix_mqc.tsv").read_text()
    assert "# plot_type: 'generalstats'" in text and "# id: 'genointerp_viral'" in text
    [got] = tsv_dicts(text, comment="#")  # one row: the sample's
    report = {r["type"]: r for r in read_tsv(mix_run / "report.tsv")}
    assert got == {"Sample": "mix", "viral_reads": "205", "top_type": "HPV16",
                   "copies_per_genome": report["HPV16"]["copies_per_genome"], "host_depth": "2.250000"}


def test_multiqc_types_table(mix_run):
    text = (mix_run / "mix.types_mqc.tsv").read_text()
    assert "# plot_type: 'table'" in text and "# parent_id: 'genointerp'" in text
    rows = {r["Row"]: r for r in tsv_dicts(text, comment="#")}
    report = {r["type"]: r for r in read_tsv(mix_run / "report.tsv")}
    assert set(rows) == {f"mix: {t}" for t in report}  # one row per sample and type: unique across a cohort
    for t, r in report.items():
        got = rows[f"mix: {t}"]
        assert (got["sample"], got["type"], got["status"], got["copies_per_genome"], got["flags"]) == \
            ("mix", t, r["status"], r["copies_per_genome"], r["flags"])


def test_multiqc_files_must_be_named_for_multiqc(cli, tmp_path):
    for option in ("--multiqc", "--multiqc-types"):
        res = cli("classify-reads", MIX, "-o", tmp_path / "c.tsv", option, tmp_path / "mix.tsv")
        assert res.exit_code == 2 and "_mqc.tsv" in res.stderr and option in res.stderr
    res = cli("classify-reads", MIX, "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv", "--sample", " ")
    assert res.exit_code == 2 and "--sample" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_simulate_reads_sample_mode_round_trip(cli, tmp_path):
    """simulate-reads --viral-sample: a type mix at a viral load, truth in names and table; classify-reads
    --report finds the types and their copies per genome."""
    args = ["simulate-reads", "-s", f"human={DATA / 'chr20_slice.fa.gz'}", "-s", f"viral={DATA / 'hpv4.fa'}",
            "--circular", "viral", "--viral-sample", "viral=human", "--viral-load", "2", "--type-mix", "HPV16=0.9",
            "--type-mix", "HPV18=0.1", "--count", "human=2000"]
    res = cli(*args, "-o", tmp_path / "s.fq", "--truth", tmp_path / "s.tsv")
    assert res.exit_code == 0, res.output
    truth = read_tsv(tmp_path / "s.tsv")
    labels = {}
    for r in truth:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
        assert r["read_id"].split("|")[0] == r["label"]
    # load * share * genome length * host reads / host size: 2 * 0.9 * 7906 * 2000 / 100,000
    assert labels == {"human": 2000, "viral:HPV16": round(1.8 * 7906 * 0.02), "viral:HPV18": round(0.2 * 7857 * 0.02)}
    assert cli(*args, "-o", tmp_path / "again.fq").exit_code == 0
    assert (tmp_path / "again.fq").read_bytes() == (tmp_path / "s.fq").read_bytes()
    res = cli("-q", "classify-reads", tmp_path / "s.fq", "-o", tmp_path / "c.tsv", "--report", tmp_path / "r.tsv",
              "--host-genome-size", SLICE)
    rows = {r["type"]: r for r in read_tsv(tmp_path / "r.tsv")}
    assert rows["HPV16"]["status"] == "detected" and rows["HPV18"]["status"] == "detected"
    assert float(rows["HPV16"]["copies_per_genome"]) == pytest.approx(1.8, rel=0.2)
    assert float(rows["HPV18"]["copies_per_genome"]) == pytest.approx(0.2, rel=0.2)


def test_simulate_reads_sample_mode_errors(cli, tmp_path):
    base = ["simulate-reads", "-s", f"human={DATA / 'chr20_slice.fa.gz'}", "-s", f"viral={DATA / 'hpv4.fa'}",
            "-o", tmp_path / "s.fq"]
    res = cli(*base, "--viral-sample", "viral=human", "--type-mix", "HPV99=1", "--count", "human=10")
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert res.exit_code == 1 and len(errors) == 1 and "HPV99" in errors[0]
    res = cli(*base, "--type-mix", "HPV16=1", "-n", "10")
    assert res.exit_code == 2 and "--viral-sample" in res.stderr
    res = cli(*base, "--viral-sample", "viral=human", "--count", "human=10", "--count", "viral=5")
    assert res.exit_code == 1 and "--viral-load" in res.stderr
    assert list(tmp_path.iterdir()) == []


def _multiqc() -> str | None:
    """MultiQC as the workflows pin it (.venv-workflow/, make workflow-deps), else on PATH."""
    import shutil
    from pathlib import Path

    pinned = Path(__file__).resolve().parent.parent / ".venv-workflow" / "bin" / "multiqc"
    return str(pinned) if pinned.exists() else shutil.which("multiqc")


def test_a_sample_named_with_a_hash_is_a_row_multiqc_reads(mix_run, cli, tmp_path):
    """--sample '#7': MultiQC takes a line starting with '#' for a header comment (1.35 then fails
    on the file and writes no report for any sample); the cells are quoted, which MultiQC unquotes,
    so the sample keeps its name. The file is checked with MultiQC itself where it is installed."""
    import subprocess

    from genointerp.io.viral_report import write_multiqc_integrations

    res = cli("classify-reads", MIX, "-o", tmp_path / "c.tsv", "--sample", "#7", "--host-genome-size", SLICE,
              "--multiqc", tmp_path / "a_mqc.tsv", "--multiqc-types", tmp_path / "a.types_mqc.tsv")
    assert res.exit_code == 0, res.output
    with open(tmp_path / "a.integrations_mqc.tsv", "wb") as fh:
        write_multiqc_integrations(fh, "#7", [])
    (tmp_path / "b_mqc.tsv").write_text((mix_run / "mix_mqc.tsv").read_text())  # another sample beside it
    headers = {}
    for name in ("a_mqc.tsv", "a.types_mqc.tsv", "a.integrations_mqc.tsv"):
        lines = (tmp_path / name).read_text().splitlines()
        data = [line for line in lines if not line.startswith("#")]
        headers[name] = [line for line in lines if line.startswith("#")]
        assert data[1].split("\t")[0].startswith('"#7'), data
    assert headers["a_mqc.tsv"] == [line for line in (mix_run / "mix_mqc.tsv").read_text().splitlines()
                                    if line.startswith("#")]
    multiqc = _multiqc()
    if multiqc is None:
        pytest.skip("MultiQC not installed (make workflow-deps)")
    (tmp_path / "c.tsv").unlink()
    done = subprocess.run([multiqc, str(tmp_path), "-o", str(tmp_path / "mq"), "-q", "--no-ansi"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    stats = (tmp_path / "mq" / "multiqc_data" / "multiqc_general_stats.txt").read_text().splitlines()
    assert sorted(line.split("\t")[0] for line in stats[1:]) == ["#7", "mix"]
    types = (tmp_path / "mq" / "multiqc_data" / "multiqc_genointerp_viral_types_table.txt").read_text().splitlines()
    assert {line.split("\t")[1] for line in types[1:]} == {"#7"} and types[1].startswith("#7: ")
    junctions = (tmp_path / "mq" / "multiqc_data" / "multiqc_genointerp_integrations_table.txt").read_text()
    assert junctions.splitlines()[1].startswith("#7: none\t#7\t")
