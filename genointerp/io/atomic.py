"""All-or-nothing outputs: write to hidden temporaries beside the targets, rename on success.

A command registers its inputs and every output it will write up front, so that an existing
file, an output that would replace an input, or a folder genointerp never wrote is refused
before any work starts. It writes to the temporary paths, and the context manager renames them
all when the body finishes without an exception, or deletes them all when it fails (SIGINT and
SIGTERM arrive as exceptions, see genointerp/interrupts.py). `-` means stdout and is streamed directly (a
pipe cannot be un-written).

The `--force` rules, in one place:
- a file output may replace an existing file, never a folder;
- a folder output may replace only a folder that genointerp wrote (it holds the MARKER file),
  never `/`, the home folder, the working folder or one of its parents;
- an output never replaces an input, and a folder output never holds one;
- a symbolic link as output is written through: its target is replaced, the link stays.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from genointerp.errors import InputError, UsageError
from genointerp.interrupts import deferred

STDOUT = "-"
MARKER = ".genointerp"  # in every output folder: proof that --force may replace it
TMP_PREFIX = ".genointerp-tmp-"

# Temporary path -> the user's path, for error messages raised while writing (an error should
# name the file the user asked for, not a hidden temporary). Kept for the process's lifetime:
# the messages are formatted after the temporaries are gone.
TEMP_NAMES: dict[str, str] = {}


def user_facing(message: str) -> str:
    """`message` with every temporary path replaced by the output it stands for."""
    for tmp, final in TEMP_NAMES.items():
        message = message.replace(tmp, final)
    return message


class AtomicOutputs:
    """A set of output files/folders committed together. Use as a context manager.

    `inputs` are the paths the command reads (files or folders; None and `-` are skipped): an
    output may neither be one of them nor, as a folder, contain one.
    """

    def __init__(self, force: bool = False, inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        self.force = force
        self._inputs = [os.path.realpath(p) for p in inputs if p is not None and str(p) != STDOUT]
        self._pending: list[tuple[Path, Path]] = []  # (temporary, final)

    def protect(self, *inputs: str | os.PathLike | None) -> None:
        """Add input paths that no output may replace (e.g. files named inside another input)."""
        self._inputs += [os.path.realpath(p) for p in inputs if p is not None and str(p) != STDOUT]

    def _reserve(self, target: str | os.PathLike, is_dir: bool) -> Path:
        if str(target) == STDOUT and is_dir:
            raise UsageError(f"{target}: this output is a folder and cannot go to stdout; name a folder")
        final = _through_links(Path(target))
        real = os.path.realpath(final)
        if any(real == os.path.realpath(f) for _, f in self._pending):
            raise UsageError(f"{target}: the same output path is given twice")
        self._check_inputs(target, real, is_dir)
        if final.exists():
            self._check_replaceable(target, final, is_dir)
        if not final.parent.is_dir():
            raise InputError(f"{target}: output folder {final.parent} does not exist")
        # hidden, and ending in the target's own name so that its extension (.gz) still applies
        suffix = f".{final.name}"
        with deferred():  # a signal between creating and registering would leave it behind
            if is_dir:
                tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, suffix=suffix, dir=final.parent))
            else:
                fd, name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=suffix, dir=final.parent)
                os.close(fd)
                tmp = Path(name)
            self._pending.append((tmp, final))
        if is_dir:
            (tmp / MARKER).write_text("written by genointerp; `--force` may replace this folder\n")
        TEMP_NAMES[str(tmp)] = str(target)
        TEMP_NAMES[os.path.abspath(tmp)] = str(target)
        return tmp

    def _check_inputs(self, target, real: str, is_dir: bool) -> None:
        for source in self._inputs:
            if source == real:
                raise UsageError(f"{target}: output would replace the input {source}; choose another name")
            if is_dir and source.startswith(real.rstrip(os.sep) + os.sep):
                raise UsageError(f"{target}: output folder holds the input {source}; choose another name")

    def _check_replaceable(self, target, final: Path, is_dir: bool) -> None:
        if not is_dir and final.is_dir():
            raise InputError(f"{target}: is a folder; this output is a file")
        if is_dir and not final.is_dir():
            raise InputError(f"{target}: exists and is not a folder; this output is a folder")
        if not self.force:
            raise InputError(f"{target}: output exists; remove it or pass --force to overwrite")
        if is_dir:
            check_replaceable_folder(final, str(target))

    def file(self, target: str | os.PathLike) -> Path:
        """Reserve `target` and return the temporary file path to write instead."""
        return self._reserve(target, is_dir=False)

    def folder(self, target: str | os.PathLike) -> Path:
        """Reserve folder `target` and return an empty temporary folder (holding MARKER) to fill instead."""
        return self._reserve(target, is_dir=True)

    def files(self, *targets: str | None) -> dict[str, str]:
        """Reserve file outputs given as options: {target: path to write}, `-` mapping to itself.

        None (an option not given) is skipped; at most one target may be stdout.
        """
        given = [t for t in targets if t is not None]
        if given.count(STDOUT) > 1:
            raise UsageError("only one output can be - (stdout)")
        return {t: t if t == STDOUT else str(self.file(t)) for t in given}

    @contextmanager
    def streams(self, *targets: str | None, plain: Iterable[str | None] = ()) -> Iterator[dict[str, BinaryIO]]:
        """Reserve file outputs given as options (as `files` does) and open them: {target: binary
        stream to write}, stdout for `-`, gzip-compressed when the target's name ends in .gz unless it
        is one of `plain` (written as is whatever its name). The streams are closed on leaving, before
        the outputs are committed."""
        paths = self.files(*targets)
        as_is = {t for t in plain if t is not None}
        with ExitStack() as stack:
            yield {t: stack.enter_context(open_output(path, gz=t not in as_is and wants_gzip(t)))
                   for t, path in paths.items()}

    def commit(self) -> None:
        """Rename every temporary to its target. Signals wait until all are in place: a set of
        outputs is never left half renamed."""
        with deferred():
            while self._pending:
                tmp, final = self._pending[0]
                os.chmod(tmp, (0o777 if tmp.is_dir() else 0o666) & ~_umask())  # mkdtemp/mkstemp make 0700/0600
                if tmp.is_dir() and final.is_dir():
                    # move the old folder aside first so that `final` is never missing and never mixed
                    old = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, suffix=".old", dir=final.parent))
                    os.replace(final, old / "x")
                    os.replace(tmp, final)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(tmp, final)
                self._pending.pop(0)

    def discard(self) -> None:
        for tmp, _ in self._pending:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
        self._pending.clear()

    def __enter__(self) -> "AtomicOutputs":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.discard()
            return
        try:
            self.commit()
        except BaseException:  # e.g. a full disk: what is not in place yet must not stay behind
            self.discard()
            raise


def check_replaceable_folder(folder: Path, name: str) -> None:
    """Refuse to delete `folder` unless genointerp wrote it (MARKER) and it is not a folder the
    user works in: `/`, home, the working folder or one of its parents."""
    real = Path(os.path.realpath(folder))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == Path(real.anchor) or real == Path(os.path.realpath(Path.home())) or real == cwd or real in cwd.parents:
        raise UsageError(f"{name}: refusing to replace {real} (the root, home or working folder or one of its parents)")
    if not (real / MARKER).is_file():
        raise InputError(f"{name}: exists and was not written by genointerp (no {MARKER} file in it); "
                         "remove it yourself or choose another name")


def _through_links(path: Path) -> Path:
    """A symbolic link's final target (even a dangling one), so outputs are written through links."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_readable(path: str | os.PathLike) -> None:
    """Give a file the permissions a plain open() would (some writers, e.g. safetensors, use 0600):
    models must be readable by other users in shared installs and Apptainer images."""
    os.chmod(path, 0o666 & ~_umask())


@contextmanager
def open_output(path: Path | str, *, gz: bool) -> Iterator[BinaryIO]:
    """Open a (temporary) output path, or stdout for `-`, as a binary stream.

    gzip output has a zero timestamp and no file name in its header so that the same data give
    byte-identical files.
    """
    if str(path) == STDOUT:
        raw: BinaryIO = sys.stdout.buffer
        close_raw = False
    else:
        raw = open(path, "wb")
        close_raw = True
    try:
        if gz:
            with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0, compresslevel=6) as z:
                with io.BufferedWriter(z, buffer_size=1 << 20) as buffered:
                    yield buffered
        else:
            yield raw
    finally:
        if close_raw:
            raw.close()
        else:
            raw.flush()


def wants_gzip(name: str | os.PathLike) -> bool:
    return str(name).endswith(".gz")
