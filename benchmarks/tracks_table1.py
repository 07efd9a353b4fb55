"""The paper's Table 1 on real data: swin1d (Genomic Interpreter) vs the baselines on chr20.

Data: GRCh37 chr20 and the ENCODE-DREAM 2016 TF ChIP-seq conservative peak sets with at least
--min-peaks peaks on chr20 (the built-in model's tracks: scripts/build_tracks_model.write_targets),
mean signalValue per 128 bp bin. Every track is in the group ChIP, so "by group" = overall here.
Split: the built-in model's "blocks" (scripts/build_tracks_model.BLOCKS): train on --train-region
(default the p arm, 20:0-25,000,000, the first half of the training block 20:0-49,500,000),
validate on chr20:50,500,000-56,700,000 and test on chr20:56,700,000-63,025,520, a 1 Mb gap
between training and the held-out blocks; written as train.bed / valid.bed / test.bed in --out.

Each --arch runs `genointerp train-tracks` with the same data, windows (--seq-len bp -> --target-bins
x 128 bp bins), width, epochs (the same training budget), batch size 16, lr --lr (3e-4, the paper's
and train-tracks' default; cosine-annealed), seed 1, -t --threads and each architecture's default
token size and dropout (--patch 0: swin1d 8 bp tokens and no dropout, the baselines 1 bp and 0.1).
The weights kept are the best epoch's by validation Pearson r. Test Pearson r per track is what
train-tracks itself writes (test_metrics.json / test_pearson.tsv): the `evaluate` of
evaluate-tracks over the windows tiling test.bed, so no separate evaluation pass is needed; the
closing evaluate-tracks call re-derives it for two of the models as a check. Resumable: an arch
whose model folder exists is not retrained (an interrupted one resumes from its checkpoint).

Rows that train nothing, on the same validation and test windows:
- motif scan: the JASPAR scan of `train-tracks --motif-scan jaspar` (the tracked factors'
  profiles, 8 hinge features per motif and bin) with its least-squares read-out
  (tracks.motif_readout, fitted on up to 8,192 evenly spaced training windows) and no trunk: the
  trunk's output heads are zeroed, so each track's prediction is a constant plus a linear map of
  the scan's features (--no-motif-scan leaves it out; it needs pyjaspar);
- the built-in model (genointerp/resources/models/tracks_dream_chr20) as installed, for reference:
  it never trained on either held-out block (its own split: train 0-50.4 Mb), but it was chosen on
  its own validation span, which overlaps this one;
- the cpg and gc controls of evaluate-tracks --controls (CpG count / GC fraction per bin, smoothed
  over 9 bins, a line per track fitted on the training region only).

Then `evaluate-tracks -m <best baseline> -m swin1d --scatter fig2_scatter.png` (the paper's Figure 2;
the best baseline chosen by validation Pearson, never by test) and a 100 kb test region predicted by
swin1d against the measured signal (Figure 3, fig3_region.png; default: the 100 kb test bin with the
most peaks).

Table (stdout and table1.tsv): arch, parameters, training seconds (sum of the epochs, validation
included) and wall seconds of the whole train-tracks run, best epoch, validation Pearson, test
Pearson (mean over tracks = the ChIP group = overall), test Pearson / swin1d's, test Pearson
minus the cpg control's and test Pearson / the cpg control's.

    python benchmarks/tracks_table1.py --shared ../shared/data [--epochs 2] [--train-region 20:0-25000000]
        [--archs swin1d,maxpool-cnn,enformer-like,swin1d+scan,maxpool-cnn+scan] [--threads 1]

(ARCH+scan: ARCH trained with `--motif-scan jaspar`, the scan's read-out fitted to its untrained
trunk's residuals first, as train-tracks does.)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from common import GENOINTERP, out_dir, table  # noqa: E402

from build_tracks_model import BLOCKS, DEST, FASTA, PEAKS, write_targets  # noqa: E402

ARCHS = ("swin1d", "maxpool-cnn", "attpool-cnn", "attpool-dilated", "enformer-like")
DEFAULT_ARCHS = ("swin1d", "maxpool-cnn", "enformer-like", "swin1d+scan", "maxpool-cnn+scan")
CHROM = "20"
VALID = BLOCKS["valid"]
TEST = BLOCKS["test"]
BUILT_IN = "built-in model (as installed)"
SCAN = "+scan"  # an --archs entry ARCH+scan: ARCH trained with --motif-scan jaspar (a row "ARCH + motif scan")


def parse_region(text: str) -> tuple[str, int, int]:
    chrom, span = text.rsplit(":", 1)
    start, end = (int(v.replace(",", "")) for v in span.split("-"))
    return chrom, start, end


def write_bed(path: Path, chrom: str, start: int, end: int) -> Path:
    tmp = path.with_name(f"{path.name}.{os.getpid()}")  # atomically, as targets.tsv
    tmp.write_text(f"{chrom}\t{start}\t{end}\n")
    os.replace(tmp, path)
    return path


def run_logged(cmd: list[str], log: Path, cwd: Path | None = None) -> float:
    """Run a command with stdout + stderr appended to `log`; fail loudly; wall-clock seconds."""
    t0 = time.perf_counter()
    with open(log, "a") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd).returncode
    if rc:
        sys.exit(f"failed ({rc}): {' '.join(cmd)}\nsee {log}:\n" + "".join(log.read_text().splitlines(True)[-20:]))
    return time.perf_counter() - t0


def n_parameters(model_dir: Path) -> int:
    """Trainable parameters (as train-tracks counts them; buffers in the weights file excluded)."""
    from genointerp.tracks.inference import load_track_model

    model, _ = load_track_model(str(model_dir))
    return sum(p.numel() for p in model.parameters())


def densest_test_window(peaks: Path, names: set[str], size: int = 100_000) -> tuple[int, int]:
    """The size-bp bin of the test span (on a grid from its start) holding the most peaks of `names`."""
    counts: dict[int, int] = {}
    with gzip.open(peaks, "rt") as fh:
        for line in fh:
            f = line.split("\t", 4)
            if f[3] not in names:
                continue
            mid = (int(f[1]) + int(f[2])) // 2
            if TEST[0] <= mid < TEST[1] - size:
                k = (mid - TEST[0]) // size
                counts[k] = counts.get(k, 0) + 1
    best = max(counts, key=lambda k: (counts[k], -k))
    return TEST[0] + best * size, TEST[0] + (best + 1) * size


def reference_rows(fasta: Path, targets: Path, train_bed: Path, valid_bed: Path, test_bed: Path, logs: Path,
                   threads: int) -> list[dict]:
    """Table rows of the built-in model as installed and of the cpg and gc controls (evaluate-tracks -m
    <built-in> --controls, the controls fitted on the training region) on the validation and test
    windows (the built-in model has the benchmark's window geometry and tracks)."""
    scores, wall_file = {}, logs / "controls.wall.json"
    wall = json.loads(wall_file.read_text())["wall_s"] if wall_file.exists() else 0.0
    for split, bed in (("valid", valid_bed), ("test", test_bed)):
        tsv = logs.parent / f"controls_{split}.tsv"
        if not tsv.exists():
            wall += run_logged(GENOINTERP + ["evaluate-tracks", "-m", str(DEST), "--controls", "--fit-regions",
                                             str(train_bed), "--reference", str(fasta), "--targets", str(targets),
                                             "--regions", str(bed), "-o", str(tsv), "-t", str(threads), "--device",
                                             "cpu"], logs / "controls.log")
        with open(tsv) as fh:
            overall = [r for r in csv.DictReader(fh, delimiter="\t") if r["track"] == "(mean)" and r["group"] == "ALL"][0]
        scores[split] = overall
    wall_file.write_text(json.dumps({"wall_s": wall}) + "\n")
    n_tracks = len(json.loads((DEST / "config.json").read_text())["tracks"])
    built_in = {"arch": BUILT_IN, "parameters": n_parameters(DEST), "train_s": float("nan"), "wall_s": float("nan"),
                "epochs": "-", "best_epoch": "-", "valid_pearson": float(scores["valid"]["pearson"]),
                "test_pearson": float(scores["test"]["pearson"]),
                "test_by_group": {"ChIP": float(scores["test"]["pearson"])}}
    return [built_in] + [{"arch": f"{kind} (control)", "parameters": 2 * n_tracks, "train_s": 0.0, "wall_s": wall / 2,
                          "epochs": "-", "best_epoch": "-", "valid_pearson": float(scores["valid"][f"pearson_{kind}"]),
                          "test_pearson": float(scores["test"][f"pearson_{kind}"]),
                          "test_by_group": {"ChIP": float(scores["test"][f"pearson_{kind}"])}} for kind in ("cpg", "gc")]


def motif_scan_row(fasta: Path, targets: Path, beds: dict[str, Path], args, cache: Path) -> dict:
    """The motif scan alone (see the module docstring): swin1d's default model with `--motif-scan
    jaspar` as train-tracks builds it, its trunk's output heads zeroed (a constant rate per track),
    the scan's read-out fitted by least squares on the training windows; scored on the validation
    and test windows. Cached in `cache` (JSON)."""
    if cache.exists():
        return json.loads(cache.read_text())
    import numpy as np
    import torch

    from genointerp.model_folder import build_model
    from genointerp.report import SILENT
    from genointerp.tracks.motif_readout import fit_motif_readout
    from genointerp.tracks.task import evaluate
    from genointerp.tracks.train import TrackTraining, TrackTrainRequest

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    t0 = time.perf_counter()
    job = TrackTraining(TrackTrainRequest(fasta=str(fasta), targets=str(targets), regions=str(beds["train"]),
                                          valid_regions=str(beds["valid"]), test_regions=str(beds["test"]),
                                          seq_len=args.seq_len, bin_size=128, target_bins=args.target_bins,
                                          width=args.width, motif_scan="jaspar"))
    job.load(None, None, SILENT)
    job.log = lambda msg: print(msg, file=sys.stderr, flush=True)
    model = build_model(job.model_config().to_dict())
    with torch.no_grad():
        model.output.scan.pwm.copy_(job._scan_matrices())
        for head in model.output.heads:  # no trunk: every track's rate is softplus(0) before the read-out
            head.weight.zero_()
            head.bias.zero_()
    model.eval()
    fit = fit_motif_readout(model, job.train)
    valid, _ = evaluate(model, job.valid, "cpu")
    test, _ = evaluate(model, job.test_set, "cpu")
    n_features = model.output.scan.n_features
    row = {"arch": "motif scan (no trunk)", "parameters": (n_features + 1) * len(job.specs),
           "train_s": time.perf_counter() - t0, "wall_s": time.perf_counter() - t0, "epochs": "-", "best_epoch": "-",
           "valid_pearson": float(np.nanmean(valid)), "test_pearson": float(np.nanmean(test)),
           "test_by_group": {"ChIP": float(np.nanmean(test))},
           "motifs": len(model.config.motifs), "fit_windows": fit["windows"], "explained": fit["explained"],
           "windows": {"train": len(job.train), "valid": len(job.valid), "test": len(job.test_set)}}
    cache.write_text(json.dumps(row, indent=2) + "\n")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="bench-output/tracks_table1")
    ap.add_argument("--archs", default=",".join(DEFAULT_ARCHS),
                    help=f"comma-separated, of {', '.join(ARCHS)}; ARCH{SCAN}: ARCH with --motif-scan jaspar")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--train-region", default=f"{CHROM}:0-25000000",
                    help="chr:start-end trained on (default: the p arm, the first half of the blocks split's "
                         f"training block {CHROM}:{BLOCKS['train'][0]}-{BLOCKS['train'][1]})")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--patch", type=int, default=0, help="train-tracks --patch (0: each architecture's default)")
    ap.add_argument("--seq-len", type=int, default=3072)
    ap.add_argument("--target-bins", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", default="3e-4", help="Adam learning rate for every model (the paper's and train-tracks' 3e-4)")
    ap.add_argument("--no-motif-scan", action="store_true", help="leave out the motif scan row (it needs pyjaspar)")
    ap.add_argument("--min-peaks", type=int, default=400)
    ap.add_argument("--plot-region", default=None, help="chr:start-end for Figure 3 (default: densest 100 kb of the test span)")
    args = ap.parse_args()
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    unknown = [a for a in archs if a.removesuffix(SCAN) not in ARCHS]
    if unknown:
        sys.exit(f"unknown arch(s): {', '.join(unknown)} (choose from {', '.join(ARCHS)})")
    shared, out = Path(args.shared), out_dir(args.out)
    fasta, peaks = shared / FASTA, shared / PEAKS
    for p in (fasta, peaks):
        if not p.exists():
            sys.exit(f"missing input {p} (see README, Data sources)")
    logs, models = out_dir(str(out / "logs")), out_dir(str(out / "models"))

    targets = out / "targets.tsv"
    tmp = out / f"targets.tsv.{os.getpid()}"  # replaced atomically: another run of this may be reading it
    n_tracks = write_targets(peaks, tmp, args.min_peaks)
    os.replace(tmp, targets)
    train_bed = write_bed(out / "train.bed", *parse_region(args.train_region))
    valid_bed = write_bed(out / "valid.bed", CHROM, *VALID)
    test_bed = write_bed(out / "test.bed", CHROM, *TEST)
    print(f"{n_tracks} tracks (group ChIP); train {args.train_region}, valid {CHROM}:{VALID[0]}-{VALID[1]}, "
          f"test {CHROM}:{TEST[0]}-{TEST[1]}", file=sys.stderr)

    common_args = ["--reference", str(fasta), "--targets", str(targets), "--regions", str(train_bed),
                   "--valid-regions", str(valid_bed), "--test-regions", str(test_bed),
                   "--width", str(args.width), "--patch", str(args.patch), "--seq-len", str(args.seq_len),
                   "--bin-size", "128", "--target-bins", str(args.target_bins), "--epochs", str(args.epochs),
                   "--batch-size", "16", "--lr", args.lr, "--seed", "1", "--device", "cpu", "-t", str(args.threads)]
    rows = []
    for arch in archs:
        model = models / arch
        wall_file = logs / f"{arch}.wall.json"
        if not model.exists():
            scan = ["--motif-scan", "jaspar"] if arch.endswith(SCAN) else []
            cmd = GENOINTERP + ["train-tracks", "--arch", arch.removesuffix(SCAN), *scan, *common_args, "-o", str(model)]
            if (Path(f"{model}.checkpoint") / "last.pt").exists():
                cmd.append("--resume")
            print(f"training {arch} ... (log: {logs / (arch + '.log')})", file=sys.stderr, flush=True)
            wall = run_logged(cmd, logs / f"{arch}.log")
            prev = json.loads(wall_file.read_text())["wall_s"] if wall_file.exists() else 0.0
            wall_file.write_text(json.dumps({"wall_s": prev + wall}) + "\n")
        config = json.loads((model / "config.json").read_text())
        tr = config["training"]
        with open(model / "metrics.tsv") as fh:
            epoch_s = sum(float(r["seconds"]) for r in csv.DictReader(fh, delimiter="\t"))
        test = json.loads((model / "test_metrics.json").read_text())
        rows.append({"arch": arch.replace(SCAN, " + motif scan"), "parameters": n_parameters(model), "train_s": epoch_s,
                     "wall_s": json.loads(wall_file.read_text())["wall_s"] if wall_file.exists() else float("nan"),
                     "epochs": tr["epochs_run"], "best_epoch": tr["best_epoch"], "valid_pearson": tr["valid_pearson"],
                     "test_pearson": test["pearson_mean"], "test_by_group": test["pearson_by_group"],
                     "windows": tr["windows"]})
        print(f"{arch}: valid r {tr['valid_pearson']:.4f}, test r {test['pearson_mean']:.4f}", file=sys.stderr, flush=True)

    # the rows that train nothing (a run with --archs '' gives them alone, and caches them for this one)
    fixed = reference_rows(fasta, targets, train_bed, valid_bed, test_bed, logs, args.threads)
    print("; ".join(f"{r['arch']}: valid r {r['valid_pearson']:.4f}, test r {r['test_pearson']:.4f}" for r in fixed),
          file=sys.stderr, flush=True)
    if not args.no_motif_scan:
        beds = {"train": train_bed, "valid": valid_bed, "test": test_bed}
        fixed.insert(1, motif_scan_row(fasta, targets, beds, args, logs / "motif_scan.json"))
        print(f"motif scan: valid r {fixed[1]['valid_pearson']:.4f}, test r {fixed[1]['test_pearson']:.4f}",
              file=sys.stderr, flush=True)
    windows = next((r["windows"] for r in rows + fixed if "windows" in r), None)
    rows += fixed
    ref = next((r["test_pearson"] for r in rows if r["arch"] == "swin1d"), None)
    cpg = next(r["test_pearson"] for r in rows if r["arch"] == "cpg (control)")
    for r in rows:
        r["ratio"] = f"{r['test_pearson'] / ref:.3f}" if ref else "NA"
        r["minus_cpg"] = f"{r['test_pearson'] - cpg:+.4f}"
        r["over_cpg"] = f"{r['test_pearson'] / cpg:.2f}"
    cols = ["arch", "parameters", "train_s", "wall_s", "epochs", "best_epoch", "valid_pearson", "test_pearson", "ratio",
            "minus_cpg", "over_cpg"]
    shown = [{**r, "parameters": f"{r['parameters']:,}", "train_s": f"{r['train_s']:.0f}", "wall_s": f"{r['wall_s']:.0f}",
              "valid_pearson": f"{r['valid_pearson']:.4f}", "test_pearson": f"{r['test_pearson']:.4f}"} for r in rows]
    w = windows or {"train": 0, "valid": 0, "test": 0}
    print(f"\nTable 1 (real data): {n_tracks} ENCODE-DREAM TF ChIP-seq tracks, all in group ChIP (by group = overall); "
          f"windows train {w['train']:,} / valid {w['valid']:,} / test {w['test']:,}; {args.epochs} epoch(s) each, "
          f"{args.seq_len} bp -> {args.target_bins} x 128 bp, width {args.width}, patch {args.patch}, -t {args.threads}")
    print("ratio = test Pearson / swin1d's; minus_cpg, over_cpg = test Pearson - and / the cpg control's; "
          "train_s = sum of epoch seconds "
          "(validation included), wall_s = whole train-tracks run (controls: the evaluate-tracks fit and scoring)")
    print(table(shown, cols))
    with open(out / "table1.tsv", "w") as fh:
        fh.write("\t".join(cols + ["test_pearson_ChIP"]) + "\n")
        for r in rows:
            fh.write("\t".join([r["arch"], str(r["parameters"]), f"{r['train_s']:.1f}", f"{r['wall_s']:.1f}",
                                str(r["epochs"]), str(r["best_epoch"]), f"{r['valid_pearson']:.6g}",
                                f"{r['test_pearson']:.6g}", r["ratio"], r["minus_cpg"], r["over_cpg"],
                                f"{r['test_by_group'].get('ChIP', float('nan')):.6g}"]) + "\n")

    baselines = [r for r in rows if r["arch"] in ARCHS and r["arch"] != "swin1d"]
    if ref is None or not baselines:
        print(f"\n{out / 'table1.tsv'} (figures need swin1d and a baseline)")
        return
    best = max(baselines, key=lambda r: r["valid_pearson"])["arch"]
    fig2, fig3 = out / "fig2_scatter.png", out / "fig3_region.png"
    compare = out / f"compare_{best}_vs_swin1d.tsv"
    # run inside models/ so that the figure's labels read "arch (arch)", not the whole path
    run_logged(GENOINTERP + ["evaluate-tracks", "-m", best, "-m", "swin1d",
                             "--reference", str(fasta.resolve()), "--targets", str(targets.resolve()),
                             "--regions", str(test_bed.resolve()), "--scatter", str(fig2.resolve()),
                             "-o", str(compare.resolve()), "-t", str(args.threads), "--device", "cpu", "--force"],
               logs / "evaluate.log", cwd=models)
    if args.plot_region:
        pchrom, p0, p1 = parse_region(args.plot_region)
    else:
        names = {line.split("\t")[4] for line in targets.read_text().splitlines()[1:]}
        pchrom, (p0, p1) = CHROM, densest_test_window(peaks, names)
    plot_bed = write_bed(out / "fig3_region.bed", pchrom, p0, p1)
    run_logged(GENOINTERP + ["evaluate-tracks", "-m", str(models / "swin1d"), "--reference", str(fasta),
                             "--targets", str(targets), "--regions", str(plot_bed), "-o", str(out / "fig3_region.tsv"),
                             "--plot-region", f"{pchrom}:{p0}-{p1}", "--plot", str(fig3), "-t", str(args.threads),
                             "--device", "cpu", "--force"], logs / "evaluate.log")
    with open(compare) as fh:
        overall = [r for r in csv.reader(fh, delimiter="\t") if r[0] == "(mean)" and r[1] == "ALL"][0]
    print(f"\ncheck (evaluate-tracks on test.bed): {best} {float(overall[2]):.4f}, swin1d {float(overall[3]):.4f}")
    print(f"best baseline by validation Pearson: {best}")
    print(f"written: {out / 'table1.tsv'}, {compare}, {fig2} (Figure 2), {fig3} (Figure 3, swin1d, "
          f"{pchrom}:{p0:,}-{p1:,})")


if __name__ == "__main__":
    main()
