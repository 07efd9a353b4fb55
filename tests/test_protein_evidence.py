"""Translation, chance evidence and the protein index (genointerp.seq.translate, genointerp.viral.evidence.chance,
genointerp.viral.evidence.protein), and the seeds' evidence bits (genointerp.viral.evidence.seeds)."""

import math

import numpy as np
import pytest

from coding import CODON, protein, revcomp
from genointerp.errors import InputError
from genointerp.seq.joined import encode_joined
from genointerp.report import SILENT
from genointerp.seq.alphabet import encode
from genointerp.seq.translate import AMINO_ACIDS, NO_CODON, STOP, aa_kmer_ids, codons, distinct_residues
from genointerp.viral.evidence.chance import chance_bits, composition
from genointerp.viral.evidence.seeds import KmerIndex, KmerSettings
from genointerp.viral.evidence.extension import K, LAMBDA, SCORES
from genointerp.viral.evidence.protein import (ProteinIndex, ProteinSettings, build_protein_index, load_protein_index,
                                               orf_kmers)
from genointerp.viral.model_files import PROTEIN_EXCLUDED_FILE, PROTEIN_KEY

# the synonymous alternatives to coding.CODON the tests swap in
SYNONYM = {"A": "GCC", "D": "GAC", "E": "GAG", "F": "TTC", "G": "GGC", "H": "CAC", "I": "ATC", "K": "AAG", "L": "CTC",
           "N": "AAC", "P": "CCC", "Q": "CAG", "R": "CGC", "S": "TCC", "T": "ACC", "V": "GTC", "Y": "TAC", "C": "TGC",
           "M": "ATG", "W": "TGG"}

def test_codons_follow_the_standard_code_and_mark_stops_and_unknown_codons():
    aa = codons(encode("ATGTAAGCNTGG"))
    assert aa[0] == AMINO_ACIDS.index("M") and aa[3] == STOP and aa[6] == NO_CODON and aa[9] == AMINO_ACIDS.index("W")
    assert aa[1] == AMINO_ACIDS.index("C")  # TGT, out of frame
    assert codons(encode("AT")).size == 0


def test_amino_acid_kmer_ids_read_in_frame_and_skip_stops():
    seq = "".join(CODON[a] for a in "MKVLA") + "TAA" + CODON["W"]
    ids, valid = aa_kmer_ids(codons(encode(seq)), 3)
    digits = lambda p: sum(AMINO_ACIDS.index(c) * 20 ** (2 - i) for i, c in enumerate(p))  # noqa: E731
    assert ids[0] == digits("MKV") and valid[0]
    assert ids[3] == digits("KVL") and ids[6] == digits("VLA") and valid[6]
    assert not valid[9]  # L A stop
    assert list(distinct_residues(np.array([1, 1, 2, 3], np.uint8), 3, step=1)) == [2, 3]


def test_composition_counts_each_read_with_a_pseudocount_and_a_floor():
    flat, starts, lengths = encode_joined(["AAAA", "ACGT"])
    owner = np.repeat(np.arange(2), lengths + 1)[: flat.size]
    f = composition(flat, owner, 2, 4, 0.25)
    assert f[0, 0] == pytest.approx(5 / 8) and f[0, 1] == 0.25  # 1/8 raised to the floor
    assert np.allclose(f[1], 0.25)


def test_chance_bits_add_over_clusters_and_never_go_below_zero():
    # two clusters of read 0 fixing 3 letters at p = 0.1 each, one of read 1 fixing 1 letter
    log_freq = np.log10([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5])
    bits = chance_bits(log_freq, np.array([0, 0, 0, 1, 1, 1, 2]), np.array([0, 0, 1]), np.array([10, 10]), 1, 2)
    # per cluster: -(log10(10 * 1) + 3 * log10(0.1)) = 2; read 1: -(1 + log10 0.5) < 0 -> 0
    assert bits[0] == pytest.approx(4.0) and bits[1] == 0.0
    # a cluster whose windows match two entries of an index of 10 apart is two draws: it pays log10(10) once more
    two = chance_bits(log_freq, np.array([0, 0, 0, 1, 1, 1, 2]), np.array([0, 0, 1]), np.array([10, 10]), 10, 2,
                      np.array([1, 2, 1]))
    assert two[0] == pytest.approx(1.0 + 0.0)  # -(log10(10 * 10) - 3) = 1, then -(1 + 2 * 1 - 3) = 0


def _orf_genome(length=200, seed=1):
    return "".join(CODON[a] for a in "M" + protein(length - 1, seed)) + "TAA"


