"""The second reliability sweep over outputs (issue 30, part 2): special files are written straight
through, "don't overwrite" holds until the rename, a set of outputs is all or nothing even when
the disk changes during the run, a training-run folder serves one run at a time, SIGHUP and SIGKILL
leave nothing for long, a closed stdout never hides missing file outputs, and errors name the
user's output, never a hidden temporary."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import DATA, assert_one_error_line, hup_as_default

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX special files and signals")

READS = DATA / "tumor_small.fq.gz"
KMERIZE = ["kmerize", READS, "-k", "3", "--length", "50"]
GENOINTERP = [sys.executable, "-m", "genointerp"]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".genointerp-tmp-*"))


@pytest.fixture
def tsv(cli, tmp_path) -> bytes:
    """What `kmerize --tsv` writes for the bundled reads: the bytes a straight-through output must get."""
    assert cli(*KMERIZE, "--tsv", tmp_path / "ref.tsv").exit_code == 0
    data = (tmp_path / "ref.tsv").read_bytes()
    (tmp_path / "ref.tsv").unlink()
    return data


def _drain(fd: int, into: list) -> threading.Thread:
    """Read fd to its end in a thread (the reader of a FIFO or a pipe), bytes appended to `into`."""
    def read() -> None:
        with os.fdopen(fd, "rb") as fh:
            into.append(fh.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _after_the_job(monkeypatch, module: str, then) -> None:
    """Call `then()` when the command's job has written its outputs, before they are renamed into
    place: what another process could do at that moment of a long run."""
    import importlib

    owner = importlib.import_module(module)
    real = owner.run

    def run_then(*a, **k):
        result = real(*a, **k)
        then()
        return result

    monkeypatch.setattr(owner, "run", run_then)


# --- 1. special files are written straight through, never renamed over --------------------------

@pytest.mark.parametrize("name, force", [("t.tsv", False), ("t.tsv", True), ("t.tsv.gz", True)])
def test_a_fifo_as_output_is_written_through(cli, tmp_path, tsv, name, force):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = cli(*KMERIZE, "--tsv", fifo, *(["--force"] if force else []))
    reader.join(30)
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still a FIFO: its reader got the data
    assert (gzip.decompress(got[0]) if name.endswith(".gz") else got[0]) == tsv
    assert leftovers(tmp_path) == []


def test_a_character_device_as_output_stays_a_device(cli, tmp_path):
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    res = cli(*KMERIZE, "--tsv", null, "--force")
    assert res.exit_code == 0, res.output
    assert stat.S_ISCHR(null.lstat().st_mode) and leftovers(tmp_path) == []


def test_dev_stdout_appends_to_what_the_shell_opened(tmp_path, tsv):
    """`-o /dev/stdout --force >> all.tsv` writes at the end of all.tsv, never replaces it."""
    all_tsv = tmp_path / "all.tsv"
    all_tsv.write_bytes(b"earlier\n")
    with open(all_tsv, "ab") as out:
        res = subprocess.run([*GENOINTERP, *map(str, KMERIZE), "--tsv", "/dev/stdout", "--force"], stdout=out,
                             stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert all_tsv.read_bytes() == b"earlier\n" + tsv


def test_process_substitution_as_output(cli, tmp_path, tsv):
    """`-o >(gzip > c.gz)`: the shell passes /dev/fd/N, a pipe of this very process."""
    r, w = os.pipe()
    got: list = []
    reader = _drain(r, got)
    try:
        res = cli(*KMERIZE, "--tsv", f"/dev/fd/{w}")
    finally:
        os.close(w)  # the shell's end: the command must have closed only its own copy
    reader.join(30)
    assert res.exit_code == 0, res.output
    assert got == [tsv] and leftovers(tmp_path) == []


# --- 2. "don't overwrite" holds until the rename; a set of outputs is all or nothing ---------------

def test_a_folder_made_at_the_target_during_the_run_is_kept(cli, tmp_path, monkeypatch):
    km = tmp_path / "km2"

    def user_makes_the_folder():
        km.mkdir()
        (km / "notes.txt").write_text("notes\n")

    _after_the_job(monkeypatch, "genointerp.reads.kmerize", user_makes_the_folder)
    res = cli(*KMERIZE, "--label-field", "0", "-o", km)
    assert res.exit_code == 1
    assert_one_error_line(res, f"{km}: ")
    assert (km / "notes.txt").read_text() == "notes\n" and sorted(p.name for p in km.iterdir()) == ["notes.txt"]
    assert leftovers(tmp_path) == []


def test_two_runs_into_one_file_one_fails(cli, tmp_path, monkeypatch):
    """The other run's result, renamed into place while this one ran, is not silently replaced."""
    calls = tmp_path / "c.tsv"
    _after_the_job(monkeypatch, "genointerp.viral.classify.job", lambda: calls.write_text("the other run's calls\n"))
    res = cli("classify-reads", READS, "-o", calls)
    assert res.exit_code == 1
    assert_one_error_line(res, f"{calls}: ")
    assert calls.read_text() == "the other run's calls\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_set_of_outputs_is_all_or_nothing_at_rename_time(cli, tmp_path, monkeypatch, force):
    pc = tmp_path / "pc"
    pc.mkdir()
    _after_the_job(monkeypatch, "genointerp.viral.classify.job", lambda: (pc / "s.json").mkdir())
    res = cli("classify-reads", READS, "-o", pc / "calls.tsv", "--summary", pc / "s.json", *(["--force"] if force else []))
    assert res.exit_code == 1
    assert_one_error_line(res, f"{pc / 's.json'}: ")
    assert sorted(p.name for p in pc.iterdir()) == ["s.json"]  # no calls.tsv, no temporary


