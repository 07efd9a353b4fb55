"""classify-reads' engine against kraken2, side by side in one run: start-up, reads/s at 1 and 2
threads, peak memory, and the same bytes whatever the threads, chunks or stdin.

Reads are simulated by ART (art_illumina -ss HS25 -l 150, single-end), gzipped FASTQ:
    human      GRCh37 chr20 52-62 Mb: the built-in model and its index were fitted on chr20 1-50 Mb,
               so no choice saw these reads (--reads of them)
    tumour     the same human reads with 1 % HPV reads (every genome of hpv_genomes.fa)
kraken2 gets a database of the genomes the built-in model was built from (../shared/data's HPV
genomes and oncoviruses, chr20 1-50 Mb) and a flat hand-made taxonomy (benchmarks/classify_reads.py).

Measured (wall-clock, end to end: start-up, parsing, scoring, output):
  - start: classify-reads on one read, best of three: at the default (the evidence decides it, so
    the model and torch never load) and with --model-all (the model's process imports torch);
    kraken2 on the same read (its database load);
  - pace: reads/s of genointerp (default evidence) and kraken2 at 1 and 2 threads, and at 1
    thread pinned to one core (taskset), best of two, and the ratio; peak resident memory (/usr/bin/time -v: the largest process of the run; the
    job's process, its workers and the model's process are separate, the workers sharing the
    memory-mapped index pages);
  - same answers: the calls TSV and summary of -t 1, -t 2, --chunk 1/2 + 2/2 merged and stdin,
    compared byte for byte (the benchmark stops if any differs).

    python benchmarks/viral_engine.py [--shared ../shared/data] [--reads 320000] [--out bench-output/engine]
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from classify_reads import art_reads, kraken_db  # noqa: E402
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402

HUMAN_REGION = "20:52000001-62000000"  # the built-in model's human training sequence is chr20 1-50 Mb
VIRAL_SHARE = 0.01


def fastq_records(path: Path):
    with open(path) as fh:
        while header := fh.readline():
            seq, _, qual = fh.readline().strip(), fh.readline(), fh.readline().strip()
            yield header[1:].split()[0], seq, qual


def write_fastq(records, path: Path) -> int:
    n = 0
    with gzip.open(path, "wt", compresslevel=6) as fh:
        for name, seq, qual in records:
            fh.write(f"@{name}\n{seq}\n+\n{qual}\n")
            n += 1
    return n


def make_reads(shared: Path, out: Path, n: int) -> dict[str, Path]:
    """The human and tumour-like gzipped FASTQs (made once per --out and --reads)."""
    files = {"human": out / f"human_{n}.fq.gz", "tumour": out / f"tumour_{n}.fq.gz"}
    if all(p.exists() for p in files.values()):
        return files
    region = out / "human_region.fa"
    with open(region, "w") as fh:
        subprocess.run(["samtools", "faidx", str(shared / "human/GRCh37.chr20.fa.gz"), HUMAN_REGION], stdout=fh, check=True)
    human = list(fastq_records(art_reads(region, out / "art_human", int(n * 1.02), 11)))[:n]
    genomes = shared / "viral/hpv_genomes.fa"
    n_genomes = sum(1 for line in open(genomes) if line.startswith(">"))
    viral = list(fastq_records(art_reads(genomes, out / "art_hpv", -(-int(n * VIRAL_SHARE) // n_genomes) + 1, 12)))
    rng = random.Random(3)
    tumour = human[: n - int(n * VIRAL_SHARE)] + rng.sample(viral, int(n * VIRAL_SHARE))
    rng.shuffle(tumour)
    write_fastq(human, files["human"])
    write_fastq(tumour, files["tumour"])
    return files


def measured(cmd: list[str], stdin=None) -> tuple[float, float]:
    """Wall seconds and the peak resident memory (MB) of the largest process of `cmd`."""
    t0 = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], stdin=stdin, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - t0
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    return secs, int(rss.group(1)) / 1024 if rss else float("nan")


def best(cmd: list[str], repeats: int) -> tuple[float, float]:
    runs = [measured(cmd) for _ in range(repeats)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def start_up(out: Path, db: Path) -> list[dict]:
    one = out / "one.fq"
    one.write_text("@one\n" + "ACGTTGCAAC" * 15 + "\n+\n" + "I" * 150 + "\n")
    rows = []
    for name, cmd in (("genointerp (evidence decides; no torch)", GENOINTERP + ["-q", "classify-reads", str(one), "-o", str(out / "one.tsv"), "--force"]),
                      ("genointerp --model-all (torch imported)", GENOINTERP + ["-q", "classify-reads", str(one), "--model-all", "-o", str(out / "one.tsv"), "--force"]),
                      ("kraken2 (database load)", ["kraken2", "--db", str(db), str(one)])):
        secs, rss = best(cmd, 3)
        rows.append({"run": name, "seconds": f"{secs:.2f}", "peak MB": f"{rss:.0f}"})
    return rows


def pace(files: dict[str, Path], out: Path, db: Path, n: int, repeats: int) -> list[dict]:
    """Both tools at 1 and 2 threads, and at 1 thread pinned to one core (taskset -c 0): there
    genointerp's model process shares the core too, which an unpinned -t 1 run does not."""
    rows = []
    for kind, fq in files.items():
        for threads, pin in ((1, True), (1, False), (2, False)):
            if pin and shutil.which("taskset") is None:
                continue
            prefix = ["taskset", "-c", "0"] if pin else []
            g_secs, g_rss = best(prefix + GENOINTERP + ["-q", "classify-reads", str(fq), "-t", str(threads), "-o",
                                                        str(out / f"{kind}_t{threads}.tsv"), "--summary",
                                                        str(out / f"{kind}_t{threads}.json"), "--force"], repeats)
            k_secs, k_rss = best(prefix + ["kraken2", "--db", str(db), "--threads", str(threads), "--gzip-compressed", str(fq)],
                                 repeats)
            rows.append({"reads": f"{kind} ({n:,})", "threads": f"{threads}{' (one core)' if pin else ''}",
                         "genointerp reads/s": f"{n / g_secs:,.0f}", "kraken2 reads/s": f"{n / k_secs:,.0f}",
                         "ratio": f"{k_secs / g_secs:.2f}x", "genointerp peak MB": f"{g_rss:.0f}",
                         "kraken2 peak MB": f"{k_rss:.0f}"})
    return rows