def test_orf_kmers_hold_both_strands_of_open_frames_only():
    settings = ProteinSettings.contiguous(8, min_orf=60, min_distinct=5)
    gene = _orf_genome()
    fwd = orf_kmers([("v", gene)], settings, circular=False)
    rev = orf_kmers([("v", revcomp(gene))], settings, circular=False)
    assert fwd.size > 150 and np.array_equal(fwd, rev)
    short = "".join(CODON[a] for a in protein(40, 2)) + "TAA"  # 40 codons: below min_orf
    only_short = orf_kmers([("s", short + "TAA" * 3)], settings, circular=False)
    # the 40-codon frame gives nothing; whatever is left comes from its other frames' long stretches
    ids, valid = aa_kmer_ids(codons(encode(short)), 8)
    assert not np.isin(ids[::3][valid[::3]], only_short).any()


def test_a_synonymous_copy_of_a_gene_has_protein_evidence_but_random_dna_has_none():
    gene = _orf_genome(400, seed=3)
    kmers = ProteinSettings.contiguous(8)  # the counts below are for plain 8-mers
    index = ProteinIndex.of([("v", gene)], kmers, circular=False)
    prot = "".join(AMINO_ACIDS[a] for a in codons(encode(gene))[::3][:-1])
    synonymous = "".join(SYNONYM[a] for a in prot)  # every codon changed where the code allows
    assert sum(a != b for a, b in zip(gene, synonymous)) > 300  # far apart as DNA
    read = synonymous[300:450]
    rng = np.random.default_rng(5)
    random_dna = "".join(rng.choice(list("ACGT"), 150))
    ev = index.evidence(*encode_joined([read, revcomp(read), random_dna, read[:60]]))
    assert ev.bits[1] == pytest.approx(ev.bits[0])  # either strand
    assert ev.bits[2] == 0 and ev.hits[2] == 0
    assert 0 < ev.bits[3] < ev.bits[0]  # less sequence, less evidence
    # one stretch counts once: the read's 43 overlapping k-mers (40 of them in the index: 3 hold fewer
    # than 5 different residues) are one cluster of 50 residues, whose evidence is at most
    # -log10(I * 0.05^50) (each residue at least the 1/20 floor, >= 1 k-mer tested) ...
    assert ev.hits[0] == 40 and ev.exact[0] <= -math.log10(index.ids.size * 0.05 ** 50)
    # ... and one alignment against a database of the gene's six frames (each followed by an edge):
    # the read's last 12 residues are low in complexity (YYPYPMYPSHSY, 2.06 bits: SEG masks 2.2 or less) and
    # masked, so it holds the first 38, each scoring BLOSUM62's diagonal
    assert prot[138:150] == "YYPYPMYPSHSY"
    score = sum(int(SCORES[AMINO_ACIDS.index(a), AMINO_ACIDS.index(a)]) for a in prot[100:138])
    n = 2 * (len(gene) - 2) + 6  # residues of the six frames of a circle-free contig, plus edges
    assert ev.aligned[0] == pytest.approx((LAMBDA * score - math.log(K * 300 * n)) / math.log(10))


def test_a_spaced_seed_finds_a_protein_whose_substitutions_leave_no_eight_residues_alike():
    """Every 7th residue of the read's protein differs from the indexed one: each window of 8
    residues holds a difference, so plain 8-mers find nothing, while the default seed 110110111
    placed with a difference on a skipped residue (and the next one 7 residues on, past its span of
    9) compares 7 equal residues."""
    gene = _orf_genome(400, seed=3)
    prot = "".join(AMINO_ACIDS[a] for a in codons(encode(gene))[::3][:-1])
    changed = "".join(("W" if a != "W" else "Y") if i % 7 == 0 else a for i, a in enumerate(prot))
    read = "".join(CODON[a] for a in changed)[300:450]
    for settings, found in ((ProteinSettings.contiguous(7), False), (ProteinSettings.contiguous(8), False),
                            (ProteinSettings(), True)):
        index = ProteinIndex.of([("v", gene)], settings, circular=False)
        ev = index.evidence(*encode_joined([read]))
        assert (ev.hits[0] > 0) == found and (ev.bits[0] > 0) == found, settings.seed


def test_aa_seed_ids_compare_only_the_seeds_ones():
    aa = np.array([1, 2, 3, 4, 5, 6], np.uint8)
    ids, valid = aa_kmer_ids(aa, "101", step=1)  # residues i and i+2
    assert list(ids) == [1 * 20 + 3, 2 * 20 + 4, 3 * 20 + 5, 4 * 20 + 6] and valid.all()
    with_stop = aa.copy()
    with_stop[1] = STOP  # a stop on a skipped residue still breaks the frame
    assert list(aa_kmer_ids(with_stop, "101", step=1)[1]) == [False, False, True, True]
    assert list(distinct_residues(np.array([1, 9, 1, 2], np.uint8), "101", step=1)) == [1, 2]
    with pytest.raises(InputError, match="starts and ends with 1"):
        ProteinSettings("0111011").check()
    assert ProteinSettings.from_dict({"k": 8, "min_orf": 60, "min_distinct": 5}).seed == "11111111"


