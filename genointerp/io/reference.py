"""Random access to an indexed reference FASTA (plain, or bgzip with .fai + .gzi) through pysam.

The track pipeline reads thousands of windows from one chromosome, so the FASTA must be indexed:
a missing index is an error that tells the user how to make it (pysam would otherwise write a
.fai next to the user's file without asking, or fail on a read-only data folder).

Chromosome names from other files (BED, bigWig, narrowPeak) are matched to the reference's own
names with `chr20` <-> `20` aliasing, one warning per file and name.
"""

from __future__ import annotations

import gzip
import os
from typing import Callable

import numpy as np
import pysam

from genointerp.errors import InputError
from genointerp.io.chroms import chrom_alias
from genointerp.io.inputs import check_readable, compression, is_stream
from genointerp.seq.alphabet import N_CODE, encode_ascii

pysam.set_verbosity(0)  # htslib's stderr chatter would duplicate our one-line errors

Warn = Callable[[str], None]


def _quiet(msg: str) -> None:
    pass


def _check_fasta_file(path: str) -> None:
    """Refuse what pysam would misread or re-index: raise InputError with the fix, one line."""
    check_readable(path)
    if is_stream(path):
        raise InputError(f"{path}: a pipe or stdin cannot be indexed; the reference must be an indexed FASTA "
                         "file (`samtools faidx`)")
    kind = compression(path)
    if kind != "NONE":
        if kind != "BGZF":  # plain gzip cannot be indexed
            raise InputError(
                f"{path}: gzip-compressed but not bgzip; random access needs "
                f"`zcat {path} | bgzip > ref.fa.gz && samtools faidx ref.fa.gz`"
            )
        try:
            with gzip.open(path, "rb") as fh:
                first = fh.read(1)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: not a valid bgzip file ({exc})") from None
        if not os.path.exists(path + ".gzi"):
            raise InputError(f"{path}: no bgzip index {path}.gzi; create it with `samtools faidx {path}`")
    else:
        with open(path, "rb") as fh:
            first = fh.read(1)
    if first != b">":
        raise InputError(f"{path}: not a FASTA file (it does not start with '>')")
    if not os.path.exists(path + ".fai"):
        raise InputError(f"{path}: no index {path}.fai; create it with `samtools faidx {path}`")


_CHECKED_CONTIGS = 32  # at each end of the .fai: a rewrapped FASTA moves every contig, so a sample shows it


def _stale_index(path: str, what: str) -> str:
    return (f"{path}.fai does not match {path} ({what}; was the FASTA changed after it was indexed?): "
            f"re-index it with `samtools faidx {path}`")


def _byte_reader(path: str) -> tuple[Callable[[int, int], bytes], Callable[[], None]]:
    """(read(offset, n) -> the n bytes at uncompressed `offset`, close) for a plain or bgzip FASTA;
    bgzip through its .gzi (the compressed start of each block), as faidx reads it."""
    if compression(path) == "NONE":
        fh = open(path, "rb")

        def read(offset: int, n: int) -> bytes:
            fh.seek(offset)
            return fh.read(n)

        return read, fh.close
    import bisect
    import struct

    from pysam.libcbgzf import BGZFile

    with open(path + ".gzi", "rb") as g:
        raw = g.read()
    count = struct.unpack_from("<Q", raw)[0] if len(raw) >= 8 else 0
    pairs = struct.unpack_from(f"<{2 * count}Q", raw, 8) if len(raw) >= 8 + 16 * count else ()
    compressed, uncompressed = [0, *pairs[0::2]], [0, *pairs[1::2]]
    bz = BGZFile(path, "rb")

    def read_bgzf(offset: int, n: int) -> bytes:
        k = bisect.bisect_right(uncompressed, offset) - 1
        bz.seek((compressed[k] << 16) | (offset - uncompressed[k]))  # a BGZF virtual offset
        return bz.read(n)

    return read_bgzf, bz.close


