"""Does a track model learn planted motifs? swin1d (train-tracks' default) against maxpool-cnn (and
enformer-like), on a family of planted genomes, at an equal CPU budget.

Each member is a random genome built differently (benchmarks/planted.py): its own motifs, site
density, GC fraction and signal shape (box: constant within a flank of each site, as in
test-data/tracks; peak: a triangle falling from the site's centre), three chromosomes: chr1
(training), chr2 (validation: early stopping, and the choices below), chr3 (test: reported only).
Every track is an exact function of the sequence, so a model that learnt the motifs reaches r near 1.

Settings were chosen on the first member (`choose`) only: swin1d (train-tracks' default, 8 bp
tokens) trains SWIN_EPOCHS epochs there, and every other architecture as many epochs as fit in the
same seconds from the per-epoch times measured there (at least SWIN_EPOCHS); the other members are
reported with those epochs and nothing else changed, one thread each. The table gives validation
and test Pearson r per member and architecture (mean over the member's tracks), the seconds of
training, and each architecture's test r over maxpool-cnn's.

    python benchmarks/tracks_planted.py [--members all] [--archs swin1d,maxpool-cnn] [--out bench-output/tracks_planted]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, table, timed  # noqa: E402
from planted import PlantedTrack, planted_genome, write_fasta, write_tracks  # noqa: E402

CHROMS = {"chr1": 300_000, "chr2": 60_000, "chr3": 60_000}  # train, validation, test


@dataclass(frozen=True)
class Member:
    name: str
    role: str  # "choose" (settings chosen here) or "report"
    seed: int
    gc: float
    site_every: int  # bp per planted site of each motif
    tracks: tuple[PlantedTrack, ...]


AP1, CCAAT, EBOX, GATA, CEBP, CRE, ETS = "TGACTCA", "GCCAATCAG", "CACGTG", "AGATAAGA", "TTGCGCAA", "TGACGTCA", "CCGGAAGT"
MEMBERS = [
    # score_variants.py's planted genome and tracks (the test data's), smaller
    Member("ap1-ccaat-box", "choose", 42, 0.5, 800,
           (PlantedTrack("ap1", AP1, 64, 8.0, "box", "DNase"), PlantedTrack("ccaat", CCAAT, 32, 4.0, "box"))),
    # AT-rich, denser, a short palindrome (E-box) and GATA, summit-shaped signal
    Member("gc40-ebox-gata-peak", "report", 7, 0.4, 700,
           (PlantedTrack("ebox", EBOX, 48, 6.0, "peak"), PlantedTrack("gata", GATA, 32, 3.0, "peak"))),
    # GC-rich, sparse sites, one box and one peak track
    Member("gc60-cebp-cre-sparse", "report", 11, 0.6, 1500,
           (PlantedTrack("cebp", CEBP, 64, 10.0, "peak"), PlantedTrack("cre", CRE, 40, 5.0, "box"))),
    # three motifs at once, mixed shapes
    Member("three-motifs", "report", 13, 0.5, 1000,
           (PlantedTrack("ap1", AP1, 48, 6.0, "peak"), PlantedTrack("ccaat", CCAAT, 32, 4.0, "box"),
            PlantedTrack("ets", ETS, 64, 8.0, "peak"))),
]
# lr 1e-3: on the choose member's kind of genome (benchmarks/README.md) swin1d reached r 0.35 / 0.93 after
# 931 steps at 1e-3 and 0.69 / 0.86 after 1,500 at train-tracks' default 3e-4; score_variants.py's
# planted CNN uses 1e-3 too
GEOMETRY = ["--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--width", "32", "--batch-size", "16",
            "--lr", "1e-3", "--seed", "1", "--threads", "1", "--device", "cpu"]
SWIN_EPOCHS = 30  # swin1d's budget (about 1,100 steps); the others get its seconds on the `choose` member


def build_member(m: Member, out: Path) -> tuple[Path, Path]:
    """(fasta, targets.tsv) of member m under out/m.name (built once)."""
    folder = out_dir(str(out / m.name))
    fasta = folder / "genome.fa.gz"
    if not (folder / "targets.tsv").exists():
        seqs = planted_genome(np.random.default_rng(m.seed), CHROMS, [t.motif for t in m.tracks], m.site_every, m.gc)
        write_fasta(fasta, seqs)
        write_tracks(folder, seqs, list(m.tracks))
    return fasta, folder / "targets.tsv"


def train(m: Member, arch: str, epochs: int, out: Path, extra: list[str]) -> dict:
    fasta, targets = build_member(m, out)
    model = out / m.name / f"{arch}_{epochs}{'_' + '_'.join(extra).replace('-', '') if extra else ''}"
    seconds = None
    if not (model / "config.json").exists():
        seconds = timed([*GENOINTERP, "-q", "train-tracks", "-R", str(fasta), "--targets", str(targets),
                         "--chroms", "chr1", "--valid-chroms", "chr2", "--test-chroms", "chr3", "--arch", arch,
                         "--epochs", str(epochs), "--patience", str(epochs), *GEOMETRY, *extra, "-o", str(model)])
    cfg = json.loads((model / "config.json").read_text())
    rows = [line.split("\t") for line in (model / "metrics.tsv").read_text().splitlines()[1:]]
    return {"member": m.name, "role": m.role, "arch": arch, "epochs": epochs,
            "seconds": round(sum(float(r[4]) for r in rows)) if seconds is None else round(seconds),
            "valid_r": round(cfg["training"]["valid_pearson"], 3),
            "test_r": round(cfg["test_metrics"]["pearson_mean"], 3),
            "valid_r_by_epoch": [round(float(r[3]), 3) for r in rows]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", default="all", help="comma list of member names, or all")
    ap.add_argument("--archs", default="swin1d,maxpool-cnn", help="comma list; swin1d first (it sets the budget)")
    ap.add_argument("--swin-epochs", type=int, default=SWIN_EPOCHS)
    ap.add_argument("--extra", default="", help="more train-tracks options for every run (space-separated)")
    ap.add_argument("--epochs", default="", help="skip the budget runs on the choose member: the epochs of every "
                    "architecture after swin1d as they chose them, e.g. maxpool-cnn=30 (to run members in parallel)")
    ap.add_argument("--out", default="bench-output/tracks_planted")
    args = ap.parse_args()
    out = out_dir(args.out)
    archs = args.archs.split(",")
    members = [m for m in MEMBERS if args.members == "all" or m.name in args.members.split(",")]
    extra = args.extra.split()
    t0 = time.perf_counter()
    choose = MEMBERS[0]
    epochs = {archs[0]: args.swin_epochs, **{k: int(v) for k, v in (kv.split("=") for kv in args.epochs.split(",") if kv)}}
    results = []
    if choose in members or len(epochs) < len(archs):
        # the budget, from the `choose` member only: swin1d's seconds for its epochs
        results.append(train(choose, archs[0], args.swin_epochs, out, extra))
        print(json.dumps(results[0]), flush=True)
    for arch in (a for a in archs[1:] if a not in epochs):
        first = results[0]
        probe = train(choose, arch, args.swin_epochs, out, extra)
        per_epoch = probe["seconds"] / probe["epochs"]
        epochs[arch] = max(args.swin_epochs, int(first["seconds"] / per_epoch))
        if epochs[arch] != args.swin_epochs:
            probe = train(choose, arch, epochs[arch], out, extra)
        results.append(probe)
        print(json.dumps(probe), flush=True)
    for m in members:
        if m is choose:
            continue
        for arch in archs:
            r = train(m, arch, epochs[arch], out, extra)
            results.append(r)
            print(json.dumps(r), flush=True)
    rows = []
    for m in [choose, *[m for m in members if m is not choose]]:
        by = {r["arch"]: r for r in results if r["member"] == m.name}
        base = by.get("maxpool-cnn")
        for arch, r in by.items():
            rows.append({**r, "vs maxpool-cnn": f"{r['test_r'] / base['test_r']:.2f}" if base and base["test_r"] > 0 else "-"})
    print(table(rows, ["member", "role", "arch", "epochs", "seconds", "valid_r", "test_r", "vs maxpool-cnn"]))
    name = "results.json" if args.members == "all" else f"results.{args.members.replace(',', '+')}.json"
    (out / name).write_text(json.dumps(results, indent=2) + "\n")
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
