"""Test-time averaging (`--rc-average`, `--shifts`) measured on validation windows only.

For a track model and its validation windows, the mean Pearson r (over tracks; over every bin of
every window) of the plain prediction, the mean over both strands, over the inputs shifted by
-1/0/+1 bp, and both (6 passes); the default of predict-tracks, score-variants and ism is chosen
from these numbers, never from test windows.

- the built-in model on its validation split (chr20 50.4-56.7 Mb; every --every-th window, same
  windows for every row);
- each planted model of benchmarks/tracks_planted.py (its validation chromosome chr2), when
  --planted names that benchmark's output folder.

    python benchmarks/tracks_tta.py [--shared ../shared/data] [--every 3] [--planted bench-output/tracks_planted]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).parent))
from common import table  # noqa: E402

SETTINGS = [("plain", False, (0,)), ("rc", True, (0,)), ("shifts -1,0,1", False, (-1, 0, 1)),
            ("rc + shifts -1,0,1", True, (-1, 0, 1))]


def scores(model, source, label: str) -> list[dict]:
    from genointerp.tracks.task import evaluate

    rows = []
    for name, rc, shifts in SETTINGS:
        t0 = time.perf_counter()
        r, _ = evaluate(model, source, "cpu", rc_average=rc, shifts=shifts)
        rows.append({"model": label, "averaging": name, "windows": len(source), "mean r": f"{np.nanmean(r):.4f}",
                     "seconds": f"{time.perf_counter() - t0:.0f}"})
        print(rows[-1], flush=True)
    return rows


def builtin(shared: Path, every: int) -> list[dict]:
    from build_tracks_model import FASTA, PEAKS, TRAIN_ARGS, write_targets

    from genointerp.report import SILENT
    from genointerp.tracks.inference import load_track_model
    from genointerp.tracks.train import TrackTraining, TrackTrainRequest

    def arg(name):
        return int(TRAIN_ARGS[TRAIN_ARGS.index(name) + 1])

    work = Path("bench-output/tracks_tta")
    work.mkdir(parents=True, exist_ok=True)
    write_targets(shared / PEAKS, work / "targets.tsv", 400)
    job = TrackTraining(TrackTrainRequest(fasta=str(shared / FASTA), targets=str(work / "targets.tsv"), chroms=["20"],
                                          seq_len=arg("--seq-len"), bin_size=arg("--bin-size"),
                                          target_bins=arg("--target-bins")))
    job.load(None, None, SILENT)
    model, _ = load_track_model(None)
    return scores(model, job.valid.subset(np.arange(0, len(job.valid), every)), "built-in (chr20 validation)")


def planted(folder: Path) -> list[dict]:
    import json

    from genointerp.report import SILENT
    from genointerp.tracks.inference import load_track_model
    from genointerp.tracks.train import TrackTraining, TrackTrainRequest

    rows = []
    for model_dir in sorted(p for p in folder.glob("*/*") if (p / "config.json").exists()):
        cfg = json.loads((model_dir / "config.json").read_text())
        member = model_dir.parent
        w = cfg["window"]
        job = TrackTraining(TrackTrainRequest(fasta=str(member / "genome.fa.gz"), targets=str(member / "targets.tsv"),
                                              chroms=["chr1"], valid_chroms=["chr2"], test_chroms=["chr3"],
                                              seq_len=w["seq_len"], bin_size=w["bin_size"], target_bins=w["target_bins"]))
        job.load(None, None, SILENT)
        model, _ = load_track_model(str(model_dir))
        rows += scores(model, job.valid, f"{member.name}/{model_dir.name} (chr2)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--every", type=int, default=3, help="built-in model: every N-th validation window")
    ap.add_argument("--planted", default="", help="benchmarks/tracks_planted.py's output folder")
    ap.add_argument("--parts", default="builtin,planted")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    rows = []
    if args.planted and "planted" in args.parts:
        rows += planted(Path(args.planted))
    if "builtin" in args.parts:
        rows += builtin(Path(args.shared), args.every)
    print(table(rows, ["model", "averaging", "windows", "mean r", "seconds"]))


if __name__ == "__main__":
    main()
