"""Workflow definitions: the Snakemake workflow really run on test-data/ (the cohort of the bundled
sample sheet to one MultiQC report, then the XVir and track demos), the Nextflow modules checked
statically (no Nextflow here), and both checked against the CLI they call.

Snakemake and MultiQC are not dependencies of genointerp: `make workflow-deps` installs the
versions pinned in workflows/snakemake/requirements.txt into .venv-workflow/. The run tests find
Snakemake there, on PATH, through $SNAKEMAKE, or importable in this interpreter, and MultiQC there
or on PATH, and are skipped (saying so) otherwise.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import subprocess_env

from conftest import read_tsv

ROOT = Path(__file__).resolve().parent.parent
SMK = ROOT / "workflows" / "snakemake"
NF = ROOT / "workflows" / "nextflow" / "modules" / "genointerp"
WORKFLOW_VENV = ROOT / ".venv-workflow" / "bin"
GENOINTERP = str(Path(sys.executable).parent / "genointerp")

# Nextflow module folder -> the genointerp command it runs.
MODULES = {
    "classifyreads": "classify-reads",
    "findintegrations": "find-integrations",
    "mergecalls": "merge-calls",
    "trainxvir": "train-xvir",
    "traintracks": "train-tracks",
    "predicttracks": "predict-tracks",
}


def snakemake_command() -> list[str] | None:
    if os.environ.get("SNAKEMAKE"):
        return shlex.split(os.environ["SNAKEMAKE"])
    if (WORKFLOW_VENV / "snakemake").exists():
        return [str(WORKFLOW_VENV / "snakemake")]
    if shutil.which("snakemake"):
        return [shutil.which("snakemake")]
    try:
        import snakemake  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "snakemake"]


def load_yaml(path: Path):
    """PyYAML here if importable, else the workflow venv's (snakemake depends on it)."""
    try:
        import yaml
    except ImportError:
        python = WORKFLOW_VENV / "python"
        if not python.exists():
            pytest.skip("PyYAML not importable and no .venv-workflow (make workflow-deps)")
        out = subprocess.run([str(python), "-c", "import json, sys, yaml; "
                              "print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", str(path)],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    with open(path) as fh:
        return yaml.safe_load(fh)


def cli_options(command: str) -> set[str]:
    """Every option name (long and short) of a genointerp command, from the Click tree."""
    import typer

    from genointerp.cli import app

    group = typer.main.get_command(app)
    cmd = group.commands[command]
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")}


def options_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?=[\s=]|$)", text))


# --- Snakemake: a real run --------------------------------------------------------------------------

SHEET = ROOT / "test-data" / "cohort" / "samples.tsv"
KRAKEN2 = ROOT / "test-data" / "viral_report" / "negative.kraken2.report.txt"  # a real kraken2 report
REPORT_FILES = ("calls.tsv", "summary.json", "viral.fq.gz", "viral_report.tsv", "genointerp.kreport",
                "genointerp_mqc.tsv", "genointerp_types_mqc.tsv")


def multiqc_command() -> str | None:
    """MultiQC pinned in workflows/snakemake/requirements.txt (.venv-workflow/), else on PATH."""
    if (WORKFLOW_VENV / "multiqc").exists():
        return str(WORKFLOW_VENV / "multiqc")
    return shutil.which("multiqc")


def sheet_rows(path: Path = SHEET) -> dict[str, dict[str, str]]:
    """sample -> its non-empty columns, paths resolved against the sheet's folder."""
    lines = [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line and not line.startswith("#")]
    rows = {}
    for fields in lines[1:]:
        row = {k: v for k, v in zip(lines[0], fields) if v}
        for key in ("reads", "host", "genes"):
            if key in row:
                row[key] = os.path.normpath(path.parent / row[key])
        rows[row["sample"]] = row
    return rows


def job_stats(log: str) -> dict[str, int]:
    """Snakemake's "Job stats" table: rule -> jobs (the total left out)."""
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in table.strip().splitlines()[2:]]
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[0] != "total"}


