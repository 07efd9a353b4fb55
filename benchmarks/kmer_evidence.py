"""Which exact-match seed, hits and filter for the k-mer evidence beside XVir (issue 16)?

For each seed pattern (plain k-mers, and seeds that skip every third base), the index is built
exactly as train-xvir builds it (genointerp.viral.evidence.seeds.build_index): the canonical seeds of
the built-in model's 463 training HPV genomes (circular), minus every seed that occurs in its
training negatives (human chr20:1-50 Mb, the bacterial, fungal and protist training genomes),
minus low-complexity windows (entropy < 1.5 bits). It is matched against ART reads
(`art_illumina -ss HS25 -l 150`, benchmarks/classify_reads.py's read sets and seeds) of known HPV
genomes, held-out HPV types and every held-out negative kind, and the table gives the share of
reads with at least 1, 2, 3 or 5 seed hits per set.

The references come from scripts/build_default_model.py's work folder (--work; its held-out
split), so no held-out genome reaches an index.

    python benchmarks/kmer_evidence.py [--work build/default-model] [--per-class 3000] [--seeds 1x21,1x17,codon16,codon18,codon20]

A seed is written `1xK` (plain K-mers) or `codonW` (weight W: "11" then "011" repeated, every
third base skipped; a palindrome, so both strands share it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from classify_reads import heldout_fastq, read_sets  # noqa: E402
from common import out_dir, table  # noqa: E402

from genointerp.seq.joined import encode_joined  # noqa: E402
from genointerp.report import SILENT  # noqa: E402
from genointerp.viral.evidence.seeds import KmerSettings, build_index, load_index  # noqa: E402
from genointerp.viral.model_files import KMER_KEY  # noqa: E402

NEGATIVES = ["human_train.fa", "bacteria_train.fa", "bacteria_wide_train.fa", "fungal_train.fa", "protist_train.fa"]
MIN_HITS = (1, 2, 3, 5)


def seed_pattern(name: str) -> str:
    if name.startswith("1x"):
        return "1" * int(name[2:])
    if name.startswith("codon") and int(name[5:]) % 2 == 0:
        return "11" + "011" * (int(name[5:]) // 2 - 1)
    sys.exit(f"--seeds: {name!r} is not 1xK or codonW (W even)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--per-class", type=int, default=3000)
    ap.add_argument("--seeds", default="1x21,1x17,codon16,codon18,codon20")
    ap.add_argument("--min-entropy", type=float, default=1.5)
    ap.add_argument("--out", default="bench-output/kmer_evidence")
    args = ap.parse_args()
    work, out = Path(args.work), out_dir(args.out)
    negatives = [str(work / ref) for ref in NEGATIVES if (work / ref).exists()]
    sets = read_sets(work, [])
    fq, truth = heldout_fastq(sets, out, args.per_class)
    reads = [(rec.name, rec.sequence) for rec in pysam.FastxFile(str(fq))]
    kind = np.array([truth[name] for name, _ in reads])
    joined = encode_joined([seq for _, seq in reads])
    print(f"{len(reads):,} ART reads; negatives: {', '.join(Path(n).name for n in negatives)}", file=sys.stderr)
    rows = []
    for name in args.seeds.split(","):
        t0 = time.perf_counter()
        settings = KmerSettings(seed_pattern(name), 1, args.min_entropy)
        with tempfile.TemporaryDirectory() as tmp:
            entry = build_index(tmp, [str(work / "hpv_train.fa")], negatives, settings, True, SILENT)
            index = load_index(tmp, {KMER_KEY: entry})
        hits, _ = index.hits(*joined)
        row = {"seed": settings.seed, "weight": settings.weight, "index seeds": f"{entry['n_kmers']:,}",
               "excluded": f"{entry['n_excluded']:,}"}
        for s in sets:
            h = hits[kind == s.key]
            row[s.label] = " / ".join(f"{100 * (h >= m).mean():.2f}" for m in MIN_HITS)
        rows.append(row)
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print(f"% of reads with >= {' / '.join(map(str, MIN_HITS))} seed hits")
    print(table(rows, ["seed", "weight", "index seeds", "excluded", *(s.label for s in sets)]))


if __name__ == "__main__":
    main()
