"""BGZF writing: what every `.gz` output is, so that tabix, `bcftools index` and `samtools faidx`
accept it, while gzip, zcat and every gzip reader read it as before.

BGZF (the SAM/BAM specification, section 4.1) is a series of gzip members, each holding at most
64 KiB of data and naming its own compressed size in a `BC` extra field, closed by an empty member.
Blocks hold 0xff00 bytes of data, as htslib's do, so that even incompressible data fit the 64 KiB
limit on a block's compressed size. Headers carry no time and no name: the same data give the same
bytes (with the same zlib).

Why not a library's writer (benchmarks/formats.py, "BGZF write"; benchmarks/README.md): htslib's
(pysam.libcbgzf.BGZFile) gives these very bytes at the same pace (0.93-1.18x this one's time on 68 MB
of FASTQ and 16 Mb of chr20: all three writers spend it in zlib's deflate), but it writes only to a
path it opens itself, not to the stream genointerp.io.atomic hands over (stdout with its `| head`
handling, a descriptor the shell opened for `-o /dev/fd/N`); it ends a block at every flush(), so
its bytes would depend on when a caller flushes; and a failed write is "Error closing BGZFile
object" at close, without the errno or the file's name. Biopython's (Bio.bgzf.BgzfWriter) writes to
a stream at the same pace (0.95-1.04x) but puts 65,536 bytes in a block: every `.gz` output's bytes would
change.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from typing import BinaryIO

BLOCK_DATA = 0xFF00
# gzip magic, deflate, FEXTRA, mtime 0, no extra flags, OS unknown (255), XLEN 6, 'BC', SLEN 2
_HEADER = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
EOF_BLOCK = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def block(data: bytes, level: int = 6) -> bytes:
    """One BGZF block holding `data` (at most BLOCK_DATA bytes)."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = deflate.compress(data) + deflate.flush()
    return (_HEADER + struct.pack("<H", len(_HEADER) + 2 + len(body) + 8 - 1) + body
            + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data)))


class BgzfWriter(io.RawIOBase):
    """A binary stream that writes BGZF to `raw` (left open: its owner closes it)."""

    def __init__(self, raw: BinaryIO, level: int = 6) -> None:
        super().__init__()
        self._raw, self._level, self._pending = raw, level, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._pending += data
        while len(self._pending) >= BLOCK_DATA:
            self._raw.write(block(bytes(self._pending[:BLOCK_DATA]), self._level))
            del self._pending[:BLOCK_DATA]
        return len(data)

    def close(self) -> None:
        if not self.closed:
            if self._pending:
                self._raw.write(block(bytes(self._pending), self._level))
                self._pending.clear()
            self._raw.write(EOF_BLOCK)
            self._raw.flush()
        super().close()


def has_bgzf_eof(path: str) -> bool:
    """Whether a BGZF file ends with its end-of-file block (a cut-off one does not)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() < len(EOF_BLOCK):
            return False
        fh.seek(-len(EOF_BLOCK), os.SEEK_END)
        return fh.read() == EOF_BLOCK
