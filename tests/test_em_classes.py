"""The typing EM over compatibility classes (genointerp.viral.typing.typer.run_em) against the EM
read by read: the same abundances and posteriors (to rounding: the sums run over classes), the
same matches in the same order, and classes that depend on nothing but each read's matches; its
compiled steps against their numpy loop (the same bytes); the report's type rows on arrays against
their definition read by read (the same numbers); and the report's coverage count against a
base-by-base mask."""

import math
from typing import NamedTuple

import numpy as np
import pytest

from genointerp import _scan
from genointerp.viral.typing.typer import (EM_ITERATIONS, EM_TOLERANCE, ERROR_RATE, Hit, TypeHits, TypeRow,
                                           _class_of_reads_by_text, _covered_by_group, _first_of_each, _pairs,
                                           class_of_reads,
                                           compatibility_classes, covered_bases, em_steps_numpy, run_em, type_rows)
from genointerp.viral.typing.placed import PlacedReads


def per_read_em(placed):
    """The EM over reads, one likelihood row per read: the definition."""
    refs = sorted({h.ref for p in placed for h in p.hits})
    index = {r: i for i, r in enumerate(refs)}
    read = np.array([i for i, p in enumerate(placed) for _ in p.hits])
    ref = np.array([index[h.ref] for p in placed for h in p.hits])
    edits = np.array([h.edits - p.best for p in placed for h in p.hits], float)
    like = np.exp(-edits * math.log((1 - ERROR_RATE) / ERROR_RATE))
    n, r = len(placed), len(refs)
    abundance = np.full(r, 1.0 / r)
    for it in range(1, EM_ITERATIONS + 1):
        w = abundance[ref] * like
        new = np.bincount(ref, w / np.bincount(read, w, n)[read], r) / n
        moved = np.abs(new - abundance).max()
        abundance = new
        if moved < EM_TOLERANCE:
            break
    w = abundance[ref] * like
    return refs, abundance, read, ref, w / np.bincount(read, w, n)[read], it


def sample(seed: int, n: int = 3000):
    """Reads of three types with lineages: most match one genome, some several at a few edits."""
    rng = np.random.default_rng(seed)
    genomes = ["HPV16", "HPV16_v2", "HPV16_v3", "HPV18", "HPV18_v2", "HPV45"]
    placed = []
    for _ in range(n):
        k = int(rng.choice([1, 1, 1, 2, 3]))
        names = sorted(rng.choice(genomes, k, replace=False).tolist())
        best = int(rng.integers(0, 3))
        edits = sorted([best] + (best + rng.choice([0, 1, 6], k - 1)).tolist())
        hits = [Hit(name, e, int(rng.integers(0, 7000)), 0, 150) for name, e in zip(names, edits)]
        placed.append(TypeHits(sorted(hits, key=lambda h: (h.edits, h.ref))))
    return placed


def test_the_em_over_classes_is_the_em_over_reads():
    placed = sample(1)
    em = run_em(placed)
    refs, abundance, read, ref, posterior, iterations = per_read_em(placed)
    assert em.refs == refs and em.iterations == iterations
    np.testing.assert_array_equal(em.read, read)
    np.testing.assert_array_equal(em.ref, ref)
    np.testing.assert_allclose(em.abundance, abundance, rtol=0, atol=1e-12)
    np.testing.assert_allclose(em.posterior, posterior, rtol=0, atol=1e-12)
    of, classes = compatibility_classes(placed, {r: i for i, r in enumerate(refs)})
    assert len(classes) < len(placed) / 10  # the point: far fewer rows than reads


def test_classes_depend_on_matches_not_on_starts_or_best():
    one = TypeHits([Hit("HPV16", 2, 10, 160, 150), Hit("HPV16_v2", 4, 900, 1050, 150)])
    two = TypeHits([Hit("HPV16", 0, 5000, 5150, 150), Hit("HPV16_v2", 2, 12, 162, 150)])
    other = TypeHits([Hit("HPV16", 0, 10, 160, 150), Hit("HPV16_v2", 3, 12, 162, 150)])
    of, classes = compatibility_classes([one, two, other], {"HPV16": 0, "HPV16_v2": 1})
    assert of.tolist() == [0, 0, 1] and classes == [((0, 0), (1, 2)), ((0, 0), (1, 3))]


