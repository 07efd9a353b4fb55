"""Build the built-in tracks model (genointerp/resources/models/tracks_dream_chr20) from public data.

Inputs (see README, "Data sources"):
- GRCh37 chr20 (bgzip + .fai + .gzi): ../shared/data/human/GRCh37.chr20.fa.gz
- ENCODE-DREAM 2016 TF ChIP-seq training peaks on chr20, 186 peak sets in one narrowPeak file
  (column 4 CELL|TF|SET, column 7 signalValue): ../shared/data/tracks/dream2016_tfchip.hg19.chr20.narrowPeak.gz

Tracks: every `conservative` peak set with at least --min-peaks peaks on chr20 (87 of 109 at 400),
binned as the mean signalValue over 128 bp bins. Split: the default chromosome tail (target spans
centred in 80-90 % of chr20 validate, 90-100 % test: chr20:50.4-56.7 Mb and 56.7-63.0 Mb).
Model: swin1d (Genomic Interpreter) on 3,072 bp windows -> 16 x 128 bp bins, 4 bp tokens after the
stem (5 Swin stages) so it trains on two CPU cores in under an hour.

Resumable: rerun the same command after an interruption and it continues from the checkpoint.

The installed model is a scratch run and then the fine-tuning stages in STAGES (issue 17), each
going on from the model installed before it (`train-tracks --init-from`) on the same data and
split, and installed only when its validation Pearson r beats that model's and its test r does
not fall below it (the test split can veto a stage, never choose between candidates).
`--stage all` (the default, `make tracks-model`) replays them all. `--stage finetune` tries a new
stage from the installed model: --finetune-epochs at --lr, with --track-weights and, to grow the
first layer, --stem-filters; record it in STAGES when it is installed and committed, so the next
session goes on from it.

    python scripts/build_tracks_model.py --shared ../shared/data [--work build/tracks-model]
        [--stage finetune --finetune-epochs 3 --lr 3e-4 [--stem-filters 48]]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / "genointerp" / "resources" / "models" / "tracks_dream_chr20"
PEAKS = "tracks/dream2016_tfchip.hg19.chr20.narrowPeak.gz"
FASTA = "human/GRCh37.chr20.fa.gz"
TRAIN_ARGS = ["--arch", "swin1d", "--width", "64", "--patch", "4", "--seq-len", "3072", "--bin-size", "128",
              "--target-bins", "16", "--epochs", "5", "--patience", "2", "--batch-size", "16", "--lr", "3e-4",
              "--seed", "1", "--device", "cpu"]


def write_targets(peaks: Path, out: Path, min_peaks: int) -> int:
    """targets.tsv with one row per conservative peak set having >= min_peaks peaks; returns the count."""
    counts: Counter[str] = Counter()
    with gzip.open(peaks, "rt") as fh:
        for line in fh:
            counts[line.split("\t", 4)[3]] += 1
    names = sorted(n for n, c in counts.items() if n.endswith("|conservative") and c >= min_peaks)
    rows = ["id\tpath\tgroup\tdescription\tname"]
    for name in names:
        cell, tf, kind = name.split("|")
        rows.append(f"{cell}.{tf}.{kind}\t{peaks.resolve()}\tChIP\t{tf} ChIP-seq in {cell}, ENCODE-DREAM 2016 "
                    f"{kind} peaks ({counts[name]} on chr20), mean signalValue per bin\t{name}")
    out.write_text("\n".join(rows) + "\n")
    return len(names)


# The fine-tuning stages the installed model went through, in order; each started from the model
# installed before it and was installed because its validation r beat that model's (test r rose too).
STAGES = {
    "finetune1": {"epochs": 2, "lr": "1e-4", "track_weights": "none", "stem_filters": 0},  # valid 0.108 -> 0.112
    "finetune2": {"epochs": 3, "lr": "3e-4", "track_weights": "none", "stem_filters": 0},  # valid 0.112 -> 0.133
    "finetune3": {"epochs": 4, "lr": "3e-4", "track_weights": "none", "stem_filters": 48},  # valid 0.133 -> 0.150
    "finetune4": {"epochs": 4, "lr": "3e-4", "track_weights": "none", "stem_filters": 0},  # valid 0.150 -> 0.168
}


def train_stage(model: Path, train: list[str], threads: str) -> None:
    """Run train-tracks into `model` unless it is there already; resume an interrupted run."""
    cmd = [sys.executable, "-m", "genointerp", "train-tracks", *train, "-t", threads, "-o", str(model)]
    if Path(f"{model}.checkpoint", "last.pt").exists():
        cmd.append("--resume")
    if not model.exists():
        subprocess.run(cmd, check=True)


def finetune_args(epochs: int, lr: str, track_weights: str, stem_filters: int) -> list[str]:
    args = ["--init-from", str(DEST), "--epochs", str(epochs), "--lr", lr, "--patience", str(epochs),
            "--track-weights", track_weights]
    return args + (["--stem-filters", str(stem_filters)] if stem_filters else [])


def install(model: Path, only_if_better: bool) -> None:
    if only_if_better:
        new, old = (json.loads((d / "config.json").read_text())["training"]["valid_pearson"] for d in (model, DEST))
        test = json.loads((model / "test_metrics.json").read_text())["pearson_mean"]
        print(f"{model.name}: validation r {new:.4f} (installed {old:.4f}), test r {test:.4f}", file=sys.stderr)
        if new <= old:
            print("not installed: validation r did not improve", file=sys.stderr)
            return
        installed_test = json.loads((DEST / "test_metrics.json").read_text())["pearson_mean"]
        if test < installed_test:  # the held-out test can veto a stage, never pick among stages
            print(f"not installed: test r fell (installed {installed_test:.4f})", file=sys.stderr)
            return
    DEST.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json", "metrics.tsv", "test_pearson.tsv", "test_metrics.json"):
        shutil.copy(model / name, DEST / name)
    print(f"installed {model} in {DEST}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--work", default=str(ROOT / "build" / "tracks-model"))
    ap.add_argument("--min-peaks", type=int, default=400)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--stage", choices=("all", "scratch", *STAGES, "finetune"), default="all",
                    help="all: scratch, then every recorded stage in order (the installed model's recipe); "
                         "finetune: a new stage with the options below, in WORK/finetune (delete it to try another)")
    ap.add_argument("--finetune-epochs", type=int, default=2)
    ap.add_argument("--lr", default="1e-4", help="finetune stage: learning rate (cosine-annealed over its epochs)")
    ap.add_argument("--track-weights", choices=("none", "balanced"), default="none", help="finetune stage: train-tracks --track-weights")
    ap.add_argument("--stem-filters", type=int, default=0, help="finetune stage: widen the installed model's stem to this many filters")
    args = ap.parse_args()
    shared, work = Path(args.shared), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    n = write_targets(shared / PEAKS, work / "targets.tsv", args.min_peaks)
    print(f"{n} tracks", file=sys.stderr)
    data = ["--fasta", str(shared / FASTA), "--targets", str(work / "targets.tsv"), "--chroms", "20", *TRAIN_ARGS]
    if args.stage in ("all", "scratch"):
        train_stage(work / "model", data, args.threads)
        install(work / "model", only_if_better=False)
    stages = dict(STAGES) if args.stage == "all" else {args.stage: STAGES[args.stage]} if args.stage in STAGES else {}
    if args.stage == "finetune":
        stages = {"finetune": {"epochs": args.finetune_epochs, "lr": args.lr, "track_weights": args.track_weights,
                               "stem_filters": args.stem_filters}}
    for name, opts in stages.items():
        train_stage(work / name, [*data, *finetune_args(**opts)], args.threads)
        install(work / name, only_if_better=True)


if __name__ == "__main__":
    main()
