"""A batch of reads as one array of codes, one N between reads, so that no window spans two:
the form in which the viral evidence, the model's windows and the k-mer tokens read a batch.

The joined text (`join`) is also the form a batch travels in to classify-reads' worker processes:
one string, which pickles as one block, where a list of reads pickles read by read.
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import encode_ascii


def join(seqs: list[str]) -> tuple[str, np.ndarray]:
    """(the reads joined by "N", their lengths int64 (n,))."""
    return "N".join(seqs), np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))


def encode_text(joined: str, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`join`'s output as codes: (flat uint8 (M,), starts int64 (n,), lengths int64 (n,)); a letter
    that is not ASCII codes as an unknown base."""
    flat = encode_ascii(joined.encode("ascii", "replace"))
    starts = np.cumsum(lengths + 1) - lengths - 1
    return flat, starts, lengths


def encode_joined(seqs: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the reads joined by N (so no k-mer spans two reads), their starts and lengths."""
    return encode_text(*join(seqs))
