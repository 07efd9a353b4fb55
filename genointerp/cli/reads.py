"""Reads panel: simulate-reads and kmerize (each builds its request and calls genointerp.job.execute)."""

from __future__ import annotations

from enum import Enum
from typing import List, Optional

import typer

from genointerp.cli.app import app
from genointerp.cli.common import REPORTER, log, parse_pairs
from genointerp.cli.options import force_option, number, seed_option

PANEL = "Reads"


@app.command(
    "simulate-reads",
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
def simulate_reads(
    source: List[str] = typer.Option(..., "-s", "--source", metavar="LABEL=PATH",
        help="Reference with its label: FASTA (plain/gzip/bgzip) or GenBank. Repeat for more; a label may repeat."),
    output: str = typer.Option(..., "-o", "--output", help="FASTQ out (read 1, or interleaved pairs); .gz compresses; - is stdout."),
    num_reads: Optional[int] = typer.Option(None, "-n", "--num-reads", min=1, help="Total reads (fragments when paired)."),
    count: List[str] = typer.Option([], "--count", metavar="LABEL=N", help="Reads for one label (instead of -n); give every label."),
    balance: bool = typer.Option(False, "--balance", help="Equal reads per label (default: proportional to reference length); with --fraction, among the labels without one."),
    fraction: List[str] = typer.Option([], "--fraction", metavar="LABEL=F", help="Fixed share of -n for a label, e.g. viral=0.001."),
    circular: List[str] = typer.Option([], "--circular", metavar="LABEL", help="Contigs of this label are circular (reads may span the origin)."),
    read_length: int = typer.Option(150, "-l", "--read-length", min=20, max=1000, help="Read length (bp)."),
    paired: bool = typer.Option(False, "--paired", help="Paired-end reads (with --output2, or interleaved in --output)."),
    output2: Optional[str] = typer.Option(None, "--output2", help="FASTQ for read 2 of pairs."),
    fragment_mean: float = typer.Option(400.0, "--fragment-mean", min=1, help="Mean fragment length (paired)."),
    fragment_sd: float = typer.Option(50.0, "--fragment-sd", min=0, help="Fragment length standard deviation (paired)."),
    profile: Optional[str] = typer.Option(None, "--profile", help="ART empirical Illumina profile for read 1 (default: built-in HiSeq 2500 150 bp)."),
    profile2: Optional[str] = typer.Option(None, "--profile2", help="ART profile for read 2 (default: --profile, else built-in R2)."),
    read_ins_rate: float = typer.Option(0.00009, "--read-ins-rate", min=0, max=0.1, help="Sequencing insertion rate per base."),
    read_del_rate: float = typer.Option(0.00011, "--read-del-rate", min=0, max=0.1, help="Sequencing deletion rate per base."),
    sub_rate: float = typer.Option(0.0, "--sub-rate", min=0, max=0.75, help="Mutate the references first: substitution rate (XVir used 0.0375-0.15)."),
    ins_rate: float = typer.Option(0.0, "--ins-rate", min=0, max=0.5, help="Mutate the references first: insertion rate."),
    del_rate: float = typer.Option(0.0, "--del-rate", min=0, max=0.5, help="Mutate the references first: deletion rate."),
    max_n_frac: float = typer.Option(0.05, "--max-n-frac", min=0, max=1, help="Skip reference windows with more N than this fraction of the read."),
    truth: Optional[str] = typer.Option(None, "--truth", help="Also write the truth as a TSV table (one row per read)."),
    insert: Optional[str] = typer.Option(None, "--insert", metavar="VIRAL=HOST", help="Insertion mode: integrate fragments of the VIRAL label's genomes into the HOST label's contigs (VIRUSBreakend's protocol); reads come from the host with its insertions at --depth, other labels from --count."),
    insertions: int = typer.Option(10, "--insertions", min=1, help="Insertion mode: how many fragments to integrate (two junctions each)."),
    insert_length: int = typer.Option(2000, "--insert-length", min=50, help="Insertion mode: length of each viral fragment (bp)."),
    host_deletion: int = typer.Option(10, "--host-deletion", min=0, help="Insertion mode: host bases deleted at each site."),
    depth: Optional[float] = typer.Option(None, "--depth", min=0.01, help="Insertion mode: read depth of the host (instead of -n)."),
    truth_bedpe: Optional[str] = typer.Option(None, "--truth-bedpe", help="Insertion mode: write the junctions as BEDPE (host first)."),
    sample: Optional[str] = typer.Option(None, "--sample", metavar="VIRAL=HOST", help="Sample mode: a tumour-like sample of the HOST label's reads (--count) holding the VIRAL label's genomes at --viral-load; each genome's reads are labelled VIRAL:CONTIG (e.g. viral:HPV16) in the names and the truth table."),
    viral_load: float = typer.Option(1.0, "--viral-load", min=0, help="Sample mode: viral copies per host haploid genome, all types together."),
    type_mix: List[str] = typer.Option([], "--type-mix", metavar="CONTIG=W", help="Sample mode: weight of a viral genome (repeatable); genomes not named get none (default: equal weights)."),
    host_genome_size: Optional[float] = typer.Option(None, "--host-genome-size", min=1, help="Sample mode: the host genome size the copies refer to (default: the HOST label's length)."),
    seed: int = seed_option("Random seed: same inputs and seed give byte-identical output."),
    force: bool = force_option("existing output files"),
) -> None:
    """Simulate Illumina-like short reads with ground truth in their names.

    Reads come from each labelled reference in proportion to its length (or --balance,
    --fraction, --count), with HiSeq 2500-like per-cycle qualities, matching substitution
    errors and rare indels. Names: LABEL|SERIAL|CONTIG|START|END|STRAND|ERRORS (docs/viral.md).
    """
    from genointerp.job import execute
    from genointerp.reads.simulate import SimulateReadsRequest, run

    def one_pair(value: str | None, option: str, what: str) -> tuple[str, str] | None:
        return None if value is None else parse_pairs([value], option, what)[0]

    req = SimulateReadsRequest(
        source=parse_pairs(source, "--source", "LABEL=PATH"), output=output, num_reads=num_reads,
        count={k: number(v, int, "--count", min_value=0) for k, v in parse_pairs(count, "--count", "LABEL=N")},
        balance=balance,
        fraction={k: number(v, float, "--fraction", min_value=0, max_value=1)
                  for k, v in parse_pairs(fraction, "--fraction", "LABEL=F")},
        circular=circular, read_length=read_length, paired=paired, output2=output2, fragment_mean=fragment_mean,
        fragment_sd=fragment_sd, profile=profile, profile2=profile2, read_ins_rate=read_ins_rate,
        read_del_rate=read_del_rate, sub_rate=sub_rate, ins_rate=ins_rate, del_rate=del_rate, max_n_frac=max_n_frac,
        truth=truth, insert=one_pair(insert, "--insert", "VIRAL=HOST"), insertions=insertions,
        insert_length=insert_length, host_deletion=host_deletion, depth=depth, truth_bedpe=truth_bedpe,
        sample=one_pair(sample, "--sample", "VIRAL=HOST"), viral_load=viral_load,
        type_mix={k: number(v, float, "--type-mix", min_value=0) for k, v in parse_pairs(type_mix, "--type-mix", "CONTIG=W")},
        host_genome_size=host_genome_size, seed=seed)
    per_label = execute(run, req, force, REPORTER)["reads_per_label"]
    log("simulated " + ", ".join(f"{n:,} {lab}" for lab, n in per_label.items()) + (" pairs" if paired else " reads"))


class NPolicy(str, Enum):
    drop = "drop"
    token = "token"


class ShortPolicy(str, Enum):
    drop = "drop"
    pad = "pad"


class LongPolicy(str, Enum):
    truncate = "truncate"
    tile = "tile"


@app.command(
    "kmerize",
    rich_help_panel=PANEL,
    epilog=(
        "Examples:\n\n"
        "  genointerp kmerize train.fq.gz --label-field 0 -o train.kmers\n\n"
        "  genointerp kmerize hpv.fq human.fq --label viral --label human -k 6 -o ds --tsv ds.tsv\n\n"
        "  genointerp kmerize reads.fq.gz --counts counts.tsv --count-k 21 --canonical"
    ),
)
def kmerize(
    inputs: List[str] = typer.Argument(..., metavar="READS...", help="FASTQ/FASTA files (gzip ok); - is stdin."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Dataset folder for train-xvir (tokens.npy, labels.npy, read_ids.txt, header.json)."),
    tsv: Optional[str] = typer.Option(None, "--tsv", help="Tokens as TSV for inspection (read_id, label, space-separated ids)."),
    counts: Optional[str] = typer.Option(None, "--counts", help="k-mer counts TSV (like jellyfish dump -c -t, sorted); counts every k-mer of every read."),
    k: int = typer.Option(6, "-k", "--k", help="k-mer size for tokens (1-7, ids are uint16)."),
    count_k: Optional[int] = typer.Option(None, "--count-k", help="k for --counts (1-31; default: -k)."),
    canonical: bool = typer.Option(False, "--canonical", help="Count canonical k-mers (k-mer or reverse complement, whichever is smaller; jellyfish -C)."),
    length: int = typer.Option(150, "--length", min=1, max=100_000, help="Model read length in bases: tokens per read = length - k + 1."),
    n_policy: NPolicy = typer.Option(NPolicy.drop, "--n-policy", help="Reads with N/IUPAC letters: drop them (XVir) or use the UNKNOWN token (4^k)."),
    short: ShortPolicy = typer.Option(ShortPolicy.drop, "--short", help="Reads shorter than --length: drop, or pad with the PAD token (4^k+1)."),
    long: LongPolicy = typer.Option(LongPolicy.truncate, "--long", help="Reads longer than --length: keep the first --length bases, or tile into consecutive pieces (ids get #0, #1, ...)."),
    label: List[str] = typer.Option([], "--label", help="Label of each input file, in order (give one per input)."),
    truth: Optional[str] = typer.Option(None, "--truth", help="Labels from a truth TSV (read_id, label columns; simulate-reads --truth)."),
    label_field: Optional[int] = typer.Option(None, "--label-field", min=0, help="Labels from this 0-based field of the read name (simulate-reads names: 0)."),
    label_sep: str = typer.Option("|", "--label-sep", help="Read-name field separator for --label-field."),
    force: bool = force_option(),
) -> None:
    """Turn reads into overlapping k-mer tokens (a dataset for train-xvir) and/or count k-mers.

    Token id of a k-mer: A=0, C=1, G=2, T=3 with the first base most significant, so
    AAAAAA=0 and TTTTTT=4095 for k=6. Streams the input in batches of 65,536 reads.
    """
    from genointerp.job import execute
    from genointerp.reads.kmerize import KmerizeRequest, run

    req = KmerizeRequest(inputs, output=output, tsv=tsv, counts=counts, k=k, count_k=count_k, canonical=canonical,
                         length=length, n_policy=n_policy.value, short=short.value, long=long.value, label=label,
                         truth=truth, label_field=label_field, label_sep=label_sep)
    result = execute(run, req, force, REPORTER)
    stats, header = result["stats"], result["header"]
    kept = f"{stats.kept:,} of {stats.reads_in:,} reads tokenised" if (output or tsv) else f"{stats.reads_in:,} reads counted"
    dropped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in sorted(stats.dropped.items()) if n)
    log(kept + (f" (dropped: {dropped})" if dropped else ""))
    if header:
        log("labels: " + (", ".join(f"{lab} {n:,}" for lab, n in header["label_counts"].items()) or "none"))
