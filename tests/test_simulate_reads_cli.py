"""simulate-reads through the CLI on test-data genomes."""

import gzip

import numpy as np
import pytest

from conftest import assert_one_error_line, read_fastq, reference
from genointerp.seq.alphabet import encode, reverse_complement_codes


def simulate(cli, tmp_path, *extra, name="r.fq"):
    out = tmp_path / name
    res = cli("simulate-reads", *extra, "-o", out)
    return res, out


def test_truth_names_and_table_agree_with_the_reference(cli, data, tmp_path):
    res, out = simulate(
        cli, tmp_path, "-s", f"viral={data / 'hpv4.fa'}", "-s", f"human={data / 'chr20_slice.fa.gz'}",
        "-n", 600, "--balance", "--circular", "viral", "--read-ins-rate", 0, "--read-del-rate", 0,
        "--truth", tmp_path / "t.tsv",
    )
    assert res.exit_code == 0, res.output
    refs = {**reference(data / "hpv4.fa"), **reference(data / "chr20_slice.fa.gz")}
    reads = read_fastq(out)
    rows = (tmp_path / "t.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["read_id", "label", "contig", "start", "end", "strand", "mate", "errors"]
    assert len(reads) == len(rows) - 1 == 600
    labels = []
    for (name, seq, qual), row in zip(reads, rows[1:]):
        f = row.split("\t")
        assert f[0] == name
        label, serial, contig, start, end, strand, errors = name.split("|")
        assert [label, contig, start, end, strand, errors] == [f[1], f[2], f[3], f[4], f[5], f[7]]
        assert len(seq) == len(qual) == 150
        ref = refs[contig]
        letters = "".join(ref[i % len(ref)] for i in range(int(start), int(end)))
        window = encode(letters)
        comparable = np.isin(np.frombuffer(letters.encode(), np.uint8), list(b"ACGTN"))
        if strand == "-":
            window, comparable = reverse_complement_codes(window), comparable[::-1]
        mismatches = (np.frombuffer(b"ACGTN", np.uint8)[window] != np.frombuffer(seq.encode(), np.uint8)) & comparable
        # HPV142's IUPAC letter was resolved to a random base: only exact where all are comparable
        if comparable.all():
            assert int(mismatches.sum()) == int(errors)
        else:
            assert int(mismatches.sum()) <= int(errors) + 1
        labels.append(label)
    assert labels.count("viral") == labels.count("human") == 300
    assert [int(n.split("|")[1]) for n, _, _ in reads] == list(range(600))


def test_same_seed_gives_byte_identical_gzip_output(cli, data, tmp_path):
    args = ["-s", f"viral={data / 'hpv4.fa'}", "-n", 300, "--paired", "--seed", 7]
    simulate(cli, tmp_path, *args, "--output2", tmp_path / "a2.fq.gz", name="a1.fq.gz")
    simulate(cli, tmp_path, *args, "--output2", tmp_path / "b2.fq.gz", name="b1.fq.gz")
    assert (tmp_path / "a1.fq.gz").read_bytes() == (tmp_path / "b1.fq.gz").read_bytes()
    assert (tmp_path / "a2.fq.gz").read_bytes() == (tmp_path / "b2.fq.gz").read_bytes()
    simulate(cli, tmp_path, "-s", f"viral={data / 'hpv4.fa'}", "-n", 300, "--paired", "--seed", 8,
             "--output2", tmp_path / "c2.fq.gz", name="c1.fq.gz")
    assert (tmp_path / "a1.fq.gz").read_bytes() != (tmp_path / "c1.fq.gz").read_bytes()


def test_paired_mates_share_names_and_face_each_other(cli, data, tmp_path):
    res, out = simulate(cli, tmp_path, "-s", f"v={data / 'hpv4.fa'}", "-n", 200, "--paired",
                        "--circular", "v", "--output2", tmp_path / "r2.fq", "--truth", tmp_path / "t.tsv")
    assert res.exit_code == 0, res.output
    r1, r2 = read_fastq(out), read_fastq(tmp_path / "r2.fq")
    assert [n[:-2] for n, _, _ in r1] == [n[:-2] for n, _, _ in r2]
    assert all(n.endswith("/1") for n, _, _ in r1) and all(n.endswith("/2") for n, _, _ in r2)
    rows = [r.split("\t") for r in (tmp_path / "t.tsv").read_text().splitlines()[1:]]
    assert [r[6] for r in rows[:4]] == ["1", "2", "1", "2"]
    assert all(a[5] != b[5] for a, b in zip(rows[::2], rows[1::2]))  # opposite strands


def test_interleaved_pairs_to_stdout(cli, data):
    res = cli("-q", "simulate-reads", "-s", f"v={data / 'hpv4.fa'}", "-n", 5, "--paired", "-o", "-")
    assert res.exit_code == 0
    names = res.stdout.splitlines()[::4]
    assert len(names) == 10 and names[0].endswith("/1") and names[1].endswith("/2")


def test_fraction_gives_a_tumour_like_mixture(cli, data, tmp_path):
    res, out = simulate(cli, tmp_path, "-s", f"viral={data / 'hpv4.fa'}", "-s", f"human={data / 'chr20_slice.fa.gz'}",
                        "-n", 1000, "--fraction", "viral=0.01")
    assert res.exit_code == 0
    labels = [n.split("|")[0] for n, _, _ in read_fastq(out)]
    assert labels.count("viral") == 10 and labels.count("human") == 990


def test_count_per_label_and_genbank_input(cli, data, tmp_path):
    res, out = simulate(cli, tmp_path, "-s", f"viral={data / 'hpv16.gb'}", "-s", f"human={data / 'chr20_slice.fa.gz'}",
                        "--count", "viral=7", "--count", "human=3")
    assert res.exit_code == 0, res.output
    reads = read_fastq(out)
    assert sorted(n.split("|")[0] for n, _, _ in reads) == ["human"] * 3 + ["viral"] * 7
    assert {n.split("|")[2] for n, _, _ in reads if n.startswith("viral")} == {"HPV16.1"}


def test_augmentation_raises_mismatches_to_the_reference(cli, data, tmp_path):
    common = ["-s", f"v={data / 'hpv4.fa'}", "-n", 300, "--circular", "v", "--read-ins-rate", 0, "--read-del-rate", 0]
    simulate(cli, tmp_path, *common, "--truth", tmp_path / "a.tsv", name="a.fq")
    simulate(cli, tmp_path, *common, "--sub-rate", 0.1, "--truth", tmp_path / "b.tsv", name="b.fq")
    refs = reference(data / "hpv4.fa")

    def mismatch_rate(fq):
        total = diff = 0
        for name, seq, _ in read_fastq(fq):
            _, _, contig, start, end, strand, _ = name.split("|")
            ref = refs[contig]
            window = "".join(ref[i % len(ref)] for i in range(int(start), int(end)))
            if strand == "-":
                window = window[::-1].translate(str.maketrans("ACGT", "TGCA"))
            diff += sum(a != b for a, b in zip(window, seq))
            total += len(seq)
        return diff / total

    base, mutated = mismatch_rate(tmp_path / "a.fq"), mismatch_rate(tmp_path / "b.fq")
    assert 0.08 < mutated - base < 0.12


def test_art_profile_option_sets_the_error_rate(cli, data, tmp_path):
    res, out = simulate(cli, tmp_path, "-s", f"v={data / 'hpv4.fa'}", "-n", 400, "--circular", "v",
                        "--profile", data / "art_q10_q40_L150.txt", "--read-ins-rate", 0, "--read-del-rate", 0)
    assert res.exit_code == 0, res.output
    reads = read_fastq(out)
    assert {c for _, _, q in reads for c in q} <= {chr(33 + 10), chr(33 + 40), chr(33 + 2)}
    errors = np.array([int(n.split("|")[-1]) for n, _, _ in reads])
    # expected 0.06004 errors per base; 60,000 bases give a standard error of about 0.001
    assert abs(errors.sum() / (len(reads) * 150) - 0.06004) < 0.005


@pytest.mark.parametrize(
    "args, message",
    [
        (["-s", "v=missing.fa", "-n", 5], "missing.fa: no such file"),
        (["-s", "v={data}/hpv4.fa", "-n", 5, "--fraction", "x=0.5"], "label 'x' names no --source"),
        (["-s", "v={data}/hpv4.fa", "-n", 5, "--circular", "human"], "label 'human' names no --source"),
        (["-s", "v={data}/hpv4.fa", "-n", 5, "--profile", "{data}/hpv4.fa"], "is this an ART Illumina profile"),
        (["-s", "v={data}/hpv4.fa", "-s", "w={data}/hpv4.fa", "-n", 5], "appears in more than one --source"),
        (["-s", "v={data}/hpv4.fa", "-n", 5, "-l", 200], "covers 150 cycles"),
    ],
)
def test_bad_input_fails_with_one_line_and_no_output(cli, data, tmp_path, args, message):
    args = [str(a).format(data=data) for a in args]
    res, out = simulate(cli, tmp_path, *args, "--truth", tmp_path / "t.tsv")
    assert res.exit_code == 1
    assert_one_error_line(res, message)
    assert not out.exists() and not (tmp_path / "t.tsv").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary left behind


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "viral", "-n", 5],  # no '=' in --source
        ["-s", "v=x.fa"],  # neither -n nor --count
        ["-s", "v=x.fa", "-n", 5, "--count", "v=3"],
        ["-s", "v=x.fa", "-n", 5, "--output2", "b.fq"],
        ["-s", "v=x.fa", "-n", 0],
    ],
)
def test_usage_errors_exit_2(cli, tmp_path, args):
    res, _ = simulate(cli, tmp_path, *args)
    assert res.exit_code == 2


