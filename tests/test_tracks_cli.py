"""train-tracks, predict-tracks and evaluate-tracks end to end on the synthetic genome in test-data/tracks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyBigWig
import pytest
from safetensors.torch import load_file

from conftest import DATA, assert_one_error_line, interrupt_at_call, metrics_without_timing, run_cli, torchrun

TRACKS = DATA / "tracks"
FASTA, TARGETS, REGIONS = TRACKS / "ref.fa.gz", TRACKS / "targets.tsv", TRACKS / "regions.bed"
# 1,024 bp windows -> 16 bins of 32 bp: chr1 (40 kb) and chr2 (20 kb) give ~110 windows
GEOMETRY = ["--seq-len", 1024, "--bin-size", 32, "--target-bins", 16]
SMALL = [*GEOMETRY, "--width", 16, "--batch-size", 8, "--lr", 3e-3, "--seed", 2, "--device", "cpu"]
TRACK_IDS = ["motif_a", "motif_b", "cellX.TF1.conservative", "cellX.TF2.conservative"]


def train_args(out, *extra):
    return ["train-tracks", "-R", FASTA, "--targets", TARGETS, *SMALL, "-o", out, *extra]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    out = tmp_path_factory.mktemp("tracks") / "swin"
    res = run_cli(*train_args(out, "--epochs", 2))
    assert res.exit_code == 0, res.output
    return out


def test_train_tracks_writes_a_model_directory(model):
    files = {p.name for p in model.iterdir()}
    assert {"model.safetensors", "config.json", "metrics.tsv", "test_pearson.tsv", "test_metrics.json"} <= files
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["task"] == "track prediction" and cfg["model"]["architecture"] == "swin1d"
    assert cfg["model"]["patch"] == 8 and len(cfg["model"]["windows"]) == 2  # 8 bp tokens by default: 32 = 8 * 2^2
    assert cfg["model"]["dropout"] == 0.0  # swin1d's default (models.track_configs.default_dropout)
    # groups made contiguous for the per-group heads: DNase first (first seen), then the three ChIP tracks
    assert [t["id"] for t in cfg["tracks"]] == TRACK_IDS and cfg["model"]["track_groups"] == [1, 3]
    assert cfg["window"] == {"seq_len": 1024, "bin_size": 32, "target_bins": 16, "stat": "mean", "clip": 32.0}
    assert cfg["reference"]["chroms"] == {"chr1": 40_000, "chr2": 20_000}
    assert cfg["training"]["schedule"] == "cosine" and cfg["training"]["lr"] == 3e-3
    # default split: target-span centres in the last 20 % of each chromosome are held out
    w = cfg["training"]["windows"]
    assert w["valid"] > 0 and w["test"] > 0 and w["train"] > 4 * (w["valid"] + w["test"]) * 0.8
    rows = (model / "metrics.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["epoch", "train_loss", "valid_loss", "valid_pearson", "seconds"] and len(rows) == 3
    table = [r.split("\t") for r in (model / "test_pearson.tsv").read_text().splitlines()]
    assert [r[0] for r in table[1:5]] == TRACK_IDS and table[-1][:2] == ["(mean)", "ALL"]
    assert not model.with_name("swin.checkpoint").exists()  # the target cache went with the checkpoint


def test_split_keeps_held_out_bases_out_of_training():
    from genointerp.io.reference import Reference
    from genointerp.io.regions import whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import SplitRule, WindowGeometry, assign_splits, build_windows

    ref = Reference(str(FASTA))
    g = WindowGeometry(1024, 32, 16)
    w = build_windows(ref, read_targets(str(TARGETS)), whole_chromosomes(ref), g, "mean", None, 0.5,
                      lambda m: None, lambda m: None)
    split = assign_splits(w, SplitRule())
    for ci, chrom in enumerate(w.chroms):
        held = [w.coordinates(i)[1:] for i in np.flatnonzero((split > 0) & (w.chrom_index == ci))]
        for i in np.flatnonzero((split == 0) & (w.chrom_index == ci)):
            s0, s1 = w.starts[i], w.starts[i] + g.seq_len
            assert all(s1 <= a or s0 >= b for a, b in held)
    assert (split == -1).sum() > 0  # windows at the train/held-out border were dropped, not kept


def test_training_windows_see_the_signal_their_sequence_makes():
    """The bins with AP-1 signal are exactly those within 64 bp of a TGACTCA/TGAGTCA in the window."""
    from genointerp.io.reference import Reference
    from genointerp.io.regions import whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import WindowGeometry, build_windows

    ref = Reference(str(FASTA))
    g = WindowGeometry(1024, 32, 16)
    w = build_windows(ref, read_targets(str(TARGETS)), whole_chromosomes(ref), g, "mean", None, 0.5,
                      lambda m: None, lambda m: None)
    x, y = w.batch(np.arange(len(w)), flips=np.arange(len(w)) % 2 == 1)  # odd windows reverse-complemented
    letters = np.array(list("ACGTN"))
    for i in range(0, len(w), 7):
        seq = "".join(letters[np.where(x[i].sum(1) > 0, x[i].argmax(1), 4)])
        expect = np.zeros(g.target_bins, dtype=bool)
        for motif in ("TGACTCA", "TGAGTCA"):
            p = seq.find(motif)
            while p != -1:
                lo, hi = p - 64 - g.crop, p + 7 + 64 - g.crop
                for b in range(g.target_bins):
                    expect[b] |= lo < (b + 1) * 32 and hi > b * 32
                p = seq.find(motif, p + 1)
        assert np.array_equal(y[i, :, 0] > 0, expect), i


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(tmp_path, cli, monkeypatch):
    import genointerp.tracks.task as tracks

    args = train_args(tmp_path / "full", "--epochs", 3, "--patience", 10, "--arch", "maxpool-cnn")
    assert cli(*args).exit_code == 0
    restore = interrupt_at_call(monkeypatch, tracks, "evaluate", 2)  # at the second validation
    cut = train_args(tmp_path / "cut", "--epochs", 3, "--patience", 10, "--arch", "maxpool-cnn")
    assert cli(*cut).exit_code != 0 and not (tmp_path / "cut").exists()
    cache = list((tmp_path / "cut.checkpoint").glob("targets.*.npy"))
    assert len(cache) == 2  # binned targets of chr1 and chr2, reused on resume
    restore()
    res = cli(*cut, "--resume")
    assert res.exit_code == 0, res.output
    a, b = load_file(tmp_path / "full" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    full = metrics_without_timing(tmp_path / "full")
    assert len(full) == 1 + 3 and metrics_without_timing(tmp_path / "cut") == full  # each epoch once, same losses


def test_same_seed_gives_byte_identical_models(tmp_path, cli):
    for name in ("a", "b"):
        assert cli(*train_args(tmp_path / name, "--epochs", 1, "--arch", "attpool-cnn")).exit_code == 0
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_predict_tracks_writes_bigwigs_and_peaks(model, cli, tmp_path):
    out = tmp_path / "pred"
    res = cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", REGIONS, "-o", out, "--bedgraph",
              "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert {p.name for p in out.iterdir()} == ({f"{t}.bw" for t in TRACK_IDS} | {f"{t}.peaks.bed" for t in TRACK_IDS}
                                               | {f"{t}.bedGraph.gz" for t in TRACK_IDS} | {".genointerp"})
    bw = pyBigWig.open(str(out / "motif_a.bw"))
    assert list(bw.chroms().items()) == [("chr1", 40_000), ("chr2", 20_000)]  # .fai order and lengths
    # regions.bed: chr1 0-15000 and 16000-40000 (apart by 1 kb, not merged), chr2 300-10000 and 10000-20000
    # (touching: merged into one run 288-20000 on the 32 bp grid; the chromosome ends in a whole bin)
    runs = [(c, iv[0][0], iv[-1][1], len(iv)) for c in ("chr1", "chr2") for iv in _runs(bw.intervals(c))]
    assert runs == [("chr1", 0, 15008, 469), ("chr1", 16000, 40000, 750), ("chr2", 288, 20000, 616)]
    assert all(e - s == 32 for s, e, _ in bw.intervals("chr1")[:-1])
    bw.close()
    for tid in TRACK_IDS:
        peaks = [line.split("\t") for line in (out / f"{tid}.peaks.bed").read_text().splitlines()]
        want = peaks_from_bigwig(out / f"{tid}.bw", 0.99)
        assert [(p[0], int(p[1]), int(p[2])) for p in peaks] == [w[:3] for w in want], tid
        np.testing.assert_allclose([[float(p[6]), float(p[7])] for p in peaks], [w[3:] for w in want], rtol=1e-5)


def peaks_from_bigwig(path, quantile: float) -> list[tuple]:
    """predict-tracks' default peaks, recomputed from its bigWig: stretches of adjacent bins (not
    crossing a gap between runs) whose value is > the track's `quantile` over all its bins and > 0, as
    (chrom, start, end, max, mean)."""
    bw = pyBigWig.open(str(path))
    bins = [(c, *iv) for c in bw.chroms() for iv in bw.intervals(c)]
    bw.close()
    cut = np.quantile([v for *_, v in bins], quantile)
    stretches = []
    for chrom, start, end, v in bins:
        if v <= cut or v <= 0:
            continue
        if stretches and stretches[-1][0] == chrom and stretches[-1][2] == start:
            stretches[-1][2] = end
            stretches[-1][3].append(v)
        else:
            stretches.append([chrom, start, end, [v]])
    return [(c, s, e, max(v), float(np.mean(v))) for c, s, e, v in stretches]


def _runs(intervals):
    out, cur = [], []
    for iv in intervals:
        if cur and iv[0] != cur[-1][1]:
            out.append(cur)
            cur = []
        cur.append(iv)
    return out + [cur]


def test_predicted_bins_equal_the_model_on_the_window(model, cli, tmp_path, hostile):
    """One region exactly one target span long, on the grid: the bigWig holds the model's output for
    the window centred on it, bin for bin. predict-tracks runs that one window as a batch of one,
    and so does the test: the same shapes, so the same float32 bits on any CPU (the bigWig stores
    float32), even under arithmetic that moves with the batch shape (`hostile`)."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.seq.onehot import one_hot

    (tmp_path / "one.bed").write_text("chr1\t20480\t20992\n")  # 16 bins x 32 bp
    assert cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "one.bed",
               "-o", tmp_path / "p", "--device", "cpu").exit_code == 0
    net, _ = load_model_dir(model)
    codes = Reference(str(FASTA)).codes("chr1", 20480 - 256, 20480 - 256 + 1024)  # crop = (1024 - 512) / 2
    with torch.no_grad():
        expect = net(torch.from_numpy(one_hot(codes)[None])).numpy()[0]
    for t, tid in enumerate(TRACK_IDS):
        got = np.array(pyBigWig.open(str(tmp_path / "p" / f"{tid}.bw")).values("chr1", 20480, 20992)[::32])
        np.testing.assert_array_equal(got, expect[:, t])


