"""score-variants and ism against planted truth, and the built-in model on real sequence.

1. Planted truth. A random genome (chr1 2 Mb: training; chr2 100 kb: validation, early stopping
   only; chr3 100 kb: test, no choice saw it) with planted AP-1 (TGACTCA) and CCAAT-box (GCCAATCAG)
   sites, both strands, and tracks that are exact functions of the sequence (as
   test-data/make_tracks_data.py: motif_a 8.0 within 64 bp of an AP-1 site, motif_b 4.0 within 32
   bp of a CCAAT site). A model trained by `genointerp train-tracks` (fixed settings, below, chosen
   before any test variant was scored). On chr3: every site of each motif gets an SNV at one of
   its bases (to another base; the site no longer matches), and a control SNV 150-300 bp away,
   outside every site's track interval. The statistic is the drop of the motif's own track,
   -SAD; the separation is the AUROC of broken sites against controls (done when >= 0.95). ISM
   over 100 bp plus the site around each site of chr3: the share of sites whose most important
   base (mean drop of the motif's track over the three alternatives) lies in the motif (done
   when >= 90 %).
2. Real model, real sequence: the built-in model (GRCh37 chr20 TF ChIP-seq, 87 tracks; its test
   split is chr20's last 10 %, 56.7-63.0 Mb, which no training choice saw) on that tail. For
   CTCF and four more factors with clear motifs and 40 strong matches there (REST, YY1, GABPA,
   MAX: JASPAR 2024 profiles MA0139.2, MA0138.3, MA0095.4, MA0062.4, MA0058.4 via pyjaspar, those
   the model's config lists for its factors; ZNF143, with 3 matches, was left out): the 40
   strongest matches 1 kb apart (log-odds score >= 75 % of the profile's best), an SNV at the
   profile's most informative base to its least likely base;
   controls at matched positions 300-1,000 bp away (same reference base, same substitution, no
   match >= 70 % within 50 bp). The statistic is the drop of the factor's tracks (mean over its
   tracks of -center_diff, the bins at the variant); AUROC over all strong matches and over the
   ones the model predicts bound (reference signal of the factor's tracks in the top half of the
   strong matches). Composition controls: the drop of the window's CpG and GC counts
   (-delta), the features the tracks benchmarks' CpG/GC controls read.
3. Pace: 10,000 SNVs at random positions of the test tail, 2 threads, variants/s (end to end).

    python benchmarks/score_variants.py [--shared ../shared/data] [--out bench-output/score_variants]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test-data"))
from common import GENOINTERP, out_dir, table  # noqa: E402
from make_tracks_data import FLANK_A, FLANK_B, MOTIF_A, MOTIF_B, VALUE_A, VALUE_B, motif_sites, site_intervals  # noqa: E402
from planted import PlantedTrack, planted_genome, write_fasta, write_tracks  # noqa: E402

SEED = 42
PLANTED_CHROMS = {"chr1": 2_000_000, "chr2": 100_000, "chr3": 100_000}
SITE_EVERY = 800  # bp per planted site of each motif
PLANTED_TRACKS = [PlantedTrack("motif_a", MOTIF_A, FLANK_A, VALUE_A, group="DNase"),
                  PlantedTrack("motif_b", MOTIF_B, FLANK_B, VALUE_B)]
# The planted model: the paper's CNN baseline (maxpool-cnn), 8 epochs, train-tracks' default
# Poisson loss, chosen on chr2 (validation Pearson r 0.911; squared error 0.658, squared error over
# 16 epochs 0.609, over 20 with patience 4 0.611); the 1D-Swin default, tried first (240 kb of training
# sequence, 6-40 epochs; 2 epochs on this genome), did not leave the mean on 2 CPU cores.
TRAIN = ["--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--arch", "maxpool-cnn", "--epochs", "8",
         "--lr", "0.001", "--batch-size", "32", "--seed", "1", "--threads", "2"]
FACTORS = {"CTCF": "MA0139.2", "REST": "MA0138.3", "YY1": "MA0095.4", "GABPA": "MA0062.4", "MAX": "MA0058.4"}
STRONG, NEAR_MATCH, SITES = 0.75, 0.70, 40  # matches >= STRONG of the best score: the SITES strongest, 1 kb apart
PACE_SNVS = 10_000


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def write_vcf(path: Path, contigs: dict[str, int], variants: list[tuple[str, int, str, str, str]]) -> None:
    """variants: (chrom, 0-based pos, id, ref, alt), written sorted."""
    order = {c: i for i, c in enumerate(contigs)}
    lines = ["##fileformat=VCFv4.2\n"] + [f"##contig=<ID={c},length={n}>\n" for c, n in contigs.items()]
    lines.append("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
    for c, p, vid, ref, alt in sorted(variants, key=lambda v: (order[v[0]], v[1], v[2])):
        lines.append(f"{c}\t{p + 1}\t{vid}\t{ref}\t{alt}\t.\t.\t.\n")
    path.write_text("".join(lines))


def read_long(path: Path) -> dict[tuple[str, str], dict]:
    """score-variants' long TSV: (variant id, track) -> row."""
    with open(path) as fh:
        head = fh.readline().rstrip("\n").split("\t")
        return {(r["id"], r["track"]): r for r in (dict(zip(head, line.rstrip("\n").split("\t"))) for line in fh)}


