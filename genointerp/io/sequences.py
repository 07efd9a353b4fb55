"""Sequence files in: FASTA/FASTQ through pysam (plain, gzip, bgzip, `-`), GenBank through Biopython.

pysam's parser (htslib kseq) is lenient: it returns a FASTQ record cut off before its quality
line as if it were FASTA, and yields nothing for a text file that is neither format. The readers
here add the checks a pipeline needs, so that such files fail with one line naming the file and
record instead of producing silently wrong data.
"""

from __future__ import annotations

import gzip
import os
from typing import Iterator

import pysam

from genointerp.errors import InputError

pysam.set_verbosity(0)  # htslib's own stderr chatter would duplicate our one-line errors

GZIP_MAGIC = b"\x1f\x8b"
STDIN = "-"


def _check_readable(path: str) -> None:
    if path == STDIN:
        return
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a folder, not a file")


def sniff_format(path: str) -> str | None:
    """Return 'fasta', 'fastq' or 'genbank' from the first bytes of a file (None for stdin).

    Refuses a `.gz` name whose content is not gzip and a gzip stream that cannot be inflated.
    """
    _check_readable(path)
    if path == STDIN:
        return None
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(4096)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: not a valid gzip file ({exc})") from None
    elif path.endswith(".gz"):
        raise InputError(f"{path}: file name ends in .gz but the content is not gzip-compressed")
    else:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    text = head.lstrip()
    if not text:
        raise InputError(f"{path}: file is empty")
    if text.startswith(b">"):
        return "fasta"
    if text.startswith(b"@"):
        return "fastq"
    if text.startswith(b"LOCUS"):
        return "genbank"
    raise InputError(f"{path}: not FASTA, FASTQ or GenBank (first line starts with {text[:20]!r})")


def iter_records(path: str) -> Iterator[tuple[str, str, str | None]]:
    """Yield (name, sequence, quality or None) for every FASTA/FASTQ record, validated.

    Sequences are returned as written (case and letters untouched): what to do with lower case,
    N and IUPAC letters is the caller's policy. Raises InputError on empty, truncated or
    malformed input.
    """
    fmt = sniff_format(path)
    if fmt == "genbank":
        raise InputError(f"{path}: GenBank is accepted for references only; reads must be FASTA/FASTQ")
    n = 0
    name = None
    try:
        with pysam.FastxFile(path, persist=False) as fx:
            for rec in fx:
                n += 1
                name, seq, qual = rec.name, rec.sequence, rec.quality
                if fmt is None:  # stdin: the first record decides
                    fmt = "fastq" if qual is not None else "fasta"
                if fmt == "fastq":
                    if qual is None:
                        raise InputError(f"{path}: record {n} ({name}): truncated FASTQ record (no quality line)")
                    if len(qual) != len(seq):
                        raise InputError(
                            f"{path}: record {n} ({name}): sequence length {len(seq)} "
                            f"but quality length {len(qual)}"
                        )
                elif qual is not None:
                    raise InputError(f"{path}: record {n} ({name}): FASTQ record inside a FASTA file")
                if not seq:
                    raise InputError(f"{path}: record {n} ({name}): empty sequence")
                yield name, seq, qual
    except ValueError as exc:  # htslib parse errors, e.g. quality string shorter than sequence
        where = f"after record {n} ({name})" if n else "at the first record"
        msg = str(exc).replace(f" in {path}", "")
        raise InputError(f"{path}: malformed {fmt or 'FASTA/FASTQ'} {where}: {msg}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    if n == 0:
        raise InputError(f"{path}: no FASTA/FASTQ records found")


def read_reference(path: str) -> list[tuple[str, str]]:
    """Read every record of a reference (FASTA plain/gzip/bgzip or GenBank flat file).

    Returns [(contig name, sequence as written)]. Names are the first word of the header
    (FASTA) or the accession.version (GenBank).
    """
    fmt = sniff_format(path)
    if fmt == "fastq":
        raise InputError(f"{path}: this is FASTQ; a reference must be FASTA or GenBank")
    if fmt == "genbank":
        return _read_genbank(path)
    records = [(name, seq) for name, seq, _ in iter_records(path)]
    _check_unique_names(path, records)
    return records


def _read_genbank(path: str) -> list[tuple[str, str]]:
    from Bio import SeqIO  # Biopython is only needed for GenBank references

    opener = gzip.open if path.endswith(".gz") else open
    records = []
    try:
        with opener(path, "rt") as fh:
            for rec in SeqIO.parse(fh, "genbank"):
                try:
                    seq = str(rec.seq)
                except Exception:  # Biopython raises UndefinedSequenceError for CONTIG-only records
                    raise InputError(f"{path}: record {rec.id}: GenBank record has no ORIGIN sequence") from None
                if not seq:
                    raise InputError(f"{path}: record {rec.id}: empty sequence")
                records.append((rec.id, seq))
    except ValueError as exc:
        raise InputError(f"{path}: malformed GenBank file ({exc})") from None
    if not records:
        raise InputError(f"{path}: no GenBank records found")
    _check_unique_names(path, records)
    return records


def _check_unique_names(path: str, records: list[tuple[str, str]]) -> None:
    seen: set[str] = set()
    for name, _ in records:
        if name in seen:
            raise InputError(f"{path}: contig name {name!r} appears twice")
        seen.add(name)


def is_alignment_file(path: str) -> bool:
    """BAM or CRAM, told by magic bytes (BAM is BGZF-compressed 'BAM\\1', CRAM starts with 'CRAM')."""
    if path == STDIN or not os.path.isfile(path):
        return False
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head == b"CRAM":
        return True
    if head[:2] == GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read(4) == b"BAM\x01"
        except (OSError, EOFError):
            return False
    return False


def iter_alignment_reads(path: str, unmapped_only: bool, reference: str | None = None) -> Iterator[tuple[str, str, str | None]]:
    """Yield (name, sequence, quality) of each read of a BAM/CRAM once (primary records only).

    Mates get /1, /2 suffixes. Reads on the reverse strand are stored reverse-complemented by the
    aligner; they are yielded as stored (orientation does not matter to a k-mer classifier
    trained on both strands).
    """
    try:
        fh = pysam.AlignmentFile(path, "rc" if path.endswith(".cram") else "rb", reference_filename=reference,
                                 check_sq=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot open as BAM/CRAM ({exc})") from None
    n = 0
    try:
        with fh:
            for rec in fh.fetch(until_eof=True):
                if rec.is_secondary or rec.is_supplementary or (unmapped_only and not rec.is_unmapped):
                    continue
                seq = rec.query_sequence
                if not seq:
                    continue
                name = rec.query_name + ("/1" if rec.is_read1 else "/2" if rec.is_read2 else "")
                qual = rec.qual
                n += 1
                yield name, seq, qual
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: malformed or truncated alignment file after {n} reads ({exc})") from None
