"""classify-reads with the built-in model: held-out genomes of every kind vs kraken2, and speed vs roofline.

Reads are simulated by ART (art_illumina -ss HS25 -l 150), not by genointerp, --per-class reads
per read set, from references that scripts/build_default_model.py wrote into --work:

    known HPV genomes  hpv_train.fa: the HPV genomes the model and its k-mer index were built
                       from (fresh ART reads, never trained on; the genomes are not held out)
    unseen HPV types   hpv_heldout.fa: every 8th HPV type, held out of the model and the index
    human              human_heldout.fa: GRCh37 chr20 beyond 50 Mb (training saw 1-50 Mb)
    bacterial          bacteria_heldout.fa: K. pneumoniae MGH 78578 and HS11286 (training saw
                       E. coli 536 and two other K. pneumoniae)
  and, where `scripts/build_default_model.py --stage fresh` wrote them (its training negatives
  then also hold S. aureus JH1 and N315, H. pylori F32, Ustilago maydis, Dictyostelium and
  P. knowlesi contigs):
    other bacteria     bacteria_wide_heldout.fa: S. aureus TW20 and MSSA476, H. pylori
                       Gambia94/24, Streptococcus suis P1/7
    yeast              yeast_heldout.fa: S. cerevisiae chrI and chrII (no yeast in training)
    P. falciparum      pfal_heldout.fa: P. falciparum 3D7 (AT-rich; training saw P. knowlesi)
    --contaminant LABEL=FASTA (repeatable, e.g. mouse=mm10_chr19.fa): more kinds of non-viral
                       sequence, each its own column; FASTA may be gzipped

One classify-reads run per evidence mode scores all of them, and each row reads its run's calls:

    genointerp (evidence bits and the model's vote)  the default (`--evidence both`)
    model alone                   `--evidence model`: p_viral >= the model's threshold
    evidence alone                `--evidence kmer`: bits >= the rule's min_bits
    kraken2 (same training genomes)  kraken2 with a custom database of exactly the model's
                       training genomes in --work (hpv_train, chr20 1-50 Mb, E. coli 536 and two
                       K. pneumoniae, and the wider negatives above where present; rebuilt when
                       they change) and a flat hand-made taxonomy; viral = the HPV taxon

Here the built-in model's shipped indexes are used as they are: they hold every genome in
../shared/data, so this table's "unseen" types are unseen by the model only; benchmarks/
viral_calls.py holds types out of the indexes too, and is the one to judge the calls by.

Each cell is the share of a read set called viral: recall for the HPV sets, the false-positive
rate for the others. AUROC (both HPV sets positive, all others negative) ranks reads by a score:
for the default row bits + 2 * clip(log10 odds of p_viral, +-3) (the calling rule's score, with
the model run on every read); for the model row p_viral; for the k-mer row kmer_hits. The last column is the recall of unseen HPV
types at a 0.1 % false-positive rate (over all non-viral reads) by the same score. Then the
operating point's "done when" checks, and speed: end-to-end reads/s on 2 threads for the
default evidence and --evidence model (best of 2, gzipped FASTQ), peak memory on 50,000 and
200,000 reads (/usr/bin/time -v), and the FLOP roofline.

    python benchmarks/classify_reads.py [--work build/default-model] [--per-class 3000] [--contaminant LABEL=FASTA]
    python benchmarks/classify_reads.py --speed-only [--shared ../shared/data]   # speed alone
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, read_calls, require, table, timed  # noqa: E402

from genointerp.resources import builtin_model_dir  # noqa: E402
from genointerp.train.metrics import binary_metrics, recall_at_fpr  # noqa: E402

# A flat hand-made taxonomy for kraken2: every kind a child of the root. HPV16's species taxid stands
# for all HPV; Eukaryota's for the protists (Dictyostelium, P. knowlesi).
TAXA = {"viral": (333760, "species", "Human papillomavirus"), "human": (9606, "species", "Homo sapiens"),
        "bacterial": (2, "superkingdom", "Bacteria"), "fungal": (4751, "kingdom", "Fungi"),
        "protist": (2759, "superkingdom", "protists")}
# The model's training genomes in --work, by kind: the kraken2 database holds those present
# (the wider negatives only where scripts/build_default_model.py --stage fresh wrote them).
TRAINING = [("viral", "hpv_train.fa"), ("human", "human_train.fa"), ("bacterial", "bacteria_train.fa"),
            ("bacterial", "bacteria_wide_train.fa"), ("fungal", "fungal_train.fa"), ("protist", "protist_train.fa")]
# Held-out contaminants of other kinds in --work, read sets of their own where present:
# (key, column label, FASTA)
WIDE_HELDOUT = [("other_bacteria", "other bacteria", "bacteria_wide_heldout.fa"), ("yeast", "yeast", "yeast_heldout.fa"),
                ("pfal", "P. falciparum", "pfal_heldout.fa")]
UNSEEN_FPR = 0.001  # the false-positive rate at which unseen-type recall is reported
MEMORY_READS = (50_000, 200_000)  # peak memory is measured on this many reads
ROWS = {"default": "genointerp (evidence bits and the model's vote)", "model": "model alone", "kmer": "evidence alone",
        "kraken2": "kraken2 (same training genomes)"}


@dataclass
class ReadSet:
    key: str  # read-name prefix and result.json key
    label: str  # table column
    fasta: Path
    seed: int
    viral: bool


def read_sets(work: Path, contaminants: list[str]) -> list[ReadSet]:
    sets = [ReadSet("known", "known HPV genomes", work / "hpv_train.fa", 4, True),
            ReadSet("unseen", "unseen HPV types", work / "hpv_heldout.fa", 1, True),
            ReadSet("human", "human", work / "human_heldout.fa", 2, False),
            ReadSet("bacterial", "bacterial", work / "bacteria_heldout.fa", 3, False)]
    sets += [ReadSet(key, label, work / ref, 5 + i, False) for i, (key, label, ref) in enumerate(WIDE_HELDOUT)
             if (work / ref).exists()]
    for i, spec in enumerate(contaminants):
        label, sep, path = spec.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", label) or not path:
            sys.exit(f"--contaminant {spec!r}: expected LABEL=FASTA, LABEL of letters, digits, _ . -")
        if label in {s.key for s in sets}:
            sys.exit(f"--contaminant {spec!r}: the label {label!r} is taken")
        if not Path(path).is_file():
            sys.exit(f"--contaminant {spec!r}: no file {path}")
        sets.append(ReadSet(label, label, Path(path), 10 + i, False))
    return sets


def art_reads(ref: Path, prefix: Path, per_seq: int, seed: int) -> Path:
    # stderr kept for failures only: ART warns on every run that -na writes no alignment file
    timed(["art_illumina", "-ss", "HS25", "-l", "150", "-c", str(per_seq), "-i", str(ref), "-o", str(prefix),
           "-na", "-rs", str(seed)], stdout=subprocess.DEVNULL)
    return Path(f"{prefix}.fq")


def plain_fasta(ref: Path, out: Path, key: str) -> Path:
    """ART reads plain FASTA only: a gzipped reference is unpacked into out."""
    if ref.suffix != ".gz":
        return ref
    plain = out / f"ref_{key}.fa"
    with gzip.open(ref, "rt") as src, open(plain, "w") as dst:
        while block := src.read(1 << 20):
            dst.write(block)
    return plain


def heldout_fastq(sets: list[ReadSet], out: Path, per_class: int) -> tuple[Path, dict[str, str]]:
    """One gzipped FASTQ of ART reads, about per_class from each read set (the same number per
    sequence of its FASTA; at most per_class, drawn at random when it has more sequences than
    that); returns it and read -> read-set key."""
    truth: dict[str, str] = {}
    fq = out / "heldout.fq.gz"
    with gzip.open(fq, "wt", compresslevel=6) as dst:
        for s in sets:
            ref = plain_fasta(s.fasta, out, s.key)
            n_seq = len(pysam.FastaFile(str(ref)).references) if Path(f"{ref}.fai").exists() else \
                sum(1 for _ in pysam.FastxFile(str(ref)))
            reads = art_reads(ref, out / f"art_{s.key}", max(1, per_class // n_seq), s.seed)
            recs = [(rec.name, rec.sequence, rec.quality) for rec in pysam.FastxFile(str(reads))]
            if len(recs) > per_class:
                keep = np.sort(np.random.default_rng(s.seed).choice(len(recs), per_class, replace=False))
                recs = [recs[i] for i in keep]
            for name, seq, qual in recs:
                name = f"{s.key}:{name}"
                truth[name] = s.key
                dst.write(f"@{name}\n{seq}\n+\n{qual}\n")
    return fq, truth


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A classify-reads TSV as columns: read_id, call, evidence (str), p_viral (NaN for NA),
    kmer_hits (int)."""
    lines = path.read_text().splitlines()
    head = lines[0].split("\t")
    cols = list(zip(*(line.split("\t") for line in lines[1:])))
    col = {h: np.array(c, dtype=object) for h, c in zip(head, cols)}
    return {"read_id": col["read_id"], "call": col["call"], "evidence": col["evidence"],
            "p_viral": np.array([np.nan if v == "NA" else float(v) for v in col["p_viral"]]),
            "kmer_hits": np.array([int(v) for v in col["kmer_hits"]], dtype=np.int64),
            "bits": np.array([float(v) for v in col["bits"]])}


