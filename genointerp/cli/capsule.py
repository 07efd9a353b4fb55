"""Capsule panel: capsule-train and capsule-predict (DiseaseCapsule)."""

from __future__ import annotations

from genointerp.cli.genotypes import PANEL  # noqa: F401  (same help panel as gene-pca)
