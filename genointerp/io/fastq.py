"""FASTQ and TSV record formatting for simulated and processed reads."""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import DECODE


def format_fastq(names: list[str], codes: np.ndarray, quals: np.ndarray) -> bytes:
    """FASTQ text for n reads of equal length. codes: uint8 (n, L) 0..4; quals: uint8 (n, L) Phred."""
    n, L = codes.shape
    body = np.empty((n, 2 * L + 4), dtype=np.uint8)  # SEQ \n + \n QUAL \n
    body[:, :L] = DECODE[codes]
    body[:, L : L + 3] = np.frombuffer(b"\n+\n", np.uint8)
    body[:, L + 3 : 2 * L + 3] = quals + 33
    body[:, -1] = ord("\n")
    text = body.tobytes().decode("ascii")  # one decode, then cheap str slices per read
    step = 2 * L + 4
    return "".join([f"@{name}\n{text[i * step:(i + 1) * step]}" for i, name in enumerate(names)]).encode()


def format_fastq_varied(names: list[str], codes: list[np.ndarray], quals: list[np.ndarray]) -> bytes:
    """FASTQ text for n reads of any lengths (long reads). codes, quals: n uint8 arrays each, a
    read's codes 0..4 and its Phred qualities (the same length)."""
    return "".join([f"@{name}\n{DECODE[c].tobytes().decode('ascii')}\n+\n"
                    f"{(q + 33).astype(np.uint8).tobytes().decode('ascii')}\n"
                    for name, c, q in zip(names, codes, quals)]).encode()
