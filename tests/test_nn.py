"""Transformer building blocks checked against torch's reference modules and the formulas."""

import math

import pytest
import torch

from genointerp.nn import EncoderLayer, MultiHeadAttention, RotaryEmbedding, WindowAttention, sinusoidal_table

torch.manual_seed(0)


def reference_mha(ours: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref.eval()


def test_attention_equals_torch_multihead_attention_both_paths(device):
    ours = MultiHeadAttention(32, 4).eval()
    ref = reference_mha(ours).to(device)
    ours.to(device)
    x = torch.randn(3, 11, 32).to(device)
    pad = torch.zeros(3, 11, dtype=torch.bool)
    pad[1, 8:] = True
    pad = pad.to(device)
    want, want_w = (t.cpu() for t in ref(x, x, x, key_padding_mask=pad, average_attn_weights=False))
    fused, none = ours(x, key_padding_mask=pad)
    explicit, w = ours(x, key_padding_mask=pad, need_weights=True)
    fused, explicit, w = fused.cpu(), explicit.cpu(), w.cpu()
    assert none is None
    torch.testing.assert_close(fused, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, want_w, atol=1e-6, rtol=1e-5)


def test_weights_follow_the_formula_and_masks_mask(device):
    mha = MultiHeadAttention(8, 2).eval().to(device)
    x = torch.randn(1, 5, 8).to(device)
    _, w = mha(x, causal=True, need_weights=True)
    q, k, _ = mha.in_proj(x).view(1, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    scores = (q @ k.transpose(-1, -2)).cpu() / math.sqrt(4)
    scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    w = w.cpu()
    torch.testing.assert_close(w, scores.softmax(-1))
    assert torch.all(w.triu(1) == 0)  # causal: nothing from the future
    pad = torch.tensor([[False, False, True, False, True]])
    _, w = mha(x, key_padding_mask=pad.to(device), need_weights=True)
    w = w.cpu()
    assert torch.all(w[..., 2] == 0) and torch.all(w[..., 4] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2, 5))


def test_padding_changes_nothing_for_real_tokens(device):
    mha = MultiHeadAttention(16, 4).eval().to(device)
    x = torch.randn(1, 6, 16)
    padded = torch.cat([x, torch.randn(1, 3, 16)], dim=1).to(device)
    mask = torch.tensor([[False] * 6 + [True] * 3]).to(device)
    x = x.to(device)
    torch.testing.assert_close(mha(padded, key_padding_mask=mask)[0][:, :6].cpu(), mha(x)[0].cpu(),
                               atol=1e-5, rtol=1e-5)


def test_sinusoidal_table_formula():
    t = sinusoidal_table(50, 16)
    pos, i = 7, 3
    assert t[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 16)), abs=1e-6)
    assert t[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 16)), abs=1e-6)


def test_rope_scores_depend_only_on_the_offset(device):
    rope = RotaryEmbedding(8).to(device)
    q, k = torch.randn(8), torch.randn(8)
    seq = torch.stack([q] * 20)[None, None].to(device)
    keys = torch.stack([k] * 20)[None, None].to(device)
    rq, rk = rope(seq)[0, 0].cpu(), rope(keys)[0, 0].cpu()
    s = rq @ rk.T
    # same offset j - i, different absolute positions: same score
    assert s[2, 5].item() == pytest.approx(s[10, 13].item(), rel=1e-4, abs=1e-5)
    assert s[0, 0].item() == pytest.approx((q @ k).item(), rel=1e-5)
    assert abs(s[2, 5].item() - s[2, 6].item()) > 1e-4


def test_relative_keys_make_scores_depend_on_offset(device):
    mha = MultiHeadAttention(8, 2, position="relative", max_distance=2).eval()
    with torch.no_grad():
        mha.relative.keys.copy_(torch.randn_like(mha.relative.keys))
    mha.to(device)
    x = torch.randn(1, 1, 8).expand(1, 6, 8).to(device)  # identical tokens: content scores are all equal
    _, w = mha(x, need_weights=True)
    w = w.cpu()
    # rows normalise differently, but the odds between offsets -1 and 0 are the same everywhere
    torch.testing.assert_close(w[0, :, 1, 0] / w[0, :, 1, 1], w[0, :, 3, 2] / w[0, :, 3, 3])
    assert not torch.allclose(w[0, :, 3, 2], w[0, :, 3, 4])  # offsets -1 and +1 differ


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first, device):
    ours = EncoderLayer(16, 4, 64, dropout=0.0, norm_first=norm_first).eval()
    ref = torch.nn.TransformerEncoderLayer(16, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(ours.attn.in_proj.weight)
        ref.self_attn.in_proj_bias.copy_(ours.attn.in_proj.bias)
        ref.self_attn.out_proj.weight.copy_(ours.attn.out_proj.weight)
        ref.self_attn.out_proj.bias.copy_(ours.attn.out_proj.bias)
        ref.linear1.load_state_dict(ours.ff[0].state_dict())
        ref.linear2.load_state_dict(ours.ff[3].state_dict())
        ref.norm1.load_state_dict(ours.norm1.state_dict())
        ref.norm2.load_state_dict(ours.norm2.state_dict())
    ours.to(device)
    ref.to(device)
    x = torch.randn(2, 7, 16).to(device)
    torch.testing.assert_close(ours(x)[0].cpu(), ref(x).cpu(), atol=1e-5, rtol=1e-5)


def test_window_attention_stays_inside_windows_and_shift_moves_them(device):
    wa = WindowAttention(8, 2, window=4, shift=0, position=None).eval().to(device)
    x = torch.randn(1, 12, 8)
    y = x.clone()
    y[:, 4:8] += 1.0  # change window 1 only
    x, y = x.to(device), y.to(device)
    out, w = wa(x, need_weights=True)
    assert w.shape == (1, 3, 2, 4, 4)
    out2, _ = wa(y)
    out, out2 = out.cpu(), out2.cpu()
    torch.testing.assert_close(out2[:, :4], out[:, :4])
    torch.testing.assert_close(out2[:, 8:], out[:, 8:])
    shifted = WindowAttention(8, 2, window=4, shift=2, position=None).eval()
    shifted.attn.load_state_dict(wa.attn.state_dict())
    shifted.to(device)
    out3, out4 = (shifted(v)[0].cpu() for v in (x, y))
    assert not torch.allclose(out3[:, 2:4], out4[:, 2:4])  # token 2 now shares a window with 4, 5
    torch.testing.assert_close(out3[:, 10:], out4[:, 10:])