def _check_index_matches(path: str) -> None:
    """Refuse a .fai that no longer describes the FASTA (rewrapped or edited after `samtools faidx`):
    htslib trusts its offsets and line lengths and hands back line ends, headers or shifted bases as
    sequence. For the first and last contigs of the index, the byte before the sequence must end the
    header line, the first line must hold `linebases` bases then its line end, and the last base
    must be followed by a line end or the end of the file."""
    try:
        with open(path + ".fai") as fh:
            rows = [line.split("\t") for line in fh if line.strip()]
        entries = [(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]
    except (OSError, ValueError, IndexError):
        return  # pysam opened it; a damaged index fails on fetch with pysam's own message
    if len(entries) > 2 * _CHECKED_CONTIGS:
        entries = entries[:_CHECKED_CONTIGS] + entries[-_CHECKED_CONTIGS:]
    try:
        read, close = _byte_reader(path)
    except (OSError, ValueError):
        return
    try:
        for name, length, offset, line_bases, line_width in entries:
            if length == 0 or line_bases <= 0:
                continue
            problem = None
            if offset == 0 or read(offset - 1, 1) != b"\n":
                problem = "no header line end before it"
            elif length > line_bases:
                first = read(offset + line_bases - 1, line_width - line_bases + 2)
                if first[:1] in (b"", b"\n", b"\r", b">") or first[1:-1].strip(b"\r\n") or first[-1:] in (b"\n", b"\r", b">"):
                    problem = f"its lines are not {line_bases} bases long"
            if problem is None:
                last = offset + (length - 1) // line_bases * line_width + (length - 1) % line_bases
                tail = read(last, 2)
                if tail[:1] in (b"", b"\n", b"\r", b">") or tail[1:2] not in (b"", b"\n", b"\r"):
                    problem = f"its sequence does not end after {length:,} bases"
            if problem:
                raise InputError(_stale_index(path, f"contig {name}: {problem}"))
    except (OSError, ValueError) as exc:
        raise InputError(_stale_index(path, f"cannot read where it points ({exc})")) from None
    finally:
        close()


class Reference:
    """An indexed FASTA: `names` (list, .fai order), `lengths` (dict name -> bp), `codes()`.

    Use as a context manager or call close(). Pickles by path (reopened on unpickling), so it can
    travel to DataLoader worker processes without sharing an htslib handle.
    """

    def __init__(self, path: str, warn: Warn | None = None) -> None:
        self.path = str(path)
        self.warn = warn or _quiet
        _check_fasta_file(self.path)
        try:
            self._fa = pysam.FastaFile(self.path)
        except (OSError, ValueError) as exc:
            raise InputError(f"{self.path}: cannot open as indexed FASTA ({exc})") from None
        self.names: list[str] = list(self._fa.references)
        self.lengths: dict[str, int] = dict(zip(self._fa.references, self._fa.lengths))
        if not self.names:
            raise InputError(f"{self.path}: no sequences in the FASTA index")
        _check_index_matches(self.path)
        self._warned: set[tuple[str, str]] = set()

    # --- names -----------------------------------------------------------------------------
    def resolve(self, name: str, source: str, warn: Warn | None = None) -> str:
        """The reference's own name for chromosome `name` as spelled in `source` (a file name).

        `chr20` <-> `20` (and chrM <-> MT) are accepted with one warning per (source, name), sent
        to `warn` (default: the Reference's). Unknown names raise InputError naming the source.
        """
        if name in self.lengths:
            return name
        alias = chrom_alias(name, self.lengths)
        if alias is None:
            shown = ", ".join(self.names[:5]) + (", ..." if len(self.names) > 5 else "")
            raise InputError(f"{source}: chromosome {name} is not in the reference {self.path} (it has {shown})")
        if (source, name) not in self._warned:
            self._warned.add((source, name))
            (warn or self.warn)(f"{source}: chromosome {name} taken as {alias} of the reference {self.path}")
        return alias

    def length(self, chrom: str) -> int:
        """Length in bp of reference chromosome `chrom` (the reference's own spelling)."""
        try:
            return self.lengths[chrom]
        except KeyError:
            raise InputError(f"{self.path}: no chromosome {chrom}") from None

    # --- sequence --------------------------------------------------------------------------
    def codes(self, chrom: str, start: int, end: int) -> np.ndarray:
        """uint8 codes (end - start,) of chrom[start:end]: A=0 C=1 G=2 T=3, N/IUPAC=4.

        Positions outside [0, length) come back as N (4), so windows that hang over a chromosome
        end are padded rather than shortened (every window keeps the model's input length).
        """
        if end < start:
            raise ValueError(f"codes: end {end} < start {start}")
        length = self.length(chrom)
        out = np.full(end - start, N_CODE, dtype=np.uint8)
        lo, hi = max(start, 0), min(end, length)
        if lo < hi:
            seq = self._fa.fetch(chrom, lo, hi)
            if "\n" in seq or ">" in seq:  # line ends or a header where the index promised bases
                raise InputError(_stale_index(self.path, f"{chrom}:{lo + 1}-{hi} holds line ends or a header"))
            out[lo - start : hi - start] = encode_ascii(seq.encode("ascii", errors="replace"))
        # 255 (not a nucleotide letter) would break one_hot; such a FASTA byte means "no base".
        out[out > N_CODE] = N_CODE
        return out

    # --- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_fa", None) is not None:
            self._fa.close()
            self._fa = None

    def __enter__(self) -> "Reference":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])

    def __repr__(self) -> str:
        return f"Reference({self.path!r}, {len(self.names)} sequences)"