def test_existing_output_is_not_overwritten_without_force(cli, data, tmp_path):
    out = tmp_path / "r.fq"
    out.write_text("precious\n")
    res = cli("simulate-reads", "-s", f"v={data / 'hpv4.fa'}", "-n", 5, "-o", out)
    assert res.exit_code == 1 and "output exists" in res.stderr
    assert out.read_text() == "precious\n"
    res = cli("simulate-reads", "-s", f"v={data / 'hpv4.fa'}", "-n", 5, "-o", out, "--force")
    assert res.exit_code == 0 and len(read_fastq(out)) == 5


def test_fastq_reference_and_corrupt_gzip_are_refused(cli, data, tmp_path):
    fq = tmp_path / "reads.fq"
    fq.write_text("@r\nACGT\n+\nIIII\n")
    res = cli("simulate-reads", "-s", f"v={fq}", "-n", 5, "-o", tmp_path / "o.fq")
    assert res.exit_code == 1 and "a reference must be FASTA or GenBank" in res.stderr
    fake = tmp_path / "ref.fa.gz"
    fake.write_text(">x\nACGT\n")
    res = cli("simulate-reads", "-s", f"v={fake}", "-n", 5, "-o", tmp_path / "o.fq")
    assert res.exit_code == 1 and "not gzip-compressed" in res.stderr
    broken = tmp_path / "broken.fa.gz"
    broken.write_bytes(gzip.compress(b">x\n" + b"ACGT" * 1000)[:40])
    res = cli("simulate-reads", "-s", f"v={broken}", "-n", 5, "-o", tmp_path / "o.fq")
    assert res.exit_code == 1 and "truncated or corrupt gzip data" in res.stderr


