"""Make the viral-load fixtures in test-data/viral_load/ (run from the repository root).

    python test-data/make_viral_load_data.py

One tumour-like sample with a known viral load, as reads and as an aligned BAM (three files).
Needs ../shared/data (HPV16's genome: viral/hpv_genomes.fa, record HPV16, 7,906 bp); the host is
test-data/chr20_slice.fa.gz (100,000 bp of GRCh37 chr20, contig `20`; its first 1,000 bp are N).
- sample.fq.gz: `genointerp simulate-reads --seed 4`, 150 bp single-end reads: 2,000 human reads
  of chr20_slice.fa.gz (host depth 2,000 x 150 / 100,000 = 3.0x) and 632 HPV16 reads (--circular;
  viral depth 632 x 150 / 7,906 = 11.99x), so the planted load is
      copies per host haploid genome = (632 x 150 / 7,906) / (2,000 x 150 / 100,000) = 3.997
  with a host genome size of 100,000 bp (3.957 with the 99,000 bp that are not N). Read names are
  simulate-reads' truth: LABEL|SERIAL|CONTIG|START|END|STRAND|ERRORS (START 0-based, END exclusive).
- sample.bam (+ sample.bam.bai): the same reads aligned to chr20_slice.fa.gz by mappy (minimap2,
  preset "sr"), primary alignments only (no secondary or supplementary records): mapped reads with
  their CIGAR (soft clips), MAPQ, NM (mappy's) and MD (worked out here from the slice: mappy's MD
  can end in a mismatch without the closing 0), reverse-strand reads stored reverse-complemented
  with their qualities reversed; reads with no hit (the HPV16 reads, and any human read that
  fails) as unmapped records (flag 4, no position) after the mapped ones, as `samtools sort`
  leaves them. Coordinate-sorted (ties: forward strand first, then FASTQ order; the same record
  order as `samtools sort`), indexed; header @HD SO:coordinate, @SQ 20 LN:100000, @RG ID:sample
  SM:viral_load (every record carries RG:Z:sample) and @PG (mappy). Read names exactly as in the
  FASTQ.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mappy
import pysam

from make_viral_report_data import records  # this folder is the script's sys.path[0]

HERE = Path(__file__).resolve().parent
OUT = HERE / "viral_load"
SHARED = Path(os.environ.get("SHARED", HERE.parent.parent / "shared" / "data"))
GENOINTERP = str(Path(sys.executable).parent / "genointerp")
HOST = HERE / "chr20_slice.fa.gz"
HUMAN_READS, HPV16_READS, SEED = 2000, 632, 4


def fastq(path: Path):
    with gzip.open(path, "rt") as fh:
        while header := fh.readline():
            seq, _, qual = fh.readline().strip(), fh.readline(), fh.readline().strip()
            yield header[1:].split()[0], seq, qual


def md_tag(ref: str, cigar: list[tuple[int, int]], seq: str) -> str:
    """SAM's MD string of one alignment (ref: the reference from its start; seq: SEQ as stored)."""
    out, run, r, q = [], 0, 0, 0
    for op, n in cigar:
        if op == 0:  # M
            for i in range(n):
                if seq[q + i].upper() == ref[r + i].upper():
                    run += 1
                else:
                    out.append(f"{run}{ref[r + i].upper()}")
                    run = 0
            r, q = r + n, q + n
        elif op in (1, 4):  # I, S
            q += n
        elif op == 2:  # D
            out.append(f"{run}^{ref[r:r + n].upper()}")
            run, r = 0, r + n
    return "".join(out) + str(run)


def simulate() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        hpv16 = Path(tmp) / "hpv16.fa"
        hpv16.write_text(records(SHARED / "viral" / "hpv_genomes.fa", {"HPV16"}))
        subprocess.run([GENOINTERP, "simulate-reads", "-s", f"human={HOST}", "-s", f"hpv16={hpv16}",
                        "--circular", "hpv16", "--count", f"human={HUMAN_READS}", "--count", f"hpv16={HPV16_READS}",
                        "-l", "150", "--seed", str(SEED), "-o", str(OUT / "sample.fq.gz"), "--force"], check=True)


def align() -> None:
    aligner = mappy.Aligner(str(HOST), preset="sr")
    if not aligner:
        sys.exit(f"mappy could not index {HOST}")
    contigs = {name: len(aligner.seq(name)) for name in aligner.seq_names}
    header = {"HD": {"VN": "1.6", "SO": "coordinate"},
              "SQ": [{"SN": name, "LN": length} for name, length in contigs.items()],
              "RG": [{"ID": "sample", "SM": "viral_load", "PL": "ILLUMINA"}],
              "PG": [{"ID": "mappy", "PN": "mappy", "VN": mappy.__version__,
                      "CL": "test-data/make_viral_load_data.py: mappy.Aligner(chr20_slice.fa.gz, preset='sr'), primary hits"}]}
    mapped, unmapped = [], []
    for order, (name, seq, qual) in enumerate(fastq(OUT / "sample.fq.gz")):
        hit = next((h for h in aligner.map(seq) if h.is_primary), None)
        quals = pysam.qualitystring_to_array(qual)
        if hit is None:
            unmapped.append((name, seq, quals, None))
            continue
        reverse = hit.strand < 0
        left, right = (len(seq) - hit.q_en, hit.q_st) if reverse else (hit.q_st, len(seq) - hit.q_en)
        cigar = (f"{left}S" if left else "") + hit.cigar_str + (f"{right}S" if right else "")
        if reverse:
            seq, quals = mappy.revcomp(seq), quals[::-1]
        mapped.append(((hit.ctg, hit.r_st, reverse, order), (name, seq, quals, (hit, cigar, reverse))))
    mapped.sort(key=lambda item: (list(contigs).index(item[0][0]),) + item[0][1:])
    bam = OUT / "sample.bam"
    with pysam.AlignmentFile(str(bam), "wb", header=header) as out:
        for name, seq, quals, hit in [rec for _, rec in mapped] + unmapped:
            a = pysam.AlignedSegment(out.header)
            a.query_name = name
            a.query_sequence = seq
            a.query_qualities = quals
            if hit is None:
                a.flag = 4
                a.reference_id = a.next_reference_id = -1
                a.reference_start = a.next_reference_start = -1
                a.mapping_quality = 0
                a.set_tags([("RG", "sample", "Z")])
            else:
                h, cigar, reverse = hit
                a.flag = 16 if reverse else 0
                a.reference_name = h.ctg
                a.reference_start = h.r_st
                a.mapping_quality = h.mapq
                a.cigarstring = cigar
                a.next_reference_id, a.next_reference_start = -1, -1
                md = md_tag(aligner.seq(h.ctg, h.r_st, h.r_en), a.cigartuples, seq)
                a.set_tags([("NM", h.NM, "i"), ("MD", md, "Z"), ("RG", "sample", "Z")])
            out.write(a)
    pysam.index(str(bam))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    simulate()
    align()


if __name__ == "__main__":
    main()
