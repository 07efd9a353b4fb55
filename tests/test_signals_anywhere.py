"""A signal is acted on wherever the program is (issue 39, the third sweep: 9, 10, 11 and the red
suite): inside htslib's read of an idle pipe, while model weights load, during the imports.

No test here depends on when its signal lands. Each waits for a state the program makes (its
output's temporary exists: the run has started and the handlers are in place), sends the signal
and then waits for the exit while the input stays open: a program that acts only when input
arrives never ends on its own, and the generous timeout fails the test. The deterministic ones
deliver the signal at a chosen point through a hook (an import, a library call)."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA, assert_one_error_line, hup_as_default

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and FIFOs")

READS = gzip.decompress((DATA / "tumor_small.fq.gz").read_bytes())
GENOINTERP = [sys.executable, "-m", "genointerp"]
KMERIZE_STDIN = ["kmerize", "-", "-k", "3", "--length", "50", "--tsv"]
EXIT_WITHIN = 60  # seconds: the program acts within about one; this only bounds a broken one


def _temporary_appears(out: Path, proc: subprocess.Popen) -> None:
    """Wait for the state the test needs: the run has reserved `out` (its hidden temporary exists)."""
    deadline = time.monotonic() + EXIT_WITHIN
    while not list(out.parent.glob(f".genointerp-tmp-*{out.name}")):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the run never reserved its output"
        time.sleep(0.02)


def _ends_on_its_own(proc: subprocess.Popen, signum: int) -> str:
    """The exit status and the one line of a run stopped by `signum`, its input still open."""
    try:
        proc.wait(timeout=EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"{signal.Signals(signum).name} was not acted on while the input stayed open")
    err = proc.stderr.read().decode()
    assert proc.returncode == 128 + signum, err
    lines = err.strip().splitlines()
    assert lines[-1] == f"genointerp: interrupted by {signal.Signals(signum).name}; unfinished outputs removed", err
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_is_acted_on_while_htslib_waits_on_an_idle_pipe(tmp_path, signum):
    """20 KB of reads arrive, then nothing: the reader sits inside htslib's read(), which retries
    after a signal. The run must still stop at once and remove its temporary."""
    out = tmp_path / "t.tsv"
    proc = subprocess.Popen([*GENOINTERP, *KMERIZE_STDIN, str(out)], cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=hup_as_default)
    proc.stdin.write(READS[:20_000])
    proc.stdin.flush()
    _temporary_appears(out, proc)
    proc.send_signal(signum)
    try:
        _ends_on_its_own(proc, signum)
    finally:
        proc.stdin.close()
    assert list(tmp_path.iterdir()) == []


def test_a_signal_is_acted_on_while_a_fifo_stays_idle(tmp_path):
    """The same with a named pipe whose writer holds it open and writes nothing more."""
    fifo, out = tmp_path / "reads.fq", tmp_path / "t.tsv"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*GENOINTERP, "kmerize", str(fifo), "-k", "3", "--length", "50", "--tsv", str(out)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer = os.open(fifo, os.O_WRONLY)  # blocks until the run opens it: the run has started
    try:
        os.write(writer, READS[:20_000])
        _temporary_appears(out, proc)
        proc.send_signal(signal.SIGTERM)
        _ends_on_its_own(proc, signal.SIGTERM)
    finally:
        os.close(writer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reads.fq"]


_AT_IMPORT = """
import importlib.abc, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's, even where CI started us ignoring it
target = sys.argv[1]
class SignalAtImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target_=None):
        if name == target:
            sys.meta_path.remove(self)
            sys.stderr.write("hook: importing " + name + "\\n")
            os.kill(os.getpid(), signal.SIGINT)
        return None
