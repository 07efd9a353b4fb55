"""A user's input, opened once: a regular file, `-` (stdin), a named pipe or `<(process substitution)`.

Pipes can be read only once, so nothing here reopens a path to sniff it: the first bytes are
peeked from the one buffered stream that is then read, gzip and bgzip are recognised by their
magic bytes (not by the name), and every failure of the stream (a missing file, a folder, a
truncated or corrupt gzip member, bytes that are not UTF-8 text) becomes one InputError naming the
user's path. Readers that hand a path to a C library (pysam, pyBigWig, faidx) use `is_stream` to
tell whether they may open it again.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from contextlib import contextmanager
from typing import BinaryIO, Iterator, TextIO

from isal import igzip, isal_zlib

from genointerp.errors import InputError

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, isal_zlib.error)  # what reading damaged gzip data raises


def check_readable(path: str | os.PathLike) -> None:
    """Refuse a missing path or a folder with one line (stdin is always readable)."""
    path = str(path)
    if path == STDIN:
        return
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a folder, not a file")


def compression(path: str | os.PathLike) -> str:
    """'BGZF', 'GZIP' or 'NONE' from a regular file's first bytes: BGZF (bgzip, indexable) is gzip
    whose first member carries the 'BC' extra field."""
    with open(path, "rb") as fh:
        head = fh.read(18)
    if not head.startswith(GZIP_MAGIC):
        return "NONE"
    return "BGZF" if len(head) >= 14 and head[3] & 4 and head[12:14] == b"BC" else "GZIP"


def is_stream(path: str | os.PathLike) -> bool:
    """True for stdin, a named pipe, `/dev/fd/N` of a process substitution or any other input
    that is not a regular file: it can be read once, front to back, and not reopened."""
    path = str(path)
    if path == STDIN:
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _stdin() -> BinaryIO:
    """stdin as a file object of this reader's own, over a duplicate of descriptor 0. A reading
    thread (io.sequences' feed) may still be blocked in it when a signal ends the command, and the
    interpreter's shutdown then takes sys.stdin.buffer's lock: a private object keeps that lock
    free (else: "Fatal Python error: could not acquire lock for <stdin>", exit 134, not 128 + n).
    Where stdin has no descriptor (a test runner's), sys.stdin.buffer itself."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return sys.stdin.buffer
    return open(os.dup(fd), "rb")


@contextmanager
def open_binary(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """The bytes of an input, gzip/bgzip (multi-member) decompressed when the data say so.

    A name ending in `.gz` whose content is not gzip is refused (a pipeline mix-up worth a clear
    line); an empty input reads as empty. Decompression errors while the caller reads become
    InputError("PATH: truncated or corrupt gzip data").
    """
    path = str(path)
    check_readable(path)
    raw: BinaryIO
    try:
        raw = _stdin() if path == STDIN else open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    owned = raw is not sys.stdin.buffer
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
    try:
        head = buffered.peek(2)[:2]
        if head == GZIP_MAGIC:
            # ISA-L's inflate (python-isal), 2-4x zlib's pace: a gzipped FASTQ is inflated by the one
            # process that hands its reads out (genointerp.io.fastq_text)
            stream: BinaryIO = io.BufferedReader(igzip.IGzipFile(fileobj=buffered, mode="rb"), 1 << 20)  # type: ignore[arg-type]
        elif path.endswith(".gz") and head:
            raise InputError(f"{path}: file name ends in .gz but the content is not gzip-compressed")
        else:
            stream = buffered
        try:
            yield stream
        except GZIP_ERRORS as exc:
            raise InputError(f"{path}: truncated or corrupt gzip data ({exc or type(exc).__name__})") from None
    finally:
        if owned:
            raw.close()


@contextmanager
def open_text(path: str | os.PathLike) -> Iterator[TextIO]:
    """An input as UTF-8 text (universal newlines), via `open_binary`. Bytes that are not UTF-8
    (a binary file, a BAM given where a table belongs) become one InputError."""
    with open_binary(path) as data:
        text = io.TextIOWrapper(data, encoding="utf-8", newline=None)  # type: ignore[arg-type]
        try:
            yield text
        except UnicodeDecodeError:
            raise InputError(f"{path}: not a text file (it holds bytes that are not UTF-8 text)") from None
        finally:
            text.detach()


def read_lines(path: str | os.PathLike) -> list[str]:
    """All lines of a text input, without their line ends."""
    with open_text(path) as fh:
        text = fh.read()
    if "\x00" in text:
        raise InputError(f"{path}: not a text file (it holds NUL bytes)")
    return text.splitlines()


def first_duplicate(names: list[str]) -> str | None:
    """The first name that occurs a second time in `names` (sample ids, column names), or None."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def read_head(path: str | os.PathLike, n: int = 4096) -> bytes:
    """The first `n` (decompressed) bytes of a regular file, for sniffing its format before a C
    library opens it by name. Not for streams: those cannot be reopened (see `is_stream`)."""
    with open_binary(path) as data:
        return data.read(n)


# first bytes (after gzip) -> what a file holding them is, for errors that name what was given
_SIGNATURES = ((b"BAM\x01", "BAM"), (b"CRAM", "CRAM"), (b"BCF\x02", "BCF"), (b"\x89PNG", "a PNG image"),
               (b"\xff\xd8\xff", "a JPEG image"), (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a ZIP archive"),
               (b"\x93NUMPY", "a NumPy array"), (b"bigWig", "bigWig"), (b"\x26\xfc\x8f\x88", "bigWig"),
               (b"##fileformat=VCF", "VCF"), (b"@HD\t", "SAM"), (b"@SQ\t", "SAM"), (b"LOCUS", "GenBank"),
               (b"@", "FASTQ"), (b">", "FASTA"))


def looks_like(head: bytes) -> str:
    """What a file whose first decompressed bytes are `head` holds, in words ("FASTQ", "a PNG
    image", "empty", "binary data", "text"): named in the one-line error of a reader given the
    wrong kind of file, in place of its library's internals or the raw bytes."""
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            return what
    if not head.strip():
        return "empty"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of `head`
            return "binary data"
    return "binary data" if b"\x00" in head else "text"


def wrong_kind(path: str | os.PathLike, expected: str, hint: str = "") -> InputError:
    """InputError "PATH: not EXPECTED (it holds WHAT)[; HINT]" for a reader given another kind of file;
    what it holds is told from a regular file's first bytes (a stream is not read again)."""
    what = ""
    if not is_stream(path):
        try:
            what = f" (it holds {looks_like(read_head(path, 512))})"
        except (InputError, OSError):
            pass
    return InputError(f"{path}: not {expected}{what}{'; ' + hint if hint else ''}")


def check_gzip_intact(path: str | os.PathLike) -> None:
    """Decompress a regular gzip/bgzip file to its end (a plain file is not read further), raising
    the one-line InputError of truncated or corrupt gzip data if it is damaged. For readers whose C
    library (htslib) reports a cut-off gzip file only as a parse error: called on that error path,
    it names the real cause."""
    with open_binary(path) as data:
        if isinstance(getattr(data, "raw", None), gzip.GzipFile):
            while data.read(1 << 20):
                pass
