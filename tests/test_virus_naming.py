"""Naming the virus of a read called viral that no reference places (genointerp.viral.typing.naming):
per-seed virus labels of both indexes, the vote, and classify-reads' reference column and report
for reads recoded with synonymous codons, so that no reference's bases align to them (minimap2's
11-mer seeds find no match where every codon differs) while their proteins, hence the protein
seeds and codon seeds, still match."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest

from conftest import read_tsv, run_cli
from genointerp.seq.joined import encode_joined
from genointerp.viral.evidence.seeds import AMBIGUOUS, KmerIndex, KmerSettings, labelled_ids, reference_kmers
from genointerp.viral.typing.naming import MIN_VOTES, name_viruses, vote
from genointerp.viral.evidence.protein import ProteinIndex, ProteinSettings, orf_kmers

BASES = "TCAG"
CODE = dict(zip(("".join(c) for c in product(BASES, repeat=3)),
                "FFLLSSSSYY**CC*WLLLLPPPPHHQQRRRRIIIMTTTTNNKKSSRRVVVVAAAADDEEGGGG"))


def random_seq(n: int, seed: int) -> str:
    return "".join(np.random.default_rng(seed).choice(list("ACGT"), n))


def longest_orf(seq: str) -> str:
    """The longest stop-free stretch of whole codons of seq's forward frames."""
    best = ""
    for frame in range(3):
        run = []
        for i in range(frame, len(seq) - 2, 3):
            c = seq[i : i + 3]
            if CODE.get(c, "*") == "*":
                best = max(best, "".join(run), key=len)
                run = []
            else:
                run.append(c)
        best = max(best, "".join(run), key=len)
    return best


def recode(orf: str) -> str:
    """The same protein with each codon swapped for its most different synonym (kept if none)."""
    out = []
    for i in range(0, len(orf) - 2, 3):
        c = orf[i : i + 3]
        syn = sorted(s for s, aa in CODE.items() if aa == CODE[c] and s != c)
        out.append(max(syn, key=lambda s: sum(a != b for a, b in zip(s, c))) if syn else c)
    return "".join(out)


def test_a_seed_in_two_viruses_is_ambiguous():
    hpv, hbv = random_seq(400, 1), random_seq(400, 2)
    shared = hpv[100:160]  # 60 bases both hold: their seeds name neither
    records = [("HPV16", hpv), ("HPV16_v2", hpv[:200]), ("HBV_1", hbv[:200] + shared + hbv[200:])]
    settings = KmerSettings()
    ids, labels, viruses = labelled_ids(records, [reference_kmers([r], settings, False) for r in records])
    assert viruses == ("HPV", "HBV")  # lineage genomes and serials name their virus
    assert np.array_equal(ids, reference_kmers(records, settings, False))  # the index is unchanged
    own = {v: reference_kmers([r for r in records if r[0].startswith(v)], settings, False) for v in viruses}
    both = np.intersect1d(own["HPV"], own["HBV"])
    assert both.size >= 60 - settings.k  # the shared stretch's windows
    assert (labels[np.isin(ids, both)] == AMBIGUOUS).all()
    assert (labels[np.isin(ids, np.setdiff1d(own["HPV"], both))] == 0).all()
    assert (labels[np.isin(ids, np.setdiff1d(own["HBV"], both))] == 1).all()
    # reads: one of each virus, one of the shared stretch only (all its hits ambiguous)
    index = KmerIndex(ids, settings, labels, viruses)
    hits = index.virus_hits(*encode_joined([hpv[250:400], hbv[250:400], shared]))
    assert hits[0, 0] > 0 and hits[0, 1] == 0 and hits[1, 0] == 0 and hits[1, 1] > 0
    assert hits[2].sum() == 0
    assert name_viruses(index, None, [hpv[250:400], hbv[250:400], shared]) == ["HPV", "HBV", None]


def test_protein_seeds_carry_their_virus():
    gene = longest_orf(random_seq(3000, 5).replace("TAA", "TAC").replace("TAG", "TAC").replace("TGA", "TGC"))
    settings = ProteinSettings()
    records = [("HCV_1", gene), ("MCPyV_1", random_seq(900, 6))]
    ids, labels, viruses = labelled_ids(records, [orf_kmers([r], settings, False) for r in records])
    index = ProteinIndex(ids, settings, labels, viruses)
    read = recode(gene[300:450])
    assert read != gene[300:450]
    hits = index.virus_hits(*encode_joined([read]))
    assert hits[0, viruses.index("HCV")] >= 30 and hits[0, viruses.index("MCPyV")] == 0


