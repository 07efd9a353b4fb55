"""Workflow definitions: the Snakemake workflow really run on test-data/, the Nextflow modules
checked statically (no Nextflow here), and both checked against the CLI they call.

Snakemake is not a dependency of genointerp: `make workflow-deps` installs the version pinned in
workflows/snakemake/requirements.txt into .venv-workflow/. The run test finds it there, on PATH,
through $SNAKEMAKE, or importable in this interpreter, and is skipped (saying so) otherwise.
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

@pytest.fixture(scope="module")
def smk_run(tmp_path_factory):
    cmd = snakemake_command()
    if cmd is None:
        pytest.skip("snakemake is not installed (make workflow-deps puts the pinned version in .venv-workflow/)")
    work = tmp_path_factory.mktemp("snakemake")
    # every job and the direct runs they are compared with under hostile arithmetic (tests/hostile.py),
    # so that "gather = one unchunked run" holds by design, not by this CPU's kernels
    # multiqc (workflows/snakemake/requirements.txt) from the workflow venv
    path = os.pathsep.join([str(Path(sys.executable).parent), str(WORKFLOW_VENV), os.environ.get("PATH", "")])
    env = subprocess_env(dict(os.environ, PATH=path))
    res = subprocess.run([*cmd, "-s", str(SMK / "Snakefile"), "--cores", "2", "--directory", str(work),
                          "--config", f"genointerp={GENOINTERP}"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-5000:]
    return work, cmd, env


def test_snakemake_gather_equals_unchunked_run(smk_run):
    work, _, env = smk_run
    chunks = sorted((work / "chunks").glob("calls.*.tsv"))
    assert len(chunks) == 4
    # The same model and input path as the workflow's jobs, so the summaries must agree too.
    direct = subprocess.run([GENOINTERP, "classify-reads", str(ROOT / "test-data" / "tumor_small.fq.gz"),
                             "--model", "models/xvir", "--device", "cpu", "-t", "1",
                             "-o", "direct.tsv", "--summary", "direct.json", "--viral-out", "direct.fq.gz"],
                            cwd=work, capture_output=True, text=True, env=env)
    assert direct.returncode == 0, direct.stderr
    assert (work / "results" / "calls.tsv").read_bytes() == (work / "direct.tsv").read_bytes()
    assert json.loads((work / "results" / "summary.json").read_text()) == json.loads((work / "direct.json").read_text())
    merged_viral = gzip.decompress((work / "results" / "viral.fq.gz").read_bytes())
    assert merged_viral == gzip.decompress((work / "direct.fq.gz").read_bytes())
    rows = (work / "direct.tsv").read_text().splitlines()
    assert len(rows) == 2001 and merged_viral.count(b"\n@") + 1 == sum(r.split("\t")[3] == "viral" for r in rows[1:])


def test_snakemake_predicts_a_bigwig_per_track(smk_run):
    import pyBigWig

    work, _, env = smk_run
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
    direct = subprocess.run([GENOINTERP, "predict-tracks", "--model", "models/tracks", "--fasta", str(data / "ref.fa.gz"),
                             "--regions", str(data / "regions.bed"), "--device", "cpu", "-t", "1", "-o", "direct_tracks"],
                            cwd=work, capture_output=True, text=True, env=env)
    assert direct.returncode == 0, direct.stderr
    for track in tracks:
        for name in (f"{track}.bw", f"{track}.peaks.bed"):
            assert (work / "results" / "tracks" / name).read_bytes() == (work / "direct_tracks" / name).read_bytes(), name


def test_snakemake_logs_and_versions(smk_run):
    work, cmd, env = smk_run
    logs = {p.relative_to(work / "logs").as_posix() for p in (work / "logs").rglob("*.log")}
    assert {"simulate_reads.log", "kmerize.log", "train_xvir.log", "merge_calls.log", "train_tracks.log",
            "predict_tracks.log", *(f"classify_reads/{i}-of-4.log" for i in range(1, 5))} <= logs
    assert "epoch 1" in (work / "logs" / "train_xvir.log").read_text()
    from genointerp import __version__

    versions = load_yaml(work / "results" / "genointerp_mqc_versions.yml")
    assert versions["genointerp"]["genointerp"] == __version__  # MultiQC: group -> software -> version
    # Everything is up to date: a second invocation has nothing to do.
    res = subprocess.run([*cmd, "-s", str(SMK / "Snakefile"), "--cores", "2", "--directory", str(work), "-n",
                          "--config", f"genointerp={GENOINTERP}"], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr, res.stdout + res.stderr


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
                                       "train-tracks", "predict-tracks"}
    for command, rest in calls:
        unknown = options_in(re.sub(r"\{[^}]*\}", "", rest)) - cli_options(command)
        assert not unknown, f"Snakefile: {command} has no {unknown}"
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
    from genointerp.viral.classify import HEADER

    for module in ("classifyreads", "mergecalls"):
        text = (ROOT / "workflows" / "nextflow" / "modules" / "genointerp" / module / "main.nf").read_text()
        stub = text.split("stub:")[1]
        printed = re.search(r"printf '([^']*)'", stub).group(1)
        assert printed.replace("\\\\t", "\t").replace("\\\\n", "\n") == HEADER, module


def test_snakemake_finds_the_integrations_of_the_test_bam(smk_run):
    work, _, _ = smk_run
    lines = (work / "results" / "integrations.tsv").read_text().splitlines()
    summary = json.loads((work / "results" / "integrations.json").read_text())
    assert len(lines) - 1 == summary["junctions"] == 6
    assert sum(not line.startswith("#") for line in (work / "results" / "integrations.vcf").read_text().splitlines()) == 6


def test_nextflow_stub_writes_the_header_find_integrations_writes():
    from genointerp.viral.integrations import TSV_COLUMNS

    text = (NF / "findintegrations" / "main.nf").read_text()
    printed = re.search(r"printf '([^']*)'", text.split("stub:")[1]).group(1)
    assert printed.replace("\\\\t", "\t").replace("\\\\n", "\n") == "\t".join(TSV_COLUMNS) + "\n"


def test_snakemake_multiqc_shows_the_viral_report_of_three_samples(smk_run):
    """Issue 32: MultiQC gathers every sample's kraken-style report and genointerp's custom content
    (viral reads, top type, copies per genome) into its general statistics."""
    work, _, _ = smk_run
    data = json.loads((work / "results" / "multiqc" / "multiqc_data" / "multiqc_data.json").read_text())
    general = data["report_general_stats_data"]
    ours = general["custom_content"] if "custom_content" in general else general["genointerp_viral"]
    assert set(ours) == {"tumor_small", "mix", "negative"}
    assert ours["mix"]["top_type"] == "HPV16" and ours["mix"]["viral_reads"] == 205
    assert ours["negative"]["top_type"] == "none" and ours["negative"]["viral_reads"] == 0
    for sample, row in ours.items():  # the values of the sample's own report
        summary = json.loads((work / "reports" / f"{sample}.summary.json").read_text())
        assert row["viral_reads"] == summary["reads_called_viral"], sample
        top = summary["viral_report"]["top_type"]
        assert row["top_type"] == (top or "none"), sample
    assert set(general["kraken"]) == {"tumor_small", "mix", "negative"}
    stats = (work / "results" / "multiqc" / "multiqc_data" / "multiqc_general_stats.txt").read_text()
    assert "genointerp_viral-top_type" in stats
