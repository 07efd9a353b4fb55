"""The folded XVir's fused element-wise kernels (genointerp/_fused.c) against their definitions in
numpy: bit for bit where they do the same IEEE float32 operations in the same order (the
embedding, bias + ReLU, the division), within stated error where they sum or take exp."""

import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

from genointerp import _fused


def test_exp_is_within_one_ulp():
    x = -np.linspace(0, 87, 400_001, dtype=np.float64).astype(np.float32)  # x[0] = 0 is the row's max: exp(x) itself
    rows = x.reshape(1, -1).copy()
    _fused.softmax_numerators(rows, np.empty(1, np.float32), rows.shape[1])
    want = np.exp(x.astype(np.float64))
    # a float32 ulp, in float64: np.spacing in float32 gives denormals near e^-87, which a thread that has flushed
    # denormals (genointerp._scan.flush_denormals, run by earlier tests) reads as 0
    ulps = np.abs(rows[0] - want) / np.ldexp(1.0, np.frexp(want)[1] - 24)
    assert ulps.max() <= 1.0  # measured 0.97: the polynomial's error plus one rounding
    # below e^-87.3 (float32's normal range ends at e^-87.34) every value is e^-87.3: nothing a row sum, which holds
    # an e^0, can tell from 0
    tiny = np.array([[0, -87.3, -88, -200, -np.inf]], np.float32)
    _fused.softmax_numerators(tiny, np.empty(1, np.float32), 5)
    assert tiny[0, 0] == 1 and (tiny[0, 1:] == tiny[0, 1]).all()
    assert abs(tiny[0, 1] / np.exp(np.float64(np.float32(-87.3))) - 1) < 1e-6


@pytest.mark.parametrize("cols", [1, 7, 8, 145])
def test_softmax_numerators_subtract_each_rows_max(cols):
    scores = np.random.default_rng(cols).normal(0, 10, (33, cols)).astype(np.float32)
    want = np.exp((scores - scores.max(axis=1, keepdims=True)).astype(np.float64))  # the float32 difference's exp
    sums = np.empty(33, np.float32)
    _fused.softmax_numerators(scores, sums, cols)
    np.testing.assert_allclose(scores, want, rtol=1.2e-7, atol=1e-37)  # 1 ulp
    np.testing.assert_allclose(sums, want.sum(axis=1), rtol=cols * 1.2e-7)  # float32 sums of `cols` terms
    assert (scores.max(axis=1) == 1).all()


@pytest.mark.parametrize("d,bias", [(128, True), (131, False), (5, True)])
def test_add_layer_norm_is_torchs_layer_norm_of_the_sum(d, bias):
    rng = np.random.default_rng(d)
    x, y = (rng.normal(3, 2, (40, d)).astype(np.float32) for _ in range(2))
    b, w, beta = (rng.normal(0, 1, d).astype(np.float32) for _ in range(3))
    v = x.astype(np.float64) + y + (b if bias else 0)
    want = (v - v.mean(1, keepdims=True)) / np.sqrt(v.var(1, keepdims=True) + 1e-5) * w + beta
    _fused.add_layer_norm(x, y, b if bias else np.empty(0, np.float32), w, beta, 1e-5, d)
    # float32 rounding of the sum, mean and variance: a few 1e-7 of the row's scale
    np.testing.assert_allclose(x, want, rtol=0, atol=2e-6 * np.abs(want).max())


def test_embed_bias_relu_and_divide_are_the_numpy_operations_bit_for_bit():
    rng = np.random.default_rng(3)
    vocab, n, d, m = 50, 9, 12, 6
    kmer, pos = rng.normal(0, 1, (vocab, 4 * d)).astype(np.float32), rng.normal(0, 1, (n, 4 * d)).astype(np.float32)
    rstd, offset = rng.uniform(0.5, 2, vocab * n).astype(np.float32), rng.normal(0, 1, 4 * d).astype(np.float32)
    tokens = rng.integers(0, vocab, (m, n))
    x, qkv = np.empty((m * n, d), np.float32), np.empty((m, n, 3 * d), np.float32)
    _fused.embed(kmer, pos, rstd, offset, tokens, x, qkv, n, d)
    y = (kmer[tokens] + pos) * rstd[tokens * n + np.arange(n)][..., None] + offset  # float32 throughout
    assert y.dtype == np.float32
    assert np.array_equal(x, y[..., :d].reshape(m * n, d)) and np.array_equal(qkv, y[..., d:])

    h, b = rng.normal(0, 1, (20, 16)).astype(np.float32), rng.normal(0, 1, 16).astype(np.float32)
    want = np.maximum(h + b, 0)
    _fused.bias_relu(h, b, 16)
    assert np.array_equal(h, want)

    values, sums = rng.normal(0, 1, (30, 7)).astype(np.float32), rng.uniform(1, 5, 30).astype(np.float32)
    out = np.zeros((30, 20), np.float32)
    _fused.divide_rows(values, sums, out, 7, 20, 5)
    assert np.array_equal(out[:, 5:12], values / sums[:, None]) and not out[:, :5].any() and not out[:, 12:].any()


