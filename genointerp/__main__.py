"""The `genointerp` program (the console script and `python -m genointerp`).

Nothing is written before a command runs, so a signal while the first imports run (before
genointerp.cli.main takes the signals over) just ends the process with the shell's status and one
line, never a traceback. Only the program does this, not a library that imports genointerp; SIGINT
or SIGHUP ignored on entry (a background job, nohup) stay ignored."""

import _signal  # the C module: no enum classes to build before the first handler is in place


_NAMES = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM", _signal.SIGHUP: "SIGHUP"}


def _stop_before_start(signum, frame) -> None:
    import os

    os.write(2, f"genointerp: interrupted by {_NAMES[signum]} while starting\n".encode())
    os._exit(128 + signum)


def main() -> None:
    # here, not at import: worker processes that multiprocessing starts import this module too
    # (the console script imports it), and must keep the default handlers their pool relies on
    for s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(s) in (_signal.SIG_DFL, _signal.default_int_handler):
            _signal.signal(s, _stop_before_start)
    from genointerp.cli import main as run

    run()


if __name__ == "__main__":
    main()
