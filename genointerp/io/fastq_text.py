"""FASTQ files read in compiled code where their records are plain, by pysam where they are not.

classify-reads' own process parses every read before its workers see it, so the parse is the part
of a run that more workers cannot share. pysam's (htslib kseq, then a property call and a UTF-8
decode per field) took about 60 % of that process's work per batch. genointerp/_fastq.c reads the
records nearly every FASTQ file holds (four lines, printable ASCII; see there) from the
decompressed text, several times faster. At the first record it does not call plain, it stops, and
pysam reads the file from that record on (genointerp.io.sequences' reader, told how many records
came before): odd records, and every error about them, are pysam's and the checks' as before. A
damaged gzip file is refused with the line io.inputs gives it, as when pysam reads it.
"""

from __future__ import annotations

from typing import Callable, Iterator

from genointerp import _fastq
from genointerp.io.inputs import open_binary

LIMIT, MORE, ODD, END = 0, 1, 2, 3  # why _fastq.records stopped (genointerp/_fastq.c)
BLOCK = 1 << 20  # decompressed bytes read at a time

Records = list[tuple[str, str, str]]


def plain_batches(path: str, size: int, rest: Callable[[int, str | None], Iterator[Records]]) -> Iterator[Records]:
    """The records (name, sequence, quality) of a regular FASTQ file, in lists: the first record
    alone, then up to `size` at a time. Where a record is not plain, `rest(n, name)` gives the
    lists from there on: n records came before it, the last named `name` (None where n is 0)."""
    n, name = 0, None
    want = 1  # the first record alone, so that a caller sees it before the rest are read
    text, at, final = b"", 0, False
    batch: Records = []
    why = LIMIT
    with open_binary(path) as data:
        while why != ODD and why != END:
            got, at, why = _fastq.records(text, at, want - len(batch), final)
            batch += got
            if why == MORE:
                block = data.read1(BLOCK)
                text, at, final = text[at:] + block, 0, not block
            elif why == LIMIT or (batch and why == END):
                n, name = n + len(batch), batch[-1][0]
                yield batch
                batch, want = [], size
    if batch:
        n, name = n + len(batch), batch[-1][0]
        yield batch
    if why == ODD:
        yield from rest(n, name)
    elif n == 0:
        yield from rest(0, None)  # nothing at all: pysam's reader says so as for any file
