"""kmerize through the CLI: datasets, policies, labels, counts and bad input."""

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import assert_one_error_line, read_fastq
from genointerp.io.kmer_dataset import open_kmer_dataset
from test_alphabet_kmers import naive_counts, naive_id


def write_fastq(path, records):
    text = "".join(f"@{n}\n{s}\n+\n{'I' * len(s)}\n" for n, s in records)
    if str(path).endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.fixture
def sim_reads(cli, data, tmp_path):
    out = tmp_path / "sim.fq.gz"
    res = cli("simulate-reads", "-s", f"viral={data / 'hpv4.fa'}", "-s", f"human={data / 'chr20_slice.fa.gz'}",
              "-n", 400, "--balance", "--circular", "viral", "-o", out, "--truth", tmp_path / "sim.tsv")
    assert res.exit_code == 0
    return out


def test_dataset_from_simulated_reads_matches_a_per_read_loop(cli, sim_reads, tmp_path):
    res = cli("kmerize", sim_reads, "--label-field", 0, "-o", tmp_path / "ds", "--tsv", tmp_path / "ds.tsv")
    assert res.exit_code == 0, res.output
    ds = open_kmer_dataset(tmp_path / "ds")
    reads = [(n, s) for n, s, _ in read_fastq(sim_reads) if set(s) <= set("ACGT")]
    assert ds.header["k"] == 6 and ds.header["n_tokens"] == 145 and ds.header["vocab_size"] == 4096
    assert ds.header["labels"] == ["human", "viral"]
    assert ds.tokens.dtype == np.uint16 and ds.tokens.shape == (len(reads), 145)
    assert ds.read_ids() == [n for n, _ in reads]
    for row, (name, seq) in zip(ds.tokens[:50], reads):
        assert row.tolist() == [naive_id(seq[i : i + 6]) for i in range(145)]
    assert ds.labels.tolist() == [ds.header["labels"].index(n.split("|")[0]) for n, _ in reads]
    assert ds.header["reads_in"] == 400 and ds.header["n_reads"] + ds.header["dropped"]["ambiguous_bases"] == 400
    tsv = (tmp_path / "ds.tsv").read_text().splitlines()
    assert tsv[0] == "read_id\tlabel\ttokens"
    assert tsv[1].split("\t")[2].split() == [str(t) for t in ds.tokens[0]]


def test_labels_from_truth_table_and_per_file(cli, sim_reads, data, tmp_path):
    res = cli("kmerize", sim_reads, "--truth", tmp_path / "sim.tsv", "-o", tmp_path / "a")
    assert res.exit_code == 0, res.output
    a = open_kmer_dataset(tmp_path / "a")
    assert a.header["label_counts"]["viral"] > 150
    f1 = write_fastq(tmp_path / "v.fq", [("r1", "ACGTACGTAC"), ("r2", "TTTTTTTTTT")])
    f2 = write_fastq(tmp_path / "h.fq.gz", [("r3", "GGGGGCCCCC")])
    res = cli("kmerize", f1, f2, "--label", "viral", "--label", "human", "--length", 10, "-k", 3, "-o", tmp_path / "b")
    assert res.exit_code == 0, res.output
    b = open_kmer_dataset(tmp_path / "b")
    assert b.header["labels"] == ["human", "viral"] and b.labels.tolist() == [1, 1, 0]


def test_label_sep_splits_read_names_on_another_character(cli, tmp_path):
    # '|' inside a field must not split once --label-sep is ':'
    fq = write_fastq(tmp_path / "r.fq", [("s1:viral", "ACGTACGT"), ("s|2:human", "TTTTGGGG"), ("s3:viral", "CCCCAAAA")])
    res = cli("kmerize", fq, "--label-sep", ":", "--label-field", 1, "-k", 3, "--length", 8, "-o", tmp_path / "ds")
    assert res.exit_code == 0, res.output
    ds = open_kmer_dataset(tmp_path / "ds")
    assert ds.header["labels"] == ["human", "viral"] and ds.labels.tolist() == [1, 0, 1]

