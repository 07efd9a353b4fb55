"""classify-reads on an all-viral sample (a capture panel, a cell line, a high-load tumour) against
kraken2, side by side in one run, and the typing on the seeds' diagonals against the aligner's.

Reads: ART (`art_illumina -ss HS25 -l 150 -c PER_GENOME -rs 21`, single-end) of every genome of
../shared/data/viral/hpv_genomes.fa, gzipped (--per-genome 200: 108,181 reads; --fastq takes any
other file, e.g. human reads for the pace of a sample with next to no viral read). kraken2 gets the
database benchmarks/viral_engine.py builds (the built-in model's genomes and chr20 1-50 Mb, a flat
taxonomy).

Pace: rounds of classify-reads (--report, as a user asks for the types) and kraken2, at -t 1 and
-t 2, back to back within each round; --baseline DIR adds the same classify-reads run of another
checkout (PYTHONPATH=DIR: HEAD before a change, with its extensions built) to each round. Per kind
the best round; then reads/s and genointerp / kraken2 at each thread count. With --baseline the
calls TSV's columns but `bits` (which reads whose seeds decide them no longer add the proteins'
to) and the report are compared between the two.

Agreement (--agreement N; 0 skips): for the first N reads called viral, each read the seeds'
diagonals place (genointerp.viral.typing.typer.Typer.place_seeded) against minimap2 (Typer.place):
the reads left to the aligner, the same `reference` label, the same matches (references, edits,
starts), and where they differ.

    python benchmarks/viral_panel.py [--shared ../shared/data] [--per-genome 200] [--rounds 3]
        [--baseline DIR] [--fastq FILE] [--agreement 30000] [--out bench-output/viral_panel]

The host is shared: only the ratios within a round mean much; say how loaded it was.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table  # noqa: E402
from viral_engine import kraken_database  # noqa: E402


def art_panel_reads(shared: Path, out: Path, per_genome: int) -> Path:
    """ART reads of every HPV genome, `per_genome` of each (made once), gzipped."""
    fq = out / f"hpv_art_c{per_genome}.fq.gz"
    if not fq.exists():
        prefix = out / f"hpv_art_c{per_genome}"
        subprocess.run(["art_illumina", "-ss", "HS25", "-l", "150", "-c", str(per_genome), "-i",
                        str(shared / "viral/hpv_genomes.fa"), "-o", str(prefix), "-na", "-rs", "21"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(f"{prefix}.fq", "rb") as src, gzip.open(fq, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        os.unlink(f"{prefix}.fq")
    return fq


def count_reads(fq: Path) -> int:
    with gzip.open(fq, "rb") as fh:
        return sum(1 for _ in fh) // 4


def run(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(map(str, cmd))}\n{res.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0


def genointerp_cmd(fq: Path, out: Path, tag: str, threads: int) -> list[str]:
    return GENOINTERP + ["-q", "classify-reads", str(fq), "-t", str(threads), "--force", "-o", str(out / f"{tag}.tsv"),
                         "--report", str(out / f"{tag}.report.tsv")]


def pace(fq: Path, db: Path, out: Path, rounds: int, baseline: str | None) -> dict[str, float]:
    """Best wall seconds per kind over `rounds` rounds of every kind back to back."""
    # the baseline runs in its own folder: `python -m` puts the working folder first on the path
    base_env = {**os.environ, "PYTHONPATH": baseline} if baseline else None
    fq, out = fq.resolve(), out.resolve()
    kinds = {}
    for t in (1, 2):
        kinds[f"genointerp -t {t}"] = (genointerp_cmd(fq, out, f"g{t}", t), None, None)
        if baseline:
            kinds[f"baseline -t {t}"] = (genointerp_cmd(fq, out, f"b{t}", t), base_env, baseline)
        kinds[f"kraken2 -t {t}"] = (["kraken2", "--db", str(db), "--threads", str(t), "--gzip-compressed",
                                     "--output", str(out / f"k{t}.out"), str(fq)], None, None)
    secs: dict[str, float] = {}
    for r in range(rounds):
        for kind, (cmd, env, cwd) in kinds.items():
            s = run(cmd, env, cwd)
            secs[kind] = min(secs.get(kind, s), s)
            print(f"round {r + 1}: {kind} {s:.2f} s", file=sys.stderr)
    return secs


def same_outputs(out: Path) -> dict[str, str]:
    """The new run's outputs against the baseline's (-t 1 and -t 2 each)."""
    def columns(path: Path) -> list[str]:
        return ["\t".join(f[:7] + f[8:]) for f in (line.split("\t") for line in path.read_text().splitlines())]
    result = {}
    for t in (1, 2):
        result[f"-t {t}: calls (all columns but bits)"] = \
            "same" if columns(out / f"g{t}.tsv") == columns(out / f"b{t}.tsv") else "DIFFER"
        result[f"-t {t}: report"] = \
            "same" if (out / f"g{t}.report.tsv").read_bytes() == (out / f"b{t}.report.tsv").read_bytes() else "differ"
    result["-t 1 / -t 2: calls and report"] = "same" if (
        (out / "g1.tsv").read_bytes() == (out / "g2.tsv").read_bytes()
        and (out / "g1.report.tsv").read_bytes() == (out / "g2.report.tsv").read_bytes()) else "DIFFER"
    return result


def agreement(fq: Path, limit: int) -> dict[str, int]:
    """The seeds' diagonals against the aligner, read by read, on the first `limit` reads the seeds
    call viral."""
    from genointerp.resources import builtin_model_dir
    from genointerp.seq.joined import encode_text, join
    from genointerp.viral.evidence.prebuilt import load_indexes
    from genointerp.viral.typing.typer import Typer

    folder = builtin_model_dir()
    index, _ = load_indexes(folder, json.loads((folder / "config.json").read_text()), lambda m: None)
    typer = Typer(str(folder), index, lambda m: None)
    seqs = []
    with gzip.open(fq, "rt") as fh:
        for i, line in enumerate(fh):
            if i % 4 == 1:
                seqs.append(line.strip())
    counts: Counter = Counter()
    seeded_s = aligned_s = 0.0
    for b in range(0, len(seqs), 8192):
        if counts["reads called viral"] >= limit:
            break
        batch = seqs[b : b + 8192]
        flat, starts, lengths = encode_text(*join(batch))
        ev = index.evidence(flat, starts, lengths)
        viral = np.flatnonzero(ev.bits >= 9)[: limit - counts["reads called viral"]]
        counts["reads called viral"] += viral.size
        t0 = time.perf_counter()
        seeded = typer.place_seeded(flat, starts[viral], lengths[viral], *ev.windows_of(viral))
        seeded_s += time.perf_counter() - t0
        for j, i in enumerate(viral.tolist()):
            t0 = time.perf_counter()
            aligned = typer.place(batch[i])
            aligned_s += time.perf_counter() - t0
            got = seeded[j]
            if got is None:
                counts["left to the aligner"] += 1
                continue
            counts["placed on the diagonals"] += 1
            if aligned is None:
                counts["  the aligner places it nowhere"] += 1
                continue
            counts["  same reference label"] += typer.reference_label(got) == typer.reference_label(aligned)
            mine = {(h.ref, h.edits, h.r_st) for h in got.hits}
            theirs = {(h.ref, h.edits, h.r_st) for h in aligned.hits}
            if mine == theirs:
                counts["  same matches (references, edits, starts)"] += 1
                continue
            a, b2 = {h.ref for h in got.hits}, {h.ref for h in aligned.hits}
            if a == b2:
                key = "  same references, edits or starts differ"
            elif a > b2:
                key = "  more references (within the margin)"
            elif a < b2:
                key = "  fewer references"
            else:
                key = "  other references"
            counts[key] += 1
            edits_mine = {h.ref: h.edits for h in got.hits}
            fewer = sum(edits_mine[h.ref] < h.edits for h in aligned.hits if h.ref in edits_mine)
            counts["    of which a reference at fewer edits than the aligner's"] += fewer > 0
    typer.close()
    counts["us per read placed on the diagonals (all reads, batch)"] = round(
        1e6 * seeded_s / max(counts["reads called viral"], 1))
    counts["us per read by the aligner"] = round(1e6 * aligned_s / max(counts["reads called viral"], 1))
    return dict(counts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--per-genome", type=int, default=200, help="ART reads of each HPV genome")
    ap.add_argument("--fastq", help="classify these reads instead of ART reads of the HPV genomes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", help="a checkout (its genointerp package's parent, extensions built) to run "
                    "beside, from that folder with PYTHONPATH")
    ap.add_argument("--agreement", type=int, default=30_000, help="reads called viral to compare typings on (0: skip)")
    ap.add_argument("--no-pace", action="store_true")
    ap.add_argument("--out", default="bench-output/viral_panel")
    args = ap.parse_args()
    require("kraken2", "art_illumina", "samtools")
    out, shared = out_dir(args.out), Path(args.shared)
    fq = Path(args.fastq) if args.fastq else art_panel_reads(shared, out, args.per_genome)
    n = count_reads(fq)
    lines = [f"reads: {fq} ({n:,})", f"command: {' '.join(sys.argv)}"]
    if not args.no_pace:
        db = kraken_database(shared, out)
        secs = pace(fq, db, out, args.rounds, args.baseline)
        rows = []
        for t in (1, 2):
            row = {"threads": t, "genointerp s": f"{secs[f'genointerp -t {t}']:.2f}",
                   "genointerp reads/s": f"{n / secs[f'genointerp -t {t}']:,.0f}",
                   "kraken2 reads/s": f"{n / secs[f'kraken2 -t {t}']:,.0f}",
                   "genointerp / kraken2": f"{secs[f'kraken2 -t {t}'] / secs[f'genointerp -t {t}']:.3f}x"}
            if args.baseline:
                row["baseline reads/s"] = f"{n / secs[f'baseline -t {t}']:,.0f}"
                row["genointerp / baseline"] = f"{secs[f'baseline -t {t}'] / secs[f'genointerp -t {t}']:.2f}x"
            rows.append(row)
        lines += ["", table(rows, list(rows[0])), f"(best of {args.rounds} rounds; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end)"]
        if args.baseline:
            lines += ["", table([{"compared": k, "": v} for k, v in same_outputs(out).items()], ["compared", ""])]
    if args.agreement:
        counts = agreement(fq, args.agreement)
        lines += ["", table([{"typing: diagonals against minimap2": k, "reads": v} for k, v in counts.items()],
                            ["typing: diagonals against minimap2", "reads"])]
    text = "\n".join(lines)
    print(text)
    (out / "results.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
