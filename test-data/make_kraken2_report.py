"""Make test-data/viral_report/negative.kraken2.report.txt: a real kraken2 report of one bundled sample
(run from the repository root).

    python test-data/make_kraken2_report.py --db bench-output/engine/kraken2_db

(the committed report was made with `--db /work/bench/engine/kraken2_db`, from
`python benchmarks/viral_engine.py --out /work/bench/engine`.)

The database is the one benchmarks/viral_engine.py builds (benchmarks/classify_reads.py, function
`kraken_db`) from the built-in model's training genomes under ../shared/data, and leaves in
OUT/kraken2_db (OUT is its --out, default bench-output/engine):
  - viral: viral/hpv_genomes.fa + viral/oncoviruses.fa (every HPV genome and the other human
    oncoviruses), all under taxid 333760 "Human papillomavirus";
  - human: GRCh37 chr20 1-50 Mb (human/GRCh37.chr20.fa.gz), taxid 9606 "Homo sapiens";
  and a flat hand-made taxonomy (every taxon a child of the root, taxid 1). Built with
  `kraken2-build --add-to-library ... --no-masking` and `kraken2-build --build` (defaults: k=35,
  l=31). viral_engine.py's database holds no bacteria: its work folder has the viral and human
  genomes only (classify_reads.py's own database adds bacteria etc. where its --work has them).

The sample is test-data/viral_report/negative.fq.gz (make_viral_report_data.py: 600 reads of
chr20_slice.fa.gz and ecoli_slice.fa, length-weighted, no virus): a sample with unclassified reads,
so that the report opens with kraken2's `unclassified` line, the line (with `root`) that MultiQC's
kraken module recognises a report by. The command, kraken2 2.1.2 (`kraken2 --version`: "Kraken
version 2.1.2"), default options (no --report-zero-counts, no --use-names, no confidence threshold):

    kraken2 --db DB --threads 1 --gzip-compressed --report test-data/viral_report/negative.kraken2.report.txt \\
        --output /dev/null test-data/viral_report/negative.fq.gz

The report (six tab-separated columns: percent of reads in the clade, reads in the clade, reads
assigned directly, rank code, taxid, name indented two spaces per level) counts reads, so it does
not depend on --threads. It holds: unclassified 200 (the E. coli reads: the database has no
bacteria), root 400, Homo sapiens 400. The rank-code column is empty but for `U`: kraken2 2.1.x's
known bug (DerrickWood/kraken2 issues 759, 796, 883, 888; kraken2-inspect shows the same on this
database, and a database built with NCBI-style 13-column nodes.dmp did too). MultiQC 1.35 reads
the report all the same (unclassified 200, root 400).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "viral_report" / "negative.fq.gz"
REPORT = HERE / "viral_report" / "negative.kraken2.report.txt"
KRAKEN2_VERSION = "2.1.2"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, type=Path,
                    help="kraken2 database built by benchmarks/viral_engine.py (its --out folder's kraken2_db)")
    ap.add_argument("--report", type=Path, default=REPORT, help=f"report to write (default {REPORT.relative_to(HERE.parent)})")
    args = ap.parse_args()
    if not (args.db / "hash.k2d").exists():
        sys.exit(f"{args.db}: not a kraken2 database (no hash.k2d); run benchmarks/viral_engine.py first")
    version = subprocess.run(["kraken2", "--version"], check=True, capture_output=True, text=True).stdout
    found = re.search(r"Kraken version (\S+)", version)
    if not found or found.group(1) != KRAKEN2_VERSION:
        print(f"warning: kraken2 {found.group(1) if found else '?'}, the committed report came from {KRAKEN2_VERSION}",
              file=sys.stderr)
    subprocess.run(["kraken2", "--db", str(args.db), "--threads", "1", "--gzip-compressed", "--report", str(args.report),
                    "--output", "/dev/null", str(SAMPLE)], check=True)


if __name__ == "__main__":
    main()
