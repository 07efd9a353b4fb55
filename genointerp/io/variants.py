"""Variant alleles of a VCF/BCF checked against a reference FASTA, for scoring sequence changes.

Each ALT of a record is one allele. An allele is scorable when REF and ALT are A/C/G/T only
(upper or lower case), neither is longer than MAX_INDEL + 1 bases (an indel of up to MAX_INDEL bp
with its anchor base; SNVs, MNPs and short complex substitutions pass too), its contig is in the
FASTA (`chr20` <-> `20` aliased with one warning) and REF equals the FASTA there. Anything else
is skipped with one of the reasons in SKIP_REASONS; a caller counts and reports them, never
scores them.

Only the constants load at import (the CLI reads MAX_INDEL); numpy and pysam load when used.

The file is read with pysam (VCF plain, gzip or bgzip, or BCF); its errors become one InputError
line naming the file and the record. A bgzipped file without its end-of-file block is refused
as truncated before any record is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from genointerp.errors import InputError
from genointerp.io.chroms import chrom_alias
from genointerp.io.inputs import check_gzip_intact, check_readable, compression, is_stream, wrong_kind
from genointerp.io.bgzf import has_bgzf_eof

MAX_INDEL = 50  # bp: longer insertions and deletions are skipped (`too_long`)

# reason -> what it means; the order summaries and logs list them in
SKIP_REASONS = {
    "symbolic": "symbolic, breakend, '*' or missing ALT",
    "not_acgt": "REF or ALT with a base other than A, C, G, T",
    "too_long": f"REF or ALT longer than {MAX_INDEL + 1} bases (an indel over {MAX_INDEL} bp)",
    "unknown_contig": "contig not in the FASTA",
    "ref_mismatch": "REF disagrees with the FASTA",
    "contig_end": "the model's window runs past the contig's end",
}

_ACGT = frozenset("ACGT")


@dataclass(frozen=True)
class Allele:
    """One ALT of a record. pos0 is 0-based (the VCF's POS - 1); chrom is the reference's name."""

    chrom: str
    pos0: int
    ref: str  # upper case
    alt: str  # upper case
    vcf_chrom: str  # as the VCF spells it (the outputs keep it)
    vcf_id: str  # the ID column ('.' when none)

    @property
    def where(self) -> str:
        return f"{self.vcf_chrom}:{self.pos0 + 1} {self.ref}>{self.alt}"


@dataclass
class Record:
    """A VCF record: its text line (no newline), and per ALT an Allele or a skip reason."""

    index: int  # 0-based record number
    line: str
    alleles: list  # Allele | str (a SKIP_REASONS key)


def open_variants(path: str):
    """pysam.VariantFile of `path`, refused with one line when missing, truncated or unreadable."""
    import pysam

    check_readable(path)
    if not is_stream(path) and compression(path) == "BGZF" and not has_bgzf_eof(path):
        raise InputError(f"{path}: truncated (no BGZF end-of-file block)")
    quiet = pysam.set_verbosity(0)
    try:
        return pysam.VariantFile(path)
    except (OSError, ValueError):
        _intact(path)
        raise wrong_kind(path, "a readable VCF/BCF") from None
    finally:
        pysam.set_verbosity(quiet)


def _intact(path: str) -> None:
    """The one-line error of cut-off or corrupt gzip data, which htslib reports as a parse error."""
    if not is_stream(path):
        check_gzip_intact(path)


def header_text(vf) -> str:
    """The file's header as VCF text (as read, before any record: pysam adds to it while reading)."""
    return str(vf.header)


def records(vf, path: str, ref, warn: Callable[[str], None]) -> Iterator[Record]:
    """The records of open VariantFile `vf`, each ALT checked against Reference `ref`. Errors
    while reading become InputError naming the record after the last one read."""
    import pysam

    index, last = 0, "the header"
    quiet = pysam.set_verbosity(0)
    it = iter(vf)
    try:
        while True:
            try:
                rec = next(it)
            except StopIteration:
                return
            except (OSError, ValueError) as exc:
                _intact(path)
                raise InputError(f"{path}: record {index + 1} (after {last}): malformed or truncated VCF ({exc})") from None
            line = str(rec).rstrip("\n")
            yield Record(index, line, check_alleles(rec, ref, path, warn))
            last = f"{rec.chrom}:{rec.pos}"
            index += 1
    finally:
        pysam.set_verbosity(quiet)


def check_alleles(rec, ref, path: str, warn: Callable[[str], None]) -> list:
    """Per ALT of pysam record `rec`: an Allele, or the reason it is skipped."""
    alts = rec.alts or (".",)
    ref_allele = (rec.ref or "").upper()
    chrom = chrom_alias(rec.chrom, ref.lengths)
    if chrom is not None:
        chrom = ref.resolve(rec.chrom, path, warn)
    pos0 = rec.pos - 1
    fasta_matches: bool | None = None  # looked up once per record, when an ALT needs it
    out: list = []
    for alt in alts:
        a = alt.upper()
        if a in (".", "*", "<*>", "<NON_REF>") or a.startswith("<") or "[" in a or "]" in a \
                or a.startswith(".") or a.endswith("."):
            out.append("symbolic")
        elif not (set(a) <= _ACGT and ref_allele and set(ref_allele) <= _ACGT):
            out.append("not_acgt")
        elif max(len(a), len(ref_allele)) > MAX_INDEL + 1:
            out.append("too_long")
        elif chrom is None:
            out.append("unknown_contig")
        else:
            if fasta_matches is None:
                fasta_matches = ref_matches(ref, chrom, pos0, ref_allele)
            out.append(Allele(chrom, pos0, ref_allele, a, rec.chrom, rec.id or ".") if fasta_matches else "ref_mismatch")
    return out


def ref_matches(ref, chrom: str, pos0: int, allele: str) -> bool:
    """Whether the FASTA holds `allele` (upper-case ACGT) at chrom:pos0 (soft-masked lower case
    counts; N or a position off the contig does not)."""
    import numpy as np

    from genointerp.seq.alphabet import encode

    if pos0 < 0 or pos0 + len(allele) > ref.lengths[chrom]:
        return False
    return bool(np.array_equal(ref.codes(chrom, pos0, pos0 + len(allele)), encode(allele)))


def fasta_bases(ref, chrom: str, pos0: int, n: int) -> str:
    """The FASTA's n bases at chrom:pos0 as text (for messages)."""
    from genointerp.seq.alphabet import decode

    return decode(ref.codes(chrom, pos0, pos0 + n)).decode()