def test_the_em_is_the_same_bytes_for_the_same_reads():
    placed = sample(2)
    a, b = run_em(placed), run_em(list(placed))
    assert a.abundance.tobytes() == b.abundance.tobytes() and a.posterior.tobytes() == b.posterior.tobytes()


def test_covered_bases_count_what_marking_each_base_counts():
    """type_rows' coverage by a running sum: the bases a mask marked base by base would count,
    stretches past a circular genome's end going on from its start."""
    rng = np.random.default_rng(4)
    for _ in range(500):
        length = int(rng.integers(200, 3000))
        spans = [(int(a), int(a + rng.integers(20, length + 400))) for a in rng.integers(0, length, rng.integers(0, 6))]
        mask = np.zeros(length, bool)
        for a, b in spans:
            mask[np.arange(a, b) % length] = True
        assert covered_bases(spans, length) == int(mask.sum())


def test_covered_bases_of_many_genomes_at_once_are_each_one_s():
    """type_rows' coverage of every type's lead at once (sorted stretches' union) is each genome's
    own running sum: stretches past the end, empty ones, overlapping and nested ones, genomes with
    none."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        length = rng.integers(1, 3000, int(rng.integers(1, 12)))
        group = np.sort(rng.integers(0, length.size, int(rng.integers(0, 60))))
        st = (rng.random(group.size) * length[group]).astype(np.int64)
        en = st + rng.integers(0, 2 * length[group] + 1)
        got = _covered_by_group(st, en, group, length)
        want = [covered_bases(list(zip(st[group == g].tolist(), en[group == g].tolist())), int(length[g]))
                for g in range(length.size)]
        assert got.tolist() == want


def test_classes_on_arrays_are_the_classes_of_tuples():
    placed = sample(5)
    refs = sorted({h.ref for p in placed for h in p.hits})
    index = {r: i for i, r in enumerate(refs)}
    of, classes = compatibility_classes(placed, index)
    hits = PlacedReads.of(placed)
    ref = np.array([index[hits.names[r]] for r in hits.ref.tolist()], np.int64)
    starts = np.r_[0, np.cumsum(hits.count)[:-1]]
    got, first = class_of_reads(ref, hits.edits - np.repeat(hits.edits[starts], hits.count), hits.count)
    np.testing.assert_array_equal(got, of)
    assert [compatibility_classes([placed[i]], index)[1][0] for i in first.tolist()] == classes


@pytest.mark.parametrize("refs,behind,most", [(2, 1, 3), (6, 3, 4), (60, 7, 9)])
def test_classes_by_hashed_keys_are_the_classes_by_text(refs, behind, most):
    """class_of_reads finds each read's class by a hash of its matches and compares the read with
    the class's first: the classes of its definition (a dict of each read's matches as bytes),
    numbered alike, for samples of a few classes and of nearly one a read, reads without matches
    among them too."""
    rng = np.random.default_rng(refs)
    count = rng.integers(1, most, 4000)
    ref, back = rng.integers(0, refs, int(count.sum())), rng.integers(0, behind, int(count.sum()))
    for got, want in zip(class_of_reads(ref, back, count), _class_of_reads_by_text(ref, back, count)):
        np.testing.assert_array_equal(got, want)
    count[[5, 9, 2000]] = 0
    ref, back = ref[: int(count.sum())], back[: int(count.sum())]
    for got, want in zip(class_of_reads(ref, back, count), _class_of_reads_by_text(ref, back, count)):
        np.testing.assert_array_equal(got, want)


def test_classes_whose_hashes_collide_are_the_definitions():
    """Every read the same hash (read_classes' test form): the match-by-match comparison alone
    tells the classes apart, the definition's; and counts that do not cover the matches are
    refused."""
    rng = np.random.default_rng(9)
    count = rng.integers(0, 4, 500)
    ref, back = rng.integers(0, 5, int(count.sum())), rng.integers(0, 3, int(count.sum()))
    of, first = np.empty(500, np.int64), np.empty(500, np.int64)
    classes = _scan.read_classes(ref, back, count, of, first, False)
    want = _class_of_reads_by_text(ref, back, count)
    np.testing.assert_array_equal(of, want[0])
    np.testing.assert_array_equal(first[:classes], want[1])
    short, negative = count.copy(), count.copy()
    short[np.flatnonzero(count)[0]] -= 1
    negative[[0, 1]] = [-1, count[0] + count[1] + 1]
    for bad in (count + 1, short, negative):
        with pytest.raises(ValueError):
            _scan.read_classes(ref, back, bad, of, first)


def test_the_compiled_em_steps_are_the_numpy_loop_byte_for_byte():
    rng = np.random.default_rng(6)
    for iterations in (0, 1, 7, EM_ITERATIONS):
        size = rng.integers(1, 6, 300)
        first = np.r_[0, np.cumsum(size)]
        c_read = np.repeat(np.arange(size.size), size)
        c_ref = rng.integers(0, 40, first[-1])
        like = np.exp(-rng.integers(0, 7, first[-1]) * math.log((1 - ERROR_RATE) / ERROR_RATE))
        weight = rng.integers(1, 30, size.size).astype(np.float64)[c_read]
        n = int(weight[first[:-1]].sum())
        start = np.full(40, 1 / 40)
        want_abundance, want_posterior, want_steps = em_steps_numpy(c_read, c_ref, like, weight, size.size, n,
                                                                    iterations, EM_TOLERANCE, start.copy())
        abundance, posterior = start.copy(), np.empty_like(like)
        steps = _scan.em_classes(first, c_ref, like, weight, n, iterations, EM_TOLERANCE, abundance, posterior)
        assert steps == want_steps
        assert abundance.tobytes() == want_abundance.tobytes() and posterior.tobytes() == want_posterior.tobytes()


@pytest.mark.parametrize("tolerance", [EM_TOLERANCE, 1e-4])
def test_the_em_steps_on_several_threads_are_the_numpy_loop_byte_for_byte(tolerance):
    """Over threads (each stepping whole parts: the references its classes join) the same bytes
    as the numpy loop, whatever the parts' sizes and wherever the steps stop (1e-4: after a few,
    so that a thread ahead of the others takes its abundances back)."""
    rng = np.random.default_rng(7)
    groups = [3, 1, 12, 5, 2, 8, 1, 4]  # references per part (a part of one reference too)
    base = np.r_[0, np.cumsum(groups)]
    for iterations in (0, 1, 7, EM_ITERATIONS):
        size = rng.integers(1, 6, 3000)  # over 4,096 matches: em_classes then uses the threads
        first = np.r_[0, np.cumsum(size)]
        c_read = np.repeat(np.arange(size.size), size)
        part = rng.choice(len(groups), size.size, p=np.array(groups) / sum(groups))[c_read]
        c_ref = base[part] + rng.integers(0, 1 << 20, first[-1]) % np.array(groups)[part]
        like = np.exp(-rng.integers(0, 7, first[-1]) * math.log((1 - ERROR_RATE) / ERROR_RATE))
        weight = rng.integers(1, 30, size.size).astype(np.float64)[c_read]
        n, r = int(weight[first[:-1]].sum()), int(base[-1])
        want = em_steps_numpy(c_read, c_ref, like, weight, size.size, n, iterations, tolerance, np.full(r, 1 / r))
        for threads in (1, 2, 3, 4, 16):
            abundance, posterior = np.full(r, 1 / r), np.empty_like(like)
            steps = _scan.em_classes(first, c_ref, like, weight, n, iterations, tolerance, abundance, posterior, threads)
            assert steps == want[2]
            assert abundance.tobytes() == want[0].tobytes() and posterior.tobytes() == want[1].tobytes()


class _Name(NamedTuple):
    virus: str
    display: str


def type_rows_by_read(placed, em, naming, lengths):
    """The report's type rows read by read: the definition of typer.type_rows."""
    types = sorted({naming[r].display for r in em.refs})
    t_index = {t: i for i, t in enumerate(types)}
    ref_type = np.array([t_index[naming[r].display] for r in em.refs], dtype=np.int64)
    hit_type = ref_type[em.ref]
    n = max(len(placed), 1)
    keys, inverse = np.unique(hit_type * n + em.read, return_inverse=True)
    share = np.bincount(inverse.ravel(), em.posterior, keys.size)
    pair_type, pair_read = keys // n, keys % n
    kinds = [[naming[h.ref].display for h in p.hits] for p in placed]
    rows = []
    for t, name in enumerate(types):
        members = [i for i, rt in enumerate(ref_type.tolist()) if rt == t]
        lead_ref = em.refs[min(members, key=lambda i: (-em.abundance[i], em.refs[i]))]
        mask = pair_type == t
        depth_bases, spans, unique, shared = 0.0, [], 0, {}
        for i, w in zip(pair_read[mask].tolist(), share[mask].tolist()):
            hits, kind = placed[i].hits, kinds[i]
            others = set(kind) - {name}
            unique += not others
            for o in others:
                shared[o] = shared.get(o, 0) + 1
            depth_bases += w * hits[kind.index(name)].aligned  # its first match on the type
            on_lead = next((h for h in hits if h.ref == lead_ref), None)
            if w >= 0.5 and on_lead is not None:
                spans.append((on_lead.r_st, on_lead.r_en))
        length = lengths[lead_ref]
        rows.append(TypeRow(naming[lead_ref].virus, name, float(share[mask].sum()), unique,
                            covered_bases(spans, length), length, depth_bases / length, lead_ref, int(mask.sum()),
                            dict(sorted(shared.items()))))
    rows.sort(key=lambda r: (-round(r.reads, 6), r.type))
    return rows


