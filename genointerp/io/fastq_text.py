"""FASTQ read in compiled code where its records are plain, by pysam where they are not.

classify-reads' own process parses every read before its workers see it, so the parse is the part
of a run that more workers cannot share. pysam's (htslib kseq, then a property call and a UTF-8
decode per field) took about 60 % of that process's work per batch. genointerp/_fastq.c reads the
records nearly every FASTQ file holds (four lines, printable ASCII; see there) from the
decompressed text, several times faster. At the first record it does not call plain, it stops, and
pysam reads the input from that record on (genointerp.io.sequences, told how many records came
before): odd records, and every error about them, are pysam's and the checks' as before.

Why not dnaio (cutadapt's FASTQ parser): on 200,000 reads of 150 bp simulated from the HPV genomes
it takes 1.5-2.2x this reader's time from a plain file and 1.0-1.15x from gzip (benchmarks/formats.py,
"FASTQ records"; the same records), and it reads other records than kseq: a sequence line that
starts with '+' or '@' is a sequence to dnaio and a cut-off record to kseq (an error), a name ends
at a space or tab but not at another blank (\v, \f), and `@r x` followed by `+r` (the '+' line
repeating the name without its comment) is an error to dnaio. Put in front of pysam, it would
change the records or the error of such files; this reader stops at them and lets pysam read on.
"""

from __future__ import annotations

from typing import Callable, Iterator

from genointerp import _fastq

LIMIT, MORE, ODD, END = 0, 1, 2, 3  # why _fastq.records stopped (genointerp/_fastq.c)
BLOCK = 1 << 20  # decompressed bytes read at a time

Records = list[tuple[str, str, str]]


def plain_batches(readinto: Callable[[memoryview], int], size: int,
                  rest: Callable[[bytes, int, str | None], Iterator[Records]]) -> Iterator[Records]:
    """The records (name, sequence, quality) of the FASTQ text that `readinto` puts into a buffer
    a block at a time (returning 0 at its end, as a binary file's `readinto1`), in lists: the first
    record alone, then up to `size` at a time. Where a record is not plain, `rest(text, n, name)`
    gives the lists from there on: `text` holds the input from that record up to where the reading
    stopped, and n records came before it, the last named `name` (None where n is 0).

    The text goes into one buffer, used again and again (a record cut by a block's end is moved to
    its front; a record longer than the buffer doubles it): a new 1 MiB bytes object per block (a
    `read1`, then the cut record joined to it) is two fresh memory maps from malloc, whose pages
    fault in as they are written, and made the whole read 1.7x slower (benchmarks/formats.py:
    200,000 reads of 150 bp, 0.23 s against 0.13 s from a plain file)."""
    n, name = 0, None
    want = 1  # the first record alone, so that a caller sees it before the rest are read
    buf, end, at, final = bytearray(BLOCK), 0, 0, False  # the text is buf[:end], records from `at` on
    batch: Records = []
    while True:
        with memoryview(buf) as view, view[:end] as text:  # released at once: buf is moved into and grown
            got, at, why = _fastq.records(text, at, want - len(batch), final)
        batch += got
        if why == MORE:
            left = end - at
            buf[:left] = buf[at:end]
            if left == len(buf):
                buf += bytes(len(buf))
            with memoryview(buf) as view, view[left:] as room:
                got_bytes = readinto(room)
            end, at, final = left + got_bytes, 0, got_bytes == 0
        elif why == LIMIT:
            n, name = n + len(batch), batch[-1][0]
            yield batch
            batch, want = [], size
        else:  # END or ODD
            break
    if batch:
        n, name = n + len(batch), batch[-1][0]
        yield batch
    if why == ODD or n == 0:  # nothing at all: pysam's reader says so as for any input
        yield from rest(bytes(buf[at:end]), n, name)
