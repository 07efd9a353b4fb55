"""Track inference, the library the track jobs share: load a track model, one-hot its windows,
predict rates (optionally strand-averaged) and stitch overlapping windows into one binned run."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from genointerp.errors import InputError
from genointerp.io.track_writers import BinnedRun
from genointerp.model_folder import load_model_dir
from genointerp.resources import BUILTIN_TRACKS, builtin_model_dir
from genointerp.runtime import autocast
from genointerp.seq.onehot import one_hot
from genointerp.tracks.tiling import Stitcher, shifted

TRACK_TASK = "track prediction"


def load_track_model(path: str | None):
    """(model, config) of a track model directory, or of the built-in one when path is None."""
    folder = path or builtin_model_dir(BUILTIN_TRACKS)
    if path is None and not (folder / "config.json").exists():
        raise InputError("this installation has no built-in tracks model; give --model (train-tracks) "
                         "or build it with `make tracks-model`")
    model, config = load_model_dir(folder)
    if config.get("task") != TRACK_TASK:
        raise InputError(f"{folder}: a {config.get('task', 'unknown')!r} model, not a track model (train-tracks)")
    return model, config


def window_batch(ref, chrom: str, starts: np.ndarray, seq_len: int) -> np.ndarray:
    """One-hot float32 (B, seq_len, 4) of windows on `chrom` (N-padded past the ends)."""
    return one_hot(np.stack([ref.codes(chrom, int(s), int(s) + seq_len) for s in starts]))


def _averaged_passes(run, arrays: list[np.ndarray], device: str, precision: str, rc_average: bool,
                     shifts: tuple[int, ...]) -> list[np.ndarray]:
    """The mean over `shifts` (and, with rc_average, the reverse-complement passes, bins flipped
    back) of `run`: one-hot tensors (B, seq_len, 4), one per array -> float (B, bins, T) outputs.
    Passes are summed in this fixed order per window, so a window's values do not depend on the
    batch it is in. -> float32 (B, bins, T) per output."""
    totals = None
    with torch.inference_mode(), autocast(device, precision):
        for s in shifts:
            xs = [torch.from_numpy(shifted(x, s)).to(device) for x in arrays]
            outs = [o.float() for o in run(*xs)]
            if rc_average:
                outs = [o + r.float().flip(1) for o, r in zip(outs, run(*(x.flip(1, 2) for x in xs)))]
            totals = outs if totals is None else [t + o for t, o in zip(totals, outs)]
    n = len(shifts) * (2 if rc_average else 1)
    return [(t / n).cpu().numpy() for t in totals]


def predict_rates(model, x: np.ndarray, device: str, precision: str, rc_average: bool,
                  shifts: tuple[int, ...] = (0,)) -> np.ndarray:
    """float32 (B, bins, T) for one-hot x (B, seq_len, 4); with rc_average the mean of the forward
    and the reverse-complement pass (its bins flipped back), which removes strand bias the model
    learnt, and over `shifts` (bp) the mean of the passes on x moved by each (tracks.inference.shifted;
    Basenji's --shifts): 2 * len(shifts) passes at most, summed in this fixed order per window, so
    each window's values do not depend on the batch it is in."""
    return _averaged_passes(lambda xt: (model(xt),), [x], device, precision, rc_average, shifts)[0]


def predict_pair_rates(model, x_ref: np.ndarray, x_alt: np.ndarray, device: str, precision: str, rc_average: bool,
                       shifts: tuple[int, ...] = (0,)) -> tuple[np.ndarray, np.ndarray]:
    """predict_rates of a variant's reference and alternate windows, one-hot (B, seq_len, 4) each ->
    float32 (B, bins, T) twice, in the same passes and order. A model with forward_pair (swin1d)
    runs the alternates only where they differ from the references, about half the cost of both
    whole; another runs the 2B windows in one batch."""
    if not hasattr(model, "forward_pair"):
        pred = predict_rates(model, np.concatenate([x_ref, x_alt]), device, precision, rc_average, shifts)
        return pred[:len(x_ref)], pred[len(x_ref):]
    ref, alt = _averaged_passes(model.forward_pair, [x_ref, x_alt], device, precision, rc_average, shifts)
    return ref, alt


def predict_run(model, window: dict, ref, chrom: str, starts: np.ndarray, run_start: int, n_bins: int,
                batch_size: int, device: str, precision: str, rc_average: bool,
                advance: Callable[[int], None] = lambda n: None, shifts: tuple[int, ...] = (0,)) -> BinnedRun:
    """The stitched BinnedRun (values float32 (n_bins, T)) of the windows `starts` (from
    plan_windows) on `chrom`; `window` is the model config's window geometry (seq_len, bin_size, target_bins)."""
    seq_len, bin_size, target_bins = window["seq_len"], window["bin_size"], window["target_bins"]
    stitch = Stitcher(run_start, n_bins, model.config.n_tracks, bin_size, starts, seq_len, target_bins)
    for a in range(0, len(starts), batch_size):
        idx = np.arange(a, min(a + batch_size, len(starts)))
        x = window_batch(ref, chrom, starts[idx], seq_len)
        stitch.add(idx, predict_rates(model, x, device, precision, rc_average, shifts))
        advance(len(idx))
    return BinnedRun(chrom, run_start, bin_size, stitch.result(), ref.lengths[chrom])
