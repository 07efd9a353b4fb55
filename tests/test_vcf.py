"""GT parsing into dosages, gene annotations, SNP-to-gene assignment."""

import gzip
import os
import threading
from contextlib import contextmanager

import numpy as np
import pytest

from genointerp.errors import InputError
from genointerp.genotypes.assign import GeneAssigner
from genointerp.io.chroms import chrom_alias
from genointerp.io.genes import Gene, read_genes
from genointerp.io.vcf import MISSING, VcfGenotypes, parse_gt


def calls(*gts: str) -> bytes:
    return "\t".join(gts).encode()


def test_fast_path_counts_alt_alleles_phased_or_not_and_marks_missing():
    d = parse_gt(b"GT", calls("0/0", "0|1", "1|0", "1/1", "./.", ".|1", "0/2", "2|3"), 8)
    assert d.dtype == np.int8
    assert d.tolist() == [0, 1, 1, 2, MISSING, MISSING, 1, 2]  # every ALT of a multi-allelic site counts


def test_general_path_reads_gt_first_subfield_haploid_and_big_allele_numbers():
    d = parse_gt(b"GT:DP", calls("0/1:12", "1:3", "0:7", ".:0", "0/10:5", "./.:0", "1|1:9", "0/.:4"), 8)
    # haploid 1 -> 2 (scaled like a homozygous diploid call); one missing allele -> missing
    assert d.tolist() == [1, 2, 0, MISSING, 1, MISSING, 2, MISSING]
    assert parse_gt(b"GT", calls("0", "1", "."), 3).tolist() == [0, 2, MISSING]  # haploid, FORMAT GT only
    assert parse_gt(b"GT", calls("0/1/1", "1/1/1/1"), 2).tolist() == [1, 2]  # polyploid, scaled to 2 copies


@pytest.mark.parametrize("fmt,samples,n", [
    (b"DP:GT", calls("3:0/1", "4:1/1"), 2),  # GT not first
    (b"GT", calls("0/1", "1/1"), 3),  # too few samples
    (b"GT", calls("0/1", "x/1"), 2),  # not an allele
    (b"GT", calls("0/1", "1-1"), 2),
])
def test_malformed_genotype_columns_are_rejected(fmt, samples, n):
    assert parse_gt(fmt, samples, n) is None


def test_fast_and_general_paths_agree():
    rng = np.random.default_rng(0)
    gts = rng.choice(["0/0", "0/1", "1/1", "./.", "1|0", "0|0"], size=500).tolist()
    assert parse_gt(b"GT", calls(*gts), 500).tolist() == parse_gt(b"GT:X", calls(*(g + ":1" for g in gts)), 500).tolist()


def test_reader_selects_samples_in_vcf_order_and_names_a_missing_one(data):
    vcf = VcfGenotypes(str(data / "eur_chr21_22_small.vcf.gz"), ["3_HG00099", "1_HG00096"])
    assert vcf.samples == ["1_HG00096", "3_HG00099"]
    first = next(iter(vcf))
    assert (first.chrom, first.pos, first.ref, first.alt) == ("21", 38347375, "A", "G")
    assert first.dosage.tolist() == [0, 2]  # 0/0 and 1/1 in the source file
    with pytest.raises(InputError, match="'nobody'"):
        VcfGenotypes(str(data / "eur_chr21_22_small.vcf.gz"), ["1_HG00096", "nobody"])


def test_bed_and_gtf_readers_agree_and_name_duplicates(tmp_path, data):
    bed = read_genes(str(data / "genes_chr21_22.bed"))
    gtf = read_genes(str(data / "genes_chr21_22.gtf"))
    assert gtf == bed[:12]  # the GTF holds the first 12 BED genes, 1-based
    assert all(g.chrom in ("chr21", "chr22") for g in bed)
    p = tmp_path / "dup.bed"
    p.write_text("chr1\t500\t600\tB\nchr1\t100\t200\t.\tA\nchr1\t300\t400\tA\tx\nchr2\t1\t5\n")
    genes = read_genes(str(p))
    assert [(g.name, g.start) for g in genes] == [("A", 100), ("A~2", 300), ("B", 500), ("chr2:1-5", 1)]
    p.write_text("chr1\tten\t20\tA\n")
    with pytest.raises(InputError, match="line 1"):
        read_genes(str(p))


