"""score-variants: variant windows, scores, skips, outputs and fixed-block determinism, with the
built-in track model on the 100 kb of GRCh37 chr20 in test-data (contig `20`, N below 1,000)."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pysam
import pytest

from conftest import DATA, assert_one_error_line, read_tsv, run_cli
from genointerp.seq.alphabet import decode, encode
from genointerp.tracks.variant_windows import Geometry, allele_scores, allele_windows

FASTA = DATA / "chr20_slice.fa.gz"
SEQ = pysam.FastaFile(str(FASTA)).fetch("20").upper()
HEADER = ("##fileformat=VCFv4.2\n##contig=<ID=20,length=100000>\n"
          '##INFO=<ID=DP,Number=1,Type=Integer,Description="depth">\n'
          "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
COLUMNS = ["chrom", "pos", "id", "ref", "alt", "track", "ref_sum", "alt_sum", "sad", "center_diff", "log2fc"]


def ref_at(pos: int, n: int = 1) -> str:
    """The FASTA's n bases from 1-based pos."""
    return SEQ[pos - 1: pos - 1 + n]


def other(base: str) -> str:
    return {"A": "C", "C": "G", "G": "T", "T": "A"}[base]


def vcf(path, rows) -> str:
    """A VCF of rows (chrom, pos, id, ref, alt[, info]) at `path`."""
    lines = [f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}\t{r[4]}\t.\t.\t{r[5] if len(r) > 5 else '.'}\n" for r in rows]
    path.write_text(HEADER + "".join(lines))
    return str(path)


def snvs(n: int, start: int = 5000, step: int = 997):
    """n SNVs at distinct positions, REF from the FASTA."""
    return [("20", p, f"v{p}", ref_at(p), other(ref_at(p))) for p in range(start, start + n * step, step)]


def mixed():
    """SNVs, indels, a multi-allelic record and one record of each skip reason, in position order."""
    p = 59500
    return [
        ("20", 1200, "in_n", "N", "A"),                                    # not_acgt (REF N)
        ("20", 1500, "edge", ref_at(1500), other(ref_at(1500))),           # contig_end (window starts before 0)
        ("20", 5000, "multi", ref_at(5000), f"{other(ref_at(5000))},<DEL>"),  # scored + symbolic
        ("20", 20000, "snv", ref_at(20000), other(ref_at(20000)), "DP=3"),
        ("20", 30000, "mismatch", other(ref_at(30000)), ref_at(30000)),    # ref_mismatch
        ("20", p, "ins", ref_at(p), ref_at(p) + "TTT"),
        ("20", p + 100, "del", ref_at(p + 100, 4), ref_at(p + 100)),
        ("20", p + 200, "same", ref_at(p + 200, 2), ref_at(p + 200, 2)),   # ALT == REF: sad 0
        ("20", p + 300, "long", ref_at(p + 300, 60), ref_at(p + 300)),     # too_long
        ("20", p + 400, "twoalts", ref_at(p + 400), f"{other(ref_at(p + 400))},{other(other(ref_at(p + 400)))}"),
        ("20", 70000, "iupac", ref_at(70000), "R"),                        # not_acgt
        ("20", 99000, "end", ref_at(99000), other(ref_at(99000))),         # contig_end
        ("7", 5000, "elsewhere", "A", "G"),                                # unknown_contig
    ]


# --- windows and scores -------------------------------------------------------------------------

# 16 bp windows, 4 target bins of 2 bp: flank 4, the variant's bin 2, its first base at offset 9
G = Geometry(seq_len=16, bin_size=2, target_bins=4)
GENOME = "ACGTACGTAACCGGTTAAACCCGGGTTTACGATCGATGCA"


def windows(pos0: int, ref: str, alt: str) -> tuple[str, str]:
    assert GENOME[pos0:pos0 + len(ref)] == ref
    start = pos0 - G.offset
    span = encode(GENOME[start:start + G.span(len(ref), len(alt))])
    r, a = allele_windows(span, G, len(ref), alt)
    return decode(r).decode(), decode(a).decode()


