"""Genotype dosages from VCF/BCF, streamed one site at a time.

pysam opens and validates the file (header, samples, FORMAT definitions, BGZF/tabix); the records
are then read as text and their GT fields parsed with numpy, because pysam's per-sample access
(`rec.samples[s]["GT"]`) costs microseconds per call: minutes per site batch at 10,000 samples.

Dosage conventions (int8, one value per selected sample):

- diploid GT (`a/b` or `a|b`): the number of non-REF alleles, 0, 1 or 2. At a multi-allelic site
  every ALT counts the same (dosage = copies of any non-REF allele; the site is not split);
- haploid GT (`a`, e.g. male chrX): scaled x2, 0 or 2, as a homozygous diploid call, so that
  haploid and diploid carriers of the allele sit at the same dosage;
- missing (`.`, `./.`, or one missing allele `0/.`): MISSING (-1); the caller imputes;
- polyploid calls: the non-REF count scaled to two copies and rounded ((ALT / ploidy) * 2).

The fast path takes a line whose FORMAT is `GT` and every call is 3 bytes (`0/1`, `1|0`, `./.`):
the sample columns are viewed as an (n_samples, 4) byte array. Anything else (FORMAT `GT:DP:...`,
allele numbers >= 10, haploid calls) goes through a per-sample fallback that reads the GT subfield.
BCF has no text form on disk: its records are rendered with `str(record)` (slower).
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from genointerp.errors import InputError

MISSING = -1
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_TAB, _ZERO, _DOT, _SLASH, _PIPE = ord("\t"), ord("0"), ord("."), ord("/"), ord("|")


@dataclass
class Site:
    """One VCF record: dosage is int8 (n_selected,), MISSING where the call is missing."""

    chrom: str
    pos: int  # 1-based, as in the VCF
    ref: str
    alt: str  # the ALT column as written (comma-separated at multi-allelic sites)
    dosage: np.ndarray


class VcfGenotypes:
    """Open a VCF/BCF and stream dosages of `samples` (default: all, in VCF order).

    `samples` may be in any order; the rows of every Site.dosage follow `self.samples`, which is
    the VCF order of the selected samples. Unknown sample names are an InputError naming one.
    """

    def __init__(self, path: str, samples: list[str] | None = None) -> None:
        import pysam

        self.path = path
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file")
        quiet = pysam.set_verbosity(0)  # htslib's own stderr lines (e.g. "no index file") would break one-line errors
        try:
            with pysam.VariantFile(path) as vf:
                header = vf.header
                self.format = vf.format  # 'VCF' or 'BCF'
                self.compression = vf.compression  # 'NONE', 'GZIP', 'BGZF'
                all_samples = list(header.samples)
                has_gt = "GT" in header.formats
                self.contigs = list(header.contigs)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable VCF/BCF ({exc})") from None
        finally:
            pysam.set_verbosity(quiet)
        if not all_samples:
            raise InputError(f"{path}: the VCF has no sample columns")
        if not has_gt:
            raise InputError(f"{path}: no GT field in the FORMAT definitions (genotype calls are needed)")
        if self.compression == "BGZF" and not _has_bgzf_eof(path):
            raise InputError(f"{path}: truncated (no BGZF end-of-file block)")
        self.all_samples = all_samples
        where = {s: i for i, s in enumerate(all_samples)}
        if samples is not None:
            missing = [s for s in samples if s not in where]
            if missing:
                raise InputError(f"{path}: {len(missing)} requested sample(s) not in the VCF, e.g. {missing[0]!r}")
            wanted = set(samples)
            self.samples = [s for s in all_samples if s in wanted]
        else:
            self.samples = list(all_samples)
        self.columns = np.array([where[s] for s in self.samples], dtype=np.int64)
        self._all = len(self.samples) == len(all_samples)

    def __iter__(self) -> Iterator[Site]:
        n = len(self.all_samples)
        last: tuple[str, int] = ("", 0)
        seen_chroms: set[str] = set()
        count = 0
        for lineno, line in self._lines():
            fields = line.split(b"\t", 9)
            if len(fields) < 10:
                raise InputError(f"{self.path}: line {lineno}: {len(fields)} columns, expected 9 + {n} samples "
                                 "(truncated or malformed record)")
            chrom = fields[0].decode()
            try:
                pos = int(fields[1])
            except ValueError:
                raise InputError(f"{self.path}: line {lineno}: POS {fields[1][:20].decode(errors='replace')!r} is not a number") from None
            if chrom != last[0]:
                if chrom in seen_chroms:
                    raise InputError(f"{self.path}: line {lineno}: chromosome {chrom} appears in two blocks; sort the VCF (bcftools sort)")
                seen_chroms.add(chrom)
            elif pos < last[1]:
                raise InputError(f"{self.path}: line {lineno}: {chrom}:{pos} comes after {chrom}:{last[1]}; sort the VCF (bcftools sort)")
            last = (chrom, pos)
            dosage = parse_gt(fields[8], fields[9], n)
            if dosage is None:
                raise InputError(f"{self.path}: line {lineno} ({chrom}:{pos}): malformed genotype columns "
                                 f"(expected {n} samples with a GT field first in FORMAT)")
            if not self._all:
                dosage = dosage[self.columns]
            count += 1
            yield Site(chrom, pos, fields[3].decode(), fields[4].decode(), dosage)
        if count == 0:
            raise InputError(f"{self.path}: no variant records")

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, record line without the newline) for every data line."""
        if self.format == "BCF":
            import pysam

            with pysam.VariantFile(self.path) as vf:
                for i, rec in enumerate(vf, start=1):
                    yield i, str(rec).rstrip("\n").encode()
            return
        opener = open if self.compression == "NONE" else gzip.open
        lineno = 0
        try:
            with opener(self.path, "rb") as raw, io.BufferedReader(raw, buffer_size=1 << 22) as fh:
                for line in fh:
                    lineno += 1
                    if line.startswith(b"#"):
                        continue
                    if not line.endswith(b"\n"):
                        # the last line of a well-formed file may lack its newline; a cut one
                        # fails the column count check in parse_gt
                        yield lineno, line.rstrip(b"\r")
                        continue
                    yield lineno, line[:-1].rstrip(b"\r")
        except (EOFError, gzip.BadGzipFile, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise InputError(f"{self.path}: line {lineno + 1}: truncated or damaged compressed data ({exc})") from None


def _has_bgzf_eof(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() < len(BGZF_EOF):
            return False
        fh.seek(-len(BGZF_EOF), os.SEEK_END)
        return fh.read() == BGZF_EOF


def parse_gt(fmt: bytes, samples: bytes, n: int) -> np.ndarray | None:
    """Dosages int8 (n,) from the FORMAT column and the sample columns of one record, or None
    when the columns are malformed (wrong sample count, no GT first, unreadable allele)."""
    if fmt == b"GT" and len(samples) == 4 * n - 1:
        fast = _parse_gt3(samples, n)
        if fast is not None:
            return fast
    return _parse_gt_general(fmt, samples, n)


def _call_tables() -> tuple[np.ndarray, np.ndarray]:
    """Lookup tables over little-endian uint16 byte pairs of a 4-byte call `a sep b tab`:
    FIRST[(sep << 8) | a] and SECOND[(tab << 8) | b] give 0 (REF), 1 (ALT), _GAP (missing allele)
    or _BAD (anything else), so that FIRST + SECOND is the dosage when below _GAP."""
    first = np.full(1 << 16, _BAD, dtype=np.int16)
    second = np.full(1 << 16, _BAD, dtype=np.int16)
    for code in range(_ZERO, _ZERO + 10):
        value = 0 if code == _ZERO else 1
        for sep in (_SLASH, _PIPE):
            first[(sep << 8) | code] = value
        second[(_TAB << 8) | code] = value
    for sep in (_SLASH, _PIPE):
        first[(sep << 8) | _DOT] = _GAP
    second[(_TAB << 8) | _DOT] = _GAP
    return first, second


_GAP, _BAD = 64, 4096
_FIRST, _SECOND = _call_tables()


def _parse_gt3(samples: bytes, n: int) -> np.ndarray | None:
    """Fast path: every call is `a/b` or `a|b` with one-character alleles. Two table lookups per
    call on the bytes viewed as uint16 pairs validate the layout and give the dosage at once."""
    pairs = np.frombuffer(samples + b"\t", dtype="<u2")
    d = _FIRST[pairs[0::2]] + _SECOND[pairs[1::2]]
    if d.max() >= _BAD:
        return None
    d[d >= _GAP] = MISSING
    return d.astype(np.int8)


def _parse_gt_general(fmt: bytes, samples: bytes, n: int) -> np.ndarray | None:
    """Per-sample fallback: GT is the first FORMAT key (VCF 4.x requires it), any ploidy."""
    if fmt.split(b":", 1)[0] != b"GT":
        return None
    calls = samples.split(b"\t")
    if len(calls) != n:
        return None
    out = np.empty(n, dtype=np.int8)
    for i, call in enumerate(calls):
        gt = call.split(b":", 1)[0]
        if len(gt) == 1:  # haploid
            if gt == b".":
                out[i] = MISSING
            elif gt.isdigit():
                out[i] = 0 if gt == b"0" else 2
            else:
                return None
            continue
        alleles = gt.replace(b"|", b"/").split(b"/")
        if any(a == b"." for a in alleles):
            out[i] = MISSING
            continue
        if not all(a.isdigit() for a in alleles):
            return None
        alt = sum(a != b"0" and int(a) != 0 for a in alleles)
        out[i] = alt if len(alleles) == 2 else int(round(2 * alt / len(alleles)))
    return out