def test_unlabelled_reads_from_stdin(tmp_path):
    # pysam reads file descriptor 0 itself, so this needs a real process and pipe
    fq = "@a\nACGTAC\n+\nIIIIII\n@b\nTTTTTT\n+\nIIIIII\n"
    cmd = [sys.executable, "-m", "genointerp", "kmerize", "-", "-k", "2", "--length", "6", "-o", str(tmp_path / "ds")]
    res = subprocess.run(cmd, input=fq, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    ds = open_kmer_dataset(tmp_path / "ds")
    assert ds.labels.tolist() == [-1, -1] and ds.header["unlabelled"] == 2
    assert ds.tokens[1].tolist() == [15] * 5


def test_length_and_n_policies(cli, tmp_path):
    reads = [("long", "ACGTACGTACGTAC"), ("short", "ACGTAC"), ("withN", "ACGTNCGTAC"), ("tiny", "AC"), ("ok", "acgtacgtac")]
    fq = write_fastq(tmp_path / "r.fq", reads)
    res = cli("kmerize", fq, "-k", 3, "--length", 10, "-o", tmp_path / "drop")
    assert res.exit_code == 0, res.output
    d = open_kmer_dataset(tmp_path / "drop")
    assert d.read_ids() == ["long", "ok"]  # truncated long read kept; short, N and tiny dropped
    assert d.tokens[1].tolist() == [naive_id("ACGTACGTAC"[i : i + 3]) for i in range(8)]  # lower case = upper
    assert d.header["dropped"] == {"ambiguous_bases": 1, "shorter_than_k": 1, "shorter_than_length": 1}

    res = cli("kmerize", fq, "-k", 3, "--length", 10, "--short", "pad", "--long", "tile", "--n-policy", "token",
              "-o", tmp_path / "keep")
    assert res.exit_code == 0, res.output
    k = open_kmer_dataset(tmp_path / "keep")
    assert k.read_ids() == ["long#0", "long#1", "short", "withN", "ok"]
    assert k.header["vocab_size"] == 66
    assert k.tokens[1].tolist() == [naive_id("GTA"), naive_id("TAC")] + [65] * 6  # tile of 4 bases, padded
    assert k.tokens[3].tolist()[2:5] == [64, 64, 64]  # windows holding the N


def test_counts_match_a_naive_count(cli, sim_reads, tmp_path):
    seqs = [s for _, s, _ in read_fastq(sim_reads)]
    for extra, canonical in (([], False), (["--canonical"], True)):
        out = tmp_path / f"c{canonical}.tsv"
        res = cli("kmerize", sim_reads, "--counts", out, "--count-k", 5, *extra)
        assert res.exit_code == 0, res.output
        got = dict(line.split("\t") for line in out.read_text().splitlines())
        assert {k: int(v) for k, v in got.items()} == naive_counts(seqs, 5, canonical)


def test_same_input_same_bytes(cli, sim_reads, tmp_path):
    for name in ("a", "b"):
        assert cli("kmerize", sim_reads, "--label-field", 0, "-o", tmp_path / name).exit_code == 0
    for f in ("tokens.npy", "labels.npy", "read_ids.txt", "header.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


BAD = {
    "truncated.fq": b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n",
    "mismatch.fq": b"@r1\nACGT\n+\nIII\n",
    "empty.fq": b"",
    "noreads.fa": b"\n\n",
    "notdna.fq": b"hello\nworld\n",
    "badletter.fq": b"@r1\nAC-T\n+\nIIII\n",
    "fake.fq.gz": b"@r1\nACGT\n+\nIIII\n",
    "broken.fq.gz": gzip.compress(b"@r1\nACGT\n+\nIIII\n" * 200)[:50],
}
MESSAGES = {
    "truncated.fq": "record 2 (r2): truncated FASTQ record",
    "mismatch.fq": "malformed fastq",
    "empty.fq": "file is empty",
    "noreads.fa": "file is empty",
    "notdna.fq": "not FASTA, FASTQ or GenBank",
    "badletter.fq": "badletter.fq: record 1 (r1): position 3: '-' is not a nucleotide letter",
    "fake.fq.gz": "not gzip-compressed",
    "broken.fq.gz": "truncated or corrupt gzip data",
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_reads_fail_with_one_line_and_no_output(cli, tmp_path, name):
    src = tmp_path / name
    src.write_bytes(BAD[name])
    res = cli("kmerize", src, "-k", 2, "--length", 4, "-o", tmp_path / "ds", "--counts", tmp_path / "c.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, MESSAGES[name])
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_fasta_without_records_and_all_reads_dropped(cli, tmp_path):
    fa = tmp_path / "r.fa"
    fa.write_text(">a\nACGTNNACGT\n")
    res = cli("kmerize", fa, "-k", 2, "--length", 10, "-o", tmp_path / "ds")
    assert res.exit_code == 1
    assert_one_error_line(res, "no reads left to tokenise")
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("args", [["-k", 8], ["-k", 0], ["--counts", "c.tsv", "--count-k", 32], [],
                                  ["--label", "a", "--label", "b", "-o", "x"], ["-o", "-"], ["--tsv", "-", "--counts", "-"]])
def test_usage_errors_exit_2(cli, tmp_path, args):
    fq = write_fastq(tmp_path / "r.fq", [("r", "ACGTACGT")])
    res = cli("kmerize", fq, *[str(tmp_path / a) if a in ("c.tsv", "x") else a for a in args])
    assert res.exit_code == 2


def test_missing_read_in_truth_table(cli, tmp_path):
    fq = write_fastq(tmp_path / "r.fq", [("r", "ACGTACGT")])
    truth = tmp_path / "t.tsv"
    truth.write_text("read_id\tlabel\nother\tviral\n")
    res = cli("kmerize", fq, "--truth", truth, "-k", 2, "--length", 8, "-o", tmp_path / "ds")
    assert res.exit_code == 1
    assert_one_error_line(res, "read r is not in the truth table")


def test_header_json_is_valid_and_describes_the_convention(cli, sim_reads, tmp_path):
    assert cli("kmerize", sim_reads, "-o", tmp_path / "ds").exit_code == 0
    header = json.loads((tmp_path / "ds" / "header.json").read_text())
    assert header["token_convention"].startswith("A=0,C=1,G=2,T=3; first base most significant")
    assert header["special_tokens"] == {"unknown": 4096, "pad": 4097}


def test_tsv_to_stdout(cli, tmp_path):
    fq = write_fastq(tmp_path / "r.fq", [("r1", "ACGTA"), ("r2", "TTTTT")])
    res = cli("-q", "kmerize", fq, "-k", 4, "--length", 5, "--label", "x", "--tsv", "-")
    assert res.exit_code == 0
    assert res.stdout.splitlines() == ["read_id\tlabel\ttokens", f"r1\tx\t{naive_id('ACGT')} {naive_id('CGTA')}", "r2\tx\t255 255"]


def test_empty_label_sep_is_a_usage_error(cli, tmp_path):
    fq = write_fastq(tmp_path / "r.fq", [("a|viral", "ACGTACGT")])
    res = cli("kmerize", fq, "--label-field", 1, "--label-sep", "", "-k", 3, "--length", 8, "-o", tmp_path / "ds")
    assert res.exit_code == 2 and not (tmp_path / "ds").exists()
    assert "--label-sep" in res.stderr and "cannot be empty" in res.stderr and "Traceback" not in res.output
