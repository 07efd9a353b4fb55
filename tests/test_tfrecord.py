"""Basenji TFRecord reader: a tiny data set written here (own protobuf + framing + zlib writer)."""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from genointerp.errors import InputError
from genointerp.io.tfrecord import (
    BasenjiDataset,
    crc32c,
    iter_tfrecord,
    masked_crc32c,
    parse_example,
    read_statistics,
)

SEQ_LEN, TARGET_LEN, N_TARGETS = 96, 6, 3

# ---------------------------------------------------------------- writer (test-side, minimal)


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 -> 10-byte two's complement, as protobuf does
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_example(features: dict) -> bytes:
    entries = b""
    for name, value in features.items():
        if isinstance(value, bytes):
            feature = _field(1, _field(1, value))
        elif np.asarray(value).dtype.kind == "f":
            feature = _field(2, _field(1, np.asarray(value, "<f4").tobytes()))
        else:
            feature = _field(3, _field(1, b"".join(_varint(int(v)) for v in value)))
        entries += _field(1, _field(1, name.encode()) + _field(2, feature))
    return _field(1, entries)


def frame(record: bytes) -> bytes:
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", masked_crc32c(length)) + record
            + struct.pack("<I", masked_crc32c(record)))


def write_tfr(path: Path, records: list[bytes], compress: str = "zlib") -> None:
    raw = b"".join(frame(r) for r in records)
    path.write_bytes({"zlib": zlib.compress, "gzip": gzip.compress, "none": bytes}[compress](raw))


def random_record(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    onehot = np.eye(4, dtype=np.uint8)[rng.integers(0, 4, SEQ_LEN)]
    onehot[rng.integers(0, SEQ_LEN, 5)] = 0  # a few N positions
    target = rng.gamma(1.0, 2.0, (TARGET_LEN, N_TARGETS)).astype(np.float16)
    return onehot, target


def basenji_record(onehot: np.ndarray, target: np.ndarray) -> bytes:
    return encode_example({"sequence": onehot.tobytes(), "target": target.tobytes()})


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, dict]:
    rng = np.random.default_rng(7)
    records = {split: [random_record(rng) for _ in range(n)] for split, n in (("train", 3), ("valid", 2))}
    (tmp_path / "tfrecords").mkdir()
    stats = dict(seq_length=SEQ_LEN, seq_depth=4, target_length=TARGET_LEN, num_targets=N_TARGETS,
                 pool_width=16, crop_bp=0, train_seqs=3, valid_seqs=2, test_seqs=0)
    (tmp_path / "statistics.json").write_text(json.dumps(stats))
    encoded = [basenji_record(*r) for r in records["train"]]
    # train-2 before train-10: natural order, as Basenji's natsorted
    write_tfr(tmp_path / "tfrecords" / "train-2.tfr", encoded[:2])
    write_tfr(tmp_path / "tfrecords" / "train-10.tfr", encoded[2:])
    write_tfr(tmp_path / "tfrecords" / "valid-0.tfr", [basenji_record(*r) for r in records["valid"]])
    return tmp_path, records


# ---------------------------------------------------------------- CRC32C


def _reference_crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_crc32c_known_answers():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 (iSCSI) test vectors
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0