def test_chromosome_aliases():
    assert chrom_alias("21", {"chr21"}) == "chr21"
    assert chrom_alias("chr21", {"21"}) == "21"
    assert chrom_alias("MT", {"chrM"}) == "chrM"
    assert chrom_alias("21", {"21", "chr21"}) == "21"
    assert chrom_alias("21", {"chr22"}) is None


def test_overlapping_genes_each_get_the_snp_and_nearest_gene_breaks_ties_upstream():
    genes = [Gene("A", "1", 100, 200), Gene("B", "1", 150, 300), Gene("C", "1", 400, 500)]
    plain = GeneAssigner(genes)
    assert [plain.assign(p) for p in (50, 100, 160, 250, 350)] == [[], [0], [0, 1], [1], []]
    near = GeneAssigner(genes, nearest=True)
    # 349: 50 from B's last base (299), 51 from C's start; 350: 51 vs 50
    assert [near.assign(p) for p in (50, 160, 349, 350, 600)] == [[0], [0, 1], [1], [2], [2]]
    # 14 is 5 from U's last base (9) and 5 from D's start (19): the upstream gene wins
    assert GeneAssigner([Gene("U", "1", 0, 10), Gene("D", "1", 19, 30)], nearest=True).assign(14) == [0]
    assert GeneAssigner([Gene("U", "1", 0, 10), Gene("D", "1", 18, 30)], nearest=True).assign(14) == [1]
    assert plain.reach == [200, 300, 500] and near.reach == [400, 400, float("inf")]


@contextmanager
def pipe_of(data: bytes):
    """`/dev/fd/N` of a pipe fed `data` by a thread: what `<(zcat x.vcf.gz)` hands a command (it
    can be read once, front to back, and not reopened)."""
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as fh:
            try:
                fh.write(data)
            except BrokenPipeError:  # the reader stopped early (an error test)
                pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield f"/dev/fd/{r}"
    finally:
        os.close(r)
        thread.join(timeout=10)


def test_a_pipe_streams_the_same_sites_once_and_a_file_can_be_read_again(data):
    path = data / "eur_chr21_22_small.vcf.gz"
    sites = lambda vcf: [(s.chrom, s.pos, s.dosage.tolist()) for s in vcf]  # noqa: E731
    vcf = VcfGenotypes(str(path))
    first = sites(vcf)
    assert len(first) == 350 and sites(vcf) == first  # a file is opened again
    with pipe_of(gzip.decompress(path.read_bytes())) as fifo:
        piped = VcfGenotypes(fifo, ["3_HG00099", "1_HG00096"])
        assert piped.samples == ["1_HG00096", "3_HG00099"] and piped.contigs == vcf.contigs
        assert sites(piped) == [(c, p, [d[0], d[2]]) for c, p, d in first]
        with pytest.raises(InputError, match="can be read only once"):
            sites(piped)


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace("1_HG00096", "2_HG00097", 1), "line 9: sample '2_HG00097' appears more than once"),
    (lambda t: t.replace("#CHROM", "#CHR", 1), "line 9: malformed #CHROM line"),
    (lambda t: "\n".join(line for line in t.split("\n") if not line.startswith("#CHROM")), "line 9: a record before"),
    (lambda t: t.split("#CHROM")[0], "no #CHROM header line"),
    (lambda t: t.replace("##fileformat=VCFv4.2", "##format=VCF", 1), "not a VCF or BCF"),
])
def test_a_broken_header_is_named(edit, message, data, tmp_path):
    text = gzip.decompress((data / "eur_chr21_22_small.vcf.gz").read_bytes()).decode()
    assert text.startswith("##fileformat=VCFv4.2\n") and text.split("\n")[8].startswith("#CHROM")
    (tmp_path / "x.vcf").write_text(edit(text))
    with pytest.raises(InputError, match=message):
        VcfGenotypes(str(tmp_path / "x.vcf"))
