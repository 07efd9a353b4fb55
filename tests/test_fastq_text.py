"""The compiled reader of plain FASTQ records (genointerp/_fastq.c, genointerp.io.fastq_text) against
pysam's: the same records, and the same error line, for plain files and for files with every kind
of record it leaves to pysam, wherever that record falls in the file and in a batch, read from the
file or through a pipe."""

from __future__ import annotations

import gzip
import random
import re

import pysam
import pytest

from genointerp import _fastq
from genointerp.errors import InputError
from genointerp.io import sequences
from genointerp.io.fastq_text import END, LIMIT, MORE, ODD
from genointerp.io.sequences import iter_read_batches

PLAIN = b"@r1 a comment\nACGTN\n+\nIIIII\n@r2\tx\nacgt\n+r2\n!!!!\n"


def test_plain_records_come_as_tuples_up_to_the_limit():
    got, stop, why = _fastq.records(PLAIN, 0, 5, True)
    assert got == [("r1", "ACGTN", "IIIII"), ("r2", "acgt", "!!!!")] and stop == len(PLAIN) and why == END
    got, stop, why = _fastq.records(PLAIN, 0, 1, True)
    assert got == [("r1", "ACGTN", "IIIII")] and PLAIN[stop:].startswith(b"@r2") and why == LIMIT
    assert _fastq.records(PLAIN, stop, 0, True) == ([], stop, LIMIT)


def test_a_record_cut_by_the_texts_end_waits_for_more_unless_the_input_ends_there():
    first = PLAIN.index(b"@r2")
    for cut in range(1, len(PLAIN)):
        got, stop, why = _fastq.records(PLAIN[:cut], 0, 5, False)
        assert why == MORE and stop == (0 if cut < first else first) and len(got) == (cut >= first)
    # the last line may lack its line end; any other cut is left to pysam
    assert _fastq.records(PLAIN[:-1], 0, 5, True)[1:] == (len(PLAIN) - 1, END)
    assert _fastq.records(PLAIN[:-3], 0, 5, True)[1:] == (first, ODD)


@pytest.mark.parametrize("record", [
    b"@r\nACGT\nACGT\n+\nIIIIIIII\n",  # a sequence over two lines
    b"@r\n\nACGT\n+\nIIII\n",  # a blank line, then the sequence (kseq skips it)
    b"@r\r\nACGT\r\n+\r\nIIII\r\n",  # Windows line ends
    b"@r\nAC\xc3\xa9T\n+\nIIIII\n",  # not ASCII
    b"@r\nACGT\n+\nIII\n",  # a quality shorter than the sequence
    b"@r\nACGT\nIIII\n",  # no '+' line
    b"@ r\nACGT\n+\nIIII\n",  # no name
    b"@r\n+CGT\n+\nIIII\n",  # a sequence line kseq would end the sequence at
    b"\n@r\nACGT\n+\nIIII\n",  # a blank line before the record
    b">r\nACGT\n",  # FASTA
])
def test_records_that_are_not_plain_stop_the_list_where_they_start(record):
    got, stop, why = _fastq.records(PLAIN + record + PLAIN, 0, 10, True)
    assert (len(got), stop, why) == (2, len(PLAIN), ODD)


def test_an_empty_read_is_plain_with_an_empty_quality():
    text = PLAIN + b"@e trimmed\n\n+\n\n" + PLAIN + b"@last\n\n+\n"
    got, stop, why = _fastq.records(text, 0, 10, True)
    assert got[2] == ("e", "", "") and got[-1] == ("last", "", "") and len(got) == 6 and why == END


def _pysam_batches(path, size):
    """The reader as it was: pysam for every record."""
    return sequences._fastx(path, path, "fastq", size)


def _read(batches):
    """Every record of a reader and the error line that ended it, if any."""
    records = []
    try:
        for batch in batches:
            records.extend(batch)
    except InputError as exc:
        return records, str(exc)
    return records, None


def _same(fast, slow) -> bool:
    """Whether two readers' _read agree: the same error line, and the same records where there is
    none (where there is, the job fails and writes nothing, and a reader may have handed on more
    or fewer of the records before it: the readers check a list at a time)."""
    (got, error), (want, want_error) = fast, slow
    if error != want_error:
        return False
    short, long = sorted([got, want], key=len)
    return got == want if error is None else long[: len(short)] == short


# records of every kind pysam reads on from (and an empty read, plain to both readers)
ODD_RECORDS = [
    b"@odd\nACGT\nACGT\n+\nIIIIIIII\n", b"@odd\n\n+\n\n", b"@odd\n\nACGT\n+\nIIII\n", b"@odd\n\n+\nII\n", b"@odd\r\nACGT\r\n+\r\nIIII\r\n", b"@odd\nAC\xc3\xa9T\n+\nIIIII\n",
    b"@odd\nACGT\n+\nIII\n", b"@odd\nACGT\n+\nIIIII\n", b"@odd\nACGT\n", b"@odd\nACGT\n+\n", b"\n\n", b"junk\n",
    b"@odd\xff\nACGT\n+\nIIII\n", b"@odd\nACGT\n+\nII\xffI\n", b"@\nACGT\n+\nIIII\n", b"@odd\n+CGT\n+\nIIII\n",
    b">odd\nACGT\n", b"@odd\nACGT\n+\nIIII", b"@odd\nAC GT\n+\nIIIII\n", b"@odd\x0bx\nACGT\n+\nIIII\n",
]


