"""Window entropy (genointerp.seq.entropy), shared by the seed index, the protein masking and placement."""

import math

import numpy as np
import pytest

from genointerp.seq.alphabet import encode
from genointerp.seq.entropy import window_entropy
from genointerp.viral.evidence.seeds import complex_enough
from genointerp.viral.typing.placement import entropy_ok


def test_window_entropy_of_known_compositions():
    codes = encode("AAAAACGTACGTNNNN")
    h = window_entropy(codes, 4, 4)
    assert h.shape == (13,)
    assert h[0] == 0.0  # AAAA
    assert h[4] == pytest.approx(2.0)  # ACGT
    assert h[2] == pytest.approx(-(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25)))  # AAAC
    assert h[12] == 0.0  # NNNN: no letter
    assert h[10] == pytest.approx(1.0)  # GTNN: two letters at 1/4 each
    rows = np.array([[0, 0, 1, 1], [0, 1, 2, 3]], np.uint8)  # any leading shape
    assert window_entropy(rows, 4, 4).ravel().tolist() == pytest.approx([1.0, 2.0])
    assert window_entropy(rows, 5, 4).shape == (2, 0)


def test_the_index_and_placement_filters_read_the_same_entropy():
    # AAAA AAAA AAAC (0.81 bits) AACG (1.5) ACGT ...
    assert complex_enough(encode("AAAAACGTACGT"), 4, 1.5).tolist() == [False] * 3 + [True] * 6
    assert not entropy_ok("ATATATATATAT") and entropy_ok("ACGTTGCAACGA") and not entropy_ok("NNNN")
    assert entropy_ok("acgttgcaacga")  # soft-masked letters count as letters


def _numpy_window_entropy(codes, w, n_symbols):
    """The definition: one pass per letter over running sums of its count, each count's term
    -f log2 f added to the windows' entropy in letter order."""
    c = codes.shape[-1]
    f = np.arange(w + 1) / w
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(f > 0, -f * np.log2(f), 0.0)
    entropy = np.zeros(codes.shape[:-1] + (c - w + 1,))
    start = np.zeros(codes.shape[:-1] + (1,), np.int32)
    for letter in range(n_symbols):
        running = np.concatenate([start, np.cumsum(codes == letter, axis=-1, dtype=np.int32)], axis=-1)
        entropy += term[running[..., w:] - running[..., :-w]]
    return entropy


@pytest.mark.parametrize("n_symbols, w", [(4, 11), (4, 1), (22, 12), (23, 12)])
def test_window_entropy_is_the_numpy_form_bit_for_bit(n_symbols, w):
    """Bases (codes over 3: N and unknown letters) and residues with their edge and masked codes,
    rows of several lengths and leading shapes: the same float64 bits, not just close ones (the
    protein evidence's masking compares them with a threshold)."""
    rng = np.random.default_rng(n_symbols * 100 + w)
    for shape in [(1,), (37,), (5, 40), (3, 2, 29), (4, w)]:
        codes = rng.integers(0, n_symbols + 2, shape, dtype=np.uint8)
        got = window_entropy(codes, w, n_symbols)
        want = _numpy_window_entropy(codes, w, n_symbols) if shape[-1] >= w else np.zeros(shape[:-1] + (0,))
        assert got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def test_window_entropy_takes_letter_codes_only():
    with pytest.raises(TypeError, match="uint8"):
        window_entropy(np.zeros(8, np.int64), 4, 4)