def _window_outputs(model, starts, rc=False, edge=0):
    """The model's output (W, 16, 4) for the 1,024 bp windows at `starts` on chr1; with rc, for
    their reverse complements, flipped back to forward bin order; edge > 0 (< 0): the window's last
    (first) |edge| bases read as N."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.seq.onehot import one_hot

    ref = Reference(str(FASTA))
    codes = [ref.codes("chr1", s, s + 1024) for s in starts]
    for c in codes:
        if edge > 0:
            c[-edge:] = 4
        elif edge < 0:
            c[:-edge] = 4
    if rc:  # A C G T N = 0 1 2 3 4: complement 3 - c, N stays N
        codes = [np.where(c < 4, 3 - c, 4).astype(np.uint8)[::-1] for c in codes]
    net, _ = load_model_dir(model)
    with torch.no_grad():
        out = net(torch.from_numpy(np.stack([one_hot(c) for c in codes]))).numpy()
    return out[:, ::-1] if rc else out


def _bins(folder, track, chrom, start, end):
    return np.array(pyBigWig.open(str(folder / f"{track}.bw")).values(chrom, start, end)[::32])


def test_rc_average_is_the_mean_of_both_strands(model, cli, tmp_path, hostile):
    """Each strand is one pass of one window, in predict-tracks as here, and the mean is the same
    float32 (a + b) / 2: equal bits on any CPU, also under `hostile` arithmetic."""
    (tmp_path / "one.bed").write_text("chr1\t20480\t20992\n")  # one window's 16 target bins
    assert cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "one.bed", "--rc-average",
               "-o", tmp_path / "p", "--device", "cpu").exit_code == 0
    fwd, rev = _window_outputs(model, [20480 - 256])[0], _window_outputs(model, [20480 - 256], rc=True)[0]
    for t, tid in enumerate(TRACK_IDS):
        np.testing.assert_array_equal(_bins(tmp_path / "p", tid, "chr1", 20480, 20992), (fwd[:, t] + rev[:, t]) / 2)
    # the strands disagree (by hundreds of float32 ulps of values below 2), so forward alone would fail
    assert np.abs(fwd - rev).max() > 1e-4


def test_shifts_average_the_windows_moved_by_each_shift(model, cli, tmp_path, hostile):
    """--shifts -1,0,2 --rc-average: each bin is the float32 mean of six passes of one window (the
    window moved by each shift, N past its ends, and its reverse complement), summed in shift order,
    strands first: the same bits as those passes here, also under `hostile` arithmetic."""
    (tmp_path / "one.bed").write_text("chr1\t20480\t20992\n")
    assert cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "one.bed", "--rc-average",
               "--shifts", "-1,0,2", "-o", tmp_path / "p", "--device", "cpu").exit_code == 0
    start = 20480 - 256
    passes = []
    for s in (-1, 0, 2):
        # the window moved by s is the reference at start + s, but only where the unmoved window had
        # sequence: the bases it never read are N (all-zero one-hot)
        fwd = _window_outputs(model, [start + s], edge=s)[0]
        rev = _window_outputs(model, [start + s], rc=True, edge=s)[0]
        passes.append(fwd + rev)
    expect = (passes[0] + passes[1] + passes[2]) / np.float32(6)
    for t, tid in enumerate(TRACK_IDS):
        np.testing.assert_array_equal(_bins(tmp_path / "p", tid, "chr1", 20480, 20992), expect[:, t])
    plain = _window_outputs(model, [start])[0]
    assert np.abs(expect - plain).max() > 1e-4  # the shifts move the prediction: plain output would fail


@pytest.mark.parametrize("overlap", [0, 8])
def test_overlap_bins_sets_the_windows_and_which_one_each_bin_takes(model, cli, tmp_path, overlap, hostile):
    """48 bins from 20480: windows step by 16 - overlap bins, the last one ends at the run end, and a
    bin takes the window in which it lies farthest from the target edges (the earlier on a tie).
    Each grid's windows are run as predict-tracks runs them, in order in one batch (3 or 5 <= its 8),
    so a window's output has the same float32 bits here as there on any CPU (also under `hostile`)."""
    (tmp_path / "r.bed").write_text("chr1\t20480\t22016\n")
    assert cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "r.bed", "--overlap-bins",
               overlap, "-o", tmp_path / "p", "--device", "cpu").exit_code == 0

    def stitched(firsts):  # firsts: first target bin of each window
        out = dict(zip(firsts, _window_outputs(model, [20480 + 32 * f - 256 for f in firsts])))
        want = np.empty((48, 4), dtype=np.float32)
        for b in range(48):
            depth = [min(b - f, 15 - (b - f)) if f <= b < f + 16 else -1 for f in firsts]
            f = firsts[int(np.argmax(depth))]  # argmax takes the first of equals
            want[b] = out[f][b - f]
        return want

    grids = {0: [0, 16, 32], 8: [0, 8, 16, 24, 32]}
    want, other = stitched(grids[overlap]), stitched(grids[8 - overlap])
    # the other overlap's stitching takes other windows for some bins: a wrong choice shows
    assert np.abs(want - other).max() > 1e-4
    for t, tid in enumerate(TRACK_IDS):
        np.testing.assert_array_equal(_bins(tmp_path / "p", tid, "chr1", 20480, 22016), want[:, t])


