"""The folded numpy inference form of XVir (genointerp.models.xvir_fold, .xvir_folded) against the
module, and its tables stored in a model folder (genointerp.viral.folded_model)."""

import json

import numpy as np
import pytest
import torch

from genointerp.models.xvir import XVir, XVirConfig
from genointerp.models.xvir_fold import fold, supports
from genointerp.models.xvir_folded import MICRO


def trained_like(cfg: XVirConfig, seed: int = 0) -> XVir:
    """A model whose LayerNorm gains/biases and embeddings are far from their initial values, so
    that a folding mistake in any of them shows."""
    torch.manual_seed(seed)
    model = XVir(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model


def module_logits(model: XVir, tokens: torch.Tensor) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.as_tensor(tokens).long()).numpy()


@pytest.mark.parametrize("cfg", [
    XVirConfig(k=4, read_length=30, d_model=32, n_heads=4, d_ff=64),
    # learned positions, two layers (the second projects explicitly), UNKNOWN/PAD tokens in the vocabulary
    XVirConfig(k=3, read_length=25, d_model=16, n_heads=2, d_ff=48, n_layers=2, position="learned", vocab_size=66),
])
def test_folded_logits_equal_the_modules(cfg):
    model = trained_like(cfg)
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (2 * MICRO + 3, cfg.n_tokens))  # a padded last micro-batch
    ref = module_logits(model, tokens)
    got = fold(model)(tokens)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert fold(model)(tokens[:0]).shape == (0,)
    # Other arithmetic (folded tables, numpy's BLAS, micro-batches of MICRO against one batch of
    # 2 MICRO + 3), so no bit-equality: each float32 dot product here has K <= 64 terms (d_ff) and
    # may round differently by up to K u = 64 x 2^-24 = 3.8e-6 of the sum of its terms' magnitudes
    # (worst case; a few ulps in practice), and LayerNorm brings every layer back to unit scale.
    # 1e-5 of the value, and of the largest logit near 0, is above that bound on any CPU; a
    # folding slip (trained_like moves every gain, bias and embedding by 0.2 sd) moves logits by percents.
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def test_the_builtin_model_folds_to_within_float32_rounding():
    """docs/viral.md's "within 1e-5": each logit of test-data's 2,000 reads (-19.6 to 9.1) within 1e-5
    relative (1e-5 absolute near 0), from the tables stored in the folder (make install writes them).
    Measured: at most 4.4e-6 relative (1.5e-5 absolute at a logit of -19) natively, under
    ATEN_CPU_CAPABILITY=default, and with numpy's AVX2/AVX-512 paths off
    (NPY_DISABLE_CPU_FEATURES) and OpenBLAS's Prescott or Sandybridge kernels (OPENBLAS_CORETYPE)."""
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.folded_model import stored_folded
    from test_builtin_models import tumor_small_tokens

    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    assert supports(model)
    engine = stored_folded(builtin_model_dir())
    assert not isinstance(engine, str), engine
    tokens = tumor_small_tokens().numpy()
    np.testing.assert_allclose(engine(tokens), module_logits(model, tokens), rtol=1e-5, atol=1e-5)


def test_a_windows_logit_depends_on_neither_its_companions_nor_the_threads(hostile):
    """Every micro-batch has MICRO rows (the last padded), so a window keeps its logit whatever
    shares its micro-batch, as long as it keeps its place there (CPU kernels may sum a row in an
    order set by its row index: runs keep places by starting on micro-batch boundaries); and each
    micro-batch is computed by one thread, so the thread count does not count. Under `hostile`
    arithmetic, which moves each micro-batch's output with its row count and place."""
    model = trained_like(XVirConfig(k=4, read_length=30, d_model=32, n_heads=4, d_ff=64))
    engine = fold(model)
    tokens = np.random.default_rng(1).integers(0, 256, (5 * MICRO + 5, 27))
    together = engine(tokens)
    for start, j in ((0, 0), (MICRO, MICRO + 4)):  # alone with padding / with 4 others and padding
        assert engine(tokens[start : j + 1])[j - start] == together[j]
    assert fold(model, threads=3)(tokens).tobytes() == together.tobytes()


def test_a_micro_batch_of_fewer_windows_scores_only_them_and_the_same_in_every_run(hostile):
    """With `real`, micro-batch i is a forward pass of its first real[i] windows alone (its
    padding NaN, its content of no account): the same bytes whatever the padding holds and on any
    thread count, and the logits of those windows scored in whole micro-batches."""
    model = trained_like(XVirConfig(k=4, read_length=30, d_model=32, n_heads=4, d_ff=64))
    engine = fold(model)
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 256, (3 * MICRO, 27))
    real = np.array([MICRO, 5, 1])
    got = engine(tokens, real)
    padding = np.r_[MICRO + 5 : 2 * MICRO, 2 * MICRO + 1 : 3 * MICRO]
    assert np.isnan(got[padding]).all() and np.isfinite(np.delete(got, padding)).all()
    other = tokens.copy()
    other[padding] = rng.integers(0, 256, (padding.size, 27))
    assert engine(other, real).tobytes() == got.tobytes() == fold(model, threads=3)(tokens, real).tobytes()
    whole = engine(tokens)  # every micro-batch scored whole, as without `real`
    assert got[:MICRO].tobytes() == whole[:MICRO].tobytes()
    # the windows of the short micro-batches: other row counts, so other rounding and (under
    # `hostile`) other shifts of about 1e-4, but the same logits to 1e-3: no buffer slip
    keep = np.delete(np.arange(3 * MICRO), padding)
    np.testing.assert_allclose(got[keep], whole[keep], rtol=1e-3, atol=1e-3)
    for bad in (np.array([MICRO, 0, 1]), np.array([MICRO, 5]), np.array([MICRO, 17, 1])):
        with pytest.raises(ValueError, match="real"):
            engine(tokens, bad)


