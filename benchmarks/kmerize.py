"""kmerize: tokenisation throughput vs a per-read Python loop, and k-mer counts vs jellyfish.

Reads: 1,000,000 simulated 150 bp reads (genointerp simulate-reads from HPV genomes and GRCh37
chr20 in ../shared/data); the per-read Python loop is timed on the first 100,000 of them. Prints
seconds for the reads each step actually ran on, reads/s and ratios of reads/s; checks that `--counts` equals
`jellyfish count` + `jellyfish dump` exactly, canonical (-C) and not.

    python benchmarks/kmerize.py --shared ../shared/data [--reads 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from itertools import islice

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402

from genointerp.io.sequences import iter_records  # noqa: E402
from genointerp.reads.kmerize import KmerizeRequest, Stats, process_batch  # noqa: E402

LOOP_READS = 100_000  # reads the per-read Python loop is timed on


def per_read_loop(seqs: list[str], k: int) -> list[list[int]]:
    """What a straightforward implementation does: a dict lookup per k-mer per read."""
    from itertools import product

    vocab = {"".join(p): i for i, p in enumerate(product("ACGT", repeat=k))}
    return [[vocab[s[i : i + k]] for i in range(len(s) - k + 1)] for s in seqs if set(s) <= set("ACGT")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--reads", type=int, default=1_000_000)
    ap.add_argument("--count-k", type=int, nargs="*", default=[21, 6], help="k values to count (none: skip)")
    ap.add_argument("--out", default="bench-output/kmerize")
    args = ap.parse_args()
    require("jellyfish")
    out = out_dir(args.out)
    fq = out / "reads.fq"
    timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"viral={args.shared}/viral/hpv_genomes.fa", "--circular", "viral",
                        "-s", f"human={args.shared}/human/GRCh37.chr20.fa.gz", "-n", str(args.reads), "--balance",
                        "-o", str(fq), "--force"])

    t0 = time.perf_counter()
    records = [(n, s, None) for n, s, _ in iter_records(str(fq))]
    t_parse = time.perf_counter() - t0
    req = KmerizeRequest([str(fq)])
    t0 = time.perf_counter()
    for i in range(0, len(records), 65_536):
        process_batch(req, records[i : i + 65_536], Stats(), None)
    t_vec = time.perf_counter() - t0
    # The loop runs at about 40,000 reads/s: timed on the first LOOP_READS reads only (not scaled
    # up), and compared with the vectorised form by reads/s.
    sub = [s for _, s, _ in islice(records, LOOP_READS)]
    t0 = time.perf_counter()
    per_read_loop(sub, 6)
    t_loop = time.perf_counter() - t0
    t_cli = timed(GENOINTERP + ["-q", "kmerize", str(fq), "--label-field", "0", "-o", str(out / "ds"), "--force"])
    n = len(records)
    rows = [
        {"step": "tokenise, vectorised (genointerp)", "seconds": f"{t_vec:.2f}", "reads/s": f"{n / t_vec:,.0f}", "ratio": "1.00x"},
        {"step": f"tokenise, per-read Python loop (first {len(sub):,} reads)", "seconds": f"{t_loop:.2f}",
         "reads/s": f"{len(sub) / t_loop:,.0f}", "ratio": f"{(n / t_vec) / (len(sub) / t_loop):.1f}x slower"},
        {"step": "parse FASTQ (pysam)", "seconds": f"{t_parse:.2f}", "reads/s": f"{n / t_parse:,.0f}", "ratio": ""},
        {"step": "genointerp kmerize end to end", "seconds": f"{t_cli:.2f}", "reads/s": f"{n / t_cli:,.0f}", "ratio": ""},
    ]
    print(f"k=6 tokens of {n:,} reads of 150 bp")
    print(table(rows, ["step", "seconds", "reads/s", "ratio"]))

    if not args.count_k:
        return
    print("\nk-mer counts vs jellyfish 2.3 count + dump (jellyfish -t 2; genointerp is single-threaded)")
    rows = []
    for k in args.count_k:
        for canonical in (False, True):
            flag = ["--canonical"] if canonical else []
            gi = out / f"gi_k{k}_{canonical}.tsv"
            t_gi = timed(GENOINTERP + ["-q", "kmerize", str(fq), "--counts", str(gi), "--count-k", str(k), "--force"] + flag)
            jf, dump = out / f"jf_k{k}.jf", out / f"jf_k{k}_{canonical}.tsv"
            t0 = time.perf_counter()
            subprocess.run(["jellyfish", "count", "-m", str(k), "-s", "200M", "-t", "2", "-o", str(jf), str(fq)]
                           + (["-C"] if canonical else []), check=True)
            with open(dump, "w") as fh:
                subprocess.run(["jellyfish", "dump", "-c", "-t", str(jf)], check=True, stdout=fh)
            t_jf = time.perf_counter() - t0
            # jellyfish dumps in hash order: sort it (outside the timing) and compare byte for byte
            sorted_dump = out / f"jf_k{k}_{canonical}.sorted.tsv"
            subprocess.run(["sort", "-S", "2G", "-o", str(sorted_dump), str(dump)], check=True, env={"LC_ALL": "C"})
            identical = subprocess.run(["cmp", "-s", str(sorted_dump), str(gi)]).returncode == 0
            distinct = int(subprocess.run(["wc", "-l", str(gi)], capture_output=True, text=True).stdout.split()[0])
            rows.append({"k": k, "canonical": canonical, "genointerp s": f"{t_gi:.2f}", "jellyfish s": f"{t_jf:.2f}",
                         "time ratio": f"{t_gi / t_jf:.2f}x", "distinct": f"{distinct:,}", "identical": identical})
            for p in (jf, dump, sorted_dump, gi):
                p.unlink()
    print(table(rows, ["k", "canonical", "genointerp s", "jellyfish s", "time ratio", "distinct", "identical"]))


if __name__ == "__main__":
    main()
