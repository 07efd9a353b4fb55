"""capsule-train --gene-sets: the GMT reader, the hypergeometric test and Benjamini-Hochberg FDR,
on numbers small enough to check by hand."""

import gzip
from math import comb

import numpy as np
import pytest

from genointerp.capsule.enrichment import GeneSet, bh_fdr, check_gene_sets, enrichment, enrichment_table, read_gmt
from genointerp.errors import InputError

# 25 feature genes G00..G24; the sets below name G00..G19 (and genes that are not features), so the
# universe is N = 20. Decisive: G00..G03 (n = 4) and G24, which no set names (outside the universe).
FEATURES = [f"G{i:02d}" for i in range(25)]
DECISIVE = ["G02", "G24", "G00", "G01", "G03"]  # most decisive first
SETS = [
    GeneSet("ALL_FOUR", "http://example.org/a", ("G00", "G01", "G02", "G03", "G04", "NOTAFEATURE")),  # K 5, k 4
    GeneSet("TWO", "", ("G02", "G03", "G10", "G11", "G12")),  # K 5, k 2
    GeneSet("NONE", "d", ("G05", "G06", "G07", "G08", "G09", "G13", "G14")),  # K 7, k 0
    GeneSet("ONE", "d", ("G01", "G15", "G16", "G17", "G18")),  # K 5, k 1
    GeneSet("SMALL", "d", ("G00", "G19")),  # K 2: below min_size 3, untested, its G19 still in the universe
    GeneSet("FOREIGN", "d", ("TP53", "BRCA1")),  # K 0
]
C20_4 = comb(20, 4)  # 4845 equally likely decisive 4-sets of the universe


def test_the_universe_counts_and_hypergeometric_p_values_are_the_hand_computed_ones():
    rows = {r["set"]: r for r in enrichment(SETS, FEATURES, DECISIVE, min_size=3, max_size=6)}
    assert sorted(rows) == ["ALL_FOUR", "ONE", "TWO"]  # NONE has K 7 > 6, SMALL K 2 < 3, FOREIGN K 0
    assert {r["universe"] for r in rows.values()} == {20} and {r["decisive_in_universe"] for r in rows.values()} == {4}
    assert [(rows[s]["set_size"], rows[s]["overlap"]) for s in ("ALL_FOUR", "TWO", "ONE")] == [(5, 4), (5, 2), (5, 1)]
    # P(X >= k) for X ~ Hypergeom(N 20, K 5, n 4): choose k of the 5 set genes and 4 - k of the other 15
    pmf = [comb(5, k) * comb(15, 4 - k) / C20_4 for k in range(5)]  # 1365, 2275, 1050, 150, 5 of 4845
    assert rows["ALL_FOUR"]["p_value"] == pytest.approx(5 / 4845, rel=1e-9)
    assert rows["TWO"]["p_value"] == pytest.approx((1050 + 150 + 5) / 4845, rel=1e-9) == pytest.approx(sum(pmf[2:]))
    assert rows["ONE"]["p_value"] == pytest.approx(1 - 1365 / 4845, rel=1e-9)
    # BH over the m = 3 tested sets: p * 3 / rank (ranks 1, 2, 3), already increasing
    assert rows["ALL_FOUR"]["fdr"] == pytest.approx(5 / 4845 * 3, rel=1e-9)
    assert rows["TWO"]["fdr"] == pytest.approx(1205 / 4845 * 3 / 2, rel=1e-9)
    assert rows["ONE"]["fdr"] == pytest.approx(3480 / 4845, rel=1e-9)
    # the overlap in decisive order; G24 is decisive but in no set, so it is not in n
    assert rows["ALL_FOUR"]["genes"] == ["G02", "G00", "G01", "G03"] and rows["TWO"]["genes"] == ["G02", "G03"]


