"""File formats: sequences (pysam/Biopython), outputs written atomically, k-mer datasets."""
