"""Genotype dosages from VCF/BCF, streamed one site at a time.

A text VCF is read once, front to back, through `io.inputs.open_binary` (plain, gzip or bgzip by
magic bytes; a file, `-` or a pipe): its header gives the samples, the GT definition and the
contigs, and its records are parsed with numpy, because pysam's per-sample access
(`rec.samples[s]["GT"]`) costs microseconds per call: minutes per site batch at 10,000 samples.
htslib is not used for text: it cannot seek in plain gzip, and a pipe cannot be opened twice. A
BCF (binary) is opened by pysam and must be a file.

Nor is cyvcf2 (htslib's parser, genotypes into numpy): it gives the same dosage matrices, but
4.1-4.7x slower on the 1000 Genomes VCF (379 samples x 2,000 SNPs) and 15-16x slower with its samples
tiled to 9,854 (benchmarks/formats.py, "VCF GT -> dosages"), through `genotype.array()`, which
haploid, polyploid and multi-allelic calls need; its `gt_types`, right only where every call is
diploid and biallelic, is still 2.1-2.7x and 7.7-8.5x slower. htslib parses every FORMAT field of every
sample into its own arrays; the fast path below looks at each call's 4 bytes once.

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

For the VCFs the commands write (find-integrations' junctions, score-variants' scores):
`vcf_text` percent-encodes an INFO value and `tabix_vcf` indexes the file, through pysam's htslib.
"""

from __future__ import annotations

import io
import re
from contextlib import ExitStack
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import numpy as np

from genointerp.errors import InputError
from genointerp.io.bgzf import has_bgzf_eof
from genointerp.io.inputs import (GZIP_ERRORS, check_readable, compression, first_duplicate, is_stream, open_binary,
                                  wrong_kind)

