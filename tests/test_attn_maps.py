"""attn-maps: attention capture, distance and rollout summaries, and the command end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import DATA, assert_one_error_line, run_cli
from genointerp.interpret.capture import AttentionCapture, LayerMaps, TokenGrid, capture_attention, output_grid
from genointerp.interpret.summaries import (AttentionAccumulator, layer_mean_distance, per_bp, rollout,
                                            rollout_importance, uniform_distance)

TRACKS = DATA / "tracks"
FASTA = TRACKS / "ref.fa.gz"
READS = DATA / "tumor_small.fq.gz"


def small_model(arch: str, seq_len: int = 256, **kw):
    from genointerp.model_folder import build_model
    from genointerp.models.track_configs import default_track_config
    from genointerp.models.xvir import XVirConfig

    torch.manual_seed(0)
    if arch == "xvir":
        config = XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, vocab_size=64)
        return build_model(config.to_dict()).eval(), torch.randint(0, 64, (3, 18))
    config = default_track_config(arch, seq_len, 16, 4, 2, width=16, window=8, **kw)
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (3, seq_len)), 4).float()
    return build_model(config.to_dict()).eval(), x


@pytest.mark.parametrize("arch", ["xvir", "swin1d", "enformer-like"])
def test_capture_leaves_outputs_unchanged_and_returns_documented_shapes(arch):
    model, x = small_model(arch)
    with torch.inference_mode():
        plain = model(x)
    out, layers = capture_attention(model, x)
    # explicit softmax vs fused kernel, same shapes: rounding only. Outputs are below 1 (float32 ulp
    # <= 6e-8 there); an attention sum has K <= 18 terms (tokens in a window or read) of weights
    # summing to 1, so it may move by K u = 1.1e-6 at the very worst and by an ulp or two in
    # practice (measured: at most 2 ulps = 1.2e-7); atol 1e-6 = 16 ulps
    torch.testing.assert_close(out, plain, rtol=0, atol=1e-6)
    assert plain.abs().max() < 1
    assert all(entry["module"].capture is None for entry in AttentionCapture(model).layout)  # hooks removed
    for layer in layers:
        b, h, n_win, q, k = layer.weights.shape
        assert (b, n_win, q, k) == (3, layer.grid.tokens // layer.window, layer.window, layer.window)
        assert layer.token_index.shape == (n_win, layer.window)
        assert sorted(layer.token_index.ravel().tolist()) == list(range(layer.grid.tokens))
        np.testing.assert_allclose(layer.weights.sum(-1), 1, atol=1e-5)
    if arch == "swin1d":
        c = model.config
        assert [lay.grid.resolution_bp for lay in layers] == [1, 1, 2, 2, 4, 4, 8, 8, 16]
        assert layers[1].kind == "shifted-window" and layers[1].token_index[0, 0] == layers[1].shift
        assert layers[-1].grid == TokenGrid(c.target_bins, c.bin_size, c.crop_bins * c.bin_size)


def test_captured_windows_match_the_window_layer_own_weights():
    """token_index says which tokens a captured window holds: compare with WindowAttention's own output."""
    from genointerp.nn.window import WindowAttention

    torch.manual_seed(1)
    wa = WindowAttention(8, 2, window=4, shift=2).eval()
    x = torch.randn(2, 12, 8)
    with torch.inference_mode():
        _, own = wa(x, need_weights=True)  # (B, n_win, H, w, w)
        calls = []
        wa.attn.capture = lambda module, w: calls.append(w)
        wa(x)
        wa.attn.capture = None
    got = calls[0].reshape(2, 3, 2, 4, 4).permute(0, 2, 1, 3, 4)
    torch.testing.assert_close(got, own.permute(0, 2, 1, 3, 4))
    idx = LayerMaps(0, "w", "shifted-window", 0, TokenGrid(12, 1), 4, 2, got.numpy()).token_index
    assert idx.tolist() == [[2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 0, 1]]


