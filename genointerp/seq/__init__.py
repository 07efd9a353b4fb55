"""DNA encodings (alphabet, k-mer tokens) and the read-simulation error models."""
