"""Nucleotide codes shared by every encoder: A=0, C=1, G=2, T=3, anything else (N, IUPAC) = 4.

The order A<C<G<T makes the complement `3 - code` and makes integer order of k-mer ids equal
lexicographic order of the k-mer strings (as in jellyfish's 2-bit encoding).
"""

from __future__ import annotations

import numpy as np

from genointerp.errors import InputError

BASES = b"ACGT"
N_CODE = 4
DECODE = np.frombuffer(b"ACGTN", dtype=np.uint8)

# IUPAC ambiguity letters and the bases each stands for (N is kept as N, not resolved).
IUPAC_AMBIGUOUS = {
    "R": "AG", "Y": "CT", "S": "CG", "W": "AT", "K": "GT", "M": "AC",
    "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG",
}

ENCODE = np.full(256, 255, dtype=np.uint8)  # 255 = not a nucleotide letter at all
for _i, _b in enumerate("ACGT"):
    ENCODE[ord(_b)] = ENCODE[ord(_b.lower())] = _i
for _b in "N" + "".join(IUPAC_AMBIGUOUS):
    ENCODE[ord(_b)] = ENCODE[ord(_b.lower())] = N_CODE
INVALID = 255
_ENCODE_TABLE = ENCODE.tobytes()


def as_bytes_array(seq: str | bytes) -> np.ndarray:
    """View a sequence as a uint8 array of ASCII codes, shape (len,)."""
    if isinstance(seq, str):
        seq = seq.encode("ascii", errors="replace")
    return np.frombuffer(seq, dtype=np.uint8)


def encode(seq: str | bytes | np.ndarray) -> np.ndarray:
    """ASCII letters (str, bytes or uint8 array of any shape) -> uint8 codes 0..4, shape preserved;
    letters that are not IUPAC give 255."""
    arr = seq if isinstance(seq, np.ndarray) else as_bytes_array(seq)
    return ENCODE[arr]


def encode_ascii(data: bytes) -> np.ndarray:
    """Like encode() for ASCII bytes -> uint8 codes (len,), through bytes.translate (faster than a
    numpy gather)."""
    return np.frombuffer(data.translate(_ENCODE_TABLE), dtype=np.uint8)


def decode(codes: np.ndarray) -> bytes:
    """Codes 0..4 (integer array, any shape) -> b'ACGTN' letters (one byte per code, C order)."""
    return DECODE[codes].tobytes()


def reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    """Reverse-complement codes along the last axis; N (4) stays N. uint8 (..., L) -> uint8 (..., L)."""
    rc = np.where(codes < N_CODE, 3 - codes, codes).astype(np.uint8)
    return rc[..., ::-1]


_RC = str.maketrans("ACGTNacgtn", "TGCANtgcan")


def revcomp(seq: str) -> str:
    """The reverse complement of a read's letters (ACGTN, either case; other letters are kept)."""
    return seq.translate(_RC)[::-1]


def first_invalid(arr: np.ndarray) -> int | None:
    """Index of the first byte of arr (uint8 (n,) ASCII) that is no IUPAC nucleotide letter, or None."""
    bad = np.flatnonzero(ENCODE[arr] == INVALID)
    return int(bad[0]) if bad.size else None


def clean_reference(name: str, seq: str, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Encode a reference contig for simulation: codes uint8 shape (len,), N kept as 4.

    Lower case (soft-masking) counts as upper case. IUPAC ambiguity letters (R, Y, W, ...) are
    resolved to one of the bases they stand for, drawn with `rng`: reads from a real genome carry
    a real base there. Returns (codes, number of letters resolved). Raises InputError on any
    character that is not a nucleotide letter, naming the contig and position.
    """
    raw = as_bytes_array(seq)
    codes = ENCODE[raw].copy()
    bad = first_invalid(raw)
    if bad is not None:
        raise InputError(f"contig {name}: position {bad + 1}: {chr(raw[bad])!r} is not a nucleotide letter")
    upper = raw & 0xDF  # ASCII upper case
    ambiguous = np.flatnonzero((codes == N_CODE) & (upper != ord("N")))
    if ambiguous.size == 0:
        return codes, 0
    upper = upper[ambiguous]
    resolved = 0
    for letter, options in IUPAC_AMBIGUOUS.items():
        where = ambiguous[upper == ord(letter)]
        if where.size:
            choices = np.array([BASES.index(o.encode()) for o in options], dtype=np.uint8)
            codes[where] = choices[rng.integers(0, len(options), size=where.size)]
            resolved += where.size
    return codes, resolved