def test_type_rows_on_arrays_are_the_rows_read_by_read():
    rng = np.random.default_rng(7)
    placed = []
    for p in sample(8, 2000):  # starts on the genomes, some past a circular genome's end
        placed.append(TypeHits([h._replace(r_en=h.r_st + int(rng.integers(100, 160))) for h in p.hits]))
    em = run_em(placed)
    naming = {r: _Name("HPV", r.split("_")[0]) for r in em.refs}
    lengths = {r: 7000 + 50 * i for i, r in enumerate(em.refs)}
    want = type_rows_by_read(placed, em, naming, lengths)
    got = type_rows(placed, em, naming, lengths)
    assert [repr(r) for r in got] == [repr(r) for r in want]
    assert any(r.reads_shared for r in got) and any(r.unique_reads for r in got)


@pytest.mark.parametrize("in_order", [True, False])
def test_type_and_read_pairs_are_np_uniques(in_order):
    """type_rows' (type, read) pairs by a stable sort of the types (the reads in order) are
    np.unique's: the keys, each match's pair and each pair's first match; reads out of order take
    np.unique itself."""
    rng = np.random.default_rng(7)
    n, n_types = 300, 40
    read = np.sort(rng.integers(0, n, 2_000)) if in_order else rng.integers(0, n, 2_000)
    hit_type = rng.integers(0, n_types, read.size)
    keys, inverse = np.unique(hit_type * n + read, return_inverse=True)
    first = np.unique(inverse, return_index=True)[1]
    got = _pairs(hit_type, read, n, n_types)
    assert [a.tolist() for a in got] == [keys.tolist(), inverse.ravel().tolist(), first.tolist()]
    assert [a.size for a in _pairs(hit_type[:0], read[:0], n, n_types)] == [0, 0, 0]
    key = read * n_types + hit_type  # each key's first appearance, as np.unique's return_index
    assert np.flatnonzero(_first_of_each(key)).tolist() == sorted(np.unique(key, return_index=True)[1].tolist())
    assert _first_of_each(key[:0]).size == 0