@pytest.mark.parametrize("n", [2048, 5003, 70001])
def test_crc32c_matches_bitwise(n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    assert crc32c(data) == _reference_crc32c(data)


# ---------------------------------------------------------------- reading back


def test_dataset_round_trip(dataset):
    folder, records = dataset
    assert read_statistics(folder)["train_seqs"] == 3
    for split in ("train", "valid"):
        ds = BasenjiDataset(folder, split)
        assert (ds.seq_length, ds.target_length, ds.num_targets, ds.pool_width) == (SEQ_LEN, TARGET_LEN, N_TARGETS, 16)
        assert len(ds) == len(records[split])
        got = list(ds)
        assert len(got) == len(records[split])
        for (seq, tgt), (onehot, target) in zip(got, records[split]):
            assert seq.dtype == np.float32 and seq.shape == (SEQ_LEN, 4)
            assert tgt.dtype == np.float32 and tgt.shape == (TARGET_LEN, N_TARGETS)
            np.testing.assert_array_equal(seq, onehot)
            np.testing.assert_array_equal(tgt, target.astype(np.float32))
    shards = [list(BasenjiDataset(folder, "train").iterate(i, 2)) for i in range(2)]
    assert [len(s) for s in shards] == [2, 1]
    np.testing.assert_array_equal(shards[1][0][0], records["train"][1][0])


@pytest.mark.parametrize("compress", ["none", "gzip"])
def test_plain_and_gzip_files(tmp_path, compress):
    records = [b"", b"x" * 5000, bytes([0x78]) * 3]
    write_tfr(tmp_path / "a.tfr", records, compress)
    assert list(iter_tfrecord(tmp_path / "a.tfr")) == records
    (tmp_path / "empty.tfr").write_bytes(b"")
    assert list(iter_tfrecord(tmp_path / "empty.tfr")) == []


def test_parse_example_lists_and_codes(tmp_path):
    ex = encode_example({"f": np.array([1.5, -2.0]), "i": [3, -1, 2**40], "b": b"\x00\x01"})
    ex += _varint(7 << 3 | 0) + _varint(99)  # an unknown field is skipped
    parsed = parse_example(ex)
    np.testing.assert_array_equal(parsed["f"], np.array([1.5, -2.0], np.float32))
    np.testing.assert_array_equal(parsed["i"], [3, -1, 2**40])
    assert parsed["b"] == b"\x00\x01"
    with pytest.raises(ValueError):
        parse_example(ex[:-3] + b"\x0a\xff")
    # sequences stored as uint8 codes (N = 4) instead of one-hot
    (tmp_path / "tfrecords").mkdir()
    (tmp_path / "statistics.json").write_text(json.dumps(dict(seq_length=5, target_length=1, num_targets=1)))
    rec = encode_example({"sequence": bytes([0, 1, 2, 3, 4]), "target": np.float16([[2.5]]).tobytes()})
    write_tfr(tmp_path / "tfrecords" / "test-0.tfr", [rec])
    (seq, tgt), = BasenjiDataset(tmp_path, "test")
    np.testing.assert_array_equal(seq, np.eye(5, 4))
    assert tgt.tolist() == [[2.5]]


# ---------------------------------------------------------------- errors


def _rewrite(path: Path, change) -> None:
    raw = bytearray(zlib.decompress(path.read_bytes()))
    change(raw)
    path.write_bytes(zlib.compress(bytes(raw)))


def test_crc_corruption(dataset):
    folder, _ = dataset
    path = folder / "tfrecords" / "valid-0.tfr"
    first = len(frame(basenji_record(*random_record(np.random.default_rng(0)))))
    _rewrite(path, lambda raw: raw.__setitem__(first + 40, raw[first + 40] ^ 1))  # record 2's data
    with pytest.raises(InputError, match=r"valid-0\.tfr: record 2: corrupt \(data CRC mismatch\)"):
        list(BasenjiDataset(folder, "valid"))
    assert len(list(iter_tfrecord(path, verify_crc=False))) == 2
    _rewrite(path, lambda raw: raw.__setitem__(3, 1))  # record 1's length field
    with pytest.raises(InputError, match=r"record 1: corrupt \(length CRC mismatch\)"):
        list(iter_tfrecord(path, verify_crc=False))


def test_truncation(dataset, tmp_path):
    folder, _ = dataset
    path = folder / "tfrecords" / "train-2.tfr"
    raw = zlib.decompress(path.read_bytes())
    (tmp_path / "cut.tfr").write_bytes(raw[: len(raw) - 10])
    with pytest.raises(InputError, match=r"cut\.tfr: record 2: truncated"):
        list(iter_tfrecord(tmp_path / "cut.tfr"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"train-2\.tfr: record \d: truncated"):
        list(BasenjiDataset(folder, "train"))


def test_wrong_sizes(dataset):
    folder, _ = dataset
    stats = json.loads((folder / "statistics.json").read_text())
    (folder / "statistics.json").write_text(json.dumps({**stats, "num_targets": 4}))
    with pytest.raises(InputError, match=r"train-2\.tfr: record 1: 'target' has 36 bytes; .* 6 x 4"):
        next(iter(BasenjiDataset(folder, "train")))
    (folder / "statistics.json").write_text(json.dumps({**stats, "seq_length": 100}))
    with pytest.raises(InputError, match=r"record 1: 'sequence' has 384 bytes; statistics.json seq_length 100"):
        next(iter(BasenjiDataset(folder, "train")))


def test_missing_files_and_not_zlib(dataset, tmp_path):
    folder, _ = dataset
    with pytest.raises(InputError, match=r"tfrecords: no test-\*\.tfr files"):
        BasenjiDataset(folder, "test")
    with pytest.raises(InputError, match=r"statistics\.json: no such file"):
        BasenjiDataset(tmp_path / "tfrecords", "train")
    (folder / "tfrecords" / "train-2.tfr").write_bytes(b"PK\x03\x04 not a tfrecord file")
    with pytest.raises(InputError, match=r"train-2\.tfr: not a ZLIB-compressed TFRecord file"):
        list(BasenjiDataset(folder, "train"))
    (folder / "statistics.json").write_text("{")
    with pytest.raises(InputError, match=r"statistics\.json: not valid JSON"):
        read_statistics(folder)
