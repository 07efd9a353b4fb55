"""Issue 30, part 2, items 8 and 9: wrong answers and messages found by the second reliability sweep.

Each test goes through the CLI and failed on the code before its fix.
"""

from __future__ import annotations

import gzip
import random

import numpy as np
import pyBigWig
import pysam
import pytest

from conftest import DATA, assert_one_error_line


def write_fasta(path, contigs: dict[str, str], width: int = 60):
    with open(path, "w") as fh:
        for name, seq in contigs.items():
            fh.write(f">{name}\n" + "".join(seq[i : i + width] + "\n" for i in range(0, len(seq), width)))
    return path


def random_bases(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(n))


# --- 8. predict-tracks: no peaks from no signal, nothing from all-N sequence ----------------------

@pytest.fixture(scope="module")
def gapped_fasta(tmp_path_factory):
    """Contig t: 11,904 bp of N (93 bins of the built-in model's 128 bp), then 12,096 random bases."""
    path = write_fasta(tmp_path_factory.mktemp("ref") / "gap.fa", {"t": "N" * 11_904 + random_bases(12_096, 3)})
    pysam.faidx(str(path))
    return path


def _peaks(folder):
    return [line.split("\t") for bed in sorted(folder.glob("*.peaks.bed")) for line in bed.read_text().splitlines()]


def test_predict_tracks_on_all_n_sequence_writes_no_values_and_no_peaks(cli, tmp_path, gapped_fasta):
    (tmp_path / "gap.bed").write_text("t\t0\t11904\n")
    res = cli("predict-tracks", "-R", gapped_fasta, "--regions", tmp_path / "gap.bed", "-o", tmp_path / "p",
              "--device", "cpu", "--tsv")
    assert res.exit_code == 0, res.output
    assert "all-N" in res.stderr
    assert _peaks(tmp_path / "p") == []  # was 87: whole-region peaks of signal 0, and peaks on the tiling
    bws = sorted((tmp_path / "p").glob("*.bw"))
    assert len(bws) == 87 and pyBigWig.open(str(bws[0])).intervals("t") is None
    assert gzip.decompress((tmp_path / "p" / "tracks.tsv.gz").read_bytes()).decode().count("\n") == 1  # header


def test_predict_tracks_leaves_out_all_n_bins_and_calls_peaks_only_on_signal(cli, tmp_path, gapped_fasta):
    (tmp_path / "r.bed").write_text("t\t0\t24000\n")
    res = cli("predict-tracks", "-R", gapped_fasta, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p",
              "--device", "cpu")
    assert res.exit_code == 0, res.output
    peaks = _peaks(tmp_path / "p")
    assert peaks and min(int(p[1]) for p in peaks) >= 11_904
    assert all(float(p[6]) > 0 for p in peaks)  # the max signal of every peak
    iv = pyBigWig.open(str(sorted((tmp_path / "p").glob("*.bw"))[0])).intervals("t")
    assert iv[0][0] == 11_904 and iv[-1][1] == 24_000 and len(iv) == 95  # 94.5 bins of 128 bp


def test_zero_signal_is_no_peak_even_when_the_quantile_is_zero():
    """A track that is 0 on most bins has a 0.99 quantile of 0: `>=` made all of it one peak."""
    from genointerp.io.track_writers import BinnedRun
    from genointerp.tracks.peaks import call_peaks_all

    run = BinnedRun("t", 0, 128, np.zeros((100, 1), np.float32), 12_800)
    assert call_peaks_all([run], 0, quantile=0.99) == [] and call_peaks_all([run], 0, threshold=0.0) == []


# --- 8. a stale .fai ------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [70, 50, 100_000])
def test_a_fai_left_from_before_the_fasta_was_rewrapped_is_refused(cli, tmp_path, width):
    contigs = {"a": random_bases(5_000, 1), "b": random_bases(4_000, 2)}
    fasta = write_fasta(tmp_path / "ref.fa", contigs, 60)
    pysam.faidx(str(fasta))
    write_fasta(fasta, contigs, width)  # rewrapped; the .fai still describes 60 columns
    (tmp_path / "r.bed").write_text("a\t0\t3000\n")
    res = cli("predict-tracks", "-R", fasta, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p",
              "--device", "cpu")
    assert res.exit_code == 1 and not (tmp_path / "p").exists()
    assert_one_error_line(res, f"{fasta}.fai does not match {fasta}")
    assert f"samtools faidx {fasta}" in res.stderr
    pysam.faidx(str(fasta))  # re-indexed: accepted
    assert cli("predict-tracks", "-R", fasta, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p",
               "--device", "cpu").exit_code == 0


