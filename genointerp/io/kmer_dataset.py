"""The kmerize dataset: a folder of memory-mappable arrays that train-xvir reads.

    header.json   k, read length, token convention, vocabulary, labels, counts, provenance
    tokens.npy    uint16 (n_reads, n_tokens)  token ids, n_tokens = length - k + 1
    labels.npy    int16 (n_reads,)            index into header["labels"], -1 = unlabelled
    read_ids.txt  one read id per line, same order

The .npy files are standard NumPy arrays (`np.load(path, mmap_mode="r")`), written as a stream:
a fixed-size header is written first and rewritten with the final row count when the writer closes.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.jsonfile import read_json_object

FORMAT = "genointerp-kmer-dataset"
FORMAT_VERSION = 1
_NPY_HEADER_BYTES = 128


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A version-1.0 .npy header padded to exactly 128 bytes (so it can be rewritten in place)."""
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (np.dtype(dtype).str, shape)
    room = _NPY_HEADER_BYTES - 10
    if len(text) + 1 > room:
        raise ValueError("shape too large for the fixed .npy header")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", room) + text.encode().ljust(room - 1) + b"\n"


class _NpyStream:
    """Append rows to a .npy file whose row count is unknown in advance."""

    def __init__(self, path: Path, dtype, row_shape: tuple[int, ...]) -> None:
        self.path, self.dtype, self.row_shape, self.rows = path, np.dtype(dtype), row_shape, 0
        self.fh = open(path, "wb")
        self.fh.write(_npy_header(self.dtype, (0, *row_shape)))

    def append(self, arr: np.ndarray) -> None:
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        assert arr.shape[1:] == self.row_shape
        self.fh.write(arr.tobytes())
        self.rows += arr.shape[0]

    def close(self) -> None:
        self.fh.seek(0)
        self.fh.write(_npy_header(self.dtype, (self.rows, *self.row_shape)))
        self.fh.close()


class KmerDatasetWriter:
    """Streams batches into a dataset folder (normally an AtomicOutputs temporary)."""

    def __init__(self, folder: Path, n_tokens: int) -> None:
        self.folder = Path(folder)
        self.tokens = _NpyStream(self.folder / "tokens.npy", np.uint16, (n_tokens,))
        self.labels = _NpyStream(self.folder / "labels.npy", np.int16, ())
        self.ids = open(self.folder / "read_ids.txt", "w")
        self.label_index: dict[str, int] = {}  # first-seen order while streaming

    def append(self, tokens: np.ndarray, labels: list[str | None], read_ids: list[str]) -> None:
        """tokens: uint16 (b, n_tokens); labels/read_ids: b entries (label None = unlabelled)."""
        idx = np.array([-1 if lab is None else self.label_index.setdefault(lab, len(self.label_index))
                        for lab in labels], dtype=np.int16)
        self.tokens.append(tokens)
        self.labels.append(idx)
        self.ids.write("".join(f"{r}\n" for r in read_ids))

    def close(self, header: dict) -> dict:
        """Finish the arrays, renumber labels in sorted order, write header.json; returns it."""
        self.tokens.close()
        self.labels.close()
        self.ids.close()
        names = sorted(self.label_index)
        labels = np.load(self.folder / "labels.npy", mmap_mode="r+")
        if names != list(self.label_index):
            remap = np.array([names.index(n) for n in self.label_index] + [-1], dtype=np.int16)
            labels[:] = remap[labels]  # -1 indexes the trailing -1
        counts = np.bincount(labels[labels >= 0], minlength=len(names)) if labels.size else np.zeros(len(names), int)
        header = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **header,
            "n_reads": int(self.tokens.rows),
            "labels": names,
            "label_counts": {n: int(c) for n, c in zip(names, counts)},
            "unlabelled": int((labels < 0).sum()),
        }
        labels.flush()
        del labels
        (self.folder / "header.json").write_text(json.dumps(header, indent=2) + "\n")
        return header


@dataclass
class KmerDataset:
    header: dict
    tokens: np.ndarray  # uint16 (n_reads, n_tokens), memory-mapped
    labels: np.ndarray  # int16 (n_reads,)
    folder: Path

    def read_ids(self) -> list[str]:
        return (self.folder / "read_ids.txt").read_text().splitlines()


def open_kmer_dataset(folder: str | Path) -> KmerDataset:
    folder = Path(folder)
    header = read_json_object(folder / "header.json", f"{folder}: not a kmerize dataset (no header.json)",
                              "a kmerize dataset header")
    if header.get("format") != FORMAT:
        raise InputError(f"{folder}: header.json is not a {FORMAT}")
    if header.get("format_version", 0) > FORMAT_VERSION:
        raise InputError(f"{folder}: dataset format {header['format_version']} is newer than this genointerp reads")
    tokens = np.load(folder / "tokens.npy", mmap_mode="r")
    labels = np.load(folder / "labels.npy", mmap_mode="r")
    if tokens.shape[0] != header["n_reads"] or labels.shape[0] != header["n_reads"]:
        raise InputError(f"{folder}: arrays hold {tokens.shape[0]} reads but header.json says {header['n_reads']}")
    return KmerDataset(header, tokens, labels, folder)