def _expected_peaks(values, cut, start):
    """(start, end) of maximal runs of 32 bp bins with value >= cut."""
    above = np.concatenate([[False], values >= cut, [False]])
    edges = np.flatnonzero(above[1:] != above[:-1])
    return [(start + 32 * a, start + 32 * b) for a, b in zip(edges[0::2], edges[1::2])]


def test_peak_quantile_and_threshold_cut_the_predicted_track(model, cli, tmp_path):
    (tmp_path / "r.bed").write_text("chr1\t20480\t24576\n")  # 128 bins
    peaks = lambda folder: [tuple(int(v) for v in line.split("\t")[1:3])  # noqa: E731
                            for line in (folder / "motif_a.peaks.bed").read_text().splitlines()]
    args = ["predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "r.bed", "--device", "cpu"]
    assert cli(*args, "--peak-quantile", 0.75, "-o", tmp_path / "q").exit_code == 0
    values = _bins(tmp_path / "q", "motif_a", "chr1", 20480, 24576).astype(np.float32)
    assert peaks(tmp_path / "q") == _expected_peaks(values, np.quantile(values, 0.75), 20480) != []
    cut = float(np.round(np.median(values), 4))
    assert cli(*args, "--peak-threshold", cut, "-o", tmp_path / "t").exit_code == 0
    assert peaks(tmp_path / "t") == _expected_peaks(values, cut, 20480) != peaks(tmp_path / "q")


def test_chroms_predicts_whole_chromosomes_and_tsv_holds_every_bin(model, cli, tmp_path):
    import gzip

    res = cli("predict-tracks", "-m", model, "-R", FASTA, "--chroms", "chr2", "--tsv", "-o", tmp_path / "p",
              "--device", "cpu")
    assert res.exit_code == 0, res.output
    bw = pyBigWig.open(str(tmp_path / "p" / "motif_a.bw"))
    assert bw.intervals("chr1") is None  # only the chromosome asked for
    runs = [(iv[0][0], iv[-1][1], len(iv)) for iv in _runs(bw.intervals("chr2"))]
    # 20,000 bp = 625 bins of 32 bp, the whole of chr2 but its first 9 bins, all N (chr2 starts with 300 N)
    assert runs == [(288, 20000, 616)]
    text = gzip.decompress((tmp_path / "p" / "tracks.tsv.gz").read_bytes()).decode()
    rows = [r.split("\t") for r in text.splitlines()]
    assert rows[0] == ["chrom", "start", "end", *TRACK_IDS] and len(rows) == 617
    assert [r[:3] for r in rows[1:3]] == [["chr2", "288", "320"], ["chr2", "320", "352"]]
    assert rows[-1][:3] == ["chr2", "19968", "20000"]
    for t, tid in enumerate(TRACK_IDS):
        got = np.array([float(r[3 + t]) for r in rows[1:]])
        want = np.array(pyBigWig.open(str(tmp_path / "p" / f"{tid}.bw")).values("chr2", 288, 20000)[::32])
        np.testing.assert_allclose(got, want, rtol=1e-5)  # the TSV's text keeps 6+ significant digits

def test_evaluate_tracks_compares_two_models(model, cli, tmp_path):
    other = tmp_path / "cnn"
    assert cli(*train_args(other, "--epochs", 1, "--arch", "maxpool-cnn")).exit_code == 0
    (tmp_path / "test.bed").write_text("chr2\t10000\t20000\n")
    res = cli("evaluate-tracks", "-m", other, "-m", model, "-R", FASTA, "--targets", TARGETS,
              "--regions", tmp_path / "test.bed", "-o", tmp_path / "eval.tsv", "--scatter", tmp_path / "fig2.png",
              "--plot-region", "chr2:12000-16000", "--plot", tmp_path / "fig3.png", "--device", "cpu",
              "--batch-size", 8)
    assert res.exit_code == 0, res.output
    rows = [r.split("\t") for r in (tmp_path / "eval.tsv").read_text().splitlines()]
    assert rows[0] == ["track", "group", "pearson", "pearson_2"] and [r[0] for r in rows[1:5]] == TRACK_IDS
    assert [r[:2] for r in rows[5:]] == [["(mean)", "DNase"], ["(mean)", "ChIP"], ["(mean)", "ALL"]]
    r = np.array([[float(v) for v in row[2:]] for row in rows[1:5]])
    # each column is its own model's Pearson r (the models differ: a column mix-up shows), and the
    # summary rows are group means of the columns (motif_a is the DNase group, the rest ChIP)
    expect = np.stack([numpy_pearson(m, tmp_path / "test.bed", batch_size=8) for m in (other, model)], 1)
    assert np.abs(expect[:, 0] - expect[:, 1]).max() > 1e-3
    # A window's float32 output can change in its last bits with the batch it is run in, and two
    # epochs leave these models' predictions p nearly flat (spread 1e-4 to 6e-3 of their level), so
    # one ulp of p can move r by up to 6e-4 (|dr| <= |dp| / |p - mean(p)|): r from all windows in
    # one batch differed from evaluate-tracks' by up to 8e-6 with the default ATen kernels. numpy
    # takes the model's outputs in evaluate-tracks' batches of 8, which one process computes the
    # same way every time; left are the TSV's 6 significant digits (<= 5e-7 for |r| < 1) and float64
    # sums in another order (< 1e-11 at that spread).
    np.testing.assert_allclose(r, expect, rtol=0, atol=1e-6)
    means = np.array([[float(v) for v in row[2:]] for row in rows[5:]])
    np.testing.assert_allclose(means, [expect[0], expect[1:].mean(0), expect.mean(0)], rtol=0, atol=1e-6)
    from test_tracks_eval import assert_region_plot, assert_scatter_plot

    assert_scatter_plot(tmp_path / "fig2.png", n_groups=2)
    assert_region_plot(tmp_path / "fig3.png", n_tracks=4)


def numpy_pearson(model_dir, bed, batch_size: int | None = None, rc_average: bool = False) -> np.ndarray:
    """(4,) Pearson r of each track over the windows of `bed`, from the model's output (run on
    batch_size windows at a time; None: all at once; rc_average: the mean of the output and of the
    reverse-complemented windows' output with its bins reversed) and the targets, by numpy: what
    evaluate-tracks should report."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import WindowGeometry, build_windows

    ref = Reference(str(FASTA))
    w = build_windows(ref, read_targets(str(TARGETS)), read_regions(str(bed), ref),
                      WindowGeometry(1024, 32, 16), "mean", None, 0.5, lambda m: None, lambda m: None)
    x, y = w.batch(np.arange(len(w)))
    net, _ = load_model_dir(model_dir)
    step = batch_size or len(x)
    with torch.no_grad():
        p = np.concatenate([net(torch.from_numpy(x[a : a + step])).numpy() for a in range(0, len(x), step)])
        if rc_average:  # A C G T one-hot columns reversed = complement; positions reversed = other strand
            rc = x[:, ::-1, ::-1].copy()
            q = np.concatenate([net(torch.from_numpy(rc[a : a + step])).numpy() for a in range(0, len(x), step)])
            p = (p + q[:, ::-1]) / 2
    return np.array([np.corrcoef(p[..., t].ravel(), y[..., t].ravel())[0, 1] for t in range(4)])


def test_evaluate_equals_numpy_pearson_over_the_windows(model, cli, tmp_path, hostile):
    (tmp_path / "test.bed").write_text("chr1\t30000\t40000\n")
    assert cli("evaluate-tracks", "-m", model, "-R", FASTA, "--targets", TARGETS, "--regions",
               tmp_path / "test.bed", "-o", tmp_path / "e.tsv", "--device", "cpu", "--batch-size", 8).exit_code == 0
    got = [float(r.split("\t")[2]) for r in (tmp_path / "e.tsv").read_text().splitlines()[1:5]]
    # the same batches of 8 windows as evaluate-tracks (model outputs differ in their last float32
    # bits by batch size, which moves r of nearly flat predictions by up to ~1e-5; `hostile` makes
    # that 1e-4 of every output, so the test holds only because the batches are the same); what
    # is left is the TSV's 6 significant digits (<= 5e-7) and float64 reordering
    np.testing.assert_allclose(got, numpy_pearson(model, tmp_path / "test.bed", batch_size=8), atol=1e-6)


def test_evaluate_rc_average_scores_the_mean_of_both_strands(model, cli, tmp_path, hostile):
    """--rc-average: the models' r is of the two strands' mean prediction; the controls' is unchanged."""
    (tmp_path / "test.bed").write_text("chr1\t30000\t40000\n")
    (tmp_path / "fit.bed").write_text("chr1\t0\t25000\n")
    rows = {}
    for name, extra in (("plain", []), ("rc", ["--rc-average"])):
        res = cli("evaluate-tracks", "-m", model, "-R", FASTA, "--targets", TARGETS, "--regions", tmp_path / "test.bed",
                  "--controls", "--fit-regions", tmp_path / "fit.bed", "-o", tmp_path / f"{name}.tsv", "--device", "cpu",
                  "--batch-size", 8, *extra)
        assert res.exit_code == 0, res.output
        table = [r.split("\t") for r in (tmp_path / f"{name}.tsv").read_text().splitlines()]
        rows[name] = {c: [float(r[table[0].index(c)]) for r in table[1:5]] for c in ("pearson", "pearson_cpg")}
    # both strands in evaluate-tracks' batches of 8 (under `hostile`, as above): left are the TSV's
    # 6 significant digits (<= 5e-7) and float64 reordering; --rc-average moves r by > 100x that
    np.testing.assert_allclose(rows["rc"]["pearson"], numpy_pearson(model, tmp_path / "test.bed", 8, rc_average=True),
                               atol=1e-6)
    assert not np.allclose(rows["rc"]["pearson"], rows["plain"]["pearson"], atol=1e-4)
    assert rows["rc"]["pearson_cpg"] == rows["plain"]["pearson_cpg"]


def test_train_on_a_basenji_tfrecord_set(tmp_path, cli):
    from test_tfrecord import basenji_record, write_tfr

    rng = np.random.default_rng(3)
    (tmp_path / "tfrecords").mkdir()
    for split, n in (("train", 6), ("valid", 2), ("test", 2)):
        recs = [basenji_record(np.eye(4, dtype=np.uint8)[rng.integers(0, 4, 512)],
                               rng.gamma(1.0, 2.0, (8, 3)).astype(np.float16)) for _ in range(n)]
        write_tfr(tmp_path / "tfrecords" / f"{split}-0.tfr", recs)
    (tmp_path / "statistics.json").write_text(json.dumps(dict(
        seq_length=512, seq_depth=4, target_length=8, num_targets=3, pool_width=32, crop_bp=128,
        train_seqs=6, valid_seqs=2, test_seqs=2)))
    (tmp_path / "targets.txt").write_text("index\tidentifier\tfile\tclip\tsum_stat\tdescription\n"
                                          "0\tENCFF1\tx\t32\tsum\tDNASE:liver\n1\tENCFF2\tx\t32\tsum\tCHIP:CTCF:liver\n"
                                          "2\tENCFF3\tx\t32\tsum\tDNASE:heart\n")
    res = cli("train-tracks", "--basenji", tmp_path, "--width", 16, "--epochs", 1, "--batch-size", 2,
              "--device", "cpu", "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert [t["id"] for t in cfg["tracks"]] == ["ENCFF1", "ENCFF3", "ENCFF2"]  # DNASE group first, contiguous
    assert cfg["window"]["seq_len"] == 512 and cfg["window"]["target_bins"] == 8
    # evaluating on the set's test split must pair each model track with its own column, not the
    # column at the same index: the same Pearson r per track as train-tracks' own test pass. That
    # pass scores the windows in batches of 32 (tracks.task.evaluate's default); given the same
    # batches, evaluate-tracks gets the same float32 outputs on any CPU (other batches could move a
    # window's output by an ulp, and r of nearly flat predictions by far more than an ulp of r)
    res = cli("evaluate-tracks", "-m", tmp_path / "m", "--basenji", tmp_path, "--split", "test",
              "-o", tmp_path / "e.tsv", "--device", "cpu", "--batch-size", 32)
    assert res.exit_code == 0, res.output
    got, want = ([r.split("\t") for r in (tmp_path / name).read_text().splitlines()[1:4]]
                 for name in ("e.tsv", "m/test_pearson.tsv"))
    assert [r[0] for r in got] == [r[0] for r in want] == ["ENCFF1", "ENCFF3", "ENCFF2"]
    # left: each TSV's 6 significant digits (<= 5e-7 each for |r| < 1)
    np.testing.assert_allclose([float(r[2]) for r in got], [float(r[2]) for r in want], rtol=0, atol=1e-6)


def test_bigwig_from_another_assembly_is_refused(tmp_path, cli):
    (tmp_path / "t.tsv").write_text(f"id\tpath\tgroup\nx\t{TRACKS / 'other_assembly.bw'}\tDNase\n")
    res = cli("train-tracks", "-R", FASTA, "--targets", tmp_path / "t.tsv", *SMALL, "--epochs", 1,
              "-o", tmp_path / "m")
    assert_one_error_line(res, "another assembly")
    assert res.exit_code == 1 and not (tmp_path / "m").exists()


def test_targets_with_a_missing_file_is_refused(tmp_path, cli):
    (tmp_path / "t.tsv").write_text("id\tpath\tgroup\nx\tnowhere.bw\tDNase\n")
    res = cli("train-tracks", "-R", FASTA, "--targets", tmp_path / "t.tsv", *SMALL, "-o", tmp_path / "m")
    assert_one_error_line(res, "nowhere.bw")
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.checkpoint" / "last.pt").exists()


@pytest.mark.parametrize("bed, message", [
    ("chr1\t39000\t41000\n", "off the end of chr1"),
    ("", "no regions"),
    ("chr9\t0\t100\n", "chr9"),
])
def test_bad_regions_are_refused(model, cli, tmp_path, bed, message):
    (tmp_path / "r.bed").write_text(bed)
    res = cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p")
    assert_one_error_line(res, message)
    assert res.exit_code == 1 and not (tmp_path / "p").exists()


def test_predict_refuses_an_xvir_model_and_an_existing_output(model, cli, tmp_path):
    from genointerp.resources import builtin_model_dir

    res = cli("predict-tracks", "-m", builtin_model_dir(), "-R", FASTA, "--regions", REGIONS, "-o", tmp_path / "p")
    assert_one_error_line(res, "not a track model")
    (tmp_path / "p").mkdir()
    res = cli("predict-tracks", "-m", model, "-R", FASTA, "--regions", REGIONS, "-o", tmp_path / "p")
    assert_one_error_line(res, "output exists")


def test_evaluate_refuses_targets_without_the_models_tracks(model, cli, tmp_path):
    (tmp_path / "t.tsv").write_text(f"id\tpath\tgroup\nmotif_a\t{TRACKS / 'motif_a.bw'}\tDNase\n")
    res = cli("evaluate-tracks", "-m", model, "-R", FASTA, "--targets", tmp_path / "t.tsv", "--chroms", "chr2",
              "-o", tmp_path / "e.tsv")
    assert_one_error_line(res, "motif_b")
    assert not (tmp_path / "e.tsv").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo")
def test_ddp_two_processes_reproduce_one_process_with_double_batch(tmp_path):
    common = ["-q", *train_args(tmp_path / "x", "--epochs", 2, "--arch", "maxpool-cnn", "--no-rc-augment",
                                "--shift", 0, "--dropout", 0, "--grad-clip", 0)]
    common = [str(a) for a in common]
    i = common.index("--batch-size")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def args(batch, out):
        a = list(common)
        a[i + 1] = str(batch)
        a[a.index("-o") + 1] = str(out)
        return a

    one = subprocess.run([sys.executable, "-m", "genointerp", *args(16, tmp_path / "one")], env=env,
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([*torchrun(2), "-m", "genointerp", *args(8, tmp_path / "two")], env=env,
                         capture_output=True, text=True)
    assert two.returncode == 0, two.stderr
    # rank 0 wrote the model directory once: the same files, model, windows and settings but the batch size
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    assert not (tmp_path / "two.checkpoint").exists()
    cfg = [json.loads((tmp_path / run / "config.json").read_text()) for run in ("one", "two")]
    assert [c["training"].pop("batch_size") for c in cfg] == [16, 8]
    for c in cfg:
        del c["test_metrics"], c["training"]["valid_pearson"]  # losses compared below; r is ill-conditioned
    assert cfg[0] == cfg[1]
    # The same windows in every step and the gradient of their mean loss (test_ddp.py checks a step
    # to within float32 rounding); only the order of float32 sums differs, which Adam amplifies in
    # the weights (see the XVir DDP test; no gradient clipping here, whose rescaling would add its
    # own rounding). Compared instead: the validation Poisson loss of every epoch and the test
    # loss, means over every bin of every track of the held-out windows. Measured |difference| <=
    # 6.3e-6 of the loss with AVX-512, AVX2 and default ATen kernels and MKL's SSE4.2 path, so rtol
    # 3e-4 leaves 48x; ranks that do not all-reduce their gradients, or train on the same half of
    # the windows, miss by 2.7e-3 to 4.4e-3 (9x to 15x). Pearson r is not compared: two epochs leave the
    # predictions nearly flat and r near 0.02 ill-conditioned (valid_pearson differs by 1.1e-4
    # between the runs with the default kernels). train_loss is rank 0's own half of the windows.
    losses = []
    for run in ("one", "two"):
        rows = [line.split("\t") for line in (tmp_path / run / "metrics.tsv").read_text().splitlines()]
        column = rows[0].index("valid_loss")
        test = json.loads((tmp_path / run / "test_metrics.json").read_text())["poisson_loss"]
        losses.append([float(r[column]) for r in rows[1:]] + [test])
    assert len(losses[0]) == 3
    np.testing.assert_allclose(losses[1], losses[0], rtol=3e-4, atol=0)


def test_held_out_regions_are_tiled_even_outside_the_training_regions(tmp_path, cli):
    rows = [line.split("\t") for line in REGIONS.read_text().splitlines()]
    for name in ("train", "valid", "test"):
        (tmp_path / f"{name}.bed").write_text("".join("\t".join(r[:3]) + "\n" for r in rows if r[3] == name))
    res = cli(*train_args(tmp_path / "m", "--epochs", 1, "--arch", "maxpool-cnn", "--regions", tmp_path / "train.bed",
                          "--valid-regions", tmp_path / "valid.bed", "--test-regions", tmp_path / "test.bed"))
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    # on the 32 bp grid chr2 320-10000 holds (10000 - 320) // 512 = 18 whole 512 bp target spans and
    # 10016-19968 (the last whole bin) holds (19968 - 10016) // 512 = 19
    w = cfg["training"]["windows"]
    assert w["valid"] == 18 and w["test"] == 19 and w["train"] > 60
    assert cfg["training"]["data"]["split"]["test_regions"] == ["chr2:10000-20000"]


def _cnn(out, *extra):
    return train_args(out, "--epochs", 1, "--arch", "maxpool-cnn", *extra)


@pytest.mark.parametrize("extra, windows", [
    # 512 bp target spans on the 32 bp grid: chr1 (40 kb) holds 78, chr2 (20 kb) 39. More than 50 %
    # N (--max-n's default) drops chr1's spans at 14848 and 15360 (the gap is [15000, 16000)) and
    # chr2's first (300 N = 59 %): 76 and 38 windows. A training window's sequence reaches 256 bp
    # either side of its span and must not reach into a held-out span.
    # --chroms chr2 alone: default tail split, span i centred at (512 i + 256) / 20000; valid from
    # 0.8 (i >= 31), test from 0.9 (i >= 35), span 30 dropped at the border
    (["--chroms", "chr2", "--max-n", 0.58], {"train": 29, "valid": 4, "test": 4}),
    (["--chroms", "chr2", "--max-n", 0.59], {"train": 30, "valid": 4, "test": 4}),  # keeps chr2's first span
    # held-out regions start on the 512 bp tiling of the chromosome (29696 = 58 x 512, 9728 = 19 x 512),
    # so their own tiling adds no windows: test spans of chr1:29696-40000 are i = 58..77 (20), span 57
    # dropped, train 0..56 less the 2 in the gap
    (["--valid-chroms", "chr2", "--test-regions", "{bed}"], {"train": 55, "valid": 38, "test": 20}),
    # valid spans of chr2:9728-20000 are i = 19..38 (20), span 18 dropped: train 1..17
    (["--test-chroms", "chr1", "--valid-regions", "{bed}"], {"train": 17, "valid": 20, "test": 76}),
])
def test_chromosome_options_and_max_n_choose_the_windows(tmp_path, cli, extra, windows):
    bed = tmp_path / "held.bed"
    bed.write_text("chr1\t29696\t40000\n" if "--test-regions" in extra else "chr2\t9728\t20000\n")
    res = cli(*_cnn(tmp_path / "m", *[str(a).format(bed=bed) for a in extra]))
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["training"]["windows"] == windows


def test_patch_sets_the_token_size_and_must_divide_the_bin(tmp_path, cli):
    assert cli(*_cnn(tmp_path / "m", "--patch", 4)).exit_code == 0
    model = json.loads((tmp_path / "m" / "config.json").read_text())["model"]
    # 32 bp bins from 4 bp tokens: 3 halvings (the default, patch 1, makes 5)
    assert model["patch"] == 4 and len(model["widths"]) == 3
    res = cli(*_cnn(tmp_path / "x", "--patch", 3))
    assert_one_error_line(res, "--patch 3: bin size 32 is not the patch times a power of 2")
    assert res.exit_code == 1 and not (tmp_path / "x").exists()


def test_stat_and_clip_make_the_targets_the_test_pass_scores_against(tmp_path, cli):
    """train-tracks' own test Pearson r equals one computed from bigWig maxima soft-clipped at 2."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.seq.onehot import one_hot

    (tmp_path / "test.bed").write_text("chr1\t20480\t22528\n")  # 4 whole target spans on the grid
    (tmp_path / "valid.bed").write_text("chr2\t10240\t12288\n")
    res = cli(*_cnn(tmp_path / "m", "--stat", "max", "--clip", 2, "--test-regions", tmp_path / "test.bed",
                    "--valid-regions", tmp_path / "valid.bed"))
    assert res.exit_code == 0, res.output
    table = [r.split("\t") for r in (tmp_path / "m" / "test_pearson.tsv").read_text().splitlines()[1:5]]
    got = {r[0]: float(r[2]) for r in table}
    net, _ = load_model_dir(tmp_path / "m")
    ref = Reference(str(FASTA))
    spans = [20480 + 512 * i for i in range(4)]
    x = np.stack([one_hot(ref.codes("chr1", s - 256, s - 256 + 1024)) for s in spans])
    with torch.no_grad():
        p = net(torch.from_numpy(x)).numpy()[..., 0].ravel()  # motif_a
    bw = pyBigWig.open(str(TRACKS / "motif_a.bw"))
    raw = np.nan_to_num(np.array(bw.values("chr1", 20480, 22528))).reshape(-1, 32)  # (64 bins, 32 bp)
    soft = lambda y, c: np.where(y > c, c + np.sqrt(np.maximum(y - c, 0)), y)  # noqa: E731
    want = np.corrcoef(p, soft(raw.max(1), 2.0))[0, 1]
    # the test pass scores its 4 windows in one batch of 4 (batches of 32), as here: the same
    # float32 outputs on any CPU; left are the TSV's 6 digits (<= 5e-7), float32 vs float64
    # targets (~1e-7 of r) and float64 sums in another order
    assert got["motif_a"] == pytest.approx(want, abs=1e-6)
    # the default (mean, clip 32) would give another r: the check tells the two apart
    assert abs(np.corrcoef(p, soft(raw.mean(1), 32.0))[0, 1] - want) > 1e-3

def test_soft_clip_compresses_only_the_excess():
    from genointerp.tracks.data import soft_clip

    y = np.array([10.0, 32.0, 36.0, 132.0], dtype=np.float32)
    np.testing.assert_array_equal(soft_clip(y, 32.0), [10.0, 32.0, 34.0, 42.0])  # 32 + sqrt(4), 32 + sqrt(100)
    assert soft_clip(y, None) is y


def string_cpg_feature(fa, chrom: str, start: int, smooth: int = 9) -> np.ndarray:
    """(16,) CpG count per 32 bp bin of the 1,024 bp window at `start`, from the FASTA text (a CpG
    counts in its C's bin), averaged over the 9 bins centred on each (those inside the window), the
    central 16 bins: what the cpg control computes, by string counting."""
    n = fa.get_reference_length(chrom)
    seq = ("N" * max(0, -start) + fa.fetch(chrom, max(start, 0), min(start + 1024, n)).upper()).ljust(1024, "N")
    counts = np.array([sum(seq[i : i + 2] == "CG" for i in range(b * 32, b * 32 + 32)) for b in range(32)], float)
    half = smooth // 2
    smoothed = np.array([counts[max(0, b - half) : b + half + 1].mean() for b in range(32)])
    return smoothed[8:24]


def test_cpg_control_is_smoothed_cpg_density_fitted_on_the_training_regions(model, cli, tmp_path):
    import pysam

    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions
    from genointerp.io.tracks import read_targets
    from genointerp.tracks.data import WindowGeometry, build_windows

    (tmp_path / "test.bed").write_text("chr2\t10000\t20000\n")
    (tmp_path / "fit.bed").write_text("chr1\t0\t40000\n")
    res = cli("evaluate-tracks", "-m", model, "--controls", "--fit-regions", tmp_path / "fit.bed", "-R", FASTA,
              "--targets", TARGETS, "--regions", tmp_path / "test.bed", "-o", tmp_path / "e.tsv", "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert "over the cpg control" in res.stderr
    rows = [r.split("\t") for r in (tmp_path / "e.tsv").read_text().splitlines()]
    assert rows[0] == ["track", "group", "pearson", "pearson_cpg", "pearson_gc"]
    got = np.array([float(r[3]) for r in rows[1:5]])

    ref, fa = Reference(str(FASTA)), pysam.FastaFile(str(FASTA))

    def windows(bed):
        w = build_windows(ref, read_targets(str(TARGETS)), read_regions(str(bed), ref), WindowGeometry(1024, 32, 16),
                          "mean", None, 0.5, lambda m: None, lambda m: None, 32.0)
        f = np.stack([string_cpg_feature(fa, w.coordinates(i)[0], int(w.starts[i])) for i in range(len(w))])
        return f.ravel(), w.batch(np.arange(len(w)))[1].reshape(-1, 4)

    # r of a line fitted on chr1 = the feature's r on chr2 with the sign of the chr1 slope
    f_fit, y_fit = windows(tmp_path / "fit.bed")
    f_test, y_test = windows(tmp_path / "test.bed")
    sign = np.sign([np.polyfit(f_fit, y_fit[:, t], 1)[0] for t in range(4)])
    want = sign * [np.corrcoef(f_test, y_test[:, t])[0, 1] for t in range(4)]
    np.testing.assert_allclose(got, want, atol=1e-5)

    # -m cpg first: the same control, its column first, on the windows and tracks of the model after it
    res = cli("evaluate-tracks", "-m", "cpg", "-m", model, "--fit-regions", tmp_path / "fit.bed", "-R", FASTA,
              "--targets", TARGETS, "--regions", tmp_path / "test.bed", "-o", tmp_path / "e2.tsv", "--device", "cpu")
    assert res.exit_code == 0, res.output
    rows2 = [r.split("\t") for r in (tmp_path / "e2.tsv").read_text().splitlines()]
    assert rows2[0] == ["track", "group", "pearson", "pearson_2"]
    assert [r[2] for r in rows2[1:]] == [r[3] for r in rows[1:]] and [r[3] for r in rows2[1:]] == [r[2] for r in rows[1:]]


def test_controls_without_training_regions_are_a_usage_error(model, cli, tmp_path):
    res = cli("evaluate-tracks", "-m", model, "--controls", "-R", FASTA, "--targets", TARGETS, "--chroms", "chr2",
              "-o", tmp_path / "e.tsv")
    assert res.exit_code == 2
    assert_one_error_line(res, "--fit-regions")
    (tmp_path / "fit.bed").write_text("chr2\t0\t20000\n")
    res = cli("evaluate-tracks", "-m", model, "-m", "gc", "--fit-regions", tmp_path / "fit.bed", "-R", FASTA,
              "--targets", TARGETS, "--chroms", "chr2", "-o", tmp_path / "e.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, "no windows to fit the controls on")
    assert not (tmp_path / "e.tsv").exists()


def _jund_targets(tmp_path) -> Path:
    """The test targets with motif_a (the AP-1 site TGACTCA) named as a JUND track, absolute paths."""
    rows = TARGETS.read_text().splitlines()
    rows[1] = rows[1].replace("motif_a\t", "cellX.JUND\t")
    out = tmp_path / "jund.tsv"
    out.write_text("\n".join(r.replace("\tmotif_", f"\t{TRACKS}/motif_").replace("\tpeaks.", f"\t{TRACKS}/peaks.")
                             for r in rows) + "\n")
    return out


def test_motif_init_starts_the_stem_from_jaspar_and_freezing_keeps_it(tmp_path, cli):
    """motif_a is the AP-1 site TGACTCA, JUND's motif: named as a JUND track, its JASPAR profile
    becomes the stem's first filter, the other filters come from the broad set, and a filter frozen
    for the only epoch leaves training exactly as it started."""
    from genointerp.model_folder import load_model_dir
    from genointerp.tracks.motifs import RELEASE, _profiles, motif_filter, stem_conv

    args = ["train-tracks", "-R", FASTA, "--targets", _jund_targets(tmp_path), *SMALL, "--epochs", 1, "--motif-init",
            "jaspar"]
    assert cli(*args, "--motif-freeze-epochs", 1, "-o", tmp_path / "frozen").exit_code == 0
    info = json.loads((tmp_path / "frozen" / "config.json").read_text())["training"]["motif_init"]
    assert info["source"].startswith(RELEASE) and info["freeze_epochs"] == 1
    assert len(info["filters"]) == 8 and info["filters"][0].endswith(" JUND (factor)")  # width 16: 8 stem filters
    assert all(f.endswith("(broad)") for f in info["filters"][1:])
    jund = next(m for m in _profiles(RELEASE) if m.matrix_id == info["filters"][0].split()[0])
    weight, bias = motif_filter(jund.counts, 15)
    conv = stem_conv(load_model_dir(tmp_path / "frozen")[0])
    np.testing.assert_array_equal(conv.weight[0].detach().numpy(), weight)
    assert conv.bias[0].item() == np.float32(bias)
    # without freezing, the same run moves the filter; --motif-filters 3 leaves the other 5 random
    assert cli(*args, "--motif-filters", 3, "-o", tmp_path / "free").exit_code == 0
    moved = stem_conv(load_model_dir(tmp_path / "free")[0]).weight[0].detach().numpy()
    assert not np.array_equal(moved, weight)
    free = json.loads((tmp_path / "free" / "config.json").read_text())["training"]["motif_init"]["filters"]
    assert free == info["filters"][:3]

    res = cli("train-tracks", "-R", FASTA, "--targets", TARGETS, *SMALL, "--motif-freeze-epochs", 1, "-o", tmp_path / "x")
    assert res.exit_code == 2
    assert_one_error_line(res, "--motif-init jaspar")


def test_motif_scan_reads_the_named_factors_motif_and_predicts(model, cli, tmp_path):
    """--motif-scan jaspar scans JUND's JASPAR profile (the only factor the track ids name) beside
    the trunk: its read-out starts from a least-squares fit (the AP-1 track reads the scan), the
    matrix is saved with the model and predict-tracks needs nothing more; added to a trained model
    with lr 0, only the read-out is new (zeroed, the model predicts as before); a second scan, or
    track ids naming no factor, is one error line."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.tracks.motifs import scan_motifs

    targets = _jund_targets(tmp_path)
    base = ["train-tracks", "-R", FASTA, "--targets", targets, *SMALL, "--epochs", 2, "--motif-scan", "jaspar"]
    res = cli(*base, "-o", tmp_path / "scan")
    assert res.exit_code == 0, res.output
    assert "motif scan: 1 JASPAR profiles of the tracked factors (JUND)" in res.output
    scanned, cfg = load_model_dir(tmp_path / "scan")
    want = scan_motifs([{"id": "cellX.JUND"}])
    assert cfg["model"]["motifs"] == [f"{want[0].matrix_id} JUND"] and cfg["model"]["motif_kernel"] == want[0].weight.shape[1]
    np.testing.assert_array_equal(scanned.output.scan.pwm[0].numpy(), want[0].weight)
    assert "motif read-out fitted by least squares" in res.output
    assert scanned.output.motif_heads[0].weight[0].abs().sum() > 0  # fitted, then trained
    res = cli("predict-tracks", "--model", tmp_path / "scan", "-R", FASTA, "--regions", REGIONS, "-o", tmp_path / "pred")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "pred" / "cellX.JUND.bw").exists()

    res = cli("train-tracks", "-R", FASTA, "--targets", targets, *SMALL, "--epochs", 1, "--lr", 0,
              "--motif-scan", "jaspar", "--init-from", model, "-o", tmp_path / "ft")
    assert_one_error_line(res, "--init-from")  # the model's tracks are named otherwise
    res = cli(*base[:-2], "--epochs", 1, "--lr", 0, "--init-from", tmp_path / "scan", "--motif-scan", "jaspar",
              "-o", tmp_path / "twice")
    assert_one_error_line(res, "has a motif scan already")
    plain = tmp_path / "plain"
    assert cli("train-tracks", "-R", FASTA, "--targets", targets, *SMALL, "--epochs", 1, "-o", plain).exit_code == 0
    res = cli(*base, "--lr", 0, "--epochs", 1, "--init-from", plain, "-o", tmp_path / "added")
    assert res.exit_code == 0, res.output
    assert "a motif scan added beside its trunk" in res.output
    a, _ = load_model_dir(plain)
    b, _ = load_model_dir(tmp_path / "added")
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (3, 1024), generator=torch.Generator().manual_seed(0)), 4)
    with torch.inference_mode():
        assert not torch.allclose(b(x.float()), a(x.float()))
        for head in b.output.motif_heads:
            head.weight.zero_()
            head.bias.zero_()
        torch.testing.assert_close(b(x.float()), a(x.float()))
    res = cli("train-tracks", "-R", FASTA, "--targets", TARGETS, *SMALL, "--motif-scan", "jaspar", "-o", tmp_path / "none")
    assert_one_error_line(res, "no track names a factor")
    assert not any((tmp_path / d).exists() for d in ("ft", "twice", "none"))


def test_init_from_fine_tunes_a_trained_model(model, cli, tmp_path):
    """--init-from starts from the model's weights and architecture: with lr 0 nothing moves, so
    the fine-tuned model is the starting one; other windows or tracks are one error line."""
    res = cli("train-tracks", "-R", FASTA, "--targets", TARGETS, *SMALL, "--lr", 0, "--epochs", 1, "--width", 32,
              "--init-from", model, "-o", tmp_path / "ft")
    assert res.exit_code == 0, res.output
    a, b = load_file(str(model / "model.safetensors")), load_file(str(tmp_path / "ft" / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)  # --width 32 was not used
    cfg = json.loads((tmp_path / "ft" / "config.json").read_text())
    assert cfg["training"]["init_from"]["path"] == str(model.resolve()) and cfg["training"]["width"] == 16
    res = cli("train-tracks", "-R", FASTA, "--targets", TARGETS, "--seq-len", 1024, "--bin-size", 32,
              "--target-bins", 8, "--epochs", 1, "--device", "cpu", "--init-from", model, "-o", tmp_path / "bad")
    assert_one_error_line(res, "--init-from")
    assert not (tmp_path / "bad").exists()


def test_aux_targets_are_trained_on_and_dropped_from_the_saved_model(model, cli, tmp_path):
    """Two of the four tracks as --targets, the other two as --aux-targets: the saved model has the
    two targets only (one head each group), scores them only, and records the auxiliary ones; with
    --init-from and lr 0 the auxiliary heads come and go without changing a weight."""
    main, aux = tmp_path / "main.tsv", tmp_path / "aux.tsv"
    header, *rows = [line.split("\t") for line in TARGETS.read_text().splitlines()]
    for row in rows:  # relative track paths are read from the TSV's folder
        row[1] = str(TRACKS / row[1])
    main.write_text("\n".join("\t".join(r) for r in [header, rows[0], rows[2]]) + "\n")  # motif_a (DNase), cellX.TF1
    aux.write_text("\n".join("\t".join(r) for r in [header, rows[1], rows[3]]) + "\n")  # motif_b, cellX.TF2 (ChIP)
    base = ["train-tracks", "-R", FASTA, "--targets", main, *SMALL, "--epochs", 1]
    res = cli(*base, "--aux-targets", aux, "-o", tmp_path / "aux")
    assert res.exit_code == 0, res.output
    assert "2 auxiliary tracks in 1 group(s)" in res.output
    cfg = json.loads((tmp_path / "aux" / "config.json").read_text())
    assert [t["id"] for t in cfg["tracks"]] == ["motif_a", "cellX.TF1.conservative"]
    assert cfg["model"]["n_tracks"] == 2 and cfg["model"]["track_groups"] == [1, 1]
    assert cfg["training"]["aux_targets"]["tracks"] == ["motif_b", "cellX.TF2.conservative"]
    assert not any(k.startswith("output.heads.2") for k in load_file(str(tmp_path / "aux" / "model.safetensors")))
    table = (tmp_path / "aux" / "test_pearson.tsv").read_text()
    assert "motif_a" in table and "motif_b" not in table
    res = cli("predict-tracks", "--model", tmp_path / "aux", "-R", FASTA, "--regions", REGIONS, "-o", tmp_path / "pred")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "pred").glob("*.bw")) == ["cellX.TF1.conservative.bw", "motif_a.bw"]

    # fine-tuning with auxiliary tracks: with lr 0 the saved model is the starting one
    res = cli(*base, "--lr", 0, "--init-from", tmp_path / "aux", "--aux-targets", aux, "-o", tmp_path / "ft")
    assert res.exit_code == 0, res.output
    a, b = load_file(str(tmp_path / "aux" / "model.safetensors")), load_file(str(tmp_path / "ft" / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)

    res = cli(*base, "--aux-targets", main, "-o", tmp_path / "clash")
    assert_one_error_line(res, "'cellX.TF1.conservative' is in --targets too")
    assert not (tmp_path / "clash").exists()


def test_added_track_heads_leave_the_outputs_and_dropping_them_restores_the_model():
    """add_track_groups appends zero-weight heads (rate softplus(0) = log 2) after the model's own
    tracks, whose outputs do not move; drop_track_groups keeps only the first heads."""
    import math

    import torch

    from genointerp.model_folder import build_model
    from genointerp.models.track_configs import default_track_config
    from genointerp.models.track_heads import add_track_groups, drop_track_groups

    torch.manual_seed(0)
    for arch in ("swin1d", "maxpool-cnn"):
        m = build_model(default_track_config(arch, 1024, 32, 16, 3, (1, 2), 16).to_dict()).eval()
        x = torch.nn.functional.one_hot(torch.randint(0, 4, (2, 1024)), 4).float()
        wide = add_track_groups(m, (4, 2)).eval()
        assert wide.config.track_groups == (1, 2, 4, 2) and wide.config.n_tracks == 9
        with torch.inference_mode():
            y, yw = m(x), wide(x)
            assert yw.shape == (2, 16, 9)
            torch.testing.assert_close(yw[..., :3], y)
            torch.testing.assert_close(yw[..., 3:], torch.full_like(yw[..., 3:], math.log(2)))
            back = drop_track_groups(wide, 2).eval()
            assert back.config == m.config
            torch.testing.assert_close(back(x), y)
        with pytest.raises(ValueError, match="cannot keep 5 of 4"):
            drop_track_groups(wide, 5)


def test_balanced_track_weights_rescale_each_track_to_the_common_mean():
    """Track means 2, 0.5 and 0 over the training windows: weights 1.25/2, 1.25/0.5 and 1 (no signal);
    the weighted loss has the gradient of the plain loss on rates and targets scaled by the weights."""
    import torch

    from genointerp.tracks.data import ArrayWindows
    from genointerp.tracks.task import TrackTask, balanced_weights

    y = np.zeros((6, 4, 3), np.float32)
    y[:, :, 0], y[:3, :, 1] = 2.0, 1.0
    src = ArrayWindows(np.zeros((6, 8, 4), np.uint8), y)
    w = balanced_weights(src, batch_size=4)  # batches that do not divide the windows
    np.testing.assert_allclose(w, [0.625, 2.5, 1.0])

    rng = np.random.default_rng(0)
    rate = torch.tensor(rng.uniform(0.1, 3, (5, 4, 3)), dtype=torch.float32, requires_grad=True)
    target = torch.tensor(rng.poisson(1.0, (5, 4, 3)), dtype=torch.float32)
    TrackTask(src, src, False, 0, weights=w).loss(rate, target).backward()
    weighted = rate.grad.clone()
    rate.grad = None
    scale = torch.from_numpy(w)
    TrackTask(src, src, False, 0).loss(rate * scale, target * scale).backward()
    torch.testing.assert_close(weighted, rate.grad)
    rate.grad = None
    TrackTask(src, src, False, 0, weights=np.ones(3, np.float32)).loss(rate, target).backward()
    weights_one = rate.grad.clone()
    rate.grad = None
    TrackTask(src, src, False, 0).loss(rate, target).backward()
    torch.testing.assert_close(weights_one, rate.grad)


def test_mse_loss_weighs_each_track_by_its_inverse_training_variance():
    """Track 0 is 0 or 4 in half of its bins (mean 2, variance 4), track 1 constant (weight 1):
    the loss is the mean of squared errors times 1/4 and 1."""
    import torch

    from genointerp.tracks.data import ArrayWindows
    from genointerp.tracks.task import TrackTask, inverse_variance_weights, target_moments

    y = np.zeros((4, 2, 2), np.float32)
    y[:2, :, 0], y[:, :, 1] = 4.0, 3.0
    src = ArrayWindows(np.zeros((4, 8, 4), np.uint8), y)
    mean, var = target_moments(src, batch_size=3)
    np.testing.assert_allclose(mean, [2.0, 3.0])
    np.testing.assert_allclose(var, [4.0, 0.0])
    w = inverse_variance_weights(src)
    np.testing.assert_allclose(w, [0.25, 1.0])
    rate, target = torch.tensor([[[1.0, 2.0]]]), torch.tensor([[[3.0, 5.0]]])
    loss = TrackTask(src, src, False, 0, weights=w, loss="mse").loss(rate, target)
    assert loss.item() == pytest.approx((4 * 0.25 + 9 * 1.0) / 2)


def test_mse_loss_trains_is_recorded_and_refuses_balanced_weights(cli, tmp_path):
    res = cli(*train_args(tmp_path / "mse", "--epochs", 1, "--loss", "mse"))
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "mse" / "config.json").read_text())["training"]["loss"] == "mse"
    res = cli(*train_args(tmp_path / "both", "--epochs", 1, "--loss", "mse", "--track-weights", "balanced"))
    assert res.exit_code == 2
    assert_one_error_line(res, "training variance already")
    assert not (tmp_path / "both").exists()


