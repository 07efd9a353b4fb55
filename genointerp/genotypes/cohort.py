"""Synthetic cohorts as mosaics of real phased haplotypes (for benchmarks and model tests).

Each synthetic haplotype copies a real reference haplotype and switches to another, uniformly
drawn, at recombination events (Li & Stephens-style copying): between consecutive sites i-1 and i
a switch happens with probability 1 - exp(-switches_per_morgan * (cM_i - cM_{i-1}) / 100), where
cM comes from a genetic map interpolated at the site positions. The result keeps the real allele
frequencies and short-range linkage disequilibrium (LD blocks up to the switch scale) of the panel
while making as many distinct samples as asked. Two haplotypes make one diploid sample.

The bundled hg19 map excerpt covers chr22 while the phased panel is chr21: when the map has no
record for the panel's chromosome, its first chromosome is used as a recombination landscape by
position (both lie in 16-51 Mb), which keeps realistic hot and cold intervals.

Scaling past the panel's sites: `n_snps` larger than the panel is reached by tiling the panel's
region (each tile an independent mosaic) along synthetic chromosomes `1`, `2`, ...,
TILES_PER_CHROM tiles each, tile t at offset TILE_START + (t mod TILES_PER_CHROM) * (span + TILE_GAP)
so positions stay below 2^31 (VCF/PLINK limit). `tile_genes` shifts the real genes of the region
the same way (named `GENE.tN`), so every tile has real gene structure.
"""

from __future__ import annotations

import subprocess
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.genes import Gene
from genointerp.io.inputs import open_binary, read_lines

TILES_PER_CHROM = 20
TILE_START = 1_000_000
TILE_GAP = 1_000_000


@dataclass
class Panel:
    """Real phased haplotypes: haplotypes int8 (n_sites, 2 * n_samples) of 0/1 (ALT present);
    cm float64 (n_sites,) genetic positions."""

    chrom: str
    pos: np.ndarray  # int64 (n_sites,)
    ref: list[str]
    alt: list[str]
    haplotypes: np.ndarray
    cm: np.ndarray


@dataclass
class Cohort:
    """dosage int8 (n_samples, n_sites); the site columns are chrom/pos/ref/alt."""

    samples: list[str]
    chrom: list[str]
    pos: np.ndarray
    ref: list[str]
    alt: list[str]
    dosage: np.ndarray


def read_panel(phased_vcf: str, genetic_map: str) -> Panel:
    """A phased, biallelic, single-chromosome VCF(.gz) with 3-byte GT calls (`0|1`)."""
    pos, ref, alt, rows, chrom = [], [], [], [], None
    with open_binary(phased_vcf) as fh:  # plain, gzip or bgzip; a file, `-` or a pipe
        for line in fh:
            if line.startswith(b"#"):
                continue
            f = line.rstrip(b"\r\n").split(b"\t", 9)
            if len(f) < 10 or len(f[9]) % 4 != 3 or not f[1].isdigit():
                where = b":".join(f[:2])[:40].decode(errors="replace")
                raise InputError(f"{phased_vcf}: {where}: malformed record (expected 9 columns, then phased "
                                 "3-byte GT calls, 0|1)")
            chrom = chrom or f[0].decode(errors="replace")
            calls = np.frombuffer(f[9] + b"\t", dtype=np.uint8).reshape(-1, 4)
            if not (calls[:, 1] == ord("|")).all():
                raise InputError(f"{phased_vcf}: {chrom}:{int(f[1])}: every call must be phased 3-byte GT (0|1)")
            rows.append(np.stack([calls[:, 0], calls[:, 2]], axis=1).reshape(-1) - ord("0"))
            if len(rows[-1]) != len(rows[0]):
                raise InputError(f"{phased_vcf}: {chrom}:{int(f[1])}: {len(calls)} calls, the first record has "
                                 f"{len(rows[0]) // 2}")
            pos.append(int(f[1]))
            ref.append(f[3].decode())
            alt.append(f[4].decode())
    haps = np.array(rows, dtype=np.int8)
    if haps.size == 0 or not np.isin(haps, (0, 1)).all():
        raise InputError(f"{phased_vcf}: expected biallelic phased calls without missing values")
    positions = np.array(pos, dtype=np.int64)
    return Panel(chrom, positions, ref, alt, haps, _interpolate_map(genetic_map, chrom, positions))


