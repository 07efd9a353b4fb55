"""Read inputs as pipelines hand them over (issue 14): named pipes and `<(process substitution)`,
which can be read only once, stdin, gzip through a pipe, and zero-length reads."""

import gzip
import json

import pytest

from conftest import DATA, assert_one_error_line, read_fastq, write_bam
from genointerp.io.kmer_dataset import open_kmer_dataset

READS = read_fastq(DATA / "tumor_small.fq.gz")[:24]


def fastq(records) -> bytes:
    return "".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in records).encode()


def fasta(records) -> bytes:
    return "".join(f">{n}\n{s}\n" for n, s, _ in records).encode()


FORMATS = {"fq": fastq(READS), "fq.gz": gzip.compress(fastq(READS)), "fa": fasta(READS)}


def test_classify_reads_reads_fastq_gzip_and_fasta_from_pipes_and_fifos(cli, pipe, tmp_path):
    (tmp_path / "r.fq").write_bytes(FORMATS["fq"])
    assert cli("-q", "classify-reads", tmp_path / "r.fq", "-o", tmp_path / "file.tsv").exit_code == 0
    expected = (tmp_path / "file.tsv").read_text()
    assert len(expected.splitlines()) == 25
    sources = {fmt: pipe(data) for fmt, data in FORMATS.items()}
    sources["fifo"] = pipe.fifo(tmp_path / "named.fq", FORMATS["fq.gz"])
    for what, path in sources.items():
        res = cli("-q", "classify-reads", path, "-o", tmp_path / f"{what}.tsv")
        assert res.exit_code == 0, (what, res.output)
        assert (tmp_path / f"{what}.tsv").read_text() == expected, what


def test_classify_reads_reads_gzip_from_stdin(cli, tmp_path):
    (tmp_path / "r.fq").write_bytes(FORMATS["fq"])
    assert cli("-q", "classify-reads", tmp_path / "r.fq", "-o", tmp_path / "file.tsv").exit_code == 0
    res = cli("-q", "classify-reads", "-", input=FORMATS["fq.gz"])
    assert res.exit_code == 0, res.output
    assert res.stdout == (tmp_path / "file.tsv").read_text()


def test_classify_reads_reads_bam_through_a_pipe(cli, pipe, tmp_path):
    bam = write_bam(tmp_path / "r.bam", READS, lambda i: i % 3 == 0)
    assert cli("-q", "classify-reads", bam, "--unmapped-only", "-o", tmp_path / "file.tsv").exit_code == 0
    res = cli("-q", "classify-reads", pipe(bam.read_bytes()), "--unmapped-only", "-o", tmp_path / "pipe.tsv")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "pipe.tsv").read_text() == (tmp_path / "file.tsv").read_text()
    assert len((tmp_path / "pipe.tsv").read_text().splitlines()) == 1 + 16


def test_kmerize_reads_pipes_and_a_truth_table_through_one(cli, pipe, tmp_path):
    (tmp_path / "r.fq").write_bytes(FORMATS["fq"])
    args = ["-k", 3, "--length", 60]
    assert cli("-q", "kmerize", tmp_path / "r.fq", *args, "--label-field", 0, "--tsv", tmp_path / "file.tsv").exit_code == 0
    expected = (tmp_path / "file.tsv").read_text()
    assert len(expected.splitlines()) > 20
    for fmt, data in FORMATS.items():
        res = cli("-q", "kmerize", pipe(data), *args, "--label-field", 0, "--tsv", tmp_path / f"{fmt}.tsv")
        assert res.exit_code == 0, (fmt, res.output)
        assert (tmp_path / f"{fmt}.tsv").read_text() == expected, fmt
    truth = "read_id\tlabel\n" + "".join(f"{n}\t{n.split('|')[0]}\n" for n, _, _ in READS)
    res = cli("-q", "kmerize", pipe(FORMATS["fq.gz"]), *args, "--truth", pipe(gzip.compress(truth.encode())),
              "--tsv", tmp_path / "truth.tsv")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "truth.tsv").read_text() == expected


