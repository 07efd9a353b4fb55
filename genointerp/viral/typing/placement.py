"""Where on which viral genome a piece of a read lies: classify-reads' seed evidence, then mappy.

The panel is a model folder's viral references (`kmer_refs.fa.gz`; the built-in model's are 541
HPV genomes with their lineages, HBV genotypes A-D, HCV, EBV, KSHV, HTLV-1 and MCPyV) plus any
FASTA the user adds (`--viral-refs`, genomes the folder lacks). A piece of a read is placed in two
steps:
- **evidence**: the model folder's seed index (the one classify-reads uses) must find at least one
  of the piece's seeds, which keeps out human and bacterial sequence (the index leaves out every
  seed of the training negatives and low-complexity windows);
- **placement**: minimap2 (mappy) aligns it to the panel with short seeds (k = 11), sensitive
  enough for HPV types the panel lacks (they align to their nearest relatives, at 80-90 %
  identity).
Long reads (LONG_READ bases and more: nanopore, HiFi) are placed whole by `place_long` with
minimap2's long-read preset (map-ont: 15-mer minimizers, chaining that spans indel-rich stretches;
the short-read settings break a 10 %-error read into pieces no one of which covers much of it).
A long read's split alignments to one reference (across a circular genome's origin, or viral
pieces between host sequence in an integration) are joined into one placement there.
Added references have no seed index: pieces are placed on them with minimap2's short-read preset
(21-mer seeds), whose exact seeds are the evidence; one the model folder holds already (same name
and sequence) is left out. Circular genomes are indexed with their first
WRAP bases repeated at the end so that pieces across the origin align whole; positions are taken
modulo the genome's length.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import mappy
import numpy as np

from genointerp.errors import InputError
from genointerp.io.inputs import is_stream, open_binary, open_text
from genointerp.io.jsonfile import read_json_object
from genointerp.io.sequences import read_reference
from genointerp.seq.joined import encode_joined
from genointerp.seq.alphabet import N_CODE, encode
from genointerp.seq.entropy import window_entropy
from genointerp.viral.model_files import CONFIG, DESCRIPTIONS_FILE, REFS_FILE
from genointerp.viral.panel import ViralName, name_reference, with_descriptions
from genointerp.viral.evidence.prebuilt import load_indexes
from genointerp.viral.typing.diagonals import ContigSpans

WRAP = 500
MIN_ALIGNED = 20  # a placement covers at least this many bases of the piece
MIN_IDENTITY = 0.75  # matching bases over the alignment's length
MIN_EXTRA_IDENTITY = 0.9  # on added references (no seed index to vouch for the piece)
# sensitive placement on the seed-vetted panel: 11-mer minimizers in windows of 3
_SENSITIVE = dict(preset="sr", k=11, w=3, min_chain_score=15, min_dp_score=20, best_n=5)
_PLAIN = dict(preset="sr", best_n=5)
LONG_READ = 500  # reads of this many bases and more are placed with the long-read preset
MIN_LONG_IDENTITY = 0.6  # matching bases over the joined alignments' length (reads of 75-90 % accuracy)
MIN_LONG_ALIGNED = 100  # read bases in a long read's joined alignments
MAX_PIECE_OVERLAP = 0.1  # a further piece of a long read overlaps those kept by at most this share of itself
_LONG = dict(preset="map-ont")
# minimap2's index of a model folder's references, in its prebuilt index folder: the name holds
# what the index depends on beyond the references (which the prebuilt folder's digest covers)
PANEL_INDEX = f"panel.k{_SENSITIVE['k']}.w{_SENSITIVE['w']}.wrap{WRAP}.mmi"
# beside it, the references' names, lengths and descriptions (name <TAB> length <TAB> description, one a
# line, in the index's order): where both are stored, a panel is made without the references' FASTA,
# whose decompression and reading took 8-12 ms in every process that types a read (both of a -t 2
# run); their sequences are read only where an aligner is built from them (long reads)
PANEL_REFS = "panel_refs.tsv"


@dataclass(frozen=True)
class ViralRef:
    name: str
    length: int
    naming: ViralName
    source: str  # the file it came from
    description: str = ""


@dataclass(frozen=True)
class Placement:
    """A piece placed on a viral reference. Coordinates 0-based, on the reference (modulo its length
    for circular ones: r_st in [0, length), r_en = r_st + aligned length may exceed it); q_st/q_en
    on the piece as given; strand +1 or -1 (the piece's reverse complement aligns)."""

    ref: str
    strand: int
    r_st: int
    r_en: int
    q_st: int
    q_en: int
    mlen: int
    blen: int  # alignment length (mlen / blen: identity)
    kmer_hits: int
    edits: int = 0  # edit distance of the aligned part (minimap2's NM); place_all fills it


@dataclass(frozen=True)
class LongPlacement:
    """A long read's alignments to one reference joined: the reference span of its longest piece
    (0-based, modulo a circular genome's length as in Placement), the read bases in all its pieces
    and their edits (minimap2's NM summed)."""

    ref: str
    r_st: int
    r_en: int
    aligned: int
    edits: int


class StoredAligner:
    """minimap2's aligner of a stored index, loaded at its first read (about 0.05 s for the
    built-in model's references): classify-reads' typing places most reads on the seed index's
    diagonals, and its workers and its own process each loaded the aligner for the panel's
    reference names alone, though on all-viral reads few or none are left to align."""

    def __init__(self, path: str, preset: dict, source: str) -> None:
        self.path, self.preset, self.source = path, preset, source
        self._aligner = None

    def load(self):
        """The aligner, loaded now if it is not yet."""
        if self._aligner is None:
            aligner = mappy.Aligner(self.path, **self.preset)
            if not aligner:
                raise InputError(f"{self.source}: minimap2 could not read the stored index of the viral references")
            self._aligner = aligner
        return self._aligner

    @property
    def loaded(self) -> bool:
        return self._aligner is not None

    def map(self, seq: str):
        return self.load().map(seq)


def read_described(path: str) -> list[tuple[str, str, str]]:
    """(name, description, sequence) of each record of a reference FASTA file (validated by
    io.sequences.read_reference; descriptions from the headers)."""
    return [(name, description, seq.upper()) for name, description, seq in _read_described(path)]


def _read_described(path: str) -> list[tuple[str, str, str]]:
    """read_described's records with their sequences as written (not yet upper case: where only
    their lengths are wanted, as typing's, the 4.5 MB of the built-in model's are not copied)."""
    if is_stream(path):
        raise InputError(f"{path}: viral references must be a file (it is read twice: sequences, then descriptions)")
    records = read_reference(path)
    descriptions: dict[str, str] = {}
    with open_text(path) as fh:
        for line in fh:
            if line.startswith(">"):
                parts = line[1:].strip().split(None, 1)
                if parts:
                    descriptions[parts[0]] = parts[1] if len(parts) > 1 else ""
    return [(name, descriptions.get(name, ""), seq) for name, seq in records]


def folder_references(model_dir: Path, index) -> list[tuple[str, str, str]]:
    """`_read_described` of a model folder's references (REFS_FILE), read in a few bytes
    operations where the file is plain and the folder's seed index vouches for the reading: every
    process that types a read reads them, and pysam's reading (then the headers' own pass) took
    0.02 s of typing's start there, with pysam imported for it alone. Plain: every header line
    printable ASCII, starting with a name, every sequence line without '>', '@', '+', CR or
    blanks at its start; vouched for: each contig's length, its end and its first bases are
    where the index's letters (genointerp.viral.evidence.seeds.joined_contigs of the same
    references) have them. Anything else is read as `_read_described` reads it: the same
    records, and the same errors."""
    path = model_dir / REFS_FILE
    records = _plain_fasta(str(path))
    places = getattr(index, "places", None)
    if records is None or places is None or not _laid_out(records, places.letters, index.settings.k):
        return _read_described(str(path))
    return records


_CHECKED_BASES = 16  # of each contig's first bases, compared with the index's letters


def _plain_fasta(path: str) -> list[tuple[str, str, str]] | None:
    """(name, description, sequence) of each record of a plain FASTA file (`folder_references`),
    as pysam and `_read_described`'s header pass read them; None where the file is not plain."""
    if is_stream(path):
        return None
    try:
        with open_binary(path) as fh:
            data = fh.read()
    except InputError:  # told as _read_described tells it
        return None
    pieces = data.split(b">")  # one byte sought: memchr's pace, where b"\n>" took 5 ms
    if pieces[0] or not data.isascii() or b"\r" in data:
        return None
    records, names = [], set()
    for i, piece in enumerate(pieces[1:], 1):
        header, _, body = piece.partition(b"\n")
        seq = body.replace(b"\n", b"")  # htslib skips empty lines
        if (not header[:1].isalnum() or not _PRINTABLE.fullmatch(header) or not seq or b"@" in seq or b"+" in seq
                or (i < len(pieces) - 1 and not piece.endswith(b"\n"))):  # a '>' within a line
            return None
        # the name up to the first blank (htslib's), the description after it (the header pass's)
        name, *description = header.decode().strip().split(None, 1)
        if name in names:
            return None
        names.add(name)
        records.append((name, description[0] if description else "", seq.decode()))
    return records


_PRINTABLE = re.compile(rb"[\t\x20-\x7e]*")


def _laid_out(records: list[tuple[str, str, str]], letters: np.ndarray, k: int) -> bool:
    """Whether the records' contigs lie in the seed index's `letters` as its references' do:
    their lengths, each one's end (an N after its wrap) and its first bases (A, C, G or T)."""
    spans = ContigSpans.of([len(seq) for _, _, seq in records], letters, k)
    if spans is None:
        return False
    first = "".join(seq[:_CHECKED_BASES].ljust(_CHECKED_BASES, "N") for _, _, seq in records)
    codes = encode(first.upper()).reshape(len(records), _CHECKED_BASES)
    at = np.minimum(spans.start[:, None] + np.arange(_CHECKED_BASES), letters.size - 1)
    known = codes < N_CODE
    return bool((letters[at][known] == codes[known]).all())


class ViralPanel:
    """The model folder's seed index and references plus added references, with their aligners."""

    def __init__(self, model_dir: str | Path, extra: list[str], log, best_n: int = 5, index=None,
                 keep_sequences: bool = False, index_out: Path | None = None) -> None:
        """The panel of the model folder's references (and `extra` FASTA files). minimap2's index
        of the folder's references is read from the prebuilt index folder where that has one
        (PANEL_INDEX: about 0.05 s, against about 0.45 s to build it for the built-in model),
        else built; `index_out` stores the one built there (store_panel_index)."""
        model_dir = Path(model_dir)
        if index is None:  # (train-xvir stores the panel's index before the folder has its config.json)
            config = read_json_object(model_dir / CONFIG, f"{model_dir}: no {CONFIG}; not a genointerp model directory",
                                      "a model configuration")
            index = load_indexes(model_dir, config, log)[0]
        self.index = index
        if self.index is None:
            raise InputError(f"{model_dir}: the model has no viral references (config.json has no k-mer index); "
                             "find-integrations places reads on them (train-xvir --viral)")
        self.min_hits = 1
        self.refs: dict[str, ViralRef] = {}
        # name -> genome, with keep_sequences (find-integrations writes viral bases in its VCF);
        # left empty otherwise, so that typing workers do not each hold every genome
        self.sequences: dict[str, str] = {}
        self._keep_sequences = keep_sequences
        self._best_n = best_n
        # the references as indexed, (name, sequence as read, circular) in order: their FASTA records
        # (`_fasta`) are made where an aligner is built from them (the long-read one, at the first
        # long read; the sensitive one where no stored index is at hand)
        self._indexed: list[tuple[str, str, bool]] = []
        self._long = None  # minimap2's long-read aligner, built at the first long read
        self._tmp: tempfile.TemporaryDirectory | None = None  # made where an aligner is built from FASTA
        try:
            prebuilt = self.index.prebuilt / PANEL_INDEX if self.index.prebuilt is not None else None
            # the references' names, lengths and descriptions as stored beside minimap2's index
            # (PANEL_REFS), where the panel loads that index and needs no sequence; else read
            stored = (stored_references(self.index) if prebuilt is not None and prebuilt.is_file()
                      and index_out is None and not keep_sequences else None)
            self._unread = model_dir if stored is not None else None  # whose sequences _read_unread reads
            builtin = stored or with_descriptions(folder_references(model_dir, self.index),
                                                  model_dir / DESCRIPTIONS_FILE)
            self._sensitive = self._aligner(builtin, str(model_dir / REFS_FILE), {**_SENSITIVE, "best_n": best_n},
                                            "builtin.fa", prebuilt=prebuilt if index_out is None else None,
                                            index_out=index_out)
            added = [rec for path in extra for rec in self._tagged(path)]
            self._plain = self._aligner([r[:3] for r in added], None, {**_PLAIN, "best_n": best_n}, "added.fa",
                                        [r[3] for r in added]) if added else None
        finally:  # minimap2 holds its indexes in memory: nothing is left behind, even by a killed worker
            self.close()
        log(f"viral panel: {len(builtin):,} references of {model_dir}" +
            (f" and {len(added):,} added ({', '.join(extra)})" if added else ""))

    @staticmethod
    def _tagged(path: str):
        return [(n, d, s, path) for n, d, s in _read_described(path)]

    def _aligner(self, records, source, preset, file_name, sources=None, prebuilt: Path | None = None,
                 index_out: Path | None = None):
        """minimap2's aligner of `records` (registered in the panel as they are written), from the
        stored index `prebuilt` where it is a file (the same index: minimap2 builds it from the same
        sequences and settings), or built, and then stored at `index_out` if given."""
        written = len(self._indexed)
        for i, (name, description, seq) in enumerate(records):
            # a stored list's records (stored_references) give their lengths, their sequences unread
            length, seq = (seq, None) if isinstance(seq, int) else (len(seq), seq)
            if name in self.refs:
                if self._sequence(name) == seq.upper():  # the model folder has it already: keep its description
                    if description and not self.refs[name].description:
                        self.refs[name] = ViralRef(name, length, name_reference(name, description),
                                                   self.refs[name].source, description)
                    continue
                raise InputError(f"{sources[i] if sources else source}: viral reference {name} is already in the "
                                 "panel with another sequence; rename it")
            naming = name_reference(name, description)
            self.refs[name] = ViralRef(name, length, naming, sources[i] if sources else source, description)
            if self._keep_sequences:
                self.sequences[name] = seq.upper()
            self._indexed.append((name, seq, naming.circular))
        if len(self._indexed) == written:
            return None
        if prebuilt is not None and prebuilt.is_file():  # the FASTA file is not written: minimap2 reads the index
            return StoredAligner(str(prebuilt), preset, source or file_name)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix=".genointerp-panel-")
        path = os.path.join(self._tmp.name, file_name)
        with open(path, "w") as fh:
            fh.write(self._fasta(written))
        if index_out is not None:
            aligner = mappy.Aligner(path, fn_idx_out=str(index_out), **preset)
        else:
            aligner = mappy.Aligner(path, **preset)
        if not aligner:
            raise InputError(f"{source or file_name}: minimap2 could not index the viral references")
        return aligner

    def _fasta(self, first: int = 0) -> str:
        """The FASTA text of the references as indexed from the `first` on: each in upper case,
        a circular one with its first WRAP bases repeated at its end."""
        self._read_unread()
        parts = []
        for name, seq, circular in self._indexed[first:]:
            seq = seq.upper()
            parts.append(f">{name}\n{seq + seq[:WRAP] if circular else seq}\n")
        return "".join(parts)

    def _sequence(self, name: str) -> str:
        """An indexed reference's sequence in upper case (asked for only where an added file names
        it again: each reference's SHA-256, made beforehand for that, took 7 ms of typing's start in
        every process that types a read)."""
        self._read_unread()
        return next(seq for n, seq, _ in self._indexed if n == name).upper()

    def _read_unread(self) -> None:
        """The folder's sequences, where the panel was made from the stored list (stored_references)
        and they are now wanted: an aligner built from them, an added file naming one again."""
        if self._unread is not None:
            sequences = {name: seq for name, _, seq in folder_references(self._unread, self.index)}
            self._indexed = [(name, sequences[name] if seq is None else seq, circular)
                             for name, seq, circular in self._indexed]
            self._unread = None

    def load_aligners(self) -> None:
        """Load the aligners now that would load at their first read (StoredAligner)."""
        if isinstance(self._sensitive, StoredAligner):
            self._sensitive.load()

    def aligners_loaded(self) -> bool:
        """Whether a short read left to align costs no aligner's load first (StoredAligner)."""
        return not isinstance(self._sensitive, StoredAligner) or self._sensitive.loaded

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()

    def place(self, pieces: list[str]) -> list[Placement | None]:
        """The best placement of each piece on the panel (None: no viral evidence or no alignment).
        Deterministic: the best by matching bases, ties to the first reference name. Pieces of
        LONG_READ bases and more (of long reads) are aligned with the long-read preset, at
        MIN_LONG_IDENTITY, to the model folder's and the added references alike."""
        out: list[Placement | None] = [None] * len(pieces)
        if not pieces:
            return out
        hits, _ = self.index.hits(*encode_joined(pieces))
        for i, piece in enumerate(pieces):
            best = None
            if len(piece) >= LONG_READ:  # a long read's piece: every reference on the long-read preset
                out[i] = self._best(self.long_aligner(), piece, MIN_LONG_IDENTITY, int(hits[i])) \
                    if hits[i] >= self.min_hits else None
                continue
            if hits[i] >= self.min_hits:
                best = self._best(self._sensitive, piece, MIN_IDENTITY, int(hits[i]))
            if self._plain is not None:
                other = self._best(self._plain, piece, MIN_EXTRA_IDENTITY, 0)
                if other is not None and (best is None or other.mlen > best.mlen):
                    best = other
            out[i] = best
        return out

    def place_all(self, seq: str, min_aligned: int) -> list[Placement]:
        """Every placement of a whole read (no seed check: the caller has called it viral) on the
        panel's references, at most one per reference (its best: fewest matching bases lost), each
        covering at least `min_aligned` bases of the read; sorted by reference name."""
        best: dict[str, tuple] = {}
        for aligner, min_identity in ((self._sensitive, MIN_IDENTITY), (self._plain, MIN_EXTRA_IDENTITY)):
            if aligner is None:
                continue
            for h in aligner.map(seq):
                if h.q_en - h.q_st < max(MIN_ALIGNED, min_aligned) or h.mlen < min_identity * h.blen:
                    continue
                key = (-h.mlen, h.NM, h.r_st, h.strand)
                if h.ctg not in best or key < best[h.ctg][0]:
                    best[h.ctg] = (key, h)
        return [self._placement(h, 0, h.NM) for _, (_, h) in sorted(best.items())]

    def long_aligner(self):
        """minimap2's aligner of every reference of the panel with the long-read preset (built the
        first time, about 0.3 s for the built-in model's references)."""
        if self._long is None:
            with tempfile.TemporaryDirectory(prefix=".genointerp-panel-") as tmp:
                path = os.path.join(tmp, "long.fa")
                with open(path, "w") as fh:
                    fh.write(self._fasta())
                aligner = mappy.Aligner(path, **_LONG, best_n=self._best_n)
            if not aligner:
                raise InputError("minimap2 could not index the viral references for long reads")
            self._long = aligner
        return self._long

    def place_long(self, seq: str) -> list[LongPlacement]:
        """Every placement of a long read (called viral) on the panel's references, at most one per
        reference: its alignments there (primary, supplementary and secondary) joined, the longest
        first, each further one kept where it overlaps those kept by at most MAX_PIECE_OVERLAP of its
        read bases; kept where the pieces cover MIN_LONG_ALIGNED read bases at MIN_LONG_IDENTITY or
        more. Sorted by reference name."""
        by_ref: dict[str, list] = {}
        for h in self.long_aligner().map(seq):
            by_ref.setdefault(h.ctg, []).append(h)
        out = []
        for name in sorted(by_ref):
            kept: list = []
            for h in sorted(by_ref[name], key=lambda h: (-(h.q_en - h.q_st), h.q_st, h.r_st, h.strand)):
                overlap = sum(max(0, min(h.q_en, k.q_en) - max(h.q_st, k.q_st)) for k in kept)
                if overlap <= MAX_PIECE_OVERLAP * (h.q_en - h.q_st):
                    kept.append(h)
            aligned = sum(h.q_en - h.q_st for h in kept)
            if aligned < MIN_LONG_ALIGNED or sum(h.mlen for h in kept) < MIN_LONG_IDENTITY * sum(h.blen for h in kept):
                continue
            first = self._placement(kept[0], 0)
            out.append(LongPlacement(name, first.r_st, first.r_en, aligned, sum(h.NM for h in kept)))
        return out

    def _placement(self, h, kmer_hits: int, edits: int = 0) -> Placement:
        ref = self.refs[h.ctg]
        shift = (h.r_st // ref.length) * ref.length if ref.naming.circular else 0
        return Placement(h.ctg, h.strand, h.r_st - shift, h.r_en - shift, h.q_st, h.q_en, h.mlen, h.blen, kmer_hits,
                         edits)

    def _best(self, aligner, piece: str, min_identity: float, kmer_hits: int) -> Placement | None:
        best, key = None, None
        for h in aligner.map(piece):
            if h.q_en - h.q_st < MIN_ALIGNED or h.mlen < min_identity * h.blen:
                continue
            k = (-h.mlen, h.ctg, h.r_st, h.strand)
            if key is None or k < key:
                best, key = h, k
        return None if best is None else self._placement(best, kmer_hits)


def junction_side(host_side: str, p: Placement, length: int, extend: int = 0) -> tuple[str, int]:
    """(viral side, viral position) of a junction from a placed piece that lies next to it.

    Pieces are in the host's forward orientation. host_side '+': the host lies left of the junction
    and the piece right of it; '-': the piece lies left and the host right. Viral side '+': the
    viral sequence lies at and before the position (the junction leaves the virus going right),
    '-': at and after it. The position is the piece's aligned base nearest the junction, moved on by
    `extend` bases (a clipped piece's unaligned bases at the junction, read errors at its end).
    """
    first, last = (p.r_st - extend) % length, (p.r_en - 1 + extend) % length
    if host_side == "+":  # the junction is at the piece's left end
        return ("-", first) if p.strand > 0 else ("+", last)
    return ("+", last) if p.strand > 0 else ("-", first)


def unaligned_flank(host_side: str, p: Placement, piece: str) -> str:
    """The piece's bases between its viral alignment and the junction (host sequence, in a read
    that crosses it)."""
    return piece[: p.q_st] if host_side == "+" else piece[p.q_en:]


def entropy_ok(seq: str, min_bits: float = 1.5) -> bool:
    """Base-composition Shannon entropy of seq's A, C, G and T at least min_bits (poly-A and short
    repeats fail)."""
    codes = encode(seq)
    codes = codes[codes < 4]
    return codes.size > 0 and float(window_entropy(codes, codes.size, 4)[0]) >= min_bits


def store_panel_index(model_dir: str | Path, index) -> Path | None:
    """Store minimap2's index of the folder's references in its prebuilt index folder (`index`, the
    folder's KmerIndex loaded from there), and the references' list (PANEL_REFS), each written
    beside and renamed: ViralPanel then loads them instead of building the index and reading the
    references. Returns the index's path (None: `index` was not loaded from a prebuilt folder)."""
    if index.prebuilt is None:
        return None
    target = Path(index.prebuilt) / PANEL_INDEX
    listed = target.with_name(PANEL_REFS)
    tmp, tmp_listed = (path.with_name(f".{path.name}.{os.getpid()}") for path in (target, listed))
    try:
        panel = ViralPanel(model_dir, [], lambda message: None, index=index, index_out=tmp)
        panel.close()
        # the descriptions as the panel has them (the folder's DESCRIPTIONS_FILE's added: the
        # prebuilt folder's digest covers that file too)
        rows = "".join(f"{r.name}\t{r.length}\t{r.description}\n" for r in panel.refs.values())
        tmp_listed.write_bytes(rows.encode())
        os.replace(tmp_listed, listed)
        os.replace(tmp, target)
    finally:
        for path in (tmp, tmp_listed):
            if path.exists():
                path.unlink()
    return target


def stored_references(index) -> list[tuple[str, str, int]] | None:
    """(name, description, length) of each of the folder's references from the list stored
    beside minimap2's index (PANEL_REFS) in `index`'s prebuilt folder (whose digest vouches that
    it is of these references), in order; None where there is none, or where it is damaged or its
    lengths are not laid out in the seed index's letters (then the references are read)."""
    places = getattr(index, "places", None)
    if index.prebuilt is None or places is None:
        return None
    try:
        # bytes split at newlines alone: a description may hold any other character (\r, \f)
        text = (Path(index.prebuilt) / PANEL_REFS).read_bytes().decode()
        records = [(name, description, int(length))
                   for name, length, description in (line.split("\t", 2) for line in text.split("\n")[:-1])]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    lengths = [length for _, _, length in records]
    if (not records or min(lengths) < 1 or len({name for name, _, _ in records}) < len(records)
            or ContigSpans.of(lengths, places.letters, index.settings.k) is None):
        return None
    return records
