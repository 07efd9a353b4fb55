"""classify-reads' calls TSV text (genointerp.viral.classify.job._text): each distinct value is formatted
once and put in place; every read's text is what formatting its own value gives, -0.0 apart from 0.0."""

import numpy as np
import pytest

from genointerp.viral.classify.job import _text


def _one_by_one(values, own, usual, fmt):
    return [fmt(v) if o else usual for v, o in zip(values.tolist(), own.tolist())]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_columns_read_as_each_value_formatted_alone(dtype):
    rng = np.random.default_rng(1)
    values = rng.choice(np.array([0.0, -0.0, 1.5, 2.25, np.nan, -3.125, 1e-9, 0.005, 0.015], dtype), 5000)
    for own in (values != 0, (values != 0) | np.signbit(values), ~np.isnan(values), np.ones(values.size, bool),
                np.zeros(values.size, bool)):
        for fmt in ("{:.2f}".format, "{:.6f}".format, str):
            assert _text(values, own, "U", fmt) == _one_by_one(values, own, "U", fmt)
    assert _text(np.array([0.0, -0.0], dtype), np.ones(2, bool), "U", "{:.2f}".format) == ["0.00", "-0.00"]


def test_integer_columns_read_as_each_value_formatted_alone():
    values = np.random.default_rng(2).integers(-3, 200, 5000)
    for own in (values != 0, values != values[0], np.ones(values.size, bool)):
        assert _text(values, own, "0", str) == _one_by_one(values, own, "0", str)
