"""The typing EM over compatibility classes (genointerp.viral.typing.typer.run_em) against the EM
read by read: the same abundances and posteriors (to rounding: the sums run over classes), the
same matches in the same order, and classes that depend on nothing but each read's matches; and
the report's coverage count against a base-by-base mask."""

import math

import numpy as np

from genointerp.viral.typing.typer import (EM_ITERATIONS, EM_TOLERANCE, ERROR_RATE, Hit, TypeHits,
                                           compatibility_classes, covered_bases, run_em)


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