def test_build_and_load_a_protein_index_subtracting_negatives(tmp_path):
    gene = _orf_genome(300, seed=7)
    negative = tmp_path / "neg.fa"
    shared = gene[150:300]  # 50 codons of the gene also occur in the negative: their k-mers go
    negative.write_text(">neg\n" + "ACGT" * 10 + shared + "TTGCA" * 10 + "\n")
    entry = build_protein_index(tmp_path, [("v", gene)], [str(negative)], ProteinSettings(), False, SILENT)
    (tmp_path / "refs.fa").write_text(f">v\n{gene}\n")
    config = {PROTEIN_KEY: entry, "kmer_index": {"references": "refs.fa"}}
    index = load_protein_index(tmp_path, config)
    assert entry["n_excluded"] > 30 and index.ids.size == entry["n_kmers"]
    ev = index.evidence(*encode_joined([shared, gene[600:750]]))
    assert ev.hits[0] == 0 and ev.hits[1] > 0
    assert load_protein_index(tmp_path, {"kmer_index": {}}) is None
    (tmp_path / PROTEIN_EXCLUDED_FILE).write_bytes(b"junk")
    with pytest.raises(InputError, match="damaged"):
        load_protein_index(tmp_path, config)


def test_seed_bits_count_one_stretch_once_and_add_independent_stretches():
    rng = np.random.default_rng(11)
    genome = "".join(rng.choice(list("ACGT"), 3000))
    settings = KmerSettings.contiguous(20, 1, 0)
    index = KmerIndex.of([("v", genome)], settings, False)
    filler = lambda n, s: "".join(np.random.default_rng(s).choice(list("ACGT"), n))  # noqa: E731
    one = filler(40, 1) + genome[100:160] + filler(50, 2)  # one 60 bp stretch: 41 overlapping windows
    two = filler(10, 3) + genome[100:160] + filler(20, 4) + genome[900:960]  # two stretches
    ev = index.evidence(*encode_joined([one, two, filler(150, 5)]))
    assert ev.clusters.tolist() == [1, 2, 0] and ev.hits[0] == 41
    assert ev.bits[2] == 0
    # a stretch of 60 bases: about 60 * 0.6 bits less log10(tested * index size), whatever its windows
    assert 60 * -math.log10(0.4) - 6 < ev.bits[0] < 60 * -math.log10(0.25)
    assert ev.bits[1] == pytest.approx(2 * ev.bits[0], rel=0.1)


def test_overlapping_seeds_of_two_unrelated_places_are_two_chance_draws(monkeypatch):
    """A read whose protein holds gene A's residues 0..8 and then gene B's 0..8, overlapping at one
    residue (B's first is made A's ninth): its two matched seeds form one stretch of 13 compared
    residues, which one match would fix I times less often than two chance matches do. It pays
    log10(I) more than as one match, while a read of gene A, whose overlapping seeds lie on one
    diagonal, pays nothing more."""
    a = protein(200, 31)
    b = a[8] + protein(199, 32)
    genes = ["ATG" + "".join(CODON[r] for r in p) + "TAA" for p in (a, b)]
    index = ProteinIndex.of([("a", genes[0]), ("b", genes[1])], ProteinSettings(), circular=False)
    pad = lambda n, seed: "".join(CODON[r] for r in protein(n, seed))  # noqa: E731
    chimera = pad(20, 40) + "".join(CODON[r] for r in a[:9] + b[1:9]) + pad(20, 41)
    same_gene = pad(20, 40) + "".join(CODON[r] for r in a[:17]) + pad(20, 41)
    reads = encode_joined([chimera, same_gene])
    ev = index.evidence(*reads)
    monkeypatch.setattr(type(index.proteins), "share_a_place", lambda self, aa, at, ids, c, first, *rest:
                        np.ones(first.size, bool))
    as_one = index.evidence(*reads)
    assert ev.hits.tolist() == as_one.hits.tolist() and ev.hits[0] >= 2
    # once on each strand: the read's reverse complement matches the genes' reverse frames alike
    assert as_one.exact[0] - ev.exact[0] == pytest.approx(2 * math.log10(index.ids.size))
    assert ev.exact[1] == pytest.approx(as_one.exact[1]) and ev.exact[1] > 5
