"""One-hot DNA for the track models: codes 0..4 (see alphabet) -> float32 channels A, C, G, T.

N and IUPAC letters (code 4) become all-zero rows, so a gap carries no base information instead of
a made-up one. Reverse complement of a one-hot window = flip both the L axis and the channel axis,
because the channel order A,C,G,T puts each base opposite its complement.
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.alphabet import N_CODE

# Row i is the one-hot vector of code i; row 4 (N) is zeros. A gather from this table is one
# vectorised numpy operation for any batch shape.
_TABLE = np.zeros((N_CODE + 1, 4), dtype=np.float32)
_TABLE[np.arange(4), np.arange(4)] = 1.0


def one_hot(codes: np.ndarray) -> np.ndarray:
    """uint8 codes (..., L) with values 0..4 -> float32 (..., L, 4).

    Raises ValueError on a code above 4 (e.g. 255 from `alphabet.encode` of a non-nucleotide
    byte), which would otherwise index past the table or silently wrap.
    """
    codes = np.asarray(codes)
    if codes.size and int(codes.max()) > N_CODE:
        raise ValueError(f"one_hot: code {int(codes.max())} is not a nucleotide code (0..4)")
    return _TABLE[codes]
