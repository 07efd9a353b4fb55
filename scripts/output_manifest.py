#!/usr/bin/env python3
"""Run every genointerp command on test-data/ and print a manifest: one line per output file with
its SHA-256, so that two checkouts (before and after a refactoring) can be compared byte for byte.

    python scripts/output_manifest.py --work /tmp/before > before.txt   # in the old checkout
    python scripts/output_manifest.py --work /tmp/after > after.txt     # in the new one
    diff before.txt after.txt                                            # nothing: same outputs

Only what depends on time or place is normalised: the wall-clock columns and fields of metrics
tables and summaries (`seconds`, `elapsed_s`, ...) and the scratch folder's and the checkout's
paths in provenance fields. Everything else, models included, must be identical.
Runs on 1 thread with fixed seeds; about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "test-data"
TRACKS = DATA / "tracks"
TIMING = re.compile(r"(second|elapsed|_s$|per_s|wall|time)", re.I)


def commands(w: Path) -> list[list[str]]:
    reads = w / "reads.fq"
    fq = gzip.decompress((DATA / "tumor_small.fq.gz").read_bytes()).decode().splitlines(keepends=True)
    records = ["".join(fq[i:i + 4]) for i in range(0, len(fq), 4)]
    human = [r for r in records if r.startswith("@human|")]
    reads.write_text("".join(human[:200] + [r for r in records if not r.startswith("@human|")]))
    pheno = w / "pheno.tsv"
    vcf_samples = subprocess.run(["zcat", str(DATA / "eur_chr21_22_small.vcf.gz")], capture_output=True, text=True,
                                 check=True).stdout
    samples = next(line for line in vcf_samples.splitlines() if line.startswith("#CHROM")).split("\t")[9:]
    pheno.write_text("sample\tstatus\n" + "".join(f"{s}\t{'case' if i % 2 else 'control'}\n" for i, s in enumerate(samples)))
    ism_bed = w / "ism.bed"
    ism_bed.write_text("20\t50000\t50040\n")
    small_tracks = ["--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--width", "16", "--batch-size",
                    "8", "--epochs", "2", "--seed", "2", "--device", "cpu"]
    return [
        ["simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-s", f"bact={DATA / 'ecoli_slice.fa'}", "-n", "300",
         "--paired", "--seed", "5", "-o", "sim.fq.gz", "--truth", "sim.tsv"],
        ["kmerize", str(reads), "-k", "4", "--length", "50", "--label-field", "0", "--count-k", "3", "--counts", "counts.tsv", "-o", "kmers"],
        ["train-xvir", "kmers", "--epochs", "2", "--d-model", "16", "--heads", "2", "--batch-size", "64", "--seed", "3",
         "--device", "cpu", "-o", "xvir"],
        ["classify-reads", str(DATA / "tumor_small.fq.gz"), "-o", "calls.tsv", "--summary", "summary.json",
         "--viral-out", "viral.fq.gz"],
        ["classify-reads", str(reads), "-m", "xvir", "-o", "calls_small.tsv"],
        ["classify-reads", str(DATA / "tumor_small.fq.gz"), "--chunk", "1/2", "-o", "c1.tsv", "--summary", "c1.json"],
        ["classify-reads", str(DATA / "tumor_small.fq.gz"), "--chunk", "2/2", "-o", "c2.tsv", "--summary", "c2.json"],
        ["merge-calls", "c1.tsv", "c2.tsv", "c1.json", "c2.json", "-o", "merged.tsv", "--summary", "merged.json"],
        ["attn-maps", str(reads), "--max-reads", "3", "--device", "cpu", "-o", "attn_xvir"],
        ["train-tracks", "-R", str(TRACKS / "ref.fa.gz"), "--targets", str(TRACKS / "targets.tsv"), "--regions",
         str(TRACKS / "regions.bed"), *small_tracks, "-o", "tracks"],
        ["train-tracks", "-R", str(TRACKS / "ref.fa.gz"), "--targets", str(TRACKS / "targets.tsv"), "--regions",
         str(TRACKS / "regions.bed"), *small_tracks, "--arch", "maxpool-cnn", "-o", "tracks_cnn"],
        ["predict-tracks", "-m", "tracks", "-R", str(TRACKS / "ref.fa.gz"), "--regions", str(TRACKS / "regions.bed"),
         "--bedgraph", "--tsv", "--device", "cpu", "-o", "pred"],
        ["predict-tracks", "-R", str(DATA / "chr20_slice.fa.gz"), "--chroms", "20", "--device", "cpu",
         "-o", "pred_builtin"],
        ["score-variants", str(DATA / "chr20_variants.vcf"), "-R", str(DATA / "chr20_slice.fa.gz"), "--rc-average",
         "--shifts", "-1,0,1", "--device", "cpu", "-o", "variants.tsv"],
        ["ism", "--regions", str(ism_bed), "-R", str(DATA / "chr20_slice.fa.gz"), "--rc-average", "--device", "cpu",
         "-o", "ism_builtin"],
        ["evaluate-tracks", "-m", "tracks", "-m", "tracks_cnn", "-R", str(TRACKS / "ref.fa.gz"), "--targets",
         str(TRACKS / "targets.tsv"), "--chroms", "chr2", "--device", "cpu", "-o", "eval.tsv"],
        ["attn-maps", "-m", "tracks", "-R", str(TRACKS / "ref.fa.gz"), "--region", "chr1:20480-21504",
         "--device", "cpu", "-o", "attn_tracks"],
        ["gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "-g", str(DATA / "genes_chr21_22.bed"), "-o", "genepcs"],
        ["gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "--apply", "genepcs", "-o", "genepcs_applied"],
        ["capsule-train", "genepcs", "-p", str(pheno), "--hidden", "16", "--capsule-channels", "4", "--epochs", "5",
         "--folds", "2", "--seed", "2", "--device", "cpu", "-o", "capsule"],
        ["capsule-predict", "capsule", "genepcs_applied", "--device", "cpu", "-o", "capsule_pred.tsv"],
    ]


def normalised(path: Path, work: Path) -> bytes:
    # provenance fields record input paths: the scratch folder's and this checkout's
    data = path.read_bytes().replace(str(work).encode(), b"<work>").replace(str(ROOT).encode(), b"<repo>")
    if path.suffix == ".json":
        def scrub(v):
            if isinstance(v, dict):
                return {k: ("<time>" if TIMING.search(k) else scrub(x)) for k, x in v.items()}
            if isinstance(v, list):
                return [scrub(x) for x in v]
            return v
        return json.dumps(scrub(json.loads(data)), sort_keys=True).encode()
    if path.suffix == ".tsv" and path.name.startswith("metrics"):
        rows = [line.split("\t") for line in data.decode().splitlines()]
        keep = [i for i, c in enumerate(rows[0]) if not TIMING.search(c)]
        return "\n".join("\t".join(r[i] for i in keep) for r in rows).encode()
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, type=Path, help="Scratch folder (emptied first).")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    # this checkout's own code, whichever checkout the installed package points at
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    for cmd in commands(args.work):
        res = subprocess.run([sys.executable, "-m", "genointerp", "-q", *cmd], cwd=args.work, env=env,
                             capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"{' '.join(cmd[:1])} failed:\n{res.stderr}")
        print(f"# genointerp {cmd[0]}: ok", file=sys.stderr)
    for path in sorted(p for p in args.work.rglob("*") if p.is_file()):
        rel = path.relative_to(args.work)
        if rel.name in ("reads.fq", "pheno.tsv") or rel.parts[0].endswith(".checkpoint"):
            continue
        print(f"{hashlib.sha256(normalised(path, args.work)).hexdigest()}  {rel}")


if __name__ == "__main__":
    main()