def test_stored_tables_are_used_only_beside_their_weights_and_settings(tmp_path, monkeypatch):
    from safetensors.torch import save_file

    from genointerp.errors import InputError
    from genointerp.model_folder import save_model_dir
    from genointerp.viral.folded_model import folded_problem, stored_folded, write_folded
    from genointerp.viral.model_files import FOLDED_FILE, WEIGHTS

    model = trained_like(XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, d_ff=32, vocab_size=64))
    folder = tmp_path / "m"
    folder.mkdir()
    save_model_dir(folder, model, {})
    config = json.loads((folder / "config.json").read_text())
    assert folded_problem(folder, config) == "missing" and stored_folded(folder) == "missing"
    assert write_folded(folder) == folder / FOLDED_FILE and folded_problem(folder, config) is None
    first = (folder / FOLDED_FILE).read_bytes()
    write_folded(folder)
    assert (folder / FOLDED_FILE).read_bytes() == first  # the same bytes every time (one metadata entry)
    tokens = np.random.default_rng(2).integers(0, 64, (MICRO, 18))
    assert stored_folded(folder)(tokens).tobytes() == fold(model)(tokens).tobytes()
    kept = (folder / WEIGHTS).read_bytes()
    save_file({k: v + 1 for k, v in model.state_dict().items()}, str(folder / WEIGHTS))  # other weights, same name
    assert "other weights" in folded_problem(folder, config) and "other weights" in stored_folded(folder)
    (folder / WEIGHTS).write_bytes(kept)
    changed = {**config, "model": {**config["model"], "d_ff": 16}}  # config.json no longer the model folded
    assert "other weights or settings" in folded_problem(folder, changed)
    for cut in (100, len(first) - 100):  # cut short: the header does not read, or its offsets run past the end
        (folder / FOLDED_FILE).write_bytes(first[:cut])
        assert folded_problem(folder, config).startswith("damaged") and stored_folded(folder).startswith("damaged")
    (folder / FOLDED_FILE).write_bytes(first)
    import safetensors.numpy

    def unreadable(path, *a, **k):
        raise OSError("Input/output error")

    monkeypatch.setattr(safetensors.numpy, "load_file", unreadable)  # the header reads as current, the tables do not
    with pytest.raises(InputError, match="damaged or not a safetensors file"):
        stored_folded(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted([WEIGHTS, "config.json", FOLDED_FILE])  # no temporaries


@pytest.mark.parametrize("change", [{"position": "rope"}, {"position": "relative"}, {"norm_first": True}])
def test_other_variants_are_not_folded(change, hostile, tmp_path):
    from genointerp.model_folder import save_model_dir
    from genointerp.viral.classify.model_process import scorer
    from genointerp.viral.folded_model import folded_problem, write_folded

    cfg = XVirConfig(k=3, read_length=20, d_model=16, n_heads=2, d_ff=32, vocab_size=64, **change)
    model = trained_like(cfg)
    assert not supports(model)
    with pytest.raises(ValueError, match="absolute positions"):
        fold(model)
    save_model_dir(tmp_path, model, {})
    assert write_folded(tmp_path) is None and folded_problem(tmp_path, {"model": cfg.to_dict()}) is None
    tokens = np.random.default_rng(0).integers(0, 64, (7, cfg.n_tokens)).astype(np.uint16)
    p = scorer(model, "cpu", "32")(tokens)  # the module path
    # the module and the sigmoid on the same 7 rows in one pass, as scorer runs them (passes
    # of PASS >= 7): the same bits on any CPU, also under `hostile` arithmetic
    expected = torch.sigmoid(torch.from_numpy(module_logits(model, tokens.astype(np.int64)))).double().numpy()
    np.testing.assert_array_equal(p, expected)


def test_train_xvir_scores_its_calibration_reads_as_classify_reads_does(cli, tmp_path):
    """train-xvir sets --target-fpr thresholds on score_windows' numbers: the p_viral classify-reads
    writes, to the last printed digit (tumor_small's 2,000 reads are one window each, so its passes
    are score_windows' passes). The module in batches of 1,024 moves some of them in the 6th decimal."""
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.classify.model_process import score_windows
    from test_builtin_models import tumor_small_tokens
    from conftest import DATA

    res = cli("-q", "classify-reads", DATA / "tumor_small.fq.gz", "--evidence", "model", "--device", "cpu",
              "-o", tmp_path / "c.tsv")
    assert res.exit_code == 0, res.output
    written = [line.split("\t")[2] for line in (tmp_path / "c.tsv").read_text().splitlines()[1:]]
    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    p = score_windows(model, tumor_small_tokens().numpy(), "cpu", "32")
    assert [f"{q:.6f}" for q in p] == written
