"""Genotypes (DiseaseCapsule input): the gene-pca job, SNP-to-gene assignment, per-gene PCA, mosaic cohorts."""
