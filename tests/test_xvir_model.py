import pytest
import torch

from genointerp.models.xvir import XVir, XVirConfig, count_parameters


def test_default_model_has_the_papers_parameter_count():
    assert count_parameters(XVir(XVirConfig())) == 741_377


@pytest.mark.parametrize("position", ["sinusoidal", "learned", "rope", "relative"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_variants_run_and_return_weights(position, norm_first, device):
    cfg = XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, d_ff=32, position=position,
                     norm_first=norm_first, vocab_size=64, n_layers=2)
    model = XVir(cfg).eval().to(device)
    tokens = torch.randint(0, 64, (5, cfg.n_tokens)).to(device)
    logits, weights = model(tokens, need_weights=True)
    assert logits.shape == (5,) and len(weights) == 2 and weights[0].shape == (5, 2, 18, 18)
    torch.testing.assert_close(model(tokens).cpu(), logits.cpu())  # fused path = explicit path


def test_config_round_trip_and_refusals():
    cfg = XVirConfig(position="rope", norm_first=True)
    assert XVirConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="not an XVir"):
        XVirConfig.from_dict({"architecture": "swin1d"})
    with pytest.raises(ValueError, match="unknown XVir settings"):
        XVirConfig.from_dict({**cfg.to_dict(), "window": 8})