def test_a_stale_fai_of_a_bgzip_fasta_is_refused(cli, tmp_path):
    contigs = {"a": random_bases(5_000, 1)}
    plain = write_fasta(tmp_path / "ref.fa", contigs, 60)
    fasta = tmp_path / "ref.fa.gz"
    pysam.tabix_compress(str(plain), str(fasta))
    pysam.faidx(str(fasta))
    write_fasta(plain, contigs, 80)
    pysam.tabix_compress(str(plain), str(fasta), force=True)
    (tmp_path / "r.bed").write_text("a\t0\t3000\n")
    res = cli("predict-tracks", "-R", fasta, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p",
              "--device", "cpu")
    assert res.exit_code == 1
    assert_one_error_line(res, f"{fasta}.fai does not match {fasta}")


# --- 8. gene-pca: an exactly duplicated VCF record ------------------------------------------------

def _vcf_with(tmp_path, name: str, edit) -> str:
    """test-data's VCF with its record lines passed through `edit` (a function of the line list)."""
    lines = gzip.decompress((DATA / "eur_chr21_22_small.vcf.gz").read_bytes()).decode().splitlines(keepends=True)
    header = [line for line in lines if line.startswith("#")]
    (tmp_path / name).write_text("".join(header + edit([line for line in lines if not line.startswith("#")])))
    return str(tmp_path / name)


def _after(records, pos: str, line: str):
    i = next(i for i, r in enumerate(records) if r.split("\t")[1] == pos)
    return records[: i + 1] + [line] + records[i + 1 :]


def _ttc3_record(records, pos="38495693"):
    return next(r for r in records if r.split("\t")[1] == pos)


def test_gene_pca_drops_an_exact_duplicate_record_with_one_warning(cli, tmp_path):
    plain = _vcf_with(tmp_path, "plain.vcf", lambda r: r)
    dup = _vcf_with(tmp_path, "dup.vcf", lambda r: _after(r, "38495693", _ttc3_record(r).replace("rs74420981", "dup1")))
    runs = {}
    for name, vcf in (("plain", plain), ("dup", dup)):
        res = cli("gene-pca", vcf, "-g", DATA / "genes_chr21_22.bed", "--keep-dosages", "-o", tmp_path / name)
        assert res.exit_code == 0, res.output
        runs[name] = res
    warnings = [line for line in runs["dup"].stderr.splitlines() if "duplicate" in line]
    assert len(warnings) == 1 and "1 exact duplicate record" in warnings[0], runs["dup"].stderr
    assert "duplicate" not in runs["plain"].stderr
    ttc3 = {name: next(line for line in (tmp_path / name / "genes.tsv").read_text().splitlines()
                       if line.startswith("TTC3\t")) for name in runs}
    assert ttc3["dup"] == ttc3["plain"] and ttc3["plain"].split("\t")[5:7] == ["4", "1"]  # 4 SNPs, 1 PC
    d = np.load(tmp_path / "dup" / "dosages.npy")
    assert np.array_equal(d, np.load(tmp_path / "plain" / "dosages.npy"))
    logged = next(line for line in runs["dup"].stderr.splitlines() if "dosages.npy:" in line)
    assert f"dosages.npy: {d.shape[1]} SNPs" in logged  # the log counts what the file holds


def test_gene_pca_refuses_one_site_twice_with_other_genotypes(cli, tmp_path):
    def conflicting(records):
        rec = _ttc3_record(records).split("\t")
        rec[9] = "1|1" if rec[9].split(":")[0] != "1|1" else "0|0"  # the first sample's call differs
        return _after(records, "38495693", "\t".join(rec))

    vcf = _vcf_with(tmp_path, "conflict.vcf", conflicting)
    res = cli("gene-pca", vcf, "-g", DATA / "genes_chr21_22.bed", "-o", tmp_path / "o")
    assert res.exit_code == 1 and not (tmp_path / "o").exists() and "Traceback" not in res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error:")]
    assert len(errors) == 1 and "21:38495693 A>G is also at line" in errors[0], res.stderr


# --- 8. classify-reads --viral-out with FASTQ and FASTA inputs ------------------------------------

def _reads(tmp_path, n: int = 4):
    """The first n reads of test-data/tumor_small.fq.gz as x.fq, and as FASTA x.fa."""
    lines = gzip.decompress((DATA / "tumor_small.fq.gz").read_bytes()).decode().splitlines()[: 4 * n]
    (tmp_path / "x.fq").write_text("\n".join(lines) + "\n")
    (tmp_path / "x.fa").write_text("".join(f">{lines[i][1:]}\n{lines[i + 1]}\n" for i in range(0, len(lines), 4)))
    return tmp_path / "x.fq", tmp_path / "x.fa"