def _plain_records(rng: random.Random, n: int) -> bytes:
    out = []
    for i in range(n):
        length = rng.randint(0, 40)  # 0: an empty read, as trimming leaves them
        seq = "".join(rng.choice("ACGTNacgtRY") for _ in range(length))
        qual = "".join(chr(rng.randint(33, 126)) for _ in range(length))
        comment = rng.choice(["", " c=1", "\tlane 2", " x\xe9".encode("latin-1").decode("latin-1")])
        plus = rng.choice(["+", "+" + f"read{i}"])
        out.append(f"@read{i}{comment}\n{seq}\n{plus}\n{qual}\n".encode("latin-1"))
    return b"".join(out)


@pytest.mark.parametrize("seed", range(16))
def test_every_file_reads_as_pysam_reads_it(seed, tmp_path, pipe):
    rng = random.Random(seed)
    text = _plain_records(rng, rng.randint(1, 60))
    if seed % 4:  # an odd record somewhere: the rest of the file is pysam's
        cut = rng.choice([m.start() for m in re.finditer(b"@read", text)] + [len(text)])
        text = text[:cut] + rng.choice(ODD_RECORDS) + text[cut:]
    if seed % 3 == 0:
        text = text.rstrip(b"\n")
    for compressed in (False, True):
        path = tmp_path / f"reads{int(compressed)}.fq{'.gz' if compressed else ''}"
        path.write_bytes(gzip.compress(text) if compressed else text)
        for size in (1, 3, 64):
            expected = _read(_pysam_batches(str(path), size))
            assert _same(_read(iter_read_batches(str(path), size)), expected)
            streamed = _read(iter_read_batches(pipe(path.read_bytes()), size))
            assert _same((streamed[0], streamed[1] and streamed[1].replace(streamed[1].split(":")[0], str(path), 1)),
                         expected)


def test_a_large_file_crosses_the_readers_blocks_unchanged(tmp_path):
    text = _plain_records(random.Random(7), 40_000)  # about 2 MB: records cut by the 1 MB blocks
    path = tmp_path / "reads.fq.gz"
    path.write_bytes(gzip.compress(text))
    batches = list(iter_read_batches(str(path), 8192))
    assert [len(b) for b in batches][:2] == [1, 8192]
    assert [r for b in batches for r in b] == [r for b in _pysam_batches(str(path), 8192) for r in b]


@pytest.mark.parametrize("seed", range(4))
def test_records_longer_than_the_buffer_grow_it_and_odd_ones_still_go_to_pysam(seed, tmp_path, pipe, monkeypatch):
    """With a 16-byte buffer nearly every record is cut by a block's end, and many are longer
    than the buffer: the buffer is moved into and doubled, and the records are pysam's."""
    from genointerp.io import fastq_text

    monkeypatch.setattr(fastq_text, "BLOCK", 16)
    rng = random.Random(seed)
    text = _plain_records(rng, 30) + b"@long\n" + b"ACGT" * 300 + b"\n+\n" + b"I" * 1200 + b"\n"
    if seed % 2:
        text += ODD_RECORDS[seed] + _plain_records(rng, 5)
    path = tmp_path / "reads.fq"
    path.write_bytes(text)
    expected = _read(_pysam_batches(str(path), 4))
    assert _same(_read(iter_read_batches(str(path), 4)), expected)
    records, error = _read(iter_read_batches(pipe(text), 4))
    assert _same((records, error and error.replace(error.split(":")[0], str(path), 1)), expected)


def test_plain_files_never_reach_pysam_and_odd_ones_only_from_their_odd_record(tmp_path, monkeypatch):
    opened = []
    fastx = pysam.FastxFile

    def counted(*args, **kwargs):
        opened.append(args[0])
        return fastx(*args, **kwargs)

    monkeypatch.setattr(pysam, "FastxFile", counted)
    plain = tmp_path / "plain.fq"
    plain.write_bytes(PLAIN * 3)
    assert len(_read(iter_read_batches(str(plain), 2))[0]) == 6 and opened == []
    odd = tmp_path / "odd.fq"
    odd.write_bytes(PLAIN + b"@odd\nACGT\nACGT\n+\nIIIIIIII\n" + PLAIN)
    records, error = _read(iter_read_batches(str(odd), 2))
    assert error is None and [r[0] for r in records] == ["r1", "r2", "odd", "r1", "r2"] and opened == [str(odd)]


def test_a_cut_off_gzip_file_is_the_line_io_inputs_gives_it(tmp_path):
    path = tmp_path / "reads.fq.gz"
    path.write_bytes(gzip.compress(_plain_records(random.Random(3), 2000))[:-200])
    records, error = _read(iter_read_batches(str(path), 64))
    assert error.startswith(f"{path}: truncated or corrupt gzip data")
    assert _same((records, error), _read(_pysam_batches(str(path), 64)))
