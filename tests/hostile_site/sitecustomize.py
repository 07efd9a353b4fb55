"""Hostile arithmetic (tests/hostile.py) in a subprocess: put this folder on PYTHONPATH.

A test that compares the outputs of separate processes (a Snakemake workflow's chunk jobs against
one direct run) cannot monkeypatch them; Python imports this module at start-up instead. It
imports nothing heavy itself: it waits for genointerp.models.xvir_folded, or torch, to be
imported by the command, and turns the arithmetic hostile right after, so commands that never
load torch (`--help`, merge-calls) start as fast as ever.
"""

import importlib.abc
import importlib.util
import os
import sys

_WATCHED = {"torch", "genointerp.models.xvir_folded"}
_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `_arm` once each watched module has finished importing."""

    def find_spec(self, name, path=None, target=None):
        if name not in _WATCHED:
            return None
        _WATCHED.discard(name)  # find the real spec without coming back here
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _arm(name)

        spec.loader.exec_module = exec_module
        return spec


def _arm(name: str) -> None:
    sys.path.insert(0, _TESTS)
    import hostile

    if name == "torch":
        hostile.hook_modules()
    else:
        hostile.patch_folded_xvir()


sys.meta_path.insert(0, _AfterImport())
