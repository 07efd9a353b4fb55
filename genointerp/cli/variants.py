"""score-variants (Genomic tracks panel): what each variant of a VCF does to every predicted track.

The job (genointerp.tracks.variants) is imported inside the command: it imports torch, which
`genointerp --help` must not pay for.
"""

from __future__ import annotations

from typing import Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER
from genointerp.cli.options import device_option, fasta_option, force_option, threads_option, track_model_option
from genointerp.cli.tracks import PANEL
from genointerp.io.variants import MAX_INDEL
from genointerp.job import execute
from genointerp.runtime import Precision


@app.command(
    "score-variants",
    rich_help_panel=PANEL,
    help=("Score variants: what each SNV and short indel does to every track a model predicts.\n\n"
          "Each ALT gets a reference and an alternate window of the model's length centred on it; per track, "
          "ref_sum and alt_sum are the predicted signal summed over the model's target bins, sad = alt_sum - ref_sum "
          "(Basenji's SAD), center_diff = alt - ref over the bins near the variant, "
          "log2fc = log2((alt_sum + 1) / (ref_sum + 1)).\n\n"
          f"Scored: REF and ALT of A/C/G/T only, indels up to {MAX_INDEL} bp (REF and ALT up to {MAX_INDEL + 1} bases), "
          "each ALT of a multi-allelic record on its own. Skipped, counted and logged by reason (--strict: an error): "
          "symbolic and breakend alleles, other bases, longer indels, contigs not in the FASTA, REF that disagrees "
          "with the FASTA, variants whose window would run off the contig."),
    epilog=(
        "Examples:\n\n"
        "  genointerp score-variants calls.vcf.gz --fasta hg19.fa.gz -o scores.tsv\n\n"
        "  genointerp score-variants calls.vcf.gz --fasta hg19.fa.gz -m tracks_model --wide -o sad.tsv "
        "--vcf-out calls.gi.vcf.gz --index-vcf --summary summary.json\n\n"
        "  genointerp score-variants gwas.vcf.gz --fasta hg19.fa.gz --chunk 3/8 -o part3.tsv   "
        "# gather: parts 1..8 in order, one header"
    ),
)
def score_variants(
    vcf: str = typer.Argument(..., metavar="VCF", help="Variants: VCF (plain, gzip or bgzip) or BCF; - for stdin."),
    fasta: str = fasta_option(more="chr20 and 20 are matched with a warning"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="TSV: a row per variant allele and track "
                                         "(chrom pos id ref alt track ref_sum alt_sum sad center_diff log2fc; pos "
                                         "1-based as in the VCF), or with --wide a row per allele; - for stdout."),
    model: Optional[str] = track_model_option(),
    vcf_out: Optional[str] = typer.Option(None, "--vcf-out", help="The input VCF with INFO per ALT: GI_SAD (the SAD of "
                                          "largest magnitude over the tracks, signed), GI_TRACK (its track), GI_LOG2FC "
                                          "(its log2 fold change); skipped alleles get '.'. bgzipped when the name ends in .gz."),
    index_vcf: bool = typer.Option(False, "--index-vcf", help="With --vcf-out NAME.vcf.gz: also write its tabix index NAME.vcf.gz.tbi."),
    summary: Optional[str] = typer.Option(None, "--summary", help="JSON: records and alleles read, scored, and skipped by reason."),
    wide: bool = typer.Option(False, "--wide", help="One TSV row per variant allele: chrom pos id ref alt, then a sad:TRACK column per track."),
    regions: Optional[str] = typer.Option(None, "--regions", help="BED: score only variants whose POS lies inside."),
    chunk: Optional[str] = typer.Option(None, "--chunk", metavar="I/N", help="Score only chunk I of N (1-based) of the "
                                        "scorable alleles, for scatter/gather: the chunks' TSVs, concatenated in order "
                                        "with one header, are the whole run's byte for byte."),
    center_bins: int = typer.Option(1, "--center-bins", min=0, help="center_diff sums alt - ref over the variant's bin "
                                    "and this many bins each side."),
    rc_average: bool = typer.Option(False, "--rc-average", help="Average the forward and reverse-complement predictions (twice the time)."),
    shifts: str = typer.Option("0", "--shifts", help="Comma-separated input shifts in bp (e.g. -1,0,1): the predictions of the window moved by each are averaged (Basenji's --shifts; one pass per shift, with --rc-average two)."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first variant that cannot be scored (exit 1, no "
                                "outputs) instead of skipping it."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Variant alleles built per step (whole blocks of 8; "
                                   "the model runs one block of 16 windows per pass, so this never changes a number)."),
    device: str = device_option(),
    precision: Precision = typer.Option(Precision.fp32, "--precision"),
    threads: int = threads_option(),
    force: bool = force_option(),
) -> None:
    from genointerp.tracks.variants import ScoreVariantsRequest, run

    req = ScoreVariantsRequest(vcf=vcf, fasta=fasta, output=output, model=model, vcf_out=vcf_out, index_vcf=index_vcf,
                               summary=summary, wide=wide, regions=regions, chunk=chunk, center_bins=center_bins,
                               rc_average=rc_average, shifts=shifts, strict=strict, batch_size=batch_size, device=device,
                               precision=precision.value, threads=threads)
    execute(run, req, force, REPORTER)

