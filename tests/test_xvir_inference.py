"""The folded CPU inference form of XVir (genointerp.models.xvir_inference) against the module."""

import numpy as np
import pytest
import torch

from genointerp.models.xvir import XVir, XVirConfig
from genointerp.models.xvir_inference import MICRO, XVirInference, supports


def trained_like(cfg: XVirConfig, seed: int = 0) -> XVir:
    """A model whose LayerNorm gains/biases and embeddings are far from their initial values, so
    that a folding mistake in any of them shows."""
    torch.manual_seed(seed)
    model = XVir(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model


def module_logits(model: XVir, tokens: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(tokens)


@pytest.mark.parametrize("cfg", [
    XVirConfig(k=4, read_length=30, d_model=32, n_heads=4, d_ff=64),
    # learned positions, two layers (the second projects explicitly), UNKNOWN/PAD tokens in the vocabulary
    XVirConfig(k=3, read_length=25, d_model=16, n_heads=2, d_ff=48, n_layers=2, position="learned", vocab_size=66),
])
def test_folded_logits_equal_the_modules(cfg):
    model = trained_like(cfg)
    tokens = torch.randint(0, cfg.vocab_size, (2 * MICRO + 3, cfg.n_tokens))  # a padded last micro-batch
    ref = module_logits(model, tokens)
    got = XVirInference(model)(tokens)
    assert got.shape == ref.shape and got.dtype == torch.float32
    assert XVirInference(model)(tokens[:0]).shape == (0,)
    # Other arithmetic (folded tables, micro-batches of MICRO against one batch of 2 MICRO + 3), so
    # no bit-equality: each float32 dot product here has K <= 64 terms (d_ff) and may round
    # differently by up to K u = 64 x 2^-24 = 3.8e-6 of the sum of its terms' magnitudes (worst
    # case; a few ulps in practice), and LayerNorm brings every layer back to unit scale. 1e-5 of
    # the value, and of the largest logit near 0, is above that bound on any CPU; a folding slip
    # (trained_like moves every gain, bias and embedding by 0.2 sd) moves logits by percents.
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))


def test_the_builtin_model_folds_to_within_float32_rounding():
    """docs/viral.md's "within 1e-5": each logit of test-data's 2,000 reads (-19.6 to 9.1) within 1e-5
    relative (1e-5 absolute near 0). Measured: at most 4.8e-6 natively and under
    ATEN_CPU_CAPABILITY=default/avx2 and MKL_ENABLE_INSTRUCTIONS=SSE4_2, at most 0.42 of the bound
    even against the module run one read at a time, whose kernels sum in yet another order."""
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import builtin_model_dir
    from test_builtin_models import tumor_small_tokens

    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    assert supports(model)
    tokens = tumor_small_tokens()
    torch.testing.assert_close(XVirInference(model)(tokens), module_logits(model, tokens), rtol=1e-5, atol=1e-5)


def test_a_windows_logit_does_not_depend_on_its_companions(hostile):
    """Every micro-batch has MICRO rows (the last padded), so a window keeps its logit whatever
    shares its micro-batch, as long as it keeps its place there (CPU kernels may sum a row in an
    order set by its row index: runs keep places by starting on micro-batch boundaries). Under
    `hostile` arithmetic, which moves each output with its row count and place."""
    model = trained_like(XVirConfig(k=4, read_length=30, d_model=32, n_heads=4, d_ff=64))
    engine = XVirInference(model)
    tokens = torch.randint(0, 256, (MICRO + 5, 27))
    together = engine(tokens)
    for start, j in ((0, 0), (MICRO, MICRO + 4)):  # alone with padding / with 4 others and padding
        assert engine(tokens[start : j + 1])[j - start].item() == together[j].item()


@pytest.mark.parametrize("change", [{"position": "rope"}, {"position": "relative"}, {"norm_first": True}])
def test_other_variants_are_not_folded(change, hostile):
    from genointerp.viral.classify.model_process import scorer

    cfg = XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, d_ff=32, vocab_size=64, **change)
    model = trained_like(cfg)
    assert not supports(model)
    with pytest.raises(ValueError, match="absolute positions"):
        XVirInference(model)
    tokens = np.random.default_rng(0).integers(0, 64, (7, cfg.n_tokens)).astype(np.uint16)
    p = scorer(model, "cpu", "32")(tokens)  # the module path
    # the module and the sigmoid on the same 7 rows in one pass, as scorer runs them (passes
    # of PASS >= 7): the same bits on any CPU, also under `hostile` arithmetic
    expected = torch.sigmoid(module_logits(model, torch.from_numpy(tokens.astype(np.int64)))).double().numpy()
    np.testing.assert_array_equal(p, expected)
