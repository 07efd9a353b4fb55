"""How much can exact k-mer matches tell? The first measurement for k-mer evidence beside XVir (issue 16).

An index of canonical k-mers (both strands in one) of the built-in model's training HPV genomes
(circular: wrapped), minus every k-mer of its human training sequence (chr20:1-50,000,000), minus
low-complexity k-mers (Shannon entropy of the k-mer's bases below a threshold), is matched against
simulated 150 bp reads (genointerp simulate-reads, HiSeq 2500-like errors) from the training
genomes, from the held-out HPV types and from held-out chr20 (50 Mb to the end). It prints, for
k = 21, 25, 31 and three entropy thresholds, the share of reads with at least 1, 2, 3 or 5 index hits.

The split into training and held-out HPV types is the built-in model's (scripts/build_default_model.py),
so no held-out genome or chromosome reaches the index. Bacterial and other negatives are left to
the full benchmark (benchmarks/classify_reads.py), which needs Debian's example genomes.

    python benchmarks/kmer_evidence.py --shared ../shared/data [--reads 5000] [--human-reads 20000]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, table, timed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_CODE = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"ACGT"):
    _CODE[_c] = _CODE[_c + 32] = _i


def recipe():
    """scripts/build_default_model.py as a module: its held-out split and FASTA writer."""
    spec = importlib.util.spec_from_file_location("build_default_model", ROOT / "scripts" / "build_default_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical_kmers(seq: bytes, k: int, circular: bool = False) -> np.ndarray:
    """uint64 (n,) 2-bit codes of min(k-mer, its reverse complement) for every window of `seq`
    holding only A/C/G/T (k <= 32)."""
    if circular:
        seq = seq + seq[: k - 1]
    codes = _CODE[np.frombuffer(seq, np.uint8)]
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, np.uint64)
    invalid = np.convolve((codes == 255).astype(np.int32), np.ones(k, np.int32), "valid") > 0
    c = np.where(codes == 255, 0, codes).astype(np.uint64)
    fwd, rev = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for i in range(k):
        fwd = (fwd << np.uint64(2)) | c[i : i + n]
        rev |= (np.uint64(3) - c[i : i + n]) << np.uint64(2 * i)
    return np.minimum(fwd, rev)[~invalid]


def base_entropy(kmers: np.ndarray, k: int) -> np.ndarray:
    """float64 (n,) Shannon entropy (bits, 0-2) of the base composition of each k-mer code."""
    bases = np.stack([(kmers >> np.uint64(2 * i)) & np.uint64(3) for i in range(k)], axis=1)
    freq = np.stack([(bases == b).sum(axis=1) for b in range(4)], axis=1) / k
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(freq > 0, freq * np.log2(freq), 0.0).sum(axis=1)


def hits_per_read(reads: list[bytes], index: np.ndarray, k: int) -> np.ndarray:
    """int64 (reads,) number of each read's k-mers found in the sorted index."""
    per = [canonical_kmers(r, k) for r in reads]
    every = np.concatenate(per)
    owner = np.repeat(np.arange(len(per)), [len(x) for x in per])
    at = np.searchsorted(index, every)
    at[at == len(index)] = 0
    return np.bincount(owner[index[at] == every], minlength=len(per))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--reads", type=int, default=5000, help="Reads from training genomes and from held-out types.")
    ap.add_argument("--human-reads", type=int, default=20000)
    ap.add_argument("--out", default="bench-output/kmer_evidence")
    args = ap.parse_args()
    shared, out, bdm = Path(args.shared), out_dir(args.out), recipe()
    hpv = [(r.name, r.sequence) for r in pysam.FastxFile(str(shared / "viral" / "hpv_genomes.fa"))]
    held = bdm.heldout_types([n for n, _ in hpv])
    train = [(n, s) for n, s in hpv if bdm.hpv_type(n) not in held]
    chr20 = pysam.FastaFile(str(shared / "human" / "GRCh37.chr20.fa.gz"))
    bdm.write_fasta(out / "hpv_train.fa", train)
    bdm.write_fasta(out / "hpv_heldout.fa", [(n, s) for n, s in hpv if bdm.hpv_type(n) in held])
    bdm.write_fasta(out / "human_heldout.fa", [("20_heldout", chr20.fetch("20", bdm.HUMAN_SPLIT, chr20.get_reference_length("20")))])
    reads = {}
    for name, ref, n, circular in (("training genomes", "hpv_train.fa", args.reads, True),
                                   ("held-out HPV types", "hpv_heldout.fa", args.reads, True),
                                   ("held-out human chr20", "human_heldout.fa", args.human_reads, False)):
        fq = out / f"{ref.split('.')[0]}.fq"
        timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"x={out / ref}", *(["--circular", "x"] if circular else []),
                            "-n", str(n), "--seed", "7", "-o", str(fq), "--force"])
        reads[name] = [r.sequence.encode() for r in pysam.FastxFile(str(fq))]
    print(f"{len(train)} training genomes; {len(hpv) - len(train)} genomes of {len(held)} held-out types", flush=True)
    human = chr20.fetch("20", 0, bdm.HUMAN_SPLIT).encode()
    rows = []
    for k in (21, 25, 31):
        t0 = time.perf_counter()
        viral = np.unique(np.concatenate([canonical_kmers(s.encode(), k, circular=True) for _, s in train]))
        in_human = np.isin(viral, np.unique(canonical_kmers(human, k)), assume_unique=True)
        entropy = base_entropy(viral, k)
        for min_entropy in (0.0, 1.5, 1.8):
            index = viral[~in_human & (entropy >= min_entropy)]
            row = {"k": k, "min entropy": min_entropy, "index k-mers": f"{len(index):,}",
                   "minus human": int(in_human.sum()), "minus low-complexity": int((~in_human & (entropy < min_entropy)).sum())}
            for name, rs in reads.items():
                hits = hits_per_read(rs, index, k)
                row[name] = " / ".join(f"{(hits >= m).mean():.4f}" for m in (1, 2, 3, 5))
            rows.append(row)
        print(f"k={k}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print("share of reads with >= 1 / 2 / 3 / 5 index hits")
    print(table(rows, ["k", "min entropy", "index k-mers", "minus human", "minus low-complexity", *reads]))


if __name__ == "__main__":
    main()
