"""Sequence files in: FASTA/FASTQ and BAM/CRAM through pysam, GenBank through Biopython.

Every input is read once, so that named pipes, `<(process substitution)` and `-` (stdin) work like
files (see genointerp.io.inputs). Its format is told from its first (decompressed) bytes, never from
its name. A regular file is sniffed and then opened by pysam by name. A stream cannot be opened
twice: a thread reads it (gzip decompressed by io.inputs) and replays the sniffed bytes and the rest
to pysam through an os.pipe. Streams thus get the same checks as files (empty input, junk, BAM,
GenBank, a cut-off gzip stream), where letting htslib read the stream itself would skip junk before
the first '@' or '>' silently, and would report a truncated gzip stream with the pipe's name.

A FASTQ input's plain records (four lines of printable ASCII: nearly every file's) are read in
compiled code (genointerp.io.fastq_text); from the first record that is not plain on, pysam reads
the input as before, so what becomes of such records, and every error about them, is unchanged.

pysam's parser (htslib kseq) is lenient: it returns a FASTQ record cut off before its quality
line as if it were FASTA, and yields nothing for a text file that is neither format. The readers
here add the checks a pipeline needs, so that such files fail with one line naming the file and
record instead of producing silently wrong data. A record with an empty sequence (`@r`, an empty
line, `+`, an empty line, as adapter trimming leaves them; or `>r` with no sequence line) is a read
of length 0: what to do with it is the caller's policy.
"""

from __future__ import annotations

import os
import threading
import warnings
from contextlib import contextmanager
from functools import partial
from itertools import chain, islice
from operator import attrgetter
from typing import Iterable, Iterator

from genointerp.errors import InputError, UsageError
from genointerp.io.fastq_text import BLOCK, plain_batches
from genointerp.io.inputs import (check_gzip_intact, check_readable, first_duplicate, is_stream, looks_like, open_binary,
                                  open_text, read_head)


def quiet_pysam():
    """pysam, imported where it is first needed (BAM/CRAM, FASTA, FASTQ from its first record the
    compiled reader leaves: a plain FASTQ never needs it, and its import took 0.012-0.017 s of
    every classify-reads start), with htslib's own stderr chatter off: it would duplicate our
    one-line errors."""
    import pysam

    pysam.set_verbosity(0)
    return pysam

STDIN = "-"
HEAD_BYTES = 4096  # what the format is told from
_FEED_BLOCK = 1 << 20
RECORDS_AHEAD = 1024  # FASTQ records iter_records parses at a time
_ALIGNMENTS = ("bam", "cram")
# a BAM/CRAM record without base qualities (QUAL '*') is read with Phred 1 at every base, as
# `samtools fastq` writes it: reads from alignment files are FASTQ whatever each record holds
MISSING_QUALITY = '"'


def _format_of(path: str, head: bytes) -> str:
    """'fasta', 'fastq', 'genbank', 'bam' or 'cram' from the first decompressed bytes of an input."""
    if head.startswith(b"BAM\x01"):
        return "bam"
    if head.startswith(b"CRAM"):
        return "cram"
    text = head.lstrip()
    if not text:
        raise InputError(f"{path}: file is empty")
    if text.startswith(b">"):
        return "fasta"
    if text.startswith(b"@"):
        return "fastq"
    if text.startswith(b"LOCUS"):
        return "genbank"
    raise InputError(f"{path}: not FASTA, FASTQ or GenBank (it holds {looks_like(head)})")


def sniff_format(path: str) -> str:
    """'fasta', 'fastq', 'genbank', 'bam' or 'cram' from the first bytes of a regular file.

    Refuses a `.gz` name whose content is not gzip and a gzip stream that cannot be inflated. Not
    for streams (it would consume their first bytes): readers here sniff those as they read them.
    """
    check_readable(path)
    return _format_of(path, read_head(path, HEAD_BYTES))