MISSING = -1
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

    A text VCF (plain, gzip or bgzip; a file, `-` or a pipe) is opened once, through
    `io.inputs.open_binary`: the header is read in the constructor and the records are streamed
    from the same handle, so plain gzip (which htslib cannot seek in) and inputs that can be read
    only once work. A BCF goes through pysam and must be a file. Use as a context manager (or
    call `close`) when the records may not be read to the end.
    """

    def __init__(self, path: str, samples: list[str] | None = None) -> None:
        self.path = path = str(path)
        check_readable(path)
        self.format = "VCF"
        self.compression: str | None = None  # 'NONE', 'GZIP' or 'BGZF' for a file; None for a stream
        self._stack = ExitStack()
        self._data: BinaryIO | None = None
        self._lineno = 0
        self.duplicates = 0  # exact duplicate records skipped while iterating
        try:
            self._open()
            self._select(samples)
        except BaseException:
            self.close()
            raise

    def _select(self, samples: list[str] | None) -> None:
        path = self.path
        if not self.all_samples:
            raise InputError(f"{path}: the VCF has no sample columns")
        if not self._has_gt:
            raise InputError(f"{path}: no GT field in the FORMAT definitions (genotype calls are needed)")
        where = {s: i for i, s in enumerate(self.all_samples)}
        if samples is not None:
            missing = [s for s in samples if s not in where]
            if missing:
                raise InputError(f"{path}: {len(missing)} requested sample(s) not in the VCF, e.g. {missing[0]!r}")
            wanted = set(samples)
            self.samples = [s for s in self.all_samples if s in wanted]
        else:
            self.samples = list(self.all_samples)
        self.columns = np.array([where[s] for s in self.samples], dtype=np.int64)
        self._all = len(self.samples) == len(self.all_samples)

    def __enter__(self) -> "VcfGenotypes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._data = None
        self._stack.close()

    def _open(self) -> None:
        """Open the input, read its header (samples, GT definition, contigs) and keep the handle
        positioned at the first record (text VCF) or hand the file to pysam (BCF)."""
        path = self.path
        stream = is_stream(path)
        if not stream:
            self.compression = compression(path)
            if self.compression == "BGZF" and not has_bgzf_eof(path):
                raise InputError(f"{path}: truncated (no BGZF end-of-file block)")
        data = self._stack.enter_context(open_binary(path))
        data = io.BufferedReader(data, 1 << 22)  # type: ignore[arg-type]  # records of 10,000 samples are 40 kB lines
        self._stack.callback(data.detach)  # detached, not closed: open_binary closes what it opened (never stdin)
        try:
            first = data.readline(1 << 16)
            if first.startswith(b"BCF"):
                if stream:
                    raise InputError(f"{path}: a BCF cannot be read from a pipe or stdin (htslib needs the file); "
                                     "give the file's name, or pipe VCF text (bcftools view -Ov)")
                self._stack.close()
                self._stack = ExitStack()
                self._open_bcf()
                return
            if not first.startswith(b"##fileformat=VCF"):
                what = "empty" if not first else "the first line is not ##fileformat=VCF..."
                raise InputError(f"{path}: not a VCF or BCF ({what})")
            if not first.endswith(b"\n"):
                first += data.readline()
            self._read_header(data)
        except GZIP_ERRORS as exc:
            raise _damaged(path, self._lineno, exc) from None
        self._data = data

    def _read_header(self, data: BinaryIO) -> None:
        """The meta lines and #CHROM line after ##fileformat (line 1)."""
        path, lineno = self.path, 1
        formats: set[str] = set()
        contigs: list[str] = []
        for line in data:
            lineno = self._lineno = lineno + 1
            if line.startswith(b"##"):
                meta = _META_ID.match(line)
                if meta:
                    (formats.add if meta.group(1) == b"FORMAT" else contigs.append)(_text(meta.group(2), path, lineno))
                continue
            if not line.startswith(b"#"):
                raise InputError(f"{path}: line {lineno}: a record before the #CHROM header line")
            fields = _text(line.rstrip(b"\r\n"), path, lineno).split("\t")
            if fields[:8] != _FIXED or (len(fields) > 8 and fields[8] != "FORMAT"):
                raise InputError(f"{path}: line {lineno}: malformed #CHROM line (expected the tab-separated "
                                 "columns #CHROM POS ID REF ALT QUAL FILTER INFO FORMAT and the samples)")
            self.all_samples = fields[9:]
            self._has_gt = "GT" in formats
            self.contigs = list(dict.fromkeys(contigs))
            _check_samples(self.all_samples, path, lineno)
            return
        raise InputError(f"{path}: no #CHROM header line (the file ends at line {lineno}, in the header)")

    def _open_bcf(self) -> None:
        import pysam

        self.format = "BCF"
        quiet = pysam.set_verbosity(0)  # htslib's own stderr lines (e.g. "no index file") would break one-line errors
        try:
            with pysam.VariantFile(self.path) as vf:
                header = vf.header
                self.all_samples = list(header.samples)
                self._has_gt = "GT" in header.formats
                self.contigs = list(header.contigs)
        except (OSError, ValueError, NotImplementedError):
            raise wrong_kind(self.path, "a readable VCF/BCF") from None
        finally:
            pysam.set_verbosity(quiet)

    def __iter__(self) -> Iterator[Site]:
        """The records as Sites. An exact duplicate (same CHROM, POS, REF, ALT and genotypes as an
        earlier record) is skipped and counted in `duplicates`, as `bcftools norm --rm-dup exact`
        and plink2's `--rm-dup` drop it: counted twice it would weigh twice in any fit. The same
        alleles at one position with other genotypes are an InputError: which to keep is the
        user's call."""
        n = len(self.all_samples)
        last: tuple[str, int] = ("", 0)
        at_pos: dict[tuple[bytes, bytes], tuple[int, np.ndarray]] = {}  # alleles -> (line, dosage) at `last`
        seen_chroms: set[str] = set()
        count = 0
        for lineno, line in self._lines():
            fields = line.split(b"\t", 9)
            if len(fields) < 10:
                raise InputError(f"{self.path}: line {lineno}: {len(fields)} columns, expected 9 + {n} samples "
                                 "(truncated or malformed record)")
            chrom = fields[0].decode(errors="replace")
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
            if (chrom, pos) != last:
                at_pos = {}
            last = (chrom, pos)
            dosage = parse_gt(fields[8], fields[9], n)
            if dosage is None:
                raise InputError(f"{self.path}: line {lineno} ({chrom}:{pos}): malformed genotype columns "
                                 f"(expected {n} samples with a GT field first in FORMAT)")
            if not self._all:
                dosage = dosage[self.columns]
            alleles = (fields[3], fields[4])
            if alleles in at_pos:
                first_line, first = at_pos[alleles]
                if not np.array_equal(first, dosage):
                    raise InputError(f"{self.path}: line {lineno}: {chrom}:{pos} {_allele_text(alleles)} is also at line "
                                     f"{first_line}, with other genotypes; keep one (bcftools norm --rm-dup exact keeps the first)")
                self.duplicates += 1
                continue
            at_pos[alleles] = (lineno, dosage)
            count += 1
            yield Site(chrom, pos, fields[3].decode(errors="replace"), fields[4].decode(errors="replace"), dosage)
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
        if self._data is None:  # read before: a file is opened again, a stream cannot be
            if is_stream(self.path):
                raise InputError(f"{self.path}: a pipe or stdin can be read only once")
            self._stack = ExitStack()
            self._open()
        data, lineno = self._data, self._lineno
        try:
            for line in data:
                lineno += 1
                if line.startswith(b"#"):
                    continue
                # the last line of a well-formed file may lack its newline; a cut one fails the
                # column count check in parse_gt
                yield lineno, line.rstrip(b"\r\n")
        except GZIP_ERRORS as exc:
            raise _damaged(self.path, lineno, exc) from None
        finally:
            self.close()


