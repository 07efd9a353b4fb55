"""ism: in-silico mutagenesis of a track model over BED regions (genointerp.tracks.ism), in the
Genomic tracks panel. The job module is imported inside the command because it imports torch,
which `genointerp --help` must not pay for."""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, log
from genointerp.cli.options import device_option, fasta_option, force_option, threads_option, track_model_option
from genointerp.cli.tracks import PANEL
from genointerp.job import execute
from genointerp.runtime import Precision


@app.command(
    "ism",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp ism --fasta hg19.fa.gz --regions enhancers.bed --tracks K562.CTCF.conservative -o ism_ctcf\n\n"
        "  genointerp ism -m tracks_model --fasta ref.fa.gz --regions sites.bed --rc-average --figure -o ism_sites"
    ),
)
def ism(
    fasta: str = fasta_option(),
    regions: str = typer.Option(..., "--regions", help="BED of regions to mutate, at most 5,000 bp each "
                                "(overlapping ones are merged)."),
    output: str = typer.Option(..., "-o", "--output", help="Output folder: <track id>.ism.bw per track, ism.tsv, "
                               "ism.bases.tsv, summary.json."),
    model: Optional[str] = track_model_option(),
    tracks: Optional[str] = typer.Option(None, "--tracks", help="Comma-separated track ids to score (default: all "
                                         "of the model's)."),
    figure: bool = typer.Option(False, "--figure", help="Also draw <track id>.ism.png: the reference bases of the "
                                "region with the largest total importance, as letters as tall as their importance."),
    rc_average: bool = typer.Option(False, "--rc-average", help="Score the mean of the forward and reverse-complement "
                                    "predictions (twice the time)."),
    shifts: str = typer.Option("0", "--shifts", help="Comma-separated input shifts in bp (e.g. -1,0,1): the predictions of the window moved by each are averaged (Basenji's --shifts; one pass per shift, with --rc-average two)."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Windows one-hot encoded and sent to the device per "
                                   "step (rounded up to a multiple of 16); the model always runs 16 at a time, so the "
                                   "results do not depend on it."),
    device: str = device_option(),
    precision: Precision = typer.Option(Precision.fp32, "--precision"),
    threads: int = threads_option(),
    force: bool = force_option("an existing output folder"),
) -> None:
    """In-silico mutagenesis: every base of BED regions changed to each other base, scored by a track model.

    effect = mutated minus reference prediction, summed over the window's target bins that overlap the region; a base's importance is minus the mean effect of its three mutations (the mean drop), its max drop the largest of the three drops. Regions up to the model's target span are scored in one window centred on them; longer ones in windows stepping by half the target span, each base in the central half of its window's targets. Bases that are not A/C/G/T are skipped.
    """

    from genointerp.tracks.ism import IsmRequest, run

    req = IsmRequest(regions=regions, fasta=fasta, output=output, model=model,
                     tracks=[t.strip() for t in (tracks or "").split(",")] if tracks is not None else [],
                     figure=figure, rc_average=rc_average, shifts=shifts, batch_size=batch_size, device=device,
                     precision=precision.value, threads=threads)
    summary = execute(run, req, force, REPORTER)
    log(f"scored {summary['mutations']:,} mutations of {summary['bases_scored']:,} bases in {summary['regions']:,} "
        f"region(s) for {summary['tracks']} track(s) in {summary['seconds']:.1f} s; wrote {output}")