def test_train_xvir_tokenises_fastq_from_a_pipe(cli, pipe, tmp_path):
    reads = read_fastq(DATA / "tumor_small.fq.gz")
    res = cli("-q", "train-xvir", pipe(gzip.compress(fastq(reads))), "-k", 4, "--length", 50, "--epochs", 1,
              "--d-model", 8, "--heads", 2, "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "m" / "config.json").read_text())["training"]["data"]
    assert data[0]["n_reads"] == sum(set(s[:50]) <= set("ACGT") for _, s, _ in reads)


STREAM_ERRORS = {
    "junk": (b"hello\nworld\n", "not FASTA, FASTQ or GenBank"),
    "empty": (b"", "file is empty"),
    "cut gzip": (gzip.compress(fastq(read_fastq(DATA / "tumor_small.fq.gz")))[:20000], "truncated or corrupt gzip data"),
    "cut record": (fastq(READS[:3]) + b"@last\nACGT\n", "record 4 (last): truncated FASTQ record (no quality line)"),
}


@pytest.mark.parametrize("case", list(STREAM_ERRORS))
@pytest.mark.parametrize("command", ["classify-reads", "kmerize"])
def test_bad_input_through_a_pipe_is_one_line_naming_it_and_leaves_nothing(case, command, cli, pipe, tmp_path):
    data, message = STREAM_ERRORS[case]
    path = pipe(data)
    extra = ["-o", tmp_path / "out.tsv"] if command == "classify-reads" else ["-k", 3, "--tsv", tmp_path / "out.tsv"]
    res = cli(command, path, *extra)
    assert res.exit_code == 1
    assert_one_error_line(res, f"{path}: ")
    assert_one_error_line(res, message)
    assert list(tmp_path.iterdir()) == []


def test_truncated_gzip_truth_table_is_one_line_naming_it(cli, tmp_path):
    (tmp_path / "r.fq").write_bytes(FORMATS["fq"])
    truth = tmp_path / "truth.tsv.gz"
    rows = "read_id\tlabel\n" + "".join(f"read{i}\tviral\n" for i in range(5000))
    truth.write_bytes(gzip.compress(rows.encode())[:3000])
    res = cli("kmerize", tmp_path / "r.fq", "--truth", truth, "-k", 3, "-o", tmp_path / "ds")
    assert res.exit_code == 1 and not (tmp_path / "ds").exists()
    assert_one_error_line(res, f"{truth}: truncated or corrupt gzip data")


def test_simulate_reads_reads_a_genbank_reference_from_a_pipe(cli, pipe, tmp_path):
    gb = (DATA / "hpv16.gb").read_bytes()
    assert cli("-q", "simulate-reads", "-s", f"v={DATA / 'hpv16.gb'}", "-n", 20, "-o", tmp_path / "file.fq").exit_code == 0
    res = cli("-q", "simulate-reads", "-s", f"v={pipe(gzip.compress(gb))}", "-n", 20, "-o", tmp_path / "pipe.fq")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "pipe.fq").read_bytes() == (tmp_path / "file.fq").read_bytes()


# --- zero-length reads (adapter trimming leaves them) ----------------------------------------------

EMPTY_FASTQ = fastq(READS[:2]) + b"@trimmed\n\n+\n\n" + fastq(READS[2:4])
EMPTY_FASTA = fasta(READS[:2]) + b">trimmed\n" + fasta(READS[2:4])


@pytest.mark.parametrize("data", [EMPTY_FASTQ, EMPTY_FASTA], ids=["fastq", "fasta"])
def test_classify_reads_reports_an_empty_read_too_short(data, cli, tmp_path):
    (tmp_path / "r.fq").write_bytes(data)
    res = cli("-q", "classify-reads", tmp_path / "r.fq", "-o", tmp_path / "o.tsv", "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    rows = (tmp_path / "o.tsv").read_text().splitlines()
    assert [r.split("\t")[0] for r in rows[1:]] == [n for n, _, _ in READS[:2]] + ["trimmed"] + [n for n, _, _ in READS[2:4]]
    assert rows[3] == "trimmed\t0\tNA\tNA\ttoo_short\t0\tnone\t0.00\tNA"
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["reads_total"] == 5
    assert summary["status_counts"] == {"scored": 4, "model_abstained": 0, "too_short": 1, "ambiguous": 0}


@pytest.mark.parametrize("policies", [[], ["--short", "pad", "--long", "tile"]])
def test_kmerize_drops_an_empty_read_with_a_count(policies, cli, tmp_path):
    (tmp_path / "r.fq").write_bytes(EMPTY_FASTQ)
    res = cli("kmerize", tmp_path / "r.fq", "-k", 3, "--length", 100, *policies, "-o", tmp_path / "ds")
    assert res.exit_code == 0, res.output
    ds = open_kmer_dataset(tmp_path / "ds")
    assert "trimmed" not in ds.read_ids() and ds.header["reads_in"] == 5
    assert ds.header["dropped"]["shorter_than_k"] == 1
    assert "1 shorter than k" in res.stderr
