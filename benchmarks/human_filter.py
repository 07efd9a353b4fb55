"""How far a viral index's human filter reaches beyond the human sequence it was built from.

A viral index leaves out every seed and peptide also found in its negative references, so reads of
human sequence the filter saw carry next to no viral evidence by construction. Reads of human
sequence it did not see must behave alike, or every copy of a repeat family the filter never held,
and every stretch of protein-like sequence, brings a read near the calling line: a user's genome is
mostly sequence no filter was built from.

The filter: the built-in model with both indexes rebuilt from its own viral references minus one
part of GRCh37 chr20 (--filter-from, 1-50 Mb; made once per --out). ART HS25 150 bp reads
(--reads of each), classified with it at the default on 2 threads:
  seen     chr20 30-40 Mb: the filter holds its copies
  unseen   chr20 52-62 Mb: the same chromosome, copies the filter did not hold
  other    GRCh37 chr22 20-21 Mb, another chromosome (Debian hisat2's example reference,
           /usr/share/doc/hisat2/examples/reference/22_20-21M.fa: --other)
  shuffled the unseen reads, each read's bases shuffled (its own letters, so its composition, but
           no codons, peptides or repeats): what chance alone brings near the line, the floor
           that no filter of human sequence can lower, against which the unseen set is also set
Per set: the share of reads with any codon-seed hit, over 5 bits of evidence (about half the
calling line of 9: "near the line") and called viral (with a 95 % Poisson bound); and each unseen set's rates over
the seen one's with a 95 % interval (the sets hold as many reads, so a rate ratio is a count ratio).
The filter generalises where the near-line ratio is within 2x and no set has over 1e-5 called.
The seen set is near-line-free by construction (the filter left out every seed it holds, chance
matches included), so the shuffled set is the fairer floor: an unseen set within 2x of it brings
no more reads near the line than chance does.
Results (2026-11-28, benchmarks/README.md "the human filter"): at --reads 1600000, near-line reads
0 (seen) / 34 (unseen, 5 loci) / 159 (other, 156 at one locus) / 49 (shuffled), none called in
any set; unseen over shuffled 0.69x (95 % 0.43-1.10x).

    python benchmarks/human_filter.py [--shared ../shared/data] [--reads 320000] [--out bench-output/filter]
        [--filter-from 20:1-50000000] [--seen 20:30000001-40000000] [--unseen 20:52000001-62000000]
        [--other 22_20-21M.fa]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402
from viral_calls import interval, reindexed_model  # noqa: E402
from viral_engine import OTHER_HUMAN, fasta_records, region_fasta, write_fastq  # noqa: E402

NEAR_LINE = 5.0  # bits: "near the line", about half the built-in rule's calling line of 9


def set_reads(fasta: Path, out: Path, stem: str, n: int, seed: int) -> Path:
    """A gzipped FASTQ of n ART reads of `fasta` (made once per --out)."""
    fq = out / f"{stem}_{n}.fq.gz"
    if not fq.exists():
        write_fastq(fasta_records(fasta, out / f"art_{stem}", n, seed), fq)
    return fq


def filter_model(shared: Path, region: str, out: Path) -> Path:
    """The built-in model with both viral indexes rebuilt from its own references minus the
    human sequence of `region` of GRCh37 chr20 alone (made once per --out)."""
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.model_files import REFS_FILE

    folder = out / f"filter_{region.replace(':', '_').replace('-', '_')}"
    if (folder / "done").exists():
        return folder
    negative = region_fasta(shared, region, out, f"negative_{folder.name}")
    return reindexed_model(folder, [str(builtin_model_dir() / REFS_FILE)], [str(negative)])


def shuffled_reads(fq: Path, out: Path, seed: int) -> Path:
    """`fq` with each read's bases (and its qualities with them) put in a random order, the same
    for a seed (made once per --out)."""
    shuffled = out / f"shuffled_{fq.name}"
    if shuffled.exists():
        return shuffled
    rng = np.random.default_rng(seed)
    with gzip.open(fq, "rb") as fh:
        lines = fh.read().splitlines()
    names, seqs, quals = lines[0::4], lines[1::4], lines[3::4]
    out_seqs, out_quals = list(seqs), list(quals)
    by_length: dict[int, list[int]] = {}
    for i, seq in enumerate(seqs):
        by_length.setdefault(len(seq), []).append(i)
    for length, rows in by_length.items():
        for at in range(0, len(rows), 65536):  # a block of reads at a time: one random key per base
            block = rows[at : at + 65536]
            order = np.argsort(rng.random((len(block), length)), axis=1)
            picked = np.arange(len(block))[:, None], order
            bases = np.frombuffer(b"".join(seqs[i] for i in block), np.uint8).reshape(len(block), length)[picked]
            marks = np.frombuffer(b"".join(quals[i] for i in block), np.uint8).reshape(len(block), length)[picked]
            for j, i in enumerate(block):
                out_seqs[i], out_quals[i] = bases[j].tobytes(), marks[j].tobytes()
    write_fastq(((n[1:].split()[0].decode(), s.decode(), q.decode()) for n, s, q in zip(names, out_seqs, out_quals)),
                shuffled)
    return shuffled


def poisson_interval(k: int) -> tuple[float, float]:
    """A 95 % interval for a Poisson mean from k events (Garwood's exact interval)."""
    from scipy.stats import chi2

    low = chi2.ppf(0.025, 2 * k) / 2 if k else 0.0
    return low, chi2.ppf(0.975, 2 * k + 2) / 2


def ratio_interval(k_a: int, k_b: int) -> tuple[float, float]:
    """A 95 % interval for the ratio of two Poisson rates over equal read counts, from k_a and k_b
    events (the binomial split of k_a + k_b, Clopper-Pearson)."""
    if k_a + k_b == 0:
        return 0.0, float("inf")
    lo, hi = interval(k_a, k_a + k_b)
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
    ap.add_argument("--filter-from", default="20:1-50000000", help="the part of chr20 the filter is built from")
    ap.add_argument("--seen", default="20:30000001-40000000", help="a region of chr20 the filter was built from")
    ap.add_argument("--unseen", default="20:52000001-62000000", help="a region of chr20 it was not")
    ap.add_argument("--other", default=str(OTHER_HUMAN), help="a FASTA of human sequence of another chromosome")
    ap.add_argument("--reads", type=int, default=320_000)
    ap.add_argument("--out", default="bench-output/filter")
    args = ap.parse_args()
    require("art_illumina", "samtools")
    if not Path(args.other).is_file():
        sys.exit(f"--other {args.other}: no such file (`make bench-deps` installs Debian's hisat2, which holds it)")
    shared, out = Path(args.shared), out_dir(args.out)
    model = filter_model(shared, args.filter_from, out)
    sets = {"seen": (f"chr{args.seen}", region_fasta(shared, args.seen, out, "seen"), 21),
            "unseen": (f"chr{args.unseen}", region_fasta(shared, args.unseen, out, "unseen"), 11),
            "other": (Path(args.other).name, Path(args.other), 13)}
    results = {}
    reads = {kind: set_reads(fasta, out, kind, args.reads, seed) for kind, (_, fasta, seed) in sets.items()}
    reads["shuffled"] = shuffled_reads(reads["unseen"], out, 17)
    sets["shuffled"] = (f"chr{args.unseen}, bases shuffled in each read", None, 17)
    for kind, (label, _, _) in sets.items():
        fq = reads[kind]
        calls = out / f"{kind}.tsv"
        timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-m", str(model), "-t", "2", "-o", str(calls), "--force"])
        results[kind] = rates(calls) | {"label": label}
    print(f"filter: the built-in model's indexes less the seeds of chr{args.filter_from} ({model})")
    rows = [{"human reads": f"{kind}: {r['label']}", "reads": f"{r['reads']:,}",
             "any seed hit": f"{100 * r['hit']:.3f} % ({r['hit_n']})",
             f"over {NEAR_LINE:g} bits": f"{100 * r['near']:.4f} % ({r['near_n']})",
             "called viral": f"{r['viral']:.1e} ({r['viral_n']}; 95 % up to {poisson_interval(r['viral_n'])[1] / r['reads']:.1e})"}
            for kind, r in results.items()]
    print(table(rows, list(rows[0])))
    for kind, base in (("unseen", "seen"), ("other", "seen"), ("unseen", "shuffled"), ("other", "shuffled")):
        for label, key in (("near-line", "near_n"), ("any-seed-hit", "hit_n")):
            # equal read counts (--reads) make the rate ratio the event ratio
            k_a, k_b = results[kind][key], results[base][key]
            if not k_a and not k_b:
                print(f"{kind} over {base}, {label} rate: no reads in either; more reads (--reads) are needed")
                continue
            lo, hi = ratio_interval(k_a, k_b)
            ratio = k_a / k_b if k_b else float("inf")
            print(f"{kind} over {base}, {label} rate: {ratio:.2f}x (95 % {lo:.2f}-{hi:.2f}x)")
    print("the filter generalises where the near-line ratios are within 2x (of the seen set, which is empty by "
          "construction, or of the shuffled set, chance's floor) and no set is over 1e-5 called viral")
    (out / "result.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
