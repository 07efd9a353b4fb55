"""What a path names, however it is spelt: the same file by another name or link, stdin and stdout
by their /dev names, and the files a C library reads beside an input by name (its indexes).

The checks of inputs against inputs (two options naming one file) and of outputs against inputs
and each other (genointerp.io.atomic) compare what these functions say, never the strings given.
"""

from __future__ import annotations

import os
import re

STDIO = "-"

_FD_FOLDER = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd")

# what htslib and faidx read beside a file of that name (FASTA .fai/.gzi, BAM .bai/.csi, CRAM
# .crai, bgzipped tables .tbi/.csi), and the index names without the data file's extension
INDEX_SUFFIXES = (".fai", ".gzi", ".bai", ".csi", ".tbi", ".crai")
_INDEX_REPLACING = ((".bam", ".bai"), (".bam", ".csi"), (".cram", ".crai"))


def own_descriptor(path: str | os.PathLike) -> int | None:
    """N when `path` names this process's open file descriptor N: `/dev/stdout`, `/dev/fd/N`,
    `/proc/self/fd/N` (what `>(...)` passes), through any links; otherwise None."""
    step = os.path.abspath(path)
    for _ in range(40):  # a link loop ends the search
        head, tail = os.path.split(step)
        folder = _FD_FOLDER.fullmatch(os.path.realpath(head))
        if folder is not None and tail.isdigit():
            return int(tail) if int(folder[1]) == os.getpid() else None
        if not os.path.islink(step):
            return None
        step = os.path.normpath(os.path.join(head, os.readlink(step)))
    return None


def names_stdin(path: str | os.PathLike | None) -> bool:
    """`-`, `/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`."""
    return path is not None and (str(path) == STDIO or own_descriptor(path) == 0)


def names_stdout(path: str | os.PathLike | None) -> bool:
    """`-`, `/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`."""
    return path is not None and (str(path) == STDIO or own_descriptor(path) == 1)


def file_id(path: str | os.PathLike) -> tuple[int, int] | None:
    """(device, inode) of what `path` names now (through links and descriptors), None if nothing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def same_input(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two input paths name one input: both stdin, or one file by any two names."""
    if names_stdin(a) or names_stdin(b):
        return names_stdin(a) and names_stdin(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    ida = file_id(a)
    return ida is not None and ida == file_id(b)


def read_beside(path: str) -> list[str]:
    """The index files a library may read (or, for a FASTA, write) beside input `path`, by name."""
    names = [path + suffix for suffix in INDEX_SUFFIXES]
    names += [path[: -len(ext)] + index for ext, index in _INDEX_REPLACING if path.endswith(ext)]
    return names
