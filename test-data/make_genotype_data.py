"""Cut the gene-pca fixtures from the real 1000 Genomes data in ../shared/data/genotypes.

    python test-data/make_genotype_data.py [--shared ../shared/data]

Writes, into test-data/:
- eur_chr21_22_small.vcf.gz (+ .tbi): the first 60 of 379 European samples, every 6th SNP of
  chr21 and every 4th SNP of chr22 of 1000G_EUR.chr21-22.vcf.gz (unphased GT, contigs `21`/`22`).
  Missing calls set on purpose (the source has none), so that imputation and the missingness
  filter are exercised:
    * SNP 10 (0-based, in file order): samples 0, 1, 2 -> `./.` (5% missing: kept by --max-missing 0.1);
    * SNP 40: samples 0..11 -> `./.` (20% missing: dropped by --max-missing 0.1);
    * SNP 100: sample 59 -> `.` (a haploid-style missing call).
- genes_chr21_22.bed: genes of gencode_v28.hg19.protein_coding_genes.bed (chrom start end . name,
  `chr21` naming, unlike the VCF) that lie within 50 kb of the kept SNPs;
- genes_chr21_22.gtf: the first 12 of those genes as GTF `gene` records (1-based, gene_name).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent
N_SAMPLES = 60
MISSING_CALLS = {10: (range(3), "./."), 40: (range(12), "./."), 100: (range(59, 60), ".")}


def main() -> None:
    import pysam

    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(HERE.parent.parent / "shared" / "data"))
    args = ap.parse_args()
    src = Path(args.shared) / "genotypes"
    header, records = [], []
    counts = {"21": 0, "22": 0}
    with gzip.open(src / "1000G_EUR.chr21-22.vcf.gz", "rt") as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if line.startswith("##"):
                header.append(line.rstrip("\n"))
            elif line.startswith("#"):
                header.append("\t".join(f[: 9 + N_SAMPLES]))
            else:
                counts[f[0]] += 1
                if (counts[f[0]] - 1) % (6 if f[0] == "21" else 4) == 0:
                    records.append(f[: 9 + N_SAMPLES])
    for i, (samples, call) in MISSING_CALLS.items():
        for s in samples:
            records[i][9 + s] = call
    header.insert(1, "##genointerp_fixture=cut by test-data/make_genotype_data.py; missing calls set at SNPs 10, 40, 100")
    plain = HERE / "eur_chr21_22_small.vcf"
    plain.write_text("\n".join(header + ["\t".join(r) for r in records]) + "\n")
    pysam.tabix_index(str(plain), preset="vcf", force=True)  # bgzips to .vcf.gz, removes the plain file

    spans = {}
    for r in records:
        lo, hi = spans.get(r[0], (int(r[1]), int(r[1])))
        spans[r[0]] = (min(lo, int(r[1])), max(hi, int(r[1])))
    genes = []
    for line in open(src / "gencode_v28.hg19.protein_coding_genes.bed"):
        chrom, start, end, _, name = line.rstrip("\n").split("\t")
        span = spans.get(chrom.removeprefix("chr"))
        if span and int(end) > span[0] - 50_000 and int(start) < span[1] + 50_000:
            genes.append((chrom, int(start), int(end), name))
    (HERE / "genes_chr21_22.bed").write_text("".join(f"{c}\t{s}\t{e}\t.\t{n}\n" for c, s, e, n in genes))
    (HERE / "genes_chr21_22.gtf").write_text("".join(
        f'{c}\tHAVANA\tgene\t{s + 1}\t{e}\t.\t+\t.\tgene_id "G{i:03d}"; gene_type "protein_coding"; gene_name "{n}";\n'
        for i, (c, s, e, n) in enumerate(genes[:12])))
    print(f"{len(records)} SNPs x {N_SAMPLES} samples, {len(genes)} genes")


if __name__ == "__main__":
    main()
