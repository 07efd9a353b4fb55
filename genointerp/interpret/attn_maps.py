"""The attn-maps job: capture every attention map of an XVir model over reads, or of a track model
(swin1d, enformer-like) over reference regions, and write arrays, summaries and figures.

Items: reads (the first read_length bases of each, as XVir scores them) or regions (a model
window of seq_len bp centred on each region; bases past a chromosome end are N, as in
predict-tracks). Batches stream through the model; the accumulator keeps the running means, and
without --mean every item's maps are kept for attention.npz (so --mean is the way to summarise
thousands of reads or regions).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from genointerp import __version__
from genointerp.errors import InputError, UsageError
from genointerp.interpret import plots
from genointerp.interpret.capture import (ATTENTION_ARCHITECTURES, AttentionCapture, LayerMaps, TokenGrid,
                                          attention_layout, output_grid)
from genointerp.interpret.export import merge_pieces, write_bedgraph, write_bigwig, write_npz
from genointerp.interpret.summaries import (RESIDUAL, AttentionAccumulator, layer_mean_distance, per_bp,
                                            rollout_importance, uniform_distance)
from genointerp.io.atomic import AtomicOutputs
from genointerp.io.reference import Reference
from genointerp.io.regions import parse_region, read_regions
from genointerp.io.sequences import iter_records
from genointerp import options
from genointerp.options import arg, opt
from genointerp.model_folder import load_model_dir
from genointerp.report import Reporter
from genointerp.resources import BUILTIN_TRACKS, builtin_model_dir
from genointerp.runtime import job_device, use_threads
from genointerp.seq.alphabet import INVALID, N_CODE, encode
from genointerp.seq.kmers import PAD_CODE, tokenize
from genointerp.tracks.inference import TRACK_TASK, load_track_model, window_batch

FORMAT = "genointerp attention maps 1"
DEFAULT_READS = 10


@dataclass
class AttnMapsRequest:
    """attn-maps: the fields are its options (READS for an XVir model, or --fasta with --region/--regions)."""

    output: str = opt(
        ..., "-o", "--output",
        help='Output folder: attention.npz + attention.json, distance.tsv, rollout, figures/.')
    reads: list[str] = arg([], metavar="READS", help='FASTQ/FASTA reads (gzip ok; - is stdin) for an XVir model.')
    model: str | None = options.model(
        'Model directory: XVir (train-xvir) or a swin1d / enformer-like track model (train-tracks). '
            'Default: the built-in HPV model for reads, the built-in tracks model for regions.')
    read_ids: list[str] = opt(
        [], "--read-id",
        help='Read(s) to show, by name (repeatable). Default: the first --max-reads reads.')
    max_reads: int | None = opt(
        None, "--max-reads", min=1,
        help=f'Reads to take when no --read-id is given (default {DEFAULT_READS}; every read with --mean).')  # None: DEFAULT_READS, or every read with mean
    fasta: str | None = options.reference(required=False, more="track models only")
    region: list[str] = opt(
        [], "--region",
        help='Track models: chr:start-end (0-based, end exclusive; repeatable). The model window is centred on it.')  # chr:start-end, 0-based half-open
    regions: str | None = opt(
        None, "--regions",
        help='Track models: BED of regions, one model window centred on each.')
    mean: bool = opt(False, "--mean", help='Keep only the mean over all reads/regions (streamed, bounded memory).')
    layer: int | None = opt(
        None, "--layer",
        help=('Attention layer (0-based, forward order; negative counts from the end) for the heads, windows and '
              'zoom figures. Default: the deepest windowed layer, else the last.'))  # layer for the one-layer figures; None = the deepest windowed layer
    zoom: str | None = opt(
        None, "--zoom",
        help=('Zoom figure range: START-END bp from the input start, or chr:START-END (regions). Default: the '
              'region and a window either side; reads: the whole read.'))
    plot_items: int = opt(1, "--plot-items", min=0, help='Items to draw figures for (0 = no figures).')
    batch_size: int = options.batch_size(8)
    device: str = options.device()
    threads: int = options.threads()

    def check(self) -> None:
        if self.reads and (self.fasta or self.region or self.regions):
            raise UsageError("READS: give READS (XVir) or -R/--reference with --region/--regions (track models), not both")
        if not self.reads and not (self.fasta and (self.region or self.regions)):
            raise UsageError("READS: give READS for an XVir model, or -R/--reference with --region/--regions for a track model")
        if self.read_ids and not self.reads:
            raise UsageError("--read-id: --read-id picks reads: give READS")
        if self.read_ids and self.max_reads is not None:
            raise UsageError("--max-reads: give --read-id or --max-reads, not both")
        for text in self.region:  # a malformed chr:start-end is a usage error before the model is loaded
            parse_region(text, "--region")

    def inputs(self) -> list[str | None]:
        return [self.model, *self.reads, self.fasta, self.regions]


def run(req: AttnMapsRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Fill the output folder; returns {"files": the names written, "figures": how many are figures}."""
    use_threads(req.threads)  # first: torch's thread pool takes its settings when it starts
    device = job_device(req.device, "32", report.warn)
    folder = outputs.folder(req.output)
    result, config, model_folder, chrom_sizes = capture(req, device, report)
    written = write_outputs(folder, req, result, config, model_folder, chrom_sizes)
    return {"files": written, "figures": sum(f.startswith("figures/") for f in written)}


