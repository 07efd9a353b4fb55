"""classify-reads with the built-in model: accuracy on held-out data vs kraken2, and speed vs roofline.

Held-out reads are simulated by ART (art_illumina -ss HS25 -l 150), not by genointerp, from
what the built-in model never saw (scripts/build_default_model.py wrote these references):
HPV types held out of training, human chr20 beyond 50 Mb, K. pneumoniae MGH 78578 and HS11286.
kraken2 gets a custom database built from exactly the model's training genomes (HPV types in
training, chr20 1-50 Mb, E. coli 536 and two K. pneumoniae), with a small hand-made taxonomy.

    python benchmarks/classify_reads.py [--work build/default-model] [--per-class 3000]
    python benchmarks/classify_reads.py --speed-only [--shared ../shared/data]   # speed alone
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, read_calls, require, table, timed  # noqa: E402

from genointerp.viral.classify import default_threshold  # noqa: E402
from genointerp.resources import builtin_model_dir  # noqa: E402
from genointerp.train.metrics import binary_metrics, recall_at_fpr  # noqa: E402

THRESHOLDS = (0.5, 0.9, 0.99)  # --threshold values reported, with the built-in model's calibrated one
TAXA = {"viral": 333760, "human": 9606, "bacterial": 2}  # HPV16's species taxid stands for all HPV


def art_reads(ref: Path, prefix: Path, per_seq: int, seed: int) -> Path:
    subprocess.run(["art_illumina", "-ss", "HS25", "-l", "150", "-c", str(per_seq), "-i", str(ref), "-o", str(prefix),
                    "-na", "-rs", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return Path(f"{prefix}.fq")


def heldout_fastq(work: Path, out: Path, per_class: int) -> tuple[Path, dict[str, str]]:
    """One gzipped FASTQ of ART reads from the three held-out sets; returns it and read -> class."""
    truth: dict[str, str] = {}
    fq = out / "heldout.fq.gz"
    with gzip.open(fq, "wt", compresslevel=6) as dst:
        for cls, ref, seed in (("viral", "hpv_heldout.fa", 1), ("human", "human_heldout.fa", 2),
                               ("bacterial", "bacteria_heldout.fa", 3)):
            n_seq = len(pysam.FastaFile(str(work / ref)).references) if (work / f"{ref}.fai").exists() else \
                sum(1 for _ in pysam.FastxFile(str(work / ref)))
            reads = art_reads(work / ref, out / f"art_{cls}", max(1, per_class // n_seq), seed)
            for rec in pysam.FastxFile(str(reads)):
                name = f"{cls}:{rec.name}"
                truth[name] = cls
                dst.write(f"@{name}\n{rec.sequence}\n+\n{rec.quality}\n")
    return fq, truth


def kraken_db(work: Path, out: Path) -> Path:
    db = out / "kraken2_db"
    if (db / "hash.k2d").exists():
        return db
    (db / "taxonomy").mkdir(parents=True, exist_ok=True)
    nodes = [(1, 1, "no rank"), (TAXA["viral"], 1, "species"), (TAXA["human"], 1, "species"), (TAXA["bacterial"], 1, "superkingdom")]
    (db / "taxonomy" / "nodes.dmp").write_text("".join(f"{t}\t|\t{p}\t|\t{r}\t|\n" for t, p, r in nodes))
    names = {1: "root", TAXA["viral"]: "Human papillomavirus", TAXA["human"]: "Homo sapiens", TAXA["bacterial"]: "Bacteria"}
    (db / "taxonomy" / "names.dmp").write_text("".join(f"{t}\t|\t{n}\t|\t\t|\tscientific name\t|\n" for t, n in names.items()))
    for cls, ref in (("viral", "hpv_train.fa"), ("human", "human_train.fa"), ("bacterial", "bacteria_train.fa")):
        tagged = out / f"kraken_{cls}.fa"
        with open(tagged, "w") as fh:
            for i, rec in enumerate(pysam.FastxFile(str(work / ref))):
                fh.write(f">{cls}{i}|kraken:taxid|{TAXA[cls]}\n{rec.sequence}\n")
        subprocess.run(["kraken2-build", "--add-to-library", str(tagged), "--db", str(db), "--no-masking"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["kraken2-build", "--build", "--db", str(db), "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
    return db


def gemm_gflops() -> float:
    """fp32 GFLOP/s of a 2048^3 GEMM on 2 threads: the roofline's compute rate."""
    import torch

    torch.set_num_threads(2)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    return 10 * 2 * 2048**3 / (time.perf_counter() - t0) / 1e9


