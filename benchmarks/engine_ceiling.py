"""How far more cores can take classify-reads: the share of a run that only the job's own process does.

With --threads N the evidence of each batch runs on N - 1 worker processes and the job's own one,
but reading and parsing the input, the calling rule, the rows and the writing run in the job's
process alone (genointerp.viral.classify.job). This runs classify-reads as a user does, and again
with every batch's evidence replaced by zeros (no look-up, no read to type): the second run is that
serial share alone, and its reads/s is the most any --threads can reach, on any number of cores.
Both at -t 1, best of --repeats, alternated; the start (one read, the same replacement) is taken
off each to give microseconds of CPU per read. Its peer is the machine itself: benchmarks/
viral_engine.py sets the whole run beside kraken2; this script says what a 16- or 64-core node
would leave on the table, measured on a 2-core one.

    python benchmarks/engine_ceiling.py READS.fq.gz [--repeats 3] [--out bench-output/ceiling]
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from classify_reads import head_fastq  # noqa: E402
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

# classify-reads with EvidenceWork giving every read no evidence: the job's own work alone
SERIAL_ONLY = [sys.executable, "-c", """
import sys
import numpy as np
import genointerp.viral.classify.batch_work as work
def no_evidence(self, batch):
    zero = np.zeros(len(batch[1]), np.int64)
    return work.BatchEvidence(zero, zero + 1, np.zeros(zero.size), {})
work.EvidenceWork.__call__ = no_evidence
from genointerp.__main__ import main
sys.argv[0] = "genointerp"
main()
"""]


def classify(program: list[str], fastq: Path, out: Path) -> float:
    """Seconds of one classify-reads run at -t 1."""
    return timed(program + ["-q", "classify-reads", str(fastq), "-t", "1", "-o", str(out / "calls.tsv"), "--force"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fastq", help="gzipped FASTQ, four lines per read")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="bench-output/ceiling")
    args = ap.parse_args()
    fq, out = Path(args.fastq), out_dir(args.out)
    with gzip.open(fq, "rb") as fh:
        reads = sum(1 for _ in fh) // 4
    one = out / "one.fq.gz"
    head_fastq(fq, one, 1)
    runs = {"the whole run": GENOINTERP, "the job's own process alone": SERIAL_ONLY}
    best: dict[str, float] = {}
    start: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, program in runs.items():
            best[name] = min(best.get(name, 1e9), classify(program, fq, out))
            start[name] = min(start.get(name, 1e9), classify(program, one, out))
    rows = [{"run (-t 1)": name, "seconds": f"{best[name]:.2f}", "reads/s": f"{reads / best[name]:,.0f}",
             "µs per read, start off": f"{1e6 * (best[name] - start[name]) / reads:.2f}"} for name in runs]
    print(f"{fq} ({reads:,} reads), best of {args.repeats}:")
    print(table(rows, list(rows[0])))
    whole, serial = (best[name] - start[name] for name in runs)
    print(f"the most --threads can give on any number of cores: {whole / serial:.1f}x one thread "
          f"({reads / serial:,.0f} reads/s once started)")


if __name__ == "__main__":
    main()
