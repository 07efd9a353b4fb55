"""All-or-nothing outputs: write to hidden temporaries beside the targets, rename on success.

A command registers its inputs and every output it will write up front, so that an existing
file, an output that would replace an input, or a folder genointerp never wrote is refused
before any work starts. It writes to the temporary paths, and the context manager renames them
all when the body finishes without an exception, or deletes them all when it fails (SIGINT,
SIGTERM and SIGHUP arrive as exceptions, see genointerp/interrupts.py). `-` means stdout and is
streamed directly (a pipe cannot be un-written); so are the other files that are not files to
replace: a device (`/dev/null`), a FIFO, and `/dev/stdout`, `/dev/fd/N` or `/proc/self/fd/N`
(process substitution, `-o >(gzip > c.gz)`), which write to the open file the shell handed over.
gzip still applies by name.

The `--force` rules, in one place:
- a file output may replace an existing file, never a folder;
- a folder output may replace only a folder that genointerp wrote (it holds the MARKER file),
  never `/`, the home folder, the working folder or one of its parents;
- an output never replaces an input, and a folder output never holds one;
- a symbolic link as output is written through: its target is replaced, the link stays;
- a device, FIFO or open file descriptor is written to, never replaced (a block device only with
  `--force`);
- the rules hold at the rename as at the start: what appeared at a target during the run is
  checked again before any output is renamed (without `--force` nothing may be there; a folder
  genointerp did not write is never deleted), and the renames do not replace (renameat2
  RENAME_NOREPLACE, else a hard link), so two runs into one output cannot both succeed. A set of
  outputs is renamed all or nothing: a rename that fails puts back those already done.

Temporaries are named `.genointerp-tmp-HOST-PID-XXXXXXXX.NAME` (HOST: this host and PID
namespace). A run killed by SIGKILL cannot remove its own; the next run that commits NAME in
that folder removes those whose process is provably gone (same HOST, PID not alive).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import io
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from genointerp.errors import InputError, UsageError
from genointerp.interrupts import add_abandon, deferred, remove_abandon
from genointerp.io.bgzf import BgzfWriter
from genointerp.io.paths import file_id, names_stdout, own_descriptor, read_beside

STDOUT = "-"
MARKER = ".genointerp"  # in every output folder: proof that --force may replace it
TMP_PREFIX = ".genointerp-tmp-"
_OLD = "old-"  # after TMP_PREFIX: a replaced output moved aside until the whole set is in place

# Temporary path -> the user's path, for error messages raised while writing (an error should
# name the file the user asked for, not a hidden temporary). Kept for the process's lifetime:
# the messages are formatted after the temporaries are gone.
TEMP_NAMES: dict[str, str] = {}

# errors of a write that mean "this place cannot take the output"
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}


def user_facing(message: str) -> str:
    """`message` with every temporary path replaced by the output it stands for."""
    for tmp, final in TEMP_NAMES.items():
        message = message.replace(tmp, final)
    return message


class _Live:
    """The AtomicOutputs now entered, and what became of stdout: a closed stdout is dropped (its
    data discarded) while file outputs are pending, so that they are still finished."""

    sets: list["AtomicOutputs"] = []
    stdout_dropped = False
    lost: list[str] = []  # file outputs discarded because stdout closed (a write that bypassed the sink)


def stdout_lost_outputs() -> list[str]:
    """The file outputs not written because stdout was closed under a write that could not drop it."""
    return list(_Live.lost)


class AtomicOutputs:
    """A set of output files/folders committed together. Use as a context manager.

    `inputs` are the paths the command reads (files or folders; None and `-` are skipped): an
    output may neither be one of them nor, as a folder, contain one.
    """

    def __init__(self, force: bool = False, inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        self.force = force
        self._inputs: list[str] = []  # the inputs given, resolved
        self._read: dict[str, str] = {}  # every file the run reads, resolved -> how to name it in an error
        self._read_ids: dict[tuple[int, int], str] = {}  # the same by (device, inode), for the existing ones
        self._pending: list[tuple[Path, Path, str]] = []  # (temporary, final, the user's name)
        self._through: list[str] = []  # outputs written straight through (devices, FIFOs, descriptors)
        self._streams: dict[object, str] = {}  # "stdout" or (device, inode) of a through output -> its name
        self.protect(*inputs)

    def protect(self, *inputs: str | os.PathLike | None) -> None:
        """Add input paths that no output may replace: each input, every file inside an input
        folder (a model folder's config.json), and the indexes a library reads beside an input by
        its name (host.fa.fai, reads.bam.bai, calls.vcf.gz.tbi), however the output is spelt."""
        for given in inputs:
            if given is None or str(given) == STDOUT:
                continue
            real = os.path.realpath(given)
            self._inputs.append(real)
            self._reads(real, f"the input {given}")
            if os.path.isdir(real):
                for inside in _files_inside(real):
                    self._reads(inside, f"{inside}, inside the input folder {given}")
            else:
                for spelling in {os.path.abspath(given), real}:
                    for index in read_beside(spelling):
                        self._reads(os.path.realpath(index), f"{index}, the index of the input {given}")

    def _reads(self, real: str, what: str) -> None:
        try:
            st = os.stat(real)
        except (OSError, ValueError):
            st = None  # not there (yet): an index a library may still write
        if st is not None and stat.S_ISCHR(st.st_mode):
            return  # a terminal or /dev/null: not replaced by writing to it (stdin and stdout may share one)
        self._read.setdefault(real, what)
        if st is not None:
            self._read_ids.setdefault((st.st_dev, st.st_ino), what)

    def _reserve(self, target: str | os.PathLike, is_dir: bool) -> Path:
        if str(target) == STDOUT and is_dir:
            raise UsageError(f"{target}: this output is a folder and cannot go to stdout; name a folder")
        if not is_dir and str(target).endswith(("/", os.sep)):
            raise UsageError(f"{target}: ends in '/', the name of a folder; this output is a file")
        if not is_dir and _written_through(target):
            self._claim_stream(target)
            return self._straight_through(target)
        final = _through_links(Path(target))
        real = os.path.realpath(final)
        for tmp, f, name in self._pending:
            other = os.path.realpath(f)
            if real == other:
                raise UsageError(f"{target}: the same output path is given twice")
            if tmp.is_dir() and real.startswith(other.rstrip(os.sep) + os.sep):
                raise UsageError(f"{target}: inside the output folder {name}, which this run writes whole; "
                                 "choose a place outside it")
            if is_dir and other.startswith(real.rstrip(os.sep) + os.sep):
                raise UsageError(f"{target}: output folder would hold the output {name}; choose a place outside it")
        self._check_inputs(target, real, is_dir)
        if final.exists():
            self._check_replaceable(target, final, is_dir)
        if not final.parent.is_dir():
            raise InputError(f"{target}: output folder {final.parent} does not exist")
        # hidden, and ending in the target's own name so that its extension (.gz) still applies
        prefix, suffix = _tmp_prefix(), f".{final.name}"
        try:
            with deferred():  # a signal between creating and registering would leave it behind
                if is_dir:
                    tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=final.parent))
                else:
                    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=final.parent)
                    os.close(fd)
                    tmp = Path(name)
                self._pending.append((tmp, final, str(target)))
        except OSError as exc:  # e.g. a read-only folder: name the output, not the temporary
            raise InputError(f"{target}: cannot write here: {exc.strerror or exc}") from None
        TEMP_NAMES[str(tmp)] = str(target)
        TEMP_NAMES[os.path.abspath(tmp)] = str(target)
        if is_dir:
            (tmp / MARKER).write_text("written by genointerp; `--force` may replace this folder\n")
        return tmp

    def _straight_through(self, target) -> Path:
        """A device, FIFO or open descriptor: written to, never replaced (nothing of it to lose,
        except on a block device)."""
        fd = own_descriptor(target)
        if fd is not None:
            try:
                os.fstat(fd)
            except OSError:
                raise InputError(f"{target}: file descriptor {fd} is not open in this process") from None
        elif stat.S_ISBLK(os.stat(target).st_mode) and not self.force:
            raise InputError(f"{target}: is a block device; pass --force to write over it")
        self._check_inputs(target, os.path.realpath(target), False)
        self._through.append(str(target))
        return Path(target)

    def _check_inputs(self, target, real: str, is_dir: bool) -> None:
        read = self._read.get(real) or self._read_ids.get(file_id(real) or (-1, -1))
        if read is not None:
            raise UsageError(f"{target}: output would replace {read}, which this run reads; choose another name")
        for source in self._inputs:
            if is_dir and source.startswith(real.rstrip(os.sep) + os.sep):
                raise UsageError(f"{target}: output folder holds the input {source}; choose another name")

    def _check_replaceable(self, target, final: Path, is_dir: bool, during: bool = False) -> None:
        if not is_dir and final.is_dir():
            raise InputError(f"{target}: is a folder; this output is a file")
        if is_dir and not final.is_dir():
            raise InputError(f"{target}: exists and is not a folder; this output is a folder")
        if not is_dir and not final.is_file():
            raise InputError(f"{target}: exists and is not a regular file; not replaced")
        if not self.force:
            if during:
                raise InputError(f"{target}: appeared during this run (another run, or made by hand); "
                                 "nothing written: remove it or pass --force to overwrite")
            raise InputError(f"{target}: output exists; remove it or pass --force to overwrite")
        if is_dir:
            check_replaceable_folder(final, str(target))

    def file(self, target: str | os.PathLike) -> Path:
        """Reserve `target` and return the temporary file path to write instead (the target itself
        for a device, FIFO or descriptor, written straight through)."""
        return self._reserve(target, is_dir=False)

    def folder(self, target: str | os.PathLike) -> Path:
        """Reserve folder `target` and return an empty temporary folder (holding MARKER) to fill instead."""
        return self._reserve(target, is_dir=True)

    def files(self, *targets: str | None) -> dict[str, str]:
        """Reserve file outputs given as options: {target: path to write}, `-` mapping to itself.

        None (an option not given) is skipped; at most one target may be stdout.
        """
        given = [t for t in targets if t is not None]
        for t in given:
            if t == STDOUT:
                self._claim_stream(t)
        return {t: t if t == STDOUT else str(self.file(t)) for t in given}

    def _claim_stream(self, target: str | os.PathLike) -> None:
        """UsageError when an output written straight through goes where another one already does:
        stdout however spelt (`-`, `/dev/stdout`, `/dev/fd/1`), or one pipe or FIFO reached by two
        names. A character device (/dev/null, a terminal) may take any number."""
        if names_stdout(target):
            key: object = "stdout"
        else:
            key = file_id(target)
            if key is None or stat.S_ISCHR(os.stat(target).st_mode):
                return
        if key in self._streams:
            if key == "stdout":
                raise UsageError(f"{target}: only one output can be - (stdout), and {self._streams[key]} goes there too")
            raise UsageError(f"{target}: {self._streams[key]} names the same file; each output needs a file of its own")
        self._streams[key] = str(target)

    @contextmanager
    def streams(self, *targets: str | None, plain: Iterable[str | None] = ()) -> Iterator[dict[str, BinaryIO]]:
        """Reserve file outputs given as options (as `files` does) and open them: {target: binary
        stream to write}, stdout for `-`, gzip-compressed when the target's name ends in .gz unless it
        is one of `plain` (written as is whatever its name). The streams are closed on leaving, before
        the outputs are committed."""
        with open_streams(self.files(*targets), plain) as out:
            yield out

    def commit(self) -> None:
        """Rename every temporary to its target, all or nothing: every target is checked again first
        (something may have appeared there during the run), the renames never replace what they
        were not allowed to, and a rename that fails puts back those done before it. Signals wait
        until all are in place: a set of outputs is never left half renamed."""
        with deferred():
            for tmp, final, name in self._pending:  # every check before any rename
                if os.path.lexists(final):
                    self._check_replaceable(name, final, tmp.is_dir(), during=True)
            done: list[tuple[Path, Path | None]] = []  # (final, the old output moved aside or None)
            try:
                for tmp, final, name in self._pending:
                    os.chmod(tmp, (0o777 if tmp.is_dir() else 0o666) & ~_umask())  # mkdtemp/mkstemp make 0700/0600
                    done.append((final, self._put_in_place(tmp, final, name)))
            except BaseException:
                _roll_back(done)
                raise
            finals = [final for _, final, _ in self._pending]
            self._pending.clear()
            for _, old in done:
                if old is not None:
                    shutil.rmtree(old.parent, ignore_errors=True)
        for final in finals:
            remove_stale_temporaries(final)

    def _put_in_place(self, tmp: Path, final: Path, name: str) -> Path | None:
        """Rename `tmp` to `final`; returns where a replaced output was moved aside (None if none)."""
        if not os.path.lexists(final):
            try:
                _rename_noreplace(tmp, final)
                return None
            except FileExistsError:  # it appeared since the check: the same rules again
                self._check_replaceable(name, final, tmp.is_dir(), during=True)
        return _replace(tmp, final, name)

    def discard(self) -> None:
        for tmp, _, _ in list(self._pending):
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
        self._pending.clear()

    def _names(self) -> list[str]:
        return [name for _, _, name in self._pending] + self._through

    def __enter__(self) -> "AtomicOutputs":
        _Live.sets.append(self)
        self._abandon_key = add_abandon(self.discard)  # a run ended from the signal watchdog
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        _Live.sets.remove(self)
        remove_abandon(self._abandon_key)
        if exc_type is not None:
            names = self._names()
            if isinstance(exc, BrokenPipeError) and exc.filename is None and self._pending:
                _Live.lost += names
            self.discard()
            self._through.clear()
            cannot_write = _cannot_write(exc, names)
            if cannot_write is not None:
                raise cannot_write from None
            return
        try:
            self.commit()
        except BaseException as failed:  # e.g. a full disk: what is not in place yet must not stay behind
            names = self._names()
            self.discard()
            cannot_write = _cannot_write(failed, names)
            if cannot_write is not None:
                raise cannot_write from None
            raise
        finally:
            self._through.clear()


# past this many files in an input folder, an output anywhere inside it is refused (not listed)
_MOST_FILES_LISTED = 100_000


def _files_inside(folder: str) -> Iterator[str]:
    """Every file and folder below `folder`, resolved (a link inside points elsewhere); the folder
    itself again when it holds more than can be listed, so that nothing inside may be replaced."""
    n = 0
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            n += 1
            if n > _MOST_FILES_LISTED:
                yield folder
                return
            yield os.path.realpath(os.path.join(root, name))


def _cannot_write(exc: BaseException, names: list[str]) -> InputError | None:
    """A full disk, a read-only or forbidden place, as one error naming the output: the file the
    error names (a temporary is named as its output), or the outputs being written."""
    if not isinstance(exc, OSError) or exc.errno not in _WRITE_ERRNOS:
        return None
    if exc.filename is None:  # raised by a write: a full disk or quota, while writing these outputs
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or not names:
            return None
        where = " or ".join(names)
    else:
        where = user_facing(str(exc.filename))
        if where == str(exc.filename) and where not in names:
            return None  # not an output's (e.g. an input that cannot be read)
    return InputError(f"{where}: cannot write here: {exc.strerror or exc}")


def _replace(tmp: Path, final: Path, name: str) -> Path | None:
    """--force: replace `final` by `tmp`; the old output is kept aside (its path returned) until
    the whole set is in place, so that a failed commit can put it back."""
    aside = Path(tempfile.mkdtemp(prefix=_tmp_prefix(_OLD), suffix=f".{final.name}", dir=final.parent))
    old: Path | None = aside / "x"
    if not tmp.is_dir():
        try:
            os.link(final, old)  # a copy to put back; `final` itself is replaced in one step
        except OSError:  # no hard links on this file system: nothing to put back
            shutil.rmtree(aside, ignore_errors=True)
            old = None
        try:
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(aside, ignore_errors=True)
            raise
        return old
    try:
        os.rename(final, old)  # moved aside, then checked: it may have been swapped since the check
    except BaseException:
        shutil.rmtree(aside, ignore_errors=True)
        raise
    if not (old / MARKER).is_file():  # a folder genointerp did not write took its place
        _put_back(old, final, aside)
        check_replaceable_folder(final, name)
    try:
        _rename_noreplace(tmp, final)
    except BaseException:
        _put_back(old, final, aside)
        raise
    return old


def _put_back(old: Path, final: Path, aside: Path) -> None:
    """Return a folder moved aside to its place; if the place was taken meanwhile, keep it under a
    visible name (never deleted, never taken for a temporary)."""
    try:
        _rename_noreplace(old, final)
    except OSError:
        kept = final.with_name(f"{final.name}.kept-by-genointerp-{os.getpid()}")
        os.rename(aside, kept)
        raise InputError(f"{final}: changed during this run; the folder that was there is kept as {kept}") from None
    shutil.rmtree(aside, ignore_errors=True)


def _roll_back(done: list[tuple[Path, Path | None]]) -> None:
    """Undo renames of a commit that failed half way: new outputs removed, replaced ones put back."""
    for final, old in reversed(done):
        try:
            if old is None and final.is_dir():
                shutil.rmtree(final)
            elif old is None:
                final.unlink()
            elif old.is_dir():
                trash = Path(tempfile.mkdtemp(prefix=_tmp_prefix(_OLD), suffix=f".{final.name}", dir=final.parent))
                os.rename(final, trash / "x")
                os.rename(old, final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(old, final)
        except OSError:
            pass  # best effort: the error that made the commit fail is the one to report
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Rename `src` to `dst`, failing with FileExistsError when `dst` exists, also when it appears
    meanwhile: renameat2(RENAME_NOREPLACE) where the kernel and file system have it, else a hard
    link (files) or an exclusive mkdir that the rename then replaces only while empty (folders)."""
    if _renameat2_noreplace(src, dst):
        return
    if not src.is_dir():
        try:
            os.link(src, dst)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some FUSE/SMB mounts): check, then rename
            if os.path.lexists(dst):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst)) from None
            os.rename(src, dst)
            return
        os.unlink(src)
        return
    os.mkdir(dst)  # FileExistsError if anything is there
    try:
        os.rename(src, dst)  # replaces only an empty folder: ours, unless someone filled it meanwhile
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst)) from None
        os.rmdir(dst)
        raise


