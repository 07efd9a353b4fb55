"""The predict-tracks job: a track model over regions of a reference, tiled with overlap and
stitched, written as a bigWig and a peak BED per track (optionally bedGraphs and one TSV)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.reference import Reference
from genointerp.io.regions import read_regions, whole_chromosomes
from genointerp.io.track_writers import BinnedRun, write_bedgraph, write_bigwigs, write_peaks_bed, write_tsv
from genointerp.report import Reporter
from genointerp import options
from genointerp.options import opt
from genointerp.runtime import job_device, use_threads
from genointerp.seq.alphabet import N_CODE
from genointerp.tracks.inference import load_track_model, predict_run
from genointerp.tracks.peaks import call_peaks_all
from genointerp.tracks.tiling import (merge_regions, parse_shifts, plan_windows,
                                       rc_average_option, shifts_option, track_model_option)


@dataclass
class PredictTracksRequest:
    """predict-tracks: the fields are its options."""

    fasta: str = options.reference()
    output: str = opt(
        ..., "-o", "--output",
        help='Output folder: <track id>.bw and <track id>.peaks.bed per track.')
    model: str | None = track_model_option()
    regions: str | None = opt(None, "--regions", help='BED of regions to predict (merged where they touch).')  # BED ...
    chroms: list[str] = opt(
        [], "--chroms", cli_type=str | None, parse=options.comma_list,
        help='Comma-separated whole chromosomes to predict (instead of --regions).')  # ... or whole chromosomes
    overlap_bins: int | None = opt(
        None, "--overlap-bins", min=0,
        help="Bins shared by neighbouring windows (default: a quarter of the model's).")  # default: a quarter of the model's target bins
    rc_average: bool = rc_average_option()
    shifts: str = shifts_option()
    peak_threshold: float | None = opt(
        None, "--peak-threshold",
        help='Peaks: bins with predicted signal >= this (and above 0).')  # peaks: bins >= this; None: --peak-quantile
    peak_quantile: float = opt(
        0.99, "--peak-quantile", min=0, max=1,
        help='Peaks: bins above this quantile of the track and above 0 (unless --peak-threshold).')
    bedgraph: bool = opt(False, "--bedgraph", help='Also write <track id>.bedGraph.gz.')
    tsv: bool = opt(False, "--tsv", help='Also write tracks.tsv.gz (one column per track).')
    batch_size: int = options.batch_size(8)
    device: str = options.device()
    precision: str = options.precision()
    threads: int = options.threads()

    def check(self) -> None:
        if self.regions and self.chroms:
            raise UsageError("--regions: give --regions or --chroms, not both")
        if not self.regions and not self.chroms:
            raise UsageError("--regions: give --regions BED or --chroms")
        parse_shifts(self.shifts)

    def inputs(self) -> list[str | None]:
        return [self.model, self.fasta, self.regions]


def run(req: PredictTracksRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Fill the output folder; returns {"tracks": T, "peaks": peak count per track id}."""
    use_threads(req.threads)  # first: torch's thread pool takes its settings when it starts
    device = job_device(req.device, req.precision, report.warn)
    folder = outputs.folder(req.output)
    runs, track_ids, sizes = predict(req, device, report)
    threshold = req.peak_threshold
    counts = write_outputs(folder, runs, track_ids, sizes, threshold, None if threshold is not None else req.peak_quantile,
                           req.bedgraph, req.tsv)
    return {"tracks": len(track_ids), "peaks": counts}


def predict(req: PredictTracksRequest, device: str, report: Reporter) -> tuple[list[BinnedRun], list[str], list]:
    """(runs [BinnedRun] of the bins that have sequence, track ids, reference chrom sizes in .fai order)."""
    model, config = load_track_model(req.model)
    model.to(device)
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
        regions = whole_chromosomes(ref, [ref.resolve(c, "--chroms") for c in req.chroms])
    merged = merge_regions(regions, ref.names, bin_size=bin_size)
    plans = []
    for chrom, start, end in merged:
        starts, run_start, n_bins = plan_windows(start, end, ref.lengths[chrom], seq_len, target_bins, bin_size, overlap)
        plans.append((chrom, starts, run_start, n_bins))
    total = sum(len(p[1]) for p in plans)
    report.log(f"{len(merged):,} region(s), {sum(p[3] for p in plans):,} bins of {bin_size} bp, {total:,} windows "
               f"of {seq_len:,} bp; {len(track_ids)} tracks")
    with report.progress("predicting", total) as advance:
        runs = [predict_run(model, win, ref, chrom, starts, run_start, n_bins, req.batch_size, device,
                            req.precision, req.rc_average, advance, parse_shifts(req.shifts))
                for chrom, starts, run_start, n_bins in plans]
    kept = [part for r in runs for part in drop_all_n_bins(ref, r)]
    gap = sum(r.n_bins for r in runs) - sum(r.n_bins for r in kept)
    if gap and not kept:
        report.warn("every bin of the regions is all-N sequence: no predictions and no peaks written")
    elif gap:
        report.log(f"{gap:,} bins of all-N sequence left out (no value in the outputs, no peaks)")
    return kept, track_ids, [(c, ref.lengths[c]) for c in ref.names]


def drop_all_n_bins(ref, run: BinnedRun) -> list[BinnedRun]:
    """`run` without its bins whose sequence is all N (assembly gaps, N-padded chromosome ends):
    the model's output there reflects the window tiling, not the genome, so such bins get no value
    (no-data in the bigWig, no bedGraph or TSV row) and no peak. A bin with one A/C/G/T is kept.
    Returns the runs of the kept consecutive bins (the run itself when all are kept)."""
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


def write_outputs(folder: Path, runs, track_ids, chrom_sizes, threshold: float | None, quantile: float | None,
                  bedgraph: bool, tsv: bool) -> dict:
    """Fill `folder`: <id>.bw and <id>.peaks.bed per track, optionally <id>.bedGraph.gz and tracks.tsv.gz.
    Returns peak counts per track."""
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
