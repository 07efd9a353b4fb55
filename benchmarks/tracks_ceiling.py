"""What is there to reach on the held-out chr20 blocks (issue 59), and what the measured r depends on.

For a track model (default: the built-in) on the "blocks" split of scripts/build_tracks_model.py
(train 20:0-49.5 Mb, valid 50.5-56.7 Mb, test 56.7 Mb-end; 3,072 bp windows -> 16 x 128 bp bins,
87 tracks), on the same windows and bins:

- the model's mean Pearson r (plain pass; --rc-average also averages both strands) on valid, test
  and every --train-every-th training window (how well it fits what it trained on);
- the same predictions scored after other target transforms: log1p of both, the targets as 0/1
  peak presence, and at coarser resolution (4 bins = 512 bp, 16 bins = the window's 2,048 bp);
- predictors that read the other tracks, not the sequence (guides to what a sequence model could
  reach, not bounds): each track's r with the mean of its factor's other cell lines ("shared by
  cell lines": what a model that knows only the sequence, and so predicts what cell lines share,
  could go to), with their maximum, and with the mean of every other track of its own cell line
  (the cell line's open promoters and enhancers, which a sequence model cannot know);
  a least-squares mix per track, fitted on the training windows, of the model's prediction and the
  shared-by-cell-lines mean (how much of what cell lines share the model misses);
- the shared-by-cell-lines predictor also after log1p and at 2,048 bp;
- the model's r by the bin's place in the window (does it lack context at the window's edges?),
  and on the same genomic bins predicted at a window's edge and in the middle of windows moved by
  half the target span;
- whether a track's r follows its peak count on chr20 or its shared r (Spearman over tracks);
- per-track and per-factor tables in bench-output/tracks_ceiling/.

Predictions are cached in bench-output/tracks_ceiling/preds_*.npz (delete to recompute).

    python benchmarks/tracks_ceiling.py --shared ../shared/data [--model-dir DIR] [--rc-average] [--train-every 8]
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).parent))
from common import table as _table  # noqa: E402

OUT = Path("bench-output/tracks_ceiling")


def table(rows: list[dict]) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return _table([{c: r.get(c, "") for c in cols} for r in rows], cols)


def pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-column Pearson r of two (n, T) arrays (nan where a column is constant)."""
    a = a - a.mean(0)
    b = b - b.mean(0)
    den = np.sqrt((a * a).sum(0) * (b * b).sum(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(0) / den


def predictions(model, source, rc: bool, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(pred, target) float32 (windows, bins, T) of `source`, cached in `path`."""
    from genointerp.tracks.task import predict_batches

    if path.exists():
        z = np.load(path)
        return z["pred"], z["y"]
    ps, ys = [], []
    for _, rate, y in predict_batches(model, source, np.arange(len(source)), "cpu", rc_average=rc):
        ps.append(rate)
        ys.append(y)
    pred, y = np.concatenate(ps), np.concatenate(ys)
    np.savez(path, pred=pred, y=y)
    return pred, y


def others(y: np.ndarray, ids: list[str]) -> dict[str, np.ndarray]:
    """Predictors of each track from the other tracks, (n, T) each (nan columns where none):
    "shared": mean of the same factor's other cell lines; "shared_max": their maximum;
    "cell": mean of the same cell line's other tracks."""
    n, t = y.shape
    factor, cell = defaultdict(list), defaultdict(list)
    for j, i in enumerate(ids):
        c, f, _ = i.split(".")
        factor[f].append(j)
        cell[c].append(j)
    out = {k: np.full((n, t), np.nan, np.float32) for k in ("shared", "shared_max", "cell")}
    for j, i in enumerate(ids):
        c, f, _ = i.split(".")
        fo = [k for k in factor[f] if k != j]
        co = [k for k in cell[c] if k != j]
        if fo:
            out["shared"][:, j] = y[:, fo].mean(1)
            out["shared_max"][:, j] = y[:, fo].max(1)
        if co:
            out["cell"][:, j] = y[:, co].mean(1)
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two vectors (ties broken by order)."""
    rank = lambda v: np.argsort(np.argsort(v)).astype(np.float64)  # noqa: E731
    return float(np.corrcoef(rank(a), rank(b))[0, 1])


def pooled(a: np.ndarray, k: int) -> np.ndarray:
    """(windows, bins, T) -> (windows * bins / k, T): sums of k adjacent bins within a window."""
    w, b, t = a.shape
    return a.reshape(w, b // k, k, t).sum(2).reshape(-1, t)


def blocks_job(shared: Path):
    """The loaded train-tracks data (train, valid, test_set windows; specs) of the "blocks" split with
    the built-in model's window geometry, its files in OUT."""
    from build_tracks_model import FASTA, PEAKS, TRAIN_ARGS, write_blocks, write_targets

    from genointerp.report import SILENT
    from genointerp.tracks.train import TrackTraining, TrackTrainRequest

    def arg(name):
        return int(TRAIN_ARGS[TRAIN_ARGS.index(name) + 1])

    OUT.mkdir(parents=True, exist_ok=True)
    write_targets(shared / PEAKS, OUT / "targets.tsv", 400)
    beds = write_blocks(OUT)
    job = TrackTraining(TrackTrainRequest(fasta=str(shared / FASTA), targets=str(OUT / "targets.tsv"), chroms=["20"],
                                          seq_len=arg("--seq-len"), bin_size=arg("--bin-size"),
                                          target_bins=arg("--target-bins"), regions=str(beds["train"]),
                                          valid_regions=str(beds["valid"]), test_regions=str(beds["test"])))
    job.load(None, None, SILENT)
    return job


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--model-dir", default="", help="a track model folder (default: the built-in model)")
    ap.add_argument("--rc-average", action="store_true", help="predict as the mean of both strands")
    ap.add_argument("--train-every", type=int, default=8, help="score every N-th training window")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", "Mean of empty slice")  # the factors with one cell line have no shared mean

    import torch

    torch.set_num_threads(1)
    from genointerp.tracks.inference import load_track_model

    job = blocks_job(Path(args.shared))
    ids = [s.id for s in job.specs]
    model, _ = load_track_model(args.model_dir or None)
    tag = (Path(args.model_dir).name if args.model_dir else "builtin") + ("_rc" if args.rc_average else "")
    parts = {"train": job.train.subset(np.arange(0, len(job.train), args.train_every)), "valid": job.valid,
             "test": job.test_set}
    data = {k: predictions(model, src, args.rc_average, OUT / f"preds_{tag}_{k}.npz") for k, src in parts.items()}

    rows, per_track = [], {"id": ids}
    for part, (p, y) in data.items():
        flat_p, flat_y = p.reshape(-1, p.shape[-1]), y.reshape(-1, y.shape[-1])
        oth = others(flat_y, ids)
        r = pearson(flat_p, flat_y)
        per_track[f"model_{part}"] = r
        row = {"part": part, "windows": len(p), "model": np.nanmean(r),
               "log1p": np.nanmean(pearson(np.log1p(flat_p), np.log1p(flat_y))),
               "peak 0/1": np.nanmean(pearson(flat_p, (flat_y > 0).astype(np.float32))),
               "512 bp": np.nanmean(pearson(pooled(p, 4), pooled(y, 4))),
               "2,048 bp": np.nanmean(pearson(pooled(p, 16), pooled(y, 16)))}
        has = ~np.isnan(oth["shared"][0])
        row["model (79 with shared)"] = np.nanmean(r[has])
        row["shared, model where none (87)"] = np.mean(np.where(has, pearson(oth["shared"], flat_y), r))
        for k, v in oth.items():
            rk = pearson(v, flat_y)
            per_track[f"{k}_{part}"] = rk
            row[k] = np.nanmean(rk)
        sh = oth["shared"]
        row["shared log1p"] = np.nanmean(pearson(np.log1p(sh), np.log1p(flat_y)))
        row["shared 2,048 bp"] = np.nanmean(pearson(pooled(sh.reshape(y.shape), 16), pooled(y, 16)))
        rows.append(row)
    # least-squares mix per track of the model and the shared mean, fitted on the training windows
    (ptr, ytr) = (a.reshape(-1, a.shape[-1]) for a in data["train"])
    shtr = others(ytr, ids)["shared"]
    for part in ("valid", "test"):
        p, y = (a.reshape(-1, a.shape[-1]) for a in data[part])
        sh = others(y, ids)["shared"]
        mix = np.full(len(ids), np.nan)
        for j in range(len(ids)):
            if np.isnan(shtr[0, j]):
                continue
            x = np.stack([np.ones(len(ptr)), ptr[:, j], shtr[:, j]], 1)
            coef = np.linalg.lstsq(x, ytr[:, j], rcond=None)[0]
            mix[j] = pearson((coef[0] + coef[1] * p[:, j] + coef[2] * sh[:, j])[:, None], y[:, j : j + 1])[0]
        per_track[f"mix_{part}"] = mix
        next(r for r in rows if r["part"] == part)["model+shared mix"] = np.nanmean(mix)
    fmt = [{k: (f"{v:.4f}" if isinstance(v, (float, np.floating)) else v) for k, v in r.items()} for r in rows]
    print(table(fmt), flush=True)

    # by the bin's place in the window: the edge bins see 512 bp of sequence on one side, the middle ones 1.4 kb
    print(table([{"part": part, **{f"bin {b}": f"{np.nanmean(pearson(p[:, b], y[:, b])):.3f}" for b in range(p.shape[1])}}
                 for part, (p, y) in data.items()]), flush=True)

    # the same genomic bins at the edge of one window and in the middle of another: the windows moved
    # by half their target span, so their bins 0-7 are the unmoved windows' bins 8-15
    from genointerp.tracks.data import GenomeWindows

    half = data["valid"][0].shape[1] // 2
    ctx = []
    for part in ("valid", "test"):
        src = parts[part]
        moved = GenomeWindows(src.g, src.chroms, src.codes, src.targets, src.chrom_index,
                              src.starts + half * src.g.bin_size, src.clip)
        pm, _ = predictions(model, moved, args.rc_average, OUT / f"preds_{tag}_{part}_moved.npz")
        p, y = data[part]
        for name, orig, other in (("bins 8-11 (middle, then edge)", slice(half, half + 4), slice(0, 4)),
                                  ("bins 12-15 (edge, then middle)", slice(half + 4, 2 * half), slice(4, half))):
            yy = y[:, orig].reshape(-1, y.shape[-1])
            ctx.append({"part": part, "genomic bins": name,
                        "r as unmoved": f"{np.nanmean(pearson(p[:, orig].reshape(-1, p.shape[-1]), yy)):.4f}",
                        "r moved by half": f"{np.nanmean(pearson(pm[:, other].reshape(-1, p.shape[-1]), yy)):.4f}"})
    print(table(ctx), flush=True)

    # is a track's r set by how many peaks it has on chr20 (data), or by how much its cell lines share?
    peaks = np.array([float(re.search(r"\((\d+) on chr20\)", s.description).group(1)) for s in job.specs])
    m, sh = per_track["model_test"], per_track["shared_test"]
    has = ~np.isnan(sh)
    print(f"Spearman over tracks: test r with peaks on chr20 {spearman(peaks, m):.2f}, with the shared r "
          f"{spearman(sh[has], m[has]):.2f}; test r / shared r with peaks {spearman(peaks[has], m[has] / sh[has]):.2f}",
          flush=True)

    keys = [k for k in per_track if k != "id"]
    lines = ["\t".join(["id", *keys])]
    lines += ["\t".join([i, *(f"{per_track[k][j]:.4f}" for k in keys)]) for j, i in enumerate(ids)]
    (OUT / f"per_track_{tag}.tsv").write_text("\n".join(lines) + "\n")
    by_factor, by_cell = defaultdict(list), defaultdict(list)
    for j, i in enumerate(ids):
        by_factor[i.split(".")[1]].append(j)
        by_cell[i.split(".")[0]].append(j)
    for name, groups in (("factor", by_factor), ("cell line", by_cell)):
        out = []
        for g, js in sorted(groups.items(), key=lambda kv: -np.nanmean(per_track["model_test"][kv[1]])):
            out.append({name: g, "tracks": len(js), **{k: f"{np.nanmean(per_track[k][js]):.3f}" for k in
                        ("model_train", "model_valid", "model_test", "shared_test", "cell_test", "mix_test")}})
        print(table(out), flush=True)
        (OUT / f"by_{name.replace(' ', '_')}_{tag}.md").write_text(table(out) + "\n")


if __name__ == "__main__":
    main()
