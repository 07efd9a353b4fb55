"""Interpretation panel: attn-maps (attention maps, distances and rollout of XVir and track models)."""

from __future__ import annotations

from typing import List, Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.options import device_option, force_option, threads_option
from genointerp.cli.common import REPORTER, log
from genointerp.job import execute

PANEL = "Interpretation"


@app.command(
    "attn-maps",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp attn-maps tumor.fq.gz --read-id read42 -o read42_attention\n\n"
        "  genointerp attn-maps tumor.fq.gz --max-reads 5000 --mean -o hpv_mean_attention\n\n"
        "  genointerp attn-maps -m swin_model --fasta hg19.fa.gz --region chr20:31000000-31000200 -o site\n\n"
        "  genointerp attn-maps -m swin_model --fasta hg19.fa.gz --regions peaks.bed --mean -o peaks_mean"
    ),
)
def attn_maps(
    reads: Optional[List[str]] = typer.Argument(None, metavar="READS", help="FASTQ/FASTA reads (gzip ok; - is stdin) for an XVir model."),
    output: str = typer.Option(..., "-o", "--output", help="Output folder: attention.npz + attention.json, distance.tsv, rollout, figures/."),
    model_dir: Optional[str] = typer.Option(None, "-m", "--model", help="Model directory: XVir (train-xvir) or a swin1d / enformer-like track model (train-tracks). Default: the built-in HPV model for reads, the built-in tracks model for regions."),
    read_ids: List[str] = typer.Option([], "--read-id", help="Read(s) to show, by name (repeatable). Default: the first --max-reads reads."),
    max_reads: Optional[int] = typer.Option(None, "--max-reads", min=1, help="Reads to take when no --read-id is given (default 10; every read with --mean)."),
    fasta: Optional[str] = typer.Option(None, "--fasta", help="Track models: reference FASTA (plain or bgzip) with a .fai index."),
    region: List[str] = typer.Option([], "--region", help="Track models: chr:start-end (0-based, end exclusive; repeatable). The model window is centred on it."),
    regions: Optional[str] = typer.Option(None, "--regions", help="Track models: BED of regions, one model window centred on each."),
    mean: bool = typer.Option(False, "--mean", help="Keep only the mean over all reads/regions (streamed, bounded memory)."),
    layer: Optional[int] = typer.Option(None, "--layer", help="Attention layer (0-based, forward order; negative counts from the end) for the "
                                        "heads, windows and zoom figures. Default: the deepest windowed layer, else the last."),
    zoom: Optional[str] = typer.Option(None, "--zoom", help="Zoom figure range: START-END bp from the input start, or chr:START-END "
                                       "(regions). Default: the region and a window either side; reads: the whole read."),
    plot_items: int = typer.Option(1, "--plot-items", min=0, help="Items to draw figures for (0 = no figures)."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    device: str = device_option(),
    threads: int = threads_option(),
    force: bool = force_option("an existing output folder"),
) -> None:
    """Attention maps of every layer, head and window for reads (XVir) or reference regions (track models).

    Captures every attention module during one forward pass (outputs unchanged). Writes the maps
    with the resolution and coordinates of every token (attention.npz, documented in
    attention.json), mean attention distance per layer and head (distance.tsv), attention rollout
    mapped back to input bases (rollout.tsv for reads; rollout.bedGraph and rollout.bw for
    regions, to view next to the tracks), and figures: all layers, all heads of a layer, all
    windows of a layer, a zoom-in, and for XVir k-mer x k-mer maps per head.
    """
    from genointerp.interpret.attn_maps import AttnMapsRequest, run  # imports torch: not at --help

    req = AttnMapsRequest(output=output, reads=list(reads or []), model=model_dir, read_ids=list(read_ids),
                          max_reads=max_reads, fasta=fasta, region=list(region), regions=regions, mean=mean,
                          layer=layer, zoom=zoom, plot_items=plot_items, batch_size=batch_size, device=device,
                          threads=threads)
    summary = execute(run, req, force, REPORTER)
    log(f"wrote {len(summary['files'])} files to {output}: attention.npz, distance.tsv, rollout, "
        f"{summary['figures']} figures")