def _interpolate_map(path: str, chrom: str, pos: np.ndarray) -> np.ndarray:
    """cM at `pos` from a `chr position rate cM` map (header line first)."""
    table: dict[str, list[tuple[int, float]]] = {}
    lines = read_lines(path)
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            c, p, _, cm = line.split()
            table.setdefault(c, []).append((int(p), float(cm)))
        except ValueError:
            raise InputError(f"{path}: line {lineno}: expected 'chr position rate cM'") from None
    if not table:
        raise InputError(f"{path}: no genetic map records (a header line, then 'chr position rate cM' lines)")
    rows = table.get(chrom) or table.get(chrom.removeprefix("chr")) or next(iter(table.values()))
    mp = np.array(rows)
    return np.interp(pos, mp[:, 0], mp[:, 1])


def mosaic_haplotypes(panel: Panel, n_haplotypes: int, rng: np.random.Generator,
                      switches_per_morgan: float = 100.0) -> np.ndarray:
    """int8 (n_sites, n_haplotypes) 0/1 alleles copied from the panel with template switches."""
    n_sites, n_ref = panel.haplotypes.shape
    p_switch = 1 - np.exp(-switches_per_morgan * np.diff(panel.cm, prepend=panel.cm[0]) / 100)
    out = np.empty((n_sites, n_haplotypes), dtype=np.int8)
    for lo in range(0, n_haplotypes, 2048):  # bounded temporaries (n_sites x 2048)
        hi = min(lo + 2048, n_haplotypes)
        switch = rng.random((n_sites, hi - lo)) < p_switch[:, None]
        segment = np.cumsum(switch, axis=0)  # segment number of every site, per haplotype
        template = rng.integers(0, n_ref, size=(int(segment.max()) + 1, hi - lo))
        source = np.take_along_axis(template, segment, axis=0)
        out[:, lo:hi] = np.take_along_axis(panel.haplotypes, source, axis=1)
    return out