import genointerp.__main__ as program
sys.meta_path.insert(0, SignalAtImport())
sys.argv = ["genointerp", *sys.argv[2:]]
program.main()
"""


@pytest.mark.parametrize("module", ["genointerp.cli", "typer", "genointerp.cli.viral", "numpy", "pysam"])
def test_ctrl_c_while_modules_load_ends_with_one_line(tmp_path, module):
    """Ctrl-C during the first half second: the signal is delivered exactly when `module` is first
    imported (the program's own imports, then the command's), and the run must end with 130 and one
    line, never a KeyboardInterrupt traceback."""
    # pysam loads where a reader needs it (FASTA, BAM, FASTQ records the compiled reader leaves): a FASTA here
    reads = DATA / ("hpv4.fa" if module == "pysam" else "tumor_small.fq.gz")
    res = subprocess.run([sys.executable, "-c", _AT_IMPORT, module, "kmerize", str(reads),
                          "-k", "3", "--length", "50", "--tsv", str(tmp_path / "t.tsv")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=EXIT_WITHIN)
    assert f"hook: importing {module}" in res.stderr, res.stderr  # the signal was sent where meant
    assert res.returncode == 130, res.stderr
    assert "Traceback" not in res.stderr and "KeyboardInterrupt" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("genointerp: interrupted by SIGINT"), res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_signal_a_library_turns_into_its_own_error_is_reported_as_the_interruption(cli, tmp_path, monkeypatch):
    """A signal while weights load (the folded model tables, or the weights through torch): the
    library stops on it and raises its own error ("damaged"). The user must read that the run was
    interrupted (143), not that the model is damaged."""
    import safetensors.numpy
    import safetensors.torch
    from safetensors import SafetensorError

    from genointerp.interrupts import Interrupted

    def interrupted_load(path, *a, **k):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before kill() returns
        except Interrupted:
            pass  # what a C/Rust library does with an exception it cannot carry
        raise SafetensorError("Error while deserializing header: read interrupted")

    monkeypatch.setattr(safetensors.torch, "load_file", interrupted_load)
    monkeypatch.setattr(safetensors.numpy, "load_file", interrupted_load)  # the folded tables' (where no torch)
    res = cli("classify-reads", DATA / "tumor_small.fq.gz", "--evidence", "model", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 143, res.output
    assert "damaged" not in res.stderr
    _only_the_interrupt_line(res.stderr)
    assert list(tmp_path.iterdir()) == []


def _only_the_interrupt_line(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if not line.startswith("[genointerp]")]
    assert lines == ["genointerp: interrupted by SIGTERM; unfinished outputs removed"], stderr


def test_an_error_without_a_signal_is_still_the_error(cli, tmp_path, monkeypatch):
    """The other side: with no signal, a damaged model file is reported as damaged (exit 1)."""
    import safetensors.numpy
    import safetensors.torch
    from safetensors import SafetensorError

    def damaged(path, *a, **k):
        raise SafetensorError("Error while deserializing header: HeaderTooLarge")

    monkeypatch.setattr(safetensors.torch, "load_file", damaged)
    monkeypatch.setattr(safetensors.numpy, "load_file", damaged)
    res = cli("classify-reads", DATA / "tumor_small.fq.gz", "--evidence", "model", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, "damaged or not a safetensors file")


# What the console script pip writes does (`import re, sys; from genointerp.__main__ import main`),
# with a hook that sends SIGINT when Python looks for genointerp.__main__: the first moment after the
# package's own first line. The file is named `genointerp`, as the console script is.
_CONSOLE_SCRIPT = """
import importlib.abc, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's, even where CI started us ignoring it
class SignalAtImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target_=None):
        if name == "genointerp.__main__":
            sys.meta_path.remove(self)
            sys.stderr.write("hook: importing " + name + "\\n")
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, SignalAtImport())
from genointerp.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_ctrl_c_right_after_the_package_starts_ends_with_one_line(tmp_path, how):
    """Ctrl-C in the first fraction of a second, on a busy machine: the program's handlers are in
    place from the package's first line (genointerp/__init__.py, which Python runs before
    genointerp.__main__ whichever way the program starts), not only once main() runs: the signal
    sent as Python looks for genointerp.__main__ ends the run with 130 and one line."""
    work = tmp_path / "work"
    work.mkdir()
    if how == "console script":
        script = tmp_path / "genointerp"
        script.write_text(_CONSOLE_SCRIPT)
        argv = [sys.executable, str(script)]
    else:  # runpy imports the package, then looks for genointerp.__main__: the hook goes in by sitecustomize
        (tmp_path / "sitecustomize.py").write_text(_CONSOLE_SCRIPT.split("sys.meta_path.insert(0, SignalAtImport())")[0]
                                                  + "sys.meta_path.insert(0, SignalAtImport())\n")
        argv = [sys.executable, "-m", "genointerp"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([*argv, "kmerize", str(DATA / "tumor_small.fq.gz"), "-k", "3", "--length", "50", "--tsv",
                          str(work / "t.tsv")], cwd=work, capture_output=True, text=True, timeout=EXIT_WITHIN, env=env)
    assert "hook: importing genointerp.__main__" in res.stderr, res.stderr  # the signal was sent where meant
    assert res.returncode == 130, res.stderr
    assert "Traceback" not in res.stderr and "KeyboardInterrupt" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines()[-1] == "genointerp: interrupted by SIGINT while starting", res.stderr
    assert list(work.iterdir()) == []


def test_only_the_program_takes_the_signals_at_import():
    """A library, a test runner or a worker process that imports genointerp keeps its handlers:
    the interpreter's own command line (sys.orig_argv) must name the program."""
    from genointerp import _is_the_program

    py = sys.executable
    for argv in ([py, "/usr/bin/genointerp", "kmerize"], [py, "-m", "genointerp", "--version"],
                 [py, "-X", "importtime", "-m", "genointerp"], [py, "-u", "/opt/venv/bin/genointerp"]):
        assert _is_the_program(argv), argv
    for argv in ([py, "-c", "from multiprocessing.spawn import spawn_main; spawn_main()", "--multiprocessing-fork"],
                 [py, "-m", "pytest", "tests"], [py, "my_pipeline.py"], [py, "-m", "genointerp_tools"], [py], [py, "-"],
                 [py, "-X", "genointerp"]):
        assert not _is_the_program(argv), argv
    assert signal.getsignal(signal.SIGINT) is not None  # this process (pytest) imported genointerp long ago
    import genointerp.__main__  # noqa: F401
    assert signal.getsignal(signal.SIGINT).__module__ != "genointerp"