def test_the_variant_sits_in_the_middle_of_the_central_target_bin():
    assert G.offset == 9 and G.variant_bin == 2 and G.center(1) == (1, 4) and G.center(5) == (0, 4)
    built_in = Geometry(3072, 128, 16)
    assert built_in.offset == 512 + 8 * 128 + 64 and built_in.center(0) == (8, 9)


def test_snv_window_changes_one_base_at_the_offset():
    r, a = windows(22, "G", "T")
    assert r == GENOME[13:29] and a == GENOME[13:22] + "T" + GENOME[23:29]


def test_insertion_pushes_bases_off_the_right_end():
    r, a = windows(22, "G", "GAA")
    assert r == GENOME[13:29]
    assert a == GENOME[13:22] + "GAA" + GENOME[23:27] and len(a) == 16


def test_deletion_pulls_more_reference_in_from_the_right():
    r, a = windows(22, "GGGT", "G")
    assert r == GENOME[13:29]
    assert a == GENOME[13:22] + "G" + GENOME[26:32] and len(a) == 16


def test_complex_substitution_keeps_the_flanks():
    r, a = windows(22, "GG", "TTA")
    assert a == GENOME[13:22] + "TTA" + GENOME[24:28]


def test_windows_stay_inside_the_contig():
    assert G.fits(9, 1, 1, 40) and not G.fits(8, 1, 1, 40)
    assert G.fits(40 - 7, 1, 1, 40) and not G.fits(40 - 6, 1, 1, 40)
    assert G.fits(30, 4, 1, 40) and G.fits(31, 1, 1, 40)
    assert not G.fits(31, 4, 1, 40)  # a deletion reads 3 more bases on the right


def test_scores_follow_their_formulas():
    rng = np.random.default_rng(0)
    ref, alt = rng.random((3, 4, 2), dtype=np.float32), rng.random((3, 4, 2), dtype=np.float32)
    s = allele_scores(ref, alt, (1, 4))
    r, a = ref.astype(np.float64), alt.astype(np.float64)
    np.testing.assert_array_equal(s[..., 0], r.sum(1))
    np.testing.assert_array_equal(s[..., 1], a.sum(1))
    np.testing.assert_array_equal(s[..., 2], a.sum(1) - r.sum(1))
    np.testing.assert_allclose(s[..., 3], (a - r)[:, 1:4].sum(1))
    np.testing.assert_allclose(s[..., 4], np.log2((a.sum(1) + 1) / (r.sum(1) + 1)))


# --- the command --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The mixed VCF scored once: (folder, TSV rows, summary, stderr)."""

    d = tmp_path_factory.mktemp("sv")
    v = vcf(d / "in.vcf", mixed())
    res = run_cli("score-variants", v, "-R", str(FASTA), "-o", str(d / "out.tsv"),
                  "--vcf-out", str(d / "out.vcf.gz"), "--index-vcf", "--summary", str(d / "s.json"),
                  "--device", "cpu")
    assert res.exit_code == 0, res.output
    return d, read_tsv(d / "out.tsv"), json.loads((d / "s.json").read_text()), res.stderr


def test_tsv_has_a_row_per_scored_allele_and_track(scored):
    d, rows, summary, _ = scored
    assert (d / "out.tsv").read_text().split("\n", 1)[0].split("\t") == COLUMNS
    ids = list(dict.fromkeys((r["id"], r["alt"]) for r in rows))
    assert [i for i, _ in ids] == ["multi", "snv", "ins", "del", "same", "twoalts", "twoalts"]
    assert len(rows) == len(ids) * summary["tracks"] == 7 * 87
    first = rows[0]
    assert (first["chrom"], first["pos"], first["ref"]) == ("20", "5000", ref_at(5000))
    for r in rows:
        ref_sum, alt_sum, sad = float(r["ref_sum"]), float(r["alt_sum"]), float(r["sad"])
        # each printed to 6 significant digits
        assert sad == pytest.approx(alt_sum - ref_sum, abs=6e-6 * (abs(ref_sum) + abs(alt_sum) + abs(sad)) + 1e-12)
        assert float(r["log2fc"]) == pytest.approx(np.log2((alt_sum + 1) / (ref_sum + 1)), abs=2e-5)