def smk(cmd: list[str], work: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*cmd, "-s", str(SMK / "Snakefile"), "--cores", "2", "--directory", str(work), *args],
                          capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def smk_run(tmp_path_factory):
    """The `viral` target on the bundled sample sheet, two chunks a sample, with MultiQC (pinned)
    given a real kraken2 report of the negative sample too; then `all` (the XVir demo and tracks)."""
    cmd = snakemake_command()
    if cmd is None:
        pytest.skip("snakemake is not installed (make workflow-deps puts the pinned version in .venv-workflow/)")
    multiqc = multiqc_command()
    if multiqc is None:
        pytest.skip("multiqc is not installed (make workflow-deps puts the pinned version in .venv-workflow/)")
    work = tmp_path_factory.mktemp("snakemake")
    # every job and the direct runs they are compared with under hostile arithmetic (tests/hostile.py),
    # so that "gather = one unchunked run" holds by design, not by this CPU's kernels
    path = os.pathsep.join([str(Path(sys.executable).parent), str(WORKFLOW_VENV), os.environ.get("PATH", "")])
    env = subprocess_env(dict(os.environ, PATH=path))
    config = ["--config", f"genointerp={GENOINTERP}", "classify={chunks: 2}", "xvir={chunks: 2}",
              "multiqc=" + json.dumps({"command": multiqc, "extra": [str(KRAKEN2)]})]
    viral = smk(cmd, work, env, "viral", *config)
    assert viral.returncode == 0, viral.stdout[-5000:] + viral.stderr[-5000:]
    after_viral = sorted(p.name for p in work.iterdir() if not p.name.startswith("."))
    rest = smk(cmd, work, env, "all", *config)
    assert rest.returncode == 0, rest.stdout[-5000:] + rest.stderr[-5000:]
    return {"work": work, "cmd": cmd, "env": env, "config": config, "viral_jobs": job_stats(viral.stderr),
            "after_viral": after_viral}


def test_snakemake_viral_classifies_each_sample_once_and_trains_nothing(smk_run):
    samples = sheet_rows()
    assert len(samples) >= 4
    hosts = [s for s, row in samples.items() if "host" in row]
    assert smk_run["viral_jobs"] == {"classify_chunk": 2 * len(samples), "merge_calls_fq": len(samples),
                                     "find_integrations": len(hosts), "software_versions": 1, "multiqc": 1, "viral": 1}
    assert smk_run["after_viral"] == ["logs", "results"]  # no sim/, kmers/, models/; the chunks were temporary
    assert sorted(p.name for p in (smk_run["work"] / "results" / "samples").iterdir()) == sorted(samples)


def test_snakemake_sample_reports_equal_unchunked_runs(smk_run):
    """Each sample's merged outputs (calls, summary, viral reads and the whole report) are those of
    one unchunked classify-reads run with the sheet's options, byte for byte."""
    work, env = smk_run["work"], smk_run["env"]
    for sample, row in sheet_rows().items():
        opts = ["--sample", sample]
        if row.get("unmapped_only") == "yes":
            opts.append("--unmapped-only")
        for key in ("host_bases", "host_genome_size"):
            if key in row:
                opts += [f"--{key.replace('_', '-')}", row[key]]
        out = work / "direct" / sample
        out.mkdir(parents=True)
        outputs = ["-o", "calls.tsv", "--summary", "summary.json", "--viral-out", "viral.fq.gz", "--report",
                   "viral_report.tsv", "--kraken-report", "genointerp.kreport", "--multiqc", "genointerp_mqc.tsv",
                   "--multiqc-types", "genointerp_types_mqc.tsv"]
        direct = subprocess.run([GENOINTERP, "classify-reads", row["reads"], *opts, "--device", "cpu", "-t", "1",
                                 *(str(out / o) if not o.startswith("-") else o for o in outputs)],
                                capture_output=True, text=True, env=env)
        assert direct.returncode == 0, direct.stderr
        for name in REPORT_FILES:
            merged = (work / "results" / "samples" / sample / f"{sample}.{name}").read_bytes()
            mine = (out / name).read_bytes()
            if name.endswith(".gz"):
                merged, mine = gzip.decompress(merged), gzip.decompress(mine)
            assert merged == mine, (sample, name)


