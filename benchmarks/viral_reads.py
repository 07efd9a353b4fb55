"""Read sets for judging per-read viral calls on data no choice was made on (benchmarks/viral_calls.py).

Every read is made by ART (`art_illumina -ss HS25`), another simulator than the one the built-in
model was trained and calibrated with, from sequence in ../shared/data and Debian packages:

  known       the HPV genomes the built-in model was trained on (its training_genomes.txt: fresh
              reads, genomes not held out)
  unseen      the HPV genomes of ../shared/data/viral/hpv_genomes.fa the model never saw, by type:
              sorted type names alternate between `val_types` (choices are made on them) and
              `test_types` (reported, never chosen on)
  human       GRCh37 chr20 50.0-56.5 Mb (`human_val`) and 56.5-63.0 Mb (`human_test`); the
              model and index saw 1-50 Mb
  contaminants `polyg` (NovaSeq no-signal reads: all G), `polyg_tail` (human reads whose last
              20-120 bases became G), `adapter` (adapter dimers: TruSeq adapter read-through, then
              G), `lambda` (phage lambda, Debian bowtie2-examples), `phix` (phiX174) and `vector`
              (cloning vectors of at least 400 bp, both from UniVec_Core, Debian ncbi-data, via
              blastdbcmd), `bacteria` (K. pneumoniae strains the model never saw)
  divergent   test-type genomes mutated with 5/10/15 % uniform substitutions (`sub05` ...)

Read lengths 150, 100 and 75 bp (ART's HS25 profile). FASTQ per set under OUT/reads/, named
SET.LENGTH.fq.gz, each read named SET:ART-NAME; made once and reused.

    python benchmarks/viral_reads.py [--shared ../shared/data] [--out bench-output/viral_calls]
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from common import out_dir, require, timed  # noqa: E402

from genointerp.resources import builtin_model_dir  # noqa: E402

HUMAN_VAL, HUMAN_TEST, HUMAN_END = 50_000_000, 56_500_000, 63_000_000
UNIVEC = "/usr/share/ncbi/data/UniVec_Core"
LAMBDA = "/usr/share/doc/bowtie2/examples/reference/lambda_virus.fa.gz"
KLEBS = "/usr/share/doc/kleborate/examples/data/{}.fna.xz"
PHIX_ID, LAMBDA_UNIVEC_ID = "J02482.1", "J02459.1"
# TruSeq read-1 adapter as a dimer reads it: the adapter right after the (absent) insert, the index
# (random here), then what the sequencer reads past the end (no signal: G on two-colour chemistry).
ADAPTER_HEAD, ADAPTER_TAIL = "AGATCGGAAGAGCACACGTCTGAACTCCAGTCAC", "ATCTCGTATGCCGTCTTCTGCTTG"
LENGTHS = (150, 100, 75)
SUB_RATES = (0.05, 0.10, 0.15)


def hpv_type(name: str) -> str:
    return name.split("_v")[0]


def write_fasta(path: Path, records) -> Path:
    with open(path, "w") as fh:
        for name, seq in records:
            fh.write(f">{name}\n" + "".join(seq[i : i + 80] + "\n" for i in range(0, len(seq), 80)))
    return path


def references(shared: Path, out: Path) -> dict[str, Path]:
    """FASTA per read set (made once): name -> path."""
    refs = out / "refs"
    if (refs / "done").exists():
        return {p.stem: p for p in refs.glob("*.fa")}
    refs.mkdir(parents=True, exist_ok=True)
    hpv = [(r.name, r.sequence.upper()) for r in pysam.FastxFile(str(shared / "viral/hpv_genomes.fa"))]
    known_names = set((builtin_model_dir() / "training_genomes.txt").read_text().split())
    unseen_types = sorted({hpv_type(n) for n, _ in hpv if n not in known_names})
    val_types = set(unseen_types[0::2])
    write_fasta(refs / "known.fa", [(n, s) for n, s in hpv if n in known_names])
    write_fasta(refs / "val_types.fa", [(n, s) for n, s in hpv if n not in known_names and hpv_type(n) in val_types])
    test = [(n, s) for n, s in hpv if n not in known_names and hpv_type(n) not in val_types]
    write_fasta(refs / "test_types.fa", test)
    rng = np.random.default_rng(31)
    for rate in SUB_RATES:
        write_fasta(refs / f"sub{int(rate * 100):02d}.fa", [(n, _mutate(s, rate, rng)) for n, s in test])
    chr20 = pysam.FastaFile(str(shared / "human/GRCh37.chr20.fa.gz"))
    write_fasta(refs / "human_val.fa", [("20_val", chr20.fetch("20", HUMAN_VAL, HUMAN_TEST))])
    write_fasta(refs / "human_test.fa", [("20_test", chr20.fetch("20", HUMAN_TEST, HUMAN_END))])
    univec = _univec()
    write_fasta(refs / "phix.fa", [(n, s) for n, s in univec if PHIX_ID in n])
    write_fasta(refs / "vector.fa", [(n, s) for n, s in univec
                                     if len(s) >= 400 and PHIX_ID not in n and LAMBDA_UNIVEC_ID not in n])
    write_fasta(refs / "lambda.fa", [(r.name, r.sequence.upper()) for r in pysam.FastxFile(LAMBDA)])
    import lzma

    from Bio import SeqIO

    bacteria = []
    for strain in ("MGH78578", "Klebs_HS11286"):
        with lzma.open(KLEBS.format(strain), "rt") as fh:
            bacteria += [(f"{strain}:{r.id}", str(r.seq)) for r in SeqIO.parse(fh, "fasta")]
    write_fasta(refs / "bacteria.fa", bacteria)
    (refs / "types.tsv").write_text("".join(f"{t}\t{'val' if t in val_types else 'test'}\n" for t in unseen_types))
    (refs / "done").write_text("ok\n")
    return {p.stem: p for p in refs.glob("*.fa")}


def _mutate(seq: str, rate: float, rng) -> str:
    """Uniform substitutions at `rate` (each to one of the three other bases)."""
    codes = np.frombuffer(seq.encode(), np.uint8).copy()
    at = np.flatnonzero(rng.random(codes.size) < rate)
    letters = np.frombuffer(b"ACGT", np.uint8)
    for i in at:
        choices = letters[letters != codes[i]]
        codes[i] = choices[rng.integers(0, len(choices))]
    return codes.tobytes().decode()


def _univec() -> list[tuple[str, str]]:
    fasta = subprocess.run(["blastdbcmd", "-db", UNIVEC, "-entry", "all"], check=True, capture_output=True,
                           text=True).stdout
    records, name, seq = [], None, []
    for line in fasta.splitlines():
        if line.startswith(">"):
            if name:
                records.append((name, "".join(seq).upper()))
            name, seq = line[1:].split()[0], []
        else:
            seq.append(line.strip())
    if name:
        records.append((name, "".join(seq).upper()))
    return records


# Reads per set at each length: enough for a rate of 1e-4 to be seen (test human: >= 300,000).
PLAN = {"known": 20_000, "val_types": 20_000, "test_types": 20_000, "human_val": 200_000, "human_test": 320_000,
        "lambda": 30_000, "phix": 30_000, "vector": 30_000, "bacteria": 30_000,
        "sub05": 10_000, "sub10": 10_000, "sub15": 10_000}
# at 100 and 75 bp; the validation sets last, so that the others keep their ART seeds
SHORT_PLAN = {"known": 20_000, "test_types": 20_000, "human_test": 100_000, "val_types": 20_000, "human_val": 100_000}


def art(ref: Path, prefix: Path, length: int, n: int, seed: int) -> list[tuple[str, str, str]]:
    """About n ART reads (single-end) spread over the reference's contigs by length."""
    total = sum(len(r.sequence) for r in pysam.FastxFile(str(ref)) if len(r.sequence) > length)
    fold = max(n * length / total, 0.01)
    timed(["art_illumina", "-ss", "HS25", "-l", str(length), "-f", f"{fold:.4f}", "-i", str(ref), "-o", str(prefix),
           "-na", "-rs", str(seed)], stdout=subprocess.DEVNULL)
    recs = [(r.name, r.sequence, r.quality) for r in pysam.FastxFile(f"{prefix}.fq")]
    Path(f"{prefix}.fq").unlink()
    if len(recs) > n:
        keep = np.sort(np.random.default_rng(seed).choice(len(recs), n, replace=False))
        recs = [recs[i] for i in keep]
    return recs


