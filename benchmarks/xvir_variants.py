"""Does RoPE or pre-LayerNorm help XVir on HPV types it never saw? Same data, same budget.

Trains the paper's configuration (sinusoidal positions, post-LN) and two variants (--position
rope, --pre-norm) on one set of simulated reads from the built-in model's training genomes, then
scores ART reads from held-out HPV types, human and bacterial genomes (written by
benchmarks/classify_reads.py). Needs `make default-model` and classify_reads.py run first.

    python benchmarks/xvir_variants.py [--reads 40000] [--epochs 4]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, read_calls, table, timed  # noqa: E402

from genointerp.train.metrics import binary_metrics, recall_at_fpr  # noqa: E402

VARIANTS = {"paper (sinusoidal, post-LN)": [], "RoPE": ["--position", "rope"], "pre-LN": ["--pre-norm"],
            "RoPE + pre-LN": ["--position", "rope", "--pre-norm"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--heldout", default="bench-output/classify_reads/heldout.fq.gz")
    ap.add_argument("--reads", type=int, default=40_000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--out", default="bench-output/xvir_variants")
    args = ap.parse_args()
    work, out = Path(args.work), out_dir(args.out)
    n = args.reads
    fq = out / "train.fq.gz"
    timed(GENOINTERP + ["-q", "simulate-reads", "-s", f"viral={work / 'hpv_train.fa'}", "--circular", "viral",
                        "-s", f"human={work / 'human_train.fa'}", "-s", f"bacterial={work / 'bacteria_train.fa'}",
                        "--count", f"viral={n // 2}", "--count", f"human={n * 3 // 10}", "--count", f"bacterial={n - n // 2 - n * 3 // 10}",
                        "--seed", "21", "-o", str(fq), "--force"])
    rows = []
    for name, flags in VARIANTS.items():
        model = out / re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
        secs = timed(GENOINTERP + ["-q", "train-xvir", str(fq), "-o", str(model), "--epochs", str(args.epochs),
                                   "--threads", "2", "--device", "cpu", "--force"] + flags)
        calls = out / f"{model.name}.tsv"
        timed(GENOINTERP + ["-q", "classify-reads", args.heldout, "-m", str(model), "-o", str(calls), "--threads", "2", "--force"])
        ids, p = read_calls(calls)
        cls = np.array([i.split(":")[0] for i in ids])
        y = (cls == "viral").astype(float)
        m = binary_metrics(y, p)
        rows.append({"variant": name, "train s": f"{secs:.0f}", "AUROC": f"{m['auroc']:.4f}", "accuracy": f"{m['accuracy']:.4f}",
                     "recall held-out HPV": f"{(p[cls == 'viral'] >= 0.5).mean():.4f}",
                     "recall at 1% FPR": f"{recall_at_fpr(y, p):.4f}",
                     "FPR human": f"{(p[cls == 'human'] >= 0.5).mean():.4f}",
                     "FPR bacterial": f"{(p[cls == 'bacterial'] >= 0.5).mean():.4f}"})
    print(f"{n:,} training reads, {args.epochs} epochs each; evaluated on held-out ART reads ({args.heldout})")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
