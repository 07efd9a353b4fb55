"""Standardisation with the mean/sd of the training rows at hand (saved in config.json as `scaler`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Scaler:
    mean: np.ndarray  # float64 (F,)
    sd: np.ndarray  # float64 (F,), a constant feature's is 1

    @classmethod
    def fit(cls, x: np.ndarray) -> "Scaler":
        """From x (n, F)."""
        sd = x.std(0)
        return cls(x.mean(0), np.where(sd > 0, sd, 1.0))  # a constant feature stays 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x (n, F) standardised, float32 (n, F)."""
        return ((x - self.mean) / self.sd).astype(np.float32)

    def to_dict(self) -> dict:
        return {"mean": [float(v) for v in self.mean], "sd": [float(v) for v in self.sd]}

    @classmethod
    def from_dict(cls, d: dict) -> "Scaler":
        return cls(np.asarray(d["mean"], dtype=np.float64), np.asarray(d["sd"], dtype=np.float64))