def auroc(labels: list[int], scores: list[float]) -> float:
    return float(roc_auc_score(labels, scores))


# --- 1. planted truth -----------------------------------------------------------------------

def planted_variants(seq: str, rng: np.random.Generator) -> tuple[list, dict]:
    """SNVs breaking each site of each motif, and controls beside them; (variants, labels by id)."""
    covered = np.zeros(len(seq), dtype=bool)
    for motif, flank in ((MOTIF_A, FLANK_A), (MOTIF_B, FLANK_B)):
        for s, e in site_intervals(seq, motif, flank):
            covered[s:e] = True
    variants, labels = [], {}
    for track, motif in (("motif_a", MOTIF_A), ("motif_b", MOTIF_B)):
        for k, site in enumerate(motif_sites(seq, motif)):
            if site < 600 or site > len(seq) - 600:
                continue
            pos = site + int(rng.integers(0, len(motif)))
            ref = seq[pos]
            alt = "ACGT".replace(ref, "")[int(rng.integers(0, 3))]
            mutated = seq[pos - 20:pos] + alt + seq[pos + 1:pos + 21]
            if motif_sites(mutated, motif):
                continue  # the change left a match in place (another overlapping site)
            for _ in range(100):
                ctrl = site + int(rng.choice([-1, 1]) * rng.integers(150, 301))
                if not covered[max(0, ctrl - 10):ctrl + 10].any():
                    break
            else:
                continue
            vid = f"{track}_{k}"
            variants.append(("chr3", pos, f"{vid}_break", ref, alt))
            c_ref = seq[ctrl]
            variants.append(("chr3", ctrl, f"{vid}_beside", c_ref, "ACGT".replace(c_ref, "")[int(rng.integers(0, 3))]))
            labels[f"{vid}_break"], labels[f"{vid}_beside"] = (track, 1), (track, 0)
    return variants, labels