def _renameat2_noreplace(src: Path, dst: Path) -> bool:
    """renameat2(..., RENAME_NOREPLACE); False where it is not available (then nothing was done)."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    at_fdcwd, noreplace = -100, 1
    if fn(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False  # this file system or kernel has no RENAME_NOREPLACE
    if err == errno.EEXIST:
        raise FileExistsError(err, os.strerror(err), str(dst))
    raise OSError(err, os.strerror(err), str(src))


_RENAMEAT2: list = []


def _libc_renameat2():
    if not _RENAMEAT2:
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):  # not Linux, or a libc without it (glibc < 2.28)
            fn = None
        _RENAMEAT2.append(fn)
    return _RENAMEAT2[0]


def _host_token() -> str:
    """8 hex digits naming this host and PID namespace: a PID in a temporary's name means
    something only where this token matches (another container or node may share the folder)."""
    if not _HOST:
        parts = [socket.gethostname()]
        for path in ("/proc/sys/kernel/random/boot_id",):
            try:
                parts.append(Path(path).read_text().strip())
            except OSError:
                pass
        try:
            parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
        except OSError:
            pass
        _HOST.append(hashlib.sha1("\0".join(parts).encode()).hexdigest()[:8])
    return _HOST[0]


_HOST: list[str] = []


def _tmp_prefix(kind: str = "") -> str:
    return f"{TMP_PREFIX}{kind}{_host_token()}-{os.getpid()}-"


def remove_stale_temporaries(final: Path) -> None:
    """Remove the temporaries of `final` (same folder, same name) left by runs that were killed
    (SIGKILL, a crash): only those made on this host and PID namespace by a process that is gone."""
    pattern = re.compile(re.escape(TMP_PREFIX) + f"(?:{_OLD})?" + re.escape(_host_token())
                         + r"-(\d+)-[a-z0-9_]{8}" + re.escape(f".{final.name}"))
    try:
        entries = list(os.scandir(final.parent))
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or int(match[1]) == os.getpid() or _alive(int(match[1])):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass  # best effort: it is not this run's


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: someone else's process, alive
        return True
    return True


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


def _written_through(path: str | os.PathLike) -> bool:
    """Whether an output is written straight to `path`, not renamed over it: one of this process's
    descriptors, or an existing file that is neither a regular file nor a folder (a device, a FIFO,
    another process's pipe)."""
    if own_descriptor(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_readable(path: str | os.PathLike) -> None:
    """Give a file the permissions a plain open() would (some writers, e.g. safetensors, use 0600):
    models must be readable by other users in shared installs and Apptainer images. Only regular
    files written to (temporaries): never a device, FIFO or a file the shell opened (`/dev/stdout`)."""
    if own_descriptor(path) is None and stat.S_ISREG(os.stat(path).st_mode):
        os.chmod(path, 0o666 & ~_umask())


class _NamedFile(io.FileIO):
    """A file whose write errors name it (a full disk raises ENOSPC with no file name)."""

    def __init__(self, file, label: str) -> None:
        super().__init__(file, "wb")
        self.label = label

    def write(self, data) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = self.label
            raise


class _Stdout(io.RawIOBase):
    """stdout as an output stream. When the reader closes it (`| head`) while file outputs are
    pending, the rest of it is dropped and the command goes on to finish them: they are only
    complete if written whole, and the reader has taken what it wanted. With no file output
    pending, BrokenPipeError ends the command as before (exit 0, the `| head` idiom)."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if not _Live.stdout_dropped:
            try:
                sys.stdout.buffer.write(data)
            except BrokenPipeError:
                _drop_stdout_or_raise()
        return len(data)

    def flush(self) -> None:
        if not _Live.stdout_dropped:
            try:
                sys.stdout.buffer.flush()
            except BrokenPipeError:
                _drop_stdout_or_raise()


def _drop_stdout_or_raise() -> None:
    others = [t for outputs in _Live.sets for t in outputs._through if own_descriptor(t) != 1]
    if not (others or any(outputs._pending for outputs in _Live.sets)):
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
    _Live.stdout_dropped = True
    try:  # what is still buffered, and later writes (the interpreter's last flush), go nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


@contextmanager
def open_output(path: Path | str, *, gz: bool) -> Iterator[BinaryIO]:
    """Open a (temporary) output path, or stdout for `-`, as a binary stream. A path naming one of
    this process's descriptors (`/dev/stdout`, `/dev/fd/N`) writes to that descriptor as the shell
    opened it (appending after `>>`), never reopening it.

    gzip output is BGZF (genointerp.io.bgzf): gzip to every reader, indexable by tabix and faidx,
    and byte-identical for the same data (no time or name in its headers).
    """
    fd = 1 if str(path) == STDOUT else own_descriptor(path)
    if fd == 1:
        sys.stdout.flush()
        raw: BinaryIO = io.BufferedWriter(_Stdout(), buffer_size=1 << 16)
    elif fd is not None:
        raw = io.BufferedWriter(_NamedFile(os.dup(fd), str(path)))
    else:
        raw = io.BufferedWriter(_NamedFile(path, str(path)))
    try:
        if gz:
            with io.BufferedWriter(BgzfWriter(raw), buffer_size=1 << 20) as buffered:
                yield buffered
        else:
            yield raw
    finally:
        raw.close()


@contextmanager
def open_streams(paths: dict[str, str], plain: Iterable[str | None] = ()) -> Iterator[dict[str, BinaryIO]]:
    """Open outputs reserved earlier by `AtomicOutputs.files` ({target: path to write}), for a job
    that reserves its outputs before its work (so that a refused output costs nothing) and writes
    them after it: as `AtomicOutputs.streams` does."""
    as_is = {t for t in plain if t is not None}
    with ExitStack() as stack:
        yield {t: stack.enter_context(open_output(path, gz=t not in as_is and wants_gzip(t)))
               for t, path in paths.items()}


def wants_gzip(name: str | os.PathLike) -> bool:
    return str(name).endswith(".gz")
