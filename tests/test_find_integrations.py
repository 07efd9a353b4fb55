"""find-integrations and simulate-reads' insertion mode, through the CLI, on test-data/integrations
(made by test-data/make_integration_data.py: 3 insertions of HPV16, HBV and HPV18 into 30 kb of
chr20 at 10x, aligned with minimap2 -ax sr)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pysam
import pytest

from conftest import DATA, assert_one_error_line, reference, run_cli, tsv_dicts
from genointerp.io.junctions import read_bedpe
from genointerp.seq.alphabet import encode, reverse_complement_codes
from genointerp.viral.panel import known_virus, name_reference

INT = DATA / "integrations"
HOST, HBV = INT / "host.fa", INT / "hbv.fa"


def truth():
    return read_bedpe(str(INT / "truth.bedpe"))


def matches(calls: list[dict], host_bp: int, viral_bp: int = 750) -> list:
    """For each truth junction, the call on its strand within host_bp (and viral_bp on the same contig)."""
    found = []
    for t in truth():
        hit = [c for c in calls if c["host_chrom"] == t.chrom1 and c["host_strand"] == t.strand1
               and abs(int(c["host_pos"]) - 1 - t.start1) <= host_bp
               and name_reference(c["viral_contig"]).type == name_reference(t.chrom2).type  # lineages are colinear
               and abs(int(c["viral_pos"]) - 1 - t.start2) <= viral_bp and c["orientation"] == t.strand1 + t.strand2]
        found.append(hit[0] if hit else None)
    return found


@pytest.fixture(scope="module")
def bam_run(tmp_path_factory):
    """One full run on the host-aligned BAM with every output (shared by the output checks)."""

    out = tmp_path_factory.mktemp("fi")
    args = ["find-integrations", str(INT / "host.bam"), "-R", str(HOST), "--viral-refs", str(HBV), "--genes",
            str(INT / "genes.bed"), "-o", str(out / "j.tsv"), "--vcf", str(out / "j.vcf"), "--bedpe",
            str(out / "j.bedpe"), "--summary", str(out / "s.json"), "--multiqc", str(out / "j_mqc.tsv"), "--sample", "T1"]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    return out


def test_panel_names_viruses_and_types():
    n = name_reference("HPV16_v2")
    assert (n.virus, n.type, n.display, n.circular) == ("HPV", "HPV16", "HPV16", True)
    n = name_reference("HBV_3", "D00330.1 genotype_B len=3215")
    assert (n.virus, n.type, n.display) == ("HBV", "HBV", "HBV genotype B")
    assert name_reference("KSHV_HHV-8_1").virus == "KSHV" and name_reference("EBV_HHV-4_1").virus == "EBV"
    assert name_reference("HTLV-1_1").virus == "HTLV-1" and not name_reference("HTLV-1_1").circular
    assert name_reference("HPV-mSK010").type == "HPV-mSK010" and name_reference("MCPyV_1").virus == "MCPyV"
    assert name_reference("mystery_2").virus == "mystery"
    assert known_virus("chrEBV") and known_virus("HPV16") and not known_virus("20") and not known_virus("chr20")


def test_insertion_mode_truth_joins_host_and_viral_sequence(cli, data, tmp_path):
    """Every truth junction is in the simulated reads: a read that crosses it holds the host bases
    up to the junction followed by the viral bases from it (or the reverse)."""
    args = ["simulate-reads", "-s", f"host={HOST}", "-s", f"viral={INT / 'viral.fa'}", "--circular", "viral",
            "--insert", "viral=host", "--insertions", "3", "--depth", "6", "--paired", "--fragment-mean", "400",
            "-o", tmp_path / "r.fq", "--truth-bedpe", tmp_path / "t.bedpe", "--seed", "3"]
    assert cli(*args).exit_code == 0
    host, viral = reference(HOST)["20"], reference(INT / "viral.fa")
    junctions = read_bedpe(str(tmp_path / "t.bedpe"))
    assert len(junctions) == 6 and {j.chrom2 for j in junctions} == {"HPV16", "HPV18", "HBV_2"}
    reads = (tmp_path / "r.fq").read_text().splitlines()[1::4]
    text = "\n".join(reads)
    text += "\n" + "\n".join(reverse_complement_codes(encode(r)).tobytes().translate(bytes.maketrans(b"\x00\x01\x02\x03\x04", b"ACGTN")).decode() for r in reads)
    for j in junctions:
        v = viral[j.chrom2]
        vseq = (v + v)[j.start2: j.start2 + 15] if j.strand2 == "-" else (v + v)[j.start2 + len(v) - 14: j.start2 + len(v) + 1]
        if (j.strand1, j.strand2) in (("+", "+"), ("-", "-")):
            vseq = reverse_complement_codes(encode(vseq)).tobytes().translate(bytes.maketrans(b"\x00\x01\x02\x03", b"ACGT")).decode()
        junction = host[j.start1 - 14: j.start1 + 1] + vseq if j.strand1 == "+" else vseq + host[j.start1: j.start1 + 15]
        assert junction in text, j
    # the deleted host bases: 10 between each left and right junction
    lefts = sorted(j.start1 for j in junctions if j.strand1 == "+")
    rights = sorted(j.start1 for j in junctions if j.strand1 == "-")
    assert [r - l for l, r in zip(lefts, rights)] == [11, 11, 11]
    again = tmp_path / "again"
    again.mkdir()
    args2 = [a if not str(a).startswith(str(tmp_path)) else again / a.name for a in args]
    assert cli(*args2).exit_code == 0
    assert (again / "r.fq").read_bytes() == (tmp_path / "r.fq").read_bytes()
    assert (again / "t.bedpe").read_bytes() == (tmp_path / "t.bedpe").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--insert", "viral=host"], "give --depth"),
    (["--insert", "viral=host", "--depth", "5", "-n", "10"], "drop -n"),
    (["--depth", "5", "-n", "10"], "give --insert"),
])
def test_insertion_mode_usage_errors(cli, tmp_path, args, message):
    res = cli("simulate-reads", "-s", f"host={HOST}", "-s", f"viral={HBV}", "--paired", "-o", tmp_path / "r.fq", *args)
    assert res.exit_code == 2 and message in res.stderr
    assert not (tmp_path / "r.fq").exists()


def test_bam_finds_every_junction_precisely(bam_run):
    calls = tsv_dicts((bam_run / "j.tsv").read_text())
    found = matches(calls, host_bp=5)
    assert all(found), found
    assert len(calls) == 6 and all(c["status"] == "precise" for c in calls)
    assert {(c["virus"], c["type"]) for c in calls} == {("HPV", "HPV16"), ("HPV", "HPV18"), ("HBV", "HBV genotype A")}
    assert all(int(c["split_reads"]) >= 3 and int(c["spanning_pairs"]) >= 3 for c in calls)
    assert [c["nearest_genes"] for c in calls[:4]] == ["MADEUP_OVER", "MADEUP_OVER", "MADEUP_LEFT(-2001),MADEUP_RIGHT(+1500)",
                                                       "MADEUP_LEFT(-2012),MADEUP_RIGHT(+1489)"]


def test_vcf_bedpe_and_summary_agree_with_the_table(bam_run):
    calls = tsv_dicts((bam_run / "j.tsv").read_text())
    summary = json.loads((bam_run / "s.json").read_text())
    assert summary["junctions"] == len(calls) == summary["precise"] + summary["imprecise"]
    assert summary["split_reads"] == sum(int(c["split_reads"]) for c in calls)
    assert summary["spanning_pairs"] == sum(int(c["spanning_pairs"]) for c in calls)
    assert summary["by_type"] == {"HBV genotype A": 2, "HPV16": 2, "HPV18": 2}
    with pysam.VariantFile(str(bam_run / "j.vcf")) as vcf:  # htslib parses it
        assert "HPV16" in vcf.header.contigs and "20" in vcf.header.contigs
        records = [r for r in vcf if r.chrom == "20"]  # the host breakends (their viral mates follow)
    assert [(r.chrom, r.pos, r.id, r.info["EVENT"]) for r in records] == [
        (c["host_chrom"], int(c["host_pos"]), c["junction_id"] + "_host", c["junction_id"]) for c in calls]
    assert [r.info["SR"] for r in records] == [int(c["split_reads"]) for c in calls]
    host = reference(HOST)["20"]
    for r, c in zip(records, calls):
        assert r.ref == host[r.pos - 1]
        mate = f"{c['viral_contig']}:{c['viral_pos']}"
        alt = {"+-": f"{r.ref}[{mate}[", "++": f"{r.ref}]{mate}]", "-+": f"]{mate}]{r.ref}", "--": f"[{mate}[{r.ref}"}
        assert r.alts[0] == alt[c["orientation"]]
    bedpe = read_bedpe(str(bam_run / "j.bedpe"))
    assert [(b.chrom1, b.start1 + 1, b.chrom2, b.start2 + 1, b.strand1 + b.strand2) for b in bedpe] == [
        (c["host_chrom"], int(c["host_pos"]), c["viral_contig"], int(c["viral_pos"]), c["orientation"]) for c in calls]


def test_every_output_names_a_type_the_same_way(bam_run):
    """TSV, VCF (both breakends), BEDPE and summary name a type by its display name: `HBV genotype
    A`, not `HBV` in some of them."""
    calls = tsv_dicts((bam_run / "j.tsv").read_text())
    types = {c["junction_id"]: c["type"] for c in calls}
    assert set(types.values()) == {"HBV genotype A", "HPV16", "HPV18"}
    bedpe = read_bedpe(str(bam_run / "j.bedpe"))
    assert {b.name: b.extra[1] for b in bedpe} == types  # extra columns: virus type split_reads ...
    summary = json.loads((bam_run / "s.json").read_text())
    assert set(summary["by_type"]) == set(summary["unanchored_viral_reads"]) == set(types.values())
    with pysam.VariantFile(str(bam_run / "j.vcf")) as vcf:
        records = list(vcf)
    assert len(records) == 2 * len(calls)
    assert all(r.info["VTYPE"] == types[r.info["EVENT"]] for r in records)


def test_multiqc_rows_are_the_tables_junctions(bam_run, cli, tmp_path):
    """--multiqc: the sample's rows of the genointerp integrations table (MultiQC custom content),
    one per junction of the TSV, keyed SAMPLE: JUNCTION_ID."""
    text = (bam_run / "j_mqc.tsv").read_text()
    assert "# parent_id: 'genointerp'" in text and "# id: 'genointerp_integrations'" in text
    got = tsv_dicts(text, comment="#")
    table = tsv_dicts((bam_run / "j.tsv").read_text())
    assert [g["Row"] for g in got] == [f"T1: {t['junction_id']}" for t in table]
    for g, t in zip(got, table):
        assert (g["type"], g["host_position"], g["nearest_genes"], g["split_reads"], g["status"]) == \
            (t["type"], f"{t['host_chrom']}:{t['host_pos']}", t["nearest_genes"], t["split_reads"], t["status"])
    res = cli("find-integrations", INT / "host.bam", "-R", HOST, "-o", tmp_path / "j.tsv", "--multiqc", tmp_path / "j.tsv2")
    assert res.exit_code == 2 and "_mqc.tsv" in res.stderr and list(tmp_path.iterdir()) == []


def test_vcf_breakends_come_in_mate_pairs(bam_run):
    """Each junction is a host breakend and a viral one whose MATEIDs name each other, with unique
    IDs; the viral record's ALT points back at the host base."""
    with pysam.VariantFile(str(bam_run / "j.vcf")) as vcf:
        info = vcf.header.info
        assert (info["MATEID"].number, info["MATEID"].type) == (".", "String")
        records = list(vcf)
    by_id = {r.id: r for r in records}
    assert len(by_id) == len(records) == 12
    host_side = [r for r in records if r.chrom == "20"]
    assert len(host_side) == 6
    for r in records:
        (mate_id,) = r.info["MATEID"]
        mate = by_id[mate_id]
        assert mate.info["MATEID"] == (r.id,) and mate.info["EVENT"] == r.info["EVENT"] and mate_id != r.id
        assert (r.chrom == "20") != (mate.chrom == "20")  # one host, one viral breakend
        assert f"{mate.chrom}:{mate.pos}" in r.alts[0]
        assert r.info["SVTYPE"] == "BND"
    viral = reference(INT / "viral.fa")
    for r in records:
        if r.chrom != "20":
            assert r.ref == viral[r.chrom][r.pos - 1] if r.chrom in viral else r.ref in "ACGTN"