def test_mean_distance_of_a_hand_made_matrix():
    a = np.array([[1, 0, 0], [0.5, 0, 0.5], [0.25, 0.25, 0.5]], dtype=np.float32)
    layer = LayerMaps(0, "x", "global", 0, TokenGrid(3, 2), 3, 0, a[None, None, None])
    # token centres 0.5, 2.5, 4.5 bp: rows give 0, (0.5*2 + 0.5*2) = 2, (0.25*4 + 0.25*2) = 1.5
    np.testing.assert_allclose(layer_mean_distance(layer), [[(0 + 2 + 1.5) / 3]])
    assert uniform_distance(layer) == pytest.approx((0 + 2 + 4 + 2 + 0 + 2 + 4 + 2 + 0) / 9)


def test_mean_distance_leaves_out_the_wrapping_shifted_window():
    w = np.full((1, 1, 2, 2, 2), 0.5, dtype=np.float32)
    layer = LayerMaps(0, "s", "shifted-window", 0, TokenGrid(4, 10), 2, 1, w)  # windows (1, 2), (3, 0)
    np.testing.assert_allclose(layer_mean_distance(layer), [[5.0]])  # only window (1, 2): 0.5 * 10


@pytest.mark.parametrize("arch", ["xvir", "swin1d", "enformer-like"])
def test_rollout_rows_sum_to_one(arch):
    model, x = small_model(arch)
    _, layers = capture_attention(model, x)
    out = output_grid(model)
    r, grid = rollout(layers, out)
    assert r.shape == (3, out.tokens, grid.tokens)
    np.testing.assert_allclose(r.sum(-1), 1, atol=1e-9)
    imp, grid = rollout_importance(layers, out)
    np.testing.assert_allclose(imp, r.mean(1), atol=1e-12)
    length = 20 if arch == "xvir" else 256
    np.testing.assert_allclose(per_bp(imp, grid, length).mean(1), 1, atol=1e-9)  # 1 = uniform


def test_rollout_of_uniform_attention_spreads_evenly_over_the_crop_sources():
    """Uniform windows + patch merging + crop: every input token under the central output bins gets the same share."""
    n = 8
    l0 = LayerMaps(0, "a", "window", 0, TokenGrid(n, 1), 4, 0, np.full((1, 1, 2, 4, 4), 0.25, np.float32))
    out = TokenGrid(2, 2, 2)  # merge pairs, keep the central 2 of 4 merged tokens (bp 2-6)
    imp, _ = rollout_importance([l0], out)
    # bins cover tokens 2-5; the residual keeps half there, the windows (0-3, 4-7) spread the rest evenly
    np.testing.assert_allclose(imp[0], [1 / 16] * 2 + [3 / 16] * 4 + [1 / 16] * 2)


def test_accumulator_streams_the_mean():
    model, x = small_model("swin1d")
    _, layers = capture_attention(model, x)
    acc = AttentionAccumulator()
    acc.add([lay.with_weights(lay.weights[:1]) for lay in layers], np.ones((1, 4)))
    acc.add([lay.with_weights(lay.weights[1:]) for lay in layers], np.zeros((2, 4)))
    assert acc.n == 3
    for lay, mean, d in zip(layers, acc.mean_layers(), acc.mean_distance()):
        np.testing.assert_allclose(mean.weights[0], lay.weights.mean(0), atol=1e-6)
        np.testing.assert_allclose(d, layer_mean_distance(lay).mean(0), atol=1e-9)
    np.testing.assert_allclose(acc.mean_importance(), 1 / 3)


# --- the command ---------------------------------------------------------------------------------------
def test_attn_maps_on_reads_with_the_builtin_xvir_model(tmp_path, cli):
    out = tmp_path / "xv"
    res = cli("-q", "attn-maps", READS, "--max-reads", 3, "--zoom", "0-20", "--device", "cpu", "-o", out)
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "attention.json").read_text())
    assert doc["n_items"] == 3 and doc["model"]["architecture"] == "xvir"
    arrays = np.load(out / "attention.npz")
    w = arrays["layer00.weights"]
    assert w.shape == (3, 4, 1, 145, 145) and doc["arrays"]["layer00.weights"]["shape"] == list(w.shape)
    assert doc["layers"][0]["resolution_bp"] == 1 and doc["layers"][0]["span_bp"] == 6
    np.testing.assert_allclose(w.sum(-1), 1, atol=1e-5)
    assert arrays["rollout"].shape == (3, 150)
    rows = (out / "distance.tsv").read_text().splitlines()
    assert rows[0].startswith("layer\tname\tkind") and len(rows) == 1 + 4
    assert (out / "rollout.tsv").read_text().count("\n") == 1 + 3 * 150
    figs = {p.name for p in (out / "figures").iterdir()}
    first = doc["items"][0]["id"].replace("|", "_")
    assert {f"01_{first}.layers.png", f"01_{first}.kmers.layer0.png", "distance.png", "rollout.png"} <= figs


