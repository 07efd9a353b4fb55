"""gene-pca vs plink2 --pca on one cohort VCF: wall time and peak memory.

Cohort: a mosaic of the real phased 1000 Genomes EUR chr21 haplotypes (379 samples, 1,813 SNPs,
../shared/data/genotypes), recombination-aware (hg19 map excerpt), tiled along synthetic
chromosomes to reach --snps (genointerp.genotypes.cohort documents the layout). Genes: the real
GENCODE genes of the chr21 region, copied into every tile.

The two tools answer different questions on the same input: genointerp fits one PCA per gene
(about 113 genes per 1,813-SNP tile) and writes the Gene-PC matrix; plink2 fits one genome-wide
PCA (top 10 PCs; `--pca approx` above 5,000 samples, as plink2 advises, else exact). Both parse
the whole VCF. `plink2 --make-pgen` alone shows its VCF import speed. Each command runs once; peak
RSS is its maximum resident set (GNU time, Debian package `time`).

    python benchmarks/gene_pca.py --shared ../shared/data [--samples 2000 --snps 50000 --threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table  # noqa: E402

from genointerp.genotypes.cohort import tile_genes, write_mosaic_vcf  # noqa: E402
from genointerp.io.genes import read_genes  # noqa: E402


def measured(cmd: list[str]) -> tuple[float, float]:
    """Run a command under GNU time, fail loudly on error; (wall seconds, peak RSS MiB).

    Not os.wait4 on a child of this process: Linux carries the forking parent's RSS high-water
    mark into the child across exec, so every command would report at least this script's RSS."""
    t0 = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    return wall, int(res.stderr.strip().splitlines()[-1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--snps", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plink-pca", choices=["auto", "exact", "approx"], default="auto",
                    help="plink2 --pca mode; auto: approx above 5,000 samples, as plink2 advises")
    ap.add_argument("--make-only", action="store_true", help="only write the cohort VCF and gene BED")
    ap.add_argument("--skip", nargs="*", default=[], choices=["apply", "plink2", "no-tsv"], help="runs to leave out")
    ap.add_argument("--out", default="bench-output/gene_pca")
    args = ap.parse_args()
    require(*(["plink2"] if "plink2" not in args.skip else []), "/usr/bin/time")
    out = out_dir(args.out)
    geno = Path(args.shared) / "genotypes"
    vcf = out / f"cohort_{args.samples}x{args.snps}.vcf.gz"
    genes_bed = out / f"genes_{args.snps}.bed"
    t0 = time.perf_counter()
    if not vcf.exists():
        partial = vcf.with_name(vcf.name + ".partial")  # an interrupted run leaves no cohort to reuse
        panel, layout = write_mosaic_vcf(partial, str(geno / "1000G_EUR.chr21.phased.vcf.gz"),
                                         str(geno / "genetic_map_hg19_example.txt.gz"), args.samples, args.snps,
                                         args.seed, threads=args.threads, level=1)
        genes = tile_genes(panel, read_genes(str(geno / "gencode_v28.hg19.protein_coding_genes.bed")), layout)
        genes_bed.write_text("".join(f"{g.chrom}\t{g.start}\t{g.end}\t{g.name}\n" for g in genes))
        partial.rename(vcf)
    t_make = time.perf_counter() - t0
    n_genes = sum(1 for _ in open(genes_bed))
    size = vcf.stat().st_size / 2**20
    print(f"cohort: {args.samples:,} samples x {args.snps:,} SNPs, {n_genes:,} genes; {vcf} {size:,.0f} MiB "
          f"(made in {t_make:.0f} s)")
    if args.make_only:
        return

    gi_out = out / "gene_pcs"
    approx = args.plink_pca == "approx" or (args.plink_pca == "auto" and args.samples > 5000)
    pca = ["--pca", "approx", "10"] if approx else ["--pca", "10"]
    runs = [
        (f"genointerp gene-pca -t {args.threads}", GENOINTERP + ["-q", "gene-pca", str(vcf), "-g", str(genes_bed),
                                                               "-o", str(gi_out), "-t", str(args.threads), "--force"]),
        (f"genointerp gene-pca -t {args.threads} --no-tsv", GENOINTERP + [
            "-q", "gene-pca", str(vcf), "-g", str(genes_bed), "-o", str(out / "gene_pcs_npy"), "-t", str(args.threads),
            "--no-tsv", "--force"]),
        ("genointerp gene-pca --apply", GENOINTERP + ["-q", "gene-pca", str(vcf), "--apply", str(gi_out),
                                                     "-o", str(out / "gene_pcs_applied"), "--force"]),
        (f"plink2 --vcf {' '.join(pca)} --threads {args.threads}",
         ["plink2", "--vcf", str(vcf), *pca, "--threads", str(args.threads), "--memory", "8000", "--out", str(out / "plink2_pca")]),
        ("plink2 --vcf --make-pgen (VCF import only)",
         ["plink2", "--vcf", str(vcf), "--make-pgen", "--threads", str(args.threads), "--memory", "8000",
          "--out", str(out / "plink2_import")]),
    ]
    skipped = {"apply": "genointerp gene-pca --apply", "plink2": "plink2", "no-tsv": "genointerp gene-pca -t"}
    runs = [(name, cmd) for name, cmd in runs
            if not any(name.startswith(skipped[k]) and (k != "no-tsv" or name.endswith("--no-tsv")) for k in args.skip)]
    rows = []
    for name, cmd in runs:  # each row printed as it is measured: a long peer run cannot hide earlier numbers
        seconds, rss = measured(cmd)
        rows.append({"run": name, "seconds": f"{seconds:.1f}", "peak RSS MiB": f"{rss:,.0f}", "s": seconds})
        print(f"  {name}: {seconds:.1f} s, peak RSS {rss:,.0f} MiB", flush=True)
    peer = next((r["s"] for r in rows if r["run"].startswith("plink2 --vcf --pca")), None)
    for r in rows:
        r["time vs plink2 --pca"] = f"{r['s'] / peer:.2f}x" if peer else "-"
    n_features = len(json.loads((gi_out / "features.json").read_text())["columns"])
    rows[0]["run"] += f" ({n_features:,} Gene-PCs)"
    print(table(rows, ["run", "seconds", "peak RSS MiB", "time vs plink2 --pca"]))
    print("(--no-tsv: features.npy only, like plink2's binary outputs; the difference is the 7-digit text table)")

if __name__ == "__main__":
    main()