def synthetic(kind: str, n: int, length: int, human: list[tuple[str, str, str]], seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if kind == "polyg":
            seq = "G" * length
        elif kind == "polyg_tail":
            s = human[i % len(human)][1]
            tail = int(rng.integers(20, min(121, length)))
            seq = s[: length - tail] + "G" * tail
        else:  # adapter dimer
            index = "".join("ACGT"[j] for j in rng.integers(0, 4, 8))
            seq = (ADAPTER_HEAD + index + ADAPTER_TAIL + "G" * length)[:length]
        out.append((f"{kind}_{i}", seq, "#" * length if kind == "polyg" else "F" * length))
    return out


def write_set(path: Path, key: str, recs) -> None:
    with gzip.open(path, "wt", compresslevel=6) as fh:
        for name, seq, qual in recs:
            fh.write(f"@{key}:{name}\n{seq}\n+\n{qual}\n")


def make_reads(shared: Path, out: Path) -> dict[tuple[str, int], Path]:
    """(set, length) -> gzipped FASTQ; each made once."""
    refs = references(shared, out)
    reads = out_dir(str(out / "reads"))
    made = {}
    for length in LENGTHS:
        plan = PLAN if length == 150 else SHORT_PLAN
        for j, (key, n) in enumerate(plan.items()):
            path = reads / f"{key}.{length}.fq.gz"
            if not path.exists():
                print(f"ART {key} {length} bp", flush=True)
                write_set(path, key, art(refs[key], reads / f"tmp_{key}", length, n, 100 + j + length))
            made[key, length] = path
        if length == 150:
            human = [(n, s, q) for n, s, q in _read_fastq(made["human_test", 150], 30_000)]
            for j, kind in enumerate(("polyg", "polyg_tail", "adapter")):
                path = reads / f"{kind}.{length}.fq.gz"
                if not path.exists():
                    write_set(path, kind, synthetic(kind, 30_000, length, human, 200 + j))
                made[kind, length] = path
    return made


def _read_fastq(path: Path, limit: int | None = None):
    with pysam.FastxFile(str(path)) as fh:
        for i, r in enumerate(fh):
            if limit is not None and i >= limit:
                return
            yield r.name.split(":", 1)[1], r.sequence, r.quality


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="bench-output/viral_calls")
    args = ap.parse_args()
    require("art_illumina", "blastdbcmd")
    made = make_reads(Path(args.shared), out_dir(args.out))
    print("\n".join(f"{key} {length}: {path}" for (key, length), path in sorted(made.items())))


if __name__ == "__main__":
    main()