def test_alt_equal_to_ref_scores_zero(scored):
    _, rows, _, _ = scored
    same = [r for r in rows if r["id"] == "same"]
    assert same and all(abs(float(r["sad"])) <= 1e-5 * (1 + float(r["ref_sum"])) for r in same)
    assert all(abs(float(r["center_diff"])) <= 1e-5 * (1 + float(r["ref_sum"])) for r in same)


def test_the_insertion_near_the_ctcf_peak_moves_ctcf(scored):
    """The built-in model's strongest CTCF peak of the slice is at 59,392-59,776: inserting TTT at
    59,500 changes the predicted CTCF signal more than the far-away SNV at 20,000 does."""
    _, rows, _, _ = scored
    sad = {(r["id"], r["track"]): abs(float(r["sad"])) for r in rows}
    assert sad[("ins", "HepG2.CTCF.conservative")] > 10 * sad[("snv", "HepG2.CTCF.conservative")]


def test_skips_are_counted_and_logged_once_per_reason(scored):
    _, _, summary, stderr = scored
    assert summary["records"] == 13 and summary["alleles"] == 15 and summary["scored"] == summary["scorable"] == 7
    assert summary["skipped"] == {"symbolic": 1, "not_acgt": 2, "too_long": 1, "unknown_contig": 1,
                                  "ref_mismatch": 1, "contig_end": 2}
    warnings = [line for line in stderr.splitlines() if "skipped" in line]
    assert len(warnings) == 6
    assert any(f"20:30000 {other(ref_at(30000))}>{ref_at(30000)}, the FASTA has {ref_at(30000)}" in w for w in warnings)
    assert any("first: 20:1500" in w for w in warnings)


def test_vcf_out_keeps_every_record_with_gi_info_per_alt(scored):
    d, rows, _, _ = scored
    with pysam.VariantFile(str(d / "out.vcf.gz")) as vf:
        assert {"GI_SAD", "GI_TRACK", "GI_LOG2FC"} <= set(vf.header.info)
        recs = list(vf)
    assert [r.id for r in recs] == [r[2] for r in mixed()]
    by_id = {r.id: r for r in recs}
    assert by_id["multi"].info["GI_SAD"][1] is None and by_id["multi"].info["GI_SAD"][0] is not None
    assert by_id["mismatch"].info["GI_SAD"] == (None,) and by_id["mismatch"].info["GI_TRACK"] == (".",)  # a missing String
    assert by_id["snv"].info["DP"] == 3
    # GI_SAD is the signed SAD of largest magnitude over the tracks, GI_TRACK its track
    for rid in ("snv", "ins", "del"):
        mine = [r for r in rows if r["id"] == rid]
        top = max(mine, key=lambda r: abs(float(r["sad"])))
        assert by_id[rid].info["GI_TRACK"] == (top["track"],)
        assert by_id[rid].info["GI_SAD"][0] == pytest.approx(float(top["sad"]), rel=1e-5)
        assert by_id[rid].info["GI_LOG2FC"][0] == pytest.approx(float(top["log2fc"]), rel=1e-5, abs=1e-6)
    assert len(by_id["twoalts"].info["GI_SAD"]) == 2
    with pysam.VariantFile(str(d / "out.vcf.gz")) as vf:  # the tabix index answers a region
        assert [r.id for r in vf.fetch("20", 59000, 60000)] == ["ins", "del", "same", "long", "twoalts"]
    if shutil.which("bcftools"):
        import subprocess

        out = subprocess.run(["bcftools", "view", "-H", str(d / "out.vcf.gz")], capture_output=True, text=True)
        assert out.returncode == 0 and len(out.stdout.splitlines()) == len(mixed())


def test_wide_has_a_sad_column_per_track(scored, cli, tmp_path):
    d, rows, _, _ = scored
    res = cli("score-variants", d / "in.vcf", "-R", FASTA, "-o", tmp_path / "w.tsv", "--wide", "--device", "cpu")
    assert res.exit_code == 0, res.output
    wide = read_tsv(tmp_path / "w.tsv")
    assert len(wide) == 7 and list(wide[0])[:5] == COLUMNS[:5] and len(wide[0]) == 5 + 87
    for r in rows:
        match = next(w for w in wide if (w["id"], w["alt"]) == (r["id"], r["alt"]))
        assert match[f"sad:{r['track']}"] == r["sad"]


