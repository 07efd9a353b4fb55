"""Make the find-integrations fixtures in test-data/integrations/ (run from the repository root).

    python test-data/make_integration_data.py

Needs `minimap2` and `samtools` (Debian packages) on PATH and ../shared/data for the HBV genome.
- host.fa (+ .fai): 30 kb of GRCh37 chr20 (chr20_slice.fa.gz bases 40,000-70,000), contig `20`.
- viral.fa: HPV16 and HPV18 (from hpv4.fa) and HBV_2 (X51970, genotype A, from
  ../shared/data/viral/oncoviruses.fa); hbv.fa holds HBV_2 alone (for --viral-refs).
- R1.fq.gz, R2.fq.gz, truth.bedpe: `genointerp simulate-reads` insertion mode, 3 fragments of
  2 kb (one per genome) at 10x, 500 +- 100 bp fragments, 100 E. coli pairs mixed in.
- host.bam (+ .bai): `minimap2 -ax sr host.fa`, sorted; unmapped.bam: its unmapped reads only
  (`samtools view -f 4`); combined.fa + sa.bam: host and viral genomes in one reference, so the
  reads across junctions carry SA tags.
- genes.bed: three made-up genes around the insertion sites (names say so).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "integrations"
SHARED = Path(os.environ.get("SHARED", HERE.parent.parent / "shared" / "data"))


def sh(cmd: str) -> None:
    subprocess.run(cmd, shell=True, check=True, cwd=OUT, executable="/bin/bash")


def fasta(path: Path) -> dict[str, str]:
    op = gzip.open if path.suffix == ".gz" else open
    out, name = {}, None
    with op(path, "rt") as fh:
        for line in fh:
            if line.startswith(">"):
                name = line[1:].split()[0]
                out[name] = []
            else:
                out[name].append(line.strip())
    return {k: "".join(v) for k, v in out.items()}


def write_fasta(path: Path, records: dict[str, str]) -> None:
    with open(path, "w") as fh:
        for name, seq in records.items():
            fh.write(f">{name}\n" + "".join(seq[i:i + 60] + "\n" for i in range(0, len(seq), 60)))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    chr20 = fasta(HERE / "chr20_slice.fa.gz")["20"]
    write_fasta(OUT / "host.fa", {"20": chr20[40_000:70_000]})
    hpv = fasta(HERE / "hpv4.fa")
    hbv = fasta(SHARED / "viral" / "oncoviruses.fa")["HBV_2"]
    write_fasta(OUT / "viral.fa", {"HPV16": hpv["HPV16"], "HPV18": hpv["HPV18"], "HBV_2": hbv})
    with open(OUT / "hbv.fa", "w") as fh:
        fh.write(">HBV_2 X51970.1 genotype_A\n" + "".join(hbv[i:i + 60] + "\n" for i in range(0, len(hbv), 60)))
    gi = f"{sys.executable} -m genointerp"
    sh(f"{gi} -q simulate-reads -s host=host.fa -s viral=viral.fa -s bacteria=../ecoli_slice.fa --circular viral "
       "--insert viral=host --insertions 3 --depth 10 --count bacteria=100 --paired --fragment-mean 500 "
       "--fragment-sd 100 --seed 5 -o R1.fq.gz --output2 R2.fq.gz --truth-bedpe truth.bedpe --force")
    sh("samtools faidx host.fa")
    sh("minimap2 -ax sr -t 1 host.fa R1.fq.gz R2.fq.gz 2>/dev/null | samtools sort -o host.bam - && samtools index host.bam")
    sh("samtools view -b -f 4 -o unmapped.bam host.bam && samtools index unmapped.bam")
    sh("cat host.fa viral.fa > combined.fa && samtools faidx combined.fa")
    sh("minimap2 -ax sr -t 1 combined.fa R1.fq.gz R2.fq.gz 2>/dev/null | samtools sort -o sa.bam - && samtools index sa.bam")
    # made-up genes: one over the first site, the others beside the rest
    sites = [int(line.split("\t")[1]) for line in open(OUT / "truth.bedpe") if line.endswith("\n") and
             not line.startswith("#") and "_left" in line]
    with open(OUT / "genes.bed", "w") as fh:
        fh.write(f"20\t{sites[0] - 500}\t{sites[0] + 500}\tMADEUP_OVER\n")
        fh.write(f"20\t{sites[1] - 3000}\t{sites[1] - 2000}\tMADEUP_LEFT\n")
        fh.write(f"20\t{sites[1] + 1500}\t{sites[1] + 2500}\tMADEUP_RIGHT\n")


if __name__ == "__main__":
    main()
