"""classify-reads' model on a GPU (genointerp.viral.classify.model_process.gpu_scorer): a window's
P(viral) must not depend on which passes share its CUDA call, or --chunk, stdin and batching would
change the calls there. Runs where torch sees a GPU; skipped elsewhere."""

import numpy as np
import pytest


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
    return tokens[: len(tokens) // 16 * 16]


@pytest.mark.parametrize("precision", ["32", "bf16"])
def test_a_pass_scores_the_same_bits_in_any_call(cuda_model, precision):
    from genointerp.viral.classify.blocks import PASS
    from genointerp.viral.classify.model_process import GPU_PASSES, gpu_scorer

    score = gpu_scorer(cuda_model, "cuda", precision)
    tokens = _tokens()
    passes = len(tokens) // PASS
    assert passes > GPU_PASSES  # more than one call, the last one padded
    together = score(tokens)
    assert together.shape == (len(tokens),) and np.isfinite(together).all()
    # one pass alone (padded), a run of passes starting mid-call, and the passes in reverse order
    order = np.arange(passes)[::-1]
    reordered = score(tokens.reshape(passes, PASS, -1)[order].reshape(len(tokens), -1)).reshape(passes, PASS)
    assert reordered[::-1].tobytes() == together.reshape(passes, PASS).tobytes()
    for first, last in ((7, 8), (GPU_PASSES - 3, GPU_PASSES + 5)):
        part = score(tokens[first * PASS : last * PASS])
        assert part.tobytes() == together[first * PASS : last * PASS].tobytes()


def test_the_gpu_agrees_with_the_cpu(cuda_model):
    """float32 on the GPU (no TF32: torch's default for matrix products) against the folded CPU
    form: another order of summation, so equal to float32 rounding, not bit for bit."""
    from genointerp.viral.classify.model_process import gpu_scorer, scorer

    tokens = _tokens()
    gpu = gpu_scorer(cuda_model, "cuda", "32")(tokens)
    cpu = scorer(cuda_model.cpu(), "cpu", "32")(tokens)
    cuda_model.to("cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-5)
