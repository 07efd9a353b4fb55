import numpy as np
import pytest

from genointerp.errors import InputError
from genointerp.seq.alphabet import decode, encode, reverse_complement_codes
from genointerp.seq.error_profile import builtin_profile
from genointerp.seq.mutate import mutate_codes
from genointerp.seq.simulate import MARGIN, ErrorModel, Layout, Source, _apply_indels, allocate, simulate


def no_indels(L):
    """Substitutions only, so every read lines up with the reference base for base."""
    s = builtin_profile(1).sampler(L)
    return ErrorModel((s, s), 0.0, 0.0)


def make_source(seq, circular, layout, label="x"):
    codes = encode(seq)
    return Source(label, [("c", codes, None, codes.size)], circular, layout)


def observed_mismatches(ref, frags, mate, circular):
    reads = frags.mates[mate]
    out = []
    for i in range(reads.codes.shape[0]):
        pos = np.arange(reads.start[i], reads.end[i]) % len(ref) if circular else np.arange(reads.start[i], reads.end[i])
        window = encode(ref)[pos]
        if reads.reverse[i]:
            window = reverse_complement_codes(window)
        out.append(int((window != reads.codes[i]).sum()))
    return np.array(out)


@pytest.mark.parametrize("circular", [False, True])
@pytest.mark.parametrize("paired", [False, True])
def test_reads_match_reference_at_truth_coordinates(circular, paired):
    rng = np.random.default_rng(5)
    ref = "".join(rng.choice(list("ACGT"), 2000))
    layout = Layout(read_length=100, paired=paired, fragment_mean=300, fragment_sd=30, max_n=0)
    src = make_source(ref, circular, layout)
    frags = simulate(src, 400, layout, no_indels(100), np.random.default_rng(1))
    for mate in range(2 if paired else 1):
        reads = frags.mates[mate]
        assert (reads.end - reads.start == 100).all()
        assert np.array_equal(observed_mismatches(ref, frags, mate, circular), reads.errors)
    if circular:
        assert (frags.mates[0].end > len(ref)).any()  # some reads span the origin
    else:
        assert frags.mates[0].end.max() <= len(ref)
    assert 0.35 < frags.mates[0].reverse.mean() < 0.65  # both strands
    if paired:
        m1, m2 = frags.mates
        assert (m1.reverse != m2.reverse).all()
        span = frags.end - frags.start
        assert 250 < span.mean() < 350


def test_windows_with_too_many_n_are_skipped():
    layout = Layout(read_length=50, max_n=0)
    ref = "A" * 200 + "N" * 500 + "C" * 200
    frags = simulate(make_source(ref, False, layout), 300, layout, no_indels(50), np.random.default_rng(2))
    letters = {decode(c) for c in frags.mates[0].codes}
    assert all(b"N" not in s for s in letters)


def test_all_n_source_fails_cleanly():
    layout = Layout(read_length=50, max_n=0)
    with pytest.raises(InputError, match="could not find"):
        simulate(make_source("N" * 500, False, layout), 10, layout, no_indels(50), np.random.default_rng(2))


def test_short_contigs_are_refused():
    with pytest.raises(InputError, match="no contig is at least 150 bp"):
        make_source("ACGT" * 10, False, Layout())


def loop_indels(tmpl, ins, dels, L):
    """The indel rule spelled out cycle by cycle (the vectorised version must agree)."""
    out, t = [], 0
    for c in range(L):
        if c in dels:
            t += 1
        if c in ins:
            out.append(None)  # random base
        else:
            out.append(int(tmpl[t]))
            t += 1
    return out, t


def test_vectorised_indels_follow_the_cycle_rule():
    rng = np.random.default_rng(0)
    L = 40
    tmpl = rng.integers(0, 4, size=(200, L + MARGIN)).astype(np.uint8)
    n_ins, n_del = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    draw = np.random.default_rng(7)
    codes, consumed = _apply_indels(tmpl, n_ins, n_del, L, draw)
    # recover the cycles the function chose by replaying its random draws
    replay = np.random.default_rng(7)
    rank = np.argsort(np.argsort(replay.random((200, L)), axis=1), axis=1)
    for i in range(200):
        ins = set(np.flatnonzero(rank[i] < n_ins[i]).tolist())
        dels = set(np.flatnonzero((rank[i] >= n_ins[i]) & (rank[i] < n_ins[i] + n_del[i])).tolist())
        expected, t = loop_indels(tmpl[i], ins, dels, L)
        assert consumed[i] == t == L - n_ins[i] + n_del[i]
        assert [e for e in expected if e is not None] == [int(c) for j, c in enumerate(codes[i]) if j not in ins]


def test_indel_reads_carry_their_error_count():
    layout = Layout(read_length=150, max_n=0)
    rng = np.random.default_rng(9)
    ref = "".join(rng.choice(list("ACGT"), 5000))
    s = builtin_profile(1).sampler(150)
    frags = simulate(make_source(ref, False, layout), 2000, layout, ErrorModel((s, s), 0.002, 0.002), rng)
    reads = frags.mates[0]
    span = reads.end - reads.start
    assert (span != 150).any()  # indels change the reference span
    assert (reads.errors >= np.abs(span - 150)).all()


def test_mutation_rates_and_origin_map():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 4, 100_000).astype(np.uint8)
    mutated, origin = mutate_codes(codes, 0.1, 0.0, 0.0, rng)
    assert origin is None and abs((mutated != codes).mean() - 0.1) < 0.005
    mutated, origin = mutate_codes(codes, 0.0, 0.01, 0.02, rng)
    assert abs(mutated.size - codes.size * (1 + 0.01 - 0.02)) < 300
    assert (np.diff(origin) >= 0).all()
    kept = np.r_[True, np.diff(origin) > 0]  # first copy of each surviving original position
    assert (mutated[kept] == codes[origin[kept]]).mean() > 0.98


def test_allocate_sums_exactly():
    assert allocate(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert sum(allocate(1001, {"a": 0.001, "b": 0.999}).values()) == 1001
