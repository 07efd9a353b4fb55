"""Track models (swin1d and the Table 1 baselines): shapes, config checks, round trips, 1D-Swin mechanics."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from genointerp.model_folder import build_model, load_model_dir, save_model_dir
from genointerp.errors import InputError
from genointerp.models.swin1d import GenomicInterpreter, Swin1DBlock, Swin1DConfig
from genointerp.models.track_baselines import AttPoolCNNConfig
from genointerp.models.track_configs import TRACK_ARCHITECTURES, default_dropout, default_patch, default_track_config
from genointerp.models.track_heads import AttentionPool, Stem, widen_head

# tiny: 256 bp, 16-bp bins (4 halvings from single nucleotides), 16 bins of which the central 12 are targets
SEQ, BIN, TARGET, TRACKS, GROUPS = 256, 16, 12, 3, (1, 2)


def tiny(arch: str, **over):
    config = default_track_config(arch, SEQ, BIN, TARGET, TRACKS, GROUPS, width=16, dropout=0.0)
    return replace(config, **over) if over else config


def one_hot(b: int = 2, length: int = SEQ, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.one_hot(torch.randint(0, 4, (b, length), generator=g), 4).float()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("arch", TRACK_ARCHITECTURES)
def test_shape_non_negative_and_trainable(arch, device):
    model = build_model(tiny(arch).to_dict()).to(device)
    y = model(one_hot().to(device))
    assert y.shape == (2, TARGET, TRACKS) and y.dtype == torch.float32
    assert (y >= 0).all() and torch.isfinite(y).all()  # softplus rates for Poisson NLL
    torch.nn.functional.poisson_nll_loss(y, torch.ones_like(y), log_input=False).backward()
    assert all(p.grad is not None for p in model.parameters())  # every layer is on the output path


@pytest.mark.parametrize("arch", TRACK_ARCHITECTURES)
def test_config_json_and_checkpoint_round_trip(arch, tmp_path, device):
    config = tiny(arch)
    back = type(config).from_dict(json.loads(json.dumps(config.to_dict())))  # tuples come back as lists
    assert back == config and isinstance(back.track_groups, tuple)
    model = build_model(config.to_dict()).eval().to(device)
    x = one_hot(seed=1).to(device)
    save_model_dir(tmp_path, model, {"note": "test"})
    loaded, info = load_model_dir(tmp_path, expect=arch)
    loaded.to(device)
    assert info["model"]["architecture"] == arch
    with torch.inference_mode():
        assert torch.equal(model(x).cpu(), loaded(x).cpu())


@pytest.mark.parametrize("arch", TRACK_ARCHITECTURES)
def test_rc_average_is_strand_symmetric(arch, device):
    """predict-tracks --rc-average: the reverse complement of a window gets the window's prediction
    with its bins reversed, exactly, as both are the mean of the same two passes; the model alone is
    not symmetric, so the averaging is what makes it so."""
    from genointerp.tracks.inference import predict_rates

    model = build_model(tiny(arch).to_dict()).eval().to(device)
    x = one_hot().numpy()
    x[:, 100:140] = 0  # a run of N (all-zero one-hot), which stays N under reverse complement
    rc = x[:, ::-1, ::-1].copy()  # flip positions and A<->T, C<->G (test_tracks_io: = one_hot of rc codes)
    avg, avg_rc = (predict_rates(model, v, device, "32", rc_average=True) for v in (x, rc))
    np.testing.assert_array_equal(avg_rc, avg[:, ::-1])
    plain, plain_rc = (predict_rates(model, v, device, "32", rc_average=False) for v in (x, rc))
    assert not np.allclose(plain_rc, plain[:, ::-1], rtol=1e-3, atol=0)
    # the same shapes as --rc-average's two passes (bit-equal on the CPU); rtol 1e-6 (8 ulps)
    # for CUDA, whose kernel choice may differ between calls; the strands differ by > 1e-3
    np.testing.assert_allclose(avg, (plain + plain_rc[:, ::-1]) / 2, rtol=1e-6)


@pytest.mark.parametrize("arch", TRACK_ARCHITECTURES)
def test_n_windows_give_finite_rates(arch, device):
    """predict-tracks pads past chromosome ends with N (all-zero one-hot): a window half or wholly N
    must still give rates, not NaN from a normalisation of an all-zero input."""
    model = build_model(tiny(arch).to_dict()).eval().to(device)
    x = one_hot()
    x[0] = 0  # all N
    x[1, SEQ // 2:] = 0  # the second half N, as at a chromosome's end
    with torch.inference_mode():
        y = model(x.to(device)).cpu()
    assert torch.isfinite(y).all() and (y >= 0).all()


@pytest.mark.parametrize("arch, over, message", [
    ("swin1d", {"windows": (5, 4, 4, 4)}, "token count 256 is not divisible by the window 5"),
    ("swin1d", {"seq_len": 257}, "is odd: the targets cannot be centred"),  # 257 - 12*16 = 65
    ("swin1d", {"target_bins": 13}, "bins is odd"),  # 256/16 - 13 = 3 bins cannot be split evenly
    ("swin1d", {"target_bins": 17}, "exceeds seq_len"),
    ("swin1d", {"patch": 2}, "final token resolution is 32 bp but bin_size is 16"),  # 2 * 2^4
    ("swin1d", {"windows": (4, 4, 4)}, "one entry per stage"),
    ("swin1d", {"heads": (3, 1, 1, 1)}, "not divisible by 3 heads"),
    ("swin1d", {"track_groups": (1, 1)}, "sum to n_tracks 3"),
    ("maxpool-cnn", {"widths": (8, 8, 16)}, "final token resolution is 8 bp"),  # 3 halvings
    ("enformer-like", {"transformer_heads": 5}, "not divisible by 5 heads"),
    ("attpool-dilated", {"dilated_layers": -1}, "dilated_layers"),
])
def test_validate_errors(arch, over, message):
    config = tiny(arch, **over)
    with pytest.raises(ValueError, match=message):
        config.validate()
    with pytest.raises(InputError, match="model configuration"):
        build_model(config.to_dict())


def test_default_config_solves_sizes():
    # 136 bins = 8 * 17: the last stage's 272 tokens take window 16 (272 = 16 * 17), all windows divide
    c = default_track_config("swin1d", 136 * 128, 128, 80, 4, None, width=64)
    assert c.patch == 1 and len(c.windows) == 7 and c.widths[0] == 32 and c.widths[-1] == 64
    assert all(n % w == 0 and 2 <= w <= 16 for n, w in zip(c.stage_tokens, c.windows))
    # 100-bp bins = 25 * 2^2: two halvings after a stem pooling 25 bp
    c = default_track_config("attpool-cnn", 2000, 100, 10, 1, None, width=32)
    assert c.patch == 25 and len(c.widths) == 2
    # the dataclass defaults are the width-64 defaults for 4 kb / 128-bp bins, as their docstrings say
    assert Swin1DConfig() == default_track_config("swin1d", 4096, 128, 24, 1, None, width=64)
    assert AttPoolCNNConfig() == default_track_config("attpool-cnn", 4096, 128, 24, 1, None, width=64)
    with pytest.raises(ValueError, match="not a multiple of bin_size"):
        default_track_config("swin1d", 17712, 128, 80, 1, None)  # the paper's length: 138.375 bins
    with pytest.raises(ValueError, match="unknown track architecture"):
        default_track_config("basset", 4096, 128, 24, 1, None)


def test_swin_block_halves_tokens_and_sets_width(device):
    config = Swin1DConfig(seq_len=64, bin_size=4, target_bins=16, windows=(8, 4), heads=(2, 2), alphas=(1.5, 2.0),
                          d_model=24, transformer_heads=4)
    assert config.widths == [24, 32, 32]  # round(2 * 24 / 1.5) = 32, then round(2 * 32 / 2) = 32
    block = Swin1DBlock(24, 32, heads=2, window=8).to(device)
    assert block(torch.randn(2, 64, 24).to(device)).shape == (2, 32, 32)  # 64 tokens -> 32 merged pairs


def test_shifted_window_mixes_across_window_borders(device):
    """Window 4 over 16 tokens: unshifted windows are {0-3}, {4-7}, ... Merged output token 1 is
    made of tokens 2 and 3 (window 0). With shift 2 the second attention's windows are {2-5}, ...,
    {14,15,0,1} (wrapping), so tokens 2, 3 also see 4, 5, which saw 4-7 in the first attention."""

    def grad_from(shift: int, out_token: int) -> torch.Tensor:
        torch.manual_seed(0)
        block = Swin1DBlock(8, 8, heads=2, window=4, shift=shift).eval().to(device)
        x = torch.randn(1, 16, 8).to(device).requires_grad_()
        block(x)[0, out_token].sum().backward()
        return x.grad[0].abs().sum(-1).cpu()  # (16,) sensitivity to each input token

    plain, shifted = grad_from(0, 1), grad_from(2, 1)
    assert (plain[4:] == 0).all() and (plain[:4] > 0).all()  # exactly local: nothing crosses a border
    assert (shifted[4:8] > 0).all() and (shifted[8:] == 0).all()  # one window further, no more
    assert grad_from(2, 0)[15] > 0 and grad_from(0, 0)[15] == 0  # the roll wraps 15 next to 0


def test_attention_layout_maps_tokens():
    model = build_model(tiny("swin1d", transformer_layers=2).to_dict())
    c, layout, modules = model.config, model.attention_layout(), dict(model.named_modules())
    k = len(c.windows)
    assert len(layout) == 2 * k + 2
    assert all(modules[e["name"]] is e["module"] for e in layout)
    swin = layout[: 2 * k]
    assert [e["resolution_bp"] for e in swin[::2]] == [1, 2, 4, 8]  # doubles per stage up to BIN/2
    assert [e["shift"] for e in swin] == [s for w in c.windows for s in (0, w // 2)]
    assert all(e["tokens"] * e["resolution_bp"] == SEQ and e["offset_bp"] == 0 for e in swin)
    # after the crop: 12 of 16 bins, the first at (16 - 12) / 2 = 2 bins = 32 bp
    assert all(e["resolution_bp"] == BIN and e["tokens"] == TARGET and e["offset_bp"] == 32 for e in layout[2 * k:])


def test_capture_sees_every_layer_and_changes_nothing(device):
    model = build_model(tiny("swin1d").to_dict()).eval().to(device)
    x = one_hot().to(device)
    with torch.inference_mode():
        plain = model(x).cpu()
    seen = {}
    layout = model.attention_layout()
    for entry in layout:
        entry["module"].capture = lambda mod, w, name=entry["name"]: seen.__setitem__(name, w)
    with torch.inference_mode():
        captured = model(x).cpu()
    # same formula, explicit instead of fused kernel: equal up to float rounding
    torch.testing.assert_close(captured, plain, rtol=1e-5, atol=1e-6)
    for e in layout:
        w = seen[e["name"]].cpu()
        n = e["window"] if e["kind"] != "global" else e["tokens"]
        assert w.shape[0] == 2 * e["tokens"] // n and w.shape[-2:] == (n, n)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))  # softmax rows


def test_attention_pool_starts_as_weighted_mean(device):
    pool = AttentionPool(3, 2).to(device)
    x = torch.tensor([[[1.0, 1.0, 2.0, 0.0]] * 3])  # (1, 3, 4)
    y = pool(x.to(device))[0, 0].cpu()
    assert y[0] == 1.0  # equal inputs: any weights summing to 1 give the input
    # logits 2 * x: weights softmax(4, 0) on (2, 0) -> 2 * e^4 / (e^4 + 1), between mean (1) and max (2)
    assert torch.isclose(y[1], torch.tensor(2 * torch.e ** 4 / (torch.e ** 4 + 1)))


def test_enformer_like_layout_is_full_attention_before_crop(device):
    model = build_model(tiny("enformer-like").to_dict())
    (entry,) = model.attention_layout()
    assert entry["tokens"] == SEQ // BIN and entry["window"] == SEQ // BIN and entry["offset_bp"] == 0
    # the defaults are valid and consistent: 4096 bp in, 24 bins of the one track out
    with torch.inference_mode():
        assert GenomicInterpreter(Swin1DConfig()).eval().to(device)(one_hot(1, 4096).to(device)).shape == (1, 24, 1)


def test_stem_filters_widen_only_the_stem_and_old_configs_load_unchanged(tmp_path):
    """stem_filters adds conv filters and a projection to d_model; a config saved before the field
    existed (no stem_filters key) builds the same modules, so its weights load as they were saved."""
    base = tiny("swin1d")
    wide = build_model(replace(base, stem_filters=40).to_dict())
    assert wide.stem.conv.out_channels == 40
    assert (wide.stem_proj.in_features, wide.stem_proj.out_features) == (40, base.d_model)
    y = wide(one_hot())
    assert y.shape == (2, TARGET, TRACKS)
    y.sum().backward()
    assert all(p.grad is not None for p in wide.parameters())
    old = {k: v for k, v in base.to_dict().items() if k != "stem_filters"}
    model = build_model(old)
    assert model.stem_proj is None and set(model.state_dict()) == set(build_model(base.to_dict()).state_dict())
    assert default_track_config("swin1d", SEQ, BIN, TARGET, TRACKS, GROUPS, width=16, stem_filters=40).stem_filters == 40
    with pytest.raises(ValueError, match="swin1d stem"):
        default_track_config("maxpool-cnn", SEQ, BIN, TARGET, TRACKS, GROUPS, width=16, stem_filters=40)
    with pytest.raises(ValueError, match="stem_filters"):
        replace(base, stem_filters=-1).validate()


def test_attention_pool_is_the_softmax_weighted_mean_of_each_group():
    """The pooled value is sum_i x_i softmax(W x)_i over each group of `pool` positions, per channel
    (written out here with the 1x1 conv, the form the channels-last forward computes)."""
    pool = AttentionPool(6, 4)
    with torch.no_grad():
        pool.logits.weight.normal_()
    x = torch.randn(3, 6, 20)
    w = pool.logits(x).view(3, 6, 5, 4).softmax(-1)
    torch.testing.assert_close(pool(x), (x.view(3, 6, 5, 4) * w).sum(-1))


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # the Conv1d reference's
@pytest.mark.parametrize("kernel", [1, 4, 15])
@pytest.mark.parametrize("pool,patch", [("attention", 4), ("max", 2), ("attention", 1)])
def test_stem_computes_conv1d_same_then_pooling(kernel, pool, patch):
    """The stem's channels-last matmul over unfolded windows is Conv1d(padding='same') followed by
    the pooling, gradients included; even kernels put the spare padding on the right as Conv1d does."""
    stem = Stem(6, kernel, patch, pool)
    with torch.no_grad():
        if pool == "attention" and patch > 1:
            stem.pool.logits.weight.normal_()
    x = one_hot(3, 40)
    y = stem(x)
    reference = stem.pool(stem.conv(x.transpose(1, 2)))
    assert y.shape == (3, 6, 40 // patch)
    torch.testing.assert_close(y, reference)
    (g,) = torch.autograd.grad(y.square().sum(), stem.conv.weight)
    (g_ref,) = torch.autograd.grad(reference.square().sum(), stem.conv.weight)
    torch.testing.assert_close(g, g_ref)


@pytest.mark.parametrize("arch", ["swin1d", "attpool-cnn"])
def test_widen_head_keeps_the_function_and_lets_the_new_units_learn(arch):
    model = build_model(tiny(arch).to_dict()).eval()
    old = model.output.pointwise.out_features
    assert old == 2 * model.output.norm.normalized_shape[0]  # head_width 0: Enformer's 2 x width
    wide = widen_head(model, old + 24).eval()
    assert wide.config.head_width == old + 24 and [h.in_features for h in wide.output.heads] == [old + 24] * 2
    x = one_hot()
    with torch.no_grad():
        torch.testing.assert_close(wide(x), model(x))
    wide.train()
    wide(x).sum().backward()
    assert wide.output.heads[0].weight.grad[:, old:].abs().sum() > 0  # the zero-read units get a gradient at once
    with pytest.raises(ValueError, match="widening needs more"):
        widen_head(wide, old + 24)
    # a config saved before head_width existed builds Enformer's head, so its weights load unchanged
    legacy = {k: v for k, v in tiny(arch).to_dict().items() if k != "head_width"}
    assert set(build_model(legacy).state_dict()) == set(model.state_dict())
    with pytest.raises(ValueError, match="head_width"):
        replace(tiny(arch), head_width=-1).validate()


def test_widen_stem_keeps_the_function_and_lets_the_new_filters_learn():
    from genointerp.models.swin1d import widen_stem

    config = default_track_config("swin1d", SEQ, 4, 64, TRACKS, GROUPS, width=16, dropout=0.0, max_stages=1)
    assert config.patch == 2  # attention pooling in the stem, so its logits are widened too
    model = build_model(config.to_dict()).eval()
    wide = widen_stem(model, 20).eval()
    x = one_hot()
    with torch.no_grad():
        torch.testing.assert_close(wide(x), model(x))
    assert wide.config.stem_filters == 20 and wide.stem.conv.out_channels == 20
    wide.train()
    wide(x).sum().backward()
    assert wide.stem_proj.weight.grad[:, 8:].abs().sum() > 0  # the zero-read filters get a gradient at once
    with pytest.raises(ValueError, match="widening needs more"):
        widen_stem(wide, 20)


def _brute_best_match(x: torch.Tensor, pwm: torch.Tensor, start: int, end: int) -> float:
    """The best score of `pwm` (4, K) on either strand over windows starting in [start, end) of
    x (L, 4), zero rows past the ends."""
    k = pwm.shape[1]
    padded = torch.cat([torch.zeros(k + abs(min(start, 0)), 4), x, torch.zeros(k + end, 4)])
    off = k + abs(min(start, 0))
    rc = pwm.flip(0, 1)  # reverse complement: positions reversed, A<->T and C<->G
    return max(float((padded[off + p: off + p + k].t() * w).sum()) for p in range(start, end) for w in (pwm, rc))


@pytest.mark.parametrize("seq_len, target_bins", [(SEQ, TARGET), (SEQ, SEQ // BIN)])
def test_motif_scan_scores_both_strands_per_bin_with_neighbours(seq_len, target_bins):
    """best_match is the brute-force best window score on either strand per bin (the target bins
    and one each side, zero past the input's ends when the targets fill it); the features are
    the hinges relu(s - t) / (1 - t) of those scores, then their sums over the two neighbours."""
    from genointerp.models.motif_scan import THRESHOLDS, MotifScan

    scan = MotifScan(3, 5, seq_len, BIN, target_bins)
    with torch.no_grad():
        scan.pwm.copy_(torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1)))
    x = one_hot(2, seq_len, seed=3)
    x[1, 40:60] = 0  # N
    s = scan.best_match(x)
    assert s.shape == (2, target_bins + 2, 3)
    for b in range(2):
        for i in (0, 1, target_bins // 2, target_bins + 1):
            lo = scan.first + i * BIN
            for m in range(3):
                assert s[b, i, m].item() == pytest.approx(_brute_best_match(x[b], scan.pwm[m], lo, lo + BIN), abs=1e-5)
    f = scan(x)
    h = len(THRESHOLDS)
    assert f.shape == (2, target_bins, scan.n_features) and scan.n_features == 2 * h * 3
    t = torch.tensor(THRESHOLDS)
    hinge = (torch.relu(s[..., None, :] - t[:, None]) / (1 - t[:, None])).flatten(2)  # (B, bins + 2, H * M)
    torch.testing.assert_close(f[..., : h * 3], hinge[:, 1:-1])
    torch.testing.assert_close(f[..., h * 3:], hinge[:, :-2] + hinge[:, 2:])


def test_a_consensus_match_scores_one_on_either_strand():
    """Matrices scaled to their perfect score (tracks.motifs 'perfect'): the consensus scores 1, on
    the forward strand or as its reverse complement."""
    from genointerp.models.motif_scan import MotifScan
    from genointerp.tracks.motifs import motif_filter

    counts = {"A": [8, 0, 0, 1], "C": [0, 9, 0, 1], "G": [1, 0, 9, 7], "T": [0, 0, 0, 0]}  # consensus ACGG
    w, bias = motif_filter(counts, 4, "perfect")
    assert bias == 0.0 and w.max(0).sum() == pytest.approx(1.0)
    scan = MotifScan(1, 4, SEQ, BIN, TARGET)
    scan.pwm.copy_(torch.from_numpy(w)[None])
    for site in ("ACGG", "CCGT"):  # CCGT is ACGG's reverse complement
        x = torch.zeros(1, SEQ, 4)
        x[0, 100:104] = torch.nn.functional.one_hot(torch.tensor(["ACGT".index(c) for c in site]), 4).float()
        s = scan.best_match(x)
        assert s.max().item() == pytest.approx(1.0) and s[0, (100 - scan.first) // BIN, 0].item() == pytest.approx(1.0)


@pytest.mark.parametrize("arch", ["swin1d", "maxpool-cnn"])
def test_add_motif_scan_keeps_the_function_saves_the_matrices_and_follows_track_groups(arch, tmp_path):
    """A model with a scan added predicts as before (its motif heads start at 0) until the heads
    learn; the matrices round-trip through the model directory; auxiliary track groups come and go
    with their own motif heads; a second scan is refused."""
    from genointerp.models.track_heads import add_motif_scan, add_track_groups, drop_track_groups

    model = build_model(tiny(arch).to_dict()).eval()
    pwm = torch.randn(2, 4, 6)
    scanned = add_motif_scan(model, ["MA0001.1 A", "MA0002.1 B"], pwm).eval()
    assert scanned.config.motifs == ("MA0001.1 A", "MA0002.1 B") and scanned.config.motif_kernel == 6
    x = one_hot(3)
    with torch.no_grad():
        torch.testing.assert_close(scanned(x), model(x))
        scanned.output.motif_heads[1].weight.fill_(0.1)
        changed, before = scanned(x), model(x)
    torch.testing.assert_close(changed[..., :1], before[..., :1])  # group 0's motif head is still 0
    assert not torch.allclose(changed[..., 1:], before[..., 1:])
    (tmp_path / "m").mkdir()
    save_model_dir(tmp_path / "m", scanned, {"task": "track prediction"})
    loaded, cfg = load_model_dir(tmp_path / "m")
    assert cfg["model"]["motifs"] == ["MA0001.1 A", "MA0002.1 B"]
    assert torch.equal(loaded.output.scan.pwm, pwm)
    with torch.no_grad():
        torch.testing.assert_close(loaded.eval()(x), changed)
        wide = add_track_groups(loaded, (2,)).eval()
        assert len(wide.output.motif_heads) == 3 and not wide.output.motif_heads[2].weight.any()
        torch.testing.assert_close(wide(x)[..., :3], changed)
        torch.testing.assert_close(drop_track_groups(wide, 2).eval()(x), changed)
    with pytest.raises(ValueError, match="motif scan already"):
        add_motif_scan(scanned, ["MA0003.1 C"], torch.randn(1, 4, 6))


def test_motif_readout_fit_recovers_a_planted_linear_response():
    """Targets made as the trunk's rates plus a known linear map of the scan's features (and an
    offset): the least-squares read-out predicts them and removes the whole residual; a read-out
    that is no longer 0 is not refitted."""
    from genointerp.models.track_heads import add_motif_scan
    from genointerp.tracks.motif_readout import fit_motif_readout

    model = add_motif_scan(build_model(tiny("swin1d").to_dict()), ["M1 a", "M2 b"],
                           torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(5))).eval()
    n_f = model.output.scan.n_features
    true_w = torch.zeros(n_f, TRACKS)
    true_w[0, 0], true_w[3, 1], true_w[9, 2] = 3.0, 1.5, 2.0  # hinge and neighbour features; rates stay >= 0
    x = one_hot(64, seed=7)
    with torch.no_grad():
        y = (model(x) + model.output.scan(x) @ true_w + 0.5).numpy()

    class Windows:
        def __len__(self):
            return len(x)

        def batch(self, idx):
            return x[idx].numpy(), y[idx]

    fit = fit_motif_readout(model, Windows(), batch_size=16)
    assert fit["windows"] == 64 and fit["explained"] == pytest.approx(1.0, abs=5e-3)  # the ridge shrinks a little
    with torch.no_grad():  # hinges of one score are nearly collinear: the map, not each weight, is what is fixed
        planted = model.output.scan(x) @ true_w
        torch.testing.assert_close(model(x), torch.from_numpy(y), atol=0.03 * planted.abs().max().item(), rtol=0)
    with pytest.raises(ValueError, match="from 0 only"):
        fit_motif_readout(model, Windows())


@pytest.mark.parametrize("bin_size, patch", [(128, 8), (32, 8), (16, 8), (8, 4), (2, 1), (96, 6), (100, 25)])
def test_swin1d_tokens_default_to_at_most_8_bp(bin_size, patch):
    """train-tracks without --patch: swin1d's stem pools to bin_size / 2^k bp tokens, k >= 1 the
    fewest halvings that reach 8 bp or less (or all there are); the baselines keep 1 bp tokens."""
    assert default_patch("swin1d", bin_size) == patch
    assert patch * 2 ** ((bin_size // patch).bit_length() - 1) == bin_size  # a whole number of halvings
    assert default_patch("maxpool-cnn", bin_size) == default_patch("enformer-like", bin_size) == 1


def test_only_swin1d_trains_without_dropout_by_default():
    assert default_dropout("swin1d") == 0.0
    assert all(default_dropout(a) == 0.1 for a in TRACK_ARCHITECTURES if a != "swin1d")


@pytest.mark.parametrize("scan", [False, True])
def test_forward_pair_equals_two_forwards(monkeypatch, scan):
    """GenomicInterpreter.forward_pair (score-variants' pairs): the reference rates are forward's and
    the alternate ones forward's of the alternate windows (to float rounding), whether the change
    is one base in the middle (computed over the tokens it reaches only, stage by stage, and with
    a motif scan over the bins it reaches), a few bases, on the reverse strand, near an end
    (stages run whole), an indel's shifted right flank or nothing at all."""
    motifs = {"motifs": ("M1 A", "M2 B"), "motif_kernel": 6} if scan else {}
    config = Swin1DConfig(seq_len=1024, bin_size=32, target_bins=16, n_tracks=3, track_groups=(1, 2), d_model=16,
                          patch=2, windows=(8, 8, 8, 8), heads=(2, 2, 2, 2), alphas=(2.0, 2.0, 2.0, 2.0),
                          transformer_heads=2, **motifs)
    model = GenomicInterpreter(config).eval()
    if scan:
        with torch.no_grad():
            model.output.scan.pwm.copy_(torch.randn(2, 4, 6) / 3)
            for head in model.output.motif_heads:
                head.weight.normal_()
    local = []
    block_local = Swin1DBlock.local
    monkeypatch.setattr(Swin1DBlock, "local", lambda self, *a: local.append(block_local(self, *a)) or local[-1])
    ref = one_hot(2, 1024, seed=1)

    def changed(positions, shift=False):
        alt = ref.clone()
        if shift:
            alt[:, positions[0]:] = torch.roll(ref[:, positions[0]:], 1, dims=1)
        for p in positions if not shift else ():
            alt[:, p] = alt[:, p].roll(1, dims=-1)
        return alt

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: a second thread only adds waits on a busy host
    try:
        with torch.inference_mode():
            every, whole = [True] * 4, []  # local in every stage; the stem's reach leaves the window: all whole
            for alt, stages_local in [(changed([512]), every), (changed([500, 501, 502]), every), (changed([700]), every),
                                      (changed([60]), [True, True, False]), (changed([20]), [False]),
                                      (changed([5]), whole), (changed([512], shift=True), whole), (ref.clone(), whole)]:
                for flip in (False, True):
                    xr, xa = (ref.flip(1, 2), alt.flip(1, 2)) if flip else (ref, alt)
                    local.clear()
                    r, a = model.forward_pair(xr, xa)
                    torch.testing.assert_close(r, model(xr), rtol=0, atol=0)
                    torch.testing.assert_close(a, model(xa), rtol=1e-5, atol=1e-5)
                    assert [x is not None for x in local] == stages_local
            # ism's pass: one reference window against several mutations of it, broadcast
            one = torch.cat([changed([p])[:1] for p in (500, 512, 530)] + [ref[:1]])
            r, a = model.forward_pair(ref[:1], one)
            assert r.shape[0] == 1 and a.shape[0] == 4 and local[-1] is not None
            torch.testing.assert_close(a, model(one), rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(threads)