@dataclass
class Item:
    id: str
    chrom: str | None  # None for reads
    start: int  # region start; 0 for reads
    end: int  # region end; bases of the read used
    window_start: int  # genomic start of the model input (0 for reads)
    sequence: str = ""  # reads: the bases used (for k-mer labels)

    def describe(self) -> dict:
        d = {"id": self.id}
        if self.chrom is not None:
            d.update(chrom=self.chrom, start=self.start, end=self.end, window_start=self.window_start)
        else:
            d.update(length_used=self.end)
        return d


# --- model ---------------------------------------------------------------------------------------
def load_attention_model(path: str | None, reads_mode: bool):
    """(model, config dict, model folder) of an attention model; refuses models without attention."""
    if path is None:
        if reads_mode:
            folder = builtin_model_dir()
            model, config = load_model_dir(folder, expect="xvir")
        else:
            model, config = load_track_model(None)
            folder = builtin_model_dir(BUILTIN_TRACKS)
    else:
        folder = Path(path)
        model, config = load_model_dir(folder)
    arch = config.get("model", {}).get("architecture")
    if arch not in ATTENTION_ARCHITECTURES:
        raise InputError(f"{folder}: a {arch} model has no attention layers; attn-maps needs an XVir model "
                         f"(train-xvir) or a swin1d / enformer-like track model (train-tracks)")
    attention_layout(model)  # enformer-like without transformer layers has none either
    if arch != "xvir" and config.get("task") != TRACK_TASK:
        raise InputError(f"{folder}: a {arch} model without the track window settings of train-tracks")
    if arch == "xvir" and not reads_mode:
        raise InputError(f"{folder}: an XVir model reads sequencing reads; give READS, not --fasta/--region")
    if arch != "xvir" and reads_mode:
        raise InputError(f"{folder}: a {arch} track model reads reference windows; give --fasta with "
                         "--region or --regions, not READS")
    return model, config, folder


# --- items -------------------------------------------------------------------------------------------
def _read_codes(name: str, seq: str, L: int, k: int, has_unknown: bool, has_pad: bool) -> tuple[np.ndarray | None, str]:
    """(codes (L,) or None, reason it cannot be used)."""
    codes = encode(seq[:L])
    bad = np.flatnonzero(codes == INVALID)
    if bad.size:
        raise InputError(f"read {name}: position {int(bad[0]) + 1}: {seq[bad[0]]!r} is not a nucleotide letter")
    if codes.size < L:
        if not has_pad:
            return None, f"shorter ({len(seq)} bp) than the model's read length {L} bp"
        codes = np.concatenate([codes, np.full(L - codes.size, PAD_CODE, np.uint8)])
    if (codes == N_CODE).any() and not has_unknown:
        return None, "has N or IUPAC letters in its first {L} bp and the model has no UNKNOWN token".format(L=L)
    return codes.astype(np.uint8), ""