def test_fragment_mean_and_sd_set_the_fragment_lengths(cli, data, tmp_path):
    # circular HPV genomes (about 8 kb): no contig end clamps a fragment, and 250 +- 6 x 15 never
    # reaches the 150 bp floor or the mean + 6 sd cap
    res, out = simulate(cli, tmp_path, "-s", f"v={data / 'hpv4.fa'}", "--circular", "v", "-n", 2000, "--paired",
                        "--fragment-mean", 250, "--fragment-sd", 15, "--output2", tmp_path / "r2.fq")
    assert res.exit_code == 0, res.output
    flen = np.array([int(n.split("|")[4]) - int(n.split("|")[3]) for n, _, _ in read_fastq(out)])
    assert flen.size == 2000
    # lengths are rint(normal(250, 15)): sd sqrt(15^2 + 1/12); standard errors 15 / sqrt(2000) = 0.34
    # for the mean and 15 / sqrt(2 x 2000) = 0.24 for the sd: 5 of them either way (the defaults, 400
    # and 50, are far outside)
    assert abs(flen.mean() - 250) < 5 * 0.34
    assert abs(flen.std(ddof=1) - np.sqrt(15**2 + 1 / 12)) < 5 * 0.24


def test_profile2_sets_read_2_qualities_only(cli, data, tmp_path):
    constant = tmp_path / "q30.txt"  # an ART profile whose every cycle is Q30
    constant.write_text("".join(f".\t{c}\t30\n.\t{c}\t1\n" for c in range(150)))
    res, out = simulate(cli, tmp_path, "-s", f"v={data / 'hpv4.fa'}", "--circular", "v", "-n", 200, "--paired",
                        "--profile", data / "art_q10_q40_L150.txt", "--profile2", constant,
                        "--output2", tmp_path / "r2.fq")
    assert res.exit_code == 0, res.output
    n_quality = chr(33 + 2)  # N bases get quality 2 whatever the profile
    assert {c for _, _, q in read_fastq(tmp_path / "r2.fq") for c in q} <= {chr(33 + 30), n_quality}
    r1 = {c for _, _, q in read_fastq(out) for c in q}
    assert {chr(33 + 10), chr(33 + 40)} <= r1 <= {chr(33 + 10), chr(33 + 40), n_quality}


