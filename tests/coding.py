"""Coding sequences for the evidence tests: one codon per amino acid, random proteins, reverse complements."""

import numpy as np

from genointerp.seq.translate import AMINO_ACIDS

# one codon per amino acid
CODON = {"A": "GCT", "C": "TGT", "D": "GAT", "E": "GAA", "F": "TTT", "G": "GGT", "H": "CAT", "I": "ATT", "K": "AAA",
         "L": "CTT", "M": "ATG", "N": "AAT", "P": "CCT", "Q": "CAA", "R": "CGT", "S": "TCT", "T": "ACT", "V": "GTT",
         "W": "TGG", "Y": "TAT"}
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def revcomp(s):
    return s.translate(COMPLEMENT)[::-1]


def protein(n, seed):
    """A random protein of n residues (str), from a numpy generator seeded with seed."""
    return "".join(np.random.default_rng(seed).choice(list(AMINO_ACIDS), n))