def test_same_inputs_give_byte_identical_outputs(cli, bam_run, tmp_path):
    res = cli("-q", "find-integrations", INT / "host.bam", "-R", HOST, "--viral-refs", HBV, "--genes",
              INT / "genes.bed", "-o", tmp_path / "j.tsv", "--vcf", tmp_path / "j.vcf", "--bedpe", tmp_path / "j.bedpe",
              "--summary", tmp_path / "s.json")
    assert res.exit_code == 0
    for name in ("j.tsv", "j.vcf", "j.bedpe", "s.json"):
        assert (tmp_path / name).read_bytes() == (bam_run / name).read_bytes(), name


def test_paired_fastq_finds_the_same_junctions(cli, bam_run):
    res = cli("-q", "find-integrations", "--reads1", INT / "R1.fq.gz", "--reads2", INT / "R2.fq.gz", "-R", HOST,
              "--viral-refs", HBV)
    assert res.exit_code == 0, res.stderr
    calls = tsv_dicts(res.stdout)
    assert all(matches(calls, host_bp=5)) and len(calls) == 6


def test_bam_with_sa_tags_on_a_host_plus_virus_reference(cli):
    with pysam.AlignmentFile(str(INT / "sa.bam")) as fh:
        assert sum(r.has_tag("SA") for r in fh) > 20
    res = cli("-q", "find-integrations", INT / "sa.bam", "-R", INT / "combined.fa", "--viral-refs", HBV)
    assert res.exit_code == 0, res.stderr
    calls = tsv_dicts(res.stdout)
    assert all(matches(calls, host_bp=5)) and len(calls) == 6 and {c["host_chrom"] for c in calls} == {"20"}


