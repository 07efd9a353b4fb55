"""Track evaluation: streaming Pearson, group means, TSV layout, Figure 2/3 PNGs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genointerp.tracks_eval import (
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
    for name in ("scatter.png", "region.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 1000
