"""find-integrations: where the virus went in (registered in the viral detection panel)."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command
from genointerp.runtime import single_threaded_numpy_blas

PANEL = "Viral detection"


@command(
    "find-integrations",
    "genointerp.integrations.request:IntegrationRequest",
    job="genointerp.integrations.job:run",
    prepare=single_threaded_numpy_blas,  # before the request's imports load numpy
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp find-integrations tumor.bam -R GRCh38.fa -o junctions.tsv --vcf junctions.vcf "
        "--bedpe junctions.bedpe --summary summary.json --genes genes.gtf.gz\n\n"
        "  genointerp find-integrations --reads1 R1.fq.gz --reads2 R2.fq.gz -R chr20.fa.gz -o junctions.tsv"
    ),
)
def find_integrations(req, result: dict) -> None:
    """Find where a virus is integrated in the host: junctions from split reads and read pairs.

    Candidates are reads clipped at a host alignment's end, reads with SA tags, and reads whose
    mate is aligned to the host while they are not; their viral part must carry classify-reads'
    seed evidence and is placed on the viral genomes with minimap2 (mappy). One row per junction:
    host position and strand, virus, type and viral position, orientation, split reads, spanning
    pairs, nearest genes and status (precise: split reads give the base; imprecise: pairs only).
    Every output names a type the same way (HPV16, HBV genotype A); the VCF pairs each junction's
    host and viral breakends by MATEID.
    """

    log(f"{result['junctions']:,} junctions ({result['precise']:,} precise, {result['imprecise']:,} imprecise) "
        f"from {result['reads_scanned']:,} reads")
