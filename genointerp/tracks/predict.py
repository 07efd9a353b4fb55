"""The predict-tracks job: a track model over regions of a reference, tiled with overlap and stitched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.report import Reporter

TRACK_TASK = "track prediction"


@dataclass
class PredictRequest:
    model: str | None  # model directory; None = the built-in tracks model
    fasta: str
    regions: str | None = None
    chroms: list[str] | None = None
    overlap_bins: int | None = None  # default: a quarter of the model's target bins
    rc_average: bool = False
    batch_size: int = 8
    device: str = "cpu"
    precision: str = "32"


def load_track_model(path: str | None):
    """(model, config) of a track model directory, or of the built-in one when path is None."""
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import BUILTIN_TRACKS, builtin_model_dir

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
    from genointerp.seq.onehot import one_hot

    return one_hot(np.stack([ref.codes(chrom, int(s), int(s) + seq_len) for s in starts]))


def predict_rates(model, x: np.ndarray, device: str, precision: str, rc_average: bool) -> np.ndarray:
    """float32 (B, bins, T); with rc_average the mean of the forward and the reverse-complement
    pass (its bins flipped back), which removes strand bias the model learnt."""
    import torch

    from genointerp.runtime import autocast

    with torch.inference_mode(), autocast(device, precision):
        xt = torch.from_numpy(x).to(device)
        out = model(xt).float()
        if rc_average:
            out = (out + model(xt.flip(1, 2)).float().flip(1)) / 2
    return out.cpu().numpy()


def run(req: PredictRequest, report: Reporter):
    """Returns (runs [BinnedRun], track ids, reference chrom sizes in .fai order, model config)."""
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions, whole_chromosomes
    from genointerp.tracks.tiling import merge_regions, plan_windows

    model, config = load_track_model(req.model)
    model.to(req.device)
    win = config["window"]
    seq_len, bin_size, target_bins = win["seq_len"], win["bin_size"], win["target_bins"]
    overlap = target_bins // 4 if req.overlap_bins is None else req.overlap_bins
    if not 0 <= overlap < target_bins:
        raise InputError(f"--overlap-bins must be in [0, {target_bins}) for this model ({target_bins} target bins)")
    track_ids = [t["id"] for t in config["tracks"]]
    ref = Reference(req.fasta, report.warn)
    if req.regions:
        regions = read_regions(req.regions, ref, report.warn)
    else:
        regions = whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms] if req.chroms else None)
    merged = merge_regions(regions, ref.names, bin_size=bin_size)
    plans = []
    for chrom, start, end in merged:
        starts, run_start, n_bins = plan_windows(start, end, ref.lengths[chrom], seq_len, target_bins, bin_size, overlap)
        plans.append((chrom, starts, run_start, n_bins))
    total = sum(len(p[1]) for p in plans)
    report.log(f"{len(merged):,} region(s), {sum(p[3] for p in plans):,} bins of {bin_size} bp, {total:,} windows "
               f"of {seq_len:,} bp; {len(track_ids)} tracks")
    with report.progress("predicting", total) as advance:
        runs = [predict_run(model, win, ref, chrom, starts, run_start, n_bins, req.batch_size, req.device,
                            req.precision, req.rc_average, advance)
                for chrom, starts, run_start, n_bins in plans]
    kept = [part for r in runs for part in drop_all_n_bins(ref, r)]
    gap = sum(r.n_bins for r in runs) - sum(r.n_bins for r in kept)
    if gap and not kept:
        report.warn("every bin of the regions is all-N sequence: no predictions and no peaks written")
    elif gap:
        report.log(f"{gap:,} bins of all-N sequence left out (no value in the outputs, no peaks)")
    return kept, track_ids, [(c, ref.lengths[c]) for c in ref.names], config


def drop_all_n_bins(ref, run) -> list:
    """`run` without its bins whose sequence is all N (assembly gaps, N-padded chromosome ends):
    the model's output there reflects the window tiling, not the genome, so such bins get no value
    (no-data in the bigWig, no bedGraph or TSV row) and no peak. A bin with one A/C/G/T is kept.
    Returns the runs of the kept consecutive bins (the run itself when all are kept)."""
    from genointerp.io.track_writers import BinnedRun
    from genointerp.seq.alphabet import N_CODE

    has_base = np.zeros(run.n_bins, dtype=bool)
    step = max(1, (1 << 22) // run.bin_size)  # bins per read: bounded memory on whole chromosomes
    for a in range(0, run.n_bins, step):
        b = min(a + step, run.n_bins)
        codes = ref.codes(run.chrom, run.start + a * run.bin_size, run.start + b * run.bin_size)  # N past the end
        has_base[a:b] = (codes.reshape(b - a, run.bin_size) < N_CODE).any(axis=1)
    if has_base.all():
        return [run]
    edges = np.flatnonzero(np.diff(np.concatenate([[0], has_base.astype(np.int8), [0]])))
    return [BinnedRun(run.chrom, run.start + a * run.bin_size, run.bin_size, run.values[a:b], run.chrom_length)
            for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist())]


def predict_run(model, window: dict, ref, chrom: str, starts: np.ndarray, run_start: int, n_bins: int,
                batch_size: int, device: str, precision: str, rc_average: bool,
                advance: Callable[[int], None] = lambda n: None):
    """The stitched BinnedRun of the windows `starts` (from plan_windows) on `chrom`; `window` is the
    model config's window geometry (seq_len, bin_size, target_bins)."""
    from genointerp.io.track_writers import BinnedRun
    from genointerp.tracks.tiling import Stitcher

    seq_len, bin_size, target_bins = window["seq_len"], window["bin_size"], window["target_bins"]
    stitch = Stitcher(run_start, n_bins, model.config.n_tracks, bin_size, starts, seq_len, target_bins)
    for a in range(0, len(starts), batch_size):
        idx = np.arange(a, min(a + batch_size, len(starts)))
        x = window_batch(ref, chrom, starts[idx], seq_len)
        stitch.add(idx, predict_rates(model, x, device, precision, rc_average))
        advance(len(idx))
    return BinnedRun(chrom, run_start, bin_size, stitch.result(), ref.lengths[chrom])


def write_outputs(folder: Path, runs, track_ids, chrom_sizes, threshold: float | None, quantile: float | None,
                  bedgraph: bool, tsv: bool) -> dict:
    """Fill `folder`: <id>.bw and <id>.peaks.bed per track, optionally <id>.bedGraph.gz and tracks.tsv.gz.
    Returns peak counts per track."""
    from genointerp.io.track_writers import write_bedgraph, write_bigwigs, write_peaks_bed, write_tsv
    from genointerp.tracks.peaks import call_peaks_all

    order = [c for c, _ in chrom_sizes]
    write_bigwigs(folder, track_ids, chrom_sizes, runs)
    counts = {}
    for t, tid in enumerate(track_ids):
        peaks = call_peaks_all(runs, t, threshold=threshold, quantile=quantile)
        write_peaks_bed(folder / f"{tid}.peaks.bed", tid, peaks, order)
        counts[tid] = len(peaks)
        if bedgraph:
            write_bedgraph(folder / f"{tid}.bedGraph.gz", tid, runs, t, order)
    if tsv:
        write_tsv(folder / "tracks.tsv.gz", track_ids, runs, order)
    return counts
