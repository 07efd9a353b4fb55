"""Tiling and stitching: a fake model whose output is a pure function of the absolute genomic bin
must come back exactly, whatever the region, overlap or batch order."""

from __future__ import annotations

import numpy as np
import pytest

from genointerp.io.track_writers import BinnedRun
from genointerp.errors import UsageError
from genointerp.tracks.tiling import Stitcher, merge_regions, parse_shifts, plan_windows, shifted

SEQ_LEN, TARGET_BINS, BIN = 64, 6, 8  # flank = (64 - 48) / 2 = 8 bp
N_TRACKS = 3


def fake_model(window_starts: np.ndarray) -> np.ndarray:
    """(W, TARGET_BINS, N_TRACKS): bin * 10 + track, with bin the absolute genomic bin index."""
    flank = (SEQ_LEN - TARGET_BINS * BIN) // 2
    first = (window_starts + flank) // BIN
    bins = first[:, None] + np.arange(TARGET_BINS)[None, :]
    return (bins[:, :, None] * 10 + np.arange(N_TRACKS)).astype(np.float32)


def stitch(start, end, chrom_length, overlap):
    ws, run_start, n_bins = plan_windows(start, end, chrom_length, SEQ_LEN, TARGET_BINS, BIN, overlap)
    st = Stitcher(run_start, n_bins, N_TRACKS, BIN, ws, SEQ_LEN, TARGET_BINS)
    preds = fake_model(ws)
    for w in range(len(ws)):
        st.add(w, preds[w])
    return ws, run_start, n_bins, st


def expected(run_start, n_bins):
    bins = run_start // BIN + np.arange(n_bins)
    return (bins[:, None] * 10 + np.arange(N_TRACKS)).astype(np.float32)


@pytest.mark.parametrize("overlap", [0, 1, 2, 5])
@pytest.mark.parametrize(
    "start,end,length",
    [(0, 500, 500), (3, 97, 1000), (0, 20, 1000), (990, 1000, 1000), (455, 1003, 1003), (17, 18, 40)],
)
def test_stitch_recovers_function_of_absolute_bin(overlap, start, end, length):
    ws, run_start, n_bins, st = stitch(start, end, length, overlap)
    assert run_start == start // BIN * BIN and run_start + n_bins * BIN >= end
    assert (run_start + (n_bins - 1) * BIN) < end  # no bin beyond the region
    assert np.array_equal(st.result(), expected(run_start, n_bins))


def test_batch_order_does_not_matter():
    ws, run_start, n_bins = plan_windows(5, 700, 800, SEQ_LEN, TARGET_BINS, BIN, 3)
    # output that depends on the window, not only the bin, exposes any effect of the add order
    preds = fake_model(ws) + np.arange(len(ws), dtype=np.float32)[:, None, None] / 100
    rng = np.random.default_rng(0)
    results = []
    for batch in (1, 2, 5):
        st = Stitcher(run_start, n_bins, N_TRACKS, BIN, ws, SEQ_LEN, TARGET_BINS)
        order = rng.permutation(len(ws))
        for i in range(0, len(order), batch):
            st.add(order[i : i + batch], preds[order[i : i + batch]])
        results.append(st.result())
    assert all(np.array_equal(r, results[0]) for r in results)


def test_window_choice_is_nearest_centre_and_covers_each_bin_once():
    ws, run_start, n_bins = plan_windows(0, 200, 1000, SEQ_LEN, TARGET_BINS, BIN, 2)
    st = Stitcher(run_start, n_bins, 1, BIN, ws, SEQ_LEN, TARGET_BINS)
    ranges = st.owner_ranges
    cover = np.zeros(n_bins, dtype=int)
    for lo, hi in ranges:
        cover[lo:hi] += 1
    assert np.all(cover == 1)
    # window predictions tagged by window index: the stitched bins show which window won
    for w in range(len(ws)):
        st.add(w, np.full((TARGET_BINS, 1), w, dtype=np.float32))
    owner = st.result()[:, 0].astype(int)
    first = (ws + 8 - run_start) // BIN
    for b in range(n_bins):
        depth = np.minimum(b - first, first + TARGET_BINS - 1 - b)
        depth[(b < first) | (b >= first + TARGET_BINS)] = -1
        assert owner[b] == int(np.argmax(depth))  # argmax picks the earlier window on ties


def test_plan_is_deterministic_and_aligned():
    a = plan_windows(123, 4567, 5000, SEQ_LEN, TARGET_BINS, BIN, 2)
    b = plan_windows(123, 4567, 5000, SEQ_LEN, TARGET_BINS, BIN, 2)
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]
    ws = a[0]
    assert ws.dtype == np.int64 and np.all(np.diff(ws) > 0)
    assert np.all((ws + 8) % BIN == 0)
    steps = np.diff(ws) // BIN
    assert np.all(steps[:-1] == TARGET_BINS - 2) and 0 < steps[-1] <= TARGET_BINS - 2
    # the last window's targets end exactly at the run end
    assert ws[-1] + 8 + TARGET_BINS * BIN == a[1] + a[2] * BIN