def test_attn_maps_picks_reads_by_id_and_means_them(tmp_path, cli, hostile):
    ids = ["human|1|20|71522|71672|+|0", "human|2|20|53271|53421|+|0"]
    args = ["-q", "attn-maps", READS, "--read-id", ids[0], "--read-id", ids[1], "--plot-items", 0, "--device", "cpu"]
    assert cli(*args, "-o", tmp_path / "each").exit_code == 0
    assert cli(*args, "--mean", "-o", tmp_path / "mean").exit_code == 0
    each, mean = np.load(tmp_path / "each" / "attention.npz"), np.load(tmp_path / "mean" / "attention.npz")
    assert [it["id"] for it in json.loads((tmp_path / "each" / "attention.json").read_text())["items"]] == ids
    assert mean["layer00.weights"].shape[0] == 1
    # both runs score the two reads in one batch of two: the same float32 weights on any CPU (and
    # under `hostile` arithmetic); only the mean's rounding differs (float64 sum cast to float32 in
    # the command, float32 (a + b) / 2 here): an ulp or two of weights <= 1 (2^-23 = 1.2e-7 each),
    # so atol 1e-6, while the reads' own maps differ by far more
    np.testing.assert_allclose(mean["layer00.weights"][0], each["layer00.weights"].mean(0), atol=1e-6)
    assert np.abs(each["layer00.weights"][0] - each["layer00.weights"][1]).max() > 1e-3


def test_unknown_read_id_is_one_error_line_and_no_output(tmp_path, cli):
    res = cli("attn-maps", READS, "--read-id", "no_such_read", "-o", tmp_path / "o")
    assert_one_error_line(res, "read id no_such_read not found")
    assert res.exit_code == 1 and not (tmp_path / "o").exists() and not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def swin(tmp_path_factory):
    out = tmp_path_factory.mktemp("attn") / "swin"
    args = ["-q", "train-tracks", "-R", FASTA, "--targets", TRACKS / "targets.tsv", "--seq-len", 1024,
            "--bin-size", 32, "--target-bins", 16, "--width", 16, "--epochs", 1, "--device", "cpu", "-o", out,
            "--patch", 1]  # single-nucleotide tokens (not train-tracks' default): every stage's layout is checked
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    return out


