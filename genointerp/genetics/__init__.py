"""Genotype analyses in numpy: Gene-PCA features and synthetic cohorts from real haplotypes."""
