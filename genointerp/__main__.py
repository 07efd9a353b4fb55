"""The `genointerp` program (the console script and `python -m genointerp`).

Nothing is written before a command runs, so a signal while the first imports run (before
genointerp.cli.main takes the signals over) just ends the process with the shell's status and one
line, never a traceback: the package's __init__ takes the signals as soon as it runs, where the
interpreter's command line names the program, and main() again for a caller that starts it some
other way (a test's `python -c`). Only the program does this, not a library that imports
genointerp; SIGINT or SIGHUP ignored on entry (a background job, nohup) stay ignored."""

from genointerp import take_signals_early


def main() -> None:
    # here, not at import: worker processes that multiprocessing starts import this module too
    # (the console script imports it), and must keep the default handlers their pool relies on
    take_signals_early()
    from genointerp.cli import main as run

    try:
        run()
    except SystemExit as done:
        if not done.code:  # done, its outputs written: the collector's last passes would only free memory
            quiet_exit()
        raise


def quiet_exit() -> None:
    """The cyclic garbage collector off for the process's exit: its last collection and those while
    the modules are torn down walked every object left (a job's arrays' owners, the imported
    modules), 0.02-0.03 s of classify-reads' 1.6 s at -t 2 on 108,181 reads, with the job's
    outputs already committed and closed. Where the command asked for it
    (genointerp.runtime.end_at_once), the process then ends at once, its standard streams flushed:
    nothing it holds needs more than the memory back (but where a profiler or tracer watches, which
    writes its findings at the exit). Only the program does this, at its end."""
    import gc
    import os
    import sys

    gc.disable()
    gc.freeze()
    runtime = sys.modules.get("genointerp.runtime")  # (not imported where no command ran)
    # not under a profiler or a tracer (cProfile, coverage): they write what they saw at the exit
    watched = sys.getprofile() is not None or sys.gettrace() is not None
    if runtime is not None and runtime.ends_at_once() and not watched:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # (a closed pipe): the interpreter's own end says so, as it did
            return
        os._exit(0)


if __name__ == "__main__":
    main()
