"""Shared fixtures: test-data paths and a CLI runner that keeps stdout and stderr apart."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

import pytest
import torch  # noqa: F401 - classify-reads then runs its model in the test process (genointerp.viral.classify.model_process)
from typer.testing import CliRunner

import genointerp.runtime  # noqa: F401 - sets cuBLAS's fixed workspace before any test's first product on a GPU
from genointerp.cli import app

DATA = Path(__file__).resolve().parent.parent / "test-data"
# Viral indexes a run builds are cached (genointerp.viral.evidence.prebuilt): for the tests, in a folder of
# the session's own, not the user's ~/.cache; commands the tests start as processes inherit it.
_CACHE = tempfile.mkdtemp(prefix="genointerp-test-cache-")
os.environ["GENOINTERP_CACHE"] = _CACHE


def pytest_unconfigure(config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)


def slow_node_ids() -> set[str]:
    """The node ids tests/slow.txt names, one a line; lines starting with '#' are comments (a test
    id itself may hold '#')."""
    lines = (line.strip() for line in (Path(__file__).parent / "slow.txt").read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the marks
def pytest_collection_modifyitems(session, config, items) -> None:
    """Mark `slow` every test tests/slow.txt names (by itself, its module or a fixture of its module
    that it uses), so `pytest -m "not slow"` is the fast subset."""
    slow, used = slow_node_ids(), set()
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        module = function.split("::", 1)[0]
        for name in (item.nodeid, function, module, *(f"{module}::{f}" for f in getattr(item, "fixturenames", ()))):
            if name in slow:
                item.add_marker(pytest.mark.slow)
                used.add(name)
    whole_suite = {Path(item.nodeid.split("::", 1)[0]).name for item in items} >= \
        {p.name for p in Path(__file__).parent.glob("test_*.py")}
    if whole_suite and slow - used:
        import warnings

        warnings.warn(pytest.PytestConfigWarning(
            f"tests/slow.txt names {len(slow - used)} test(s) that no longer exist: {', '.join(sorted(slow - used))}"))


@pytest.fixture
def data() -> Path:
    return DATA


_RUNNER = CliRunner()  # holds no state between runs: each invoke gets fresh streams and environment


def run_cli(*args, input=None, env=None, catch_exceptions=False):
    """`genointerp ARGS` run in this process (each arg through str()), stdout and stderr kept apart.
    An exception the command does not handle is raised (a traceback in the test) unless
    catch_exceptions; usable from module-scoped fixtures, where the `cli` fixture is not."""
    return _RUNNER.invoke(app, [str(a) for a in args], input=input, env=env, catch_exceptions=catch_exceptions)


def train_into(tmp_path_factory, name: str, *args) -> Path:
    """`genointerp ARGS -o OUT` into a fresh temporary folder named `name`; OUT after a clean exit
    (a module fixture's trained model: a failed training shows its output, not a later missing file)."""
    out = tmp_path_factory.mktemp(name) / name
    res = run_cli(*args, "-o", out)
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def hostile():
    """Every model output moves with its batch's row count and its row's place (tests/hostile.py):
    a byte-identity test that passes under it holds by design, on any CPU."""
    from hostile import hostile_arithmetic

    with hostile_arithmetic():
        yield


@pytest.fixture(scope="module")
def hostile_module():
    """`hostile` for a whole test module, its module-scoped fixtures included: name it in the
    module's `pytestmark = pytest.mark.usefixtures("hostile_module")`."""
    from hostile import hostile_arithmetic

    with hostile_arithmetic():
        yield


@pytest.fixture(params=["cpu", "cuda"])
def device(request) -> str:
    """The torch device a model test runs on: "cpu" always, and "cuda" where torch sees a GPU, so
    the CUDA path is exercised whenever one is at hand. Models and inputs are built on the CPU (the
    same seeded values either way) and moved with .to(device); results are compared on the CPU."""
    if request.param == "cuda":
        import torch  # here: only tests that take a device pay for importing torch

        if not torch.cuda.is_available():
            pytest.skip("no CUDA device visible to torch on this machine")
    return request.param


def read_fastq(path: Path) -> list[tuple[str, str, str]]:
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        lines = fh.read().splitlines()
    assert len(lines) % 4 == 0
    return [(lines[i][1:], lines[i + 1], lines[i + 3]) for i in range(0, len(lines), 4)]


def write_bam(path: Path, records: list[tuple[str, str, str]], mapped) -> Path:
    """An unsorted BAM of FASTQ records on one 100 kb contig '20'; record i is aligned (at 10*i,
    full-length M) when mapped(i), else unmapped (flag 4)."""
    import pysam

    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": "20", "LN": 100000}]}
    with pysam.AlignmentFile(str(path), "wb", header=header) as bam:
        for i, (name, seq, qual) in enumerate(records):
            a = pysam.AlignedSegment()
            a.query_name, a.query_sequence = name, seq
            a.query_qualities = pysam.qualitystring_to_array(qual)
            if mapped(i):
                a.reference_id, a.reference_start, a.cigarstring, a.flag = 0, 10 * i, f"{len(seq)}M", 0
            else:
                a.flag = 4
            bam.write(a)
    return path


def reference(path: Path) -> dict[str, str]:
    from genointerp.io.sequences import read_reference

    return {name: seq.upper() for name, seq in read_reference(str(path))}


def hup_as_default() -> None:
    """A Popen preexec_fn: the child starts with SIGHUP's default action. Under `nohup` (a suite
    started in the background) every child inherits SIGHUP ignored, and the program keeps an
    ignored SIGHUP ignored on purpose; a test that sends SIGHUP to see it acted on needs it live."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def assert_one_error_line(res, message: str) -> None:
    """Exactly one 'genointerp: error:' line naming the problem; anything else is a log line."""
    lines = res.stderr.splitlines()
    errors = [line for line in lines if line.startswith("genointerp: error:")]
    assert len(errors) == 1 and message in errors[0], res.stderr
    assert all(line.startswith("[genointerp]") for line in lines if line not in errors), res.stderr
    assert "Traceback" not in res.output


def tsv_dicts(text: str, comment: str | None = None) -> list[dict[str, str]]:
    """A TSV's rows as {column: cell} dicts, cells kept as strings; the first line is the header,
    every other line a row, except lines starting with `comment` where one is given (MultiQC's
    `# key: value` lines)."""
    lines = [line for line in text.splitlines() if comment is None or not line.startswith(comment)]
    header, *rows = [line.split("\t") for line in lines]
    # a row with a cell too many or too few is a broken table, not one to read by zip's truncation
    assert all(len(row) == len(header) for row in rows), [row for row in rows if len(row) != len(header)][:3]
    return [dict(zip(header, row)) for row in rows]


def read_tsv(path, comment: str | None = None) -> list[dict[str, str]]:
    """tsv_dicts of the file at `path`."""
    return tsv_dicts(Path(path).read_text(), comment)


def metrics_without_timing(model_dir: Path) -> list[list[str]]:
    """A model's metrics.tsv (header, one row per epoch) without its wall-clock column: what a
    resumed run must reproduce."""
    rows = [line.split("\t") for line in (model_dir / "metrics.tsv").read_text().splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if name != "seconds"]
    return [[r[i] for i in keep] for r in rows]


def torchrun(nproc: int) -> list[str]:
    """The command line that starts `nproc` DDP processes on this host. --standalone: the
    rendezvous is a TCP store on a port the OS picks (port 0), shared with the workers, so two test
    runs on one host never meet on a fixed --master_port."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc)]


def interrupt_at_call(monkeypatch, owner, name: str, n: int):
    """Make the n-th call of `owner.name` raise KeyboardInterrupt (a run stopped there, e.g. at its
    n-th validation) while the others call through; returns a function that restores the original."""
    real, calls = getattr(owner, name), {"n": 0}

    def interrupting(*a, **k):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(owner, name, interrupting)
    return lambda: monkeypatch.setattr(owner, name, real)


class Pipes:
    """What bash's `<(...)` passes: /dev/fd/N, the read end of a pipe that a writer fills once."""

    def __init__(self) -> None:
        self.fds, self.threads = [], []

    def __call__(self, data: bytes) -> str:
        r, w = os.pipe()
        self.fds.append(r)
        self._start(lambda: open(w, "wb"), data)
        return f"/dev/fd/{r}"

    def fifo(self, path, data: bytes) -> str:
        os.mkfifo(path)
        self._start(lambda: open(path, "wb"), data)  # blocks until the command opens it
        return str(path)

    def _start(self, opener, data: bytes) -> None:
        def write():
            try:
                with opener() as fh:
                    fh.write(data)
            except BrokenPipeError:  # the command stopped reading (an error it reports)
                pass

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        self.threads.append(thread)

    def close(self) -> None:
        for r in self.fds:
            os.close(r)
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def pipe():
    pipes = Pipes()
    yield pipes
    pipes.close()