def test_buffers_too_small_and_tokens_out_of_range_are_refused():
    f32 = np.float32
    with pytest.raises(ValueError, match="sums"):
        _fused.softmax_numerators(np.zeros((4, 8), f32), np.zeros(3, f32), 8)
    with pytest.raises(ValueError, match="whole rows"):
        _fused.softmax_numerators(np.zeros(10, f32), np.zeros(3, f32), 8)
    with pytest.raises(ValueError, match="beta"):
        _fused.add_layer_norm(np.zeros((2, 4), f32), np.zeros((2, 4), f32), np.zeros(0, f32), np.ones(4, f32),
                              np.zeros(3, f32), 1e-5, 4)
    with pytest.raises(ValueError, match="outside"):
        _fused.divide_rows(np.zeros((2, 4), f32), np.ones(2, f32), np.zeros((2, 6), f32), 4, 6, 3)
    args = (np.zeros((5, 8), f32), np.zeros((3, 8), f32), np.ones(15, f32), np.zeros(8, f32))
    with pytest.raises(ValueError, match="token 5 is not a k-mer id below 5"):
        _fused.embed(*args, np.array([[0, 5, 1]]), np.empty((3, 2), f32), np.empty((3, 6), f32), 3, 2)
    with pytest.raises(ValueError, match="qkv"):
        _fused.embed(*args, np.array([[0, 4, 1]]), np.empty((3, 2), f32), np.empty((3, 5), f32), 3, 2)


def test_the_vector_clones_give_the_baselines_bytes(tmp_path):
    """_fused.c's loops are compiled for AVX2 and for the x86-64 baseline (the CPU picks at load);
    a build without the clones must give the same bytes on every kernel."""
    cc = shutil.which(sysconfig.get_config_var("CC").split()[0]) or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    source = _fused.__file__.rsplit("/", 1)[0] + "/_fused.c"
    built = tmp_path / ("_fused" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc, "-shared", "-fPIC", "-O3", "-std=c99", "-ffp-contract=off", "-fno-trapping-math",
                    "-DGENOINTERP_NO_CLONES", f"-I{sysconfig.get_paths()['include']}", source, "-o", str(built)],
                   check=True)
    script = (
        "import sys, hashlib, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import _fused as f\n"
        "r = np.random.default_rng(7); out = []\n"
        "for cols in (1, 7, 8, 9, 145, 300):\n"
        "    s = r.normal(0, 30, (50, cols)).astype(np.float32); t = np.empty(50, np.float32)\n"
        "    f.softmax_numerators(s, t, cols); out += [s, t]\n"
        "for d in (5, 128, 131):\n"
        "    x, y = (r.normal(0, 3, (40, d)).astype(np.float32) for _ in range(2))\n"
        "    b, w, z = (r.normal(0, 1, d).astype(np.float32) for _ in range(3))\n"
        "    f.add_layer_norm(x, y, b, w, z, 1e-5, d); h = r.normal(0, 1, (40, d)).astype(np.float32)\n"
        "    f.bias_relu(h, b, d); out += [x, h]\n"
        "k, p = r.normal(0, 1, (50, 48)).astype(np.float32), r.normal(0, 1, (9, 48)).astype(np.float32)\n"
        "x, q = np.empty((54, 12), np.float32), np.empty((6, 9, 36), np.float32)\n"
        "f.embed(k, p, r.uniform(.5, 2, 450).astype(np.float32), r.normal(0, 1, 48).astype(np.float32),\n"
        "        r.integers(0, 50, (6, 9)), x, q, 9, 12); out += [x, q]\n"
        "print(hashlib.sha256(b''.join(a.tobytes() for a in out)).hexdigest())\n")
    installed = str(tmp_path / "installed")
    (tmp_path / "installed").mkdir()
    shutil.copy(_fused.__file__, installed)
    digests = [subprocess.run([sys.executable, "-c", script, where], capture_output=True, text=True, check=True).stdout
               for where in (installed, str(tmp_path))]
    assert digests[0] == digests[1] and len(digests[0].strip()) == 64
