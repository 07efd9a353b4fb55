"""How far a viral model's human filter reaches beyond the human sequence it was built from.

The built-in model's viral indexes leave out every seed and peptide also found in GRCh37 chr20
1-50 Mb (their negatives). Reads of human sequence the filter saw carry next to no viral evidence
by construction; reads of human sequence it did not see should behave alike, or a genome's other
copies of the same repeat families (every chromosome but the one seen) bring evidence near the
calling line. ART HS25 150 bp reads of a region the filter saw and of one it did not, classified
with the model (default evidence, 2 threads): per region, the share of reads over 5 bits of
evidence (half the calling line of 10: "near the line"), the share with any seed hit, and the
share called viral (with a 95 % Poisson bound), and the unseen region's rate over the seen one's
with a 95 % interval (the reads are as many in both, so the rate ratio is the count ratio).

    python benchmarks/human_filter.py [--shared ../shared/data] [--seen 20:30000001-40000000]
        [--unseen 20:52000001-62000000] [--reads 320000] [--model DIR] [--out bench-output/filter]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402
from viral_engine import region_records, write_fastq  # noqa: E402

NEAR_LINE = 5.0  # bits: half the built-in rule's calling line


def region_reads(shared: Path, region: str, out: Path, n: int, seed: int) -> Path:
    """A gzipped FASTQ of n ART reads of `region` of GRCh37 chr20 (made once per --out)."""
    name = region.replace(":", "_").replace("-", "_")
    fq = out / f"{name}_{n}.fq.gz"
    if not fq.exists():
        write_fastq(region_records(shared, region, out, name, n, seed), fq)
    return fq


def poisson_interval(k: int) -> tuple[float, float]:
    """A 95 % interval for a Poisson mean from k events (Garwood's exact interval)."""
    from scipy.stats import chi2

    low = chi2.ppf(0.025, 2 * k) / 2 if k else 0.0
    return low, chi2.ppf(0.975, 2 * k + 2) / 2


def ratio_interval(k_a: int, k_b: int) -> tuple[float, float]:
    """A 95 % interval for the ratio of two Poisson rates over equal read counts, from k_a and k_b
    events (the binomial split of k_a + k_b, Clopper-Pearson)."""
    from scipy.stats import beta

    n = k_a + k_b
    if n == 0:
        return 0.0, float("inf")
    lo = beta.ppf(0.025, k_a, k_b + 1) if k_a else 0.0
    hi = beta.ppf(0.975, k_a + 1, k_b) if k_b else 1.0
    return lo / (1 - lo), (hi / (1 - hi) if hi < 1 else float("inf"))


def rates(calls: Path) -> dict[str, float]:
    """Reads, and the shares of them with a seed hit, over NEAR_LINE bits and called viral."""
    n = hit = near = viral = 0
    with open(calls) as fh:
        columns = fh.readline().rstrip("\n").split("\t")
        at = {c: columns.index(c) for c in ("call", "kmer_hits", "bits")}
        for line in fh:
            row = line.rstrip("\n").split("\t")
            n += 1
            hit += row[at["kmer_hits"]] not in ("0", "NA")
            near += row[at["bits"]] != "NA" and float(row[at["bits"]]) > NEAR_LINE
            viral += row[at["call"]] == "viral"
    return {"reads": n, "hit": hit / n, "near": near / n, "viral": viral / n, "hit_n": hit, "near_n": near,
            "viral_n": viral}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--seen", default="20:30000001-40000000", help="a region the filter was built from")
    ap.add_argument("--unseen", default="20:52000001-62000000", help="a region it was not")
    ap.add_argument("--reads", type=int, default=320_000)
    ap.add_argument("--model", help="a model folder (default: the built-in model)")
    ap.add_argument("--out", default="bench-output/filter")
    args = ap.parse_args()
    require("art_illumina", "samtools")
    shared, out = Path(args.shared), out_dir(args.out)
    results = {}
    for kind, region, seed in (("seen", args.seen, 21), ("unseen", args.unseen, 11)):
        fq = region_reads(shared, region, out, args.reads, seed)
        calls = out / f"{kind}.tsv"
        timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-t", "2", "-o", str(calls), "--force"]
              + (["-m", args.model] if args.model else []))
        results[kind] = rates(calls) | {"region": region}
    rows = [{"human reads": f"{kind}: chr{r['region']}", "reads": f"{r['reads']:,}",
             "any seed hit": f"{100 * r['hit']:.3f} % ({r['hit_n']})",
             f"over {NEAR_LINE:g} bits": f"{100 * r['near']:.4f} % ({r['near_n']})",
             "called viral": f"{r['viral']:.1e} ({r['viral_n']}; 95 % up to {poisson_interval(r['viral_n'])[1] / r['reads']:.1e})"}
            for kind, r in results.items()]
    print(table(rows, list(rows[0])))
    seen, unseen = results["seen"], results["unseen"]
    # equal read counts (--reads) make the rate ratio the event ratio
    for label, key in (("near-line", "near_n"), ("any-seed-hit", "hit_n")):
        lo, hi = ratio_interval(unseen[key], seen[key])
        if not seen[key] and not unseen[key]:
            print(f"{label} rate, unseen over seen: no reads in either; more reads (--reads) are needed")
            continue
        ratio = unseen[key] / seen[key] if seen[key] else float("inf")
        print(f"{label} rate, unseen over seen: {ratio:.2f}x (95 % {lo:.2f}-{hi:.2f}x)")
    print("the filter generalises where the near-line ratio is within 2x")


if __name__ == "__main__":
    main()
