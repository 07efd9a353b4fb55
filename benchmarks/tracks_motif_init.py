"""Motif-aware first layer and token size for track models (issue 17), at one small equal budget.

Same data and split as benchmarks/tracks_table1.py (87 ENCODE-DREAM conservative TF ChIP-seq
tracks on GRCh37 chr20; valid 50.4-56.7 Mb, test 56.7-63.0 Mb), trained on --train-region
(default 20:0-12,500,000) for --epochs (2) with 3,072 bp -> 16 x 128 bp, width 64, batch 16,
lr 3e-4 cosine, seed 1. Variants (--variants, comma-separated):

    <arch>-p<patch>-<init>   arch: swin1d or a Table 1 baseline; patch: bp per token after the stem;
                             init: random, jaspar (--motif-init jaspar: every stem filter),
                             jaspar-freeze (--motif-init jaspar --motif-freeze-epochs 1) or
                             jaspar-half (--motif-init jaspar --motif-filters 16: half of them),
                             centred, centred-half (the same with --motif-init jaspar-centred)

Table: test Pearson r (mean over tracks), its margin over the cpg control on the same test windows
(evaluate-tracks --controls, fitted on the training region), validation r, seconds. Then, for
each jaspar variant against the random variant of the same arch and patch, the factors (mean r
over their cell lines) that gain or lose most. Resumable: a variant whose model exists is reused.

    python benchmarks/tracks_motif_init.py --shared ../shared/data \\
        [--variants maxpool-cnn-p4-random,maxpool-cnn-p4-jaspar,...] [--threads 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from common import GENOINTERP, out_dir, table  # noqa: E402
from tracks_table1 import CHROM, TEST, parse_region, run_logged, write_bed  # noqa: E402

from build_tracks_model import FASTA, PEAKS, write_targets  # noqa: E402

VALID = (50_400_000, 56_700_000)  # the built-in model's own validation span, as when these numbers were made
# (tracks_table1 validates on the blocks split's 50.5-56.7 Mb since)

DEFAULT = ("maxpool-cnn-p4-random,maxpool-cnn-p4-jaspar,maxpool-cnn-p4-jaspar-freeze,maxpool-cnn-p1-random,"
           "maxpool-cnn-p1-jaspar,swin1d-p4-random,swin1d-p4-jaspar")
INIT = {"random": [], "jaspar": ["--motif-init", "jaspar"],
        "jaspar-freeze": ["--motif-init", "jaspar", "--motif-freeze-epochs", "1"],
        "jaspar-half": ["--motif-init", "jaspar", "--motif-filters", "16"],
        "centred": ["--motif-init", "jaspar-centred"],
        "centred-half": ["--motif-init", "jaspar-centred", "--motif-filters", "16"]}


def parse_variant(name: str) -> tuple[str, int, str]:
    for init in sorted(INIT, key=len, reverse=True):
        if name.endswith("-" + init):
            head = name[: -len(init) - 1]
            arch, patch = head.rsplit("-p", 1)
            return arch, int(patch), init
    sys.exit(f"bad variant {name!r}: <arch>-p<patch>-<{'|'.join(INIT)}>")


def per_track(path: Path, column: str = "pearson") -> dict[str, float]:
    with open(path) as fh:
        return {r["track"]: float(r[column]) for r in csv.DictReader(fh, delimiter="\t") if r["track"] != "(mean)"}


def by_factor(r: dict[str, float]) -> dict[str, float]:
    """Mean r per factor (CELL.FACTOR.set ids) over its cell lines."""
    groups: dict[str, list[float]] = defaultdict(list)
    for track, v in r.items():
        groups[track.split(".")[1]].append(v)
    return {f: sum(v) / len(v) for f, v in groups.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="bench-output/tracks_motif_init")
    ap.add_argument("--variants", default=DEFAULT)
    ap.add_argument("--train-region", default=f"{CHROM}:0-12500000")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    shared, out = Path(args.shared), out_dir(args.out)
    fasta, peaks = shared / FASTA, shared / PEAKS
    logs, models = out_dir(str(out / "logs")), out_dir(str(out / "models"))
    targets = out / "targets.tsv"
    write_targets(peaks, targets, 400)
    train_bed = write_bed(out / "train.bed", *parse_region(args.train_region))
    valid_bed = write_bed(out / "valid.bed", CHROM, *VALID)
    test_bed = write_bed(out / "test.bed", CHROM, *TEST)
    common_args = ["--reference", str(fasta), "--targets", str(targets), "--regions", str(train_bed),
                   "--valid-regions", str(valid_bed), "--test-regions", str(test_bed), "--width", "64",
                   "--seq-len", "3072", "--bin-size", "128", "--target-bins", "16", "--epochs", str(args.epochs),
                   "--batch-size", "16", "--lr", "3e-4", "--seed", "1", "--device", "cpu", "-t", str(args.threads)]
    rows, tracks = [], {}
    for name in variants:
        arch, patch, init = parse_variant(name)
        model = models / name
        if not model.exists():
            cmd = GENOINTERP + ["train-tracks", "--arch", arch, "--patch", str(patch), *INIT[init], *common_args,
                                "-o", str(model)]
            if (Path(f"{model}.checkpoint") / "last.pt").exists():
                cmd.append("--resume")
            print(f"training {name} ... (log: {logs / (name + '.log')})", file=sys.stderr, flush=True)
            run_logged(cmd, logs / f"{name}.log")
        tr = json.loads((model / "config.json").read_text())["training"]
        with open(model / "metrics.tsv") as fh:
            seconds = sum(float(r["seconds"]) for r in csv.DictReader(fh, delimiter="\t"))
        test = json.loads((model / "test_metrics.json").read_text())["pearson_mean"]
        tracks[name] = per_track(model / "test_pearson.tsv")
        rows.append({"variant": name, "valid": tr["valid_pearson"], "test": test, "seconds": seconds})
        print(f"{name}: valid r {tr['valid_pearson']:.4f}, test r {test:.4f}", file=sys.stderr, flush=True)

    controls = out / "controls.tsv"
    if not controls.exists():
        run_logged(GENOINTERP + ["evaluate-tracks", "-m", str(models / variants[0]), "--controls", "--fit-regions",
                                 str(train_bed), "--reference", str(fasta), "--targets", str(targets), "--regions",
                                 str(test_bed), "-o", str(controls), "-t", str(args.threads), "--device", "cpu"],
                   logs / "controls.log")
    cpg = per_track(controls, "pearson_cpg")
    cpg_mean = sum(cpg.values()) / len(cpg)
    shown = [{"variant": r["variant"], "test r": f"{r['test']:.4f}", "test - cpg": f"{r['test'] - cpg_mean:+.4f}",
              "valid r": f"{r['valid']:.4f}", "seconds": f"{r['seconds']:.0f}"} for r in rows]
    print(f"\ntrain {args.train_region}, {args.epochs} epoch(s), {len(cpg)} tracks; cpg control test r {cpg_mean:.4f}, "
          f"gc {sum(per_track(controls, 'pearson_gc').values()) / len(cpg):.4f}")
    print(table(shown, ["variant", "test r", "test - cpg", "valid r", "seconds"]))
    for name in variants:
        arch, patch, init = parse_variant(name)
        base = f"{arch}-p{patch}-random"
        if init == "random" or base not in tracks:  # motif variants against random init
            continue
        gain = {f: v - by_factor(tracks[base])[f] for f, v in by_factor(tracks[name]).items()}
        order = sorted(gain, key=gain.get, reverse=True)
        print(f"\n{name} vs {base}: {sum(g > 0 for g in gain.values())} of {len(gain)} factors gain; "
              "most: " + ", ".join(f"{f} {gain[f]:+.3f}" for f in order[:6]) +
              "; least: " + ", ".join(f"{f} {gain[f]:+.3f}" for f in order[-4:]))
    with open(out / "motif_init.tsv", "w") as fh:
        fh.write("variant\tvalid_pearson\ttest_pearson\tseconds\n")
        for r in rows:
            fh.write(f"{r['variant']}\t{r['valid']:.6g}\t{r['test']:.6g}\t{r['seconds']:.1f}\n")


if __name__ == "__main__":
    main()
