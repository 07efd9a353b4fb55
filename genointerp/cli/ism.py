"""ism: in-silico mutagenesis of a track model over BED regions (genointerp.tracks.ism), in the
Genomic tracks panel. The job module is imported inside the command because it imports torch,
which `genointerp --help` must not pay for."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command
from genointerp.cli.tracks import PANEL


@command(
    "ism",
    "genointerp.tracks.ism:IsmRequest",
    job="genointerp.tracks.ism:run",
    force="an existing output folder",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp ism -R hg19.fa.gz --regions enhancers.bed --tracks K562.CTCF.conservative -o ism_ctcf\n\n"
        "  genointerp ism -m tracks_model -R ref.fa.gz --regions sites.bed --rc-average --figure -o ism_sites"
    ),
)
def ism(req, result: dict) -> None:
    """In-silico mutagenesis: every base of BED regions changed to each other base, scored by a track model.

    effect = mutated minus reference prediction, summed over the window's target bins that overlap the region; a base's importance is minus the mean effect of its three mutations (the mean drop), its max drop the largest of the three drops. Regions up to the model's target span are scored in one window centred on them; longer ones in windows stepping by half the target span, each base in the central half of its window's targets. Bases that are not A/C/G/T are skipped.
    """

    log(f"scored {result['mutations']:,} mutations of {result['bases_scored']:,} bases in {result['regions']:,} "
        f"region(s) for {result['tracks']} track(s) in {result['seconds']:.1f} s; wrote {req.output}")
