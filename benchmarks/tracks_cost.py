"""Cost growth with input length: swin1d vs enformer-like vs enformer-pytorch at matched width.

Time and peak memory per sequence (batch 1, one CPU thread) for a forward pass in inference mode
and, with --modes infer,train, a training step (forward + Poisson loss + backward). Every
(model, length, mode) runs in a fresh subprocess, so its peak RSS (getrusage ru_maxrss) is its own.
Before the timed passes the worker resets the kernel's RSS high-water mark (/proc/self/clear_refs),
so the import-time peak does not hide the pass: "peak MiB" is the process's highest RSS during the
passes (runtime + model + activations) and "extra MiB" is that peak minus the RSS just before them,
i.e. what the pass itself needed. Targets are all bins (no crop), so transformers attend over the
whole input; --target-fraction 0.7 predicts only the central 70% of bins (swin1d crops before its
transformer, the Enformers after). The driver imports no torch, so the workers do not inherit its memory high-water mark.
Prints a table with ratios vs swin1d and the growth exponent (log-log slope of time and extra
memory against length: 1 = linear) per model, and writes TSVs to --out.

enformer-pytorch (random weights, offline) is a benchmark-only dependency, not in pyproject:
    .venv/bin/pip install -c <(.venv/bin/pip freeze | grep -E '^(torch|numpy)==') enformer-pytorch
Matched width: `--width` channels at bin resolution for all three (enformer-pytorch `dim`), the same
transformer depth, its tower down-sampling by 2^7 like ours; its heads are the most (<= 8) for
which width/heads is a multiple of 6 (its relative-position features need that), key size width/heads.

    python benchmarks/tracks_cost.py [--lengths 4096,...,131072] [--width 96] [--repeats 3]

--model-dirs builtin,DIR,... instead times trained track models (builtin: the installed one) as
predict-tracks runs them: batches of --batch 8 windows of the model's own length, one thread,
inference mode; bp/s counts the predicted (target) bp, the speed issue 17 asks to keep.
DIR@CHECKOUT times DIR with the genointerp of an older checkout (its worker runs with
PYTHONPATH=CHECKOUT; `builtin@CHECKOUT` is the model that checkout installed), so code and
model of two versions compare in one run. The workers run in --rounds rounds, one process per
model and round in turn (A B C A B C ...), and each row is the median over rounds of a worker's
median: on shared cloud CPUs one process can run 25 % slower than the next, so only models
timed alternately, in the same run, compare.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import out_dir, table  # noqa: E402

MODELS = ("swin1d", "enformer-like", "enformer-pytorch")
LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)
INSTALL = ".venv/bin/pip install -c <(.venv/bin/pip freeze | grep -E '^(torch|numpy)==') enformer-pytorch"


def enformer_pytorch_heads(width: int, most: int = 8) -> int:
    return max(h for h in range(1, most + 1) if width % h == 0 and (width // h) % 6 == 0)


def build(model: str, length: int, args):
    """Returns (module, fn: x (1, L, 4) -> rates (1, target bins, tracks))."""
    bins = length // args.bin_size
    target = bins - 2 * int(bins * (1 - args.target_fraction) / 2)  # same crop on both sides
    if model == "enformer-pytorch":
        from enformer_pytorch import Enformer

        heads = enformer_pytorch_heads(args.width)
        net = Enformer.from_hparams(dim=args.width, depth=args.transformer_layers, heads=heads,
                                    attn_dim_key=args.width // heads, output_heads={"human": args.tracks},
                                    target_length=target, num_downsamples=int(math.log2(args.bin_size)), dim_divisible_by=8)
        return net, lambda x: net(x, head="human")
    from genointerp.model_folder import build_model
    from genointerp.models.track_configs import default_track_config

    config = default_track_config(model, length, args.bin_size, target, args.tracks, None, args.width,
                                  transformer_layers=args.transformer_layers)
    net = build_model(config.to_dict())
    return net, net


def worker(model: str, length: int, mode: str, args) -> dict:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net, fn = build(model, length, args)
    net.train(mode == "train")
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (1, length)), 4).float()

    def step():
        if mode == "infer":
            with torch.inference_mode():
                fn(x)
        else:
            y = fn(x)
            torch.nn.functional.poisson_nll_loss(y, torch.ones_like(y), log_input=False).backward()
            net.zero_grad(set_to_none=True)

    base = reset_peak_rss()
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": sorted(times)[len(times) // 2], "peak_mib": peak, "extra_mib": peak - base,
            "params": sum(p.numel() for p in net.parameters())}


def model_worker(folder: str, args) -> dict:
    """Predicted bp/s of a trained track model (one thread, batches of args.batch windows)."""
    import torch

    from genointerp.tracks.inference import load_track_model

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net, cfg = load_track_model(None if folder == "builtin" else folder)
    net.eval()
    w = cfg["window"]
    x = torch.nn.functional.one_hot(torch.randint(0, 4, (args.batch, w["seq_len"])), 4).float()
    with torch.inference_mode():
        for _ in range(args.warmup):
            net(x)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            net(x)
            times.append(time.perf_counter() - t0)
    sec = sorted(times)[len(times) // 2]
    return {"model": folder, "params": sum(p.numel() for p in net.parameters()), "window_bp": w["seq_len"],
            "seconds_per_batch": f"{sec:.4f}", "predicted_bp_per_s": f"{args.batch * w['target_bins'] * w['bin_size'] / sec:.0f}"}


def time_models(args) -> None:
    import os
    import statistics

    entries = args.model_dirs.split(",")
    runs: dict[str, list[dict]] = {e: [] for e in entries}
    for _ in range(args.rounds):
        for entry in entries:
            folder, _, checkout = entry.partition("@")
            env = dict(os.environ, PYTHONPATH=checkout) if checkout else None
            cmd = [sys.executable, __file__, "--model-worker", folder, "--batch", str(args.batch),
                   "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
            if res.returncode:
                sys.exit(f"{entry} failed:\n{res.stderr[-3000:]}")
            runs[entry].append(json.loads(res.stdout.strip().splitlines()[-1]))
    rows = []
    for entry, done in runs.items():
        speeds = [float(r["predicted_bp_per_s"]) for r in done]
        rows.append({"model": entry, "params": done[0]["params"], "window_bp": done[0]["window_bp"],
                     "seconds_per_batch": f"{statistics.median(float(r['seconds_per_batch']) for r in done):.4f}",
                     "predicted_bp_per_s": f"{statistics.median(speeds):.0f}",
                     "range": f"{min(speeds):.0f}-{max(speeds):.0f}"})
        rows[-1]["vs_first"] = f"{statistics.median(speeds) / float(rows[0]['predicted_bp_per_s']):.2f}"
    print(f"batches of {args.batch} windows, 1 thread, inference mode, median of {args.rounds} rounds of a median "
          f"of {args.repeats} after {args.warmup} warm-up")
    print(table(rows, list(rows[0])))


def reset_peak_rss() -> float:
    """Reset this process's RSS high-water mark where Linux allows it; return the RSS now (MiB).
    Elsewhere returns the high-water mark so far, so extra MiB is a lower bound."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize() / 2 ** 20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    lx, ly = [math.log(v) for v in xs], [math.log(max(v, 1e-9)) for v in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="input lengths in bp, comma-separated")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default="infer,train", help="infer (forward, inference mode) and/or train (forward+backward)")
    ap.add_argument("--width", type=int, default=96, help="channels at bin resolution (96: enformer-pytorch needs width/heads %% 6 == 0)")
    ap.add_argument("--bin-size", type=int, default=128)
    ap.add_argument("--tracks", type=int, default=8)
    ap.add_argument("--transformer-layers", type=int, default=1)
    ap.add_argument("--target-fraction", type=float, default=1.0, help="central fraction of the bins predicted")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per (model, length, mode) subprocess")
    ap.add_argument("--out", default="bench-output/tracks_cost")
    ap.add_argument("--model-dirs", help="time these trained track models instead (builtin = the installed one; "
                                         "DIR@CHECKOUT: with that checkout's genointerp)")
    ap.add_argument("--rounds", type=int, default=5, help="with --model-dirs: time every model this many times, in turn")
    ap.add_argument("--batch", type=int, default=8, help="windows per batch with --model-dirs (predict-tracks' default)")
    ap.add_argument("--worker", nargs=3, metavar=("MODEL", "LENGTH", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--model-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.model_worker:
        print(json.dumps(model_worker(args.model_worker, args)))
        return
    if args.model_dirs:
        time_models(args)
        return
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]), args.worker[2], args)))
        return

    lengths = [int(v) for v in args.lengths.split(",")]
    models, modes = args.models.split(","), args.modes.split(",")
    if "enformer-pytorch" in models:
        import importlib.util

        if importlib.util.find_spec("enformer_pytorch") is None:  # not imported: keep the driver's RSS small
            print(f"enformer-pytorch is not installed; skipping it. Install it (benchmark only) with:\n  {INSTALL}",
                  file=sys.stderr)
            models.remove("enformer-pytorch")
    passthrough = ["--width", str(args.width), "--bin-size", str(args.bin_size), "--tracks", str(args.tracks),
                   "--transformer-layers", str(args.transformer_layers),
                   "--target-fraction", str(args.target_fraction), "--repeats", str(args.repeats),
                   "--warmup", str(args.warmup)]
    results = {}
    for mode in modes:
        for model in models:
            for length in lengths:
                cmd = [sys.executable, __file__, "--worker", model, str(length), mode] + passthrough
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    print(f"{model} {length} bp {mode}: over {args.timeout} s, skipped", file=sys.stderr)
                    continue
                if res.returncode:
                    sys.exit(f"{model} {length} bp {mode} failed:\n{res.stderr[-3000:]}")
                results[model, length, mode] = json.loads(res.stdout.strip().splitlines()[-1])
                print(f"  {mode} {model} {length} bp: {results[model, length, mode]['seconds']:.3f} s", file=sys.stderr)

    rows, growth = [], []
    for mode in modes:
        for model in models:
            done = [n for n in lengths if (model, n, mode) in results]
            for n in done:
                r, ref = results[model, n, mode], results.get(("swin1d", n, mode))
                rows.append({"mode": mode, "model": model, "length_bp": n, "params": r["params"],
                             "seconds": f"{r['seconds']:.4f}", "peak_MiB": f"{r['peak_mib']:.0f}",
                             "extra_MiB": f"{r['extra_mib']:.1f}", "bp_per_s": f"{n / r['seconds']:.0f}",
                             "time_vs_swin1d": f"{r['seconds'] / ref['seconds']:.2f}" if ref else "NA",
                             "extra_mem_vs_swin1d": f"{r['extra_mib'] / ref['extra_mib']:.2f}" if ref and ref["extra_mib"] > 0 else "NA"})
            if len(done) >= 2:
                extra = [results[model, n, mode]["extra_mib"] for n in done]
                growth.append({"mode": mode, "model": model, "lengths": f"{done[0]}-{done[-1]}",
                               "time_exponent": f"{slope(done, [results[model, n, mode]['seconds'] for n in done]):.2f}",
                               "extra_mem_exponent": f"{slope(done, extra):.2f}" if min(extra) > 0 else "NA"})
    if not rows:
        sys.exit("no results")
    out = out_dir(args.out)
    for name, part in (("tracks_cost.tsv", rows), ("tracks_cost_growth.tsv", growth)):
        if part:
            cols = list(part[0])
            (out / name).write_text("\t".join(cols) + "\n" + "".join("\t".join(str(r[c]) for c in cols) + "\n" for r in part))
    print(f"batch 1, 1 thread, width {args.width}, {args.transformer_layers} transformer layer(s), bin {args.bin_size} bp, "
          f"central {args.target_fraction:g} of bins predicted, "
          f"median of {args.repeats} after {args.warmup} warm-up; peak = highest RSS during the passes (ru_maxrss after a reset), extra = peak - RSS before them")
    print(table(rows, list(rows[0])))
    if growth:
        print("\ngrowth exponent (log-log slope vs length; 1 = linear, 2 = quadratic)")
        print(table(growth, list(growth[0])))
    print(f"\nTSVs in {out}/")


if __name__ == "__main__":
    main()