def test_scores_do_not_depend_on_batch_size_or_chunks(cli, tmp_path, hostile, monkeypatch):
    """21 alleles (three blocks of 8 here, the last padded; the job's blocks are 32, made 8 so that
    a few alleles give several blocks) under arithmetic that moves with the batch shape: every
    --batch-size and every chunking gives the same bytes, and the chunks' TSVs concatenated (one
    header) are the whole run's."""
    monkeypatch.setattr("genointerp.tracks.variants.BLOCK", 8)
    v = vcf(tmp_path / "in.vcf", snvs(21))
    base = ["score-variants", v, "-R", FASTA, "--device", "cpu"]
    outs = {}
    for bs in (1, 8, 64):
        for wide in ([], ["--wide"]):
            out = tmp_path / f"b{bs}{len(wide)}.tsv"
            assert cli(*base, "-o", out, "--batch-size", bs, *wide).exit_code == 0
            outs[(bs, bool(wide))] = out.read_bytes()
    assert outs[(1, False)] == outs[(8, False)] == outs[(64, False)]
    assert outs[(1, True)] == outs[(8, True)] == outs[(64, True)]
    shifted_runs = []
    for bs in (1, 64):  # --shifts: three passes of each block, summed in shift order
        out = tmp_path / f"s{bs}.tsv"
        assert cli(*base, "-o", out, "--batch-size", bs, "--shifts", "-1,0,1").exit_code == 0
        shifted_runs.append(out.read_bytes())
    assert shifted_runs[0] == shifted_runs[1] != outs[(1, False)]
    for n in (2, 5):  # 5 chunks of 3 blocks: two are empty
        parts = []
        for i in range(1, n + 1):
            out = tmp_path / f"c{i}of{n}.tsv"
            res = cli(*base, "-o", out, "--chunk", f"{i}/{n}", "--batch-size", 3, "--summary", tmp_path / f"c{i}of{n}.json")
            assert res.exit_code == 0, res.output
            parts.append(out.read_bytes())
        assert parts[0].split(b"\n", 1)[0] + b"\n" + b"".join(p.split(b"\n", 1)[1] for p in parts) == outs[(8, False)]
        summaries = [json.loads((tmp_path / f"c{i}of{n}.json").read_text()) for i in range(1, n + 1)]
        assert sum(s["scored"] for s in summaries) == 21
    # the arithmetic is hostile indeed: the same alleles scored in other blocks get other bits
    shifted = vcf(tmp_path / "shifted.vcf", snvs(22, start=5000 - 997))
    assert cli(*base, "-o", tmp_path / "shifted.tsv").exit_code == 0
    whole = outs[(8, False)].split(b"\n", 1)[1]
    assert (tmp_path / "shifted.tsv").read_bytes().split(b"\n", 1)[1].split(b"\n", 87)[87] != whole


def test_regions_keep_only_variants_inside(cli, tmp_path):
    v = vcf(tmp_path / "in.vcf", mixed())
    (tmp_path / "r.bed").write_text("chr20\t59000\t59850\n")  # chr20 is taken as 20, with a warning
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "o.tsv", "--regions", tmp_path / "r.bed",
              "--summary", tmp_path / "s.json", "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert {r["id"] for r in read_tsv(tmp_path / "o.tsv")} == {"ins", "del", "same"}  # and "long", skipped
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["scored"] == 3 and summary["outside_regions"] == 15 - 4
    assert summary["skipped"]["too_long"] == 1 and summary["skipped"]["symbolic"] == 0


def test_chr_names_are_aliased_with_a_warning(cli, tmp_path):
    rows = [("chr20", p, i, r, a) for _, p, i, r, a in snvs(2)]
    res = cli("score-variants", vcf(tmp_path / "in.vcf", rows), "-R", FASTA, "-o", tmp_path / "o.tsv", "--device", "cpu")
    assert res.exit_code == 0 and "chromosome chr20 taken as 20" in res.stderr
    assert {r["chrom"] for r in read_tsv(tmp_path / "o.tsv")} == {"chr20"}