def test_force_never_deletes_a_folder_that_replaced_ours_during_the_run(cli, tmp_path, monkeypatch):
    km = tmp_path / "km"
    assert cli(*KMERIZE, "--label-field", "0", "-o", km).exit_code == 0

    def user_replaces_it():
        shutil.rmtree(km)
        km.mkdir()
        (km / "thesis.tex").write_text("years of work\n")

    _after_the_job(monkeypatch, "genointerp.reads.kmerize", user_replaces_it)
    res = cli(*KMERIZE, "--label-field", "0", "-o", km, "--force")
    assert res.exit_code == 1
    assert_one_error_line(res, "was not written by genointerp")
    assert sorted(p.name for p in km.iterdir()) == ["thesis.tex"] and leftovers(tmp_path) == []


def test_force_still_replaces_a_file_that_appeared_during_the_run(cli, tmp_path, monkeypatch, tsv):
    out = tmp_path / "t.tsv"
    _after_the_job(monkeypatch, "genointerp.reads.kmerize", lambda: out.write_text("older\n"))
    res = cli(*KMERIZE, "--tsv", out, "--force")
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == tsv and leftovers(tmp_path) == []


def test_two_training_runs_cannot_share_a_checkpoint_folder(cli, tmp_path, monkeypatch):
    ds, xc = tmp_path / "km", tmp_path / "xc"
    assert cli(*KMERIZE, "--label-field", "0", "-o", ds).exit_code == 0
    train = ["train-xvir", ds, "--d-model", "8", "--heads", "1", "--epochs", "1", "--seed", "1", "-o", xc]
    import genointerp.train.driver as driver  # the training driver calls fit: patch it where it is called

    real_fit, second = driver.fit, []

    def fit_while_another_run_starts(*a, **k):  # the first run holds xc.checkpoint/ now
        second.append(subprocess.run([*GENOINTERP, "-q", *map(str, train)], capture_output=True, text=True,
                                     cwd=tmp_path, timeout=120))
        return real_fit(*a, **k)

    monkeypatch.setattr(driver, "fit", fit_while_another_run_starts)
    res = cli("-q", *train)
    assert res.exit_code == 0, res.output
    other = second[0]
    assert other.returncode == 1, other.stderr
    errors = [line for line in other.stderr.splitlines() if line.startswith("genointerp: error:")]
    assert len(errors) == 1 and f"{xc}.checkpoint" in errors[0] and "another" in errors[0], other.stderr
    assert len((xc / "metrics.tsv").read_text().splitlines()) == 2  # the header and its own one epoch
    assert sorted(p.name for p in tmp_path.iterdir()) == ["km", "xc"]


# --- 6. SIGHUP and SIGKILL leave nothing for long -----------------------------------------------

def _start_blocked(out: Path, cwd: Path, preexec_fn=None) -> subprocess.Popen:
    """kmerize reading stdin into `out`, held mid-run (stdin stays open) once its temporary exists."""
    before = set(out.parent.glob(f".genointerp-tmp-*{out.name}"))
    proc = subprocess.Popen([*GENOINTERP, "kmerize", "-", "-k", "3", "--length", "50", "--tsv", str(out)],
                            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=preexec_fn)
    deadline = time.monotonic() + 60
    while set(out.parent.glob(f".genointerp-tmp-*{out.name}")) <= before and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.02)
    return proc


