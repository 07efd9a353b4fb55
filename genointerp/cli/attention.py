"""Interpretation panel: attn-maps (attention maps, distances and rollout of XVir and track models)."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command

PANEL = "Interpretation"


@command(
    "attn-maps",
    "genointerp.interpret.attn_maps:AttnMapsRequest",
    job="genointerp.interpret.attn_maps:run",
    force="an existing output folder",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp attn-maps tumor.fq.gz --read-id read42 -o read42_attention\n\n"
        "  genointerp attn-maps tumor.fq.gz --max-reads 5000 --mean -o hpv_mean_attention\n\n"
        "  genointerp attn-maps -m swin_model -R hg19.fa.gz --region chr20:31000000-31000200 -o site\n\n"
        "  genointerp attn-maps -m swin_model -R hg19.fa.gz --regions peaks.bed --mean -o peaks_mean"
    ),
)
def attn_maps(req, result: dict) -> None:
    """Attention maps of every layer, head and window for reads (XVir) or reference regions (track models).

    Captures every attention module during one forward pass (outputs unchanged). Writes the maps
    with the resolution and coordinates of every token (attention.npz, documented in
    attention.json), mean attention distance per layer and head (distance.tsv), attention rollout
    mapped back to input bases (rollout.tsv for reads; rollout.bedGraph and rollout.bw for
    regions, to view next to the tracks), and figures: all layers, all heads of a layer, all
    windows of a layer, a zoom-in, and for XVir k-mer x k-mer maps per head.
    """

    log(f"wrote {len(result['files'])} files to {req.output}: attention.npz, distance.tsv, rollout, "
        f"{result['figures']} figures")
