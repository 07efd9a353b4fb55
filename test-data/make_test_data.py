"""Rebuild the small files in test-data/ from the project's real data (../shared/data).

Sources (public): HPV genomes from PaVE-derived collections (viral/hpv_genomes.fa), GRCh37 chr20
from Debian's vt-examples (human/GRCh37.chr20.fa.gz), E. coli 536 from Debian's bowtie-examples;
see README "Data". Run from the repository root with genointerp installed:
python test-data/make_test_data.py [SHARED_DATA_DIR]
"""

import gzip
import subprocess
import sys
from pathlib import Path

import pysam
from Bio import SeqIO
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

shared = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
out = Path(__file__).resolve().parent

# Four HPV genomes: two high-risk types, a low-risk type and HPV142, which carries an IUPAC letter.
keep = ["HPV16", "HPV18", "HPV6", "HPV142"]
hpv = {rec.name: rec.sequence for rec in pysam.FastxFile(str(shared / "viral/hpv_genomes.fa")) if rec.name in keep}
with open(out / "hpv4.fa", "w") as fh:
    for name in keep:
        seq = hpv[name]
        fh.write(f">{name}\n" + "".join(seq[i : i + 70] + "\n" for i in range(0, len(seq), 70)))

# The same HPV16 genome as a GenBank flat file, as viral references are often distributed.
rec = SeqRecord(Seq(hpv["HPV16"]), id="HPV16.1", name="HPV16", description="Human papillomavirus type 16, complete genome")
rec.annotations.update(molecule_type="DNA", topology="circular", data_file_division="VRL")
SeqIO.write(rec, out / "hpv16.gb", "genbank")

# 100 kb of human chr20 starting inside the leading N block (positions 59,000-159,000), so the
# slice has real N runs; bgzip-compressed and faidx-indexed like the full chromosome.
fasta = pysam.FastaFile(str(shared / "human/GRCh37.chr20.fa.gz"))
chunk = fasta.fetch("20", 59_000, 159_000)
plain = out / "chr20_slice.fa"
plain.write_text(">20\n" + "".join(chunk[i : i + 60] + "\n" for i in range(0, len(chunk), 60)))
pysam.tabix_compress(str(plain), str(plain) + ".gz", force=True)
plain.unlink()
pysam.faidx(str(plain) + ".gz")

# A synthetic ART-format profile: every cycle Q10 (10 % errors) or Q40, 60:40; tests the parser and
# gives an error rate the tests can predict: 0.6*0.1 + 0.4*0.0001 = 0.06004 per base.
with open(out / "art_q10_q40_L150.txt", "w") as fh:
    for base in ".ACGT":
        for cycle in range(150):
            fh.write(f"{base}\t{cycle}\t10\t40\n{base}\t{cycle}\t600\t1000\n")
# 50 kb of E. coli 536 (Debian bowtie-examples): bacterial contamination in the tumour-like sample.
ecoli_path = Path("/usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz")
with gzip.open(ecoli_path, "rt") as fh:
    ecoli = "".join(line.strip() for line in fh if not line.startswith(">"))[1_000_000:1_050_000]
(out / "ecoli_slice.fa").write_text(">Ecoli536_1000000\n" + "".join(ecoli[i : i + 80] + "\n" for i in range(0, len(ecoli), 80)))

# A tumour-like sample for `make run`: 2,000 reads, mostly human, 2 % HPV, 1 % bacterial.
tumor = out / "tumor_small.fq.gz"
tumor.unlink(missing_ok=True)
subprocess.run([sys.executable, "-m", "genointerp", "-q", "simulate-reads", "-s", f"human={out / 'chr20_slice.fa.gz'}",
                "-s", f"viral={out / 'hpv4.fa'}", "--circular", "viral", "-s", f"bacterial={out / 'ecoli_slice.fa'}",
                "--count", "human=1940", "--count", "viral=40", "--count", "bacterial=20", "--seed", "7", "-o", str(tumor)],
               check=True)
print("wrote", sorted(p.name for p in out.iterdir() if p.name != "make_test_data.py"))