def read_batches(req: AttnMapsRequest, config: dict, warn: Callable[[str], None]) -> Iterator[tuple[list[Item], np.ndarray]]:
    """Batches of (items, tokens (B, n_tokens)) from the read files."""
    m = config["model"]
    L, k = m["read_length"], m["k"]
    has_unknown, has_pad = m["vocab_size"] > 4**k, m["vocab_size"] > 4**k + 1

    def records():
        for path in req.reads:
            yield from iter_records(path)

    if req.read_ids:
        wanted = list(dict.fromkeys(req.read_ids))
        found: dict[str, tuple[str, str]] = {}
        for name, seq, _ in records():
            if name in wanted and name not in found:
                found[name] = (name, seq)
                if len(found) == len(wanted):
                    break
        missing = [r for r in wanted if r not in found]
        if missing:
            raise InputError(f"read id {missing[0]} not found in {', '.join(req.reads)}"
                             + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
        picked = []
        for rid in wanted:
            codes, why = _read_codes(rid, found[rid][1], L, k, has_unknown, has_pad)
            if codes is None:
                raise InputError(f"read {rid}: {why}")
            picked.append((rid, found[rid][1], codes))
        source = iter(picked)
    else:
        limit = req.max_reads if req.max_reads is not None else (None if req.mean else DEFAULT_READS)

        def usable():
            skipped = 0
            for name, seq, _ in records():
                codes, why = _read_codes(name, seq, L, k, has_unknown, has_pad)
                if codes is None:
                    if skipped < 3:
                        warn(f"read {name} skipped: {why}")
                    skipped += 1
                    continue
                yield name, seq, codes
            if skipped > 3:
                warn(f"{skipped:,} reads skipped in all")

        source = islice(usable(), limit)
    while batch := list(islice(source, req.batch_size)):
        items = [Item(name, None, 0, min(len(seq), L), 0, seq[:L].upper()) for name, seq, _ in batch]
        yield items, tokenize(np.stack([c for _, _, c in batch]), k)


def region_items(req: AttnMapsRequest, ref, seq_len: int, warn: Callable[[str], None]) -> list[Item]:
    """Items of --region and --regions, checked against the reference, windows centred on each."""
    spans = []
    for text in req.region:
        chrom, start, end = parse_region(text)
        name = ref.resolve(chrom, "--region")
        length = ref.lengths[name]
        if start < 0:  # parse_region has checked start < end
            raise InputError(f"--region {text}: negative start")
        if end > length:
            raise InputError(f"--region {text} is off the end of {name} ({length:,} bp)")
        spans.append((f"{name}:{start}-{end}", name, start, end))
    if req.regions:
        for r in read_regions(req.regions, ref, warn):
            spans.append((r.name or f"{r.chrom}:{r.start}-{r.end}", r.chrom, r.start, r.end))
    longer = [s for s in spans if s[3] - s[2] > seq_len]
    if longer:
        warn(f"{len(longer)} region(s) longer than the model window ({seq_len:,} bp), e.g. {longer[0][0]}: "
             "the maps cover the central window")
    return [Item(label, chrom, start, end, (start + end) // 2 - seq_len // 2) for label, chrom, start, end in spans]


# --- run ---------------------------------------------------------------------------------------------
@dataclass
class Result:
    items: list[Item]
    layers: list[LayerMaps]  # weights (N, ...) per item, or (1, ...) with mean
    distance: list[np.ndarray]  # per layer (H,), mean over items
    item_distance: list[np.ndarray]  # per layer (N, H) (or (1, H) with mean)
    uniform: list[float]
    importance: np.ndarray  # (N, length_bp) per-bp rollout importance (or (1, length_bp))
    input_grid: TokenGrid
    out_grid: TokenGrid
    length_bp: int
    pieces: list = field(default_factory=list)  # (chrom, window_start, per-bp importance) per region


def capture(req: AttnMapsRequest, device: str, report: Reporter):
    """Run the model on `device` over the request's items, capturing every attention map.
    Returns (Result, model config, model folder, reference chrom sizes or None)."""
    reads_mode = bool(req.reads)
    model, config, folder = load_attention_model(req.model, reads_mode)
    model.to(device)
    out_grid = output_grid(model)
    chrom_sizes = None
    if reads_mode:
        length_bp = config["model"]["read_length"]
        batches = read_batches(req, config, report.warn)
        total = None
    else:
        ref = Reference(req.fasta, report.warn)
        chrom_sizes = [(c, ref.lengths[c]) for c in ref.names]
        length_bp = config["window"]["seq_len"]
        items_all = region_items(req, ref, length_bp, report.warn)
        total = len(items_all)
        batches = region_batches(items_all, ref, length_bp, req.batch_size)
    acc = AttentionAccumulator()
    kept: list[list[LayerMaps]] = []
    kept_importance, kept_distance, items, pieces = [], [], [], []
    input_grid = None
    with report.progress("capturing attention", total) as advance, AttentionCapture(model) as cap:
        for batch_items, x in batches:
            with torch.inference_mode():
                xt = torch.from_numpy(np.ascontiguousarray(x)).to(device)
                model(xt)
            layers = cap.layers()
            imp_tok, input_grid = rollout_importance(layers, out_grid)
            imp = per_bp(imp_tok, input_grid, length_bp).astype(np.float32)
            acc.add(layers, imp)
            if not req.mean:
                kept.append(layers)
                kept_importance.append(imp)
                kept_distance.append([layer_mean_distance(layer) for layer in layers])
            if not reads_mode:
                pieces += [(it.chrom, it.window_start, imp[i]) for i, it in enumerate(batch_items)]
            elif req.mean:
                for it in batch_items:
                    it.sequence = ""  # k-mer labels are drawn for single reads only
            items += batch_items
            advance(len(batch_items))
    if not reads_mode:
        ref.close()
    if not items:
        raise InputError(f"no usable reads in {', '.join(req.reads)}")
    if req.mean:
        layers = acc.mean_layers()
        importance = acc.mean_importance()[None].astype(np.float32)
        item_distance = [d[None] for d in acc.mean_distance()]
    else:
        layers, importance, item_distance = _stack_batches(kept, kept_importance, kept_distance)
    uniform = [uniform_distance(layer) for layer in layers]
    report.log(f"{len(items):,} {'reads' if reads_mode else 'regions'}, {len(layers)} attention layers "
               f"({', '.join(sorted({lay.kind for lay in layers}))}){'; mean maps' if req.mean else ''}")
    result = Result(items, layers, acc.mean_distance(), item_distance, uniform, importance, input_grid, out_grid,
                    length_bp, pieces)
    return result, config, folder, chrom_sizes


def region_batches(items: list[Item], ref, length_bp: int, batch_size: int) -> Iterator[tuple[list[Item], np.ndarray]]:
    """Batches of (items, one-hot float32 (B, length_bp, 4)) of the regions' model windows."""
    for a in range(0, len(items), batch_size):
        batch = items[a: a + batch_size]
        xs = [window_batch(ref, it.chrom, np.array([it.window_start]), length_bp) for it in batch]
        yield batch, np.concatenate(xs)


def _stack_batches(kept: list[list[LayerMaps]], kept_importance: list[np.ndarray],
                   kept_distance: list[list[np.ndarray]]) -> tuple[list[LayerMaps], np.ndarray, list[np.ndarray]]:
    """Join the batches' captures along the item axis: per layer maps with weights (N, H, W, Q, K),
    float32 importance (N, length_bp), and per layer float64 mean distances (N, H)."""
    layers = [kept[0][i].with_weights(np.concatenate([b[i].weights for b in kept])) for i in range(len(kept[0]))]
    importance = np.concatenate(kept_importance)
    item_distance = [np.concatenate([b[i] for b in kept_distance]) for i in range(len(layers))]
    return layers, importance, item_distance


# --- outputs -----------------------------------------------------------------------------------------
def default_layer(layers: list[LayerMaps]) -> int:
    """The deepest windowed layer (1D-Swin), else the last layer."""
    windowed = [lay.index for lay in layers if lay.kind != "global"]
    return windowed[-1] if windowed else layers[-1].index


def pick_layer(layers: list[LayerMaps], requested: int | None) -> int:
    if requested is None:
        return default_layer(layers)
    n = len(layers)
    if not -n <= requested < n:
        raise InputError(f"--layer {requested}: this model has {n} attention layers (0-{n - 1})")
    return requested % n


def zoom_range(req: AttnMapsRequest, item: Item | None, layer: LayerMaps, length_bp: int) -> tuple[float, float]:
    """Window-relative [lo, hi) bp of the zoom-in figure."""
    if req.zoom:
        text = req.zoom
        if ":" in text:
            chrom, lo, hi = parse_region(text, "--zoom")
            if item is None or item.chrom is None:
                raise InputError("--zoom chr:start-end needs regions without --mean; give START-END (bp from "
                                 "the start of the model input)")
            if chrom != item.chrom and chrom.removeprefix("chr") != item.chrom.removeprefix("chr"):
                raise InputError(f"--zoom {text}: not on {item.chrom}, the chromosome of {item.id}")
            lo, hi = lo - item.window_start, hi - item.window_start
        else:
            try:
                lo, hi = (int(v.replace(",", "")) for v in text.split("-"))
            except ValueError:
                raise InputError(f"--zoom {text!r}: expected START-END or chr:START-END") from None
        if not (lo < hi and hi > 0 and lo < length_bp):
            raise InputError(f"--zoom {text}: outside the model input (0-{length_bp:,} bp from its start)")
        return max(lo, 0), min(hi, length_bp)
    if item is None or item.chrom is None:
        return 0, length_bp  # reads (and means): the whole input, capped by zoom_tokens
    span = layer.window * layer.grid.resolution_bp
    centre = (item.start + item.end) / 2 - item.window_start
    lo = min(item.start - item.window_start, centre - span)
    hi = max(item.end - item.window_start, centre + span)
    return max(lo, 0), min(hi, length_bp)


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:60] or "item"


def write_figures(fig_dir: Path, req: AttnMapsRequest, res: Result, reads_mode: bool) -> list[str]:
    """PNG figures for the first req.plot_items items (or the mean); returns their names."""
    written = []
    layers = res.layers
    j = pick_layer(layers, req.layer)
    sel_layer = layers[j]
    n_show = 1 if req.mean else min(req.plot_items, len(res.items))
    for n in range(n_show):
        item = None if req.mean else res.items[n]
        label = "mean" if req.mean else f"{n + 1:02d}_{_safe(item.id)}"
        title = (f"mean of {len(res.items):,} {'reads' if reads_mode else 'regions'}" if req.mean
                 else item.id)
        origin = 0 if item is None else item.window_start
        if item is not None and item.chrom is not None:
            focus = (item.start + item.end) / 2 - item.window_start
        else:
            focus = res.length_bp / 2
        dist = [d[n] for d in res.item_distance]
        name = f"{label}.layers.png"
        plots.plot_layers(layers, n, fig_dir / name, focus, origin, title, dist)
        written.append(name)
        win = plots.window_of(sel_layer, focus)
        name = f"{label}.heads.layer{j}.png"
        plots.plot_heads(sel_layer, n, fig_dir / name, win, origin, title, dist[j])
        written.append(name)
        if sel_layer.n_windows > 1:
            name = f"{label}.windows.layer{j}.png"
            plots.plot_windows(sel_layer, n, fig_dir / name, origin, title)
            written.append(name)
        lo, hi = zoom_range(req, item, sel_layer, res.length_bp)
        tokens = plots.zoom_tokens(sel_layer, lo, hi)
        name = f"{label}.zoom.layer{j}.png"
        axis = "read offset" if reads_mode else (f"{item.chrom} bp" if item is not None else "bp from input start")
        plots.plot_zoom(sel_layer, n, tokens, fig_dir / name, origin, title, axis)
        written.append(name)
        if reads_mode and item is not None:
            k = sel_layer.grid.span_bp
            seq = item.sequence.ljust(res.length_bp, "-")
            kmers = [seq[t: t + k] for t in range(sel_layer.grid.tokens)]
            name = f"{label}.kmers.layer{j}.png"
            plots.plot_kmer_map(sel_layer, n, kmers, tokens, fig_dir / name, title)
            written.append(name)
    plots.plot_distance(layers, res.distance, res.uniform, fig_dir / "distance.png",
                        f"mean of {len(res.items):,} {'reads' if reads_mode else 'regions'}")
    written.append("distance.png")
    shown = res.importance[: max(1, min(len(res.items), 10))] if not req.mean else res.importance
    tracks = {("mean" if req.mean else res.items[i].id): shown[i] for i in range(shown.shape[0])}
    if reads_mode or req.mean:
        positions, highlight = np.arange(res.length_bp), None
        xlabel = "read offset (bp, 0-based)" if reads_mode else "bp from the input start"
    else:
        it = res.items[0]
        positions = it.window_start + np.arange(res.length_bp)
        xlabel, highlight = f"{it.chrom} bp", (it.start, it.end)
        tracks = {it.id: res.importance[0]}  # one region: windows of different regions do not share an axis
    plots.plot_rollout(positions, tracks, fig_dir / "rollout.png", xlabel,
                       "attention rollout (Abnar & Zuidema), mean output row mapped to input bp", highlight)
    written.append("rollout.png")
    return written


def distance_tsv(res: Result) -> str:
    cols = ["layer", "name", "kind", "stage", "resolution_bp", "window_tokens", "window_bp", "head",
            "mean_distance_bp", "uniform_distance_bp", "ratio_to_uniform", "n_items"]
    lines = ["\t".join(cols)]
    for layer, d, u in zip(res.layers, res.distance, res.uniform):
        for h, v in enumerate(d.tolist()):
            ratio = v / u if u > 0 else float("nan")
            lines.append("\t".join(str(c) for c in (
                layer.index, layer.name, layer.kind, layer.stage, layer.grid.resolution_bp, layer.window,
                layer.window * layer.grid.resolution_bp, h, f"{v:.6g}", f"{u:.6g}", f"{ratio:.6g}", len(res.items))))
    return "\n".join(lines) + "\n"


def write_outputs(folder: Path, req: AttnMapsRequest, res: Result, config: dict, model_folder, chrom_sizes) -> list[str]:
    """Fill `folder`; returns the names written."""
    reads_mode = bool(req.reads)
    arrays, described, layer_docs = _attention_arrays(req, res)
    written = ["attention.npz", "attention.json", "distance.tsv"]
    write_npz(folder / "attention.npz", arrays)
    (folder / "distance.tsv").write_text(distance_tsv(res))
    written += _write_rollout(folder, req, res, chrom_sizes)
    figures = []
    if req.plot_items > 0:
        fig_dir = folder / "figures"
        fig_dir.mkdir()
        figures = [f"figures/{f}" for f in write_figures(fig_dir, req, res, reads_mode)]
    doc = _attention_doc(req, res, config, model_folder, layer_docs, described, figures)
    (folder / "attention.json").write_text(json.dumps(doc, indent=1) + "\n")
    return written + figures


def _attention_arrays(req: AttnMapsRequest, res: Result) -> tuple[dict[str, np.ndarray], dict[str, dict], list[dict]]:
    """The arrays of attention.npz, N items (1 with --mean): per layer float32 weights (N, H, W, Q, K),
    int32 token_index (W, slot), int64 token_start (N, T), float64 mean_distance_bp (N, H); float32
    rollout (N, length_bp) and int64 window_start (N,). Returns (arrays by name, their descriptions for
    attention.json, one attention.json record per layer)."""
    n = 1 if req.mean else len(res.items)
    origin = (np.zeros(n, np.int64) if (req.reads or req.mean)
              else np.array([it.window_start for it in res.items]))
    arrays: dict[str, np.ndarray] = {}
    described: dict[str, dict] = {}
    item_axis = "mean" if req.mean else "item"

    def put(key, arr, axes, text):
        arrays[key] = arr
        described[key] = {"shape": list(arr.shape), "dtype": str(arr.dtype), "axes": axes, "description": text}

    layer_docs = []
    for layer, d_item in zip(res.layers, res.item_distance):
        p = f"layer{layer.index:02d}"
        put(f"{p}.weights", layer.weights.astype(np.float32), [item_axis, "head", "window", "query", "key"],
            "attention weights; each query row sums to 1 over the keys of its window")
        put(f"{p}.token_index", layer.token_index.astype(np.int32), ["window", "slot"],
            "token (index into this layer's sequence) at each query/key slot of each window")
        put(f"{p}.token_start", origin[:, None] + layer.grid.starts()[None], [item_axis, "token"],
            "first bp of every token: genomic 0-based position (regions), read offset (reads), or bp from "
            "the input start (--mean); a token covers span_bp bp from there")
        put(f"{p}.mean_distance_bp", d_item.astype(np.float64), [item_axis, "head"],
            "mean attention distance: bp between token centres, attention-weighted, averaged over the queries "
            "of every window except a shifted layer's window that wraps around the sequence end")
        layer_docs.append({**layer.describe(), "mean_distance_bp": [round(float(v), 4) for v in res.distance[layer.index]],
                           "uniform_distance_bp": round(res.uniform[layer.index], 4),
                           "arrays": [f"{p}.{a}" for a in ("weights", "token_index", "token_start", "mean_distance_bp")]})
    put("rollout", res.importance.astype(np.float32), [item_axis, "bp"],
        "attention rollout importance per input bp (mean output row, 1 = uniform over the input)")
    put("window_start", origin, [item_axis],
        "genomic start of each item's model input (0 for reads and --mean): bp j of `rollout` is window_start + j")
    return arrays, described, layer_docs


def _write_rollout(folder: Path, req: AttnMapsRequest, res: Result, chrom_sizes) -> list[str]:
    """Write the rollout importance (res.importance, float32 (N, length_bp)): per read base for reads
    (rollout.tsv), else over the regions' windows on the genome (rollout.bedGraph and rollout.bw, overlaps
    averaged; chrom_sizes: (name, length) pairs) and, with --mean, by bp from the input start
    (rollout_profile.tsv). Returns the names written."""
    if req.reads:
        lines = ["read_id\toffset\tbase\timportance"] if not req.mean else ["offset\timportance"]
        for i in range(1 if req.mean else len(res.items)):
            vals = res.importance[i].tolist()
            if req.mean:
                lines += [f"{p}\t{v:.6g}" for p, v in enumerate(vals)]
            else:
                it = res.items[i]
                seq = it.sequence.ljust(len(vals), "-")
                lines += [f"{it.id}\t{p}\t{seq[p]}\t{v:.6g}" for p, v in enumerate(vals)]
        (folder / "rollout.tsv").write_text("\n".join(lines) + "\n")
        return ["rollout.tsv"]
    intervals = merge_pieces(res.pieces, chrom_sizes)
    write_bedgraph(folder / "rollout.bedGraph", intervals)
    write_bigwig(folder / "rollout.bw", intervals, chrom_sizes)
    written = ["rollout.bedGraph", "rollout.bw"]
    if req.mean:
        (folder / "rollout_profile.tsv").write_text(
            "offset_bp\timportance\n" + "".join(f"{p}\t{v:.6g}\n" for p, v in enumerate(res.importance[0].tolist())))
        written.append("rollout_profile.tsv")
    return written


def _attention_doc(req: AttnMapsRequest, res: Result, config: dict, model_folder, layer_docs: list[dict],
                   described: dict[str, dict], figures: list[str]) -> dict:
    """attention.json: the model, inputs, items, coordinate conventions, per-layer records, the
    rollout method, the arrays' descriptions and every file written (figures as given)."""
    reads_mode = bool(req.reads)
    return {
        "format": FORMAT,
        "genointerp_version": __version__,
        "model": {"path": str(model_folder), "architecture": config["model"]["architecture"],
                  "task": config.get("task")},
        "input": ({"reads": list(req.reads), "read_ids": list(req.read_ids)} if reads_mode else
                  {"fasta": req.fasta, "regions": list(req.region), "regions_bed": req.regions,
                   "window_bp": res.length_bp, "window": "seq_len bp centred on the region midpoint; bases past "
                   "a chromosome end are N"}),
        "mean": req.mean,
        "n_items": len(res.items),
        "items": [it.describe() for it in res.items],
        "coordinates": ("0-based. Token t of a layer covers input bp [offset_bp + t * resolution_bp, + span_bp) "
                        "from the start of the model input; add window_start for genomic positions (regions). "
                        "Reads: the input is the read's first read_length bases, token t is the k-mer at read "
                        "offset t. Window w of a layer holds tokens token_index[w]; shifted windows wrap around "
                        "the sequence end."),
        "layers": layer_docs,
        "rollout": {"method": "Abnar & Zuidema (2020) attention rollout: per layer 0.5 * mean-over-heads attention "
                              "+ 0.5 * identity, multiplied from the output tokens back to the input tokens; token "
                              "grids of different layers are linked by averaging (patch merging) and the central "
                              "crop; convolutions and feed-forward blocks are not modelled",
                    "residual": RESIDUAL, "output_grid": res.out_grid.to_dict(),
                    "input_grid": res.input_grid.to_dict(), "length_bp": res.length_bp,
                    "value": "share of the mean output row per bp, times length_bp (1 = uniform)"},
        "arrays": described,
        "files": {"attention.npz": "arrays below (numpy.load)",
                  "distance.tsv": "mean attention distance per layer and head (mean over items)",
                  **({"rollout.tsv": "rollout importance per read base (0-based offset in the read)"} if reads_mode else
                     {"rollout.bedGraph": "rollout importance over the regions' windows (overlaps averaged)",
                      "rollout.bw": "the same as bigWig",
                      **({"rollout_profile.tsv": "mean rollout importance by bp from the input start"}
                         if req.mean else {})}),
                  **{f: "figure" for f in figures}},
    }
