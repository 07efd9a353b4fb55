"""Typing on the seeds' diagonals (genointerp.viral.typing.diagonals): the compiled kernel against
its numpy definition, the contigs' layout in the seed places' letters, and the placements it
gives against minimap2's (Typer.place) on reads of the built-in panel, with the reads it must
leave to the aligner (an indel, a read across a genome's origin, a long read)."""

import dataclasses
import gzip
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from genointerp import _scan
from genointerp.resources import BUILTIN_XVIR, builtin_model_dir
from genointerp.seq.joined import encode_joined
from genointerp.viral.classify.batch_work import BatchEvidence, EvidenceWork, decided_by_seeds
from genointerp.viral.classify.calling import CallingRule
from genointerp.viral.evidence.prebuilt import load_indexes
from genointerp.viral.evidence.seeds import KmerIndex, KmerSettings
from genointerp.viral.typing.diagonals import (CROWDED, UNPLACED, ContigSpans, _lexsort, best_per_contig,
                                               best_per_contig_numpy, diagonal_edits, diagonal_edits_numpy)
from genointerp.viral.typing.placement import LONG_READ
from genointerp.viral.typing.placed import TypedReads
from genointerp.viral.typing.typer import MARGIN, Hit, ReadType, Typer, TypeHits, type_reads
from genointerp.seq.joined import join
from genointerp.io.sequences import read_reference

DATA = Path(__file__).parent.parent / "test-data"
COMP = str.maketrans("ACGT", "TGCA")


def revcomp(seq: str) -> str:
    return seq.translate(COMP)[::-1]