def test_strict_stops_at_the_first_unscorable_variant(cli, tmp_path):
    v = vcf(tmp_path / "in.vcf", mixed())
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "o.tsv", "--strict", "--device", "cpu")
    assert res.exit_code == 1
    assert_one_error_line(res, "20:1200 N>A: REF or ALT with a base other than A, C, G, T (--strict)")
    assert not (tmp_path / "o.tsv").exists()


def test_nothing_scorable_is_an_error(cli, tmp_path):
    v = vcf(tmp_path / "in.vcf", [("7", 5000, "a", "A", "G"), ("7", 6000, "b", "C", "T")])
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "o.tsv", "--device", "cpu")
    assert res.exit_code == 1
    assert_one_error_line(res, "no variant allele can be scored: 2 contig not in the FASTA (first: 7:5000 A>G)")
    assert not (tmp_path / "o.tsv").exists()


def _bgzip(src, dst) -> None:
    pysam.tabix_compress(str(src), str(dst), force=True)


def test_bad_inputs_are_one_line_and_leave_no_outputs(cli, tmp_path):
    from genointerp.resources import builtin_model_dir

    good = vcf(tmp_path / "in.vcf", snvs(3))
    out = tmp_path / "o.tsv"
    run = lambda v, *extra, fasta=FASTA: cli("score-variants", v, "-R", fasta, "-o", out, "--device", "cpu", *extra)  # noqa: E731
    # truncated bgzip
    _bgzip(good, tmp_path / "in.vcf.gz")
    data = (tmp_path / "in.vcf.gz").read_bytes()
    (tmp_path / "cut.vcf.gz").write_bytes(data[: len(data) - 40])
    assert_one_error_line(run(tmp_path / "cut.vcf.gz"), "truncated")
    # truncated plain gzip
    with gzip.open(tmp_path / "g.vcf.gz", "wb") as fh:
        fh.write((HEADER + "".join(f"20\t{5000 + i}\t.\t{ref_at(5000 + i)}\tA\t.\t.\t.\n" for i in range(2000))).encode())
    data = (tmp_path / "g.vcf.gz").read_bytes()
    (tmp_path / "gcut.vcf.gz").write_bytes(data[: len(data) // 2])
    assert_one_error_line(run(tmp_path / "gcut.vcf.gz"), "truncated or corrupt gzip data")
    # malformed record
    (tmp_path / "bad.vcf").write_text(HEADER + "20\tX\t.\tA\tC\t.\t.\t.\n")
    assert_one_error_line(run(tmp_path / "bad.vcf"), "record 1 (after the header): malformed or truncated VCF")
    (tmp_path / "notvcf.vcf").write_text("hello\n")
    assert_one_error_line(run(tmp_path / "notvcf.vcf"), "not a readable VCF/BCF")
    # FASTA without its index
    shutil.copy(FASTA, tmp_path / "ref.fa.gz")
    shutil.copy(str(FASTA) + ".gzi", tmp_path / "ref.fa.gz.gzi")
    assert_one_error_line(run(good, fasta=tmp_path / "ref.fa.gz"), "no index")
    # a model folder that is not a track model
    assert_one_error_line(run(good, "-m", builtin_model_dir()), "not a track model")
    assert not out.exists()
    # an existing output is kept without --force
    out.write_text("mine\n")
    assert_one_error_line(run(good), "output exists")
    assert out.read_text() == "mine\n"
    assert run(good, "--force").exit_code == 0 and out.read_text().startswith("chrom\t")


@pytest.mark.parametrize("extra, message", [
    ([], "give -o TSV and/or --vcf-out"),
    (["-o", "x.tsv", "--chunk", "4/3"], "--chunk"),
    (["-o", "x.tsv", "--vcf-out", "x.vcf.gz", "--chunk", "1/2"], "cannot write --vcf-out"),
    (["-o", "x.tsv", "--vcf-out", "x.vcf", "--index-vcf"], "--index-vcf"),
])
def test_usage_errors(cli, tmp_path, extra, message):
    res = cli("score-variants", vcf(tmp_path / "in.vcf", snvs(1)), "-R", FASTA, *extra)
    assert res.exit_code == 2 and message in res.stderr


def test_the_documented_example(cli, tmp_path):
    """docs/tracks.md's example: a base of the CTCF motif in the slice's CTCF peak lowers the
    predicted signal of every CTCF track; the far SNV barely moves anything; VCF records all kept."""
    res = cli("score-variants", DATA / "chr20_variants.vcf", "-R", FASTA, "-o", tmp_path / "s.tsv",
              "--vcf-out", tmp_path / "s.vcf.gz", "--index-vcf", "--device", "cpu")
    assert res.exit_code == 0, res.output
    rows = read_tsv(tmp_path / "s.tsv")
    ctcf = [float(r["sad"]) for r in rows if r["id"] == "ctcf_core" and ".CTCF." in r["track"]]
    assert len(ctcf) == 7 and max(ctcf) < -5
    assert max(abs(float(r["sad"])) for r in rows if r["id"] == "far_snv") < 0.1
    hepg2 = next(r for r in rows if r["id"] == "ctcf_core" and r["track"] == "HepG2.CTCF.conservative")
    assert float(hepg2["sad"]) == pytest.approx(-18.05, abs=0.1)  # as the docs show
    with pysam.VariantFile(str(tmp_path / "s.vcf.gz")) as vf:
        assert [r.id for r in vf] == ["far_snv", "wrong_ref", "ins_ttt", "ctcf_core", "del_3bp", "two_alts", "sv_del"]
    assert (tmp_path / "s.vcf.gz.tbi").exists()


def test_vcf_from_a_pipe_can_be_annotated(cli, tmp_path, pipe):
    """`score-variants <(cat x.vcf) --vcf-out`: a stream is read once, its header handed on to the VCF
    writer (it used to be opened a second time for the header: "not a readable VCF/BCF")."""
    v = vcf(tmp_path / "in.vcf", snvs(3))
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "f.tsv", "--vcf-out", tmp_path / "f.vcf",
              "--device", "cpu")
    assert res.exit_code == 0, res.output
    res = cli("score-variants", pipe((tmp_path / "in.vcf").read_bytes()), "-R", FASTA, "-o", tmp_path / "p.tsv",
              "--vcf-out", tmp_path / "p.vcf", "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.tsv").read_bytes() == (tmp_path / "f.tsv").read_bytes()
    assert (tmp_path / "p.vcf").read_bytes() == (tmp_path / "f.vcf").read_bytes()


def test_an_unsorted_vcf_is_refused_for_index_vcf_before_scoring(cli, tmp_path, monkeypatch):
    """tabix needs a sorted VCF: an unsorted input with --index-vcf is named as unsorted from the
    first pass, before any variant is scored (not tabix's failure after scoring all of them)."""
    from genointerp.tracks import variants as job

    rows = snvs(3)
    v = vcf(tmp_path / "in.vcf", [rows[1], rows[0], rows[2]])
    scored = []
    monkeypatch.setattr(job._Scorer, "score", lambda self, ref, items, writer: scored.append(items))
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "o.tsv", "--vcf-out", tmp_path / "o.vcf.gz",
              "--index-vcf", "--device", "cpu")
    assert res.exit_code == 1
    assert_one_error_line(res, f"{v}: not sorted")
    assert "20:5000" in res.stderr and scored == []
    assert not (tmp_path / "o.tsv").exists() and not (tmp_path / "o.vcf.gz").exists()
    # contigs in two separate runs are unsorted for tabix too
    v2 = vcf(tmp_path / "in2.vcf", [rows[0], ("21", 10, ".", "A", "C"), rows[1]])
    res = cli("score-variants", v2, "-R", FASTA, "-o", tmp_path / "o.tsv", "--vcf-out", tmp_path / "o.vcf.gz",
              "--index-vcf", "--device", "cpu")
    assert res.exit_code == 1 and "not sorted" in res.stderr and scored == []
    # without --index-vcf an unsorted VCF is scored as it is
    monkeypatch.undo()
    res = cli("score-variants", v, "-R", FASTA, "-o", tmp_path / "o.tsv", "--device", "cpu")
    assert res.exit_code == 0, res.output