def test_rows_sort_by_p_then_name_and_the_table_has_fixed_bytes():
    sets = SETS + [GeneSet("A_ALSO_NONE", "", ("G05", "G06", "G07", "G08", "G09"))]  # p = 1, like NONE
    rows = enrichment(sets, FEATURES, DECISIVE)  # defaults 5..500: SMALL (K 2) is out
    assert [r["set"] for r in rows] == ["ALL_FOUR", "TWO", "ONE", "A_ALSO_NONE", "NONE"]
    assert rows[-1]["p_value"] == 1.0 and rows[-1]["fdr"] == 1.0 and rows[-1]["genes"] == []
    lines = enrichment_table(rows).splitlines()
    assert lines[0] == "set\tdescription\tset_size\toverlap\tdecisive_in_universe\tuniverse\tp_value\tfdr\tgenes"
    # 5 / 4845 = 0.00103199..., times m 5 = 0.00515996...
    assert lines[1] == "ALL_FOUR\thttp://example.org/a\t5\t4\t4\t20\t0.00103199\t0.00515996\tG02,G00,G01,G03"
    assert lines[-1] == "NONE\td\t7\t0\t4\t20\t1\t1\t"
    assert enrichment_table(enrichment(sets, FEATURES, DECISIVE)) == "\n".join(lines) + "\n"


def test_benjamini_hochberg_takes_the_running_minimum_from_the_largest_p():
    # sorted p 0.01, 0.04, 0.045, 0.9 times m 4 / rank = 0.04, 0.08, 0.06, 0.9: rank 2's 0.08 is lowered
    # to rank 3's 0.06 (a smaller p never gets a larger q); answered in the input order
    q = bh_fdr(np.array([0.04, 0.01, 0.9, 0.045]))
    assert q == pytest.approx([0.06, 0.04, 0.9, 0.06])
    assert bh_fdr(np.array([0.02, 0.02])) == pytest.approx([0.02, 0.02])  # ties share one value
    assert len(bh_fdr(np.array([]))) == 0


def test_no_decisive_gene_in_the_universe_gives_p_one():
    rows = enrichment(SETS, FEATURES, ["G24"], min_size=3)
    assert {(r["decisive_in_universe"], r["overlap"], r["p_value"], r["fdr"]) for r in rows} == {(0, 0, 1.0, 1.0)}


def test_gmt_reader_strips_whitespace_keeps_case_drops_repeated_genes_and_reads_gzip(tmp_path):
    text = "SET_A\t\tG00\t G01 \tG00\tg01\t\n\n  SET_B \thttp://x/y\tG02\r\n"
    (tmp_path / "s.gmt.gz").write_bytes(gzip.compress(text.encode()))
    sets = read_gmt(tmp_path / "s.gmt.gz")
    assert sets == [GeneSet("SET_A", "", ("G00", "G01", "g01")), GeneSet("SET_B", "http://x/y", ("G02",))]


@pytest.mark.parametrize("text,message", [
    (None, "no such file"),
    ("", "empty gene-set file (no gene sets)"),
    ("\n  \n", "empty gene-set file (no gene sets)"),
    ("SET_A\tdesc\n", "line 1: a gene set needs a name, a description and genes, tab-separated; found 2"),
    ("SET_A\tdesc\tG1\nSET_B desc G1 G2\n", "line 2: a gene set needs a name, a description and genes, tab-separated; "
                                            "found 1 non-empty field(s) (is it tab-separated?)"),
    ("SET_A\tdesc\t \t\n", "line 1: a gene set needs a name"),
    ("\tdesc\tG1\n", "line 1: a gene set needs a name"),
    ("SET_A\td\tG1\nSET_B\td\tG2\nSET_A\td\tG3\n", "line 3: gene set 'SET_A' is given twice (first on line 1)"),
])
def test_gmt_reader_refuses_bad_files_with_one_line(tmp_path, text, message):
    path = tmp_path / "s.gmt"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match="^" + str(path).replace("\\", "\\\\") + ": ") as info:
        read_gmt(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_check_gene_sets_refuses_sets_that_give_no_test():
    with pytest.raises(InputError) as info:
        check_gene_sets([GeneSet("X", "", ("tp53",)), SETS[-1]], FEATURES, "s.gmt")
    assert str(info.value).startswith("s.gmt: none of the 2 gene sets names a gene of the features: gene symbols differ?")
    with pytest.raises(InputError, match="no gene set has 8 to 500 genes of the features \\(the largest has 7\\)"):
        check_gene_sets(SETS, FEATURES, "s.gmt", min_size=8)
    assert check_gene_sets(SETS, FEATURES, "s.gmt") == \
        "s.gmt: 6 gene sets, 4 with 5 to 500 feature genes to test; universe 20 of 25 feature genes"
