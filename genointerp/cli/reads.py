"""Reads panel: simulate-reads and kmerize (each builds its request and calls genointerp.job.execute)."""

from __future__ import annotations

from genointerp.cli.common import log
from genointerp.cli.declare import command

PANEL = "Reads"


@command(
    "simulate-reads",
    "genointerp.reads.simulate:SimulateReadsRequest",
    job="genointerp.reads.simulate:run",
    force="existing output files",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp simulate-reads -s viral=hpv.fa -s human=chr20.fa.gz -n 100000 --balance "
        "--circular viral -o train.fq.gz --truth train.tsv\n\n"
        "  genointerp simulate-reads -s viral=hpv.gb -s human=chr20.fa.gz -n 1000000 "
        "--fraction viral=0.001 --paired -o tumor_R1.fq.gz --output2 tumor_R2.fq.gz\n\n"
        "  genointerp simulate-reads -s host=chr20.fa.gz -s viral=hpv16.fa -s bacteria=ecoli.fa --circular viral "
        "--insert viral=host --insertions 40 --depth 15 --count bacteria=20000 --paired --fragment-mean 500 "
        "--fragment-sd 100 -o R1.fq.gz --output2 R2.fq.gz --truth-bedpe truth.bedpe"
    ),
)
def simulate_reads(req, result: dict) -> None:
    """Simulate Illumina-like short reads with ground truth in their names.

    Reads come from each labelled reference in proportion to its length (or --balance,
    --fraction, --count), with HiSeq 2500-like per-cycle qualities, matching substitution
    errors and rare indels. Names: LABEL|SERIAL|CONTIG|START|END|STRAND|ERRORS (docs/viral.md).
    """

    per_label = result["reads_per_label"]
    log("simulated " + ", ".join(f"{n:,} {lab}" for lab, n in per_label.items()) + (" pairs" if req.paired else " reads"))


@command(
    "kmerize",
    "genointerp.reads.kmerize:KmerizeRequest",
    job="genointerp.reads.kmerize:run",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp kmerize train.fq.gz --label-field 0 -o train.kmers\n\n"
        "  genointerp kmerize hpv.fq human.fq --label viral --label human -k 6 -o ds --tsv ds.tsv\n\n"
        "  genointerp kmerize reads.fq.gz --counts counts.tsv --count-k 21 --canonical"
    ),
)
def kmerize(req, result: dict) -> None:
    """Turn reads into overlapping k-mer tokens (a dataset for train-xvir) and/or count k-mers.

    Token id of a k-mer: A=0, C=1, G=2, T=3 with the first base most significant, so
    AAAAAA=0 and TTTTTT=4095 for k=6. Streams the input in batches of 65,536 reads.
    """

    stats, header = result["stats"], result["header"]
    kept = f"{stats.kept:,} of {stats.reads_in:,} reads tokenised" if (req.output or req.tsv) else f"{stats.reads_in:,} reads counted"
    dropped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in sorted(stats.dropped.items()) if n)
    log(kept + (f" (dropped: {dropped})" if dropped else ""))
    if header:
        log("labels: " + (", ".join(f"{lab} {n:,}" for lab, n in header["label_counts"].items()) or "none"))
