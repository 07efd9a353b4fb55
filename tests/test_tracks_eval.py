"""Track evaluation: streaming Pearson, group means, TSV layout, Figure 2/3 PNGs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genointerp.tracks.pearson import (
    PearsonAccumulator,
    group_means,
    plot_pearson_scatter,
    plot_region,
    write_evaluation_tsv,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _batches(rng, n_batches=4, tracks=5, offset=0.0):
    truth = offset + rng.normal(size=(n_batches, 3, 16, tracks))
    pred = 0.6 * (truth - offset) + rng.normal(size=truth.shape) + offset
    return pred.astype(np.float32) if offset == 0 else pred, truth


def _corrcoef(pred, truth):
    x, y = pred.reshape(-1, pred.shape[-1]), truth.reshape(-1, truth.shape[-1])
    return np.array([np.corrcoef(x[:, t].astype(np.float64), y[:, t])[0, 1] for t in range(x.shape[1])])


def test_accumulator_matches_corrcoef_over_batches():
    rng = np.random.default_rng(1)
    pred, truth = _batches(rng)
    acc = PearsonAccumulator(5)
    for b in range(pred.shape[0]):
        acc.update(pred[b], truth[b])  # (B, bins, T) batches
    acc.update(np.empty((0, 5)), np.empty((0, 5)))
    np.testing.assert_allclose(acc.result(), _corrcoef(pred, truth), rtol=1e-10, atol=1e-12)
    # (N, T) input and merging two accumulators give the same answer
    a, b = PearsonAccumulator(5), PearsonAccumulator(5)
    a.update(pred[:1].reshape(-1, 5), truth[:1].reshape(-1, 5))
    b.update(pred[1:], truth[1:])
    a.merge(b)
    np.testing.assert_allclose(a.result(), acc.result(), rtol=1e-10)


def test_accumulator_large_offset():
    rng = np.random.default_rng(2)
    pred, truth = _batches(rng, offset=1e4)  # mean 1e4, sd about 1: naive Σx² loses ~8 digits
    acc = PearsonAccumulator(5)
    for b in range(pred.shape[0]):
        acc.update(pred[b], truth[b])
    np.testing.assert_allclose(acc.result(), _corrcoef(pred, truth), rtol=1e-9)


def test_constant_track_is_nan():
    rng = np.random.default_rng(3)
    pred, truth = _batches(rng, tracks=3)
    truth[..., 1] = 0.1  # constant truth
    pred[..., 2] = 7.3  # constant prediction
    acc = PearsonAccumulator(3)
    for b in range(pred.shape[0]):
        acc.update(pred[b], truth[b])
    r = acc.result()
    assert np.isfinite(r[0]) and math.isnan(r[1]) and math.isnan(r[2])
    assert np.isnan(PearsonAccumulator(2).result()).all()  # no data at all
    with pytest.raises(ValueError):
        acc.update(np.zeros((2, 4)), np.zeros((2, 4)))


def test_group_means():
    r = np.array([0.2, 0.4, np.nan, 0.9, np.nan])
    means = group_means(r, ["DNase", "DNase", "ChIP", "ChIP", "CAGE"])
    assert list(means) == ["DNase", "ChIP", "CAGE", "ALL"]
    assert means["DNase"] == pytest.approx(0.3) and means["ChIP"] == pytest.approx(0.9)
    assert math.isnan(means["CAGE"]) and means["ALL"] == pytest.approx(0.5)


def test_evaluation_tsv_layout(tmp_path):
    path = tmp_path / "eval.tsv"
    write_evaluation_tsv(path, ["t1", "t2", "t3"], ["DNase", "ChIP", "DNase"], [0.5, np.nan, 0.25],
                         {"pearson_baseline": np.array([0.1, 0.2, 0.3]), "note": ["a", "b", "c"]})
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    assert rows[0] == ["track", "group", "pearson", "pearson_baseline", "note"]
    assert rows[1] == ["t1", "DNase", "0.5", "0.1", "a"]
    assert rows[2] == ["t2", "ChIP", "nan", "0.2", "b"]
    assert rows[4] == ["(mean)", "DNase", "0.375", "0.2", "NA"]
    assert rows[5] == ["(mean)", "ChIP", "nan", "0.2", "NA"]
    assert rows[6] == ["(mean)", "ALL", "0.375", "0.2", "NA"]
    assert len(rows) == 7
    with pytest.raises(ValueError):
        write_evaluation_tsv(path, ["t1"], ["g", "h"], [0.5])


def test_plots_write_png(tmp_path):
    rng = np.random.default_rng(4)
    r_a, r_b = rng.uniform(0, 0.8, 12), rng.uniform(0, 0.8, 12)
    r_b[3] = np.nan
    groups = ["DNase"] * 5 + ["ChIP"] * 7
    plot_pearson_scatter(r_a, r_b, groups, "maxpool-cnn", "swin1d", tmp_path / "scatter.png")
    bins, tracks = 80, 8
    truth = rng.gamma(0.5, 2.0, (bins, tracks))
    pred = truth + rng.normal(0, 0.5, truth.shape).clip(0)
    starts = 30_000_000 + 128 * np.arange(bins)
    plot_region(pred, truth, starts, "chr20", [f"track{i}" for i in range(tracks)], tmp_path / "region.png")
    assert_scatter_plot(tmp_path / "scatter.png", n_groups=2)
    assert_region_plot(tmp_path / "region.png", n_tracks=6)  # the first 6 of the 8 tracks


def png_rgb(path, width_in: float, height_in: float) -> np.ndarray:
    """int RGB 0-255 (h, w, 3) of a tracks_eval PNG, checked to be figsize x 120 dpi."""
    import matplotlib.image

    assert path.read_bytes()[:8] == PNG_MAGIC
    im = matplotlib.image.imread(path)
    assert im.shape[:2] == (round(120 * height_in), round(120 * width_in))
    return (im[..., :3] * 255).round().astype(int)


def assert_scatter_plot(path, n_groups: int) -> None:
    """Figure 2 (5.2 x 5 in) shows each group's points: markers in tab10 colour k at alpha 0.75 over
    white. A marker (s=14 pt^2, about 39 px^2 at 120 dpi) has about 20 px of its exact colour."""
    import matplotlib

    px = png_rgb(path, 5.2, 5.0)
    for k in range(n_groups):
        colour = 255 * (0.75 * np.array(matplotlib.colormaps["tab10"](k)[:3]) + 0.25)
        assert (np.abs(px - colour).max(-1) <= 1).sum() >= 40, k  # 2 markers or more (one is the legend's)


def assert_region_plot(path, n_tracks: int) -> None:
    """Figure 3 (8 x (1 + 1.3 per track) in) shows observed signal filled in grey 0.75 (RGB 191) and
    the prediction as a tab:blue line: both cover far more than a legend sample (under 100 px)."""
    px = png_rgb(path, 8.0, 1.0 + 1.3 * n_tracks)
    assert (px == 191).all(-1).sum() > 0.01 * px.shape[0] * px.shape[1]
    assert (px[..., 2] - px[..., 0] > 50).sum() > 500 * n_tracks  # blue over red: the line and its antialiasing


# --- controls that need no training (tracks.controls) ---

def _one_hot(seq: str) -> np.ndarray:
    from genointerp.seq.alphabet import encode
    from genointerp.seq.onehot import one_hot

    return one_hot(encode(seq.encode()))[None]


def test_control_features_count_cpg_and_gc_per_bin_and_smooth():
    import torch

    from genointerp.tracks.controls import bin_feature

    # bins of 4 bp; the CpG across the border of bins 3 and 4 counts in bin 3 (its C); N is no base
    x = torch.from_numpy(_one_hot("CGCG" "AAAA" "ACGT" "GGCC" "GANN"))
    np.testing.assert_array_equal(bin_feature(x, "cpg", 4, 1)[0].numpy(), [2, 0, 1, 1, 0])
    np.testing.assert_allclose(bin_feature(x, "gc", 4, 1)[0].numpy(), [1, 0, 0.5, 1, 0.25])
    # a centred mean over 3 bins, over the 2 bins there are at each edge
    np.testing.assert_allclose(bin_feature(x, "cpg", 4, 3)[0].numpy(), [1, 1, 2 / 3, 2 / 3, 0.5], rtol=1e-6)


def test_controls_fit_a_line_per_track_on_the_training_windows():
    import torch

    from genointerp.tracks.controls import ControlConfig, ControlModel, fit_controls
    from genointerp.tracks.data import ArrayWindows
    from genointerp.tracks.task import evaluate

    rng = np.random.default_rng(0)
    seqs = np.eye(4, dtype=np.uint8)[rng.integers(0, 4, (12, 64))]  # 12 windows of 64 bp, one-hot
    model = ControlModel(ControlConfig("cpg", 64, 8, 4, 2, smooth=3))
    f = model.feature(torch.from_numpy(seqs.astype(np.float32))).numpy()  # (12, 4) central bins
    y = np.stack([2 * f + 1, 3 - f], -1).astype(np.float32)  # track 0 follows CpG, track 1 avoids it
    fit_controls([model], ArrayWindows(seqs, y), batch_size=5)
    np.testing.assert_allclose(model.slope.numpy(), [2, -1], atol=1e-5)
    np.testing.assert_allclose(model.intercept.numpy(), [1, 3], atol=1e-5)
    r, _ = evaluate(model, ArrayWindows(seqs, y), "cpu")
    np.testing.assert_allclose(r, [1, 1], atol=1e-6)  # the fitted sign makes an avoided feature positive
    # a feature constant over the training windows: slope 0, the prediction is each track's mean
    flat = ControlModel(ControlConfig("gc", 64, 8, 4, 2))
    fit_controls([flat], ArrayWindows(np.zeros_like(seqs), y))
    np.testing.assert_array_equal(flat.slope.numpy(), [0, 0])
    np.testing.assert_allclose(flat.intercept.numpy(), y.reshape(-1, 2).mean(0), rtol=1e-6)


def test_a_motif_filter_scores_its_consensus_one_above_zero_and_random_dna_below():
    import torch

    from genointerp.tracks.motifs import motif_filter

    counts = {"A": [0, 9, 0, 0, 1], "C": [0, 0, 10, 0, 0], "G": [10, 0, 0, 0, 9], "T": [0, 1, 0, 10, 0]}  # GACTG
    w, b = motif_filter(counts, 7)  # shorter than the kernel: centred, a zero column each side
    assert w.shape == (4, 7) and not w[:, 0].any() and not w[:, -1].any()
    conv = torch.nn.Conv1d(4, 1, 7, padding="same")
    with torch.no_grad():
        conv.weight[0], conv.bias[0] = torch.from_numpy(w), b
        score = conv(torch.from_numpy(_one_hot("AAAAAGACTGAAAAA")).transpose(1, 2))[0, 0].numpy()
        rng = np.random.default_rng(1)
        random = conv(torch.from_numpy(_one_hot("".join(rng.choice(list("ACGT"), 400)))).transpose(1, 2))
    assert score.argmax() == 7 and score[7] == pytest.approx(1.0, abs=1e-5)  # the consensus, at its centre
    assert float(random.mean()) < -2
    # longer than the kernel: the most informative run of columns is kept
    long = {k: [2, 3, 2, 3] + v for k, v in counts.items()}
    long["A"][:4] = [2, 2, 3, 2]
    w2, _ = motif_filter(long, 5)
    np.testing.assert_allclose(w2 / w2.max(), w[:, 1:6] / w[:, 1:6].max(), rtol=1e-6)


def test_a_centred_motif_filter_scores_a_quarter_at_its_consensus_and_zero_on_average():
    from genointerp.tracks.motifs import motif_filter

    counts = {"A": [0, 9, 0, 0, 1], "C": [0, 0, 10, 0, 0], "G": [10, 0, 0, 0, 9], "T": [0, 1, 0, 10, 0]}  # GACTG
    w, b = motif_filter(counts, 5, "centred")
    assert b == 0
    np.testing.assert_allclose(w.mean(0), 0, atol=1e-7)  # every column: a uniform base scores 0 on average
    assert w.max(0).sum() == pytest.approx(0.25, abs=1e-6)  # the consensus
    with pytest.raises(ValueError, match="unknown motif scale"):
        motif_filter(counts, 5, "other")