def test_viral_out_refuses_fastq_and_fasta_inputs_together(cli, tmp_path):
    fq, fa = _reads(tmp_path)
    res = cli("classify-reads", fq, fa, "--viral-out", tmp_path / "v.out", "--evidence", "kmer", "--min-bits", 0.01,
              "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1 and not (tmp_path / "v.out").exists() and not (tmp_path / "c.tsv").exists()
    assert_one_error_line(res, f"{fq} has base qualities (FASTQ) and {fa} has none (FASTA): --viral-out writes one format")
    # a stream is told by its first read
    res = cli("classify-reads", fq, "-", "--viral-out", tmp_path / "v.out", "-o", tmp_path / "c.tsv", input=fa.read_text())
    assert res.exit_code == 1 and not (tmp_path / "v.out").exists()
    assert_one_error_line(res, f"{fq} has base qualities (FASTQ) and - has none (FASTA)")
    # without --viral-out the formats may mix
    assert cli("classify-reads", fq, fa, "-o", tmp_path / "c.tsv").exit_code == 0


# --- 9. messages name the file and the record -----------------------------------------------------

def test_a_dot_in_a_read_names_the_file_and_record(cli, tmp_path):
    fq, _ = _reads(tmp_path)
    lines = fq.read_text().splitlines()
    lines[5] = lines[5][:10] + "." + lines[5][11:]  # read 2
    (tmp_path / "dot.fq").write_text("\n".join(lines) + "\n")
    res = cli("kmerize", fq, tmp_path / "dot.fq", "--label-field", 0, "-o", tmp_path / "km")
    assert res.exit_code == 1
    assert_one_error_line(res, f"{tmp_path / 'dot.fq'}: record 2 ({lines[4][1:]}): position 11: '.' is not a nucleotide letter")


@pytest.mark.parametrize("record", [1, 2])
def test_a_latin1_byte_in_a_read_name_names_the_file_and_record(cli, tmp_path, record):
    reads = [b"@r1\nACGTACGTAC\n+\nIIIIIIIIII\n", b"@r2\nACGTACGTAC\n+\nIIIIIIIIII\n"]
    reads[record - 1] = reads[record - 1].replace(b"@r", b"@r\xe9")
    (tmp_path / "l.fq").write_bytes(b"".join(reads))
    res = cli("classify-reads", tmp_path / "l.fq", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1
    after = " (after r1)" if record == 2 else ""
    assert_one_error_line(res, f"{tmp_path / 'l.fq'}: record {record}{after}: its name holds byte b'\\xe9' that is not UTF-8")


def test_classify_reads_stdin_twice_is_a_usage_error_and_an_empty_stdin_writes_nothing(cli, tmp_path):
    fq, _ = _reads(tmp_path)
    res = cli("classify-reads", "-", "-", input=fq.read_text())
    assert res.exit_code == 2 and res.stdout == ""
    assert_one_error_line(res, "- (stdin) is given 2 times")
    res = cli("classify-reads", "-", input="")
    assert res.exit_code == 1 and res.stdout == ""  # no header before the error
    assert_one_error_line(res, "-: file is empty")


def _calls_tsv(path, names):
    from genointerp.viral.classify.job import HEADER

    path.write_text(HEADER + "".join(f"{n}\t150\t0.1\tnot_viral\tscored\t0\tnone\n" for n in names))
    return path


def test_merge_calls_stdin_twice_is_a_usage_error(cli, tmp_path):
    text = _calls_tsv(tmp_path / "c1.tsv", ["a", "b"]).read_text()
    res = cli("merge-calls", "-", "-", input=text)
    assert res.exit_code == 2 and res.stdout == ""
    assert_one_error_line(res, "- (stdin) is given 2 times: one stream cannot be two chunk files")


def test_merge_calls_refuses_one_chunk_given_by_relative_and_absolute_path(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _calls_tsv(tmp_path / "c1.tsv", ["a", "b"])
    _calls_tsv(tmp_path / "c2.tsv", ["c"])
    res = cli("merge-calls", "c1.tsv", "c2.tsv", tmp_path / "c1.tsv", "-o", "m.tsv")
    assert res.exit_code == 2 and not (tmp_path / "m.tsv").exists()  # was merged, with a and b twice
    assert_one_error_line(res, f"{tmp_path / 'c1.tsv'} is given twice (as c1.tsv and {tmp_path / 'c1.tsv'})")
