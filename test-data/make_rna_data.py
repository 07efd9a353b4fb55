"""Make the RNA-seq fixture test-data/rna/ (run from the repository root).

    python test-data/make_rna_data.py

Needs genointerp installed. From files already in test-data/:
- hpv16_e6i_e7.fa: HPV16's spliced E6*I/E7 transcript (hpv4.fa's HPV16, the PaVE reference
  genome): E6's start (nt 83) to the E6*I donor (nt 226), joined to the acceptor (nt 409) through
  E7's stop codon (nt 858); 1-based, inclusive. The junction lies at transcript base 144.
- rna.fq.gz: 40 reads of 150 bp of the transcript (label `e6i_e7`) and 560 of the 100 kb of GRCh37
  chr20 (label `human`), `simulate-reads --seed 5`; the read names carry the truth.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from make_integration_data import fasta, write_fasta  # the same FASTA helpers (this folder is on sys.path)

HERE = Path(__file__).resolve().parent
OUT = HERE / "rna"
E6_START, DONOR, ACCEPTOR, E7_END = 83, 226, 409, 858


def main() -> None:
    OUT.mkdir(exist_ok=True)
    hpv16 = fasta(HERE / "hpv4.fa")["HPV16"]
    write_fasta(OUT / "hpv16_e6i_e7.fa", {"HPV16_E6I_E7": hpv16[E6_START - 1:DONOR] + hpv16[ACCEPTOR - 1:E7_END]})
    subprocess.run(f"{sys.executable} -m genointerp -q simulate-reads -s e6i_e7=hpv16_e6i_e7.fa "
                   "-s human=../chr20_slice.fa.gz --count e6i_e7=40 --count human=560 --seed 5 -o rna.fq.gz --force",
                   shell=True, check=True, cwd=OUT)


if __name__ == "__main__":
    main()
