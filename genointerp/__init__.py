"""genointerp: interpretable deep learning for sequencing pipelines.

Only the version lives here so that `genointerp --version` and `--help` stay fast
(no numpy, pysam or torch import), and the program's first signal handlers: this file is the
first of genointerp that Python runs, whether the program starts as the console script or as
`python -m genointerp` (both import the package before genointerp.__main__), so a Ctrl-C from
here on ends it with one line, never a KeyboardInterrupt traceback. Before this line the
interpreter and its site-packages start (docs/reliability.md, Signals). Only the program takes
them (sys.orig_argv, the interpreter's own command line, names it), never a library or a
worker process that imports genointerp (multiprocessing's spawned workers set sys.argv to the
program's, but not sys.orig_argv)."""

__version__ = "0.1.0"


def _is_the_program(orig_argv: list[str]) -> bool:
    """Whether the interpreter's command line (sys.orig_argv) runs genointerp: `genointerp ...` (the
    console script) or `python -m genointerp ...`."""
    args = orig_argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m":
            return args[i + 1:i + 2] == ["genointerp"]
        if a in ("-c", "-"):
            return False
        if a in ("-X", "-W"):  # options whose value is the next argument
            i += 2
            continue
        if not a.startswith("-"):
            return a.rsplit("/", 1)[-1] == "genointerp"
        i += 1
    return False


def take_signals_early() -> None:
    """SIGINT, SIGTERM and SIGHUP end the program with one line and 128 + n until the CLI takes
    them over (genointerp.interrupts); signals ignored on entry (a background job, nohup) stay
    ignored. `_signal`, the C module: no enum classes to build before the handler is in place."""
    import _signal

    for s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(s) in (_signal.SIG_DFL, _signal.default_int_handler):
            _signal.signal(s, _stop_before_start)


def _stop_before_start(signum, frame) -> None:
    import _signal
    import os

    names = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM", _signal.SIGHUP: "SIGHUP"}
    os.write(2, f"genointerp: interrupted by {names.get(signum, signum)} while starting\n".encode())
    os._exit(128 + signum)


def _early() -> None:
    import sys

    if _is_the_program(getattr(sys, "orig_argv", [])):
        take_signals_early()


_early()
