"""All-or-nothing outputs: write to hidden temporaries beside the targets, rename on success.

A command registers every output it will write up front (so an existing file is refused before
any work starts), writes to the temporary paths, and the context manager renames them all when
the body finishes without an exception, or deletes them all when it fails. `-` means stdout and
is streamed directly (a pipe cannot be un-written).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from genointerp.errors import InputError

STDOUT = "-"


class AtomicOutputs:
    """A set of output files/folders committed together. Use as a context manager."""

    def __init__(self, force: bool = False) -> None:
        self.force = force
        self._pending: list[tuple[Path, Path]] = []  # (temporary, final)

    def _reserve(self, target: str | os.PathLike, is_dir: bool) -> Path:
        final = Path(target)
        if any(final.resolve() == f.resolve() for _, f in self._pending):
            raise InputError(f"{final}: the same output path is given twice")
        if final.exists() and not self.force:
            raise InputError(f"{final}: output exists; remove it or pass --force to overwrite")
        if not final.parent.is_dir():
            raise InputError(f"{final}: output folder {final.parent} does not exist")
        # hidden, and ending in the target's own name so that its extension (.gz) still applies
        prefix, suffix = ".genointerp-tmp-", f".{final.name}"
        if is_dir:
            tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=final.parent))
        else:
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=final.parent)
            os.close(fd)
            tmp = Path(name)
        self._pending.append((tmp, final))
        return tmp

    def file(self, target: str | os.PathLike) -> Path:
        """Reserve `target` and return the temporary file path to write instead."""
        return self._reserve(target, is_dir=False)

    def folder(self, target: str | os.PathLike) -> Path:
        """Reserve folder `target` and return an empty temporary folder to fill instead."""
        return self._reserve(target, is_dir=True)

    def commit(self) -> None:
        for tmp, final in self._pending:
            if tmp.is_dir():
                os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700 folders
                if final.exists():
                    shutil.rmtree(final) if final.is_dir() else final.unlink()
            else:
                os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files
            os.replace(tmp, final)
        self._pending.clear()

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
        if exc_type is None:
            self.commit()
        else:
            self.discard()


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
