"""score-variants (Genomic tracks panel): what each variant of a VCF does to every predicted track.

The job (genointerp.tracks.variants) is imported inside the command: it imports torch, which
`genointerp --help` must not pay for.
"""

from __future__ import annotations

from genointerp.cli.declare import command
from genointerp.cli.tracks import PANEL
from genointerp.io.variants import MAX_INDEL


@command(
    "score-variants",
    "genointerp.tracks.variants:ScoreVariantsRequest",
    job="genointerp.tracks.variants:run",
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
        "  genointerp score-variants calls.vcf.gz -R hg19.fa.gz -o scores.tsv\n\n"
        "  genointerp score-variants calls.vcf.gz -R hg19.fa.gz -m tracks_model --wide -o sad.tsv "
        "--vcf-out calls.gi.vcf.gz --index-vcf --summary summary.json\n\n"
        "  genointerp score-variants gwas.vcf.gz -R hg19.fa.gz --chunk 3/8 -o part3.tsv   "
        "# gather: parts 1..8 in order, one header"
    ),
)
def score_variants(req, result: dict) -> None:
    pass  # the job logs what it scored and skipped

