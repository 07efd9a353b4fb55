"""Ungapped alignment of protein seed matches and its chance (genointerp.viral.evidence.extension), through
the protein index's evidence (genointerp.viral.evidence.protein)."""

import math

import numpy as np
import pytest

from coding import CODON, protein
from genointerp.seq.joined import encode_joined
from genointerp.seq.alphabet import encode
from genointerp.seq.translate import AMINO_ACIDS, STOP, codons
from genointerp.viral.evidence.places import CHECK_PLACES
from genointerp.viral.evidence.extension import (DIAGONAL_MISSES, EDGE, K, LAMBDA, MAX_PLACES, SCORES,
                                                 ReferenceProteins, low_complexity)
from genointerp.viral.evidence.protein import ProteinIndex, ProteinSettings

def residues(text):
    return np.array([AMINO_ACIDS.index(a) for a in text], np.uint8)


def blosum(a, b):
    return int(SCORES[AMINO_ACIDS.index(a), AMINO_ACIDS.index(b)])


def test_scores_are_blosum62_with_stops_unknowns_and_edges():
    assert blosum("W", "W") == 11 and blosum("A", "A") == 4 and blosum("W", "D") == -4 and blosum("L", "I") == 2
    assert SCORES[STOP, 0] == -4 and SCORES[EDGE, EDGE] < -1000
    # the table written out in extension.py is Biopython's BLOSUM62, every pair, and symmetric
    from Bio.Align import substitution_matrices

    matrix = substitution_matrices.load("BLOSUM62")
    assert all(blosum(a, b) == int(matrix[a][b]) for a in AMINO_ACIDS for b in AMINO_ACIDS)


def test_seg_masks_windows_of_low_entropy_but_not_ordinary_protein():
    rows = np.array([residues("IWLIDFQSGPVDGMNIIDPWESEARESHNWWLFGVNEVYYPYPMYPSHSY"),
                     residues("KKKKKKKKKKKKACDEFGHIKLMNPQRSTVWYACDEFGHIKLMNPQRSTV")])
    mask = low_complexity(rows)
    # YYPYPMYPSHSY: Y 5, P 3, S 2, M 1, H 1, 2.06 bits; no window before it is as low
    assert mask[0].tolist() == [False] * 38 + [True] * 12
    assert mask[1, :12].all() and not mask[1, 23:].any()
    edge = rows.copy()
    edge[1, 11:] = EDGE  # the read ends after 11 residues: a window reaching past its end is not judged
    assert not low_complexity(edge)[1].any()


def test_an_alignment_runs_through_a_mismatch_to_both_ends_of_the_read():
    ref = protein(120, 1)
    read = list(ref[40:80])
    read[30] = "W" if read[30] != "W" else "Y"  # one substitution, well inside the read
    read = "".join(read)
    # the read as codons: frame residues 3 apart, as genointerp.seq.translate.codons gives
    aa = codons(encode("".join(CODON[a] for a in read)))
    db = np.r_[residues(ref), EDGE].astype(np.uint8)
    proteins = ReferenceProteins(db, np.array([7], np.uint64), np.array([45]))  # the seed at ref 45 = read 5
    score = proteins.align(aa, np.array([15]), proteins.slots(np.array([7], np.uint64)), np.array([0]), np.array([aa.size + 2]), 9)
    expected = sum(blosum(a, b) for a, b in zip(read, ref[40:80]))
    assert score.tolist() == [expected]
    # a seed no place holds aligns nowhere
    assert proteins.align(aa, np.array([15]), proteins.slots(np.array([8], np.uint64)), np.array([0]), np.array([aa.size + 2]), 9)[0] == 0


def test_bits_are_the_karlin_altschul_expectation_floored_at_zero():
    proteins = ReferenceProteins(np.zeros(1000, np.uint8), np.zeros(0, np.uint64), np.zeros(0, np.int64))
    bits = proteins.bits(np.array([0, 200]), np.array([150, 150]))
    assert bits[0] == 0
    assert bits[1] == pytest.approx((LAMBDA * 200 - math.log(K * 300 * 1000)) / math.log(10))