def test_attn_maps_on_a_region_with_a_swin1d_model(swin, tmp_path, cli):
    import pyBigWig

    out = tmp_path / "site"
    res = cli("-q", "attn-maps", "-m", swin, "-R", FASTA, "--region", "chr1:20000-20100",
              "--region", "chr2:100-300", "--device", "cpu", "-o", out)
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "attention.json").read_text())
    arrays = np.load(out / "attention.npz")
    assert len(doc["layers"]) == 11  # 5 blocks x (window, shifted window) + 1 transformer layer
    first = doc["layers"][0]
    assert arrays["layer00.weights"].shape == (2, first["heads"], 1024 // 16, 16, 16)
    assert doc["items"][0]["window_start"] == 20050 - 512
    np.testing.assert_array_equal(arrays["layer00.token_start"][0, :3], [19538, 19539, 19540])
    top = doc["layers"][-1]
    assert top["kind"] == "global" and top["resolution_bp"] == 32 and top["offset_bp"] == 8 * 32  # crop (32 - 16) / 2 bins
    np.testing.assert_array_equal(arrays["layer10.token_start"][0, :2], [19538 + 8 * 32, 19538 + 9 * 32])
    rows = [line.split("\t") for line in (out / "distance.tsv").read_text().splitlines()[1:]]
    assert [(int(r[0]), int(r[7])) for r in rows] == [(i, 0) for i in range(11)]  # one head per layer at width 16
    for r, layer in zip(rows, doc["layers"]):
        # uniform attention over a window of w tokens: mean |i - j| = (w^2 - 1) / (3w) tokens, here w = 16
        assert float(r[9]) == pytest.approx(255 / 48 * int(r[4]), rel=1e-6)
        # attention-weighted bp between tokens, recomputed from the exported weights and token starts;
        # a shifted layer's window that wraps around the sequence end is left out
        p = f"layer{layer['index']:02d}"
        w, slots, starts = arrays[f"{p}.weights"], arrays[f"{p}.token_index"], arrays[f"{p}.token_start"]
        keep = slots[:, -1] - slots[:, 0] == slots.shape[1] - 1
        pos = starts[:, slots[keep]]  # (items, windows, w)
        d = np.abs(pos[..., :, None] - pos[..., None, :])
        expect = np.einsum("ihnqk,inqk->ihnq", w[:, :, keep].astype(np.float64), d).mean(axis=(0, 2, 3))
        assert float(r[8]) == pytest.approx(expect[0], rel=1e-5)
        assert float(r[10]) == pytest.approx(float(r[8]) / float(r[9]), rel=1e-5)
    bw = pyBigWig.open(str(out / "rollout.bw"))
    vals = np.array(bw.values("chr1", 19538, 19538 + 1024))
    bw.close()
    np.testing.assert_allclose(vals, arrays["rollout"][0], rtol=1e-5)
    assert (out / "rollout.bedGraph").read_text().startswith("chr1\t19538\t")
    figs = {p.name for p in (out / "figures").iterdir()}
    assert {"01_chr1_20000-20100.layers.png", "01_chr1_20000-20100.heads.layer9.png",
            "01_chr1_20000-20100.windows.layer9.png", "01_chr1_20000-20100.zoom.layer9.png"} <= figs


def test_regions_bed_with_mean_and_layer(swin, tmp_path, cli, hostile):
    (tmp_path / "r.bed").write_text("chr1\t20000\t20100\nchr2\t100\t300\n")
    base = ["-q", "attn-maps", "-m", swin, "-R", FASTA, "--device", "cpu"]
    assert cli(*base, "--region", "chr1:20000-20100", "--region", "chr2:100-300", "--plot-items", 0,
               "-o", tmp_path / "each").exit_code == 0
    res = cli(*base, "--regions", tmp_path / "r.bed", "--mean", "--layer", -10, "-o", tmp_path / "mean")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "mean" / "attention.json").read_text())
    assert [it["id"] for it in doc["items"]] == ["chr1:20000-20100", "chr2:100-300"] and doc["mean"] is True
    each, mean = np.load(tmp_path / "each" / "attention.npz"), np.load(tmp_path / "mean" / "attention.npz")
    for i in range(len(doc["layers"])):
        key = f"layer{i:02d}.weights"
        assert mean[key].shape[0] == 1
        # the two regions in one batch in both runs (atol as in the reads' test above)
        np.testing.assert_allclose(mean[key][0], each[key].mean(0), atol=1e-6)
        assert np.abs(each[key][0] - each[key][1]).max() > 1e-3
    # 11 attention layers: -10 is layer 1 (the default would be 9, the deepest windowed one)
    figs = {p.name for p in (tmp_path / "mean" / "figures").iterdir()}
    assert {"mean.heads.layer1.png", "mean.windows.layer1.png", "mean.zoom.layer1.png"} <= figs
    assert not any("layer9" in f for f in figs)

def test_region_off_the_chromosome_is_refused(swin, tmp_path, cli):
    res = cli("attn-maps", "-m", swin, "-R", FASTA, "--region", "chr1:39000-41000", "-o", tmp_path / "o")
    assert_one_error_line(res, "off the end of chr1")
    assert res.exit_code == 1 and not list(tmp_path.iterdir())


def test_a_cnn_model_is_refused(tmp_path, cli):
    from genointerp.model_folder import build_model, save_model_dir
    from genointerp.models.track_configs import default_track_config

    folder = tmp_path / "cnn"
    folder.mkdir()
    model = build_model(default_track_config("maxpool-cnn", 1024, 32, 16, 1, width=16).to_dict())
    save_model_dir(folder, model, {"task": "track prediction", "window": {"seq_len": 1024, "bin_size": 32, "target_bins": 16}})
    res = cli("attn-maps", "-m", folder, "-R", FASTA, "--region", "chr1:20000-20100", "-o", tmp_path / "o")
    assert_one_error_line(res, "a maxpool-cnn model has no attention layers")
    assert res.exit_code == 1 and not (tmp_path / "o").exists()