def planted(out: Path) -> list[dict]:
    rng = np.random.default_rng(SEED)
    seqs = planted_genome(rng, PLANTED_CHROMS, [MOTIF_A, MOTIF_B], SITE_EVERY)
    fasta = out / "planted.fa.gz"
    write_fasta(fasta, seqs)
    targets = write_tracks(out, seqs, PLANTED_TRACKS)
    model = out / "planted_model"
    if not (model / "config.json").exists():
        secs = run([*GENOINTERP, "train-tracks", "--reference", str(fasta), "--targets", str(targets), "--chroms",
                    "chr1,chr2,chr3", "--valid-chroms", "chr2", "--test-chroms", "chr3", *TRAIN, "-o", str(model)])
        print(f"planted model trained in {secs:.0f} s", flush=True)
    variants, labels = planted_variants(seqs["chr3"], rng)
    vcf = out / "planted.vcf"
    write_vcf(vcf, PLANTED_CHROMS, variants)
    tsv = out / "planted.scores.tsv"
    run([*GENOINTERP, "-q", "score-variants", str(vcf), "--reference", str(fasta), "--model", str(model), "-o", str(tsv),
         "--force"])
    scores = read_long(tsv)
    rows = []
    for track in ("motif_a", "motif_b"):
        ids = [v for v, (t, _) in labels.items() if t == track]
        y = [labels[v][1] for v in ids]
        drop = [-float(scores[(v, track)]["sad"]) for v in ids]
        rows.append({"what": f"planted {track}: broken site vs beside (-SAD of its track)", "n": f"{sum(y)} + {len(y) - sum(y)}",
                     "result": f"AUROC {auroc(y, drop):.3f}"})
    # ISM around every site of chr3, each motif's own track
    seq = seqs["chr3"]
    for track, motif in (("motif_a", MOTIF_A), ("motif_b", MOTIF_B)):
        sites = [x for x in motif_sites(seq, motif) if 600 < x < len(seq) - 600]
        bed = out / f"planted_ism_{track}.bed"
        bed.write_text("".join(f"chr3\t{x - 50}\t{x + 50 + len(motif)}\n" for x in sites))
        ism = out / f"planted_ism_{track}"
        run([*GENOINTERP, "-q", "ism", "--regions", str(bed), "--reference", str(fasta), "--model", str(model), "--tracks",
             track, "-o", str(ism), "--force"])
        importance = {}
        with open(ism / "ism.bases.tsv") as fh:
            head = fh.readline().rstrip("\n").split("\t")
            for line in fh:
                r = dict(zip(head, line.rstrip("\n").split("\t")))
                importance[int(r["pos"]) - 1] = float(r["importance"])
        hits = 0
        for x in sites:
            window = {q: importance[q] for q in range(x - 50, x + 50 + len(motif)) if q in importance}
            top = max(window, key=window.get)
            hits += x <= top < x + len(motif)
        rows.append({"what": f"planted ISM {track}: top base (mean drop) inside the site", "n": str(len(sites)),
                     "result": f"{hits / len(sites):.1%} of sites"})
    return rows


# --- 2. the built-in model on chr20's test tail -------------------------------------------------

def pssm(matrix_id: str) -> np.ndarray:
    """Log-odds (4, L) of a JASPAR 2024 profile against a uniform background (pseudocount 0.5)."""
    from pyjaspar import jaspardb

    counts = jaspardb(release="JASPAR2024").fetch_motif_by_id(matrix_id).counts
    m = np.array([counts[b] for b in "ACGT"], dtype=np.float64) + 0.5
    return np.log2(m / m.sum(axis=0) / 0.25)