def test_sighup_cleans_up_like_sigterm(tmp_path):
    proc = _start_blocked(tmp_path / "t.tsv", tmp_path, preexec_fn=hup_as_default)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 129, err
    assert b"interrupted by SIGHUP" in err and b"Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_sighup_under_nohup_is_still_ignored(tmp_path, tsv):
    out = tmp_path / "t.tsv"
    proc = _start_blocked(out, tmp_path, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(gzip.decompress(READS.read_bytes()), timeout=60)  # the run goes on to its end
    assert proc.returncode == 0, err
    assert out.read_bytes() == tsv


def test_a_later_run_removes_temporaries_of_killed_runs_only(cli, tmp_path):
    target = tmp_path / "t.tsv"
    killed = _start_blocked(target, tmp_path)
    killed.kill()
    killed.wait()
    stopped = _start_blocked(target, tmp_path)  # alive, and writing the same output
    stale = set(leftovers(tmp_path))
    try:
        assert cli(*KMERIZE, "--tsv", tmp_path / "other.tsv").exit_code == 0  # another output: not its business
        assert set(leftovers(tmp_path)) == stale
        assert cli(*KMERIZE, "--tsv", target).exit_code == 0
        live = set(leftovers(tmp_path))
        assert len(stale) == 2 and len(live) == 1 and live < stale  # the killed run's is gone, the live one's kept
    finally:
        stopped.kill()
        stopped.wait()
    assert cli(*KMERIZE, "--tsv", target, "--force").exit_code == 0
    assert leftovers(tmp_path) == []


# --- 7. a closed stdout never hides missing file outputs ------------------------------------------

def _read_one_line_then_close(cmd: list, cwd: Path) -> subprocess.CompletedProcess:
    """`genointerp ... | head -1`"""
    proc = subprocess.Popen([*GENOINTERP, *map(str, cmd)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, first, err.decode())


def test_stdout_closed_early_still_writes_the_file_outputs(tmp_path):
    res = _read_one_line_then_close([*KMERIZE, "--label-field", "0", "--tsv", "-", "-o", "km", "--counts", "c.tsv"],
                                    tmp_path)
    assert res.stdout.startswith(b"read_id\t")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    header = json.loads((tmp_path / "km" / "header.json").read_text())
    assert sum(header["label_counts"].values()) == 2000  # the whole input, not what stdout had taken
    assert (tmp_path / "c.tsv").stat().st_size > 0 and leftovers(tmp_path) == []


def test_stdout_only_closed_early_is_still_exit_0(tmp_path):
    res = _read_one_line_then_close([*KMERIZE, "--tsv", "-"], tmp_path)
    assert res.returncode == 0 and "error" not in res.stderr and "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


# --- 9. messages name the user's output ----------------------------------------------------------

def test_a_read_only_folder_is_named_not_the_temporary(cli, tmp_path, monkeypatch):
    real_mkdir, real_open = os.mkdir, os.open

    def read_only(real):
        def call(path, *a, **k):
            if os.path.basename(path).startswith(".genointerp-tmp-"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
            return real(path, *a, **k)
        return call

    monkeypatch.setattr(os, "mkdir", read_only(real_mkdir))
    monkeypatch.setattr(os, "open", read_only(real_open))
    res = cli(*KMERIZE, "--label-field", "0", "-o", tmp_path / "km")
    assert res.exit_code == 1
    assert_one_error_line(res, f"{tmp_path / 'km'}: cannot write here: Read-only file system")
    assert ".genointerp-tmp" not in res.stderr


def test_a_full_device_is_named(cli, tmp_path):
    res = cli(*KMERIZE, "--tsv", "/dev/full")
    assert res.exit_code == 1
    assert_one_error_line(res, "/dev/full: cannot write here: No space left on device")


def test_a_full_disk_names_the_output(cli, tmp_path, monkeypatch):
    def disk_full():
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as numpy or a C library raises it: no file named

    _after_the_job(monkeypatch, "genointerp.reads.kmerize", disk_full)
    res = cli(*KMERIZE, "--label-field", "0", "-o", tmp_path / "km")
    assert res.exit_code == 1
    assert_one_error_line(res, f"{tmp_path / 'km'}: cannot write here: No space left on device")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--tsv", "--counts"])
def test_a_file_output_ending_in_a_slash_is_a_usage_error(cli, tmp_path, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    res = cli(*KMERIZE, option, "x/")
    assert res.exit_code == 2
    assert_one_error_line(res, "x/: ")
    assert list(tmp_path.iterdir()) == []
