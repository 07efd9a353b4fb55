"""classify-reads' engine against kraken2, side by side in one run: start-up, reads/s at 1 and 2
threads, peak memory, and the same bytes whatever the threads, chunks or stdin.

Reads are simulated by ART (art_illumina -ss HS25 -l 150, single-end), gzipped FASTQ:
    human      GRCh37 chr20 52-62 Mb: the built-in model was trained on chr20 1-50 Mb, but its
               indexes leave out every seed found anywhere on chr20, so these reads carry next to
               no evidence by construction (--reads of them)
    human_chr22  GRCh37 chr22 20-21 Mb (Debian hisat2's example reference, `make bench-deps`):
               human sequence neither the model nor its indexes saw, as most of a user's genome
    tumour     the chr20 human reads with 1 % HPV reads (every genome of hpv_genomes.fa)
kraken2 gets a database of the genomes the built-in model was built from (../shared/data's HPV
genomes and oncoviruses, chr20 1-50 Mb) and a flat hand-made taxonomy (benchmarks/classify_reads.py).

Measured (wall-clock, end to end: start-up, parsing, scoring, output):
  - start: classify-reads on one read, best of three: at the default (the evidence decides it, so
    the model never loads) and with --model-all (the model's process loads its folded tables);
    kraken2 on the same read (its database load);
  - pace: reads/s of genointerp (default evidence) and kraken2 at 1 and 2 threads, and at 1
    thread pinned to one core (taskset), best of two, and the ratio; peak resident memory
    (/usr/bin/time -v: the largest process of the run; the job's process, its workers and the
    model's process are separate, the workers sharing the memory-mapped index pages);
  - from one thread to two: -t 2 over -t 1 beside two -t 1 jobs started at once, each pinned to
    a core of its own, over one job: what two cores give independent samples on this host, the
    ceiling of -t 2 (the cores share caches and memory, and a cloud host's with other tenants);
  - same answers: the calls TSV and summary of -t 1, -t 2, --chunk 1/2 + 2/2 merged and stdin,
    compared byte for byte (the benchmark stops if any differs);
  - the model against the fp32 roofline: the fastest 2048^3 GEMM on 2 threads (before and after)
    at XVir's 67.8 MFLOP per read is the roofline in reads/s; the forward pass alone (4,096
    windows, the folded form classify-reads runs and the torch module, best of three) and
    classify-reads --model-all -t 2 end to end (the first --model-all-reads tumour-like reads, best
    of --repeats) as shares of it.

Scaling mode (--scaling), for a machine with many cores and a GPU: classify-reads on one gzipped
FASTQ (--fastq, else the tumour-like ART reads; --copies N: N renamed copies of them, where the
start weighs less) at each of --threads-list (default evidence, on the CPU), with --model-all at
the largest, and where --devices names cuda and torch sees a GPU, --device cuda at the default
and with --model-all at the largest; kraken2 at each thread count beside it unless --no-kraken.
Reported: reads/s, wall seconds, peak MB, the speed-up over the first run (the CPU's -t 1); with
-t 1 and 2 in the list, two -t 1 jobs side by side as above; and whether the calls TSVs are the
same bytes: every default CPU run's as -t 1's (the benchmark exits 1 if any differs, after the
table), the --model-all runs' as each other's and the GPU's default as -t 1's (reported only:
the GPU's arithmetic may move p_viral). Each run's row is printed as it ends. With --rounds K,
then K rounds of -t 1, -t 2 and the pair back to back (and kraken2 -t 1 and -t 2), each round's
ratios and their median: on a shared host, runs a minute apart share its spell, where the best of
each kind, minutes apart, may not.

    python benchmarks/viral_engine.py [--shared ../shared/data] [--reads 320000] [--model-all-reads 40000]
        [--out bench-output/engine]
    python benchmarks/viral_engine.py --scaling --fastq reads.fq.gz --threads-list 1,2,4,8,16
        --devices cpu,cuda [--no-kraken] [--repeats 1] [--copies 5] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).parent))
from classify_reads import art_reads, forward_rates, gemm_gflops, head_fastq, kraken_db, xvir_flops_per_read  # noqa: E402
from common import GENOINTERP, out_dir, read_calls, require, table, timed  # noqa: E402

HUMAN_REGION = "20:52000001-62000000"  # the built-in model's human training sequence is chr20 1-50 Mb
OTHER_HUMAN = Path("/usr/share/doc/hisat2/examples/reference/22_20-21M.fa")  # Debian hisat2: GRCh37 chr22 20-21 Mb
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


def region_fasta(shared: Path, region: str, out: Path, stem: str) -> Path:
    """`region` of GRCh37 chr20 as out/stem.fa."""
    fasta = out / f"{stem}.fa"
    with open(fasta, "w") as fh:
        subprocess.run(["samtools", "faidx", str(shared / "human/GRCh37.chr20.fa.gz"), region], stdout=fh, check=True)
    return fasta


def fasta_records(fasta: Path, prefix: Path, n: int, seed: int) -> Iterator[tuple[str, str, str]]:
    """n ART reads (name, sequence, qualities) of a plain FASTA (ART's reads prefix.fq). ART skips
    reads that fall in runs of N, so it is asked for 2 % more than the FASTA's share of bases
    other than N would give."""
    from genointerp.io.sequences import read_reference

    seqs = [seq.upper() for _, seq in read_reference(str(fasta))]
    bases, n_bases = sum(map(len, seqs)), sum(seq.count("N") for seq in seqs)
    wanted = int(n * 1.02 * bases / max(bases - n_bases, 1)) + 1
    return islice(fastq_records(art_reads(fasta, prefix, wanted, seed)), n)


def region_records(shared: Path, region: str, out: Path, stem: str, n: int, seed: int) -> Iterator[tuple[str, str, str]]:
    """n ART reads (name, sequence, qualities) of `region` of GRCh37 chr20 (its FASTA out/stem.fa,
    ART's reads out/art_stem.fq)."""
    return fasta_records(region_fasta(shared, region, out, stem), out / f"art_{stem}", n, seed)


def make_reads(shared: Path, out: Path, n: int, other: bool = True) -> dict[str, Path]:
    """The human, tumour-like and (`other`) other-chromosome human gzipped FASTQs (made once per
    --out and --reads)."""
    files = {"human": out / f"human_{n}.fq.gz", "tumour": out / f"tumour_{n}.fq.gz"}
    if other:
        files["human_chr22"] = out / f"human_chr22_{n}.fq.gz"
        if not files["human_chr22"].exists():
            write_fastq(fasta_records(OTHER_HUMAN, out / "art_human_chr22", n, 13), files["human_chr22"])
    if all(p.exists() for p in files.values()):
        return files
    human = list(region_records(shared, HUMAN_REGION, out, "human_region", n, 11))
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
    """Wall seconds and the peak resident memory (MB) of the largest process of `cmd`, from
    /usr/bin/time -v. Without it (a bare machine), from the run's wait4 rusage, which is no lower
    than this benchmark's own size: a child's peak counts the copy of its parent it was forked from."""
    timer = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(timer + cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        secs = time.perf_counter() - t0
        err.seek(0)
        text = err.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}\n{text[-2000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text) if timer else None
    return secs, int(rss.group(1)) / 1024 if rss else usage.ru_maxrss / 1024


def best(cmd: list[str], repeats: int) -> tuple[float, float]:
    runs = [measured(cmd) for _ in range(repeats)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def side_by_side(cmds: list[list[str]], repeats: int) -> float:
    """Best wall seconds, of `repeats`, until every command of `cmds`, started at once, has ended;
    each is pinned to a core of its own (taskset) where there are enough. Two single-thread jobs
    side by side are what two cores give a batch of independent samples: the ceiling of one job's
    -t 2 on this host, which shares its caches and memory between cores (and, on a cloud host,
    with other tenants)."""
    cores = sorted(os.sched_getaffinity(0))
    pin = shutil.which("taskset") is not None and len(cores) >= len(cmds)
    times = []
    for _ in range(repeats):
        errors = [tempfile.TemporaryFile() for _ in cmds]  # files, not pipes: a full pipe would stall its job
        t0 = time.perf_counter()
        procs = [subprocess.Popen((["taskset", "-c", str(cores[i])] if pin else []) + cmd, stdout=subprocess.DEVNULL,
                                  stderr=err) for i, (cmd, err) in enumerate(zip(cmds, errors))]
        codes = [p.wait() for p in procs]
        times.append(time.perf_counter() - t0)
        for code, err, cmd in zip(codes, errors, cmds):
            err.seek(0)
            text = err.read().decode(errors="replace")
            err.close()
            if code:
                sys.exit(f"failed ({code}): {' '.join(cmd)}\n{text[-2000:]}")
    return min(times)


def classify_cmd(fq: Path, tsv: Path, threads: int, *extra: str) -> list[str]:
    """classify-reads on `fq` with `threads`, the calls to `tsv` and the summary beside it (.json)."""
    return GENOINTERP + ["-q", "classify-reads", str(fq), "-t", str(threads), "-o", str(tsv), "--summary",
                         str(tsv.with_suffix(".json")), "--force", *extra]


def start_up(out: Path, db: Path) -> list[dict]:
    one = out / "one.fq"
    one.write_text("@one\n" + "ACGTTGCAAC" * 15 + "\n+\n" + "I" * 150 + "\n")
    rows = []
    for name, cmd in (("genointerp (the evidence decides)", GENOINTERP + ["-q", "classify-reads", str(one), "-o", str(out / "one.tsv"), "--force"]),
                      ("genointerp --model-all (the model runs)", GENOINTERP + ["-q", "classify-reads", str(one), "--model-all", "-o", str(out / "one.tsv"), "--force"]),
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
            g_secs, g_rss = best(prefix + classify_cmd(fq, out / f"{kind}_t{threads}.tsv", threads), repeats)
            k_secs, k_rss = best(prefix + ["kraken2", "--db", str(db), "--threads", str(threads), "--gzip-compressed", str(fq)],
                                 repeats)
            rows.append({"reads": f"{kind} ({n:,})", "threads": f"{threads}{' (one core)' if pin else ''}",
                         "genointerp reads/s": f"{n / g_secs:,.0f}", "kraken2 reads/s": f"{n / k_secs:,.0f}",
                         "ratio": f"{k_secs / g_secs:.2f}x", "genointerp peak MB": f"{g_rss:.0f}",
                         "kraken2 peak MB": f"{k_rss:.0f}"})
    return rows


def rate_of(rows: list[dict], reads: str, threads: str, tool: str) -> float:
    """reads/s of `tool` ('genointerp' or 'kraken2') in the pace row of `reads` and `threads`."""
    row = next(r for r in rows if r["reads"] == reads and r["threads"] == threads)
    return float(row[f"{tool} reads/s"].replace(",", ""))


def two_jobs(files: dict[str, Path], out: Path, db: Path, n: int, repeats: int, rows: list[dict]) -> list[dict]:
    """Per read set and tool: -t 2 over -t 1 (from the pace rows), two -t 1 jobs side by side over
    one (side_by_side), and the first as a share of the second."""
    two = []
    for kind, fq in files.items():
        jobs = {"genointerp": [classify_cmd(fq, out / f"{kind}_pair{i}.tsv", 1) for i in (1, 2)],
                "kraken2": [["kraken2", "--db", str(db), "--threads", "1", "--gzip-compressed", str(fq)]] * 2}
        for tool, cmds in jobs.items():
            one = rate_of(rows, f"{kind} ({n:,})", "1", tool)
            threads = rate_of(rows, f"{kind} ({n:,})", "2", tool) / one
            pair = 2 * n / side_by_side(cmds, repeats) / one
            two.append({"reads": kind, "tool": tool, "-t 2 / -t 1": f"{threads:.2f}x",
                        "two -t 1 jobs at once / one": f"{pair:.2f}x", "-t 2 of that": f"{100 * threads / pair:.0f} %"})
    return two


def model_roofline(fq: Path, out: Path, n: int, repeats: int) -> list[dict]:
    """The folded model's forward pass and classify-reads --model-all -t 2 on the first n reads of
    `fq`, as shares of the fp32 roofline (the fastest GEMM measured before and after: the stricter
    roofline on a host whose speed drifts)."""
    head = out / f"model_all_{n}.fq.gz"
    head_fastq(fq, head, n)
    gflops = [gemm_gflops()]
    forward = forward_rates()
    gflops.append(gemm_gflops())
    secs, rss = best(classify_cmd(head, out / "model_all.tsv", 2, "--model-all"), repeats)
    gflops.append(gemm_gflops())
    roof = max(gflops) * 1e9 / xvir_flops_per_read()
    row = lambda run, rate: {"run": run, "reads/s": f"{rate:,.0f}", "of roofline": f"{100 * rate / roof:.0f} %"}  # noqa: E731
    print(f"fp32 GEMM {' / '.join(f'{g:.0f}' for g in gflops)} GFLOP/s (2 threads); XVir {xvir_flops_per_read() / 1e6:.1f} "
          f"MFLOP/read -> roofline {roof:,.0f} reads/s")
    return [row("forward pass alone, folded form (classify-reads' CPU model)", forward["folded"]),
            row("forward pass alone, torch module", forward["module"]),
            row(f"classify-reads --model-all -t 2, {n:,} reads end to end (peak {rss:.0f} MB)", n / secs)]


def same_answers(fq: Path, out: Path) -> list[str]:
    """The outputs of -t 1 (written by `pace`), -t 2, two chunks merged and stdin, compared."""
    base = [(out / "tumour_t1.tsv").read_bytes(), (out / "tumour_t1.json").read_bytes()]
    checks = []
    t2 = [(out / "tumour_t2.tsv").read_bytes(), (out / "tumour_t2.json").read_bytes()]
    checks.append(("-t 2 (calls and summary)", t2 == base))
    for i in (1, 2):
        timed(classify_cmd(fq, out / f"c{i}.tsv", 2, "--chunk", f"{i}/2"))
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


def kraken_database(shared: Path, out: Path) -> Path:
    """kraken2's database of the genomes the built-in model was built from (built once per --out)."""
    work = out_dir(str(out / "kraken_genomes"))
    if not (work / "hpv_train.fa").exists():
        (work / "hpv_train.fa").write_text((shared / "viral/hpv_genomes.fa").read_text() + (shared / "viral/oncoviruses.fa").read_text())
        with open(work / "human_train.fa", "w") as fh:
            subprocess.run(["samtools", "faidx", str(shared / "human/GRCh37.chr20.fa.gz"), "20:1-50000000"], stdout=fh, check=True)
    db, _ = kraken_db(work, out)
    return db


def gpu_available() -> bool:
    """Whether torch is importable here and sees a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def scaling_runs(threads: list[int], devices: list[str], model_all: list[str]) -> list[tuple[str, int, bool]]:
    """(device, threads, --model-all) of each scaling run: the CPU at every thread count and the
    GPU at the largest, at the default; and with --model-all at the largest, on the devices of
    `model_all`."""
    top = max(threads)
    runs = ([("cpu", t, False) for t in threads] + ([("cpu", top, True)] if "cpu" in model_all else [])
            if "cpu" in devices else [])
    if "cuda" in devices:
        if gpu_available():
            runs += [("cuda", top, False)] + ([("cuda", top, True)] if "cuda" in model_all else [])
        else:
            print("cuda: torch sees no GPU here (or is not installed); its runs are skipped", flush=True)
    return runs


def run_label(device: str, threads: int, model_all: bool) -> str:
    return f"{device} -t {threads}{' --model-all' if model_all else ''}"


def calls_compared(a: Path, b: Path) -> str:
    """'identical', or how many reads' calls differ and the largest p_viral difference."""
    if a.read_bytes() == b.read_bytes():
        return "identical"
    ids_a, p_a = read_calls(a)
    ids_b, p_b = read_calls(b)
    if ids_a != ids_b:
        return "differ (not the same reads in the same order)"
    calls = [[line.split("\t")[3] for line in path.read_text().splitlines()[1:]] for path in (a, b)]
    n_calls = sum(x != y for x, y in zip(*calls))
    return f"differ: {n_calls} of {len(ids_a):,} calls, max |p_viral difference| {abs(p_a - p_b).max():.2g}"


def scaling_checks(tsvs: dict[tuple[str, int, bool], Path]) -> tuple[list[str], list[str]]:
    """Lines saying which calls TSVs are the same bytes, and the default CPU runs that differ
    from the CPU's smallest thread count."""
    default_cpu = sorted(k for k in tsvs if k[0] == "cpu" and not k[2])
    lines, differ = [], []
    if default_cpu:
        base = tsvs[default_cpu[0]]
        differ = [run_label(*k) for k in default_cpu[1:] if tsvs[k].read_bytes() != base.read_bytes()]
        lines.append(f"default, cpu, every -t the same bytes as -t {default_cpu[0][1]}: "
                     + ("yes" if not differ else f"NO, these differ: {', '.join(differ)}"))
        lines += [f"{run_label(*k)} vs {run_label(*default_cpu[0])}: {calls_compared(tsvs[k], base)}"
                  for k in tsvs if k[0] != "cpu" and not k[2]]
    model_all = [k for k in tsvs if k[2]]
    lines += [f"{run_label(*k)} vs {run_label(*model_all[0])}: {calls_compared(tsvs[k], tsvs[model_all[0]])}"
              for k in model_all[1:]]
    return lines, differ


def kraken_row(fq: Path, db: Path, threads: int, n: int, repeats: int) -> dict:
    """kraken2's reads/s and peak MB on `fq` (`n` reads) with `threads`."""
    secs, rss = best(["kraken2", "--db", str(db), "--threads", str(threads), "--gzip-compressed", str(fq)], repeats)
    return {"kraken2 reads/s": f"{n / secs:,.0f}", "kraken2 peak MB": f"{rss:.0f}"}


def rounds_of_one_and_two(fq: Path, out: Path, rounds: int, db: Path | None) -> list[dict]:
    """Per round: classify-reads -t 1, -t 2 and two -t 1 jobs side by side, and kraken2 -t 1 and
    -t 2 unless `db` is None, back to back (every other round in the opposite order), and their
    ratios (over -t 1, and genointerp's pace over kraken2's at each). A shared host's pace moves by 10-20 % over minutes, so the best of each run kind, taken
    minutes apart, can set a fast spell's -t 1 against a slow spell's -t 2 (or the other way); a
    round's runs lie within a minute or two of each other."""
    rows = []
    for r in range(rounds):
        kinds = ["t1", "t2", "pair"] + (["k1", "k2"] if db is not None else [])
        secs = {}
        for kind in kinds if r % 2 == 0 else kinds[::-1]:
            if kind == "pair":
                secs[kind] = side_by_side([classify_cmd(fq, out / f"scale_pair{i}.tsv", 1, "--device", "cpu")
                                           for i in (1, 2)], 1)
            elif kind.startswith("t"):
                secs[kind] = measured(classify_cmd(fq, out / f"scale_round_{kind}.tsv", int(kind[1]), "--device", "cpu"))[0]
            else:
                secs[kind] = measured(["kraken2", "--db", str(db), "--threads", kind[1], "--gzip-compressed", str(fq)])[0]
        pair = 2 * secs["t1"] / secs["pair"]
        row = {"round": str(r + 1), "-t 1 s": f"{secs['t1']:.1f}", "-t 2 s": f"{secs['t2']:.1f}",
               "pair s": f"{secs['pair']:.1f}", "-t 2 / -t 1": f"{secs['t1'] / secs['t2']:.2f}x",
               "pair / one": f"{pair:.2f}x", "-t 2 of pair": f"{100 * secs['t1'] / secs['t2'] / pair:.0f} %"}
        if db is not None:
            row["kraken2 -t 2 / -t 1"] = f"{secs['k1'] / secs['k2']:.2f}x"
            row["genointerp / kraken2, -t 1"] = f"{secs['k1'] / secs['t1']:.2f}x"
            row["genointerp / kraken2, -t 2"] = f"{secs['k2'] / secs['t2']:.2f}x"
        print("  ".join(f"{k}: {v}" for k, v in row.items()), flush=True)
        rows.append(row)
    return rows


def scaling(fq: Path, out: Path, threads: list[int], devices: list[str], model_all: list[str], db: Path | None,
            repeats: int, rounds: int = 0) -> None:
    """classify-reads (and kraken2 unless `db` is None) on `fq` at each run of `scaling_runs`; a
    row printed as each ends (a run that fails is reported and skipped), then the table and the
    byte checks; exits 1 if the default CPU runs' calls differ."""
    with gzip.open(fq, "rb") as fh:
        n = sum(1 for _ in fh) // 4
    print(f"scaling on {fq} ({n:,} reads), best of {repeats}", flush=True)
    rows, tsvs, seconds, base_secs = [], {}, {}, None
    for device, t, all_reads in scaling_runs(threads, devices, model_all):
        tsv = out / f"scale_{device}_t{t}{'_all' if all_reads else ''}.tsv"
        try:
            secs, rss = best(classify_cmd(fq, tsv, t, "--device", device, *(["--model-all"] if all_reads else [])), repeats)
        except SystemExit as failed:  # one failed run (a GPU's, say) does not lose the others
            print(f"{run_label(device, t, all_reads)}: {failed}", flush=True)
            continue
        tsvs[(device, t, all_reads)] = tsv
        seconds[(device, t, all_reads)] = secs
        base_secs = base_secs or secs
        row = {"run": run_label(device, t, all_reads), "reads/s": f"{n / secs:,.0f}", "seconds": f"{secs:.1f}",
               "peak MB": f"{rss:.0f}", "speed-up": f"{base_secs / secs:.2f}x"}
        if db is not None:
            kraken = (device, all_reads) == ("cpu", False)
            row |= kraken_row(fq, db, t, n, repeats) if kraken else {"kraken2 reads/s": "-", "kraken2 peak MB": "-"}
        print("  ".join(f"{k}: {v}" for k, v in row.items()), flush=True)
        rows.append(row)
    if not rows:
        sys.exit("no runs: none ran (--devices names neither cpu nor a cuda that torch sees, or all failed)")
    print(f"\nspeed-up: over the first run ({rows[0]['run']})\n{table(rows, list(rows[0]))}\n")
    if {("cpu", 1, False), ("cpu", 2, False)} <= seconds.keys():
        one, two = seconds[("cpu", 1, False)], seconds[("cpu", 2, False)]
        pair = side_by_side([classify_cmd(fq, out / f"scale_pair{i}.tsv", 1, "--device", "cpu") for i in (1, 2)], repeats)
        print(f"two -t 1 jobs side by side: {2 * n / pair:,.0f} reads/s together, {2 * one / pair:.2f}x one job (the "
              f"ceiling of -t 2 on this host: side_by_side); -t 2 reached {100 * (one / two) / (2 * one / pair):.0f} % "
              "of it\n", flush=True)
    if rounds:
        got = rounds_of_one_and_two(fq, out, rounds, db)
        print(f"-t 1, -t 2 and two -t 1 jobs side by side, back to back, {rounds} rounds (cpu, default):\n"
              f"{table(got, list(got[0]))}\nmedian of the rounds: "
              + ", ".join(f"{k} {statistics.median(float(r[k].rstrip('x %')) for r in got):.2f}"
                          for k in got[0] if "/" in k) + "\n", flush=True)
    lines, differ = scaling_checks(tsvs)
    print("the calls TSVs:\n  " + "\n  ".join(lines), flush=True)
    if differ:
        sys.exit(f"default cpu outputs differ from -t {min(threads)}: {', '.join(differ)}")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--reads", type=int, default=320_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model-all-reads", type=int, default=40_000, help="reads of the --model-all run against the roofline")
    ap.add_argument("--out", default="bench-output/engine")
    ap.add_argument("--scaling", action="store_true", help="the scaling mode (module docstring)")
    ap.add_argument("--fastq", help="--scaling: this gzipped FASTQ instead of the tumour-like ART reads")
    ap.add_argument("--threads-list", default="1,2,4,8,16", help="--scaling: the thread counts, comma-separated")
    ap.add_argument("--devices", default="cpu,cuda", help="--scaling: cpu and/or cuda, comma-separated")
    ap.add_argument("--model-all-on", default="cpu,cuda", help="--scaling: the devices that also run --model-all")
    ap.add_argument("--no-kraken", action="store_true", help="--scaling: without kraken2")
    ap.add_argument("--copies", type=int, default=1, help="--scaling: the reads this many times, renamed")
    ap.add_argument("--rounds", type=int, default=0,
                    help="--scaling: also -t 1, -t 2 and the pair back to back this many times, a ratio per round")
    return ap.parse_args()


def renamed_copies(fq: Path, copies: int, out: Path) -> Path:
    """A gzipped FASTQ of `copies` copies of fq's reads, each copy's names prefixed c1_, c2_, ...
    (made once in `out`): a larger input from the same reads, where start-up weighs less."""
    big = out / f"{fq.name.split('.')[0]}.x{copies}.fq.gz"
    if not big.exists():
        with gzip.open(fq, "rb") as src:
            lines = src.read().split(b"\n")
        names = lines[0::4]  # every 4th line from the first: a quality line may start with @ too
        tmp = big.with_suffix(".tmp")
        with gzip.open(tmp, "wb", compresslevel=1) as dst:
            for k in range(1, copies + 1):
                lines[0::4] = [b"@c%d_%s" % (k, name[1:]) if name else name for name in names]
                dst.write(b"\n".join(lines).rstrip(b"\n") + b"\n")
        tmp.rename(big)
    return big


def scaling_main(args: argparse.Namespace, shared: Path, out: Path) -> None:
    require(*(["kraken2", "kraken2-build", "samtools"] if not args.no_kraken else []),
            *(["art_illumina", "samtools"] if not args.fastq else []))
    fq = Path(args.fastq) if args.fastq else make_reads(shared, out, args.reads, other=False)["tumour"]
    if args.copies > 1:
        fq = renamed_copies(fq, args.copies, out)
    db = None if args.no_kraken else kraken_database(shared, out)
    scaling(fq, out, sorted({int(t) for t in args.threads_list.split(",")}), args.devices.split(","),
            args.model_all_on.split(","), db, args.repeats, args.rounds)


def main() -> None:
    args = parse_args()
    shared, out = Path(args.shared), out_dir(args.out)
    if args.scaling:
        return scaling_main(args, shared, out)
    require("art_illumina", "kraken2", "kraken2-build", "samtools")
    if not OTHER_HUMAN.is_file():
        sys.exit(f"{OTHER_HUMAN}: not found; `make bench-deps` installs Debian's hisat2, which holds it")
    db = kraken_database(shared, out)
    files = make_reads(shared, out, args.reads)
    print(f"start-up, one read, best of 3:\n{table(start_up(out, db), ['run', 'seconds', 'peak MB'])}\n")
    rows = pace(files, out, db, args.reads, args.repeats)
    print(f"pace, gzipped FASTQ, end to end, best of {args.repeats}:")
    print(table(rows, list(rows[0])))
    two = two_jobs(files, out, db, args.reads, args.repeats, rows)
    print(f"\nfrom one thread to two, against two single-thread jobs side by side (best of {args.repeats}):")
    print(table(two, list(two[0])))
    print(f"\nthe same bytes as -t 1 on the tumour reads: {'; '.join(same_answers(files['tumour'], out))}")
    print(f"\nthe model against the fp32 roofline (best of {args.repeats}):")
    print(table(model_roofline(files["tumour"], out, args.model_all_reads, args.repeats), ["run", "reads/s", "of roofline"]))


if __name__ == "__main__":
    main()
