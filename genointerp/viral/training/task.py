"""Token datasets for training: binary targets, deterministic splits, reverse-complement augmentation."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from genointerp import runtime  # runtime.predict_proba looked up per call: tests stop a run at its Nth validation
from genointerp.errors import InputError
from genointerp.io.kmer_dataset import KmerDataset
from genointerp.train.metrics import binary_metrics


def binary_targets(ds: KmerDataset, positive: str) -> np.ndarray:
    """float32 (n,): 1 for reads labelled `positive`, 0 for every other label."""
    names = ds.header["labels"]
    if positive not in names:
        raise InputError(f"{ds.folder}: no reads labelled {positive!r} (labels: {', '.join(names) or 'none'}); see --positive")
    labels = np.asarray(ds.labels)
    if (labels < 0).any():
        raise InputError(f"{ds.folder}: {int((labels < 0).sum())} reads have no label; kmerize with --label/--truth/--label-field")
    return (labels == names.index(positive)).astype(np.float32)


def check_compatible(datasets: list[KmerDataset]) -> dict:
    """All datasets must share k, read length and token convention; returns the first header."""
    first = datasets[0].header
    for ds in datasets[1:]:
        for key in ("k", "length", "token_convention"):
            if ds.header[key] != first[key]:
                raise InputError(f"{ds.folder}: {key} {ds.header[key]!r} differs from {datasets[0].folder} ({first[key]!r})")
    return first


def split_indices(n: int, seed: int, fractions=(0.8, 0.1, 0.1)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded permutation of range(n) cut 8:1:1 (train, validation, test) by default."""
    perm = np.random.default_rng([seed, 3]).permutation(n)
    a = int(round(n * fractions[0]))
    b = a + int(round(n * fractions[1]))
    return np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:])


def reverse_complement_table(k: int) -> np.ndarray:
    """int64 (4^k + 2,): id of each k-mer's reverse complement; UNKNOWN and PAD map to themselves."""
    ids = np.arange(4**k, dtype=np.int64)
    rc = np.zeros_like(ids)
    for j in range(k):
        rc = (rc << 2) | (3 - ((ids >> (2 * j)) & 3))
    return np.concatenate([rc, [4**k, 4**k + 1]])


def reverse_complement_tokens(tokens: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Tokens of the reverse-complemented reads: reverse the order and complement each k-mer. (B, n)."""
    return table[tokens[:, ::-1]]


class ReadClassificationTask:
    """Binary read classification (XVir) for train.loop.fit: token rows in, logits out, BCE loss,
    optional reverse-complement augmentation, early stopping on validation AUROC."""

    score_name = "auroc"

    def __init__(self, train: tuple[np.ndarray, np.ndarray], valid: tuple[np.ndarray, np.ndarray],
                 rc_table: np.ndarray | None, rc_augment: bool, device: str = "cpu", precision: str = "32") -> None:
        self.tokens, self.y = train
        self.valid, self.rc_table, self.rc_augment = valid, rc_table, rc_augment
        self.device, self.precision = device, precision

    def n_train(self) -> int:
        return len(self.y)

    def augmentation(self, gen: np.random.Generator) -> np.ndarray | None:
        """bool (n_train,): which reads are reverse-complemented this epoch."""
        return gen.random(len(self.y)) < 0.5 if self.rc_augment else None

    def batch(self, idx: np.ndarray, flip: np.ndarray | None, device: str):
        """(tokens int64 (B, n_tokens), targets float32 (B,))."""
        x = np.asarray(self.tokens[idx], dtype=np.int64)
        if flip is not None and flip[idx].any():
            f = flip[idx]
            x[f] = reverse_complement_tokens(x[f], self.rc_table)
        return (torch.from_numpy(x).to(device),
                torch.from_numpy(np.asarray(self.y[idx], dtype=np.float32)).to(device))

    def loss(self, logits, target):
        return F.binary_cross_entropy_with_logits(logits, target)

    def validate(self, model) -> dict:
        return binary_metrics(self.valid[1], runtime.predict_proba(model, self.valid[0], self.device, self.precision))
