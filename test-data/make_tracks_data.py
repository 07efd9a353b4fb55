"""Build the small synthetic track data set in test-data/tracks/ (deterministic: same bytes on rerun).

A random two-chromosome genome (chr1 40,000 bp, chr2 20,000 bp) with planted motifs, and target
tracks that are an exact function of the sequence, so a track model can learn them and tests can
recompute them:

- motif_a (bigWig, group DNase): 8.0 within +-64 bp of every AP-1 site TGACTCA (or its reverse
  complement TGAGTCA), 0 elsewhere;
- motif_b (gzip bedGraph, group ChIP): 4.0 within +-32 bp of every CCAAT-box site GCCAATCAG (or
  CTGATTGGC);
- peaks.narrowPeak.gz, two peak sets in one file (column 4, as ENCODE-DREAM ships them):
  `cellX|TF1|conservative` = 200 bp peaks centred on the AP-1 sites, signalValue 6.0;
  `cellX|TF2|conservative` = CCAAT sites +-50 bp, signalValue 3.0.

Sites are found by scanning the final sequence (both strands, overlapping matches), so chance
matches count like planted ones. chr1 has an N gap at [15,000, 16,000), chr2 starts with 300 N
and is soft-masked (lower case) at [5,000, 5,200). Also written: targets.tsv (the four tracks),
regions.bed, and other_assembly.bw (chr1 1,000 bp longer than the FASTA's) for the error test.

Run from the repository root: python test-data/make_tracks_data.py [OUT_DIR]
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

import numpy as np

SEED = 20230704
CHROMS = {"chr1": 40_000, "chr2": 20_000}
N_GAPS = {"chr1": (15_000, 16_000), "chr2": (0, 300)}
SOFT_MASK = {"chr2": (5_000, 5_200)}
PLANTED = {"chr1": (60, 50), "chr2": (28, 22)}  # (AP-1 sites, CCAAT sites) planted per chromosome

MOTIF_A, FLANK_A, VALUE_A = "TGACTCA", 64, 8.0
MOTIF_B, FLANK_B, VALUE_B = "GCCAATCAG", 32, 4.0
PEAK_SETS = {  # name: (motif, half-width around the site centre, or None and a flank around the site, signalValue)
    "cellX|TF1|conservative": (MOTIF_A, 100, None, 6.0),
    "cellX|TF2|conservative": (MOTIF_B, None, 50, 3.0),
}
TARGETS = [  # id, file, group, description, name
    ("motif_a", "motif_a.bw", "DNase", "8.0 within 64 bp of TGACTCA/TGAGTCA", ""),
    ("motif_b", "motif_b.bedgraph.gz", "ChIP", "4.0 within 32 bp of GCCAATCAG/CTGATTGGC", ""),
    ("cellX.TF1.conservative", "peaks.narrowPeak.gz", "ChIP", "200 bp peaks at AP-1 sites, 6.0",
     "cellX|TF1|conservative"),
    ("cellX.TF2.conservative", "peaks.narrowPeak.gz", "ChIP", "CCAAT sites +-50 bp, 3.0",
     "cellX|TF2|conservative"),
]
REGIONS = [("chr1", 0, 15_000, "train"), ("chr1", 16_000, 40_000, "train"),
           ("chr2", 300, 10_000, "valid"), ("chr2", 10_000, 20_000, "test")]
OTHER_ASSEMBLY = {"chr1": 41_000, "chr2": 20_000}


def revcomp(s: str) -> str:
    return s[::-1].translate(str.maketrans("ACGT", "TGCA"))


def motif_sites(seq: str, motif: str) -> list[int]:
    """0-based starts of `motif` or its reverse complement in `seq` (case-insensitive, overlapping)."""
    pattern = re.compile(f"(?=({motif}|{revcomp(motif)}))")
    return [m.start() for m in pattern.finditer(seq.upper())]


def merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of half-open intervals, sorted."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def site_intervals(seq: str, motif: str, flank: int) -> list[tuple[int, int]]:
    """Merged [site - flank, site + len(motif) + flank) intervals, clipped to the chromosome."""
    n = len(seq)
    return merge([(max(0, p - flank), min(n, p + len(motif) + flank)) for p in motif_sites(seq, motif)])


def peaks(seq: str, motif: str, half: int | None, flank: int | None) -> list[tuple[int, int]]:
    """Unmerged peak intervals of one set (peaks of close sites overlap, as real peak calls do)."""
    n = len(seq)
    out = []
    for p in motif_sites(seq, motif):
        if half is not None:
            centre = p + len(motif) // 2
            out.append((max(0, centre - half), min(n, centre + half)))
        else:
            out.append((max(0, p - flank), min(n, p + len(motif) + flank)))
    return out


def genome() -> dict[str, str]:
    rng = np.random.default_rng(SEED)
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)
    seqs = {}
    for chrom, length in CHROMS.items():
        seq = bytearray(letters[rng.integers(0, 4, length)].tobytes())
        n_a, n_b = PLANTED[chrom]
        slots = np.arange(200, length - 300, 300)  # one motif per 300 bp slot: plants never collide
        gap = N_GAPS[chrom]
        slots = slots[(slots + 300 <= gap[0]) | (slots >= gap[1])]
        chosen = rng.choice(slots, size=n_a + n_b, replace=False) + rng.integers(0, 100, n_a + n_b)
        for i, pos in enumerate(chosen):
            motif = MOTIF_A if i < n_a else MOTIF_B
            if rng.random() < 0.5:
                motif = revcomp(motif)
            seq[pos : pos + len(motif)] = motif.encode()
        seq[gap[0] : gap[1]] = b"N" * (gap[1] - gap[0])
        if chrom in SOFT_MASK:
            s, e = SOFT_MASK[chrom]
            seq[s:e] = seq[s:e].lower()
        seqs[chrom] = seq.decode()
    return seqs


def write_gz(path: Path, text: str) -> None:
    path.write_bytes(gzip.compress(text.encode(), mtime=0))  # mtime=0: same bytes on rerun


def build(out: Path) -> None:
    import pyBigWig
    import pysam

    out.mkdir(parents=True, exist_ok=True)
    seqs = genome()
    plain = out / "ref.fa"
    plain.write_text("".join(f">{c}\n" + "".join(s[i : i + 60] + "\n" for i in range(0, len(s), 60))
                             for c, s in seqs.items()))
    pysam.tabix_compress(str(plain), str(out / "ref.fa.gz"), force=True)
    plain.unlink()
    for index in ("ref.fa.gz.fai", "ref.fa.gz.gzi"):
        (out / index).unlink(missing_ok=True)
    pysam.faidx(str(out / "ref.fa.gz"))

    bw = pyBigWig.open(str(out / "motif_a.bw"), "w")
    bw.addHeader(list(CHROMS.items()))
    for chrom, seq in seqs.items():
        iv = site_intervals(seq, MOTIF_A, FLANK_A)
        bw.addEntries([chrom] * len(iv), [s for s, _ in iv], ends=[e for _, e in iv], values=[VALUE_A] * len(iv))
    bw.close()

    write_gz(out / "motif_b.bedgraph.gz", "".join(
        f"{chrom}\t{s}\t{e}\t{VALUE_B:g}\n" for chrom, seq in seqs.items() for s, e in site_intervals(seq, MOTIF_B, FLANK_B)))

    rows = []
    for chrom, seq in seqs.items():
        for name, (motif, half, flank, value) in PEAK_SETS.items():
            for s, e in peaks(seq, motif, half, flank):
                rows.append((list(CHROMS).index(chrom), s, e, name, value))
    rows.sort()
    write_gz(out / "peaks.narrowPeak.gz", "".join(
        f"{list(CHROMS)[c]}\t{s}\t{e}\t{name}\t{int(v * 100)}\t.\t{v:g}\t-1\t-1\t{(e - s) // 2}\n"
        for c, s, e, name, v in rows))

    (out / "targets.tsv").write_text("id\tpath\tgroup\tdescription\tname\n" + "".join("\t".join(t) + "\n" for t in TARGETS))
    (out / "regions.bed").write_text("".join(f"{c}\t{s}\t{e}\t{n}\n" for c, s, e, n in REGIONS))

    bw = pyBigWig.open(str(out / "other_assembly.bw"), "w")
    bw.addHeader(list(OTHER_ASSEMBLY.items()))
    bw.addEntries(["chr1", "chr2"], [100, 100], ends=[200, 200], values=[1.0, 1.0])
    bw.close()


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "tracks")
