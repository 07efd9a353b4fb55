"""Python's cyclic collector held off while the program's modules import (genointerp.cli.main),
and turned back on once the command's job module is in (genointerp.cli.declare) or the program
ends without a job (--help, a refused option).

Why: each pass walked the modules' objects made so far, which live until the program ends (67
passes, 8 ms of classify-reads' 0.17 s start, on one core before its workers fork). Its own module
because both the package's `main` and the command runner it imports need it."""

from __future__ import annotations

import gc

_held = False  # hold() turned the collector off; back() turns it on


def hold() -> None:
    """The collector off where it is on (a caller that turned it off keeps it so)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def back() -> None:
    """The collector on again where hold() turned it off: the objects made meanwhile go to the
    oldest generation (gc.freeze then gc.unfreeze), so that the first pass after does not walk
    them all as young ones."""
    global _held
    if _held:
        _held = False
        if not gc.get_freeze_count():  # (a caller's own frozen objects stay so)
            gc.freeze()
            gc.unfreeze()
        gc.enable()
