"""Planted-motif genomes and the tracks that are exact functions of them, shared by the benchmarks
(score_variants.py, tracks_planted.py).

A genome is random DNA (independent bases at a chosen GC fraction) with sites of each motif planted
in 300 bp slots (so plants never collide), either strand at random. A track is a function of the
final sequence: every match of its motif (either strand, overlapping, chance matches included, as
test-data/make_tracks_data.py finds them) gives `value` within `flank` bp of the site ("box", the
test data's shape) or a triangle falling from `value` at the site's centre to 0 at `flank` bp past
its ends ("peak", the shape of a ChIP-seq summit); overlapping sites take the larger value.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test-data"))
from make_tracks_data import motif_sites, revcomp  # noqa: E402


@dataclass(frozen=True)
class PlantedTrack:
    id: str
    motif: str
    flank: int  # bp either side of the site
    value: float
    shape: str = "box"  # or "peak"
    group: str = "ChIP"


def planted_genome(rng: np.random.Generator, chroms: dict[str, int], motifs: list[str], site_every: int,
                   gc: float = 0.5) -> dict[str, str]:
    """{chrom: sequence}: random bases with P(G) = P(C) = gc / 2, and length // site_every sites of
    each motif per chromosome, planted on a random strand in distinct 300 bp slots. Draws from
    `rng` in a fixed order (so one seed gives one genome)."""
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)
    p = np.array([1 - gc, gc, gc, 1 - gc]) / 2
    seqs = {}
    for chrom, length in chroms.items():
        seq = bytearray(letters[rng.choice(4, length, p=p)].tobytes()) if gc != 0.5 else \
            bytearray(letters[rng.integers(0, 4, length)].tobytes())
        n = length // site_every
        k = len(motifs)
        slots = rng.choice(np.arange(200, length - 300, 300), size=k * n, replace=False) + rng.integers(0, 100, k * n)
        for i, pos in enumerate(slots):
            motif = motifs[i // n]
            motif = revcomp(motif) if rng.random() < 0.5 else motif
            seq[pos:pos + len(motif)] = motif.encode()
        seqs[chrom] = seq.decode()
    return seqs


def track_values(seq: str, track: PlantedTrack) -> np.ndarray:
    """float32 (len(seq),): the track's value at every base of `seq`."""
    n, m = len(seq), len(track.motif)
    y = np.zeros(n, dtype=np.float32)
    for site in motif_sites(seq, track.motif):
        lo, hi = max(0, site - track.flank), min(n, site + m + track.flank)
        if track.shape == "box":
            v = np.full(hi - lo, track.value, dtype=np.float32)
        elif track.shape == "peak":
            centre = site + m / 2
            half = m / 2 + track.flank
            v = (track.value * (1 - np.abs(np.arange(lo, hi) + 0.5 - centre) / half)).astype(np.float32)
        else:
            raise ValueError(f"unknown track shape {track.shape!r}")
        np.maximum(y[lo:hi], v, out=y[lo:hi])
    return y


def write_fasta(path: Path, seqs: dict[str, str]) -> None:
    """bgzip FASTA + .fai/.gzi."""
    import pysam

    plain = path.with_suffix("")
    plain.write_text("".join(f">{c}\n" + "".join(s[i:i + 60] + "\n" for i in range(0, len(s), 60)) for c, s in seqs.items()))
    pysam.tabix_compress(str(plain), str(path), force=True)
    plain.unlink()
    pysam.faidx(str(path))


def write_tracks(out: Path, seqs: dict[str, str], tracks: list[PlantedTrack]) -> Path:
    """One bigWig per track (runs of equal value as entries) and targets.tsv naming them; returns
    the targets table's path."""
    import pyBigWig

    rows = ["id\tpath\tgroup\tdescription"]
    for t in tracks:
        bw = pyBigWig.open(str(out / f"{t.id}.bw"), "w")
        bw.addHeader([(c, len(s)) for c, s in seqs.items()])
        for chrom, seq in seqs.items():
            y = track_values(seq, t)
            edges = np.flatnonzero(np.diff(y, prepend=np.float32(0), append=np.float32(0)))
            starts, ends = edges[:-1], edges[1:]
            keep = y[starts] != 0
            if keep.any():
                bw.addEntries([chrom] * int(keep.sum()), starts[keep].tolist(), ends=ends[keep].tolist(),
                              values=y[starts[keep]].astype(float).tolist())
        bw.close()
        rows.append(f"{t.id}\t{out / f'{t.id}.bw'}\t{t.group}\t{t.value:g} {t.shape} within {t.flank} bp of {t.motif}")
    targets = out / "targets.tsv"
    targets.write_text("\n".join(rows) + "\n")
    return targets