def same_answers(fq: Path, out: Path) -> list[str]:
    """The outputs of -t 1 (written by `pace`), -t 2, two chunks merged and stdin, compared."""
    base = [(out / "tumour_t1.tsv").read_bytes(), (out / "tumour_t1.json").read_bytes()]
    checks = []
    t2 = [(out / "tumour_t2.tsv").read_bytes(), (out / "tumour_t2.json").read_bytes()]
    checks.append(("-t 2 (calls and summary)", t2 == base))
    for i in (1, 2):
        timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-t", "2", "--chunk", f"{i}/2", "-o", str(out / f"c{i}.tsv"),
                            "--summary", str(out / f"c{i}.json"), "--force"])
    timed(GENOINTERP + ["-q", "merge-calls", str(out / "c1.tsv"), str(out / "c2.tsv"), str(out / "c1.json"),
                        str(out / "c2.json"), "-o", str(out / "merged.tsv"), "--summary", str(out / "merged.json"), "--force"])
    checks.append(("--chunk 1/2 + 2/2, merged (calls and summary)",
                   [(out / "merged.tsv").read_bytes(), (out / "merged.json").read_bytes()] == base))
    with gzip.open(fq, "rb") as raw:
        res = subprocess.run(GENOINTERP + ["-q", "classify-reads", "-", "-t", "2"], input=raw.read(), capture_output=True)
    checks.append(("stdin, -t 2", res.returncode == 0 and res.stdout == base[0]))
    bad = [name for name, ok in checks if not ok]
    if bad:
        sys.exit(f"outputs differ from -t 1: {', '.join(bad)}")
    return [name for name, _ in checks]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--reads", type=int, default=320_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default="bench-output/engine")
    args = ap.parse_args()
    require("art_illumina", "kraken2", "kraken2-build", "samtools")
    shared, out = Path(args.shared), out_dir(args.out)
    work = out_dir(str(out / "kraken_genomes"))
    if not (work / "hpv_train.fa").exists():
        (work / "hpv_train.fa").write_text((shared / "viral/hpv_genomes.fa").read_text() + (shared / "viral/oncoviruses.fa").read_text())
        with open(work / "human_train.fa", "w") as fh:
            subprocess.run(["samtools", "faidx", str(shared / "human/GRCh37.chr20.fa.gz"), "20:1-50000000"], stdout=fh, check=True)
    db, _ = kraken_db(work, out)
    files = make_reads(shared, out, args.reads)
    print(f"start-up, one read, best of 3:\n{table(start_up(out, db), ['run', 'seconds', 'peak MB'])}\n")
    rows = pace(files, out, db, args.reads, args.repeats)
    print(f"pace, gzipped FASTQ, end to end, best of {args.repeats}:")
    print(table(rows, list(rows[0])))
    print(f"\nthe same bytes as -t 1 on the tumour reads: {'; '.join(same_answers(files['tumour'], out))}")


if __name__ == "__main__":
    main()
