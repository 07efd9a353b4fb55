"""The host's bases behind a sample's copies per genome, whatever part of the sample is classified.

classify-reads counts the bases of the reads it does not call viral. With --unmapped-only it reads
only an alignment file's unmapped reads, so the host's own reads, mapped, would be left out and the
host depth be that of the few host reads that failed to map (ten or more times too low, the copies
as much too high). Their bases come from the BAM index instead: its mapped records per contig (what
`samtools idxstats` prints) times the bases per mapped record, read from up to SAMPLE records
spread over the contigs in proportion to their counts: a primary record adds its read's length
(hard clips included), a secondary or supplementary one nothing (the same read again). Where the
file holds no more than SAMPLE mapped records every one is read and the sum is exact; otherwise it
is an estimate whose error is that of a mean over SAMPLE reads (well under 1 % for reads of one
length). Contigs that name a virus (GRCh38's chrEBV, HPV16 of a host+virus reference) are not host.

A CRAM index holds no counts and a stream has no index: there the user gives --host-bases
(`samtools stats` prints the host's bases, see HOST_BASES_HINT), or the report is refused: a
wrong load is worse than none.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from genointerp.errors import InputError
from genointerp.io.inputs import is_stream
from genointerp.io.sequences import quiet_pysam, sniff_format
from genointerp.viral.panel import known_virus

SAMPLE = 20_000  # mapped records read for the bases per record
HOST_BASES_HINT = ("pass --host-bases N, the bases of the sample's mapped host reads (`samtools stats -F 0x904 FILE "
                   "| grep '^SN.*total length'`)")


@dataclass(frozen=True)
class MappedBases:
    """The bases of an alignment file's mapped host reads, from its index."""

    bases: int
    records: int  # mapped records on host contigs, by the index
    sampled: int  # of them read for the bases per record
    viral_records: dict[str, int]  # contig naming a virus -> its mapped records (neither host nor classified)
    reads: int = 0  # the mapped host reads (primary records): counted, or estimated as the bases are

    @property
    def exact(self) -> bool:
        return self.sampled == self.records


def mapped_host_bases(path: str, reference: str | None = None) -> MappedBases:
    """The mapped host reads' bases of `path` (see the module's docstring); none for FASTA/FASTQ,
    whose every read is classified. InputError where they cannot be known: a stream, a CRAM, a
    BAM without an index."""
    if is_stream(path):
        raise InputError(f"{path}: --unmapped-only leaves the mapped host reads out, and a stream has no index "
                         f"to count them from: {HOST_BASES_HINT}, or give the file")
    fmt = sniff_format(path)
    if fmt not in ("bam", "cram"):
        return MappedBases(0, 0, 0, {})
    if fmt == "cram":
        raise InputError(f"{path}: --unmapped-only leaves the mapped host reads out, and a CRAM index holds no read "
                         f"counts: {HOST_BASES_HINT}")
    try:
        with quiet_pysam().AlignmentFile(path, "rb", reference_filename=reference, check_sq=False) as fh:
            if not fh.has_index():
                raise InputError(f"{path}: --unmapped-only leaves the mapped host reads out, and the BAM has no "
                                 f"index to count them from: run `samtools index {path}`, or {HOST_BASES_HINT}")
            stats = [s for s in fh.get_index_statistics() if s.mapped]
            host = [(s.contig, s.mapped) for s in stats if not known_virus(s.contig)]
            viral = {s.contig: s.mapped for s in stats if known_virus(s.contig)}
            records = sum(n for _, n in host)
            bases = sampled = reads = 0
            for contig, n in host:
                quota = n if records <= SAMPLE else max(1, round(SAMPLE * n / records))
                for rec in islice((r for r in fh.fetch(contig) if not r.is_unmapped), quota):
                    sampled += 1
                    if not (rec.is_secondary or rec.is_supplementary):
                        bases += rec.infer_read_length() or rec.query_length
                        reads += 1
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read its index or mapped reads ({exc})") from None
    if sampled < records:
        bases = round(records * bases / sampled) if sampled else 0
        reads = round(records * reads / sampled) if sampled else 0
    return MappedBases(bases, records, sampled, viral, reads)


def sum_mapped(parts: list[MappedBases]) -> MappedBases:
    """The mapped host bases of several inputs together."""
    viral: dict[str, int] = {}
    for m in parts:
        for contig, n in m.viral_records.items():
            viral[contig] = viral.get(contig, 0) + n
    return MappedBases(sum(m.bases for m in parts), sum(m.records for m in parts), sum(m.sampled for m in parts),
                       viral, sum(m.reads for m in parts))
