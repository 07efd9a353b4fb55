"""bigWig / bedGraph / TSV / peak BED writers on tiny hand-made runs."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pyBigWig
import pytest

from genointerp.errors import InputError
from genointerp.io.track_writers import (
    BinnedRun,
    write_bedgraph,
    write_bigwigs,
    write_intervals_bedgraph,
    write_intervals_bigwig,
    write_peaks_bed,
    write_tsv,
)
from genointerp.tracks.peaks import call_peaks, call_peaks_all, quantile_threshold

SIZES = [("chr2", 100), ("chr1", 45)]  # .fai order, deliberately not sorted by name
ORDER = [c for c, _ in SIZES]


def make_runs() -> list[BinnedRun]:
    """Given out of reference order: a chr1 run reaching the chromosome end (last bin 40-45 is
    partial) and two runs on chr2, the later one first."""
    return [
        BinnedRun("chr1", 20, 10, np.array([[1.5, 0], [2, 1], [3.25, 2]], np.float32), 45),
        BinnedRun("chr2", 60, 10, np.array([[7, 3]], np.float32), 100),
        BinnedRun("chr2", 0, 10, np.array([[0.1, 4], [0.2, 5]], np.float32), 100),
    ]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_bigwig_round_trip(tmp_path):
    paths = write_bigwigs(tmp_path, ["A549.CEBPB.conservative", "t2"], SIZES, make_runs())
    assert [p.name for p in paths] == ["A549.CEBPB.conservative.bw", "t2.bw"]
    assert os.stat(paths[0]).st_mode & 0o777 == 0o666 & ~_umask()
    bw = pyBigWig.open(str(paths[0]))
    assert list(bw.chroms().items()) == SIZES
    # fixed spans of one bin; the partial last bin has the shorter span
    assert bw.intervals("chr1") == ((20, 30, 1.5), (30, 40, 2.0), (40, 45, 3.25))
    assert bw.intervals("chr2") == ((0, 10, pytest.approx(0.1)), (10, 20, pytest.approx(0.2)), (60, 70, 7.0))
    assert bw.values("chr1", 38, 43) == [2.0, 2.0, 3.25, 3.25, 3.25]
    bw.close()
    bw = pyBigWig.open(str(paths[1]))
    assert bw.intervals("chr2") == ((0, 10, 4.0), (10, 20, 5.0), (60, 70, 3.0))
    bw.close()
    # same runs, same bytes
    again = tmp_path / "again"
    again.mkdir()
    write_bigwigs(again, ["A549.CEBPB.conservative", "t2"], SIZES, make_runs()[::-1])
    assert (again / "t2.bw").read_bytes() == paths[1].read_bytes()


@pytest.mark.parametrize(
    "bad,match",
    [
        (BinnedRun("chr2", 10, 10, np.zeros((1, 2), np.float32), 100), "overlap"),
        (BinnedRun("chrX", 0, 10, np.zeros((1, 2), np.float32), 100), "not in the reference"),
        (BinnedRun("chr1", 40, 10, np.zeros((2, 2), np.float32), 45), "past the chromosome end"),
        (BinnedRun("chr1", 0, 10, np.zeros((1, 2), np.float32), 50), "length"),
        (BinnedRun("chr1", 0, 10, np.full((1, 2), np.nan, np.float32), 45), "finite"),
        (BinnedRun("chr1", 0, 10, np.zeros((1, 3), np.float32), 45), "shape"),
    ],
)
def test_bigwig_bad_runs(tmp_path, bad, match):
    with pytest.raises(ValueError, match=match):
        write_bigwigs(tmp_path, ["a", "b"], SIZES, make_runs() + [bad])


@pytest.mark.parametrize("tid", ["a/b", ".hidden", "..", "", "a\x00b", "a\tb"])
def test_unsafe_track_id_refused(tmp_path, tid):
    with pytest.raises(InputError, match="not a safe file name"):
        write_bigwigs(tmp_path, [tid, "ok"], SIZES, make_runs())
    assert list(tmp_path.iterdir()) == []


def test_duplicate_track_id_refused(tmp_path):
    with pytest.raises(InputError, match="twice"):
        write_bigwigs(tmp_path, ["x", "x"], SIZES, make_runs())


def test_bedgraph_and_tsv_text(tmp_path):
    write_bedgraph(tmp_path / "t2.bedGraph", "t2", make_runs(), 1, chrom_order=ORDER)
    assert (tmp_path / "t2.bedGraph").read_text() == (
        "chr2\t0\t10\t4\nchr2\t10\t20\t5\nchr2\t60\t70\t3\n"
        "chr1\t20\t30\t0\nchr1\t30\t40\t1\nchr1\t40\t45\t2\n"
    )
    write_bedgraph(tmp_path / "a.bedGraph.gz", "a", make_runs()[:1], 0)
    with gzip.open(tmp_path / "a.bedGraph.gz", "rt") as fh:
        assert fh.read() == "chr1\t20\t30\t1.5\nchr1\t30\t40\t2\nchr1\t40\t45\t3.25\n"
    write_tsv(tmp_path / "all.tsv", ["a", "t2"], make_runs(), chrom_order=ORDER)
    assert (tmp_path / "all.tsv").read_text() == (
        "chrom\tstart\tend\ta\tt2\n"
        "chr2\t0\t10\t0.1\t4\nchr2\t10\t20\t0.2\t5\nchr2\t60\t70\t7\t3\n"
        "chr1\t20\t30\t1.5\t0\nchr1\t30\t40\t2\t1\nchr1\t40\t45\t3.25\t2\n"
    )
    assert os.stat(tmp_path / "all.tsv").st_mode & 0o777 == 0o666 & ~_umask()


def test_variable_span_intervals_bigwig_and_bedgraph(tmp_path):
    intervals = [
        ("chr2", np.array([0, 7, 60]), np.array([7, 9, 100]), np.array([0.5, 1e-7, 3], np.float32)),
        ("chr1", np.array([44]), np.array([45]), np.array([2.25], np.float32)),
    ]
    write_intervals_bigwig(tmp_path / "r.bw", SIZES, intervals)
    assert os.stat(tmp_path / "r.bw").st_mode & 0o777 == 0o666 & ~_umask()
    bw = pyBigWig.open(str(tmp_path / "r.bw"))
    assert list(bw.chroms().items()) == SIZES
    assert bw.intervals("chr2") == ((0, 7, 0.5), (7, 9, pytest.approx(1e-7)), (60, 100, 3.0))
    assert bw.intervals("chr1") == ((44, 45, 2.25),)
    bw.close()
    write_intervals_bedgraph(tmp_path / "r.bedGraph", intervals)
    assert (tmp_path / "r.bedGraph").read_text() == (
        "chr2\t0\t7\t0.5\nchr2\t7\t9\t1e-07\nchr2\t60\t100\t3\nchr1\t44\t45\t2.25\n"
    )
    assert os.stat(tmp_path / "r.bedGraph").st_mode & 0o777 == 0o666 & ~_umask()


def peak_run() -> BinnedRun:
    values = np.array([0, 5, 6, 0, 1, 9, 0, 0, 4, 8], np.float32)[:, None]
    return BinnedRun("chr2", 0, 10, values, 95)  # last bin 90-95 is partial


def test_peaks_threshold_merges_adjacent_bins():
    peaks = call_peaks(peak_run(), 0, threshold=4)
    assert peaks == [("chr2", 10, 30, 6.0, 5.5), ("chr2", 50, 60, 9.0, 9.0), ("chr2", 80, 95, 8.0, 6.0)]
    assert call_peaks(peak_run(), 0, threshold=100) == []
    with pytest.raises(ValueError, match="exactly one"):
        call_peaks(peak_run(), 0)
    with pytest.raises(ValueError, match="exactly one"):
        call_peaks(peak_run(), 0, threshold=1, quantile=0.5)


def test_peaks_quantile_over_all_runs():
    other = BinnedRun("chr1", 0, 10, np.array([[100], [100], [100], [100]], np.float32), 45)
    # the 0.8 quantile of this run alone is 6.4; with `other` it is 100
    assert quantile_threshold([peak_run()], 0, 0.8) == pytest.approx(6.4)
    assert call_peaks(peak_run(), 0, quantile=0.8) == [("chr2", 50, 60, 9.0, 9.0), ("chr2", 90, 95, 8.0, 8.0)]
    assert quantile_threshold([peak_run(), other], 0, 0.8) == 100
    # a quantile cut is strict: bins tied at the quantile (here all of `other`) are not above it
    assert call_peaks_all([peak_run(), other], 0, quantile=0.8) == []
    assert call_peaks_all([peak_run(), other], 0, quantile=0.7) == [("chr1", 0, 40, 100.0, 100.0)]
    with pytest.raises(ValueError, match="quantile"):
        call_peaks(peak_run(), 0, quantile=1.5)


def test_peaks_bed(tmp_path):
    peaks = call_peaks_all([peak_run(), BinnedRun("chr1", 0, 10, np.array([[18]], np.float32), 45)], 0, threshold=4)
    write_peaks_bed(tmp_path / "p.bed", "t2", peaks, ORDER)
    assert (tmp_path / "p.bed").read_text() == (
        "chr2\t10\t30\tt2_1\t333\t.\t6\t5.5\n"
        "chr2\t50\t60\tt2_2\t500\t.\t9\t9\n"
        "chr2\t80\t95\tt2_3\t444\t.\t8\t6\n"
        "chr1\t0\t10\tt2_4\t1000\t.\t18\t18\n"
    )
