import os
import subprocess
import sys
from pathlib import Path

from genointerp import __version__


def test_version_is_one_line_and_imports_no_heavy_library():
    probe = (
        "import sys\n"
        "from genointerp.cli import app\n"
        "try:\n    app(['--version'], prog_name='genointerp')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'numpy', 'pysam', 'sklearn', 'matplotlib') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == f"genointerp {__version__}"
    assert lines[1] == "HEAVY []"


def test_help_lists_commands_in_their_panel(cli):
    res = cli("--help")
    assert res.exit_code == 0
    assert "Reads" in res.output
    assert "simulate-reads" in res.output and "kmerize" in res.output


def test_help_does_not_import_torch():
    probe = (
        "import sys\nfrom genointerp.cli import app\n"
        "for args in (['--help'], ['simulate-reads', '--help'], ['kmerize', '--help']):\n"
        "    try:\n        app(args, prog_name='genointerp')\n    except SystemExit:\n        pass\n"
        "print('TORCH', 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("TORCH False")


def test_console_script_runs():
    script = Path(sys.executable).with_name("genointerp")  # installed beside the interpreter
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout == f"genointerp {__version__}\n"


def test_the_collector_is_off_for_the_imports_and_on_for_the_job_and_after():
    # genointerp.cli.main keeps the cyclic collector off while the modules are imported; the job
    # runs with it on, and a command that runs none (--help) leaves it on
    probe = (
        "import gc, sys\nimport genointerp.job as job\n"
        "seen = []\nrun = job.execute\n"
        "def execute(*a, **k):\n    seen.append(gc.isenabled())\n    return run(*a, **k)\n"
        "job.execute = execute\n"
        "import genointerp.cli as cli\nbuild = cli._build_app\n"
        "def build_app():\n    seen.append(gc.isenabled())\n    return build()\n"
        "cli._build_app = build_app\n"
        "for argv in (['versions'], ['--help'], ['versions', '--no-such-option']):\n"
        "    sys.argv = ['genointerp', *argv]\n"
        "    try:\n        cli.main()\n    except SystemExit:\n        pass\n"
        "    seen.append(gc.isenabled())\n"
        "print('SEEN', seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "SEEN [False, True, True, False, True, False, True]"


def test_the_program_hands_typer_only_the_command_it_names():
    from genointerp.cli import _named_command
    from genointerp.cli.app import app

    def named(*argv):
        command = _named_command(app, list(argv))
        return command.name if command is not None else None

    assert named("classify-reads", "reads.fq") == "classify-reads"
    assert named("-q", "--debug", "kmerize", "--help") == "kmerize"
    # the application's own help and version, and names Typer refuses, keep every command
    assert named() is None and named("--help", "kmerize") is None and named("--version") is None
    assert named("kmerise") is None and named("-q") is None


def test_a_command_prints_the_same_alone_as_among_all_of_them():
    """What `genointerp CMD --help` prints and how an unknown command fails are the same through
    the program (which hands Typer the named command alone) as through the whole application."""
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb"}
    whole = ("import sys\nfrom genointerp.cli import app\n"
             "try:\n    app(sys.argv[1:], prog_name='genointerp')\nexcept SystemExit as e:\n    sys.exit(e.code)\n")
    for args in (["-q", "kmerize", "--help"], ["kmerise", "x"], ["--help"]):
        program = subprocess.run([sys.executable, "-m", "genointerp", *args], capture_output=True, text=True, env=env)
        app = subprocess.run([sys.executable, "-c", whole, *args], capture_output=True, text=True, env=env)
        assert (program.returncode, program.stdout, program.stderr) == (app.returncode, app.stdout, app.stderr)
    assert program.returncode == 0 and "kmerize" in program.stdout and "classify-reads" in program.stdout


def test_versions_yml_for_multiqc(cli, tmp_path):
    import yaml

    from genointerp import __version__

    out = tmp_path / "genointerp_mqc_versions.yml"
    res = cli("versions", "--process", "CLASSIFY_READS", "-o", out)
    assert res.exit_code == 0, res.output
    parsed = yaml.safe_load(out.read_text())
    assert list(parsed) == ["CLASSIFY_READS"]
    tools = parsed["CLASSIFY_READS"]
    assert tools["genointerp"] == __version__ and tools["torch"].startswith("2.")
    assert all(isinstance(v, str) for v in tools.values())  # "2.10" must not turn into 2.1
    res = cli("versions", "-o", out)
    assert res.exit_code == 1 and "output exists" in res.stderr


def test_debug_shows_the_traceback_of_a_data_error(tmp_path):
    # a real process: the traceback is what Python prints for the exception --debug lets through
    bad = tmp_path / "bad.fq"
    bad.write_text("@r1\nAC-T\n+\nIIII\n")
    message = "record 1 (r1): position 3: '-' is not a nucleotide letter"
    base = [sys.executable, "-m", "genointerp", "kmerize", str(bad), "-k", "2", "--length", "4"]
    plain = subprocess.run([*base, "-o", str(tmp_path / "a")], capture_output=True, text=True)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    lines = plain.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("genointerp: error: ") and lines[0].endswith(message)
    debug = subprocess.run([sys.executable, "-m", "genointerp", "--debug", *base[3:], "-o", str(tmp_path / "b")],
                           capture_output=True, text=True)
    assert debug.returncode == 1
    assert debug.stderr.startswith("Traceback (most recent call last):") and message in debug.stderr.splitlines()[-1]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_help_texts_carry_no_unescaped_rich_markup():
    """Help is rendered as rich markup, where "[default: 200 ...]" is a tag and vanishes from --help:
    a bracket that should show must be written "\\[" in the help string."""
    import re

    import typer.main

    from genointerp.cli import app

    tag = re.compile(r"(?<!\\)\[[a-z@#/][^\]]*\]")
    group = typer.main.get_command(app)
    bad = [f"{name} {param.name}: {tag.search(param.help).group()}"
           for name, command in group.commands.items() for param in command.params
           if getattr(param, "help", None) and tag.search(param.help)]
    assert not bad, bad


def test_classify_reads_imports_torch_only_when_a_read_needs_the_model(tmp_path):
    """The built-in model's evidence decides a read with no viral match (bits 0, far below the
    band the model can move): no process of the run imports torch. --model-all needs the model:
    its process starts, and runs the folded tables the install stored without importing torch
    either (genointerp.viral.classify.model_process); the job's own imports it in no case."""
    fq = tmp_path / "one.fq"
    fq.write_text("@one\n" + "ACGTTGCAAC" * 15 + "\n+\n" + "I" * 150 + "\n")
    probe = (
        "import sys\nfrom genointerp.cli import app\n"
        "import genointerp.viral.classify.model_process as mp\n"
        "started = []\n"
        "real = mp.ModelProcess.start\n"
        "mp.ModelProcess.start = lambda self: (started.append(1), real(self))\n"
        f"try:\n    app(sys.argv[1:], prog_name='genointerp')\nexcept SystemExit:\n    pass\n"
        "print('TORCH', 'torch' in sys.modules, 'MODEL', bool(started))\n"
    )
    # Python reports every module each process imports (the spawned model process inherits this)
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}

    def run(*extra: str) -> tuple[str, bool]:
        res = subprocess.run([sys.executable, "-c", probe, "-q", "classify-reads", str(fq), "-o",
                              str(tmp_path / f"c{len(extra)}.tsv"), *extra], capture_output=True, text=True, check=True, env=env)
        imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
        assert "genointerp.cli" in imported  # the report is there to read
        return res.stdout.strip(), "torch" in imported

    assert run() == ("TORCH False MODEL False", False)  # --device auto too: a GPU is not worth its start here
    assert run("--device", "cpu") == ("TORCH False MODEL False", False)  # as pipelines spell it out
    assert run("--model-all", "--device", "cpu") == ("TORCH False MODEL True", False)
    assert (tmp_path / "c3.tsv").read_text().splitlines()[1].split("\t")[2] != "NA"  # the model scored it


def test_the_first_windows_the_model_scores_run_in_the_jobs_own_process(tmp_path, data):
    """At the default the evidence decides nearly every read; the few windows the model must score
    are scored in the job's process (model_process.HERE_WINDOWS), so the model's own process never
    starts and torch is never imported, with the bytes that process gives. Past HERE_WINDOWS it
    takes over, the same bytes again. --min-bits 6 puts test-data's human reads in the band the
    model can move (1,960 of 2,000); batches of 32 reads, so the hand-over falls mid-input."""
    from conftest import read_fastq
    from hostile import subprocess_env

    reads = data / "tumor_small.fq.gz"
    few = tmp_path / "few.fq"
    few.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in read_fastq(reads)[:40]))
    probe = (
        "import sys\nfrom genointerp.cli import app\n"
        "import genointerp.viral.classify.job as job\n"
        "import genointerp.viral.classify.model_process as mp\n"
        "job.BATCH = 32\n"
        "mp.ModelProcess.HERE = False if sys.argv.pop(1) == 'spawned' else None\n"
        "started = []\n"
        "real = mp.ModelProcess.start\n"
        "mp.ModelProcess.start = lambda self: (started.append(1), real(self))\n"
        "try:\n    app(sys.argv[1:], prog_name='genointerp')\nexcept SystemExit:\n    pass\n"
        "import numpy as np\n"  # the job's thread computes evidence: the model's denormal flush stays off it
        "kept = float(np.array([1e-39], np.float32)[0] * np.float32(1.0)) != 0\n"
        "print('TORCH', 'torch' in sys.modules, 'MODEL', bool(started), 'DENORMALS', kept)\n"
    )

    def run(fq: Path, where: str) -> tuple[str, str]:
        out = tmp_path / f"{fq.stem}.{where}.tsv"
        res = subprocess.run([sys.executable, "-c", probe, where, "-q", "classify-reads", str(fq), "--min-bits", "6",
                              "--device", "cpu", "-o", str(out)], capture_output=True, text=True, env=subprocess_env())
        assert res.returncode == 0, res.stderr
        return res.stdout.strip(), out.read_text()

    for fq, first in ((few, "TORCH False MODEL False"), (reads, "TORCH False MODEL True")):
        here, spawned = run(fq, "default"), run(fq, "spawned")
        assert here[0] == first + " DENORMALS True" and spawned[0] == "TORCH False MODEL True DENORMALS True"
        assert here[1] == spawned[1]
        p = [row.split("\t")[2] for row in here[1].splitlines()[1:]]
        assert len(p) == len(read_fastq(fq)) and p.count("NA") < len(p) // 10  # the model scored most reads


