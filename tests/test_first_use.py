"""What a new user tripped over (issue 61, "found as a new user would"): the kraken-style report of
an --unmapped-only run, options that did nothing, messages in a library's words, a huge genome
size and ism's negative zero. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line

LOAD = DATA / "viral_load"
INT = DATA / "integrations"
SLICE = 100_000


def test_the_kraken_report_of_unmapped_reads_counts_the_host_reads_left_out(cli, tmp_path):
    """--unmapped-only classifies the 632 unmapped (viral) reads of sample.bam; the 2,000 mapped
    host reads it leaves out are unclassified reads of the sample (counted from the BAM index, as
    for the load), so the report gives the FASTQ run's 24.01 % viral, not 100 %."""
    for name, args in (("fq", [LOAD / "sample.fq.gz"]), ("bam", [LOAD / "sample.bam", "--unmapped-only"])):
        res = cli("-q", "classify-reads", *args, "-o", tmp_path / f"{name}.tsv", "--host-genome-size", SLICE,
                  "--kraken-report", tmp_path / f"{name}.kreport")
        assert res.exit_code == 0, res.output
    fq, bam = ((tmp_path / f"{n}.kreport").read_text() for n in ("fq", "bam"))
    assert fq.splitlines()[0] == " 75.99\t2000\t2000\tU\t0\tunclassified"
    assert bam == fq


def test_unmapped_only_on_reads_that_are_not_an_alignment_file_is_a_usage_error(cli, tmp_path, pipe):
    fastq = (LOAD / "sample.fq.gz").read_bytes()
    for given in (LOAD / "sample.fq.gz", pipe(fastq)):
        res = cli("classify-reads", given, "--unmapped-only", "-o", tmp_path / "c.tsv")
        assert res.exit_code == 2, res.output
        assert_one_error_line(res, "--unmapped-only: ")
        assert "is FASTQ, not BAM/CRAM" in res.stderr
        assert not (tmp_path / "c.tsv").exists()


def _png(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


@pytest.mark.parametrize("command, expected", [
    (["find-integrations", "{reads}", "--reference", str(INT / "host.fa"), "-o", "{out}"], "not a BAM/CRAM file (it holds FASTQ)"),
    (["score-variants", "{reads}", "--fasta", str(DATA / "chr20_slice.fa.gz"), "-o", "{out}", "--device", "cpu"],
     "not a readable VCF/BCF (it holds FASTQ)"),
    (["classify-reads", "{png}", "-o", "{out}"], "not FASTA, FASTQ or GenBank (it holds a PNG image)"),
    (["find-integrations", "{png}", "--reference", str(INT / "host.fa"), "-o", "{out}"], "not a BAM/CRAM file (it holds a PNG image)"),
])
def test_a_file_of_the_wrong_kind_is_named_in_plain_words(cli, tmp_path, command, expected):
    """One line naming the file and what was expected, without the library's internals
    (check_sq=False, invalid file b'...' (mode=b'r')) or the file's raw bytes."""
    png = _png(tmp_path / "plot.png")
    args = [a.format(reads=INT / "R1.fq.gz", png=png, out=tmp_path / "o.tsv") for a in command]
    res = cli(*args)
    assert res.exit_code == 1, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error:")]
    assert len(errors) == 1 and expected in errors[0] and str(args[1]) in errors[0], res.stderr
    assert "Traceback" not in res.output  # (a warning about an option's old spelling may stand beside it)
    for internal in ("check_sq", "mode=", "b'", "\\x", "invalid file"):
        assert internal not in res.stderr, res.stderr
    assert not (tmp_path / "o.tsv").exists()


@pytest.mark.parametrize("value", ["1e308", "1e13"])
def test_a_host_genome_size_past_any_genome_is_refused(cli, tmp_path, value):
    from genointerp.errors import UsageError
    from genointerp.job import execute
    from genointerp.viral.classify.job import run
    from genointerp.viral.classify.request import ClassifyRequest

    res = cli("classify-reads", LOAD / "sample.fq.gz", "--host-genome-size", value, "--report", tmp_path / "r.tsv",
              "-o", tmp_path / "c.tsv")
    assert res.exit_code == 2
    assert_one_error_line(res, "--host-genome-size: ")
    with pytest.raises(UsageError, match="--host-genome-size"):  # the bound is the request's: a library caller's too
        execute(run, ClassifyRequest([str(LOAD / "sample.fq.gz")], output=str(tmp_path / "c.tsv"),
                                     host_genome_size=float(value)))
    assert list(tmp_path.iterdir()) == []


def test_ism_never_writes_negative_zero():
    import io

    from genointerp.tracks.ism import write_rows

    tsv, bases = io.StringIO(), io.StringIO()
    eff = np.array([[[-0.0], [0.0], [-1e-30]]])  # (1 base, 3 alternatives, 1 track)
    write_rows(tsv, bases, "chr1", np.array([9]), np.array([0]), eff, np.array([[-0.0]]), np.array([[-0.0]]), ["t"])
    cells = [line.split("\t")[-1] for line in tsv.getvalue().splitlines()] + \
        bases.getvalue().strip().split("\t")[-2:]
    assert cells == ["0", "0", "-1e-30", "0", "0"]