def test_unmapped_only_bam_anchors_pairs_on_the_mate_fields(cli):
    res = cli("find-integrations", INT / "unmapped.bam", "-R", HOST, "--viral-refs", HBV)
    assert res.exit_code == 0, res.stderr
    assert "unmapped-only" in res.stderr
    calls = tsv_dicts(res.stdout)
    assert all(matches(calls, host_bp=1000)) and len(calls) == 6


def test_without_added_references_hbv_is_called_only_if_the_model_holds_it(cli):
    """--viral-refs adds genomes; a model folder whose references hold HBV already needs none."""
    import gzip

    from genointerp.resources import builtin_model_dir

    with gzip.open(builtin_model_dir() / "kmer_refs.fa.gz", "rt") as fh:
        builtin_hbv = any(line.startswith(">HBV") for line in fh)
    res = cli("-q", "find-integrations", INT / "host.bam", "-R", HOST)
    calls = tsv_dicts(res.stdout)
    assert res.exit_code == 0
    assert {c["virus"] for c in calls} == ({"HPV", "HBV"} if builtin_hbv else {"HPV"})
    assert len(calls) == (6 if builtin_hbv else 4)


def test_viral_refs_help_names_the_viruses_of_the_built_in_references():
    """--viral-refs' help says which viruses the built-in model's references hold (all of them)."""
    import typer

    from genointerp.cli import app
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.typing.placement import read_described

    viruses = {name_reference(n).virus for n, _, _ in read_described(str(builtin_model_dir() / "kmer_refs.fa.gz"))}
    assert {"HPV", "HBV", "EBV"} <= viruses
    command = typer.main.get_command(app).commands["find-integrations"]
    text = next(p.help for p in command.params if p.name == "viral_refs")
    assert "HPV only" not in text and all(v in text for v in viruses), text


