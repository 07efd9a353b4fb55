"""classify-reads per read beside kraken2: precision on human and contaminants, recall on HPV types
no choice was made on, any read length, and speed, in one run.

Read sets: benchmarks/viral_reads.py (ART reads; validation and test HPV types the built-in model
never saw; human GRCh37 chr20 beyond the training span; poly-G, adapter dimers, phage lambda,
phiX174, vectors, held-out bacteria; test-type genomes with 5/10/15 % substitutions). Both callers
get the same knowledge:

  genointerp  the built-in model with its viral indexes rebuilt from the genomes it was trained on
              (its training_genomes.txt: OUT/refs/known.fa) minus the training negatives of scripts/build_default_model.py; nothing of the
              validation or test types, nor of chr20 beyond 50 Mb
  kraken2     a database of the same genomes and negatives (benchmarks/classify_reads.py's flat
              taxonomy); a read is viral when kraken2 assigns it to the HPV taxon

Rows: the default call (evidence bits and the model's vote where it can change the call), the
evidence alone (--evidence kmer), the model alone (--evidence model, p_viral >= its threshold; not
run on the human sets, 100,000s of reads at the model's pace), kraken2. Cells: share of the set called viral (recall for HPV sets, the false-positive rate with
its 95 % Clopper-Pearson interval for the others). The calling rule's settings were chosen on the
validation types and human_val reads (genointerp.viral.classify.calling); test sets took no part.

    python benchmarks/viral_calls.py [--shared ../shared/data] [--work build/default-model] [--out bench-output/viral_calls]

Needs `make bench-deps` (ART, kraken2, blastdbcmd, UniVec, phage lambda) and `make
example-genomes`; the references of `scripts/build_default_model.py --stage refs` in --work.

Results (AMD EPYC, 2 cores, 2026-11-28; benchmarks/README.md "classify-reads: how well it calls"),
protein and codon-seed evidence whose stretches pay a draw for each match at an unrelated place,
protein alignments SEG-masked, at the 9-bit line: unseen test types at 150 bp 91.26 % (validation
92.68 %; kraken2 35.56 %, 2.57x), at 100 bp 83.79 % (3.56x), at 75 bp 74.87 % (4.47x); known
genomes 100 / 99.99 / 99.97 % at 150 / 100 / 75 bp; human test reads 0 of 313,357 (kraken2 3),
validation 0 of 199,999; no poly-G, poly-G-tailed, adapter, lambda, phiX, vector or bacterial read
called; 150 bp test reads by identity to the nearest indexed genome >= 90 % 100 %, 80-90 % 97.6 %,
70-80 % 83.7 % (evidence alone 100 / 97.2 / 82.2 %).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from classify_reads import TAXA, kraken_db, measured_run  # noqa: E402
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402
from viral_reads import LENGTHS, make_reads  # noqa: E402

from genointerp.resources import builtin_model_dir  # noqa: E402

TRAINING_NEGATIVES = ["human_train.fa", "bacteria_train.fa", "bacteria_wide_train.fa", "fungal_train.fa",
                      "protist_train.fa"]
VIRAL = ("known", "val_types", "test_types", "sub05", "sub10", "sub15")
COLUMNS = [("known", 150), ("val_types", 150), ("test_types", 150), ("known", 100), ("val_types", 100),
           ("test_types", 100), ("known", 75), ("val_types", 75), ("test_types", 75), ("sub05", 150), ("sub10", 150),
           ("sub15", 150),
           ("human_val", 150), ("human_test", 150), ("human_val", 100), ("human_test", 100), ("human_val", 75),
           ("human_test", 75), ("polyg", 150), ("polyg_tail", 150), ("adapter", 150), ("lambda", 150), ("phix", 150),
           ("vector", 150), ("bacteria", 150)]
N_VIRAL_COLUMNS = 12  # the first twelve: recall; the rest: false positives
MODES = {"default": [], "evidence alone": ["--evidence", "kmer"], "model alone": ["--evidence", "model"]}


def bench_model(out: Path, work: Path) -> Path:
    """The built-in model with indexes of the genomes it was trained on only (made once)."""
    negatives = [str(work / ref) for ref in TRAINING_NEGATIVES]
    return reindexed_model(out / "bench_model", [str(out / "refs/known.fa")], negatives)


def reindexed_model(folder: Path, viral: list[str], negatives: list[str]) -> Path:
    """A copy of the built-in model in `folder` with both viral indexes rebuilt from `viral` minus
    `negatives` (reference paths) and stored prebuilt (made once: a folder with its `done` mark is
    kept as it is)."""
    from genointerp.cli.common import REPORTER
    from genointerp.io.sequences import read_reference
    from genointerp.viral.evidence.protein import ProteinSettings, build_protein_index
    from genointerp.viral.evidence.seeds import KmerSettings, build_index
    from genointerp.viral.model_files import INDEX_DIR, KMER_KEY, PROTEIN_KEY, REFS_FILE

    if (folder / "done").exists():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    # the built-in prebuilt index would be stale here: index-model below stores the new one
    shutil.copytree(builtin_model_dir(), folder, ignore=shutil.ignore_patterns(INDEX_DIR))
    entry = build_index(folder, viral, negatives, KmerSettings(), True, REPORTER)
    protein = build_protein_index(folder, read_reference(str(folder / REFS_FILE)), negatives, ProteinSettings(), True,
                                  REPORTER)
    config = json.loads((folder / "config.json").read_text())
    config[KMER_KEY], config[PROTEIN_KEY] = entry, protein
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    timed(GENOINTERP + ["-q", "index-model", str(folder)])
    (folder / "done").write_text("ok\n")
    return folder


def kraken_work(out: Path, work: Path) -> Path:
    """A folder laid out as classify_reads.kraken_db expects: the same genomes as bench_model."""
    kw = out_dir(str(out / "kraken_refs"))
    links = {"hpv_train.fa": out / "refs/known.fa", **{ref: work / ref for ref in TRAINING_NEGATIVES}}
    for name, target in links.items():
        if not (kw / name).exists():
            (kw / name).symlink_to(target.resolve())
    return kw


def classify(model: Path, fq: Path, tsv: Path, extra: list[str]) -> np.ndarray:
    """Called viral (bool per read, in file order)."""
    if not tsv.exists():
        timed(GENOINTERP + ["-q", "classify-reads", str(fq), "-m", str(model), "-t", "2", *extra, "-o", str(tsv)])
    rows = [line.split("\t") for line in tsv.read_text().splitlines()[1:]]
    return np.array([r[3] == "viral" for r in rows], bool)


def kraken(db: Path, fq: Path, tsv: Path) -> np.ndarray:
    if not tsv.exists():
        res = subprocess.run(["kraken2", "--db", str(db), "--threads", "2", "--gzip-compressed", str(fq)],
                             check=True, capture_output=True, text=True)
        tsv.write_text(res.stdout)
    return np.array([int(line.split("\t")[2]) == TAXA["viral"][0] for line in tsv.read_text().splitlines()], bool)


def interval(k: int, n: int) -> tuple[float, float]:
    """95 % Clopper-Pearson interval of a rate k / n."""
    from scipy.stats import beta

    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def cell(calls: np.ndarray, viral: bool) -> str:
    k, n = int(calls.sum()), calls.size
    if viral:
        return f"{100 * k / n:.2f} %"
    lo, hi = interval(k, n)
    return f"{k}/{n:,} ({k / n:.1e}; {hi:.1e})"


BINS = ((0.90, ">= 90 %"), (0.80, "80-90 %"), (0.70, "70-80 %"), (0.0, "< 70 %"))


def nearest_identity(out: Path) -> dict[str, float]:
    """Test-type genome -> estimated identity to its nearest indexed (known) genome: a Mash-style
    estimate 1 + ln(2j / (1 + j)) / 16 from the Jaccard index j of canonical 16-mer sets (0 when
    they share none; below about 75 % the estimate is coarse)."""
    from genointerp.io.sequences import read_reference
    from genointerp.viral.evidence.seeds import KmerSettings, reference_kmers

    settings = KmerSettings.contiguous(16, 1, 0)
    known = [reference_kmers([(n, s)], settings, True) for n, s in read_reference(str(out / "refs/known.fa"))]
    result = {}
    for name, seq in read_reference(str(out / "refs/test_types.fa")):
        mine = reference_kmers([(name, seq)], settings, True)
        best = max(np.intersect1d(mine, other, assume_unique=True).size / np.union1d(mine, other).size for other in known)
        result[name] = max(0.0, 1 + np.log(2 * best / (1 + best)) / 16) if best else 0.0
    return result


def divergence_rows(out: Path, calls_dir: Path) -> list[dict]:
    """Recall of 150 bp test-type reads by their genome's identity to the nearest indexed genome,
    per row: what the model adds over the evidence alone, and kraken2 beside them."""
    identity = nearest_identity(out)
    bin_of = {g: next(label for low, label in BINS if v >= low) for g, v in identity.items()}
    fq_names = [line.split("\t")[0] for line in (calls_dir / "test_types.150.default.tsv").read_text().splitlines()[1:]]
    genome = np.array([bin_of[n.split(":", 1)[1].rsplit("-", 1)[0]] for n in fq_names])
    rows = []
    for row, path in (("evidence alone", "test_types.150.evidence_alone.tsv"), ("default", "test_types.150.default.tsv"),
                      ("model alone", "test_types.150.model_alone.tsv"), ("kraken2", "test_types.150.kraken2.tsv")):
        text = (calls_dir / path).read_text().splitlines()
        called = (np.array([line.split("\t")[2] == str(TAXA["viral"][0]) for line in text]) if row == "kraken2"
                  else np.array([line.split("\t")[3] == "viral" for line in text[1:]]))
        rows.append({"row": row, **{f"{label} ({int((genome == label).sum()):,} reads)":
                                    f"{100 * called[genome == label].mean():.1f} %" if (genome == label).any() else "-"
                                    for _, label in BINS}})
    return rows


def speed(model: Path, db: Path, reads: dict, out: Path) -> dict:
    """Reads/s end to end from gzipped FASTQ on 2 threads: a tumour-like file (the human test reads
    and 1 % as many HPV test-type reads, shuffled by a fixed seed), the default call, --model-all,
    and kraken2; peak memory at two sizes."""
    import gzip

    mixed = out / "speed.1pct.fq.gz"
    if not mixed.exists():
        records = []
        for key in ("human_test", "test_types"):
            lines = gzip.decompress(reads[key, 150].read_bytes()).decode().splitlines(keepends=True)
            records.append(["".join(lines[i : i + 4]) for i in range(0, len(lines), 4)])
        human, viral = records
        mix = human + viral[: len(human) // 100]
        order = np.random.default_rng(7).permutation(len(mix))
        with gzip.open(mixed, "wt", compresslevel=6) as dst:
            dst.write("".join(mix[i] for i in order))
    n = sum(1 for _ in gzip.open(mixed, "rt")) // 4
    small = out / "speed_small.1pct.fq.gz"
    if not small.exists():
        with gzip.open(mixed, "rt") as src, gzip.open(small, "wt", compresslevel=6) as dst:
            for i, line in enumerate(src):
                if i >= 4 * 20_000:
                    break
                dst.write(line)
    result = {"reads": n}
    secs, rss = measured_run(GENOINTERP + ["-q", "classify-reads", str(mixed), "-m", str(model), "-t", "2",
                                           "-o", str(out / "speed.tsv"), "--force"])
    result["default_reads_per_s"], result["default_peak_mb"] = n / secs, rss
    secs_small, rss_small = measured_run(GENOINTERP + ["-q", "classify-reads", str(small), "-m", str(model), "-t", "2",
                                                       "-o", str(out / "speed_small.tsv"), "--force"])
    result["small_reads"], result["small_peak_mb"] = 20_000, rss_small
    secs, _ = measured_run(GENOINTERP + ["-q", "classify-reads", str(small), "-m", str(model), "-t", "2", "--model-all",
                                         "-o", str(out / "speed_all.tsv"), "--force"])
    result["model_all_reads_per_s"] = 20_000 / secs
    t0 = time.perf_counter()
    subprocess.run(["kraken2", "--db", str(db), "--threads", "2", "--gzip-compressed", str(mixed)], check=True,
                   capture_output=True)
    result["kraken2_reads_per_s"] = n / (time.perf_counter() - t0)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--work", default="build/default-model")
    ap.add_argument("--out", default="bench-output/viral_calls")
    args = ap.parse_args()
    require("art_illumina", "kraken2", "kraken2-build", "blastdbcmd")
    work, out = Path(args.work), out_dir(args.out)
    if not (work / "refs.done").exists() or not (work / "wide.done").exists():
        sys.exit(f"{work}: run scripts/build_default_model.py's prepare steps first (`make default-model` does)")
    reads = make_reads(Path(args.shared), out)
    model = bench_model(out, work)
    db, _ = kraken_db(kraken_work(out, work), out)
    calls_dir = out_dir(str(out / "calls"))
    rows, result = [], {}
    for row, extra in [*MODES.items(), ("kraken2", None)]:
        r = {"row": row}
        for key, length in COLUMNS:
            fq = reads[key, length]
            name = f"{key}.{length}"
            if row == "model alone" and key.startswith("human"):
                r[name] = "-"  # 100,000s of reads at the model's pace: see --model-all's speed below
                continue
            if extra is None:
                calls = kraken(db, fq, calls_dir / f"{name}.kraken2.tsv")
            else:
                calls = classify(model, fq, calls_dir / f"{name}.{row.replace(' ', '_')}.tsv", extra)
            viral = key in VIRAL
            r[name] = cell(calls, viral)
            result.setdefault(row, {})[name] = {"called": int(calls.sum()), "reads": int(calls.size)}
        rows.append(r)
    names = [f"{k}.{n}" for k, n in COLUMNS]
    for group in (names[:N_VIRAL_COLUMNS], names[N_VIRAL_COLUMNS:]):
        print(table([{"row": r["row"], **{c: r[c] for c in group}} for r in rows], ["row", *group]))
        print()
    ratio = {length: result["default"][f"test_types.{length}"]["called"] / max(result["kraken2"][f"test_types.{length}"]["called"], 1)
             for length in LENGTHS}
    print("unseen test types found, genointerp / kraken2: " + ", ".join(f"{n} bp {r:.2f}x" for n, r in ratio.items()))
    div = divergence_rows(out, calls_dir)
    print("\n150 bp test-type reads called viral, by their genome's identity to the nearest indexed genome:")
    print(table(div, list(div[0])))
    sp = speed(model, db, reads, out)
    print(f"speed on {sp['reads']:,} reads (gzipped FASTQ, 2 threads, end to end): default {sp['default_reads_per_s']:,.0f} "
          f"reads/s, peak {sp['default_peak_mb']:,.0f} MB ({sp['small_peak_mb']:,.0f} MB on {sp['small_reads']:,} reads); "
          f"--model-all {sp['model_all_reads_per_s']:,.0f} reads/s; kraken2 {sp['kraken2_reads_per_s']:,.0f} reads/s "
          "(database load included)")
    (out / "result.json").write_text(json.dumps({"rows": result, "unseen_ratio_to_kraken2": ratio, "by_identity": div,
                                                 "speed": sp},
                                                indent=2) + "\n")


if __name__ == "__main__":
    main()