def test_a_read_aligns_within_itself_not_into_the_read_joined_after_it():
    gene = "ATG" + "".join(CODON[a] for a in protein(300, 3)) + "TAA"
    index = ProteinIndex.of([("v", gene)], ProteinSettings(), circular=False)
    one, two = gene[300:450], gene[450:600]  # consecutive pieces of one reading frame
    alone = index.evidence(*encode_joined([one])).aligned[0]
    joined = index.evidence(*encode_joined([one, two])).aligned
    assert alone > 10 and joined[0] == pytest.approx(alone) and joined[1] > 10


CONSERVATIVE = dict(zip("IVLMKRDEFYSTQNAHW", "VIMLRKEDYFTSEDSYY"))  # BLOSUM62 pairs scoring 1..3


def test_an_alignment_counts_the_agreement_that_breaks_every_further_seed():
    """Two reads of a diverged protein differ from it at the same residues (every third one,
    except a window of 12 that the default seed matches), one by similar residues and one by
    dissimilar ones: their exact matches are the same, but the alignment rewards the similar
    residues (their exact matches differ only by the few the changed codons make in other frames).
    An unrelated read of one matched seed earns little; bits are the stronger measure less log10(2)."""
    prot = protein(300, 5)
    gene = "ATG" + "".join(CODON[a] for a in prot) + "TAA"
    changed = lambda swap: "".join(swap(a) if i % 3 == 2 and not 120 <= i < 132 else a  # noqa: E731
                                   for i, a in enumerate(prot))
    similar = "".join(CODON[a] for a in changed(lambda a: CONSERVATIVE.get(a, a)))[300:450]
    dissimilar = "".join(CODON[a] for a in changed(lambda a: ("C" if a == "W" else "W") if a in CONSERVATIVE else a))[300:450]
    seed_only = "".join(CODON[a] for a in protein(20, 8)) + gene[303:330] + "".join(CODON[a] for a in protein(21, 9))
    index = ProteinIndex.of([("v", gene)], ProteinSettings(), circular=False)
    ev = index.evidence(*encode_joined([similar, dissimilar, seed_only]))
    assert ev.hits[0] > 0 and ev.hits[1] > 0
    assert ev.aligned[0] > 20 and ev.aligned[0] > ev.aligned[1] + 10
    # the seed-only read: its 9 matched residues' scores, and what chance flanks add to them (a few)
    nine = sum(blosum(a, a) for a in prot[100:109])
    low, high = index.proteins.bits(np.array([nine, nine + 12]), np.array([150, 150]))
    assert ev.hits[2] > 0 and low <= ev.aligned[2] <= high < 6
    assert ev.bits.tolist() == pytest.approx((np.maximum(ev.exact, ev.aligned) - math.log10(2)).tolist())


def test_a_seed_of_many_places_is_aligned_at_sixteen_spread_over_them():
    """A seed held at 32 places is aligned at every second one (MAX_PLACES = 16, spread evenly):
    a read that agrees with the genome of place 30 beyond the seed scores its full alignment, one
    that agrees only with place 31's is aligned at 30 (and seen through its seed alone)."""
    assert MAX_PLACES == 16
    seed = protein(9, 11)
    genomes = [protein(20, 100 + g) + seed + protein(20, 200 + g) for g in range(32)]
    db = np.concatenate([np.r_[residues(g), EDGE] for g in genomes]).astype(np.uint8)
    places = np.array([i * 50 + 20 for i in range(32)])
    proteins = ReferenceProteins(db, np.full(32, 5, np.uint64), places)
    scores = []
    for g in (30, 31):
        aa = codons(encode("".join(CODON[a] for a in genomes[g][:49])))
        scores.append(proteins.align(aa, np.array([60]), proteins.slots(np.array([5], np.uint64)), np.array([0]),
                                     np.array([aa.size + 2]), 9)[0])
    full = sum(blosum(a, a) for a in genomes[30][:49])
    assert scores[0] == full and scores[1] < full - 100