def kraken_db(work: Path, out: Path) -> tuple[Path, list[str]]:
    """kraken2's database of the training genomes in work (built once; rebuilt when they change,
    as when the model gains negatives of more kinds), and their file names."""
    refs = [(cls, ref) for cls, ref in TRAINING if (work / ref).exists()]
    db = out / "kraken2_db"
    built_from = "".join(f"{cls}\t{(work / ref).resolve()}\t{(work / ref).stat().st_size}\n" for cls, ref in refs)
    if (db / "hash.k2d").exists() and (db / "built_from.tsv").exists() and (db / "built_from.tsv").read_text() == built_from:
        return db, [ref for _, ref in refs]
    if db.exists():
        shutil.rmtree(db)
    (db / "taxonomy").mkdir(parents=True)
    nodes = [(1, 1, "no rank")] + [(t, 1, rank) for t, rank, _ in TAXA.values()]
    (db / "taxonomy" / "nodes.dmp").write_text("".join(f"{t}\t|\t{p}\t|\t{r}\t|\n" for t, p, r in nodes))
    names = [(1, "root")] + [(t, name) for t, _, name in TAXA.values()]
    (db / "taxonomy" / "names.dmp").write_text("".join(f"{t}\t|\t{n}\t|\t\t|\tscientific name\t|\n" for t, n in names))
    for j, (cls, ref) in enumerate(refs):
        tagged = out / f"kraken_{j}_{cls}.fa"
        with open(tagged, "w") as fh:
            for i, rec in enumerate(pysam.FastxFile(str(work / ref))):
                fh.write(f">{cls}{j}_{i}|kraken:taxid|{TAXA[cls][0]}\n{rec.sequence}\n")
        timed(["kraken2-build", "--add-to-library", str(tagged), "--db", str(db), "--no-masking"], stdout=subprocess.DEVNULL)
        tagged.unlink()  # the library keeps its own copy
    timed(["kraken2-build", "--build", "--db", str(db), "--threads", "2"], stdout=subprocess.DEVNULL)
    (db / "built_from.tsv").write_text(built_from)
    return db, [ref for _, ref in refs]


