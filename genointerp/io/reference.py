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
