"""Track regression for train.loop.fit: DNA windows in, binned signal out, Poisson loss,
reverse-complement and shift augmentation, early stopping on mean validation Pearson r."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch

from genointerp.tracks.inference import predict_rates
from genointerp.tracks.pearson import PearsonAccumulator


class TrackTask:
    """`train` and `valid` are window sources with `__len__` and
    `batch(idx, shifts, flips) -> (x float32 (B, L, 4), y float32 (B, bins, T))`."""

    score_name = "pearson"

    def __init__(self, train, valid, rc_augment: bool, max_shift: int, device: str = "cpu",
                 precision: str = "32", eval_batch: int = 32, frozen: list | None = None,
                 freeze_epochs: int = 0, weights: np.ndarray | None = None, scored: int | None = None,
                 loss: str = "poisson") -> None:
        self.train, self.valid = train, valid
        self.loss_kind = loss  # "poisson", or "mse" with `weights` = 1 / each track's training variance
        self.scored = scored  # validation scores the first `scored` tracks (None: all); the rest are auxiliary
        # per-track loss weights (T,), or None for the plain mean over every bin and track
        self.weights = None if weights is None else torch.as_tensor(weights, dtype=torch.float32)
        self.rc_augment, self.max_shift = rc_augment, max_shift
        self.device, self.precision, self.eval_batch = device, precision, eval_batch
        # parameters kept fixed in the first freeze_epochs epochs: their gradients are zeroed (a hook,
        # so DDP and the optimiser see the same parameters throughout; Adam moves nothing on zero
        # gradients from a fresh start)
        self.freeze_epochs, self.frozen_now = freeze_epochs, False
        for p in frozen or []:
            p.register_hook(lambda g: torch.zeros_like(g) if self.frozen_now else g)

    def begin_epoch(self, epoch: int) -> None:
        self.frozen_now = epoch < self.freeze_epochs

    def n_train(self) -> int:
        return len(self.train)

    def augmentation(self, gen: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(shift int64 (n_train,) in [-max_shift, max_shift] or None, flip bool (n_train,) or None)."""
        n = len(self.train)
        shifts = gen.integers(-self.max_shift, self.max_shift + 1, n) if self.max_shift else None
        flips = gen.random(n) < 0.5 if self.rc_augment else None
        return shifts, flips

    def batch(self, idx: np.ndarray, aug, device: str) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.train.batch(idx, *aug)
        return torch.from_numpy(x).to(device), torch.from_numpy(np.ascontiguousarray(y)).to(device)

    def loss(self, rate: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean Poisson NLL (or squared error) of rates and targets (B, bins, T), each track's terms
        times its weight."""
        if self.loss_kind == "mse":
            err = (rate - target) ** 2
            return (err if self.weights is None else err * self.weights.to(err.device)).mean()
        if self.weights is None:
            return torch.nn.functional.poisson_nll_loss(rate, target, log_input=False)
        nll = torch.nn.functional.poisson_nll_loss(rate, target, log_input=False, reduction="none")
        return (nll * self.weights.to(nll.device)).mean()

    def validate(self, model) -> dict:
        r, loss = evaluate(model, self.valid, self.device, self.precision, self.eval_batch, self.scored)
        return {"loss": loss, "pearson": float(np.nanmean(r)) if np.isfinite(r).any() else float("nan")}


def target_moments(source, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) float64 (T,) of each track's targets over every bin of every window of `source`."""
    total = squares = None
    n = 0
    for a in range(0, len(source), batch_size):
        y = source.targets_of(np.arange(a, min(a + batch_size, len(source))))
        s, q = y.sum(axis=(0, 1), dtype=np.float64), np.square(y, dtype=np.float64).sum(axis=(0, 1))
        total, squares = (s, q) if total is None else (total + s, squares + q)
        n += y.shape[0] * y.shape[1]
    mean = total / max(n, 1)
    return mean, np.maximum(squares / max(n, 1) - mean**2, 0.0)


def inverse_variance_weights(source) -> np.ndarray:
    """Per-track squared-error weights float32 (T,): 1 / the track's training variance (1 for a track
    without variance), so each track's mean squared error counts as 1 - r^2 of a best linear fit
    does in the mean Pearson r, whatever its signal scale."""
    _, var = target_moments(source)
    w = np.ones_like(var)
    w[var > 0] = 1 / var[var > 0]
    return w.astype(np.float32)


def balanced_weights(source, batch_size: int = 256) -> np.ndarray:
    """Per-track loss weights float32 (T,): the mean over tracks of each track's mean training signal,
    divided by the track's own.

    The Poisson NLL's gradient scales with a track's signal, so under a plain mean the tracks with
    the highest signal values steer a shared trunk; weighted this way each track's loss is that of
    its signal rescaled to a common mean (the NLL is linear in a joint scale of rate and target up
    to a constant), which Pearson r, a per-track score, does not see. A track with no signal in
    training keeps weight 1."""
    mean, _ = target_moments(source, batch_size)
    live = mean > 0
    w = np.ones_like(mean)
    w[live] = mean[live].mean() / mean[live]
    return w.astype(np.float32)


def predict_batches(model, source, idx: np.ndarray, device: str, precision: str = "32", batch_size: int = 32,
                    rc_average: bool = False, shifts: tuple[int, ...] = (0,)
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (window indices (B,), predicted rates float32 (B, bins, T), targets (B, bins, T)); with
    rc_average the rates are the mean of both strands', over `shifts` of the shifted inputs'
    (tracks.inference.predict_rates)."""
    model.eval()
    for a in range(0, len(idx), batch_size):
        i = idx[a : a + batch_size]
        x, y = source.batch(i)
        yield i, predict_rates(model, x, device, precision, rc_average, shifts), y


def evaluate(model, source, device: str, precision: str = "32", batch_size: int = 32,
             tracks: int | None = None, rc_average: bool = False,
             shifts: tuple[int, ...] = (0,)) -> tuple[np.ndarray, float]:
    """Per-track Pearson r (T,) over every window and bin of `source`, and the mean Poisson loss; of
    the first `tracks` tracks only when given (T = tracks); rc_average: of both strands' mean."""
    acc, total, n = None, 0.0, 0
    for _, rate, y in predict_batches(model, source, np.arange(len(source)), device, precision, batch_size,
                                            rc_average, shifts):
        rate, y = rate[..., :tracks], y[..., :tracks]
        if acc is None:
            acc = PearsonAccumulator(rate.shape[-1])
        acc.update(rate, y)
        r, t = torch.from_numpy(rate), torch.from_numpy(np.ascontiguousarray(y))
        total += float(torch.nn.functional.poisson_nll_loss(r, t, log_input=False, reduction="sum"))
        n += y.size
    return acc.result(), total / max(n, 1)