class _StubPanel:
    """What clustering and the viral ends read of a ViralPanel: each reference's length and naming."""

    def __init__(self, *names):
        from genointerp.viral.typing.placement import ViralRef

        self.refs = {n: ViralRef(n, 7906, name_reference(n), "test") for n in names}


def _split(name, pos, ref, vpos=100):
    from genointerp.integrations.pieces import JunctionEvidence
    from genointerp.viral.typing.placement import Placement

    place = Placement(ref, 1, vpos, vpos + 50, 0, 50, 50, 50, 10)
    return JunctionEvidence("split", "20", "+", pos, name, place, "-", vpos)


def test_one_call_per_junction_when_its_reads_land_on_two_lineages():
    """The split reads of one junction, some placed on HPV16 and some on its lineage genome
    HPV16_v2, spread over more than 10 bp: clustering cuts them into two calls 1 bp apart; they
    are one junction of one type, reported once (the call with more reads). A call of another type
    at the same base (another virus: clustering keeps viruses apart), one of the same type 12 bp on,
    and one on the other strand stay."""
    from genointerp.integrations.clusters import _cluster, junction_calls
    from genointerp.integrations.request import IntegrationRequest

    panel = _StubPanel("HPV16", "HPV16_v2", "HBV_2")
    req = IntegrationRequest(host="host.fa", bam="x.bam", min_support=3)
    evidence = [_split("a", 1000, "HPV16"), _split("b", 1010, "HPV16"), _split("c", 1010, "HPV16"),
                _split("d", 1010, "HPV16"),  # cluster of 1000..1010, at 1010
                _split("e", 1011, "HPV16_v2"), _split("f", 1011, "HPV16_v2"), _split("g", 1012, "HPV16_v2")]
    assert [(c.pos, len(c.splits)) for c in _cluster(evidence, panel, req)] == [(1010, 4), (1011, 3)]
    calls = junction_calls(evidence, panel, req)
    assert [(c.pos, e.ref, e.type) for c, e in calls] == [(1010, "HPV16", "HPV16")]
    # the tie goes to the first reference name, whichever call comes first
    tie = [_split(n, 1011, "HPV16_v2") for n in "efgh"] + evidence[:4]
    assert [(c.pos, e.ref) for c, e in junction_calls(tie, panel, req)] == [(1010, "HPV16")]
    tie = evidence[:4] + [_split(n, 1011, "HPV16_v2") for n in "efgh"]
    assert [(c.pos, e.ref) for c, e in junction_calls(tie, panel, req)] == [(1010, "HPV16")]
    # another type at the same base, the same type 12 bp on or on the other strand: other junctions
    other = [_split(n, 1011, "HBV_2") for n in "xyz"]
    far = [_split(n, 1022, "HPV16_v2") for n in "uvw"]
    minus = [dataclasses.replace(_split(n, 1011, "HPV16_v2"), side="-") for n in "rst"]
    calls = junction_calls(evidence + other + far + minus, panel, req)
    assert sorted((c.side, c.pos, e.type) for c, e in calls) == [
        ("+", 1010, "HPV16"), ("+", 1011, "HBV"), ("+", 1022, "HPV16"), ("-", 1011, "HPV16")]