def test_snakemake_bam_sample_has_its_planted_load(smk_run):
    """test-data/viral_load/sample.bam: 632 HPV16 reads unmapped beside 2,000 human reads, planted at
    3.997 copies per genome of a 100 kb host; classified with --unmapped-only."""
    (sample,) = [s for s, row in sheet_rows().items() if row["reads"].endswith("viral_load/sample.bam")]
    assert sheet_rows()[sample].get("unmapped_only") == "yes"
    folder = smk_run["work"] / "results" / "samples" / sample
    assert len((folder / f"{sample}.calls.tsv").read_text().splitlines()) == 1 + 632  # the unmapped reads alone
    hpv16 = [r for r in read_tsv(folder / f"{sample}.viral_report.tsv") if r["type"] == "HPV16"]
    assert len(hpv16) == 1 and hpv16[0]["status"] == "detected"
    assert float(hpv16[0]["copies_per_genome"]) == pytest.approx(3.997, rel=0.05)


def test_snakemake_multiqc_shows_every_sample_beside_kraken2(smk_run):
    """One MultiQC report: genointerp's section holds every sample (general statistics, the types
    table, the integrations table), and kraken2's section is the real kraken2 report alone: the
    shipped MultiQC config kept genointerp's kraken-style reports out of it."""
    work = smk_run["work"]
    mqc = work / "results" / "multiqc"
    assert (mqc / "multiqc_report.html").stat().st_size > 0
    data = json.loads((mqc / "multiqc_data" / "multiqc_data.json").read_text())
    samples = sheet_rows()
    general = data["report_general_stats_data"]
    ours = general["custom_content"] if "custom_content" in general else general["genointerp_viral"]
    assert set(ours) == set(samples)
    for sample, row in ours.items():  # the values of the sample's own report
        summary = json.loads((work / "results" / "samples" / sample / f"{sample}.summary.json").read_text())
        assert row["viral_reads"] == summary["reads_called_viral"], sample
        assert row["top_type"] == (summary["viral_report"]["top_type"] or "none"), sample
    assert ours["mix"]["top_type"] == "HPV16" and ours["mix"]["viral_reads"] == 205
    assert ours["negative"]["top_type"] == "none" and ours["negative"]["viral_reads"] == 0

    # the viral types table: every sample's rows, those of its own report
    types = read_tsv(mqc / "multiqc_data" / "multiqc_genointerp_viral_types_table.txt")
    assert {r["sample"] for r in types} == set(samples)
    for sample in samples:
        report = (work / "results" / "samples" / sample / f"{sample}.viral_report.tsv").read_text().splitlines()[1:]
        listed = sorted(line.split("\t")[2] for line in report) or ["none"]
        assert sorted(r["type"] for r in types if r["sample"] == sample) == listed, sample
    assert {r["type"] for r in types if r["sample"] == "mix" and r["status"] == "detected"} >= {"HPV16", "HPV31"}
    # the integrations table: the junctions of the samples with a host
    junctions = read_tsv(mqc / "multiqc_data" / "multiqc_genointerp_integrations_table.txt")
    for sample in (s for s, row in samples.items() if "host" in row):
        tsv = (work / "results" / "samples" / sample / f"{sample}.integrations.tsv").read_text().splitlines()[1:]
        assert sorted(r["host_position"] for r in junctions if r["sample"] == sample) == \
            sorted(f"{line.split(chr(9))[1]}:{line.split(chr(9))[2]}" for line in tsv), sample

    # kraken2's section: the real report of the negative sample, unchanged, nothing of genointerp's
    assert set(general["kraken"]) == {"negative"}
    assert data["report_saved_raw_data"]["multiqc_kraken"] == {"negative": {"U": {"unclassified": 200}, "R": {"root": 400}}}
    assert data["report_data_sources"]["Kraken"]["all_sections"] == {"negative": str(KRAKEN2)}
    stats = (mqc / "multiqc_data" / "multiqc_general_stats.txt").read_text()
    assert "genointerp_viral-top_type" in stats
    from genointerp import __version__

    assert "genointerp" in (mqc / "multiqc_data" / "multiqc_software_versions.txt").read_text()
    assert __version__ in (mqc / "multiqc_data" / "multiqc_software_versions.txt").read_text()


