import numpy as np
import pytest

from genointerp.errors import InputError
from genointerp.seq.error_profile import builtin_profile, load_art_profile, phred_error


def test_art_profile_parser_on_synthetic_profile(data):
    prof = load_art_profile(data / "art_q10_q40_L150.txt")
    assert prof.cycles == 150
    assert prof.cdf[0, 10] == pytest.approx(0.6) and prof.cdf[0, 40] == pytest.approx(1.0)
    assert prof.mean_error_rate() == pytest.approx(np.full(150, 0.6 * 0.1 + 0.4 * 1e-4))


def test_builtin_hiseq2500_profiles_look_like_the_instrument():
    r1, r2 = builtin_profile(1), builtin_profile(2)
    assert r1.cycles == r2.cycles == 150
    e1, e2 = r1.mean_error_rate(), r2.mean_error_rate()
    # ART's HS25 reads: about 0.17 % (R1) and 0.22 % (R2) substitutions, fewer in the first cycles
    assert e1.mean() == pytest.approx(0.00166, abs=1e-4) and e2.mean() == pytest.approx(0.00223, abs=1e-4)
    assert e1[60:90].mean() > 1.5 * e1[:20].mean()


def test_sampler_reproduces_the_distribution():
    prof = builtin_profile(1)
    q = prof.sampler(150).sample(40_000, np.random.default_rng(3))
    assert q.shape == (40_000, 150) and q.dtype == np.uint8
    for cycle in (0, 75, 149):
        observed = np.bincount(q[:, cycle], minlength=64) / q.shape[0]
        expected = np.diff(prof.cdf[cycle], prepend=0.0)
        assert np.abs(observed - expected).max() < 0.01
    assert phred_error(np.array([10, 20, 30])) == pytest.approx([0.1, 0.01, 0.001])


def test_profile_shorter_than_reads_is_refused():
    with pytest.raises(InputError, match="covers 150 cycles"):
        builtin_profile(1).sampler(151)


def test_art_profile_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\tworld\n")
    with pytest.raises(InputError, match="no '.' rows"):
        load_art_profile(bad)
    bad.write_text(".\t0\t10\t20\n.\t0\t5\t3\n")
    with pytest.raises(InputError, match="cumulative"):
        load_art_profile(bad)
