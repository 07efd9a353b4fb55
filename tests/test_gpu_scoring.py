"""classify-reads' model on a GPU (genointerp.viral.classify.model_process.gpu_scorer): passes go
to the GPU many at a time, each in the place its key gives, so a window's P(viral) does not depend
on which passes share its call, or --chunk, stdin and batching would change the calls there. The
arrangement is checked on the CPU under hostile arithmetic (every output moves with its row count
and place); the GPU itself where torch sees one."""

import numpy as np
import pytest

from genointerp.viral.classify.blocks import PASS


def _check_passes_keep_their_bits(score, tokens: np.ndarray, per_call: int) -> None:
    """Scored together, reordered with their keys, and in parts: the same bits per pass."""
    passes = len(tokens) // PASS
    assert passes > per_call  # more than one call
    keys = np.arange(passes) + 5  # e.g. a chunk starting at block 5
    together = score(tokens, keys)
    assert together.shape == (len(tokens),) and np.isfinite(together).all()
    by_pass = together.reshape(passes, PASS)
    order = np.random.default_rng(0).permutation(passes)
    reordered = score(tokens.reshape(passes, PASS, -1)[order].reshape(len(tokens), -1), keys[order])
    assert reordered.reshape(passes, PASS).tobytes() == by_pass[order].tobytes()
    for first, last in ((7, 8), (per_call - 3, per_call + 5)):
        part = score(tokens[first * PASS : last * PASS], keys[first:last])
        assert part.tobytes() == together[first * PASS : last * PASS].tobytes()


def test_a_pass_keeps_its_bits_with_its_key_whatever_shares_its_call(hostile, monkeypatch):
    from test_xvir_folded import trained_like

    from genointerp.models.xvir import XVirConfig
    from genointerp.viral.classify import model_process

    monkeypatch.setattr(model_process, "GPU_PASSES", 4)  # small calls: the module on the CPU
    cfg = XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, d_ff=32, vocab_size=64)
    tokens = np.random.default_rng(1).integers(0, 64, (14 * PASS, cfg.n_tokens)).astype(np.uint16)
    score = model_process.gpu_scorer(trained_like(cfg), "cpu", "32")
    _check_passes_keep_their_bits(score, tokens, 4)
    # the fixture bites: the same passes in other places of a call get other bits
    assert score(tokens, np.arange(14) + 1).tobytes() != score(tokens, np.arange(14)).tobytes()


@pytest.fixture(scope="module")
def cuda_model():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch on this machine")
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import builtin_model_dir

    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    return model.to("cuda")


def _tokens() -> np.ndarray:
    from test_builtin_models import tumor_small_tokens

    tokens = tumor_small_tokens().numpy()  # 2,000 reads of 150 bp: one window each
    return tokens[: len(tokens) // PASS * PASS]


@pytest.mark.parametrize("precision", ["32", "bf16"])
def test_on_the_gpu_a_pass_keeps_its_bits_with_its_key(cuda_model, precision):
    from genointerp.viral.classify.model_process import GPU_PASSES, gpu_scorer

    _check_passes_keep_their_bits(gpu_scorer(cuda_model, "cuda", precision), _tokens(), GPU_PASSES)


def test_the_gpu_agrees_with_the_cpu(cuda_model):
    """float32 on the GPU (no TF32: torch's default for matrix products) against the folded CPU
    form: another order of summation, so equal to float32 rounding, not bit for bit."""
    from genointerp.viral.classify.model_process import gpu_scorer, scorer

    tokens = _tokens()
    gpu = gpu_scorer(cuda_model, "cuda", "32")(tokens)
    cpu = scorer(cuda_model.cpu(), "cpu", "32")(tokens)
    cuda_model.to("cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("evidence", "model_all", "precision", "device", "runs_on"), [
    ("both", False, "32", "auto", "cpu"),  # the default: the evidence decides nearly every read
    ("kmer", True, "32", "auto", "cpu"),  # the model never runs
    ("both", True, "32", "auto", "cuda"),  # --model-all: the model scores every read
    ("model", False, "32", "auto", "cuda"),
    ("both", False, "bf16", "auto", "cuda"),  # autocast is asked for
    ("both", False, "32", "cuda", "cuda"),  # asked for by name
    ("both", True, "32", "cpu", "cpu"),
])
def test_auto_puts_the_model_on_a_gpu_only_where_it_scores_every_read(monkeypatch, evidence, model_all, precision,
                                                                      device, runs_on):
    from genointerp import runtime
    from genointerp.viral.classify import classifier
    from genointerp.viral.classify.request import ClassifyRequest

    monkeypatch.setattr(runtime, "resolve_device", lambda requested: "cuda" if requested == "auto" else requested)
    req = ClassifyRequest(["reads.fq"], model_all=model_all, precision=precision, device=device)
    assert classifier.model_device(req, evidence) == runs_on