def parts_sample(seed: int, classes: int = 2500):
    """Classes over parts of references (a class's references are of one part): parts of one to 30
    references, classes of 1 to 40 matches (wider than the lanes of 8 the compiled steps sum side by
    side), a few empty classes, a reference no class matches, and parts of one reference whose
    every class is on it alone (its abundance settles at a fixed point after a step or two, and
    is stepped no more). Returns em_classes' arguments but the abundance, posterior and threads,
    and em_steps_numpy's c_read."""
    rng = np.random.default_rng(seed)
    groups = [30, 1, 12, 5, 2, 8, 1, 4, 20, 1, 1, 3]
    base = np.r_[0, np.cumsum(groups)]
    r = int(base[-1]) + 1  # the last reference: no match
    part = rng.choice(len(groups), classes, p=np.array(groups) / sum(groups))
    size = np.minimum(rng.integers(1, 41, classes), np.array(groups)[part])
    size[rng.choice(classes, 5, replace=False)] = 0
    c_ref = np.concatenate([base[p] + rng.choice(groups[p], s, replace=False) for p, s in zip(part, size)])
    first = np.r_[0, np.cumsum(size)]
    c_read = np.repeat(np.arange(classes), size)
    like = np.exp(-rng.integers(0, 7, first[-1]) * math.log((1 - ERROR_RATE) / ERROR_RATE))
    weight = rng.integers(1, 30, classes).astype(np.float64)[c_read]
    n = int(sum(float(weight[first[c]]) for c in range(classes) if size[c]))
    return first, c_ref, like, weight, n, r, c_read