def test_track_weights_balanced_trains_another_model_and_is_recorded(model, cli, tmp_path):
    res = cli(*train_args(tmp_path / "bal", "--epochs", 2, "--track-weights", "balanced"))
    assert res.exit_code == 0, res.output
    assert "track loss weights" in res.output
    cfg = json.loads((tmp_path / "bal" / "config.json").read_text())
    assert cfg["training"]["track_weights"] == "balanced"
    assert json.loads((model / "config.json").read_text())["training"]["track_weights"] == "none"
    a, b = load_file(str(model / "model.safetensors")), load_file(str(tmp_path / "bal" / "model.safetensors"))
    assert not all(a[k].equal(b[k]) for k in a)  # same seed and data: only the loss differs


def test_stem_filters_sets_the_swin1d_stem_and_is_refused_where_it_cannot_apply(model, cli, tmp_path):
    res = cli(*train_args(tmp_path / "wide", "--epochs", 1, "--stem-filters", 24))
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "wide" / "config.json").read_text())
    assert cfg["model"]["stem_filters"] == 24 and cfg["model"]["d_model"] == 8  # width 16: d_model 8
    assert load_file(str(tmp_path / "wide" / "model.safetensors"))["stem.conv.weight"].shape[0] == 24
    res = cli(*train_args(tmp_path / "cnn", "--epochs", 1, "--stem-filters", 24, "--arch", "maxpool-cnn"))
    assert_one_error_line(res, "swin1d stem")
    res = cli(*train_args(tmp_path / "narrow", "--epochs", 1, "--stem-filters", 8, "--init-from", model))
    assert_one_error_line(res, "can only add filters")
    assert not (tmp_path / "cnn").exists() and not (tmp_path / "narrow").exists()