class _Feed:
    """A stream's bytes (decompressed) replayed to a C library through an os.pipe by a thread.

    `head` holds the first HEAD_BYTES for sniffing, `path` (/dev/fd/N) is for the library to open
    once, and `error` is what went wrong reading the input (an InputError of io.inputs), which is
    the cause of whatever the library then reports about the cut-off data it saw. With `blocks`,
    those bytes are replayed instead (the rest of an input that another reader began; no head).
    """

    def __init__(self, path: str, blocks: Iterable[bytes] | None = None) -> None:
        self.user_path, self.head, self.error, self._blocks = path, b"", None, blocks
        self._r, self._w = os.pipe()
        self.path = f"/dev/fd/{self._r}"
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._copy, name=f"genointerp read {path}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self.error is not None:
            self.close(failed=True)
            raise self.error

    def _copy(self) -> None:
        try:
            if self._blocks is not None:
                self._ready.set()
                self._write(self._blocks)
            else:
                with open_binary(self.user_path) as data:
                    self.head = data.read(HEAD_BYTES)
                    self._ready.set()
                    self._write(chain([self.head], iter(partial(data.read1, _FEED_BLOCK), b"")))
        except BrokenPipeError:
            pass  # the reader stopped early (an error of its own, or it needed no more)
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread
            self.error = exc if isinstance(exc, InputError) else InputError(f"{self.user_path}: cannot read ({exc})")
        finally:
            os.close(self._w)  # end of data for the reader: only after `error` is set
            self._ready.set()

    def _write(self, blocks: Iterable[bytes]) -> None:
        for block in blocks:
            view = memoryview(block)
            while view:
                view = view[os.write(self._w, view):]

    def close(self, failed: bool = False) -> None:
        if self._r is not None:
            os.close(self._r)  # a writer still going gets EPIPE and stops
            self._r = None
        # after a failure the writer may wait on a slow upstream; it is a daemon and stops at
        # its next write, so do not hang on it
        self._thread.join(timeout=1 if failed else None)


@contextmanager
def _opened(path: str) -> Iterator[tuple[str, str]]:
    """(format, a path that a library may open once) for a user's input, file or stream.

    For a stream, an error reading it (a truncated gzip stream) takes the place of the error the
    library raises on the data cut off by it.
    """
    check_readable(path)
    if not is_stream(path):
        yield sniff_format(path), path
        return
    with _feeding(_Feed(path)) as feed:
        yield _format_of(path, feed.head), feed.path


@contextmanager
def _feeding(feed: _Feed) -> Iterator[_Feed]:
    """A feed, closed when its reader is done; an error of the feed's own reading (a truncated gzip
    stream) takes the place of the reader's."""
    try:
        yield feed
    except Exception:
        feed.close(failed=True)
        if feed.error is not None:
            raise feed.error from None
        raise
    except BaseException:  # an interrupt, or the reading generator closed early
        feed.close(failed=True)
        raise
    feed.close()
    if feed.error is not None:
        raise feed.error


# a record's fields in one call in C: the readers take a file's records a list at a time, without
# Python code per record where every record is well formed
_FIELDS = attrgetter("name", "sequence", "quality")


