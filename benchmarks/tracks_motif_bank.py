"""Would a broader motif scan raise the built-in track model on the held-out chr20 blocks (issue 59)?
A check before any training, as the one that led to `--motif-scan jaspar` (benchmarks/README.md).

Per track, a ridge least-squares fit on every --train-every-th training window of the blocks split
(or, --fit-on valid, on the valid block, so that only the test block is held out)
(benchmarks/tracks_ceiling.py's windows and its cached predictions; run that first) of the target
on [the model's prediction, motif-scan features], scored (Pearson r over every bin) on the valid
and test blocks. Features are models.motif_scan's hinges of the per-bin best match (and the two
neighbours'), for: "factor", the tracked factors' 27 JASPAR profiles (the installed model already
reads these, so this row says what a refit of that read-out adds); "bank", those and one profile
per further JASPAR CORE vertebrate TF family (111 in all), as --motif-init's broad set chooses
them; "bank + cpg", with each bin's CpG count and that of its neighbours.

    python benchmarks/tracks_motif_bank.py --shared ../shared/data [--train-every 8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).parent))
from tracks_ceiling import OUT, blocks_job, pearson, table  # noqa: E402

RIDGE = 1e-3


def features(scan, source, batch: int = 64) -> np.ndarray:
    """(windows * bins, F + 3) float32: the scan's features, then the bin's CpG count and its two
    neighbours' summed, and the bin's GC fraction."""
    import torch

    out = []
    with torch.inference_mode():
        for a in range(0, len(source), batch):
            x, _ = source.batch(np.arange(a, min(a + batch, len(source))))
            xt = torch.from_numpy(x)
            f = scan(xt).flatten(0, 1).numpy()
            b, bins = x.shape[0], scan.target_bins
            lo = scan.first
            seq = x[:, lo : lo + (bins + 2) * scan.bin_size]  # the target bins and one each side
            cg = (seq[:, :-1, 1] * seq[:, 1:, 2]).astype(np.float32)  # C then G
            cg = np.pad(cg, ((0, 0), (0, 1))).reshape(b, bins + 2, scan.bin_size).sum(2)
            gc = (seq[:, :, 1] + seq[:, :, 2]).reshape(b, bins + 2, scan.bin_size).mean(2)
            extra = np.stack([cg[:, 1:-1], cg[:, :-2] + cg[:, 2:], gc[:, 1:-1]], -1).reshape(b * bins, 3)
            out.append(np.concatenate([f, extra], 1))
    return np.concatenate(out).astype(np.float32)


def fit_score(ptr, ytr, ftr, parts) -> dict:
    """Per-track ridge fit of y on [1, pred_j, F] on the training bins; {part: r (T,)}."""
    mf = ftr.mean(0)
    fc = ftr - mf
    sff = fc.T.astype(np.float64) @ fc
    n, nf = ftr.shape
    ridge = RIDGE * max(np.trace(sff) / n / max(nf, 1), 1e-12)
    out = {k: np.full(ytr.shape[1], np.nan) for k in parts}
    for j in range(ytr.shape[1]):
        p = ptr[:, j] - ptr[:, j].mean()
        y = ytr[:, j] - ytr[:, j].mean()
        # normal equations of [p, F] (centred), ridge on F only
        a = np.empty((nf + 1, nf + 1))
        a[0, 0] = p @ p
        a[0, 1:] = a[1:, 0] = fc.T @ p
        a[1:, 1:] = sff + ridge * n * np.eye(nf)
        rhs = np.concatenate([[p @ y], fc.T @ y])
        w = np.linalg.solve(a, rhs)
        for k, (pp, ff, yy) in parts.items():
            pred = w[0] * pp[:, j] + (ff - mf) @ w[1:]
            out[k][j] = pearson(pred[:, None], yy[:, j : j + 1])[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--train-every", type=int, default=8)
    ap.add_argument("--tag", default="builtin", help="which cached predictions of tracks_ceiling.py")
    ap.add_argument("--fit-on", choices=("train", "valid"), default="train",
                    help="fit on the training windows (the model's own: its predictions there are fitted, so a "
                         "stack learns to trust them too much) or on the valid block (then only test is held out)")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from genointerp.models.motif_scan import MotifScan
    from genointerp.tracks.motifs import jaspar_filters

    job = blocks_job(Path(args.shared))
    tracks = [{"id": s.id} for s in job.specs]
    motifs = jaspar_filters(tracks, 10**6, 24, scale="perfect")
    n_factor = sum(m.why == "factor" for m in motifs)
    from build_tracks_model import _train_arg

    scan = MotifScan(len(motifs), 24, *(int(_train_arg(k)) for k in ("--seq-len", "--bin-size", "--target-bins")))
    scan.pwm.copy_(torch.from_numpy(np.stack([m.weight for m in motifs])))
    sources = {"train": job.train.subset(np.arange(0, len(job.train), args.train_every)), "valid": job.valid,
               "test": job.test_set}
    data = {}
    for k, src in sources.items():
        z = np.load(OUT / f"preds_{args.tag}_{k}.npz")
        p, y = z["pred"].reshape(-1, z["pred"].shape[-1]), z["y"].reshape(-1, z["y"].shape[-1])
        cache = OUT / f"bank_features_{k}.npy"
        if not cache.exists():
            np.save(cache, features(scan, src))
        data[k] = (p, np.load(cache), y)
        print(f"{k}: {len(src)} windows, {data[k][1].shape[1]} features", file=sys.stderr, flush=True)
    h = len(scan.thresholds)
    n_m = len(motifs)

    def cols(which: str) -> np.ndarray:
        """Feature columns: hinges are ordered (threshold, motif), then the neighbours' likewise."""
        ms = np.arange(n_factor) if which == "factor" else np.arange(n_m)
        idx = [part * h * n_m + t * n_m + m for part in (0, 1) for t in range(h) for m in ms]
        if which == "bank + cpg":
            idx += [2 * h * n_m, 2 * h * n_m + 1, 2 * h * n_m + 2]
        return np.array(idx)

    rows = [{"features": "model alone", **{k: f"{np.nanmean(pearson(data[k][0], data[k][2])):.4f}"
                                           for k in ("train", "valid", "test")}}]
    for which in ("cpg only", "factor", "bank", "bank + cpg"):
        c = np.array([2 * h * n_m, 2 * h * n_m + 1, 2 * h * n_m + 2]) if which == "cpg only" else cols(which)
        parts = {k: (data[k][0], data[k][1][:, c], data[k][2]) for k in ("train", "valid", "test")}
        fit = data[args.fit_on]
        r = fit_score(fit[0], fit[2], fit[1][:, c], parts)
        rows.append({"features": f"model + {which} ({len(c)})", **{k: f"{np.nanmean(v):.4f}" for k, v in r.items()}})
        print(rows[-1], flush=True)
    print(table(rows))
    (OUT / f"motif_bank_{args.tag}_fit_{args.fit_on}.md").write_text(table(rows) + "\n")


if __name__ == "__main__":
    main()