_FIXED = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO"]
_META_ID = re.compile(rb"##(FORMAT|contig)=<(?:[^>]*?,)?ID=([^,>]+)")


def _allele_text(alleles: tuple[bytes, bytes]) -> str:
    return f"{alleles[0].decode(errors='replace')}>{alleles[1].decode(errors='replace')}"


def _damaged(path: str, lineno: int, exc: Exception) -> InputError:
    """The decompressor reads ahead, so the damage lies somewhere after the last line read."""
    where = f" after line {lineno}" if lineno else ""
    return InputError(f"{path}: truncated or damaged compressed data{where} ({exc or type(exc).__name__})")


def _text(raw: bytes, path: str, lineno: int) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise InputError(f"{path}: line {lineno}: header bytes that are not UTF-8 text") from None


def _check_samples(samples: list[str], path: str, lineno: int) -> None:
    if any(not s for s in samples):
        raise InputError(f"{path}: line {lineno}: an empty sample name in the #CHROM line")
    if (dup := first_duplicate(samples)) is not None:
        raise InputError(f"{path}: line {lineno}: sample {dup!r} appears more than once in the #CHROM line")




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


# characters VCF 4.3 reserves in INFO values, percent-encoded (section 1.2); spaces are allowed
_VCF_RESERVED = {"%": "%25", ";": "%3B", "=": "%3D", ",": "%2C", "\t": "%09", "\n": "%0A", "\r": "%0D"}


def vcf_text(value: str) -> str:
    """A text as a VCF 4.3 INFO string value: itself, with the characters VCF reserves there
    (% ; = , tab, CR, LF) percent-encoded; spaces stay, as VCF 4.3 allows."""
    return "".join(_VCF_RESERVED.get(c, c) for c in value)


def tabix_vcf(vcf: str, index: str) -> None:
    """Write the tabix index of bgzipped VCF file `vcf` (records sorted by contig, as declared, and
    position) to `index`."""
    import pysam

    try:
        pysam.tabix_index(vcf, preset="vcf", force=True, index=index)
    except (OSError, ValueError) as exc:
        raise InputError(f"{vcf}: cannot index it with tabix ({exc})") from None