def _fastx(path: str, source: str, fmt: str, size: int = 1, before: int = 0, last: str | None = None,
           reread: bool = False) -> Iterator[list[tuple[str, str, str | None]]]:
    """The validated records (name, sequence, quality or None) of a FASTA/FASTQ file that pysam
    opens as `source`, in lists: the first record alone, then up to `size` at a time (1: as they
    are read, for callers that act on each before the next is read). Where another reader read the
    input's first `before` records (the last named `last`), the records after them, in lists of
    `size`: `source` starts after them, or with `reread` at the input's start (pysam passes over them)."""
    fastq = fmt == "fastq"
    n = before  # records read and checked
    name = last  # the last one's name
    try:
        with quiet_pysam().FastxFile(source, persist=False) as fx:
            for _ in islice(fx, before if reread else 0):
                pass
            # with persist=False every record pysam hands out shows the one it read last, so the
            # first one shows a record whose fields fail to decode (_fields names the field)
            probe = next(fx, None)
            records = map(_FIELDS, fx if probe is None else chain([probe], fx))
            while True:
                batch: list = []
                failed = None
                try:
                    batch.extend(islice(records, size if n else 1))  # kept up to a record that fails
                except (ValueError, OSError) as exc:
                    failed = exc
                _check_records(batch, path, n, fastq)  # the records before one that failed come first
                n, name = n + len(batch), batch[-1][0] if batch else name
                if isinstance(failed, UnicodeDecodeError):
                    _fields(probe, path, n + 1, name)
                if failed is not None:
                    raise failed
                if not batch:
                    break
                yield batch
    except (ValueError, OSError) as exc:  # htslib parse errors, e.g. quality string shorter than sequence
        if source == path:
            check_gzip_intact(path)  # a cut-off gzip file is the cause, not a malformed record
        where = f"after record {n} ({name})" if n else "at the first record"
        msg = str(exc).replace(f" in {source}", "").replace(source, path)
        if isinstance(exc, ValueError):
            raise InputError(f"{path}: malformed {fmt} {where}: {msg}") from None
        raise InputError(f"{path}: cannot read ({msg})") from None
    if n == 0:
        raise InputError(f"{path}: no FASTA/FASTQ records found")


def _check_records(batch: list, path: str, n: int, fastq: bool) -> None:
    """Check records n + 1, n + 2, ... of a file, as pysam read them: a FASTQ record has a quality
    as long as its sequence, a FASTA record none. An empty FASTQ record's missing quality becomes
    "" (a read of length 0) in place. Per batch first, per record only where one fails."""
    quals = [r[2] for r in batch]
    if fastq:
        if None not in quals and list(map(len, quals)) == [len(r[1]) for r in batch]:
            return
    elif quals.count(None) == len(quals):
        return
    for i, (name, seq, qual) in enumerate(batch, n + 1):
        if fastq:
            if qual is None:  # pysam's answer for no quality line, and for an empty one
                if seq:
                    raise InputError(f"{path}: record {i} ({name}): truncated FASTQ record (no quality line)")
                batch[i - n - 1] = (name, seq, "")  # an empty record: a read of length 0
            elif len(qual) != len(seq):
                raise InputError(f"{path}: record {i} ({name}): sequence length {len(seq)} but quality length {len(qual)}")
        elif qual is not None:
            raise InputError(f"{path}: record {i} ({name}): FASTQ record inside a FASTA file")


def _fields(rec, path: str, n: int, previous: str | None) -> tuple[str, str, str | None]:
    """(name, sequence, quality) of record n, whose fields pysam decodes as UTF-8 only when read:
    a byte that is not UTF-8 text (a Latin-1 name) is an InputError naming the record and field."""
    values = []
    for field in ("name", "sequence", "quality"):
        try:
            values.append(getattr(rec, field))
        except UnicodeDecodeError as exc:
            after = f" (after {previous})" if previous is not None else ""
            raise InputError(f"{path}: record {n}{after}: its {field} holds byte {exc.object[exc.start:exc.start + 1]!r} "
                             "that is not UTF-8 text") from None
    return values[0], values[1], values[2]