def test_init_from_with_head_width_widens_the_head_and_predicts_as_before(model, cli, tmp_path):
    """With lr 0 nothing moves, so the widened model is the starting one plus hidden units read with
    weight 0; a head no wider than the model's is one error line and no output."""
    import torch

    from genointerp.model_folder import load_model_dir

    a, _ = load_model_dir(model)
    have = a.output.pointwise.out_features
    res = cli(*train_args(tmp_path / "ft", "--epochs", 1, "--lr", 0, "--head-width", have + 40, "--init-from", model))
    assert res.exit_code == 0, res.output
    assert f"output head widened from {have} to {have + 40} hidden units" in res.output
    b, cfg = load_model_dir(tmp_path / "ft")
    assert cfg["model"]["head_width"] == have + 40 and b.output.heads[0].in_features == have + 40
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (3, 1024), generator=torch.Generator().manual_seed(0)), 4)
    with torch.inference_mode():
        torch.testing.assert_close(b.eval()(x.float()), a.eval()(x.float()))
    res = cli(*train_args(tmp_path / "narrow", "--epochs", 1, "--head-width", have, "--init-from", model))
    assert_one_error_line(res, "can only add units")
    assert not (tmp_path / "narrow").exists()
    res = cli(*train_args(tmp_path / "fresh", "--epochs", 1, "--head-width", 24))  # from scratch: any size
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "fresh" / "config.json").read_text())["model"]["head_width"] == 24
    assert load_file(str(tmp_path / "fresh" / "model.safetensors"))["output.heads.0.weight"].shape[1] == 24


def test_init_from_with_stem_filters_widens_the_stem_and_predicts_as_before(model, cli, tmp_path):
    """With lr 0 nothing moves, so the widened model is the starting one plus filters read with weight 0."""
    import torch

    from genointerp.model_folder import load_model_dir

    res = cli(*train_args(tmp_path / "ft", "--epochs", 1, "--lr", 0, "--stem-filters", 20, "--init-from", model))
    assert res.exit_code == 0, res.output
    assert "stem widened from 8 to 20 filters" in res.output
    (a, _), (b, cfg) = load_model_dir(model), load_model_dir(tmp_path / "ft")
    assert cfg["model"]["stem_filters"] == 20 and b.stem.conv.out_channels == 20
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (3, 1024), generator=torch.Generator().manual_seed(0)), 4)
    with torch.inference_mode():
        torch.testing.assert_close(b.eval()(x.float()), a.eval()(x.float()))