def kraken_calls(db: Path, fq: Path, ids: np.ndarray) -> tuple[np.ndarray, float]:
    """Called viral (bool, per read of ids) by kraken2, and its reads/s (database load included)."""
    t0 = time.perf_counter()
    kr = subprocess.run(["kraken2", "--db", str(db), "--threads", "2", "--gzip-compressed", str(fq)],
                        check=True, capture_output=True, text=True).stdout
    secs = time.perf_counter() - t0
    kcall = {}
    for line in kr.splitlines():
        f = line.split("\t")
        kcall[f[1]] = int(f[2]) == TAXA["viral"][0]
    return np.array([kcall[i] for i in ids], dtype=bool), len(ids) / secs


def accuracy_table(sets: list[ReadSet], cls: np.ndarray, calls: dict[str, np.ndarray],
                   scores: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Per row: share called viral per read set, AUROC (viral sets vs the rest) and unseen-type
    recall at UNSEEN_FPR of the row's score (NaN for a row without one)."""
    viral = np.isin(cls, [s.key for s in sets if s.viral])
    unseen_or_neg = (cls == "unseen") | ~viral
    result = {}
    for row, call in calls.items():
        r = {s.key: float(call[cls == s.key].mean()) for s in sets}
        score = scores.get(row)
        r["auroc"] = binary_metrics(viral.astype(float), score)["auroc"] if score is not None else float("nan")
        r["recall_unseen_at_0.1pct_fpr"] = (recall_at_fpr(viral[unseen_or_neg].astype(float), score[unseen_or_neg],
                                                          UNSEEN_FPR) if score is not None else float("nan"))
        result[row] = r
    return result


def no_nan(x):
    """x with NaN floats as None (null in JSON: strict parsers reject NaN)."""
    if isinstance(x, dict):
        return {k: no_nan(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [no_nan(v) for v in x]
    return None if isinstance(x, float) and x != x else x


def pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.2f} %"


def checks(sets: list[ReadSet], default: dict[str, float]) -> list[dict]:
    """The operating point's "done when" checks, on the default row."""
    out = [("known HPV genomes called viral", default["known"], ">=", 0.99),
           ("unseen HPV types called viral", default["unseen"], ">=", 0.90),
           ("human called viral", default["human"], "<=", 0.001)]
    out += [(f"{s.label} called viral", default[s.key], "<=", 0.005) for s in sets if not s.viral and s.key != "human"]
    out.append(("AUROC", default["auroc"], ">=", 0.995))
    return [{"check": name, "value": v, "op": op, "target": t, "holds": bool(v >= t if op == ">=" else v <= t)}
            for name, v, op, t in out]


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
    """Windows/s of the model's forward pass alone (no I/O) on 2 threads, module vs folded inference form."""
    import torch

    from genointerp.model_folder import load_model_dir
    from genointerp.models.xvir_fold import fold
    from genointerp.runtime import predict_proba

    torch.set_num_threads(2)
    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    tokens = np.random.default_rng(0).integers(0, 4**model.config.k, (windows, model.config.n_tokens))
    engine = fold(model, threads=2)
    runs = {"module": lambda: predict_proba(model, tokens, "cpu", "32", 256), "folded": lambda: engine(tokens)}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(3):  # interleaved, best of three: the host's speed drifts
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            rates[name].append(windows / (time.perf_counter() - t0))
    return {name: max(r) for name, r in rates.items()}


def measured_run(cmd: list[str]) -> tuple[float, float]:
    """Run a command under /usr/bin/time -v, fail loudly on error; wall-clock seconds and peak
    resident memory (MB, "Maximum resident set size")."""
    t0 = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - t0
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    return secs, int(rss.group(1)) / 1024 if rss else float("nan")


def head_fastq(src: Path, dst: Path, n: int) -> None:
    with gzip.open(src, "rt") as fin, gzip.open(dst, "wt", compresslevel=6) as fout:
        for i, line in enumerate(fin):
            if i >= 4 * n:
                break
            fout.write(line)


def speed(out: Path, viral: Path, human: Path, n: int, kraken_rate: float | None, repeats: int = 2) -> dict:
    """classify-reads reads/s from a gzipped FASTQ of n reads against the FLOP roofline, for the
    default evidence (bits, the model where it can change a call) and --evidence model; peak memory on
    MEMORY_READS reads.

    A large file, so that start-up (importing torch, loading and folding the model, reading the
    k-mer index, a few s) counts little. bf16 (one run, --evidence model) runs only where the CPU
    has native bf16 (AVX512-BF16/AMX); elsewhere torch emulates it at a fifth of fp32 speed.
    """
    from genointerp.runtime import cpu_has_bf16

    speed_fq = out / "speed.fq.gz"
    timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"viral={viral}", "--circular", "viral",
                        "-s", f"human={human}", "-n", str(n), "--balance", "--seed", "5",
                        "-o", str(speed_fq), "--force"])
    modes = {"both": ["--evidence", "both"], "model": ["--evidence", "model"]}
    if cpu_has_bf16():
        modes["bf16"] = ["--evidence", "model", "--precision", "bf16"]
    gflops = [gemm_gflops()]
    runs: dict[str, list[float]] = {m: [] for m in modes}
    peak: dict[int, float] = {}
    for rep in range(repeats):  # best of `repeats`: on a shared host the speed drifts by 10-20 % over minutes
        for mode, extra in modes.items():
            if mode == "bf16" and rep:  # a side note: one run
                continue
            secs, rss = measured_run(GENOINTERP + ["-q", "classify-reads", str(speed_fq), "-o", str(out / f"speed_{mode}.tsv"),
                                                   "--threads", "2", *extra, "--force"])
            runs[mode].append(n / secs)
            if mode == "both":
                peak[n] = max(peak.get(n, 0.0), rss)
        gflops.append(gemm_gflops())
    for m in MEMORY_READS:
        if m not in peak and m < n:
            small = out / f"speed_{m}.fq.gz"
            head_fastq(speed_fq, small, m)
            peak[m] = measured_run(GENOINTERP + ["-q", "classify-reads", str(small), "-o", str(out / f"speed_{m}.tsv"),
                                                 "--threads", "2", "--force"])[1]
    rate = {m: max(r) for m, r in runs.items()}
    fwd = forward_rates()
    # The fastest GEMM measurement: the stricter roofline on a drifting host.
    roof = max(gflops) * 1e9 / xvir_flops_per_read()
    peer = f"; kraken2 {kraken_rate:,.0f} reads/s (held-out reads, database load included)" if kraken_rate else ""
    best = lambda m: f"{rate[m]:,.0f} reads/s (best of {', '.join(f'{r:,.0f}' for r in runs[m])})"  # noqa: E731
    print(f"\nspeed on {n:,} reads from gzipped FASTQ, 2 threads, end to end, fp32: genointerp default (k-mers or "
          f"model) {best('both')}; --evidence model {best('model')}{peer}")
    if "bf16" in rate:
        pm, pbf = (read_calls(out / f"speed_{x}.tsv")[1] for x in ("model", "bf16"))
        print(f"bf16 (--evidence model, one run) {rate['bf16']:,.0f} reads/s "
              f"(max |p fp32 - p bf16| {np.abs(np.subtract(pm, pbf)).max():.4f})")
    else:
        print("bf16 not run: this CPU has no native bf16")
    print("peak memory (max RSS, /usr/bin/time -v) of classify-reads, default evidence, 2 threads: "
          + ", ".join(f"{m:,} reads {peak[m]:,.0f} MB" for m in sorted(peak)))
    print(f"fp32 GEMM {' / '.join(f'{g:.0f}' for g in gflops)} GFLOP/s here (before and after each run); XVir "
          f"{xvir_flops_per_read() / 1e6:.1f} MFLOP/read -> roofline {roof:,.0f} reads/s; classify-reads reaches "
          f"{100 * rate['both'] / roof:.0f} % of it end to end in fp32 with the default evidence, "
          f"{100 * rate['model'] / roof:.0f} % with --evidence model")
    print(f"forward pass alone (4,096 windows, best of 3): module {fwd['module']:,.0f} windows/s "
          f"({100 * fwd['module'] / roof:.0f} % of roofline), folded inference form {fwd['folded']:,.0f} "
          f"({100 * fwd['folded'] / roof:.0f} %)")
    return {"reads": n, "reads_per_s": rate, "runs": runs, "peak_rss_mb": {str(m): v for m, v in sorted(peak.items())},
            "gemm_gflops": gflops, "roofline_reads_per_s": roof, "forward_windows_per_s": fwd,
            "kraken2_reads_per_s": kraken_rate}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--per-class", type=int, default=3000)
    ap.add_argument("--contaminant", action="append", default=[], metavar="LABEL=FASTA",
                    help="another kind of non-viral reads, its own column (repeatable)")
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
    sets = read_sets(work, args.contaminant)
    fq, truth = heldout_fastq(sets, out, args.per_class)
    tables = {}
    for mode in ("both", "model", "kmer"):  # one run per evidence mode: the rows read their own calls
        calls_tsv, summary_json = out / f"calls.{mode}.tsv", out / f"summary.{mode}.json"
        timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-o", str(calls_tsv), "--summary", str(summary_json),
                            "--evidence", mode, "--threads", "2", "--force"])
        tables[mode] = read_table(calls_tsv)
    summary = json.loads((out / "summary.both.json").read_text())
    threshold, min_bits = summary["threshold"], summary["rule"]["min_bits"]
    ids = tables["both"]["read_id"]
    cls = np.array([truth[i] for i in ids])
    db, kraken_refs = kraken_db(work, out)
    kraken, kraken_rate = kraken_calls(db, fq, ids)
    calls = {row: tables[mode]["call"] == "viral" for row, mode in (("default", "both"), ("model", "model"),
                                                                    ("kmer", "kmer"))}
    calls["kraken2"] = kraken
    p_model = np.nan_to_num(tables["model"]["p_viral"], nan=0.0)
    scores = {"default": tables["both"]["bits"] + 2 * np.clip(np.log10(np.clip(p_model, 1e-9, 1 - 1e-9) /
                                                                         (1 - np.clip(p_model, 1e-9, 1 - 1e-9))), -3, 3),
              "model": p_model, "kmer": tables["kmer"]["bits"]}
    result = accuracy_table(sets, cls, calls, scores)

    print(f"ART HS25 150 bp reads: {len(ids):,} ("
          + ", ".join(f"{s.label} {int((cls == s.key).sum()):,}" for s in sets)
          + f"); the rule's line {min_bits} bits, the model alone's threshold {threshold}")
    print("share called viral per read set; AUROC: HPV sets vs all others; last column: unseen-type recall at "
          f"{100 * UNSEEN_FPR:g} % false positives")
    cols = ["row", *(s.label for s in sets), "AUROC", "unseen @0.1% FP"]
    rows = [{"row": ROWS[row], **{s.label: pct(r[s.key]) for s in sets},
             "AUROC": "-" if r["auroc"] != r["auroc"] else f"{r['auroc']:.4f}",
             "unseen @0.1% FP": pct(r["recall_unseen_at_0.1pct_fpr"])} for row, r in result.items()]
    print(table(rows, cols))
    print("(rows: genointerp's default call, viral when bits and the model's vote reach the rule's line, AUROC of that "
          "score; model alone: p_viral >= threshold, AUROC of p_viral; evidence alone: bits >= the line, AUROC of "
          "bits; kraken2 with a database of the "
          f"same training genomes ({', '.join(kraken_refs)}), a yes/no call. Known HPV genomes are the genomes the model and index were built "
          "from (fresh reads); every other set is held out.)")
    done = checks(sets, result["default"])
    print("\ndone when (default call):")
    for c in done:
        v = f"{c['value']:.4f}" if c["check"] == "AUROC" else pct(c["value"])
        tgt = f"{c['target']}" if c["check"] == "AUROC" else f"{100 * c['target']:g} %"
        print(f"  {c['check']} {c['op']} {tgt}: {v} -> {'holds' if c['holds'] else 'does not hold'}")

    speed_result = speed(out, work / "hpv_heldout.fa", work / "human_heldout.fa", args.speed_reads, kraken_rate)
    # The built-in model's last training stage: its per-epoch seconds (validation included).
    mt, cfg = builtin_model_dir() / "metrics.tsv", builtin_model_dir() / "config.json"
    if mt.exists():
        secs = [float(line.split("\t")[-1]) for line in mt.read_text().splitlines()[1:]]
        data = json.loads(cfg.read_text())["training"]["data"]
        # reads trained on per epoch: 80 % of a fixed read set, or a fresh-reads stage's reads_per_epoch
        n_train = sum(0.8 * d.get("n_reads", 0) + d.get("fresh_reads", {}).get("reads_per_epoch", 0) for d in data)
        if n_train:
            print(f"train-xvir: {np.median(secs) * 100_000 / n_train:,.0f} s per epoch per 100k training reads "
                  "(CPU, 2 threads)")
    (out / "result.json").write_text(json.dumps(no_nan({
        "read_sets": {s.key: {"label": s.label, "fasta": str(s.fasta), "viral": s.viral,
                              "reads": int((cls == s.key).sum())} for s in sets},
        "threshold": threshold, "min_bits": min_bits, "kraken2_database": kraken_refs,
        "rows": {ROWS[row]: r for row, r in result.items()},
        "checks": done, "speed": speed_result}), indent=2) + "\n")


if __name__ == "__main__":
    main()
