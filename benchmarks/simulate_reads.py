"""simulate-reads vs ART (art_illumina -ss HS25) and wgsim: speed, and per-cycle error fidelity.

Same reference (5 Mb of GRCh37 chr20 from ../shared/data/human), same read count, 150 bp
single-end (wgsim is paired-only: half as many pairs). Prints reads/s and ratios, then compares
the per-cycle substitution rate of genointerp reads with ART reads, both measured exactly from
their truth (genointerp read names, ART's SAM), written to per_cycle_substitution.tsv and .png.

    python benchmarks/simulate_reads.py --shared ../shared/data [--reads 500000]
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
import pysam

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402

COMP = str.maketrans("ACGT", "TGCA")
NO_INDEL_CIGAR = re.compile(r"(\d+[=XM])+")  # ART writes extended CIGARs (=/X)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--reads", type=int, default=500_000)
    ap.add_argument("--fidelity-reads", type=int, default=200_000)
    ap.add_argument("--out", default="bench-output/simulate_reads")
    args = ap.parse_args()
    require("art_illumina", "wgsim")
    out = out_dir(args.out)

    ref_path = out / "chr20_35-40Mb.fa"
    seq = pysam.FastaFile(f"{args.shared}/human/GRCh37.chr20.fa.gz").fetch("20", 35_000_000, 40_000_000).upper()
    ref_path.write_text(">chr20_35_40\n" + "\n".join(seq[i : i + 60] for i in range(0, len(seq), 60)) + "\n")
    n = args.reads

    runs = {
        "genointerp": GENOINTERP + ["-q", "simulate-reads", "-s", f"human={ref_path}", "-n", str(n), "--seed", "1",
                                    "-o", str(out / "gi.fq"), "--force"],
        "art_illumina HS25": ["art_illumina", "-ss", "HS25", "-l", "150", "-c", str(n), "-i", str(ref_path),
                              "-o", str(out / "art"), "-na", "-rs", "1"],
        "wgsim": ["wgsim", "-N", str(n // 2), "-1", "150", "-2", "150", "-S", "1", str(ref_path),
                  str(out / "wg1.fq"), str(out / "wg2.fq")],
    }
    rows = []
    for name, cmd in runs.items():
        sec = timed(cmd, stdout=__import__("subprocess").DEVNULL)
        rows.append({"tool": name, "reads": n, "seconds": f"{sec:.2f}", "reads/s": f"{n / sec:,.0f}", "_s": sec})
    base = rows[0]["_s"]
    for r in rows:
        r["time vs genointerp"] = f"{r['_s'] / base:.2f}x"
    print(f"simulate 150 bp reads from 5 Mb of chr20, {n:,} reads each (wgsim: {n // 2:,} pairs)")
    print(table(rows, ["tool", "reads", "seconds", "reads/s", "time vs genointerp"]))

    fidelity(ref_path, seq, out, args.fidelity_reads)


def fidelity(ref_path, seq: str, out, n: int) -> None:
    gi_fq, truth = out / "gi_fid.fq", out / "gi_fid.tsv"
    timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"human={ref_path}", "-n", str(n), "--seed", "2",
                        "-o", str(gi_fq), "--truth", str(truth), "--force"])
    timed(["art_illumina", "-ss", "HS25", "-l", "150", "-c", str(n), "-i", str(ref_path), "-o", str(out / "art_fid"),
           "-sam", "-rs", "2"], stdout=__import__("subprocess").DEVNULL)
    gi = np.zeros((2, 150))
    for rec in pysam.FastxFile(str(gi_fq)):
        _, _, _, start, end, strand, _ = rec.name.split("|")
        start, end = int(start), int(end)
        if end - start != 150:
            continue  # reads with indels do not line up base for base
        ref = seq[start:end]
        if strand == "-":
            ref = ref.translate(COMP)[::-1]
        _count(gi, ref, rec.sequence)
    art = np.zeros((2, 150))
    # ART writes some records whose CIGAR and SEQ disagree (htslib refuses the file), so read the
    # SAM as text and keep the well-formed records without indels.
    with open(out / "art_fid.sam") as sam:
        for line in sam:
            if line.startswith("@"):
                continue
            f = line.split("\t")
            if not NO_INDEL_CIGAR.fullmatch(f[5]) or len(f[9]) != 150:
                continue
            start, read = int(f[3]) - 1, f[9]
            ref = seq[start : start + 150]
            if int(f[1]) & 16:  # SAM stores reverse reads reverse-complemented: back to cycle order
                ref, read = ref.translate(COMP)[::-1], read.translate(COMP)[::-1]
            _count(art, ref, read)
    gi_rate, art_rate = gi[0] / gi[1], art[0] / art[1]
    with open(out / "per_cycle_substitution.tsv", "w") as fh:
        fh.write("cycle\tgenointerp\tart_hs25\n")
        for c in range(150):
            fh.write(f"{c + 1}\t{gi_rate[c]:.6f}\t{art_rate[c]:.6f}\n")
    corr = np.corrcoef(gi_rate, art_rate)[0, 1]
    print(f"\nper-cycle substitution rate over {n:,} reads each (reads without indels):")
    print(f"  mean  genointerp {gi_rate.mean():.5f}   ART {art_rate.mean():.5f}   ratio {gi_rate.mean() / art_rate.mean():.3f}")
    print(f"  cycles 1-10 {gi_rate[:10].mean():.5f} vs {art_rate[:10].mean():.5f};"
          f" cycles 141-150 {gi_rate[-10:].mean():.5f} vs {art_rate[-10:].mean():.5f}")
    print(f"  Pearson r across cycles {corr:.3f}; max |difference| {np.abs(gi_rate - art_rate).max():.5f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(np.arange(1, 151), art_rate, label="ART HS25", lw=1.5)
    ax.plot(np.arange(1, 151), gi_rate, label="genointerp (built-in HiSeq 2500)", lw=1.5, ls="--")
    ax.set_xlabel("cycle")
    ax.set_ylabel("substitution rate")
    ax.set_title("Per-cycle substitution rate, 150 bp reads, chr20")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "per_cycle_substitution.png", dpi=120)
    print(f"  wrote {out / 'per_cycle_substitution.tsv'} and .png")


def _count(acc: np.ndarray, ref: str, read: str) -> None:
    r = np.frombuffer(ref.encode(), np.uint8)
    q = np.frombuffer(read.encode(), np.uint8)
    ok = (r != ord("N")) & (q != ord("N"))
    acc[0] += (r != q) & ok
    acc[1] += ok


if __name__ == "__main__":
    main()