def test_snakemake_finds_the_integrations_of_the_host_bam(smk_run):
    work = smk_run["work"]
    (sample,) = [s for s, row in sheet_rows().items() if "host" in row]
    out = work / "results" / "samples" / sample / sample
    header, *rows = [line.split("\t") for line in Path(f"{out}.integrations.tsv").read_text().splitlines()]
    summary = json.loads(Path(f"{out}.integrations.json").read_text())
    assert len(rows) == summary["junctions"] == 6
    assert {r[header.index("type")] for r in rows} == {"HPV16", "HPV18", "HBV genotype A"}  # HBV: built-in refs
    vcf_ids = [line.split("\t")[2] for line in Path(f"{out}.integrations.vcf").read_text().splitlines() if not line.startswith("#")]
    for row in rows:  # every junction is in the VCF
        assert any(i == row[0] or i.startswith(row[0] + "_") for i in vcf_ids), row[0]
    assert sum(not line.startswith("#") for line in Path(f"{out}.integrations.bedpe").read_text().splitlines()) == 6
    mqc = Path(f"{out}.genointerp_integrations_mqc.tsv").read_text().splitlines()
    assert sum(line.startswith(f"{sample}: ") for line in mqc) == 6


def test_snakemake_xvir_demo_gather_equals_unchunked_run(smk_run):
    work, env = smk_run["work"], smk_run["env"]
    # The same model and input path as the workflow's jobs, so the summaries must agree too.
    direct = subprocess.run([GENOINTERP, "classify-reads", str(ROOT / "test-data" / "tumor_small.fq.gz"),
                             "--model", "models/xvir", "--device", "cpu", "-t", "1",
                             "-o", "direct.tsv", "--summary", "direct.json", "--viral-out", "direct.fq.gz"],
                            cwd=work, capture_output=True, text=True, env=env)
    assert direct.returncode == 0, direct.stderr
    results = work / "results" / "xvir"
    assert (results / "calls.tsv").read_bytes() == (work / "direct.tsv").read_bytes()
    assert json.loads((results / "summary.json").read_text()) == json.loads((work / "direct.json").read_text())
    merged_viral = gzip.decompress((results / "viral.fq.gz").read_bytes())
    assert merged_viral == gzip.decompress((work / "direct.fq.gz").read_bytes())
    rows = (work / "direct.tsv").read_text().splitlines()
    assert len(rows) == 2001 and merged_viral.count(b"\n@") + 1 == sum(r.split("\t")[3] == "viral" for r in rows[1:])


def test_snakemake_predicts_a_bigwig_per_track(smk_run):
    import pyBigWig

    work, env = smk_run["work"], smk_run["env"]
    tracks = [line.split("\t")[0] for line in (ROOT / "test-data" / "tracks" / "targets.tsv").read_text().splitlines()[1:] if line]
    assert tracks
    for track in tracks:
        bw = pyBigWig.open(str(work / "results" / "tracks" / f"{track}.bw"))
        try:
            assert bw.isBigWig() and set(bw.chroms()) == {"chr1", "chr2"}
            assert bw.intervals("chr1", 0, 15000), track
        finally:
            bw.close()
    # the workflow's predictions and peaks are what predict-tracks gives by hand with its model
    data = ROOT / "test-data" / "tracks"
    direct = subprocess.run([GENOINTERP, "predict-tracks", "--model", "models/tracks", "-R", str(data / "ref.fa.gz"),
                             "--regions", str(data / "regions.bed"), "--device", "cpu", "-t", "1", "-o", "direct_tracks"],
                            cwd=work, capture_output=True, text=True, env=env)
    assert direct.returncode == 0, direct.stderr
    for track in tracks:
        for name in (f"{track}.bw", f"{track}.peaks.bed"):
            assert (work / "results" / "tracks" / name).read_bytes() == (work / "direct_tracks" / name).read_bytes(), name


def test_snakemake_logs_and_versions(smk_run):
    work, cmd, env = smk_run["work"], smk_run["cmd"], smk_run["env"]
    logs = {p.relative_to(work / "logs").as_posix() for p in (work / "logs").rglob("*.log")}
    samples = sheet_rows()
    assert {"simulate_reads.log", "kmerize.log", "train_xvir.log", "xvir_merge_calls.log", "train_tracks.log",
            "predict_tracks.log", "multiqc.log", "software_versions.log",
            *(f"xvir_classify_reads/{i}-of-2.log" for i in (1, 2)),
            *(f"classify_reads/{s}.{i}-of-2.log" for s in samples for i in (1, 2)),
            *(f"merge_calls/{s}.log" for s in samples),
            *(f"find_integrations/{s}.log" for s, row in samples.items() if "host" in row)} <= logs
    assert "epoch 1" in (work / "logs" / "train_xvir.log").read_text()
    from genointerp import __version__

    versions = load_yaml(work / "results" / "genointerp_mqc_versions.yml")
    assert versions["genointerp"]["genointerp"] == __version__  # MultiQC: group -> software -> version
    # Everything is up to date: a second invocation has nothing to do (the chunks were temporary).
    res = smk(cmd, work, env, "all", "-n", *smk_run["config"])
    assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr, res.stdout + res.stderr