def _db(genomes):
    """The genomes' proteins one after another, each followed by an edge, and where each begins."""
    starts = np.cumsum([0] + [len(g) + 1 for g in genomes])[:-1]
    return np.concatenate([np.r_[residues(g), EDGE] for g in genomes]).astype(np.uint8), starts


def test_two_seeds_share_a_place_only_on_one_diagonal_of_one_reference():
    """Seed 1 is held by genomes 0 and 1, seed 2 by genome 0 five residues on, seed 3 by genome 2.
    In a read of genome 0 followed by genome 2, seeds 1 and 2 lie on one diagonal (one match),
    seeds 2 and 3 do not (two). A seed of more places than CHECK_PLACES is judged from the rarer
    seed of a pair, so the pair is found where an even spread of the common one's places is not."""
    shared = protein(9, 20)
    g0, g1, g2 = protein(10, 21) + shared + protein(21, 22), protein(10, 23) + shared + protein(21, 24), protein(40, 25)
    db, start = _db([g0, g1, g2])
    proteins = ReferenceProteins(db, np.array([1, 1, 2, 3], np.uint64),
                                 np.array([start[0] + 10, start[1] + 10, start[0] + 15, start[2] + 5]))
    read = g0[10:24] + g2[5:14]  # seed 1 at its residue 0, seed 2 at 5, seed 3 at 14
    aa = codons(encode("".join(CODON[r] for r in read)))
    at, ids, compared = np.array([0, 15, 42]), np.array([1, 2, 3], np.uint64), np.arange(9)[None]
    assert proteins.share_a_place(aa, at, proteins.slots(ids), compared, np.array([0, 1]), np.array([1, 2])).tolist() == [True, False]
    # seed 1 at 2 * CHECK_PLACES + 1 places, genome 0's last: no even spread of CHECK_PLACES reaches it
    others = [protein(10, 300 + i) + shared for i in range(2 * CHECK_PLACES)]
    db, start = _db([*others, g0])
    keys = np.r_[np.ones(2 * CHECK_PLACES + 1), 2].astype(np.uint64)
    proteins = ReferenceProteins(db, keys, np.r_[start + 10, start[-1] + 15])
    assert proteins.share_a_place(aa, at, proteins.slots(ids), compared, np.array([0]), np.array([1])).tolist() == [True]


def test_a_mosaic_pair_is_one_match_where_either_seed_s_genome_nearly_holds_the_other():
    """A read of a type no index holds: its seed 1 is genome 0's (only), its seed 2, five residues
    on, is held by two genomes. Genome 0 differs from the read at three of seed 2's residues
    there, more than DIAGONAL_MISSES; genome 2 holds seed 2 and differs from the read at two of
    seed 1's residues: the pair is one match, found from the commoner seed's places."""
    assert DIAGONAL_MISSES == 2
    read = protein(20, 50)
    swap = lambda text, at: "".join(("W" if c != "W" else "Y") if i in at else c for i, c in enumerate(text))  # noqa: E731
    g0 = swap(read, {10, 11, 13})  # seed 2 (residues 5..13) differs at three places, seed 1 (0..8) not at all
    g1 = protein(10, 51) + read[5:14] + protein(10, 52)  # seed 2 alone
    g2 = swap(read, {0, 1})  # seed 2 exactly, seed 1 with two differences
    db, start = _db([g0, g1, g2])
    proteins = ReferenceProteins(db, np.array([1, 2, 2], np.uint64),
                                 np.array([start[0], start[1] + 10, start[2] + 5]))
    aa = codons(encode("".join(CODON[r] for r in read)))
    at, ids, compared = np.array([0, 15]), np.array([1, 2], np.uint64), np.arange(9)[None]
    assert proteins.share_a_place(aa, at, proteins.slots(ids), compared, np.array([0]), np.array([1])).tolist() == [True]
    far = ReferenceProteins(db, np.array([1, 2, 2], np.uint64), np.array([start[0], start[1] + 10, start[1] + 10]))
    assert far.share_a_place(aa, at, far.slots(ids), compared, np.array([0]), np.array([1])).tolist() == [False]
