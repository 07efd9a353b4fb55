"""Make the long-read fixtures in test-data/long_reads/ (run from the repository root).

    python test-data/make_long_read_data.py

Needs genointerp installed; for the BAM, `minimap2` and `samtools` (Debian packages) on PATH.
Everything is made from files already in test-data/ (hpv4.fa, chr20_slice.fa.gz) by
`genointerp simulate-reads --platform nanopore|hifi` (pbsim-like reads; see genointerp.seq.long_reads):
- ont.fq.gz, hifi.fq.gz: 24 reads of HPV16 and HPV18 (label `hpv`, circular) and 12 of the 100 kb
  of GRCh37 chr20 (label `human`), nanopore-like (90 % accuracy, indel-rich) and HiFi-like (99 %),
  1-8 kb (mean 4 kb), --seed 7; the read names carry the truth (LABEL|SERIAL|CONTIG|...).
- host.fa (+ .fai): chr20_slice bases 10,000-50,000, contig `20`.
- templates.fa: four integrations, each 5 kb of host.fa, then an HPV16 or HPV18 fragment of
  2.5-4 kb, then the host's next 5 kb (no host bases deleted); truth.bedpe: their 8 junctions, in
  the columns simulate-reads --truth-bedpe writes.
- integration.fq.gz: 40 nanopore-like reads of the templates (6-13 kb, --seed 11);
  integration.bam (+ .bai): `minimap2 -ax map-ont host.fa`, sorted: a read across a junction has
  its host parts as primary and supplementary alignments (SA tags) and the virus soft-clipped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from make_integration_data import fasta, write_fasta  # the same FASTA helpers (this folder is on sys.path)

HERE = Path(__file__).resolve().parent
OUT = HERE / "long_reads"
HOST_START, HOST_END = 10_000, 50_000
FLANK = 5000
# (host position of the insertion in host.fa, virus, fragment start, fragment length)
INSERTIONS = [(6_000, "HPV16", 500, 3000), (16_000, "HPV18", 2000, 2500), (26_000, "HPV16", 4500, 4000),
              (36_000 - FLANK, "HPV18", 6000, 3500)]


def sh(cmd: str) -> None:
    subprocess.run(cmd, shell=True, check=True, cwd=OUT, executable="/bin/bash")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    gi = f"{sys.executable} -m genointerp -q simulate-reads"
    hpv = fasta(HERE / "hpv4.fa")
    write_fasta(OUT / "hpv1618.fa", {"HPV16": hpv["HPV16"], "HPV18": hpv["HPV18"]})
    for platform, name in (("nanopore", "ont"), ("hifi", "hifi")):
        sh(f"{gi} -s hpv=hpv1618.fa --circular hpv -s human=../chr20_slice.fa.gz --count hpv=24 --count human=12 "
           f"--platform {platform} --long-mean 4000 --long-sd 2000 --long-min 1000 --long-max 8000 --seed 7 "
           f"-o {name}.fq.gz --force")
    host = fasta(HERE / "chr20_slice.fa.gz")["20"][HOST_START:HOST_END]
    write_fasta(OUT / "host.fa", {"20": host})
    templates, truth = {}, []
    for i, (site, virus, start, length) in enumerate(INSERTIONS, 1):
        genome = hpv[virus]
        fragment = (genome + genome)[start:start + length]  # circular genomes: a fragment may cross the origin
        templates[f"ins{i}"] = host[site - FLANK:site] + fragment + host[site:site + FLANK]
        end = (start + length - 1) % len(genome)
        extra = f"ins{i}\t{start}\t{length}\t+"
        truth.append(f"20\t{site - 1}\t{site}\t{virus}\t{start}\t{start + 1}\tins{i}_left\t0\t+\t-\t{extra}\n")
        truth.append(f"20\t{site}\t{site + 1}\t{virus}\t{end}\t{end + 1}\tins{i}_right\t0\t-\t+\t{extra}\n")
    write_fasta(OUT / "templates.fa", templates)
    with open(OUT / "truth.bedpe", "w") as fh:
        fh.write("#chrom1\tstart1\tend1\tchrom2\tstart2\tend2\tname\tscore\tstrand1\tstrand2\tinsertion\t"
                 "fragment_start\tfragment_length\tfragment_strand\n")
        fh.writelines(truth)
    sh(f"{gi} -s integration=templates.fa --count integration=40 --platform nanopore --long-mean 9000 --long-sd 2000 "
       "--long-min 6000 --long-max 13000 --seed 11 -o integration.fq.gz --force")
    sh("samtools faidx host.fa")
    sh("minimap2 -ax map-ont -t 1 host.fa integration.fq.gz 2>/dev/null | samtools sort -o integration.bam - "
       "&& samtools index integration.bam")
    (OUT / "hpv1618.fa").unlink()


if __name__ == "__main__":
    main()
