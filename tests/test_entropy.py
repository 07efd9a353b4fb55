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