def test_vote_needs_a_clear_majority_and_a_few_hits():
    viruses = ("HPV", "HBV", "HCV")
    counts = np.array([[0, 0, 9], [6, 3, 0], [5, 4, 0], [0, MIN_VOTES - 1, 0], [0, 0, 0]])
    assert vote(counts, viruses) == ["HCV", "HPV", None, None, None]  # 6 of 9 is 2/3; 5 of 9 is not


@pytest.fixture(scope="module")
def recoded_run(tmp_path_factory):
    """Reads recoded from HCV_1's polyprotein and HBV_1's polymerase in the built-in references,
    beside a read of HPV16 itself, through classify-reads with the built-in model."""
    from genointerp.io.sequences import read_reference
    from genointerp.resources import builtin_model_dir

    refs = dict(read_reference(str(builtin_model_dir() / "kmer_refs.fa.gz")))
    reads = []
    for virus, n in (("HCV_1", 4), ("HBV_1", 3)):
        orf = longest_orf(refs[virus])
        reads += [(f"{virus}:{i}", recode(orf[600 + 300 * i : 750 + 300 * i])) for i in range(n)]
    reads.append(("HPV16:0", refs["HPV16"][1000:1150]))
    out = tmp_path_factory.mktemp("recoded")
    (out / "reads.fa").write_text("".join(f">{n}\n{s}\n" for n, s in reads))
    args = ["-q", "classify-reads", str(out / "reads.fa"), "-o", str(out / "calls.tsv"), "--summary",
            str(out / "s.json"), "--report", str(out / "report.tsv"), "--kraken-report", str(out / "k.txt")]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    return out


def test_unplaced_reads_are_named_by_their_virus(recoded_run):
    rows = {r["read_id"]: r for r in read_tsv(recoded_run / "calls.tsv")}
    assert all(r["call"] == "viral" for r in rows.values())  # the proteins match: strong evidence
    assert {n: r["reference"] for n, r in rows.items()} == {
        **{f"HCV_1:{i}": "HCV (unplaced)" for i in range(4)}, **{f"HBV_1:{i}": "HBV (unplaced)" for i in range(3)},
        "HPV16:0": "HPV16"}  # a read a reference places keeps its type
    vr = json.loads((recoded_run / "s.json").read_text())["viral_report"]
    assert vr["viral_reads_placed"] == 1 and vr["viral_reads_unplaced"] == 7
    assert vr["viral_reads_unplaced_by_virus"] == {"HBV": 3, "HCV": 4}
    assert vr["detected"] == [] and vr["top_type"] is None  # virus-level rows are never detected
    virus_rows = [t for t in vr["types"] if t["type"].endswith("(unplaced)")]
    assert [(t["virus"], t["reads"], t["genome_fraction"], t["reference"]) for t in virus_rows] == [
        ("HCV", 4, None, None), ("HBV", 3, None, None)]


def test_report_counts_them_at_the_virus_level(recoded_run):
    rows = read_tsv(recoded_run / "report.tsv")
    assert [(r["virus"], r["type"], r["reads"], r["unique_reads"], r["genome_fraction"], r["mean_depth"],
             r["copies_per_genome"], r["status"], r["reference"]) for r in rows] == [
        ("HPV", "HPV16", "1.00", "1", rows[0]["genome_fraction"], rows[0]["mean_depth"], "NA", "not_detected", "HPV16"),
        ("HCV", "HCV (unplaced)", "4.00", "4", "NA", "NA", "NA", "low_evidence", "NA"),
        ("HBV", "HBV (unplaced)", "3.00", "3", "NA", "NA", "NA", "low_evidence", "NA")]
    kraken = [line.split("\t") for line in (recoded_run / "k.txt").read_text().splitlines()]
    by_name = {f[5].strip(): f[1:4] for f in kraken}
    assert by_name["Viruses"] == ["8", "0", "D"]  # every read named: none left at Viruses itself
    assert by_name["Hepatitis C virus"] == ["4", "4", "S"] and by_name["Hepatitis B virus"] == ["3", "3", "S"]
    assert by_name["Human papillomavirus"] == ["1", "0", "S"] and by_name["HPV16"] == ["1", "1", "S1"]
