"""SIGTERM/SIGINT as exceptions, and the steps that hold them back (genointerp/interrupts.py):
a signal at the worst moment of AtomicOutputs leaves no temporary and no half-renamed output set."""

from __future__ import annotations

import os
import signal
import sys
import tempfile

import pytest

from genointerp.errors import InputError
from genointerp.interrupts import Interrupted, deferred, signals_as_exceptions
from genointerp.io import atomic
from genointerp.io.atomic import TMP_PREFIX, AtomicOutputs

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")


def _term_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def test_a_signal_inside_deferred_is_raised_when_the_block_ends():
    steps = []
    with pytest.raises(Interrupted) as caught, signals_as_exceptions():
        with deferred():
            _term_self()
            steps.append("after the signal")  # the block is not cut
        steps.append("never")
    assert steps == ["after the signal"] and caught.value.signum == signal.SIGTERM


def test_without_deferred_the_signal_raises_at_once():
    with pytest.raises(Interrupted), signals_as_exceptions():
        _term_self()
        pytest.fail("the signal should have raised")


def test_a_signal_right_after_a_temporary_folder_is_made_leaves_nothing(tmp_path, monkeypatch):
    real = tempfile.mkdtemp

    def mkdtemp_then_signal(*a, **k):
        path = real(*a, **k)
        _term_self()  # before AtomicOutputs has registered the folder for clean-up
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_then_signal)
    with pytest.raises(Interrupted), signals_as_exceptions():
        with AtomicOutputs() as outputs:
            outputs.folder(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_between_two_renames_still_puts_every_output_in_place(tmp_path, monkeypatch):
    real, calls = atomic._rename_noreplace, []

    def replace_then_signal(src, dst):
        real(src, dst)
        calls.append(dst)
        if len(calls) == 1:
            _term_self()  # one of the two outputs is in place, the other not yet

    monkeypatch.setattr(atomic, "_rename_noreplace", replace_then_signal)
    with pytest.raises(Interrupted), signals_as_exceptions():
        with AtomicOutputs() as outputs:
            for name in ("a.tsv", "b.tsv"):
                outputs.file(tmp_path / name).write_text(name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv", "b.tsv"]
    assert not any(p.name.startswith(TMP_PREFIX) for p in tmp_path.iterdir())


def test_a_failed_commit_removes_what_is_not_in_place(tmp_path, monkeypatch):
    real = atomic._rename_noreplace

    def replace_fails_second(src, dst):
        if str(dst).endswith("b.tsv"):
            raise OSError(28, "No space left on device", str(src))
        real(src, dst)

    monkeypatch.setattr(atomic, "_rename_noreplace", replace_fails_second)
    with pytest.raises(InputError, match="b.tsv: cannot write here: No space left on device"):
        with AtomicOutputs() as outputs:
            for name in ("a.tsv", "b.tsv"):
                outputs.file(tmp_path / name).write_text(name)
    assert list(tmp_path.iterdir()) == []  # all or nothing: a.tsv, renamed first, is taken back