# --- Snakemake: the sample sheet (dry runs) ---------------------------------------------------------

def dry_run(tmp_path: Path, sheet: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = snakemake_command()
    if cmd is None:
        pytest.skip("snakemake is not installed (make workflow-deps puts the pinned version in .venv-workflow/)")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return smk(cmd, work, dict(os.environ), "viral", "-n", "-p", "--config", f"samples={sheet}", *args)


def test_snakemake_sample_sheet_replaces_the_bundled_one(tmp_path):
    """`--config samples=...` replaces the bundled sheet; paths in a sheet are taken from its folder;
    FASTA reads give FASTA viral reads; no host, no find-integrations."""
    sheets = tmp_path / "sheets"
    (sheets / "reads").mkdir(parents=True)
    for name in ("a_R1.fq.gz", "a_R2.fq.gz", "b.fa.gz"):
        (sheets / "reads" / name).write_bytes(b"")
    sheet = sheets / "cohort.tsv"
    sheet.write_text("# my cohort\nsample\treads\thost_genome_size\n"
                     "a\treads/a_R1.fq.gz,reads/a_R2.fq.gz\t\nb\treads/b.fa.gz\t100000\n")
    res = dry_run(tmp_path, sheet, "classify={chunks: 3}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = re.sub(r" +", " ", res.stdout + res.stderr)
    assert job_stats(res.stderr + res.stdout) == {"classify_chunk": 6, "merge_calls_fq": 1, "merge_calls_fa": 1, "software_versions": 1,
                              "multiqc": 1, "viral": 1}
    assert f"classify-reads {sheets}/reads/a_R1.fq.gz {sheets}/reads/a_R2.fq.gz --sample a --chunk 1/3" in out
    assert "--sample b --host-genome-size 100000 --chunk 3/3" in out
    assert "results/samples/b/b.viral.fa.gz" in out and "results/samples/a/a.viral.fq.gz" in out
    assert "results/samples/mix" not in out  # the bundled sheet's samples are gone


@pytest.mark.parametrize("row, message", [
    ("x\tnone.fq.gz\tyes\n", "sample x: unmapped_only is for a BAM/CRAM"),
    ("x y\tr.fq.gz\t\n", "sample name 'x y'"),
    ("x\tr.fq.gz\tmaybe\n", "unmapped_only 'maybe': yes or no"),
])
def test_snakemake_sample_sheet_errors_name_the_line(tmp_path, row, message):
    sheet = tmp_path / "s.tsv"
    sheet.write_text("sample\treads\tunmapped_only\n" + row)
    res = dry_run(tmp_path, sheet)
    assert res.returncode != 0 and f"{sheet}: line 2: {message}" in res.stdout + res.stderr, res.stdout + res.stderr


def test_snakemake_sample_sheet_refuses_unknown_columns_and_a_host_without_a_bam(tmp_path):
    sheet = tmp_path / "s.tsv"
    sheet.write_text("sample\treads\tunmaped_only\nx\tr.fq.gz\tyes\n")
    res = dry_run(tmp_path, sheet)
    assert res.returncode != 0 and "unmaped_only" in res.stdout + res.stderr
    sheet.write_text(f"sample\treads\thost\nx\tr.fq.gz\t{ROOT / 'test-data' / 'integrations' / 'host.fa'}\n")
    res = dry_run(tmp_path, sheet)
    assert res.returncode != 0 and "host is for find-integrations on a host-aligned BAM/CRAM" in res.stdout + res.stderr


def test_snakemake_multiqc_runs_in_an_environment_of_its_own():
    """The multiqc rule: its own conda env and container (the official MultiQC image), all pinned to
    the version the tests run (workflows/snakemake/requirements.txt), and the shipped MultiQC config."""
    pinned = re.search(r"^multiqc==(\S+)$", (SMK / "requirements.txt").read_text(), re.M).group(1)
    env = load_yaml(SMK / "envs" / "multiqc.yaml")
    assert f"multiqc={pinned}" in env["dependencies"]
    assert load_yaml(SMK / "config.yaml")["multiqc"]["container"] == f"docker://multiqc/multiqc:v{pinned}"
    text = (SMK / "Snakefile").read_text()
    rule = text.split("\nrule multiqc:\n", 1)[1].split("\n\n\n", 1)[0]
    assert re.search(r'conda:\n\s+"envs/multiqc.yaml"', rule)
    assert re.search(r'container:\n\s+image\(MQC\["container"\]\)', rule)
    assert "--config {input.config:q}" in rule
    assert 'MULTIQC_CONFIG = str(REPO / "genointerp" / "resources" / "multiqc_config.yaml")' in text
    assert (ROOT / "genointerp" / "resources" / "multiqc_config.yaml").is_file()


# --- static checks: the workflows call the CLI that exists ------------------------------------------

def snakefile_commands() -> list[tuple[str, str]]:
    """(command, rest of the shell line) for every genointerp call in the Snakefile."""
    text = (SMK / "Snakefile").read_text()
    calls = []
    for block in re.findall(r"shell:\n((?:\s+\".*\"\n)+)", text):
        line = "".join(re.findall(r"\"(.*)\"", block))
        for m in re.finditer(r"\{params\.gi\} ([a-z][a-z-]*)(.*?)(?:2>|$)", line):
            calls.append((m.group(1), m.group(2)))
    return calls


def test_snakefile_uses_existing_options():
    calls = snakefile_commands()
    assert {c for c, _ in calls} >= {"simulate-reads", "kmerize", "train-xvir", "classify-reads", "merge-calls",
                                       "find-integrations", "train-tracks", "predict-tracks", "versions"}
    for command, rest in calls:
        unknown = options_in(re.sub(r"\{[^}]*\}", "", rest)) - cli_options(command)
        assert not unknown, f"Snakefile: {command} has no {unknown}"
    # the classify-reads options a sample sheet's columns give (`options()` in the Snakefile)
    sheet_options = (SMK / "Snakefile").read_text().split("\ndef options(", 1)[1].split("\ndef ", 1)[0]
    given = set(re.findall(r'"(--[a-z][a-z-]*)"', sheet_options))
    assert given == {"--sample", "--unmapped-only", "--host-bases", "--host-genome-size", "--reference"}
    assert given <= cli_options("classify-reads")
    # Snakemake's threads/resources reach the command: every multi-threaded command gets -t {threads}.
    for command, rest in calls:
        if "-t" in cli_options(command):
            assert "-t {threads}" in rest, command
        if "--device" in cli_options(command):
            assert "--device {params.device}" in rest, command


def nf_sections(text: str) -> dict[str, str]:
    """The body of each `name:` section of a process (input, output, when, script, stub)."""
    names = ["input", "output", "when", "script", "stub"]
    marks = [(m.start(), m.group(1)) for m in re.finditer(r"^\s{4}(input|output|when|script|stub):\s*$", text, re.M)]
    out = {}
    for (start, name), nxt in zip(marks, [*[s for s, _ in marks[1:]], len(text)]):
        out[name] = text[start:nxt].split(":", 1)[1]
    assert list(out) == [n for n in names if n in out], f"sections out of order: {list(out)}"
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_nextflow_module(module):
    main = (NF / module / "main.nf").read_text()
    meta = load_yaml(NF / module / "meta.yml")
    command = MODULES[module]
    process = f"GENOINTERP_{module.upper()}"
    assert re.search(rf"^process {process} \{{", main, re.M), process
    assert re.search(r'^\s{4}tag "\$\{?meta\.id\}?"', main, re.M)
    assert re.search(r"^\s{4}label 'process_(single|low|medium|high|gpu)'", main, re.M)
    config = load_yaml(SMK / "config.yaml")
    container = re.search(r"^\s{4}container ['\"]([^'\"]+)['\"]", main, re.M)
    assert container and container.group(1) == config["container"], "same image as the Snakemake workflow"
    sections = nf_sections(main)
    assert set(sections) == {"input", "output", "when", "script", "stub"}
    assert "task.ext.when == null || task.ext.when" in sections["when"]

    # meta.yml: the nf-core layout, naming the same channels and elements as main.nf.
    assert meta["name"] == f"genointerp_{module}"
    assert len(meta["keywords"]) >= 3 and meta["tools"][0]["genointerp"]["licence"] == ["MIT"]
    emits = re.findall(r"emit:\s*(\w+)", sections["output"])
    assert [next(iter(o)) for o in meta["output"]] == emits
    assert "versions" in emits and 'path "versions.yml"' in sections["output"]
    nf_inputs = [re.findall(r"(?:val|path)\((\w+)", line) for line in sections["input"].splitlines()
                 if re.search(r"(?:val|path)\(", line)]
    yml_inputs = [[next(iter(e)) for e in (ch if isinstance(ch, list) else [ch])] for ch in meta["input"]]
    assert yml_inputs == nf_inputs
    for channel in meta["output"]:
        for element in next(iter(channel.values())):
            (name, spec), = element.items()
            assert spec["type"] in {"map", "file", "directory"} and spec["description"], (module, name)

    # The script runs the CLI that exists, with threads, device and versions wired the same way.
    script = sections["script"]
    assert re.search(rf"genointerp \\\\?\s*{re.escape(command)}|genointerp {re.escape(command)}", script), command
    opts = cli_options(command)
    unknown = options_in(re.sub(r"\$\{[^}]*\}|\$\w+(\.\w+)*", "", script.split("cat <<-END_VERSIONS")[0])) - opts
    assert not unknown, f"{module}: {command} has no {unknown}"
    if "-t" in opts:
        assert "--threads $task.cpus" in script
    if "--device" in opts:
        assert "task.accelerator" in script
    for block in ("script", "stub"):
        body = sections[block]
        assert "cat <<-END_VERSIONS > versions.yml" in body and '"${task.process}":' in body
        assert "genointerp: \\$(genointerp --version | sed 's/^genointerp //')" in body, block


def test_nextflow_stubs_write_the_calls_header_classify_reads_writes():
    """`nextflow -stub` runs stand in for classify-reads and merge-calls: their empty TSV must have
    the real header, or a pipeline tested with stubs breaks on real outputs."""
    from genointerp.viral.classify.job import HEADER

    for module in ("classifyreads", "mergecalls"):
        text = (ROOT / "workflows" / "nextflow" / "modules" / "genointerp" / module / "main.nf").read_text()
        stub = text.split("stub:")[1]
        printed = re.search(r"printf '([^']*)'", stub).group(1)
        assert printed.replace("\\\\t", "\t").replace("\\\\n", "\n") == HEADER, module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_nextflow_stubs_write_every_output(module):
    """`nextflow -stub` gives every output channel a file (the optional report channels of an
    unchunked classify-reads and of merge-calls too), and the report TSV has the real header."""
    import fnmatch

    from genointerp.io.viral_report import REPORT_HEADER

    sections = nf_sections((NF / module / "main.nf").read_text())
    stub = sections["stub"].replace("${prefix}", "sample")
    written = set(re.findall(r"(?:>|touch|mkdir)((?:[ \t]+[\w./-]+)+)", stub))
    written = {name for group in written for name in group.split()}
    for glob in re.findall(r'path\("([^"]+)"', sections["output"]):
        assert any(fnmatch.fnmatch(name, glob) for name in written), (module, glob, written)
    report = re.search(r"printf '([^']*)' > sample\.viral_report\.tsv", stub)
    if "viral_report.tsv" in sections["output"]:
        assert report and report.group(1).replace("\\\\t", "\t").replace("\\\\n", "\n") == REPORT_HEADER, module


def test_nextflow_stub_writes_the_header_find_integrations_writes():
    from genointerp.integrations.job import TSV_COLUMNS

    text = (NF / "findintegrations" / "main.nf").read_text()
    printed = re.search(r"printf '([^']*)'", text.split("stub:")[1]).group(1)
    assert printed.replace("\\\\t", "\t").replace("\\\\n", "\n") == "\t".join(TSV_COLUMNS) + "\n"