def tile_layout(panel: Panel, n_snps: int) -> list[tuple[str, int, int]]:
    """(chrom, position offset, n sites) per tile: n_snps sites in all, the last tile cut short."""
    span = int(panel.pos[-1] - panel.pos[0]) + 1
    tiles, left, t = [], n_snps, 0
    while left > 0:
        take = min(left, len(panel.pos))
        offset = TILE_START + (t % TILES_PER_CHROM) * (span + TILE_GAP) - int(panel.pos[0])
        tiles.append((str(1 + t // TILES_PER_CHROM), offset, take))
        left -= take
        t += 1
    return tiles


def tile_genes(panel: Panel, genes: list[Gene], layout: list[tuple[str, int, int]]) -> list[Gene]:
    """The genes of `genes` on the panel's chromosome overlapping its sites, copied into every
    tile (coordinates shifted by the tile's offset; genes past a cut-short tile's last site dropped)."""
    lo, hi = int(panel.pos[0]) - 1, int(panel.pos[-1])
    own = [g for g in genes if g.chrom.removeprefix("chr") == panel.chrom.removeprefix("chr")
           and g.end > lo and g.start < hi]
    out = []
    for t, (chrom, offset, take) in enumerate(layout):
        last = int(panel.pos[take - 1])
        out += [Gene(f"{g.name}.t{t}", chrom, g.start + offset, g.end + offset) for g in own if g.start < last]
    return out


def mosaic_cohort(phased_vcf: str, genetic_map: str, n_samples: int, seed: int, n_snps: int | None = None,
                  switches_per_morgan: float = 100.0) -> Cohort:
    """A cohort in memory: n_samples x n_snps (default: the panel's sites) dosages 0/1/2."""
    panel = read_panel(phased_vcf, genetic_map)
    rng = np.random.default_rng(seed)
    chrom, pos, ref, alt, blocks = [], [], [], [], []
    for tile_chrom, offset, take in tile_layout(panel, n_snps or len(panel.pos)):
        haps = mosaic_haplotypes(panel, 2 * n_samples, rng, switches_per_morgan)[:take]
        blocks.append((haps[:, 0::2] + haps[:, 1::2]).T)
        chrom += [tile_chrom] * take
        pos.append(panel.pos[:take] + offset)
        ref += panel.ref[:take]
        alt += panel.alt[:take]
    return Cohort(_sample_names(n_samples), chrom, np.concatenate(pos), ref, alt,
                  np.ascontiguousarray(np.concatenate(blocks, axis=1)))


def _sample_names(n: int) -> list[str]:
    return [f"S{i + 1:06d}" for i in range(n)]


def write_mosaic_vcf(path: str | Path, phased_vcf: str, genetic_map: str, n_samples: int, n_snps: int, seed: int,
                     threads: int = 1, switches_per_morgan: float = 100.0, level: int = -1) -> tuple[Panel, list]:
    """Stream a phased mosaic cohort to a bgzipped VCF, one tile in memory at a time.

    Uses `bgzip -@ threads -l level` when it is on PATH (several times faster), else pysam.BGZFile.
    Returns the panel and the tile layout (for tile_genes)."""
    import pysam

    panel = read_panel(phased_vcf, genetic_map)
    rng = np.random.default_rng(seed)
    layout = tile_layout(panel, n_snps)
    chroms = list(dict.fromkeys(c for c, _, _ in layout))
    span = int(panel.pos[-1] - panel.pos[0]) + 1
    length = TILE_START + TILES_PER_CHROM * (span + TILE_GAP)
    header = ["##fileformat=VCFv4.2", f"##source=genointerp.genotypes.cohort mosaic of {Path(phased_vcf).name}, seed {seed}",
              *[f"##contig=<ID={c},length={length}>" for c in chroms],
              '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
              "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *_sample_names(n_samples)])]
    bgzip = shutil.which("bgzip")
    raw = open(path, "wb") if bgzip else None
    try:
        if bgzip:
            proc = subprocess.Popen([bgzip, "-c", "-@", str(threads), "-l", str(level)], stdin=subprocess.PIPE, stdout=raw)
            sink = proc.stdin
        else:
            proc, sink = None, pysam.BGZFile(str(path), "wb")
        sink.write(("\n".join(header) + "\n").encode())
        calls = np.empty((n_samples, 4), dtype=np.uint8)
        calls[:, 1], calls[:, 3] = ord("|"), ord("\t")
        calls[-1, 3] = ord("\n")
        for chrom, offset, take in layout:
            haps = mosaic_haplotypes(panel, 2 * n_samples, rng, switches_per_morgan)
            lines = []
            for i in range(take):
                calls[:, 0] = haps[i, 0::2] + ord("0")
                calls[:, 2] = haps[i, 1::2] + ord("0")
                lines.append(f"{chrom}\t{panel.pos[i] + offset}\t.\t{panel.ref[i]}\t{panel.alt[i]}\t.\t.\t.\tGT\t".encode()
                             + calls.tobytes())
            sink.write(b"".join(lines))
        sink.close()
        if proc is not None and proc.wait():
            raise OSError(f"bgzip failed ({proc.returncode}) writing {path}")
    finally:
        if raw is not None:
            raw.close()
    return panel, layout


# Planted phenotypes: how a causal gene acts through its SNPs (benchmarks/capsule_family.py)
#
# A planted gene's score is sum_j w_j m_j over its causal SNPs j, m_j the copies of SNP j's minor
# allele (in the cohort at hand), and `high` says which samples carry the gene's risk state, the
# input of a pair's interaction:
# - single:  one common SNP (MAF 0.22-0.36, as benchmarks/capsule.py plants), w = 1; high = carrier;
# - several: SEVERAL_SNPS of the gene's common SNPs (MAF >= 0.05), w ~ N(0, 1); high = score above
#   its median;
# - dense:   every SNP of the gene (at least DENSE_MIN_SNPS), w ~ N(0, 1): a within-gene polygenic
#   score; high = above the median;
# - burden:  the gene's low-frequency SNPs (MAF < BURDEN_MAF, at least BURDEN_MIN_SNPS), w = 1: the
#   count of rare alleles; high = carrier of any. The 1000 Genomes chr21 excerpt holds no SNP with
#   MAF < 1 % (its sites were filtered at 1 %), so "rare" here is 1-5 %, the rarest the panel has.
# Only SNPs inside exactly one gene count, so that "the causal gene" is unambiguous.
ARCHITECTURES = ("single", "several", "dense", "burden")
SEVERAL_SNPS, DENSE_MIN_SNPS, BURDEN_MAF, BURDEN_MIN_SNPS = 5, 10, 0.05, 3


@dataclass
class PlantedGene:
    """A causal gene: its name, SNP columns (k,) int64 of the cohort's dosage matrix, weights (k,)
    float64 on minor-allele copies, minor (k,) bool (True where the minor allele is ALT), and the
    architecture."""

    name: str
    columns: np.ndarray
    weights: np.ndarray
    minor_is_alt: np.ndarray
    architecture: str

    def score(self, dosage: np.ndarray) -> np.ndarray:
        """float64 (n,) from int8 dosages (n, m) of ALT copies."""
        d = dosage[:, self.columns].astype(np.float64)
        return np.where(self.minor_is_alt, d, 2 - d) @ self.weights

    def high(self, dosage: np.ndarray) -> np.ndarray:
        """bool (n,): the samples in the gene's risk state (see the section comment)."""
        s = self.score(dosage)
        # single, burden: weights 1 on minor-allele copies, so s > 0 is a carrier
        return s > 0 if self.architecture in ("single", "burden") else s > np.median(s)


def plant_gene(architecture: str, name: str, columns: np.ndarray, maf: np.ndarray,
               rng: np.random.Generator) -> PlantedGene | None:
    """A planted gene of `architecture` from its own-only SNP columns (k,) and their ALT allele
    frequencies-or-MAFs `maf` (k,) (folded below to the minor allele), or None where the gene has
    too few eligible SNPs."""
    af = np.asarray(maf, dtype=np.float64)
    minor_is_alt = af <= 0.5
    m = np.minimum(af, 1 - af)
    if architecture == "single":
        pick = np.flatnonzero((m >= 0.22) & (m <= 0.36))
        pick = pick[[int(rng.integers(len(pick)))]] if len(pick) else pick
    elif architecture == "several":
        common = np.flatnonzero(m >= 0.05)
        pick = np.sort(rng.choice(common, SEVERAL_SNPS, replace=False)) if len(common) >= SEVERAL_SNPS else common[:0]
    elif architecture == "dense":
        pick = np.arange(len(m)) if len(m) >= DENSE_MIN_SNPS else np.arange(0)
    elif architecture == "burden":
        pick = np.flatnonzero((m > 0) & (m < BURDEN_MAF))
        pick = pick if len(pick) >= BURDEN_MIN_SNPS else pick[:0]
    else:
        raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)}, not {architecture!r}")
    if not len(pick):
        return None
    weights = rng.normal(size=len(pick)) if architecture in ("several", "dense") else np.ones(len(pick))
    return PlantedGene(name, np.asarray(columns)[pick], weights, minor_is_alt[pick], architecture)


INTERACTIONS = ("none", "xor", "cooccur", "multiplicative")


def standardised(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    sd = v.std()
    return (v - v.mean()) / (sd if sd > 0 else 1.0)


def planted_parts(interaction: str, dosage: np.ndarray, additive: list[PlantedGene],
                  pair: tuple[PlantedGene, PlantedGene] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """(additive part, pair part) of a planted genetic score, each standardised float64 (n,): the sum
    of the additive genes' standardised scores; the pair's exclusive-or (xor) or co-occurrence
    (cooccur) of its genes' `high` states, or the product of their standardised scores
    (multiplicative); None for interaction "none"."""
    add = standardised(sum(standardised(g.score(dosage)) for g in additive))
    if interaction == "none":
        return add, None
    a, b = pair
    if interaction == "multiplicative":
        return add, standardised(standardised(a.score(dosage)) * standardised(b.score(dosage)))
    ha, hb = a.high(dosage), b.high(dosage)
    if interaction not in ("xor", "cooccur"):
        raise ValueError(f"interaction must be one of {', '.join(INTERACTIONS)}, not {interaction!r}")
    return add, standardised(ha ^ hb if interaction == "xor" else ha & hb)


def planted_score(additive: np.ndarray, pair: np.ndarray | None) -> np.ndarray:
    """The genetic score g (n,), standardised: the additive part alone, or it plus the pair's part
    with as much variance (the pair carries half the genetic variance)."""
    return additive if pair is None else standardised(additive + pair)