def test_classify_reads_ends_the_program_at_once_once_its_outputs_are_written(tmp_path):
    """After a classify-reads that succeeded the program ends with os._exit (the job asks it to:
    genointerp.runtime.end_at_once), freeing nothing: an exit handler registered before it never
    runs, and the calls and report are whole. A command that fails, one that does not ask, or a
    run under a profiler ends as before (the handler runs)."""
    fq = Path(__file__).resolve().parent.parent / "test-data" / "tumor_small.fq.gz"
    probe = ("import atexit, sys\natexit.register(lambda: print('EXIT HANDLER', file=sys.stderr))\n"
             "sys.argv = ['genointerp', *sys.argv[1:]]\nfrom genointerp.__main__ import main\nmain()\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", probe, "-q", *args], capture_output=True, text=True)

    calls, report = tmp_path / "calls.tsv", tmp_path / "report.tsv"
    ok = run("classify-reads", str(fq), "-t", "2", "-o", str(calls), "--report", str(report))
    assert ok.returncode == 0 and "EXIT HANDLER" not in ok.stderr, ok.stderr
    assert len(calls.read_text().splitlines()) == 2001 and calls.read_text().endswith("\n")
    assert report.read_text().startswith("sample\t") and report.read_text().endswith("\n")
    failed = run("classify-reads", str(tmp_path / "missing.fq"), "-o", str(tmp_path / "no.tsv"))
    assert failed.returncode != 0 and "EXIT HANDLER" in failed.stderr
    assert "EXIT HANDLER" in run("versions").stderr
    # under a profiler (python -m cProfile), which writes what it saw at the exit, as before too
    profiled = subprocess.run([sys.executable, "-c", "import sys\nsys.setprofile(lambda *a: None)\n" + probe, "-q",
                               "classify-reads", str(fq), "-o", str(tmp_path / "p.tsv")], capture_output=True, text=True)
    assert profiled.returncode == 0 and "EXIT HANDLER" in profiled.stderr, profiled.stderr
