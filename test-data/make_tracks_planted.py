"""Build test-data/tracks_planted/: a planted-motif genome on which a tiny swin1d learns its track in
seconds (deterministic: same bytes on rerun).

Three chromosomes of random DNA (chr1 80,000 bp: training; chr2 20,000 bp: validation; chr3
20,000 bp: test) with a 15 bp motif, CTCF's core consensus CCACCAGGGGGCGCT, planted on either
strand once per 400 bp (benchmarks/planted.py's generator: one site per 300 bp slot, never
colliding), and one bigWig track that is an exact function of the final sequence: 8.0 within
48 bp of every match (either strand, chance matches included), 0 elsewhere.

Why this and not test-data/tracks/: there the AP-1 track's 7 bp motif sits in 60 kb of sequence,
and no model (swin1d or maxpool-cnn) left the mean in the few hundred steps a test can afford; a
15 bp motif is found within 470 steps by swin1d with a wide stem (tests/test_tracks_learn.py).

Run from the repository root: python test-data/make_tracks_planted.py [OUT_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from planted import PlantedTrack, planted_genome, write_fasta, write_tracks  # noqa: E402

SEED = 5
CHROMS = {"chr1": 80_000, "chr2": 20_000, "chr3": 20_000}  # training, validation, test
MOTIF = "CCACCAGGGGGCGCT"
SITE_EVERY = 400
TRACK = PlantedTrack("ctcf_core", MOTIF, 48, 8.0, "box", "ChIP")


def build(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    seqs = planted_genome(np.random.default_rng(SEED), CHROMS, [MOTIF], SITE_EVERY)
    for index in ("genome.fa.gz.fai", "genome.fa.gz.gzi"):
        (out / index).unlink(missing_ok=True)
    write_fasta(out / "genome.fa.gz", seqs)
    targets = write_tracks(out, seqs, [TRACK])
    # paths relative to the table (train-tracks resolves them against its folder)
    targets.write_text(targets.read_text().replace(f"{out}/", ""))


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "tracks_planted")
