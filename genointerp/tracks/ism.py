"""The ism job: in-silico mutagenesis of a track model over BED regions.

Every base of every region is changed to each of the three other bases, and the model's
prediction for the mutated window is compared with its prediction for the reference window.

Windows (the model's geometry: `seq_len` bp of DNA, `target_bins` bins of `bin_size` bp predicted
at their centre, on the chromosome's bin grid as predict-tracks' windows are):

- a region whose bins number at most `target_bins` is scored in one window, its targets centred
  on the region's bins (predict-tracks' window for that region);
- a longer region is cut into pieces of `C = target_bins // 2` bins (half the target span) from
  its first bin; each piece is scored in its own window whose targets start `(target_bins - C) // 2`
  bins before the piece, so every base sits in the central half of its window's targets.

Definitions, for a base at position p scored in window w, an alternative base a and a track t:

    effect(p, a, t) = sum over the target bins b of w that overlap the region of
                      (prediction(w with p -> a)[b, t] - prediction(w)[b, t])
    importance(p, t) = -(effect(p, a1, t) + effect(p, a2, t) + effect(p, a3, t)) / 3   (mean drop)
    max_drop(p, t)   = max over a of -effect(p, a, t)

The differences and the sum are taken in float64 from the model's float32 rates. Bases that are
not A/C/G/T in the reference (N, IUPAC) are not mutated: no rows, no value in the bigWig.

Determinism: the model runs on passes of exactly BLOCK windows, and a pass never holds windows
of two model windows: a window's rows are its reference (row 0), then its mutations in base order
(alternatives in A, C, G, T order), padded with copies of the reference to a multiple of BLOCK.
So every mutated window is scored at the same row of the same pass beside the same windows,
whatever --batch-size (how many rows are one-hot encoded and moved to the device per step) and
whatever other regions the BED holds: the outputs are the same bytes. A swin1d model runs the
reference window once per pass and each mutated window only over the tokens its mutation reaches
(tracks.inference.predict_pair_rates; the reach is set by the pass's own rows): on the built-in
model about 2.3x less CPU than BLOCK whole windows, effects within 1e-6 of theirs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs, make_readable
from genointerp.io.reference import Reference
from genointerp.io.regions import Region, read_regions
from genointerp.io.track_writers import BinnedRun, check_track_ids, write_bigwigs
from genointerp import options
from genointerp.options import opt
from genointerp.report import Reporter
from genointerp.runtime import job_device, use_threads
from genointerp.seq.alphabet import N_CODE
from genointerp.seq.onehot import one_hot
from genointerp.tracks.inference import load_track_model, predict_pair_rates, predict_rates
from genointerp.tracks.tiling import parse_shifts, rc_average_option, shifts_option, track_model_option

MAX_REGION = 5_000  # bp per region: 3 x 5,000 windows through the model
BLOCK = 16  # windows per forward pass, fixed (see the module's docstring)
FIGURE_BASES = 100  # --figure draws at most this many bases of the top region, centred on its most important ones
LETTERS = "ACGT"
ALTS = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]], dtype=np.int64)  # the other bases, in A, C, G, T order
COLOURS = {"A": "#109648", "C": "#255c99", "G": "#f7b32b", "T": "#d62839"}


@dataclass
class IsmRequest:
    """ism: the fields are its options."""

    regions: str = opt(
        ..., "--regions",
        help='BED of regions to mutate, at most 5,000 bp each (overlapping ones are merged).')
    fasta: str = options.reference()
    output: str = opt(
        ..., "-o", "--output",
        help='Output folder: <track id>.ism.bw per track, ism.tsv, ism.bases.tsv, summary.json.')
    model: str | None = track_model_option()
    tracks: list[str] = opt(
        [], "--tracks", cli_type=str | None, parse=lambda text: [t.strip() for t in text.split(",")],
        help="Comma-separated track ids to score (default: all of the model's).")  # track ids to score; empty = all of the model's
    figure: bool = opt(
        False, "--figure",
        help=('Also draw <track id>.ism.png: the reference bases of the region with the largest total importance, '
              'as letters as tall as their importance.'))
    rc_average: bool = rc_average_option()
    shifts: str = shifts_option()
    batch_size: int = options.batch_size(
        64,
        help=('Windows one-hot encoded and sent to the device per step (rounded up to a multiple of 16); the model '
              'always runs 16 at a time, so the results do not depend on it.'))  # windows one-hot encoded per step; the model always runs BLOCK at a time
    device: str = options.device()
    precision: str = options.precision()
    threads: int = options.threads()

    def check(self) -> None:
        parse_shifts(self.shifts)
        seen = set()
        for tid in self.tracks:
            if not tid:
                raise UsageError("--tracks: an empty track id (give comma-separated ids, e.g. --tracks a,b)")
            if tid in seen:
                raise UsageError(f"--tracks: {tid} is given twice")
            seen.add(tid)

    def inputs(self) -> list[str | None]:
        return [self.model, self.fasta, self.regions]


@dataclass(frozen=True)
class Window:
    """One model window of a region: DNA [start, start + seq_len) (may hang over the chromosome
    ends: N), whose bases [lo, hi) are mutated in it; `bins` are its target bins (0..target_bins)
    that overlap the region, over which effects are summed."""

    start: int
    lo: int
    hi: int
    bins: slice


def plan_region(start: int, end: int, seq_len: int, bin_size: int, target_bins: int) -> list[Window]:
    """The windows that score region [start, end) (see the module's docstring)."""
    spare = seq_len - target_bins * bin_size
    if spare < 0 or spare % 2:
        raise InputError(f"the model's window ({seq_len} bp, {target_bins} x {bin_size} bp targets) is not centred")
    flank = spare // 2
    b0, b1 = start // bin_size, -(-end // bin_size)
    if b1 - b0 <= target_bins:
        pieces = [(b0, b1, b0 - (target_bins - (b1 - b0)) // 2)]
    else:
        piece = max(1, target_bins // 2)
        lead = (target_bins - piece) // 2
        pieces = [(b, min(b + piece, b1), b - lead) for b in range(b0, b1, piece)]
    windows = []
    for p0, p1, first in pieces:
        lo, hi = max(start, p0 * bin_size), min(end, p1 * bin_size)
        bins = slice(max(first, b0) - first, min(first + target_bins, b1) - first)
        windows.append(Window(first * bin_size - flank, lo, hi, bins))
    return windows


def run(req: IsmRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Fill the output folder; returns the summary also written as summary.json."""
    began = time.perf_counter()
    folder = outputs.folder(req.output)  # an output refused before any input is read
    use_threads(req.threads)  # first: torch's thread pool takes its settings when it starts
    device = job_device(req.device, req.precision, report.warn)
    model, config = load_track_model(req.model)
    all_ids = [t["id"] for t in config["tracks"]]
    cols = track_columns(req.tracks, all_ids)
    track_ids = [all_ids[c] for c in cols]
    check_track_ids(track_ids)
    win = config["window"]
    seq_len, bin_size, target_bins = win["seq_len"], win["bin_size"], win["target_bins"]
    ref = Reference(req.fasta, report.warn)
    regions = ism_regions(req.regions, ref, report)
    plans = [plan_region(r.start, r.end, seq_len, bin_size, target_bins) for r in regions]
    model.to(device)
    n_bases = sum(len(r) for r in regions)
    n_windows = sum(len(p) for p in plans)
    report.log(f"{len(regions):,} region(s), {n_bases:,} bases, {n_windows:,} window(s) of {seq_len:,} bp "
               f"({target_bins} bins of {bin_size} bp); {len(track_ids)} of the model's {len(all_ids)} tracks")

    spool_path = folder / ".ism-importance.f32"  # per base and track, NaN where not scored; removed below
    spool = np.memmap(spool_path, dtype=np.float32, mode="w+", shape=(max(n_bases, 1), len(track_ids)))
    totals = np.zeros((len(regions), len(track_ids)))
    step_rows = -(-req.batch_size // BLOCK) * BLOCK
    scored = passes = 0
    offset = 0
    with open(folder / "ism.tsv", "w") as tsv, open(folder / "ism.bases.tsv", "w") as bases_tsv, \
            report.progress("mutating", n_bases) as advance:
        tsv.write("chrom\tpos\tref\talt\ttrack\teffect\n")
        bases_tsv.write("chrom\tpos\tref\ttrack\timportance\tmax_drop\n")
        for i, (region, windows) in enumerate(zip(regions, plans)):
            for w in windows:
                codes = ref.codes(region.chrom, w.start, w.start + seq_len)
                offs = np.arange(w.lo - w.start, w.hi - w.start)
                offs = offs[codes[offs] < N_CODE]
                spool[offset + w.lo - region.start: offset + w.hi - region.start] = np.nan
                if not len(offs):  # all N: nothing to mutate, no model pass
                    advance(w.hi - w.lo)
                    continue
                effects, n_passes = window_effects(model, codes, offs, w.bins, cols, step_rows, device,
                                                   req.precision, req.rc_average, parse_shifts(req.shifts))
                eff = effects.reshape(len(offs), 3, len(cols))
                importance = -eff.sum(axis=1) / 3
                spool[offset + w.start - region.start + offs] = importance.astype(np.float32)
                totals[i] += importance.sum(axis=0)
                write_rows(tsv, bases_tsv, region.chrom, w.start + offs, codes[offs], eff, importance,
                           (-eff).max(axis=1), track_ids)
                scored += len(offs)
                passes += n_passes
                advance(w.hi - w.lo)
            offset += len(region)
    make_readable(folder / "ism.tsv")
    make_readable(folder / "ism.bases.tsv")
    spool.flush()
    chrom_sizes = [(c, ref.lengths[c]) for c in ref.names]
    write_bigwigs(folder, track_ids, chrom_sizes, scored_runs(regions, spool, ref), suffix=".ism.bw")
    if scored == 0:
        report.warn("no base of the regions is A, C, G or T: nothing scored (empty bigWigs and tables)")
    if req.figure:
        offsets = np.cumsum([0] + [len(r) for r in regions])
        for t, tid in enumerate(track_ids):
            top = int(np.argmax(totals[:, t]))
            r = regions[top]
            draw_logo(folder / f"{tid}.ism.png", tid, r, ref.codes(r.chrom, r.start, r.end),
                      np.array(spool[offsets[top]:offsets[top + 1], t]))
    del spool
    spool_path.unlink()
    summary = {"regions": len(regions), "bases": n_bases, "bases_scored": scored, "mutations": 3 * scored,
               "tracks": len(track_ids), "windows": n_windows, "model_passes": passes, "block": BLOCK,
               "rc_average": req.rc_average, "shifts": list(parse_shifts(req.shifts)), "seconds": round(time.perf_counter() - began, 3)}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    make_readable(folder / "summary.json")
    return summary


def track_columns(asked: list[str], track_ids: list[str]) -> list[int]:
    """Columns of the model's output for the asked track ids (all when none is asked)."""
    if not asked:
        return list(range(len(track_ids)))
    index = {tid: i for i, tid in enumerate(track_ids)}
    unknown = [t for t in asked if t not in index]
    if unknown:
        shown = ", ".join(track_ids[:5]) + (f", ... ({len(track_ids)} in all)" if len(track_ids) > 5 else "")
        raise UsageError(f"--tracks: {', '.join(unknown)} not among the model's tracks ({shown})")
    return [index[t] for t in asked]


def ism_regions(path: str, ref: Reference, report: Reporter) -> list[Region]:
    """The BED's regions in reference order, overlapping ones merged; InputError for a region (or
    a merged one) longer than MAX_REGION."""
    regions = read_regions(path, ref, report.warn)
    for r in regions:
        if len(r) > MAX_REGION:
            raise InputError(f"{path}: region {r.chrom}:{r.start}-{r.end} is {len(r):,} bp; ism scores regions "
                             f"of at most {MAX_REGION:,} bp (split it)")
    rank = {c: i for i, c in enumerate(ref.names)}
    merged: list[Region] = []
    for r in sorted(regions, key=lambda r: (rank[r.chrom], r.start, r.end)):
        if merged and merged[-1].chrom == r.chrom and r.start < merged[-1].end:
            m = merged[-1]
            merged[-1] = Region(m.chrom, m.start, max(m.end, r.end), m.name)
            if len(merged[-1]) > MAX_REGION:
                raise InputError(f"{path}: overlapping regions merge into {m.chrom}:{m.start}-{merged[-1].end} "
                                 f"({len(merged[-1]):,} bp); ism scores regions of at most {MAX_REGION:,} bp")
        else:
            merged.append(r)
    if len(merged) < len(regions):
        report.log(f"{len(regions) - len(merged):,} overlapping region(s) merged into their neighbours")
    return merged


def window_effects(model, codes: np.ndarray, offs: np.ndarray, bins: slice, cols: list[int], step_rows: int,
                   device: str, precision: str, rc_average: bool,
                   shifts: tuple[int, ...] = (0,)) -> tuple[np.ndarray, int]:
    """(effects float64 (3 * len(offs), len(cols)), forward passes run) of mutating window `codes`
    (uint8 (seq_len,)) at offsets `offs` to each other base (rows: offset-major, alternatives in
    A, C, G, T order). Rows: the reference, then the mutations, padded to passes of BLOCK."""
    mut_off = np.repeat(offs, 3)
    mut_alt = ALTS[codes[offs]].reshape(-1) if len(offs) else np.empty(0, np.int64)
    n_mut = len(mut_off)
    padded = -(-(1 + n_mut) // BLOCK) * BLOCK
    x0 = one_hot(codes)
    ref_sel = None
    effects = np.empty((n_mut, len(cols)), dtype=np.float64)
    for a in range(0, padded, step_rows):
        b = min(a + step_rows, padded)
        x = np.repeat(x0[None], b - a, axis=0)
        m = np.arange(a, b) - 1  # row r holds mutation r - 1; row 0 and the padding the reference
        rows = np.flatnonzero((m >= 0) & (m < n_mut))
        x[rows, mut_off[m[rows]]] = 0
        x[rows, mut_off[m[rows]], mut_alt[m[rows]]] = 1
        sel = np.concatenate([_pass(model, x0, x[c:c + BLOCK], device, precision, rc_average, shifts)[:, bins][:, :, cols]
                              for c in range(0, b - a, BLOCK)]).astype(np.float64)  # (rows, bins, tracks)
        if ref_sel is None:
            ref_sel = sel[0]
        effects[m[rows]] = (sel[rows] - ref_sel).sum(axis=1)
    return effects, padded // BLOCK


def _pass(model, x0: np.ndarray, x: np.ndarray, device: str, precision: str, rc_average: bool,
          shifts: tuple[int, ...]) -> np.ndarray:
    """Rates float32 (BLOCK, bins, T) of one pass of mutated windows x (and copies of the reference
    x0). A model with forward_pair (swin1d) runs the reference once and each mutated window only
    over the tokens its mutation reaches (tracks.inference.predict_pair_rates); another runs the
    BLOCK windows whole."""
    if hasattr(model, "forward_pair"):
        return predict_pair_rates(model, x0[None], x, device, precision, rc_average, shifts)[1]
    return predict_rates(model, x, device, precision, rc_average, shifts)


def write_rows(tsv, bases_tsv, chrom: str, starts: np.ndarray, ref_codes: np.ndarray, eff: np.ndarray,
               importance: np.ndarray, max_drop: np.ndarray, track_ids: list[str]) -> None:
    """ism.tsv rows (base, then alternative, then track) and ism.bases.tsv rows (base, then track)
    of one window's bases: eff (n, 3, T), importance and max_drop (n, T); positions 1-based.
    A value of -0.0 (a difference or a negated mean of zeros) is written 0, not -0: adding +0.0
    turns -0.0 into +0.0 and leaves every other value as it is."""
    eff, importance, max_drop = eff + 0.0, importance + 0.0, max_drop + 0.0
    lines = []
    base_lines = []
    for j, (pos, rc) in enumerate(zip((starts + 1).tolist(), ref_codes.tolist())):
        r = LETTERS[rc]
        for k, alt in enumerate(ALTS[rc].tolist()):
            head = f"{chrom}\t{pos}\t{r}\t{LETTERS[alt]}\t"
            lines.extend(f"{head}{tid}\t{v:.6g}\n" for tid, v in zip(track_ids, eff[j, k].tolist()))
        head = f"{chrom}\t{pos}\t{r}\t"
        base_lines.extend(f"{head}{tid}\t{v:.6g}\t{d:.6g}\n"
                          for tid, v, d in zip(track_ids, importance[j].tolist(), max_drop[j].tolist()))
    tsv.write("".join(lines))
    bases_tsv.write("".join(base_lines))


def scored_runs(regions: list[Region], spool: np.ndarray, ref: Reference) -> list[BinnedRun]:
    """1 bp BinnedRuns of the scored bases (stretches without NaN) of every region."""
    runs = []
    offset = 0
    for r in regions:
        values = spool[offset:offset + len(r)]
        ok = ~np.isnan(values[:, 0]) if values.shape[1] else np.zeros(len(r), bool)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(np.int8), [0]])))
        for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            runs.append(BinnedRun(r.chrom, r.start + a, 1, values[a:b], ref.lengths[r.chrom]))
        offset += len(r)
    return runs


def draw_logo(path: Path, track_id: str, region: Region, codes: np.ndarray, importance: np.ndarray) -> None:
    """PNG of a region's reference bases as letters whose heights are their importance (mean drop;
    negative importance: the letter upside down below the axis). A region longer than FIGURE_BASES
    is shown by FIGURE_BASES bases centred on its 21 bp of the largest summed importance."""
    from matplotlib.figure import Figure  # lazy: only --figure needs matplotlib
    from matplotlib.font_manager import FontProperties
    from matplotlib.patches import PathPatch
    from matplotlib.textpath import TextPath
    from matplotlib.transforms import Affine2D

    values = np.nan_to_num(importance.astype(np.float64))
    a = 0
    if len(values) > FIGURE_BASES:  # centred on the 21 bp of the largest summed importance
        centre = int(np.argmax(np.convolve(values, np.ones(21), mode="same")))
        a = min(max(centre - FIGURE_BASES // 2, 0), len(values) - FIGURE_BASES)
    values, codes = values[a:a + FIGURE_BASES], codes[a:a + FIGURE_BASES]
    start = region.start + a
    fig = Figure(figsize=(min(2 + 0.14 * len(values), 16), 2.6), layout="constrained")
    ax = fig.add_subplot()
    font = FontProperties(family="DejaVu Sans Mono", weight="bold")
    shapes = {}
    for letter in LETTERS:
        tp = TextPath((0, 0), letter, size=1, prop=font)
        box = tp.get_extents()
        shapes[letter] = (tp, box)
    for i, (code, v) in enumerate(zip(codes.tolist(), values.tolist())):
        if code >= N_CODE or v == 0:
            continue
        letter = LETTERS[code]
        tp, box = shapes[letter]
        move = Affine2D().translate(-box.x0, -box.y0).scale(0.9 / box.width, abs(v) / box.height)
        if v < 0:
            move = move.scale(1, -1)
        move = move.translate(start + i + 0.05, 0)
        ax.add_patch(PathPatch(move.transform_path(tp), color=COLOURS[letter], lw=0))
    lo, hi = min(0.0, float(values.min(initial=0))), max(0.0, float(values.max(initial=0)))
    pad = 0.05 * (hi - lo or 1.0)
    ax.set_xlim(start, start + len(values))
    ax.set_ylim(lo - pad, hi + pad)
    ax.axhline(0, color="0.5", lw=0.6)
    ax.set_xlabel(f"{region.chrom} position (0-based)")
    ax.set_ylabel("importance\n(mean drop)")
    ax.set_title(f"{track_id}: {region.chrom}:{start + 1:,}-{start + len(values):,} (1-based), "
                 "reference bases scaled by importance", fontsize=9)
    fig.savefig(path, format="png", dpi=120, metadata={"Software": None})
    make_readable(path)
