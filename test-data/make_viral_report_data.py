"""Make the per-sample viral report fixtures in test-data/viral_report/ (run from the repository root).

    python test-data/make_viral_report_data.py

Needs ../shared/data (HPV16, HPV31 and HBV genotype C genomes); the human background is
test-data/chr20_slice.fa.gz (100 kb of GRCh37 chr20).
- mix.fq.gz: `genointerp simulate-reads`, 150 bp single reads: 1,500 human, 150 HPV16,
  15 HPV31 (a minor type of the same species group, alpha-9) and 40 HBV genotype C (AB033550,
  named HBV_4 as in the built-in model's references).
- negative.fq.gz: 600 reads of chr20_slice.fa.gz and test-data/ecoli_slice.fa (length-weighted), no
  virus: the third sample of the Snakemake workflow's MultiQC report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "viral_report"
SHARED = Path(os.environ.get("SHARED", HERE.parent.parent / "shared" / "data"))
GENOINTERP = str(Path(sys.executable).parent / "genointerp")


def records(path: Path, names: set[str]) -> str:
    out, keep = [], False
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            keep = line[1:].split()[0] in names
            line = line.split()[0]
        if keep:
            out.append(line + "\n")
    return "".join(out)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "hpv16.fa").write_text(records(SHARED / "viral" / "hpv_genomes.fa", {"HPV16"}))
        (tmp / "hpv31.fa").write_text(records(SHARED / "viral" / "hpv_genomes.fa", {"HPV31"}))
        (tmp / "hbv.fa").write_text(records(SHARED / "viral" / "oncoviruses.fa", {"HBV_4"}))
        subprocess.run([GENOINTERP, "simulate-reads", "-s", f"human={HERE / 'chr20_slice.fa.gz'}",
                        "-s", f"hpv16={tmp / 'hpv16.fa'}", "-s", f"hpv31={tmp / 'hpv31.fa'}", "-s", f"hbv={tmp / 'hbv.fa'}",
                        "--circular", "hpv16", "--circular", "hpv31", "--circular", "hbv",
                        "--count", "human=1500", "--count", "hpv16=150", "--count", "hpv31=15", "--count", "hbv=40",
                        "--seed", "32", "-o", str(OUT / "mix.fq.gz"), "--force"], check=True)
    subprocess.run([GENOINTERP, "simulate-reads", "-s", f"human={HERE / 'chr20_slice.fa.gz'}",
                    "-s", f"bacterial={HERE / 'ecoli_slice.fa'}", "-n", "600", "--seed", "32",
                    "-o", str(OUT / "negative.fq.gz"), "--force"], check=True)


if __name__ == "__main__":
    main()