def test_windows_may_extend_past_chromosome_ends():
    ws, run_start, n_bins = plan_windows(0, 10, 10, SEQ_LEN, TARGET_BINS, BIN, 0)
    assert run_start == 0 and n_bins == 2 and len(ws) == 1
    assert ws[0] < 0 and ws[0] + SEQ_LEN > 10
    # the small run is centred in the window's targets
    assert (ws[0] + 8) // BIN == -2


def test_invalid_arguments():
    with pytest.raises(ValueError, match="overlap_bins"):
        plan_windows(0, 100, 100, SEQ_LEN, TARGET_BINS, BIN, TARGET_BINS)
    with pytest.raises(ValueError, match="overlap_bins"):
        plan_windows(0, 100, 100, SEQ_LEN, TARGET_BINS, BIN, -1)
    with pytest.raises(ValueError, match="even"):
        plan_windows(0, 100, 100, 65, TARGET_BINS, BIN, 0)
    with pytest.raises(ValueError, match="even"):
        plan_windows(0, 100, 100, 40, TARGET_BINS, BIN, 0)
    with pytest.raises(ValueError, match="inside the chromosome"):
        plan_windows(0, 101, 100, SEQ_LEN, TARGET_BINS, BIN, 0)
    with pytest.raises(ValueError, match="non-empty"):
        plan_windows(50, 50, 100, SEQ_LEN, TARGET_BINS, BIN, 0)


def test_stitcher_checks():
    ws, run_start, n_bins = plan_windows(0, 100, 100, SEQ_LEN, TARGET_BINS, BIN, 1)
    st = Stitcher(run_start, n_bins, 2, BIN, ws, SEQ_LEN, TARGET_BINS)
    with pytest.raises(ValueError, match="shape"):
        st.add(0, np.zeros((TARGET_BINS, 3)))
    st.add(0, np.zeros((TARGET_BINS, 2)))
    with pytest.raises(ValueError, match="twice"):
        st.add(0, np.zeros((TARGET_BINS, 2)))
    with pytest.raises(ValueError, match="not added"):
        st.result()
    with pytest.raises(ValueError, match="uncovered"):
        Stitcher(0, 20, 1, BIN, ws[:1], SEQ_LEN, TARGET_BINS)
    with pytest.raises(ValueError, match="bin grid"):
        Stitcher(0, 5, 1, BIN, ws + 1, SEQ_LEN, TARGET_BINS)


def test_binned_run_end_is_clipped():
    run = BinnedRun("c", 16, 8, np.zeros((3, 1), np.float32), 35)
    assert run.end == 35 and run.bin_ends().tolist() == [24, 32, 35]


def test_merge_regions():
    regions = [("b", 5, 9), ("a", 100, 120), ("a", 0, 10), ("a", 10, 20), ("a", 33, 40), ("a", 70, 80),
               ("b", 1, 3)]
    assert merge_regions(regions, ["b", "a"]) == [
        ("b", 1, 3), ("b", 5, 9), ("a", 0, 20), ("a", 33, 40), ("a", 70, 80), ("a", 100, 120),
    ]
    # on a 16 bp grid, regions sharing or abutting a bin merge (20 ends in bin 1, 33 is in bin 2);
    # a one-bin gap (bin 3 between 40 and 70) keeps them apart
    assert merge_regions(regions, ["b", "a"], bin_size=16) == [
        ("b", 1, 9), ("a", 0, 40), ("a", 70, 80), ("a", 100, 120),
    ]
    with pytest.raises(ValueError, match="not in the reference"):
        merge_regions([("z", 0, 1)], ["a"])
    with pytest.raises(ValueError, match="empty"):
        merge_regions([("a", 5, 5)], ["a"])


def test_shifted_reads_the_window_moved_with_n_past_its_ends():
    from genointerp.seq.onehot import one_hot

    codes = np.array([[0, 1, 2, 3, 0, 2]], dtype=np.uint8)
    x = one_hot(codes)
    assert shifted(x, 0) is x
    # +2: the window starting 2 bp later, its last 2 bp unknown (N, code 4)
    np.testing.assert_array_equal(shifted(x, 2), one_hot(np.array([[2, 3, 0, 2, 4, 4]], dtype=np.uint8)))
    np.testing.assert_array_equal(shifted(x, -1), one_hot(np.array([[4, 0, 1, 2, 3, 0]], dtype=np.uint8)))


def test_parse_shifts_takes_comma_separated_bp_and_refuses_the_rest():
    assert parse_shifts("0") == (0,) and parse_shifts("-1,0,1") == (-1, 0, 1)
    for bad in ("", "a", "1,1", "0,33", "1.5"):
        with pytest.raises(UsageError, match="--shifts"):
            parse_shifts(bad)
