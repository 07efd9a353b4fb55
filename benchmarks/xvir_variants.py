"""Which XVir uses 2 CPU cores best on HPV types it never saw? Same data, same budget.

Trains the paper's configuration (d = 128, sinusoidal positions, post-LN) and variants (--position
rope, --pre-norm, a smaller d) on one set of simulated reads from the built-in model's training
genomes, then scores the ART reads of benchmarks/classify_reads.py: the held-out HPV types
against every held-out non-viral set (reads of known HPV genomes left out). Training seconds and
classify-reads' reads/s on those reads (2 threads, model alone) show what each costs. Needs
`make default-model` and classify_reads.py run first.

    python benchmarks/xvir_variants.py [--reads 40000] [--epochs 4] [--variants paper,d64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, read_calls, table, timed  # noqa: E402

from genointerp.train.metrics import binary_metrics, recall_at_fpr  # noqa: E402

VARIANTS = {"paper": ("paper (d = 128, sinusoidal, post-LN)", []), "rope": ("RoPE", ["--position", "rope"]),
            "preln": ("pre-LN", ["--pre-norm"]), "rope_preln": ("RoPE + pre-LN", ["--position", "rope", "--pre-norm"]),
            "d64": ("d = 64", ["--d-model", "64"])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--heldout", default="bench-output/classify_reads/heldout.fq.gz")
    ap.add_argument("--reads", type=int, default=40_000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"Comma-separated, of {', '.join(VARIANTS)}.")
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
    for key in args.variants.split(","):
        if key not in VARIANTS:
            sys.exit(f"--variants: {key!r} is not one of {', '.join(VARIANTS)}")
        name, flags = VARIANTS[key]
        model = out / key
        secs = timed(GENOINTERP + ["-q", "train-xvir", str(fq), "-o", str(model), "--epochs", str(args.epochs),
                                   "--threads", "2", "--device", "cpu", "--force"] + flags)
        calls = out / f"{model.name}.tsv"
        classify_s = timed(GENOINTERP + ["-q", "classify-reads", args.heldout, "-m", str(model), "-o", str(calls),
                                         "--threads", "2", "--evidence", "model", "--force"])
        ids, p = read_calls(calls)
        cls = np.array([i.split(":")[0] for i in ids])
        keep = cls != "known"
        cls, p = cls[keep], p[keep]
        y = (cls == "unseen").astype(float)
        m = binary_metrics(y, p)
        rows.append({"variant": name, "train s": f"{secs:.0f}", "classify reads/s": f"{len(ids) / classify_s:,.0f}",
                     "AUROC": f"{m['auroc']:.4f}", "recall at 1% FPR": f"{recall_at_fpr(y, p):.4f}",
                     "at 0.5: recall unseen HPV": f"{(p[cls == 'unseen'] >= 0.5).mean():.4f}",
                     "FPR human": f"{(p[cls == 'human'] >= 0.5).mean():.4f}",
                     "FPR other kinds": f"{(p[(cls != 'unseen') & (cls != 'human')] >= 0.5).mean():.4f}"})
    print(f"{n:,} training reads, {args.epochs} epochs each; evaluated on held-out ART reads ({args.heldout}): "
          f"unseen HPV types against every non-viral set")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