def _alignment_reads(path: str, source: str, fmt: str, unmapped_only: bool,
                     reference: str | None) -> Iterator[tuple[str, str, str | None]]:
    try:
        fh = quiet_pysam().AlignmentFile(source, "rc" if fmt == "cram" else "rb", reference_filename=reference, check_sq=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot open as {fmt.upper()} ({str(exc).replace(source, path)})") from None
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
                if qual is None:  # QUAL '*': the lowest quality, as `samtools fastq` writes it, so
                    qual = MISSING_QUALITY * len(seq)  # that every read of the file is one FASTQ record
                n += 1
                yield name, seq, qual
    except (OSError, ValueError) as exc:
        msg = str(exc).replace(source, path)
        # htslib says "truncated file" when it has no reference to decode with: its words would send a
        # user to fetch a good file again, so they are left out
        if fmt == "cram" and n == 0:
            if reference is None:
                raise InputError(f"{path}: cannot decode this CRAM without its reference: pass --reference FASTA, the "
                                 "genome it was aligned to (none where its header points, nor in REF_PATH/REF_CACHE)") \
                    from None
            raise InputError(f"{path}: cannot decode this CRAM with --reference {reference}: is it the genome the "
                             "file was aligned to?") from None
        raise InputError(f"{path}: malformed or truncated alignment file after {n} reads ({msg})") from None


def iter_records(path: str) -> Iterator[tuple[str, str, str | None]]:
    """Yield (name, sequence, quality or None) for every FASTA/FASTQ record, validated.

    Sequences are returned as written (case and letters untouched, possibly empty): what to do with
    lower case, N, IUPAC letters and empty reads is the caller's policy. Raises InputError on
    empty, truncated or malformed input. FASTQ is parsed RECORDS_AHEAD records at a time (in
    compiled code where they are plain: a quarter of pysam's time per record), FASTA as it is read.
    """
    with _opened(path) as (fmt, source):
        if fmt == "genbank":
            raise InputError(f"{path}: GenBank is accepted for references only; reads must be FASTA/FASTQ")
        if fmt in _ALIGNMENTS:
            raise InputError(f"{path}: this is {fmt.upper()}; give FASTA/FASTQ (classify-reads reads BAM/CRAM)")
        yield from chain.from_iterable(_fastq(path, source, RECORDS_AHEAD) if fmt == "fastq" else _fastx(path, source, fmt))


def _fastq(path: str, source: str, size: int) -> Iterator[list[tuple[str, str, str | None]]]:
    """A FASTQ input's records as _fastx gives them: the plain ones read in compiled code
    (genointerp.io.fastq_text), pysam's from the first that is not. `source` is _opened's: a regular
    file itself, which pysam reopens and reads past the records before; or a stream's feed, whose
    bytes from that record on are fed to pysam through a pipe of their own."""
    with open_binary(path) if source == path else open(source, "rb") as data:
        read = partial(data.read1, BLOCK)

        def rest(text: bytes, n: int, name: str | None) -> Iterator[list[tuple[str, str, str | None]]]:
            if source == path:
                yield from _fastx(path, source, "fastq", size, n, name, reread=True)
                return
            with _feeding(_Feed(path, chain([text], iter(read, b"")))) as feed:
                yield from _fastx(path, feed.path, "fastq", size, n, name)

        yield from plain_batches(data.readinto1, size, rest)


def iter_read_batches(path: str, size: int, unmapped_only: bool = False,
                      reference: str | None = None) -> Iterator[list[tuple[str, str, str | None]]]:
    """The reads (name, sequence, quality or None) of a FASTA/FASTQ (as iter_records) or BAM/CRAM
    file, told apart by content, in lists: the first read alone (a caller sees it before the rest
    are read), then up to `size` at a time. Every read of a list is checked before it is handed on.

    From BAM/CRAM: primary records with a sequence, only the unmapped ones with `unmapped_only`.
    Mates get /1, /2 suffixes; a record without qualities gets Phred 1 (MISSING_QUALITY). Reads on
    the reverse strand are stored reverse-complemented by the aligner; they are yielded as stored
    (orientation does not matter to a k-mer classifier trained on both strands).
    """
    with _opened(path) as (fmt, source):
        if fmt == "genbank":
            raise InputError(f"{path}: GenBank is accepted for references only; reads must be FASTA/FASTQ/BAM/CRAM")
        if fmt in _ALIGNMENTS:
            check_reference(reference)
            reads = _alignment_reads(path, source, fmt, unmapped_only, reference)
            batch = list(islice(reads, 1))
            while batch:
                yield batch
                batch = list(islice(reads, size))
        elif unmapped_only:
            refuse_unmapped_only(path, fmt)
        elif fmt == "fastq":
            yield from _fastq(path, source, size)
        else:
            yield from _fastx(path, source, fmt, size)


def refuse_unmapped_only(path: str, fmt: str) -> None:
    """UsageError for --unmapped-only on reads that are not an alignment file (`fmt` as sniffed):
    they have no unmapped reads to pick, and classifying all of them without a word would hide
    that the option did nothing."""
    if fmt not in _ALIGNMENTS:
        raise UsageError(f"--unmapped-only: {path} is {fmt.upper() if fmt != 'genbank' else 'GenBank'}, not BAM/CRAM: "
                         "the option picks an alignment file's unmapped reads; leave it out for FASTA/FASTQ")


def check_reference(reference: str | None) -> None:
    """InputError naming --reference when the FASTA it names is missing or a folder (htslib would
    only say that the CRAM it decodes is a "truncated file")."""
    if reference is not None:
        try:
            check_readable(reference)
        except InputError as exc:
            raise InputError(f"--reference {exc}") from None


def read_reference(path: str) -> list[tuple[str, str]]:
    """Read every record of a reference (FASTA plain/gzip/bgzip or GenBank flat file).

    Returns [(contig name, sequence as written)]. Names are the first word of the header
    (FASTA) or the accession.version (GenBank).
    """
    with _opened(path) as (fmt, source):
        if fmt == "fastq":
            raise InputError(f"{path}: this is FASTQ; a reference must be FASTA or GenBank")
        if fmt in _ALIGNMENTS:
            raise InputError(f"{path}: this is {fmt.upper()}; a reference must be FASTA or GenBank")
        if fmt == "genbank":
            records = _read_genbank(path, source)
        else:
            records = [(name, seq) for name, seq, _ in chain.from_iterable(_fastx(path, source, fmt))]
    for i, (name, seq) in enumerate(records, 1):
        if not seq:
            raise InputError(f"{path}: record {i} ({name}): empty sequence")
    _check_unique_names(path, records)
    return records


# Biopython's notes on a record cut off before its end; other parser warnings are about harmless
# oddities of real-world files and are not shown (they would be raw lines on stderr)
_TRUNCATION_WARNINGS = ("Premature end of file", "Expected sequence length")


def _read_genbank(path: str, source: str) -> list[tuple[str, str]]:
    from Bio import BiopythonParserWarning, SeqIO  # Biopython is only needed for GenBank references

    records = []
    try:
        with open_text(source) as fh, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BiopythonParserWarning)
            for rec in SeqIO.parse(fh, "genbank"):
                try:
                    seq = str(rec.seq)
                except Exception:  # Biopython raises UndefinedSequenceError for CONTIG-only records
                    raise InputError(f"{path}: record {rec.id}: GenBank record has no ORIGIN sequence") from None
                records.append((rec.id, seq))
    except ValueError as exc:
        raise InputError(f"{path}: malformed GenBank file ({exc})") from None
    except InputError as exc:
        raise InputError(str(exc).replace(source, path)) from None
    cut = [str(w.message).rstrip(".") for w in caught
           if issubclass(w.category, BiopythonParserWarning) and str(w.message).startswith(_TRUNCATION_WARNINGS)]
    if cut:
        raise InputError(f"{path}: truncated GenBank file ({'; '.join(cut)})")
    if not records:
        raise InputError(f"{path}: no GenBank records found")
    return records


def _check_unique_names(path: str, records: list[tuple[str, str]]) -> None:
    if (dup := first_duplicate([name for name, _ in records])) is not None:
        raise InputError(f"{path}: contig name {dup!r} appears twice")
