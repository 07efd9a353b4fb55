"""Translation of nucleotide codes into amino acids, and amino-acid k-mer ids, vectorised.

Amino acids are coded 0..19 in the order of AMINO_ACIDS; a stop codon is STOP (20) and a codon
holding N or any other non-ACGT code is NO_CODON (21). Codons are read at every position: the
amino acid "at" position i is the codon i, i+1, i+2, so the three reading frames of a strand are
the positions i % 3 == 0, 1, 2, and an amino-acid k-mer at i is the codons at i, i+3, ...,
i+3(k-1). An amino-acid k-mer id is its residues as base-20 digits, the first most significant.
"""

from __future__ import annotations

import numpy as np

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
STOP, NO_CODON = 20, 21
MAX_AA_K = 14  # 20^14 < 2^63
# The standard genetic code by codon index 16*b1 + 4*b2 + b3 (A=0, C=1, G=2, T=3); * = stop
_STANDARD = "KNKNTTTTRSRSIIMIQHQHPPPPRRRRLLLLEDEDAAAAGGGGVVVV*Y*YSSSS*CWCLFLF"
CODON_TABLE = np.array([STOP if c == "*" else AMINO_ACIDS.index(c) for c in _STANDARD], np.uint8)


def _with_unknown() -> np.ndarray:
    """uint8 (125,): CODON_TABLE by 25*b1 + 5*b2 + b3 over codes 0..4, NO_CODON wherever a base is 4."""
    b = np.arange(125)
    b1, b2, b3 = b // 25, b // 5 % 5, b % 5
    known = (b1 < 4) & (b2 < 4) & (b3 < 4)
    return np.where(known, CODON_TABLE[(16 * b1 + 4 * b2 + b3) % 64], NO_CODON).astype(np.uint8)


CODONS_WITH_N = _with_unknown()


def codons(codes: np.ndarray) -> np.ndarray:
    """uint8 (M-2,): the amino acid (or STOP, NO_CODON) of the codon starting at each position of
    nucleotide codes uint8 (M,) (0..3 bases, anything else unknown)."""
    if codes.size < 3:
        return np.zeros(0, np.uint8)
    c = np.minimum(codes, 4).astype(np.uint8)  # 4: any unknown base
    return CODONS_WITH_N[c[:-2] * np.uint8(25) + c[1:-1] * np.uint8(5) + c[2:]]


def aa_kmer_ids(aa: np.ndarray, k: int | str, step: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(ids uint64 (n,), valid bool (n,)) of the k residues aa[i], aa[i+step], ..., for every i
    (n = len(aa) - step*(k-1)); valid where none of them is STOP or NO_CODON. step 3 reads
    `codons` output in frame; step 1 reads a protein sequence.

    `k` may be a spaced seed instead, a pattern of '1' (a compared residue, a digit of the id) and
    '0' (a residue skipped, though it must still be an amino acid): "110110111" spans 9 residues
    and compares 7."""
    seed = _seed(k)
    if not 1 <= seed.count("1") <= MAX_AA_K:
        raise ValueError(f"amino-acid k must be 1..{MAX_AA_K}")
    n = aa.size - step * (len(seed) - 1)
    if n <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, bool)
    ids = np.zeros(n, np.uint64)
    valid = np.ones(n, bool)
    for j, compared in enumerate(seed):
        residue = aa[j * step : j * step + n]
        valid &= residue < STOP
        if compared == "1":
            ids = ids * np.uint64(20) + np.minimum(residue, 19).astype(np.uint64)
    return ids, valid


def distinct_residues(aa: np.ndarray, k: int | str, step: int = 3) -> np.ndarray:
    """int (n,): how many different residues each k-mer (or spaced seed's compared residues) of
    `aa_kmer_ids` holds (low complexity: few)."""
    seed = _seed(k)
    n = aa.size - step * (len(seed) - 1)
    if n <= 0:
        return np.zeros(0, np.int64)
    window = np.stack([aa[j * step : j * step + n] for j, compared in enumerate(seed) if compared == "1"], 1)
    window.sort(axis=1)
    return 1 + (window[:, 1:] != window[:, :-1]).sum(1)


def _seed(k: int | str) -> str:
    return "1" * k if isinstance(k, int) else k