def _write_bam(path, records, header, index=True):
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for r in records:
            out.write(r)
    if index:
        pysam.index(str(path))


def test_bad_inputs_get_one_line_and_no_outputs(cli, tmp_path):
    with pysam.AlignmentFile(str(INT / "host.bam")) as fh:
        header = fh.header.to_dict()
        records = list(fh)
    out = tmp_path / "j.tsv"

    def fails(bam, message, host=HOST, code=1):
        res = cli("find-integrations", bam, "-R", host, "-o", out, "--vcf", tmp_path / "j.vcf")
        assert res.exit_code == code, res.stderr
        assert_one_error_line(res, message)
        assert not out.exists() and not (tmp_path / "j.vcf").exists()

    unsorted = dict(header, HD={"VN": "1.6", "SO": "unsorted"})
    _write_bam(tmp_path / "unsorted.bam", records, unsorted, index=False)
    fails(tmp_path / "unsorted.bam", "not sorted by coordinate (header says SO:unsorted)")
    # claims to be sorted, is not (an index of the sorted file beside it)
    _write_bam(tmp_path / "liar.bam", records[::-1], header, index=False)
    shutil.copy(INT / "host.bam.bai", tmp_path / "liar.bam.bai")
    fails(tmp_path / "liar.bam", "not sorted by coordinate at record ")
    shutil.copy(INT / "host.bam", tmp_path / "noindex.bam")
    fails(tmp_path / "noindex.bam", "no index")
    fails(INT / "host.bam", "does not match the header", host=DATA / "chr20_slice.fa.gz")
    fails(INT / "host.bam", "contig 20 is missing", host=DATA / "tracks" / "ref.fa.gz")
    _write_bam(tmp_path / "mapped.bam", [r for r in records if not r.is_unmapped], header)
    fails(tmp_path / "mapped.bam", "have no mate record")
    fails(tmp_path / "missing.bam", "no such file")
    # FASTQ with a mate missing
    r2 = tmp_path / "R2.fq"
    import gzip
    lines = gzip.open(INT / "R2.fq.gz", "rt").read().splitlines()
    r2.write_text("\n".join(lines[4:]) + "\n")
    res = cli("find-integrations", "--reads1", INT / "R1.fq.gz", "--reads2", r2, "-R", HOST, "-o", out)
    assert res.exit_code == 1 and not out.exists()
    assert_one_error_line(res, "do not hold the same pairs")
    res = cli("find-integrations", INT / "host.bam", "--reads1", INT / "R1.fq.gz", "--reads2", r2, "-R", HOST)
    assert res.exit_code == 2


def test_vcf_is_accepted_by_bcftools_when_installed(bam_run, tmp_path):
    import subprocess

    if shutil.which("bcftools") is None:
        pytest.skip("bcftools not installed (the benchmark checks it)")
    res = subprocess.run(["bcftools", "view", str(bam_run / "j.vcf")], capture_output=True, text=True)
    assert res.returncode == 0 and res.stderr == "" and "INT6" in res.stdout
    np.testing.assert_equal(res.stdout.count("\n20\t"), 6)