def scan(codes: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best strand's score at every start (len - L + 1,) and whether the best is the reverse strand."""
    length = w.shape[1]
    rc = w[::-1, ::-1]  # reverse complement: A<->T, C<->G rows, columns reversed
    valid = codes < 4
    safe = np.where(valid, codes, 0)
    n = len(codes) - length + 1
    fwd, rev = np.zeros(n), np.zeros(n)
    for j in range(length):
        fwd += w[safe[j:j + n], j]
        rev += rc[safe[j:j + n], j]
    bad = np.convolve(~valid, np.ones(length), "valid") > 0
    fwd[bad] = rev[bad] = -np.inf
    return np.maximum(fwd, rev), rev > fwd


def real_variants(codes: np.ndarray, offset: int, chrom: str, w: np.ndarray, name: str,
                  rng: np.random.Generator) -> tuple[list, dict]:
    best = w.max(axis=0).sum()
    score, reverse = scan(codes, w)
    candidates = np.flatnonzero(score >= STRONG * best)
    strong: list[int] = []
    for s_ in candidates[np.argsort(-score[candidates], kind="stable")].tolist():
        if len(strong) == SITES:
            break
        if all(abs(s_ - t) >= 1000 for t in strong):  # one per 1 kb, so sites do not share windows
            strong.append(s_)
    near = np.zeros(len(codes), dtype=bool)
    for s in np.flatnonzero(score >= NEAR_MATCH * best):
        near[max(0, s - 50):s + w.shape[1] + 50] = True
    ic = (2 ** w * 0.25 * w).sum(axis=0)  # information content per column (bits)
    col = int(np.argmax(ic))
    variants, labels = [], {}
    for k, s in enumerate(sorted(strong)):
        j = w.shape[1] - 1 - col if reverse[s] else col
        pos = s + j
        ref_code = int(codes[pos])
        low = int(np.argmin(w[:, col]))
        alt_code = 3 - low if reverse[s] else low
        if alt_code == ref_code:
            continue
        for _ in range(200):
            c = pos + int(rng.choice([-1, 1]) * rng.integers(300, 1001))
            if 0 <= c < len(codes) and codes[c] == ref_code and not near[c]:
                break
        else:
            continue
        vid = f"{name}_{k}"
        variants.append((chrom, offset + pos, f"{vid}_break", "ACGT"[ref_code], "ACGT"[alt_code]))
        variants.append((chrom, offset + c, f"{vid}_beside", "ACGT"[ref_code], "ACGT"[alt_code]))
        labels[f"{vid}_break"], labels[f"{vid}_beside"] = (name, 1), (name, 0)
    return variants, labels


def composition_drop(codes: np.ndarray, pos: int, alt: int, half: int) -> tuple[float, float]:
    """(-delta CpG count, -delta GC count) of the window around pos when its base becomes alt."""
    lo, hi = max(0, pos - half), min(len(codes), pos + half)
    ref_win = codes[lo:hi].copy()
    alt_win = ref_win.copy()
    alt_win[pos - lo] = alt

    def cpg(x):
        return int(((x[:-1] == 1) & (x[1:] == 2)).sum())

    def gc(x):
        return int(((x == 1) | (x == 2)).sum())

    return -(cpg(alt_win) - cpg(ref_win)), -(gc(alt_win) - gc(ref_win))


def chr20_test_tail(shared: Path) -> tuple[Path, str, int, int, np.ndarray]:
    """(FASTA, contig, its length, the tail's start, codes of the tail: 0-3 ACGT, 4 other)."""
    import pysam

    fasta = shared / "human" / "GRCh37.chr20.fa.gz"
    with pysam.FastaFile(str(fasta)) as fa:
        chrom = "20" if "20" in fa.references else "chr20"
        length = fa.get_reference_length(chrom)
        start = int(length * 0.9)
        text = fa.fetch(chrom, start, length).upper()
    lut = np.full(256, 4, dtype=np.uint8)
    for i, b in enumerate(b"ACGT"):
        lut[b] = i
    return fasta, chrom, length, start, lut[np.frombuffer(text.encode(), dtype=np.uint8)]


def builtin_config() -> dict:
    from genointerp.resources import BUILTIN_TRACKS, builtin_model_dir

    return json.loads((builtin_model_dir(BUILTIN_TRACKS) / "config.json").read_text())


def real(out: Path, shared: Path) -> list[dict]:
    config = builtin_config()
    tracks = [t["id"] for t in config["tracks"]]
    half = config["window"]["seq_len"] // 2
    fasta, chrom, length, start, codes = chr20_test_tail(shared)
    rng = np.random.default_rng(SEED)
    variants, labels = [], {}
    for name, mid in FACTORS.items():
        v, lab = real_variants(codes, start, chrom, pssm(mid), name, rng)
        variants += v
        labels.update(lab)
    vcf = out / "chr20_test_tail.vcf"
    write_vcf(vcf, {chrom: length}, variants)
    tsv = out / "real.scores.tsv"
    run([*GENOINTERP, "-q", "score-variants", str(vcf), "--reference", str(fasta), "-o", str(tsv), "--force"])
    scores = read_long(tsv)
    by_id = {v[2]: v for v in variants}
    rows = []
    for name in FACTORS:
        own = [t for t in tracks if t.split(".")[1].upper() == name]
        ids = [v for v, (f, _) in labels.items() if f == name and all((v, t) in scores for t in own)]
        y = [labels[v][1] for v in ids]
        drop = [-np.mean([float(scores[(v, t)]["center_diff"]) for t in own]) for v in ids]
        ref_signal = {v: np.mean([float(scores[(v, t)]["ref_sum"]) for t in own]) for v in ids}
        broken = [v for v in ids if labels[v][1]]
        cut = np.median([ref_signal[v] for v in broken]) if broken else 0.0
        bound = {v for v in broken if ref_signal[v] >= cut}
        pairs = [v for v in ids if (v if labels[v][1] else v.replace("_beside", "_break")) in bound]
        comp = [composition_drop(codes, by_id[v][1] - start, "ACGT".index(by_id[v][4]), half) for v in ids]
        rows.append({"what": f"chr20 test tail {name} ({len(own)} tracks): broken strong match vs matched control",
                     "n": f"{sum(y)} + {len(y) - sum(y)}", "AUROC": f"{auroc(y, drop):.3f}",
                     "bound half": f"{auroc([labels[v][1] for v in pairs], [drop[ids.index(v)] for v in pairs]):.3f}",
                     "CpG control": f"{auroc(y, [c[0] for c in comp]):.3f}",
                     "GC control": f"{auroc(y, [c[1] for c in comp]):.3f}"})
    return rows


def pace_run(out: Path, shared: Path, snvs: int = PACE_SNVS, threads: int = 2) -> dict:
    """`snvs` SNVs (10,000) at random positions of the test tail, `threads` threads, end to end."""
    tracks = builtin_config()["tracks"]
    half = builtin_config()["window"]["seq_len"] // 2
    fasta, chrom, length, start, codes = chr20_test_tail(shared)
    rng = np.random.default_rng(SEED + 1)
    ok = np.flatnonzero(codes[half:-half] < 4) + half
    picks = np.sort(rng.choice(ok, snvs, replace=False))
    pace_vcf = out / "pace.vcf"
    write_vcf(pace_vcf, {chrom: length}, [(chrom, start + int(p), f"snv{i}", "ACGT"[codes[p]],
                                           "ACGT"[(codes[p] + 1 + i % 3) % 4]) for i, p in enumerate(picks)])
    secs = run([*GENOINTERP, "-q", "score-variants", str(pace_vcf), "--reference", str(fasta), "-o", str(out / "pace.tsv"),
                "--threads", str(threads), "--force"])
    return {"snvs": snvs, "threads": threads, "seconds": round(secs, 1), "variants_per_s": round(snvs / secs, 1),
            "tracks": len(tracks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "data")
    ap.add_argument("--out", default="bench-output/score_variants")
    ap.add_argument("--parts", default="planted,real,pace", help="which parts to run (comma list)")
    ap.add_argument("--pace-snvs", type=int, default=PACE_SNVS, help="pace: SNVs scored (the issue's figure: 1000)")
    ap.add_argument("--pace-threads", default="2", help="pace: comma list of --threads to time, in turn")
    args = ap.parse_args()
    out = out_dir(args.out)
    parts = set(args.parts.split(","))
    results = out / "results.json"
    result = json.loads(results.read_text()) if results.exists() else {}
    if "planted" in parts:
        result["planted"] = planted(out)
        print(table(result["planted"], ["what", "n", "result"]), flush=True)
    if "real" in parts:
        result["real"] = real(out, args.shared)
        print(table(result["real"], ["what", "n", "AUROC", "bound half", "CpG control", "GC control"]), flush=True)
    if "pace" in parts:
        result["pace"] = []
        for threads in map(int, args.pace_threads.split(",")):
            pace = pace_run(out, args.shared, args.pace_snvs, threads)
            result["pace"].append(pace)
            print(f"pace: {pace['snvs']:,} SNVs x {pace['tracks']} tracks in {pace['seconds']} s on {threads} "
                  f"thread(s): {pace['variants_per_s']} variants/s (end to end, start-up included)", flush=True)
    results.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
