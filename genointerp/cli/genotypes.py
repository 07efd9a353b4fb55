"""Genotype panel: gene-pca (per-gene PCA of VCF genotypes)."""

from __future__ import annotations

PANEL = "Genotypes (DiseaseCapsule)"