def xvir_flops_per_read(L: int = 150, k: int = 6, d: int = 128, ff: int = 512) -> float:
    n = L - k + 1
    return 2 * n * d * 3 * d + 2 * 2 * n * n * d + 2 * n * d * d + 2 * 2 * n * d * ff + 2 * n * d


def forward_rates(windows: int = 4096) -> dict[str, float]:
    """Windows/s of the model's forward pass alone (no I/O), module vs folded inference form."""
    import torch

    from genointerp.checkpoint import load_model_dir
    from genointerp.models.xvir_inference import XVirInference
    from genointerp.runtime import predict_proba

    torch.set_num_threads(2)
    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    tokens = np.random.default_rng(0).integers(0, 4**model.config.k, (windows, model.config.n_tokens))
    engine = XVirInference(model)
    runs = {"module": lambda: predict_proba(model, tokens, "cpu", "32", 256),
            "folded": lambda: engine(torch.from_numpy(tokens))}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(3):  # interleaved, best of three: the host's speed drifts
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            rates[name].append(windows / (time.perf_counter() - t0))
    return {name: max(r) for name, r in rates.items()}


def speed(out: Path, viral: Path, human: Path, n: int, kraken_rate: float | None, repeats: int = 2) -> None:
    """classify-reads reads/s from a gzipped FASTQ of n reads against the FLOP roofline.

    A large file, so that start-up (importing torch, loading and folding the model, about 2 s)
    counts little. bf16 runs only where the CPU has native bf16 (AVX512-BF16/AMX); elsewhere
    torch emulates it at a fifth of fp32 speed.
    """
    from genointerp.runtime import cpu_has_bf16

    speed_fq = out / "speed.fq.gz"
    timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"viral={viral}", "--circular", "viral",
                        "-s", f"human={human}", "-n", str(n), "--balance", "--seed", "5",
                        "-o", str(speed_fq), "--force"])
    precisions = ("32", "bf16") if cpu_has_bf16() else ("32",)
    gflops = [gemm_gflops()]
    runs: dict[str, list[float]] = {p: [] for p in precisions}
    for _ in range(repeats):  # best of `repeats`: on a shared host the speed drifts by 10-20 % over minutes
        for precision in precisions:
            runs[precision].append(n / timed(GENOINTERP + ["-q", "classify-reads", str(speed_fq), "-o",
                                                           str(out / f"speed_{precision}.tsv"), "--threads", "2",
                                                           "--precision", precision, "--threshold", "0.5", "--force"]))
        gflops.append(gemm_gflops())
    rate = {p: max(r) for p, r in runs.items()}
    fwd = forward_rates()
    # The fastest GEMM measurement: the stricter roofline on a drifting host.
    roof = max(gflops) * 1e9 / xvir_flops_per_read()
    peer = f"; kraken2 {kraken_rate:,.0f} reads/s" if kraken_rate else ""
    print(f"\nspeed on {n:,} reads from gzipped FASTQ, 2 threads, end to end: genointerp fp32 {rate['32']:,.0f} reads/s "
          f"(best of {', '.join(f'{r:,.0f}' for r in runs['32'])}){peer}")
    if "bf16" in rate:
        p32, pbf = (read_calls(out / f"speed_{x}.tsv")[1] for x in ("32", "bf16"))
        print(f"bf16 {rate['bf16']:,.0f} reads/s (max |p fp32 - p bf16| {np.abs(np.subtract(p32, pbf)).max():.4f})")
    else:
        print("bf16 not run: this CPU has no native bf16")
    print(f"fp32 GEMM {' / '.join(f'{g:.0f}' for g in gflops)} GFLOP/s here (before and after each run); XVir "
          f"{xvir_flops_per_read() / 1e6:.1f} MFLOP/read -> roofline {roof:,.0f} reads/s; classify-reads reaches "
          f"{100 * rate['32'] / roof:.0f} % of it end to end in fp32")
    print(f"forward pass alone (4,096 windows, best of 3): module {fwd['module']:,.0f} windows/s "
          f"({100 * fwd['module'] / roof:.0f} % of roofline), folded inference form {fwd['folded']:,.0f} "
          f"({100 * fwd['folded'] / roof:.0f} %)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--per-class", type=int, default=3000)
    ap.add_argument("--speed-reads", type=int, default=200_000)
    ap.add_argument("--out", default="bench-output/classify_reads")
    ap.add_argument("--speed-only", action="store_true",
                    help="only the speed part, on reads from --shared (needs no model build or peers)")
    ap.add_argument("--shared", default="../shared/data")
    args = ap.parse_args()
    if args.speed_only:
        shared = Path(args.shared)
        speed(out_dir(args.out), shared / "viral/hpv_genomes.fa", shared / "human/GRCh37.chr20.fa.gz",
              args.speed_reads, None)
        return
    require("art_illumina", "kraken2", "kraken2-build")
    work, out = Path(args.work), out_dir(args.out)
    if not (work / "hpv_heldout.fa").exists():
        sys.exit(f"{work}: run `make default-model` first (it writes the held-out references)")
    fq, truth = heldout_fastq(work, out, args.per_class)
    calls = out / "calls.tsv"
    timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-o", str(calls), "--threads", "2", "--force"])
    ids, p = read_calls(calls)
    cls = np.array([truth[i] for i in ids])
    y = (cls == "viral").astype(float)
    print(f"held-out ART reads: {len(ids):,} ({', '.join(f'{c} {int((cls == c).sum()):,}' for c in TAXA)})")
    result = {}
    auroc, recall_1pct = binary_metrics(y, p)["auroc"], recall_at_fpr(y, p)
    thresholds = sorted({*THRESHOLDS, default_threshold(json.loads((builtin_model_dir() / "config.json").read_text()))})
    for thr in thresholds:
        result[f"genointerp@{thr}"] = {"accuracy": binary_metrics(y, p, thr)["accuracy"], "auroc": auroc,
                                       "recall_at_1pct_fpr": recall_1pct}
        for c in TAXA:
            result[f"genointerp@{thr}"][f"called_viral_{c}"] = float((p[cls == c] >= thr).mean())

    db = kraken_db(work, out)
    t0 = time.perf_counter()
    kr = subprocess.run(["kraken2", "--db", str(db), "--threads", "2", "--gzip-compressed", str(fq)],
                        check=True, capture_output=True, text=True).stdout
    t_kr = time.perf_counter() - t0
    kcall = {}
    for line in kr.splitlines():
        f = line.split("\t")
        kcall[f[1]] = int(f[2]) == TAXA["viral"]
    kv = np.array([kcall[i] for i in ids], dtype=float)
    result["kraken2"] = {"accuracy": float(((kv >= 0.5) == (y == 1)).mean()), "auroc": float("nan"),
                         "recall_at_1pct_fpr": float("nan")}
    for c in TAXA:
        result["kraken2"][f"called_viral_{c}"] = float(kv[cls == c].mean())
    table_rows = [{"tool": t, **{k: f"{v:.4f}" for k, v in r.items()}} for t, r in result.items()]
    print(table(table_rows, ["tool", "accuracy", "auroc", "recall_at_1pct_fpr", "called_viral_viral",
                             "called_viral_human", "called_viral_bacterial"]))
    print("(called_viral_viral = recall on HPV types never trained on; _human/_bacterial = false-positive rates)")

    speed(out, work / "hpv_heldout.fa", work / "human_heldout.fa", args.speed_reads, len(ids) / t_kr)
    # The built-in model's last training stage: its per-epoch seconds (validation included).
    mt, cfg = builtin_model_dir() / "metrics.tsv", builtin_model_dir() / "config.json"
    if mt.exists():
        secs = [float(line.split("\t")[-1]) for line in mt.read_text().splitlines()[1:]]
        n_train = 0.8 * sum(d.get("n_reads", 0) for d in json.loads(cfg.read_text())["training"]["data"])
        print(f"train-xvir: {np.median(secs) * 100_000 / n_train:,.0f} s per epoch per 100k training reads (CPU, 2 threads)")
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