def fastq_seqs(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return [line.strip() for i, line in enumerate(fh) if i % 4 == 1]


@pytest.fixture(scope="module")
def builtin():
    """(index, protein index, typer) of the built-in model."""
    folder = builtin_model_dir(BUILTIN_XVIR)
    index, protein = load_indexes(folder, json.loads((folder / "config.json").read_text()), lambda m: None)
    typer = Typer(str(folder), index, lambda m: None)
    yield index, protein, typer
    typer.close()


@pytest.fixture(scope="module")
def viral_reads(builtin):
    """The reads of test-data's HPV and HBV samples that the seeds alone call viral, with a few
    changed on purpose: Ns, a substitution cluster, an inserted base, and a read's reverse
    complement."""
    index = builtin[0]
    seqs = fastq_seqs(DATA / "viral_report" / "mix.fq.gz") + fastq_seqs(DATA / "tumor_small.fq.gz")
    ev = index.evidence(*encode_joined(seqs))
    reads = [seqs[i] for i in np.flatnonzero(ev.bits >= 15)]
    assert len(reads) > 150
    extra = [reads[0][:40] + "NN" + reads[0][42:], reads[1][:60] + "ACGTACGTAC" + reads[1][70:],
             reads[2][:75] + "A" + reads[2][75:149], revcomp(reads[3])]
    return reads + extra


def seeded_inputs(index, seqs):
    """(codes, starts, lengths, first, at, slot, flip, rows) of the reads, as Typer.place_seeded
    takes them; diagonal_edits takes the first seven, and the rows by name."""
    flat, starts, lengths = encode_joined(seqs)
    ev = index.evidence(flat, starts, lengths)
    every = np.arange(len(seqs))
    return (flat, starts, lengths, *ev.windows_of(every))


def same_placements(got, want, names=("read", "diagonal", "edits", "span", "aligned", "best")):
    for name in names:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


@pytest.mark.parametrize("max_visits,ends", [(4000, 32), (4000, 0), (4000, 8), (300, 32)])
def test_the_compiled_kernel_is_its_numpy_definition(builtin, viral_reads, max_visits, ends):
    """Ungapped and one-gap placements, read by read: the inserted base and the reverse complement
    among the reads make gapped ones, the Ns unknown bases."""
    index = builtin[0]
    reads = viral_reads[:80] + viral_reads[-4:]  # the numpy definition is slow: the changed reads and 80 more
    inputs = seeded_inputs(index, reads)
    args = (*inputs[:7], index.places, index.settings.k, MARGIN, max_visits)
    want = diagonal_edits_numpy(*args, ends=ends)
    # the seeds' rows read by slot, and as the evidence's places check read them (with the look-up's
    # first places: a seed of one place visited without its row)
    rows = inputs[7]
    assert rows is not None and rows[2] is not None and (rows[1] == 1).any() and (rows[1] > 1).any()
    for given in (None, rows):
        got = diagonal_edits(*args, ends=ends, rows=given)
        same_placements(got, want)
    assert got.read.size and (got.best >= 0).any()
    if max_visits < 4000:
        assert (got.best == CROWDED).any() and (got.best >= 0).any()
    else:
        assert (got.span != got.aligned).any()  # gapped placements


def test_the_kernel_s_mismatch_counts_at_any_length_are_the_definition_s(builtin, viral_reads):
    """The ungapped counts run 32 or 16 bases a step (AVX2, SSE2, as the processor has them) or
    one by one (plain C), the one-gap tries' 16 a step and the rest one by one, in 32-bit counts:
    reads cut to lengths of every remainder by 32, with unknown bases in the steps and in the
    rest, give the numpy definition's placements, gapped ones among them, in every form this
    processor runs."""
    index = builtin[0]
    rng = np.random.default_rng(7)
    reads = []
    for i, read in enumerate(viral_reads[:40] + viral_reads[-4:]):
        assert len(read) >= 64 + 31
        n = 64 + i % 32 + 32 * int(rng.integers(0, (len(read) - 64 - i % 32) // 32 + 1))
        cut = list(read[:n])
        for j in rng.choice(n, size=int(rng.integers(0, 3)), replace=False):
            cut[j] = "N"
        reads.append("".join(cut))
    assert {len(r) % 32 for r in reads} == set(range(32))
    inputs = seeded_inputs(index, reads)
    args = (*inputs[:7], index.places, index.settings.k, MARGIN)
    want = diagonal_edits_numpy(*args)
    best = _scan.count_lanes_kind()  # 0 on a build without SSE2 (tested by one made with -U__SSE2__)
    assert best in (0, 1, 2)
    try:
        for kind in range(best + 1):
            assert _scan.count_lanes_kind(kind) == kind
            got = diagonal_edits(*args, rows=inputs[7])
            same_placements(got, want)
    finally:
        _scan.count_lanes_kind(-1)
    assert _scan.count_lanes_kind() == best
    with pytest.raises(ValueError):
        _scan.count_lanes_kind(3)
    assert (got.span != got.aligned).any()  # gapped placements


@pytest.mark.parametrize("circular", [False, True])
def test_reads_at_the_letters_ends_are_counted_as_the_definition_counts_them(circular):
    """The ungapped counts read a read's diagonal in steps past its end: a read facing the seed
    places' last letters (the first genome's start, reverse-complemented, ends them), whose steps
    would run past them, and its first letters, with an unknown base and a substitution, give the
    numpy definition's placements in every form this processor runs."""
    rng = np.random.default_rng(11)
    genomes = [("a", "".join(rng.choice(list("ACGT"), 700))), ("b", "".join(rng.choice(list("ACGT"), 500)))]
    settings = KmerSettings()
    index = KmerIndex.of(genomes, settings, circular=circular)
    a = genomes[0][1]
    reads = [revcomp(a[:70]), revcomp(a[:45]), a[:70], a[:30] + "N" + a[31:61], revcomp(a[:20] + "T" + a[21:77])]
    flat, starts, lengths = encode_joined(reads)
    ev = index.evidence(flat, starts, lengths)
    windows = ev.windows_of(np.arange(len(reads)))
    args = (flat, starts, lengths, *windows[:4], index.places, settings.k, MARGIN)
    want = diagonal_edits_numpy(*args)
    r = index.places.letters.size
    assert (want.diagonal + lengths[want.read] == r).any() and (want.diagonal == 0).any()
    best = _scan.count_lanes_kind()
    try:
        for kind in range(best + 1):
            _scan.count_lanes_kind(kind)
            for rows in (None, windows[4]):
                same_placements(diagonal_edits(*args, rows=rows), want)
    finally:
        _scan.count_lanes_kind(-1)


def test_a_read_on_a_hundred_genomes_diagonals_is_placed_as_the_definition_places_it():
    """A read's diagonals are sorted by rank up to 96 of them, by a radix sort past that: reads of
    a genome that 119 others nearly repeat (seeds of 120 places) give the definition's placements."""
    rng = np.random.default_rng(13)
    genome = rng.choice(list("ACGT"), 400)
    genomes = []
    for i in range(120):
        copy = genome.copy()
        copy[rng.integers(0, 400, 2)] = rng.choice(list("ACGT"), 2)
        genomes.append((f"g{i}", "".join(copy)))
    settings = KmerSettings()
    index = KmerIndex.of(genomes, settings, circular=False)
    reads = [genomes[0][1][at : at + 50] for at in (10, 200, 333)] + [revcomp(genomes[5][1][100:150])]
    flat, starts, lengths = encode_joined(reads)
    ev = index.evidence(flat, starts, lengths)
    windows = ev.windows_of(np.arange(len(reads)))
    args = (flat, starts, lengths, *windows[:4], index.places, settings.k, MARGIN)
    want = diagonal_edits_numpy(*args)
    ungapped = (want.span == lengths[want.read]) & (want.aligned == lengths[want.read])
    assert (np.bincount(want.read[ungapped]) > 96).all() and (want.best >= 0).all()
    for rows in (None, windows[4]):
        same_placements(diagonal_edits(*args, rows=rows), want)


def test_a_read_without_matched_seeds_has_no_diagonal(builtin):
    index = builtin[0]
    flat, starts, lengths = encode_joined(["ACGT" * 40])
    found = diagonal_edits(flat, starts, lengths, np.zeros(2, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                           None, index.places, index.settings.k, MARGIN)
    assert found.best.tolist() == [UNPLACED] and found.read.size == 0


def test_contig_spans_locate_reads_on_both_strands_and_across_the_origin():
    rng = np.random.default_rng(3)
    genomes = [("a", "".join(rng.choice(list("ACGT"), 900))), ("b", "".join(rng.choice(list("ACGT"), 1300)))]
    settings = KmerSettings()
    index = KmerIndex.of(genomes, settings, circular=True)
    spans = ContigSpans.of([len(s) for _, s in genomes], index.places.letters, settings.k)
    assert spans is not None and spans.wrap == 2 * settings.k
    assert ContigSpans.of([900, 1299], index.places.letters, settings.k) is None  # not these contigs
    assert ContigSpans.of([1300, 900], index.places.letters, settings.k) is None  # not in this order
    cases = [(0, 200, 1), (1, 1000, 1), (1, 1000, -1), (0, 880, 1), (0, 880, -1)]  # 880: across a's origin
    for contig, start, strand in cases:
        seq = genomes[contig][1]
        piece = (seq + seq)[start : start + 60]
        read = piece if strand > 0 else revcomp(piece)
        flat, starts, lengths = encode_joined([read])
        ev = index.evidence(flat, starts, lengths)
        found = diagonal_edits(flat, starts, lengths, *ev.windows_of(np.array([0]))[:4], index.places, settings.k, 0)
        assert found.best.tolist() == [0]
        c, s, r_st, inside = spans.locate(found.diagonal[found.edits == 0], np.array([60]))
        assert (c.tolist(), s.tolist(), r_st.tolist(), inside.tolist()) == ([contig], [strand], [start], [True])


def test_reads_across_an_origin_beyond_the_wrap_are_placed_around_it():
    """A read that runs past a circular genome's origin further than the index's wrap (2k bases)
    leaves its contig's letters on some diagonal: its diagonals are taken around the genome, on
    both strands, with a substitution and with an inserted or a deleted base beside the origin,
    and the compiled kernel gives its numpy definition's placements. A read inside its genome
    is placed as without the contigs."""
    rng = np.random.default_rng(5)
    genomes = [("a", "".join(rng.choice(list("ACGT"), 900))), ("b", "".join(rng.choice(list("ACGT"), 1300)))]
    settings = KmerSettings()
    index = KmerIndex.of(genomes, settings, circular=True)
    spans = ContigSpans.of([len(s) for _, s in genomes], index.places.letters, settings.k)
    assert spans.wrap == 2 * settings.k < 100
    cases = [(0, 830, 1, ""), (0, 830, -1, ""), (1, 1250, 1, ""), (1, 1250, -1, ""), (0, 10, 1, ""),
             (0, 845, 1, "sub"), (1, 1240, 1, "ins"), (1, 1240, -1, "del"), (0, 400, 1, "")]
    reads = []
    for contig, start, strand, change in cases:
        seq = genomes[contig][1]
        piece = (seq + seq)[start : start + 151]
        piece = {"": piece[:150], "sub": piece[:30] + ("A" if piece[30] != "A" else "C") + piece[31:150],
                 "ins": piece[:75] + "G" + piece[75:149], "del": piece[:70] + piece[71:151]}[change]
        reads.append(piece if strand > 0 else revcomp(piece))
    flat, starts, lengths = encode_joined(reads)
    ev = index.evidence(flat, starts, lengths)
    windows = ev.windows_of(np.arange(len(reads)))
    args = (flat, starts, lengths, *windows[:4], index.places, settings.k, MARGIN)
    want = diagonal_edits_numpy(*args, spans=spans)
    for rows in (None, windows[4]):  # an index built here: the rows without the look-up's first places
        found = diagonal_edits(*args, spans=spans, rows=rows)
        same_placements(found, want, ("read", "diagonal", "edits", "span", "aligned", "best", "around"))
    # the read at base 10: its first seeds lie in the wrap too, where that copy's diagonal runs on
    # past it, and the two come together around the genome
    assert found.around.tolist() == [True] * 8 + [False]
    assert found.best.tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 0]
    along = diagonal_edits(*args)  # without the contigs: the read inside its genome the same
    for name in ("diagonal", "edits", "span", "aligned"):
        np.testing.assert_array_equal(getattr(along, name)[along.read == 8], getattr(found, name)[found.read == 8])
    best = found.edits == found.best[found.read]
    contig, strand, r_st, inside = spans.locate(found.diagonal[best], found.span[best], found.around[found.read[best]])
    assert inside.all()
    for i, (c, start, s, change) in enumerate(cases):
        mine = found.read[best] == i
        assert (contig[mine] == c).all() and (strand[mine] == s).all(), i
        if not change:
            assert r_st[mine].tolist() == [start % len(genomes[c][1])], i
    assert (found.span != found.aligned).any()  # the inserted base: a gapped placement around the origin


def test_seeded_placements_are_the_aligners(builtin, viral_reads):
    """Every read the diagonals place gets the aligner's reference label and best matches; nearly
    every one (these are reads of the panel's genomes) all of the aligner's matches, edits and
    starts. A read with an inserted base is placed with one gap, one edit from its genome."""
    index, _, typer = builtin
    seeded = typer.place_seeded(*seeded_inputs(index, viral_reads))
    placed = [i for i, p in enumerate(seeded) if p is not None]
    assert len(placed) >= 0.9 * len(viral_reads)  # the rest: across a genome's origin, a cluster of changes
    same = 0
    for i in placed:
        want = typer.place(viral_reads[i])
        assert typer.reference_label(seeded[i]) == typer.reference_label(want), i
        same += [(h.ref, h.edits, h.r_st, h.r_en, h.aligned) for h in seeded[i].hits] == \
            [(h.ref, h.edits, h.r_st, h.r_en, h.aligned) for h in want.hits]
    assert same >= 0.9 * len(placed), (same, len(placed))
    inserted = seeded[len(viral_reads) - 2]
    original = typer.place(viral_reads[2])
    assert inserted.hits[0].ref == original.hits[0].ref and inserted.best == original.best + 1
    assert inserted.hits[0].aligned == 149


def test_reads_across_a_panel_genome_s_origin_are_placed_as_the_aligner_places_them(builtin):
    """Reads of the built-in panel's HPV16 and HPV18 across their origins, further than the index's
    wrap, on both strands: placed on the diagonals around the genome, with the aligner's label and
    matches at the best, and nearly always the aligner's references."""
    index, _, typer = builtin
    genomes = dict(read_reference(str(builtin_model_dir(BUILTIN_XVIR) / "kmer_refs.fa.gz")))
    reads = []
    for name in ("HPV16", "HPV18"):
        seq = genomes[name]
        for back in (60, 100, 140):
            piece = seq[len(seq) - back :] + seq[: 150 - back]
            reads += [piece, revcomp(piece)]
    seeded = typer.place_seeded(*seeded_inputs(index, reads))
    same = 0
    for read, got in zip(reads, seeded):
        assert got is not None
        want = typer.place(read)
        assert typer.reference_label(got) == typer.reference_label(want)
        at_best = [(h.ref, h.edits, h.r_st, h.r_en, h.aligned) for h in got.hits if h.edits == got.best]
        assert at_best == [(h.ref, h.edits, h.r_st, h.r_en, h.aligned) for h in want.hits if h.edits == want.best]
        # beyond the best, a genome at fewer edits than minimap2's alignment of it at times
        same += [h.ref for h in got.hits] == [h.ref for h in want.hits]
    assert same >= len(reads) - 2


def test_the_compiled_best_per_contig_is_its_numpy_definition(builtin, viral_reads):
    """Each read's best placement per contig, read by read, is the numpy definition's over the
    batch: the panel's reads, reads across HPV16's origin (placed around it) and a read past the
    edits allowed, at two margins, with the panel's genomes circular and taken as linear."""
    index, _, typer = builtin
    spans = typer.spans()
    seq = dict(read_reference(str(builtin_model_dir(BUILTIN_XVIR) / "kmer_refs.fa.gz")))["HPV16"]
    across = [seq[len(seq) - back :] + seq[: 150 - back] for back in (60, 100)]
    changed = "".join("A" if i % 9 == 0 else b for i, b in enumerate(viral_reads[7]))  # over 2 % edits
    reads = viral_reads + across + [revcomp(across[0]), changed]
    inputs = seeded_inputs(index, reads)
    found = diagonal_edits(*inputs[:7], index.places, index.settings.k, MARGIN, spans=spans, rows=inputs[7])
    assert found.around.any()
    linear = dataclasses.replace(spans, circular=np.zeros(spans.start.size, bool))
    for panel in (spans, linear):
        for margin in (MARGIN, 1):
            got = best_per_contig(found, panel, inputs[2], typer._rank, margin)
            want = best_per_contig_numpy(found, panel, inputs[2], typer._rank, margin)
            for name in ("read", "contig", "edits", "r_st", "r_en", "aligned", "placed"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
            assert got.placed.any() and not got.placed.all()
    with pytest.raises(ValueError, match="grouped by read"):
        best_per_contig(dataclasses.replace(found, read=found.read[::-1].copy()), spans, inputs[2], typer._rank, MARGIN)


def test_long_reads_are_left_to_the_aligner(builtin, viral_reads):
    index, _, typer = builtin
    long_read = "".join(viral_reads[:5])
    assert len(long_read) >= LONG_READ
    assert typer.place_seeded(*seeded_inputs(index, [long_read, viral_reads[5]]))[0] is None


def test_decided_reads_skip_the_proteins_and_keep_their_calls(builtin):
    """EvidenceWork searches the proteins only for reads whose seed bits leave the call open: the
    others' bits are their seeds' alone, and every read's call under the rule is what it was with
    the proteins added to all, in any batch."""
    index, protein, typer = builtin
    rule = CallingRule()
    seqs = fastq_seqs(DATA / "viral_report" / "mix.fq.gz")
    work = EvidenceWork(index, protein, rule, typer, 50)
    got = work(join(seqs))
    flat, starts, lengths = encode_joined(seqs)
    seed_bits = index.evidence(flat, starts, lengths).bits
    full = seed_bits + protein.evidence(flat, starts, lengths).bits
    decided = decided_by_seeds(rule, seed_bits)
    assert 0 < decided.sum() < len(seqs)
    np.testing.assert_array_equal(got.bits[decided], seed_bits[decided])
    np.testing.assert_array_equal(got.bits[~decided], full[~decided])
    for p in (0.001, 0.5, 0.999):
        score_now, score_then = rule.score(got.bits, np.full(len(seqs), p)), rule.score(full, np.full(len(seqs), p))
        np.testing.assert_array_equal(score_now >= rule.min_bits, score_then >= rule.min_bits)
    half = work(join(seqs[: len(seqs) // 2]))  # another batch: the same bits and types
    np.testing.assert_array_equal(half.bits, got.bits[: len(seqs) // 2])
    labels = {i: t.label for i, t in got.typed.items() if i < len(seqs) // 2}
    assert {i: t.label for i, t in half.typed.items()} == labels


def test_a_batch_s_typing_pickles_as_arrays_and_comes_back_equal(builtin):
    """A worker's BatchEvidence travels pickled, its typing as arrays (TypedReads): what arrives is
    equal to what left (the same reads in the same order, matches of Python ints), with reads no
    reference places, named by their seeds or not, and a batch with no read typed; and the arrays
    hold what the reads typed one by one (type_reads) hold."""
    index, protein, typer = builtin
    seqs = fastq_seqs(DATA / "viral_report" / "mix.fq.gz")
    got = EvidenceWork(index, protein, CallingRule(), typer, 50)(join(seqs))
    assert len(got.typed) > 100
    one_by_one = dict(zip(got.typed, type_reads(typer, index, protein, [seqs[i] for i in got.typed],
                                                typer.place_seeded(*seeded_inputs(index, [seqs[i] for i in got.typed])))))
    assert got.typed.as_dict() == one_by_one
    extra = TypedReads.of({len(seqs): ReadType(None, "HCV (unplaced)", "HCV"),
                           len(seqs) + 1: ReadType(None, "unplaced", None),
                           -5: ReadType(TypeHits([Hit("HPV16", 0, 7900, 8050, 150), Hit("HPV16_v2", 2, 7899, 8049, 150)]),
                                        "HPV16", None)}, typer.names())
    got.typed = TypedReads.merge([got.typed, extra])
    assert list(got.typed)[0] == -5 and list(got.typed)[-2:] == [len(seqs), len(seqs) + 1]
    back = pickle.loads(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
    assert list(back.typed) == list(got.typed) and back.typed == got.typed
    assert all(type(v) is int for t in back.typed.values() if t.placed for h in t.placed.hits for v in h[1:])
    for name in ("hits", "clean", "bits"):
        np.testing.assert_array_equal(getattr(back, name), getattr(got, name))
    empty = BatchEvidence(got.hits[:0], got.clean[:0], got.bits[:0], TypedReads.empty())
    assert pickle.loads(pickle.dumps(empty)).typed == {}


def test_a_worker_without_the_aligner_leaves_its_reads_to_align_to_the_job(builtin, viral_reads, monkeypatch):
    """A worker whose typer has not loaded the aligner leaves the reads the diagonals do not place
    (up to DEFER_ALIGNED) out of its batch's typing; the job's tally types them (SampleTally.add):
    the same reference column and matches as where the batch was typed whole. Past DEFER_ALIGNED
    the worker loads the aligner and types every read itself."""
    from genointerp.viral.classify import batch_work
    from genointerp.viral.classify.sample_tally import SampleTally

    index, protein, typer = builtin
    folder = str(builtin_model_dir(BUILTIN_XVIR))
    seqs = fastq_seqs(DATA / "viral_report" / "mix.fq.gz") + ["".join(viral_reads[:5])]  # a long read: aligned
    batch = join(seqs)
    whole = EvidenceWork(index, protein, CallingRule(), typer, 50)(batch)

    def as_worker() -> EvidenceWork:
        work = EvidenceWork(index, protein, CallingRule(), Typer(folder, index, lambda m: None), 50)
        work._home = -1  # as forked from another process: the job's
        return work

    worker = as_worker()
    got = worker(batch)
    left = sorted(set(whole.typed) - set(got.typed))
    assert len(seqs) - 1 in left and set(got.typed) <= set(whole.typed)
    assert not worker.typer.aligner_loaded()
    for name in ("hits", "clean", "bits"):
        np.testing.assert_array_equal(getattr(got, name), getattr(whole, name))
    records = [(f"r{i}", seq, None) for i, seq in enumerate(seqs)]
    lengths = np.array([len(seq) for seq in seqs], np.int64)
    viral = np.zeros(len(seqs), bool)
    viral[list(whole.typed)] = True
    tallies = [SampleTally(folder, typer, index, protein) for _ in range(2)]
    assert tallies[1].add(records, lengths, viral, got.typed) == tallies[0].add(records, lengths, viral, whole.typed)
    for name in ("count", "ref", "edits", "r_st", "r_en", "aligned"):
        np.testing.assert_array_equal(getattr(tallies[1].placed[0], name), getattr(tallies[0].placed[0], name))
    assert tallies[1].unplaced == tallies[0].unplaced and tallies[1].named == tallies[0].named
    monkeypatch.setattr(batch_work, "DEFER_ALIGNED", len(left) - 1)
    worker = as_worker()
    assert worker(batch).typed == whole.typed.as_dict() and worker.typer.aligner_loaded()


@pytest.mark.parametrize("high", [2, 9_000, 2**40])
def test_the_packed_lexsort_is_lexsort(high):
    # ties, negative keys, a key of one value, and keys too wide to pack together (2**40: lexsort)
    rng = np.random.default_rng(high)
    keys = (rng.choice([-1, 1], 500), rng.integers(0, high, 500), rng.integers(-3, 3, 500), np.full(500, 7),
            np.sort(rng.integers(0, 50, 500)))
    assert np.array_equal(_lexsort(keys), np.lexsort(keys))
    assert _lexsort(tuple(k[:0] for k in keys)).size == 0
