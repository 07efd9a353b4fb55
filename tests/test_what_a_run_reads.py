"""The third reliability sweep (issue 39), the defects that are not signals: every file a run reads
is safe from its outputs however they are spelt, text and numbers that no output can hold are
refused, outputs are whole and of one format, and messages say what the user must do.

Each test names the sweep's item it holds; the rules behind them live in one place each
(genointerp.io.atomic and genointerp.io.paths for paths, genointerp.job.check_values for values)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pysam
import pytest

from conftest import DATA, assert_one_error_line, read_fastq

READS = DATA / "tumor_small.fq.gz"
INT = DATA / "integrations"
BUILTIN = Path(__file__).resolve().parent.parent / "genointerp" / "resources" / "models" / "xvir_hpv"
GENOINTERP = [sys.executable, "-m", "genointerp"]


@pytest.fixture
def model(tmp_path) -> Path:
    """A user's copy of the built-in viral model folder."""
    return Path(shutil.copytree(BUILTIN, tmp_path / "mymodel"))


def _unchanged(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# --- 1. an output inside an input folder never replaces a file the run reads ----------------------

@pytest.mark.parametrize("spelling", ["mymodel/config.json", "./mymodel/../mymodel/config.json"])
def test_an_output_cannot_replace_a_file_inside_an_input_folder(cli, model, tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    before = _unchanged(model)
    res = cli("classify-reads", READS, "-m", "mymodel", "-o", "c.tsv", "--summary", spelling, "--force")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "inside the input folder mymodel")
    assert _unchanged(model) == before and not (tmp_path / "c.tsv").exists()


def test_a_file_an_input_folder_links_to_is_read_too(cli, model, tmp_path, monkeypatch):
    """The folder's config.json is a link to a file elsewhere: that file is what the run reads."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shared-config.json").write_bytes((model / "config.json").read_bytes())
    (model / "config.json").unlink()
    (model / "config.json").symlink_to(tmp_path / "shared-config.json")
    res = cli("classify-reads", READS, "-m", "mymodel", "-o", "shared-config.json", "--force")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "inside the input folder mymodel")


def test_a_hard_link_to_an_input_is_the_input(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(READS, "reads.fq.gz")
    os.link("reads.fq.gz", "other-name.fq.gz")
    res = cli("kmerize", "reads.fq.gz", "-k", "3", "--length", "50", "--tsv", "other-name.fq.gz", "--force")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "which this run reads")


def test_an_output_inside_another_output_folder_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli("kmerize", READS, "-k", "3", "--length", "50", "-o", "km", "--counts", "km/counts.tsv")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "inside the output folder km")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["train-tracks", "evaluate-tracks"])
def test_a_track_a_targets_table_names_is_an_input(cli, tmp_path, monkeypatch, command):
    """The bigWig and bedGraph files listed in --targets are read by the run: no output replaces them."""
    monkeypatch.chdir(tmp_path)
    tracks = Path(shutil.copytree(DATA / "tracks", tmp_path / "tracks"))
    before = (tracks / "motif_b.bedgraph.gz").read_bytes()
    common = ["-R", tracks / "ref.fa.gz", "--targets", tracks / "targets.tsv", "--regions", tracks / "regions.bed"]
    model = ["-m", BUILTIN] if command == "evaluate-tracks" else []  # refused before the model is read
    res = cli(command, *model, *common, "-o", "tracks/motif_b.bedgraph.gz", "--force")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "which this run reads")
    assert (tracks / "motif_b.bedgraph.gz").read_bytes() == before


# --- 2. files read implicitly (indexes) are inputs ------------------------------------------------

@pytest.fixture
def integrations(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("host.fa", "host.fa.fai", "host.bam", "host.bam.bai", "hbv.fa"):
        shutil.copy(INT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("index", ["host.fa.fai", "host.bam.bai", "host.bai", "host.fa.gzi"])
def test_an_output_cannot_replace_an_index_read_beside_an_input(cli, integrations, index):
    before = {p.name: p.read_bytes() for p in integrations.iterdir()}
    res = cli("find-integrations", "host.bam", "-R", "host.fa", "-o", index, "--force")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "the index of the input")
    assert {p.name: p.read_bytes() for p in integrations.iterdir()} == before


def test_a_reference_index_is_safe_from_simulate_reads(cli, integrations):
    res = cli("simulate-reads", "-s", "viral=hbv.fa", "-n", "10", "-o", "hbv.fa.fai")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "hbv.fa.fai: output would replace")


# --- 13. find-integrations checks its outputs before the scan --------------------------------------

def test_find_integrations_refuses_an_existing_output_before_reading_the_bam(cli, integrations):
    """The BAM is cut in half: reading it fails, but only after the output check, which must come first."""
    whole = Path("host.bam").read_bytes()
    Path("host.bam").write_bytes(whole[: len(whole) // 2])
    Path("junctions.tsv").write_text("mine\n")
    res = cli("find-integrations", "host.bam", "-R", "host.fa", "-o", "junctions.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, "junctions.tsv: output exists")
    assert Path("junctions.tsv").read_text() == "mine\n"


# --- 7. two inputs that are one file -------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["./R1.fq.gz", "link.fq.gz", "hard.fq.gz", "-"])
def test_paired_reads_must_be_two_files_however_spelt(cli, tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    shutil.copy(INT / "R1.fq.gz", "R1.fq.gz")
    os.symlink("R1.fq.gz", "link.fq.gz")
    os.link("R1.fq.gz", "hard.fq.gz")
    first = "/dev/stdin" if spelling == "-" else "R1.fq.gz"
    res = cli("find-integrations", "--reads1", first, "--reads2", spelling, "-R", INT / "host.fa", "-o", "j.tsv")
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "--reads2: --reads1 and --reads2 name the same file")
    assert not Path("j.tsv").exists()


# --- 6. two outputs to stdout, however spelt --------------------------------------------------------

@pytest.mark.parametrize("first, second", [("-", "/dev/stdout"), ("/dev/fd/1", "/dev/stdout"), ("-", "/proc/self/fd/1")])
def test_two_outputs_to_stdout_are_refused_however_spelt(first, second, tmp_path):
    res = subprocess.run([*GENOINTERP, "kmerize", str(READS), "-k", "3", "--length", "50", "--tsv", first,
                          "--counts", second], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert "only one output can be - (stdout)" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_two_outputs_into_one_pipe_are_refused(tmp_path):
    """`--tsv /dev/fd/3 --counts /dev/fd/4` where 3 and 4 are one pipe: the rows would interleave."""
    read, write = os.pipe()
    other = os.dup(write)
    try:
        res = subprocess.run([*GENOINTERP, "kmerize", str(READS), "-k", "3", "--length", "50", "--tsv",
                              f"/dev/fd/{write}", "--counts", f"/dev/fd/{other}"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120, pass_fds=(write, other))
    finally:
        for fd in (read, write, other):
            os.close(fd)
    assert res.returncode == 2, res.stderr
    assert "names the same file" in res.stderr


def test_dev_null_takes_any_number_of_outputs(cli, tmp_path):
    res = cli("kmerize", READS, "-k", "3", "--length", "50", "--tsv", "/dev/null", "--counts", "/dev/null")
    assert res.exit_code == 0, res.output


# --- 4, 5. values no output can hold ---------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["classify-reads", READS, "--sample", "tumor\t1", "--report", "r.tsv"], "--sample"),
    (["classify-reads", READS, "--sample", "tumor\n1", "--multiqc", "m_mqc.tsv"], "--sample"),
    (["simulate-reads", "-s", f"vi\tral={DATA / 'hpv4.fa'}", "-n", "10", "-o", "s.fq"], "--source"),
    (["train-xvir", READS, "--positive", "vi\rral", "-o", "m"], "--positive"),
    (["classify-reads", READS, "-o", "calls\n.tsv"], "--output"),
])
def test_text_with_a_control_character_is_refused(cli, tmp_path, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    res = cli(*args)
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "holds the control character")
    assert option in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_text_that_is_not_utf8_is_refused(tmp_path):
    """Bytes that are not UTF-8 in an option (a Latin-1 sample name) cannot be written to any output."""
    res = subprocess.run([*GENOINTERP, "classify-reads", str(READS), "--sample", b"tum\xf6r".decode("utf-8", "surrogateescape"),
                          "--report", "r.tsv"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "--sample: " in res.stderr and "not UTF-8 text" in res.stderr and "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, option", [
    (["classify-reads", READS, "--host-genome-size", "inf", "--report", "r.tsv"], "--host-genome-size"),
    (["classify-reads", READS, "--host-genome-size", "Infinity", "--summary", "s.json"], "--host-genome-size"),
    (["simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-n", "10", "--sub-rate", "inf", "-o", "s.fq"], "--sub-rate"),
])
def test_a_number_that_is_not_finite_is_refused(cli, tmp_path, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    res = cli(*args)
    assert res.exit_code == 2, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error:")]
    assert len(errors) == 1 and errors[0].startswith(f"genointerp: error: {option}: "), res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_range_error_names_the_option_first(cli):
    res = cli("classify-reads", READS, "--host-genome-size", "0.5")
    assert res.exit_code == 2
    assert_one_error_line(res, "genointerp: error: --host-genome-size: ")
    assert "Invalid value" not in res.stderr


def test_check_values_reads_every_field_of_any_request():
    """The rule is the request's, not the CLI's: a library caller gets it too, inside pairs and dicts."""
    from dataclasses import dataclass, field

    from genointerp.errors import UsageError
    from genointerp.job import check_values

    @dataclass
    class Request:
        sample: str = "ok"
        pairs: list = field(default_factory=list)
        weights: dict = field(default_factory=dict)
        rate: float | None = None

    check_values(Request(pairs=[("viral", "x.fa")], weights={"human": 0.5}))
    for bad, option in ((Request(sample="a\nb"), "--sample"), (Request(pairs=[("vi\tral", "x.fa")]), "--pairs"),
                        (Request(weights={"human": float("nan")}), "--weights"), (Request(rate=float("-inf")), "--rate")):
        with pytest.raises(UsageError, match=f"^{option}: "):
            check_values(bad)


# --- 3. BAM records without qualities -------------------------------------------------------------

def test_bam_records_without_qualities_still_give_one_fastq(cli, tmp_path):
    """Half the records have QUAL '*': --viral-out must still be FASTQ throughout (Phred 1 where the
    BAM has none, as samtools fastq writes), never a mix of FASTQ and FASTA records."""
    records = read_fastq(READS)
    bam = tmp_path / "u.bam"
    with pysam.AlignmentFile(str(bam), "wb", header={"HD": {"VN": "1.6"}, "SQ": [{"SN": "20", "LN": 1000}]}) as out:
        for i, (name, seq, qual) in enumerate(records):
            a = pysam.AlignedSegment()
            a.query_name, a.query_sequence, a.flag = name, seq, 4
            if i % 2:
                a.query_qualities = pysam.qualitystring_to_array(qual)
            out.write(a)
    res = cli("-q", "classify-reads", bam, "-o", tmp_path / "c.tsv", "--viral-out", tmp_path / "v.fq")
    assert res.exit_code == 0, res.output
    text = (tmp_path / "v.fq").read_text()
    assert ">" not in text
    viral = read_fastq(tmp_path / "v.fq")
    by_name = {name: (seq, qual) for name, seq, qual in records}
    assert len(viral) == 40  # the 40 HPV reads of the bundled sample, as from the FASTQ
    for name, seq, qual in viral:
        index = next(i for i, r in enumerate(records) if r[0] == name)
        assert seq == by_name[name][0]
        assert qual == (by_name[name][1] if index % 2 else '"' * len(seq))


# --- 8. a bgzipped, indexable VCF --------------------------------------------------------------------

def test_a_gz_vcf_is_bgzf_and_its_index_is_offered(cli, integrations):
    from genointerp.io.inputs import compression

    res = cli("-q", "find-integrations", "host.bam", "-R", "host.fa", "--viral-refs", "hbv.fa", "-o", "j.tsv",
              "--vcf", "j.vcf.gz", "--index-vcf")
    assert res.exit_code == 0, res.output
    assert compression("j.vcf.gz") == "BGZF" and Path("j.vcf.gz.tbi").stat().st_size > 0
    rows = Path("j.tsv").read_text().splitlines()[1:]
    with pysam.VariantFile("j.vcf.gz") as vcf:  # fetch reads the .tbi
        fetched = [rec.id for contig in vcf.header.contigs for rec in vcf.fetch(contig)]
    ids = [row.split("\t")[0] for row in rows]
    # every breakend, host and viral, is found through the index
    assert sorted(fetched) == sorted([f"{i}_host" for i in ids] + [f"{i}_virus" for i in ids]) and fetched
    assert fetched[:len(ids)] == [f"{i}_host" for i in ids]  # the host contig comes first


@pytest.mark.parametrize("vcf", [None, "j.vcf", "-"])
def test_index_vcf_needs_a_bgzipped_vcf_file(cli, integrations, vcf):
    res = cli("find-integrations", "host.bam", "-R", "host.fa", "-o", "j.tsv", "--index-vcf",
              *(["--vcf", vcf] if vcf else []))
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "--index-vcf: needs --vcf naming a file that ends in .gz")


def test_every_gz_output_is_bgzf(cli, tmp_path):
    from genointerp.io.inputs import compression

    res = cli("kmerize", READS, "-k", "3", "--length", "50", "--tsv", tmp_path / "t.tsv.gz")
    assert res.exit_code == 0, res.output
    assert compression(tmp_path / "t.tsv.gz") == "BGZF"


# --- 12. a CRAM whose reference is not at hand -------------------------------------------------------

def test_a_cram_without_its_reference_says_to_pass_reference(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("REF_PATH", str(tmp_path / "no-such-folder"))  # nor a cache or a server to ask
    monkeypatch.setenv("REF_CACHE", str(tmp_path / "no-such-folder"))
    ref = Path(shutil.copy(INT / "host.fa", tmp_path / "gone.fa"))
    with pysam.AlignmentFile(str(INT / "host.bam")) as bam, \
            pysam.AlignmentFile(str(tmp_path / "x.cram"), "wc", template=bam, reference_filename=str(ref)) as cram:
        for rec in bam.fetch(until_eof=True):
            cram.write(rec)
    ref.unlink()
    Path(f"{ref}.fai").unlink(missing_ok=True)
    res = cli("classify-reads", tmp_path / "x.cram", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, "cannot decode this CRAM without its reference: pass --reference FASTA")
    assert "truncated" not in res.stderr  # htslib's words for it: they would send a user to fetch a good file again
    # a --reference that is not there is named as missing (issue 61), for a BAM too
    for reads in (tmp_path / "x.cram", INT / "host.bam"):
        res = cli("classify-reads", reads, "--reference", tmp_path / "nope.fa", "-o", tmp_path / "c.tsv")
        assert res.exit_code == 1
        assert_one_error_line(res, f"--reference {tmp_path / 'nope.fa'}: no such file")
        assert "truncated" not in res.stderr
    assert not (tmp_path / "c.tsv").exists()
