"""find-integrations: where the virus went in (registered in the viral detection panel)."""

from __future__ import annotations

from typing import List, Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.options import force_option, threads_option
from genointerp.cli.common import REPORTER, log

PANEL = "Viral detection"


@app.command(
    "find-integrations",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp find-integrations tumor.bam --host GRCh38.fa -o junctions.tsv --vcf junctions.vcf "
        "--bedpe junctions.bedpe --summary summary.json --genes genes.gtf.gz\n\n"
        "  genointerp find-integrations --reads1 R1.fq.gz --reads2 R2.fq.gz --host chr20.fa.gz -o junctions.tsv"
    ),
)
def find_integrations(
    bam: Optional[str] = typer.Argument(None, metavar="[BAM]", help="Host-aligned BAM/CRAM, sorted by coordinate and indexed, with its unmapped reads (bwa mem, minimap2 -ax sr). Or give --reads1/--reads2."),
    host: str = typer.Option(..., "--host", help="Indexed host FASTA (samtools faidx): the BAM's reference (every contig of its header, same lengths); with FASTQ input, the genome reads are aligned to."),
    reads1: Optional[str] = typer.Option(None, "--reads1", help="Paired FASTQ, read 1 (instead of a BAM)."),
    reads2: Optional[str] = typer.Option(None, "--reads2", help="Paired FASTQ, read 2, same pairs in the same order."),
    output: str = typer.Option("-", "-o", "--output", help="Junction table (TSV); - is stdout."),
    vcf: Optional[str] = typer.Option(None, "--vcf", help="Also write the junctions as VCF 4.3 breakends (.gz: bgzip, which tabix and bcftools index)."),
    index_vcf: bool = typer.Option(False, "--index-vcf", help="With --vcf NAME.vcf.gz: also write its tabix index NAME.vcf.gz.tbi."),
    bedpe: Optional[str] = typer.Option(None, "--bedpe", help="Also write the junctions as BEDPE (host first)."),
    summary: Optional[str] = typer.Option(None, "--summary", help="Also write a summary JSON (counts equal the table's rows)."),
    multiqc: Optional[str] = typer.Option(None, "--multiqc", help="Also write the junctions as MultiQC custom content (the name must end in _mqc.tsv): the sample's rows of the genointerp integrations table (virus, type, host position, reads, genes, status)."),
    sample: Optional[str] = typer.Option(None, "--sample", help="Sample name of the --multiqc rows (default: the input's file name less its extensions)."),
    genes: Optional[str] = typer.Option(None, "--genes", help="Gene annotation (BED or GTF) for the nearest_genes column."),
    viral_refs: List[str] = typer.Option([], "--viral-refs", metavar="FASTA", help="More viral genomes to place reads on (repeatable), for viruses the model's references lack; the built-in model's hold HPV types with their lineages, HBV, HCV, EBV, KSHV, HTLV-1 and MCPyV."),
    model: Optional[str] = typer.Option(None, "--model", help="Model folder whose viral references and seed index are used (default: the built-in model)."),
    min_mapq: int = typer.Option(20, "--min-mapq", min=0, max=255, help="Least mapping quality of a host alignment that anchors a junction."),
    min_clip: int = typer.Option(20, "--min-clip", min=15, help="Least soft-clipped (or unaligned) bases for a split read."),
    min_support: int = typer.Option(3, "--min-support", min=1, help="Least split reads + spanning pairs for a junction."),
    max_fragment: int = typer.Option(1000, "--max-fragment", min=100, help="Longest fragment (insert) of the library: how far from its anchor a pair's junction can lie."),
    threads: int = threads_option("Threads for BAM/CRAM decompression."),
    force: bool = force_option(),
) -> None:
    """Find where a virus is integrated in the host: junctions from split reads and read pairs.

    Candidates are reads clipped at a host alignment's end, reads with SA tags, and reads whose
    mate is aligned to the host while they are not; their viral part must carry classify-reads'
    seed evidence and is placed on the viral genomes with minimap2 (mappy). One row per junction:
    host position and strand, virus, type and viral position, orientation, split reads, spanning
    pairs, nearest genes and status (precise: split reads give the base; imprecise: pairs only).
    Every output names a type the same way (HPV16, HBV genotype A); the VCF pairs each junction's
    host and viral breakends by MATEID.
    """
    from genointerp.runtime import single_threaded_numpy_blas, usable_threads

    single_threaded_numpy_blas()  # before the job's imports load numpy
    from genointerp.job import execute
    from genointerp.integrations.job import run
    from genointerp.integrations.request import IntegrationRequest

    req = IntegrationRequest(host=host, bam=bam, reads1=reads1, reads2=reads2, output=output, vcf=vcf, index_vcf=index_vcf, bedpe=bedpe,
                             summary=summary, multiqc=multiqc, sample=sample, genes=genes, viral_refs=list(viral_refs), model=model, min_mapq=min_mapq,
                             min_clip=min_clip, min_support=min_support, max_fragment=max_fragment,
                             threads=usable_threads(threads))
    result = execute(run, req, force, REPORTER)
    log(f"{result['junctions']:,} junctions ({result['precise']:,} precise, {result['imprecise']:,} imprecise) "
        f"from {result['reads_scanned']:,} reads")
