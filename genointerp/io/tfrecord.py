"""Basenji/Enformer-style TFRecord data sets, read without TensorFlow or protobuf.

A data set folder (as written by Basenji's `basenji_data.py`, and Enformer's published sets):

    statistics.json           seq_length, seq_depth (4), target_length, num_targets, pool_width,
                              crop_bp, train_seqs / valid_seqs / test_seqs, ...
    tfrecords/train-0.tfr     TFRecord files, ZLIB-compressed (one zlib stream per file),
    tfrecords/valid-0.tfr     read in natural order (train-2 before train-10)
    tfrecords/test-0.tfr

TFRecord framing, repeated to the end of the (decompressed) file:

    uint64 LE length | uint32 LE masked CRC32C(length bytes) | data | uint32 LE masked CRC32C(data)

Each record is a serialized tf.train.Example; Basenji stores two bytes features:
`sequence` = uint8/bool one-hot (seq_length, 4) (or uint8 codes (seq_length,) with N = 4) and
`target` = float16 (target_length, num_targets) (float32 is also accepted, told apart by size).

Why not the `tfrecord` package (1.14.6, a reader without TensorFlow on PyPI): it reads plain or
gzip files only, not ZLIB (Basenji's and Enformer's files are ZLIB), checks no CRC, and parses the
Example with protobuf (one more dependency) where two bytes features are all there is to find. On an
uncompressed copy of 32 records of chr20 (131,072 bp, 896 x 186 targets) it is faster, on a file
it can read at all: 0.59x this reader's time (1.5 ms less per 0.86 MB record), 0.68x where this
reader skips the data's CRC (verify_crc=False; the length's is always checked, as it guards the
allocation); benchmarks/formats.py, "TFRecord read". The CRC32C itself is the crc32c package's.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from typing import Callable, Iterator

import crc32c as _crc32c
import numpy as np

from genointerp.errors import InputError
from genointerp.io.jsonfile import read_json_object

_READ_CHUNK = 1 << 20  # compressed bytes per read: memory stays at about one record + one chunk
_MAX_RECORD = 1 << 32  # a larger length field is far more likely damage than a real record

# ----------------------------------------------------------------------------------------------
# CRC32C (Castagnoli): the crc32c package (the SSE4.2 instruction where the CPU has it, a table
# otherwise). Every record's data is checked: with the numpy code this replaced (85 MB/s), the check
# took 1.7x as long as the rest of the read (8 records: 0.082 s, 0.030 s unchecked; now 0.03 s).


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of `data` (crc32c(b"123456789") == 0xE3069283)."""
    return _crc32c.crc32c(data)


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits and add a constant (mod 2^32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ----------------------------------------------------------------------------------------------
# TFRecord framing over a (possibly zlib-compressed) byte stream


def _looks_plain(head: bytes) -> bool:
    return len(head) >= 12 and masked_crc32c(head[:8]) == struct.unpack_from("<I", head, 8)[0]


class _StreamError(Exception):
    """A problem below the record level; iter_tfrecord adds the file and record number."""


def _decompressed_chunks(path: Path) -> Iterator[bytes]:
    """The file's TFRecord bytes in chunks: inflated if it is a zlib (or gzip) stream."""
    with open(path, "rb") as fh:
        head = fh.read(12)
        if not head:
            return
        if _looks_plain(head):  # checked first: a plain file may start with the byte 0x78 too
            yield head
            while chunk := fh.read(_READ_CHUNK):
                yield chunk
            return
        if head[0] == 0x78 and len(head) >= 2 and ((head[0] << 8) | head[1]) % 31 == 0:
            inflater = zlib.decompressobj(15)
        elif head[:2] == b"\x1f\x8b":
            inflater = zlib.decompressobj(31)
        else:
            raise InputError(f"{path}: not a ZLIB-compressed TFRecord file (nor a plain one)")
        chunk = head
        while chunk:
            try:
                while chunk:  # bounded output per call, so a highly compressed file stays small
                    out = inflater.decompress(chunk, _READ_CHUNK)
                    chunk = inflater.unconsumed_tail
                    if out:
                        yield out
            except zlib.error as exc:
                raise _StreamError(f"corrupt zlib stream ({exc})") from None
            if inflater.eof:
                if inflater.unused_data or fh.read(1):
                    raise _StreamError("corrupt (data after the end of the zlib stream)")
                return
            chunk = fh.read(_READ_CHUNK)
        raise _StreamError("truncated (the zlib stream ends early)")


class _Buffer:
    """Exact-size reads over a chunk iterator, holding only what a record needs."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.buf, self.pos = chunks, bytearray(), 0

    def read(self, n: int) -> bytes:
        """n bytes, or fewer only at the end of the stream (b"" when it ended there)."""
        while len(self.buf) - self.pos < n:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            if self.pos:
                del self.buf[: self.pos]
                self.pos = 0
            self.buf += chunk
        with memoryview(self.buf) as view:  # released at once: the bytearray must stay resizable
            out = bytes(view[self.pos : self.pos + n])
        self.pos += len(out)
        return out


def iter_tfrecord(path: str | Path, verify_crc: bool = True) -> Iterator[bytes]:
    """Record payloads of one TFRecord file (ZLIB, gzip or uncompressed, detected), streamed.

    Raises InputError naming the file and record number (1-based) for a truncated record, a CRC
    mismatch ("corrupt"), a file that is neither zlib nor TFRecord, or a damaged zlib stream.
    The length CRC is always checked (it guards the allocation); `verify_crc` covers the data.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    stream = _Buffer(_decompressed_chunks(path))
    number = 0
    while True:
        number += 1
        try:
            header = stream.read(12)
            if len(header) == 0:
                return
            if len(header) < 12:
                raise _StreamError("truncated (file ends inside the record header)")
            length, length_crc = struct.unpack("<QI", header)
            if masked_crc32c(header[:8]) != length_crc:
                raise _StreamError("corrupt (length CRC mismatch)")
            if length >= _MAX_RECORD:
                raise _StreamError(f"corrupt (record length {length})")
            data = stream.read(length)
            crc = stream.read(4)
            if len(crc) < 4:
                raise _StreamError("truncated (file ends inside the record)")
            if verify_crc and masked_crc32c(data) != struct.unpack("<I", crc)[0]:
                raise _StreamError("corrupt (data CRC mismatch)")
        except _StreamError as exc:
            raise InputError(f"{path}: record {number}: {exc}") from None
        yield data


# ----------------------------------------------------------------------------------------------
# tf.train.Example wire format: Example{1: Features{1: map<string, Feature>}}
# Feature = oneof {1: BytesList{1: repeated bytes}, 2: FloatList{1: repeated float},
#                  3: Int64List{1: repeated int64}}


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("malformed varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, a, b): for varints a is the value; otherwise buf[a:b] is the
    field's payload. Unknown fields are skipped by their wire type, as protobuf does."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield field, wire, value, pos
            continue
        if wire == 1:
            size = 8
        elif wire == 5:
            size = 4
        elif wire == 2:
            size, pos = _varint(buf, pos, end)
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos + size > end:
            raise ValueError("protobuf field runs past the end of its message")
        yield field, wire, pos, pos + size
        pos += size


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _feature(buf: memoryview, pos: int, end: int) -> bytes | list[bytes] | np.ndarray:
    kind, bytes_values = 0, []
    floats: list[np.ndarray] = []
    ints: list[int] = []
    for field, wire, a, b in _fields(buf, pos, end):
        if wire != 2 or field not in (1, 2, 3):
            continue
        kind = field  # a oneof: the last one set wins
        for f, w, x, y in _fields(buf, a, b):
            if f != 1:
                continue
            if field == 1 and w == 2:
                bytes_values.append(bytes(buf[x:y]))
            elif field == 2 and w == 2:  # packed floats
                if (y - x) % 4:
                    raise ValueError("packed float list length is not a multiple of 4")
                floats.append(np.frombuffer(buf[x:y], dtype="<f4"))
            elif field == 2 and w == 5:
                floats.append(np.frombuffer(buf[x:y], dtype="<f4"))
            elif field == 3 and w == 2:  # packed varints
                while x < y:
                    v, x = _varint(buf, x, y)
                    ints.append(_int64(v))
            elif field == 3 and w == 0:
                ints.append(_int64(x))
            else:
                raise ValueError(f"unexpected wire type {w} in a feature list")
    if kind == 2:
        return np.concatenate(floats).astype(np.float32) if floats else np.empty(0, np.float32)
    if kind == 3:
        return np.array(ints, dtype=np.int64)
    return bytes_values[0] if len(bytes_values) == 1 else bytes_values


def parse_example(data: bytes) -> dict[str, bytes | list[bytes] | np.ndarray]:
    """Decode a serialized tf.train.Example into {feature name: value}.

    bytes_list -> bytes when it holds exactly one value (Basenji's case), else list[bytes];
    float_list -> float32 (n,); int64_list -> int64 (n,). Raises ValueError if malformed.
    """
    buf = memoryview(data).cast("B")
    out: dict[str, bytes | list[bytes] | np.ndarray] = {}
    for field, wire, a, b in _fields(buf, 0, len(buf)):
        if field != 1 or wire != 2:
            continue
        for f, w, x, y in _fields(buf, a, b):  # Features: entries of map<string, Feature>
            if f != 1 or w != 2:
                continue
            key, value = "", None
            for kf, kw, p, q in _fields(buf, x, y):
                if kf == 1 and kw == 2:
                    try:
                        key = bytes(buf[p:q]).decode("utf-8")
                    except UnicodeDecodeError:
                        raise ValueError("feature name is not UTF-8") from None
                elif kf == 2 and kw == 2:
                    value = _feature(buf, p, q)
            out[key] = value if value is not None else []
    return out


# ----------------------------------------------------------------------------------------------
# Basenji data set folder


def read_statistics(folder: str | Path) -> dict:
    """statistics.json of a data set folder, with seq_length/target_length/num_targets checked
    to be positive integers and seq_depth (default 4) to be 4."""
    path = Path(folder) / "statistics.json"
    stats = read_json_object(path, f"{path}: no such file (not a Basenji/Enformer data set folder?)")
    for key in ("seq_length", "target_length", "num_targets"):
        value = stats.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise InputError(f"{path}: {key!r} must be a positive integer (found {value!r})")
    for key in ("pool_width", "crop_bp"):
        value = stats.get(key)
        if value is not None and (not isinstance(value, int) or value < 0):
            raise InputError(f"{path}: {key!r} must be a non-negative integer (found {value!r})")
    if stats.get("seq_depth", 4) != 4:
        raise InputError(f"{path}: seq_depth {stats['seq_depth']!r} is not supported (only 4: A,C,G,T)")
    return stats


def _natural_key(path: Path) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


_CODE_TO_ONEHOT = np.eye(5, 4, dtype=np.float32)  # code 4 (N) -> all zeros


class BasenjiDataset:
    """One split (train/valid/test) of a Basenji/Enformer TFRecord data set, streamed from disk.

    Iterating yields (sequence float32 (seq_length, 4) one-hot A,C,G,T,
    target float32 (target_length, num_targets)) in file order. len() is statistics.json's
    `{split}_seqs`; `warn` is told when the files hold a different number of records.
    """

    def __init__(self, folder: str | Path, split: str, verify_crc: bool = True,
                 warn: Callable[[str], None] | None = None) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.]+", split):
            raise InputError(f"{split!r}: not a data set split name (train, valid, test)")
        self.folder, self.split, self.verify_crc, self.warn = Path(folder), split, verify_crc, warn
        self.statistics = read_statistics(self.folder)
        self.seq_length: int = self.statistics["seq_length"]
        self.target_length: int = self.statistics["target_length"]
        self.num_targets: int = self.statistics["num_targets"]
        self.pool_width: int | None = self.statistics.get("pool_width")
        self.crop_bp: int | None = self.statistics.get("crop_bp")
        if self.pool_width and self.target_length * self.pool_width > self.seq_length:
            raise InputError(f"{self.folder / 'statistics.json'}: target_length x pool_width "
                             f"({self.target_length} x {self.pool_width}) exceeds seq_length {self.seq_length}")
        self.files = sorted((self.folder / "tfrecords").glob(f"{split}-*.tfr"), key=_natural_key)
        if not self.files:
            raise InputError(f"{self.folder / 'tfrecords'}: no {split}-*.tfr files")

    def __len__(self) -> int:
        count = self.statistics.get(f"{self.split}_seqs")
        if not isinstance(count, int) or count < 0:
            raise InputError(f"{self.folder / 'statistics.json'}: no {self.split}_seqs count")
        return count

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        return self.iterate()

    def iterate(self, shard: int = 0, num_shards: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Records whose 0-based position in the split is `shard` mod `num_shards` (for DataLoader
        workers / DDP ranks: every shard still inflates every file, but parses only its own)."""
        seen = 0
        for path in self.files:
            for number, record in enumerate(iter_tfrecord(path, self.verify_crc), start=1):
                seen += 1
                if (seen - 1) % num_shards != shard:
                    continue
                try:
                    features = parse_example(record)
                except ValueError as exc:
                    raise InputError(f"{path}: record {number}: not a tf.train.Example ({exc})") from None
                where = f"{path}: record {number}"
                yield self._sequence(features, where), self._target(features, where)
        expected = self.statistics.get(f"{self.split}_seqs")
        if self.warn and isinstance(expected, int) and expected != seen:
            self.warn(f"{self.folder}: {seen} {self.split} records, statistics.json says {expected}")

    def _feature(self, features: dict, name: str, where: str):
        if name not in features:
            raise InputError(f"{where}: no {name!r} feature (has {', '.join(map(repr, features)) or 'none'})")
        return features[name]

    def _sequence(self, features: dict, where: str) -> np.ndarray:
        raw = self._feature(features, "sequence", where)
        L = self.seq_length
        if isinstance(raw, bytes) and len(raw) == L * 4:  # uint8/bool one-hot (L, 4)
            onehot = np.frombuffer(raw, dtype=np.uint8).reshape(L, 4)
            if onehot.max(initial=0) > 1:
                raise InputError(f"{where}: 'sequence' is not one-hot (values above 1)")
            return onehot.astype(np.float32)
        if isinstance(raw, bytes) and len(raw) == L:  # uint8 codes A,C,G,T = 0..3, N = 4
            codes = np.minimum(np.frombuffer(raw, dtype=np.uint8), 4)
            return _CODE_TO_ONEHOT[codes]
        if isinstance(raw, np.ndarray) and raw.size == L * 4:
            return raw.reshape(L, 4).astype(np.float32)
        size = f"{len(raw)} bytes" if isinstance(raw, bytes) else f"{np.size(raw)} values"
        raise InputError(f"{where}: 'sequence' has {size}; statistics.json seq_length {L} "
                         f"needs {L * 4} (one-hot uint8) or {L} (codes)")

    def _target(self, features: dict, where: str) -> np.ndarray:
        raw = self._feature(features, "target", where)
        shape = (self.target_length, self.num_targets)
        n = shape[0] * shape[1]
        if isinstance(raw, bytes) and len(raw) in (2 * n, 4 * n):  # float16 (Basenji) or float32
            dtype = "<f2" if len(raw) == 2 * n else "<f4"
            return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(np.float32)
        if isinstance(raw, np.ndarray) and raw.size == n:
            return raw.reshape(shape).astype(np.float32)
        size = f"{len(raw)} bytes" if isinstance(raw, bytes) else f"{np.size(raw)} values"
        raise InputError(f"{where}: 'target' has {size}; statistics.json target_length x num_targets "
                         f"= {shape[0]} x {shape[1]} needs {2 * n} bytes (float16)")