@pytest.mark.parametrize("tolerance", [EM_TOLERANCE, 1e-4, 0.0])
def test_the_em_steps_in_every_form_and_on_threads_are_the_numpy_loop_byte_for_byte(tolerance):
    """The compiled steps sum classes (and references) eight side by side, in the plain C form and
    every form this processor runs (AVX2: four divisions an instruction), step parts that have
    settled at a fixed point no more, and deal the parts to the threads anew every few steps: the
    numpy loop's bytes at 1 to 16 threads, whether the EM stops early, at the cap (tolerance 0:
    never; the parts of one reference settled long before), or after a few steps."""
    first, c_ref, like, weight, n, r, c_read = parts_sample(12)
    classes = first.size - 1
    for iterations in (0, 1, 9, EM_ITERATIONS):
        want = em_steps_numpy(c_read, c_ref, like, weight, classes, n, iterations, tolerance, np.full(r, 1 / r))
        assert_every_form_gives(want, first, c_ref, like, weight, n, iterations, tolerance, (1, 2, 3, 4, 16))
    assert (want[2] == EM_ITERATIONS) == (tolerance == 0.0)  # it stops early but at tolerance 0


def assert_every_form_gives(want, first, c_ref, like, weight, n, iterations, tolerance, threads):
    """em_classes in every form this processor runs (_scan.count_lanes_kind), on each number of
    `threads`, from even abundances: em_steps_numpy's `want` (abundance, posterior, steps), byte for byte."""
    r = want[0].size
    best = _scan.count_lanes_kind()
    try:
        for kind in range(best + 1):
            _scan.count_lanes_kind(kind)
            for t in threads:
                abundance, posterior = np.full(r, 1 / r), np.empty_like(like)
                steps = _scan.em_classes(first, c_ref, like, weight, n, iterations, tolerance, abundance, posterior, t)
                assert steps == want[2], (kind, t)
                assert abundance.tobytes() == want[0].tobytes() and posterior.tobytes() == want[1].tobytes(), (kind, t)
    finally:
        _scan.count_lanes_kind(-1)


def test_a_part_with_a_nan_is_stepped_on_to_the_cap_as_in_the_numpy_loop():
    """A class whose matches all have likelihood 0 makes 0/0 on its part's references from the first
    step: NaN, the same bits at every step. The numpy loop's largest move is then NaN, never under
    the tolerance, so it steps to its cap; the compiled steps must not take that part for settled
    (its bits repeat) and stop when the other parts do. (classify-reads' likelihoods are 1 at each
    read's best match, so it never meets this; the compiled steps are the loop whatever the input.)"""
    first, c_ref, like, weight, n, r, c_read = parts_sample(12)
    classes = first.size - 1
    c = next(c for c in range(classes) if first[c + 1] - first[c] == 1)
    like = like.copy()
    like[first[c]:first[c + 1]] = 0.0
    with np.errstate(invalid="ignore"):
        want = em_steps_numpy(c_read, c_ref, like, weight, classes, n, EM_ITERATIONS, EM_TOLERANCE, np.full(r, 1 / r))
    assert want[2] == EM_ITERATIONS and np.isnan(want[0]).any()
    assert_every_form_gives(want, first, c_ref, like, weight, n, EM_ITERATIONS, EM_TOLERANCE, (1, 2, 4))