@pytest.mark.parametrize("option, rate, expect", [
    # a read's 150 bases come from the mutated reference; each reference base there stands for
    # 1 + Bernoulli(ins) bases (insertions) or Bernoulli(1 - del) bases (deletions), so the read
    # spans about 150 / (1 + ins) or 150 / (1 - del) bases of the unmutated reference the truth uses
    ("--ins-rate", 0.1, 150 / 1.1),
    ("--del-rate", 0.1, 150 / 0.9),
])
def test_reference_indel_rates_change_the_reference_span_of_reads(cli, data, tmp_path, option, rate, expect):
    res, out = simulate(cli, tmp_path, "-s", f"v={data / 'hpv4.fa'}", "--circular", "v", "-n", 400,
                        "--read-ins-rate", 0, "--read-del-rate", 0, option, rate)
    assert res.exit_code == 0, res.output
    span = np.array([int(n.split("|")[4]) - int(n.split("|")[3]) for n, _, _ in read_fastq(out)])
    assert (np.array([len(s) for _, s, _ in read_fastq(out)]) == 150).all()
    # per-read sd about sqrt(150 x 0.09) / 1.1 = 3.3 bp; 400 reads at ~2x coverage of the 31 kb share
    # mutations, so the mean's standard error is under 0.3 bp: 2 bp is > 6 of them, and 13 bp from 150
    assert abs(span.mean() - expect) < 2


def test_max_n_frac_bounds_the_n_bases_of_every_read(cli, tmp_path):
    rng = np.random.default_rng(0)
    bases = lambda n: "".join(rng.choice(list("ACGT"), n))  # noqa: E731
    fa = tmp_path / "gap.fa"
    fa.write_text(">g\n" + bases(400) + "N" * 60 + bases(400) + "\n")
    counts = {}
    for frac in (0.2, 0):
        res, out = simulate(cli, tmp_path, "-s", f"g={fa}", "-n", 500, "--max-n-frac", frac, name=f"{frac}.fq")
        assert res.exit_code == 0, res.output
        counts[frac] = np.array([s.count("N") for _, s, _ in read_fastq(out)])
    # 0.2 x 150 = 30 N allowed: of the 711 read starts, the 60 windows holding 1-30 N of the gap are
    # kept (about 53 of 500 reads), so some reads carry N but none more than 30 (the default, 7,
    # would refuse most of them)
    assert counts[0.2].max() <= 30 and (counts[0.2] > 7).sum() > 10
    assert counts[0].max() == 0


@pytest.mark.parametrize("cut", [5000, -3])  # in the sequence; before the closing //
def test_truncated_genbank_is_refused_with_one_line(cut, cli, data, tmp_path):
    gb = tmp_path / "hpv16.gb"
    gb.write_bytes((data / "hpv16.gb").read_bytes()[:cut])
    res = cli("simulate-reads", "-s", f"v={gb}", "-n", 5, "-o", tmp_path / "o.fq")
    assert res.exit_code == 1 and not (tmp_path / "o.fq").exists()
    assert_one_error_line(res, f"{gb}: truncated GenBank file")
    assert "Warning" not in res.stderr
