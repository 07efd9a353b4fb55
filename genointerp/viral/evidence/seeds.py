"""Exact-match evidence beside the model: an index of the viral references' spaced seeds.

A model folder may carry the viral references its model was trained on (`kmer_refs.fa.gz`), the
list of their seeds that also occur in the negative references (`kmer_excluded.txt.gz`), and the
settings in config.json's "kmer_index". The index is built from these: the canonical seeds
(forward or reverse complement, whichever id is smaller) of the references, circular ones
wrapped, minus the excluded ones, minus low-complexity windows (Shannon entropy of their base
composition below `min_entropy` bits: AT-rich stretches and short repeats, which other genomes
share by chance). Shipping references rather than the index keeps a model small (the built-in
model's genomes are 1.0 MB gzipped against 23 MB of ids) and readable; runs load the index
prebuilt from the folder or the user's cache (genointerp.viral.evidence.prebuilt), and look reads up in
it in one compiled pass (genointerp.seq.scan), the numpy code here being the definition.

A seed is a pattern over a window of k bases: '1' positions must match, '0' positions may differ
("11011011..." for the built-in index). A pattern of only '1's is a plain k-mer. The built-in
pattern skips every third base because most of an HPV genome codes for protein and related types
differ mostly at the third codon position (synonymous changes): whichever of its three offsets
falls in frame with a read's codons tolerates those differences. At the same weight (compared
bases, hence the same chance of a random match), it finds reads of unseen HPV types that plain
k-mers miss (benchmarks/README.md, "Exact-match evidence"). Patterns are palindromes, so one pattern serves both
strands and canonical ids work as for k-mers.

A read's `kmer_hits` is the number of its window positions whose seed is in the index; `min_hits`
of them are evidence that the read is viral. Its bits weigh its stretches of matched windows by how
often chance gives them (genointerp.viral.evidence.chance); a stretch whose windows are matched at
unrelated places of the references is as many chance draws from the index, which the seeds' places
(genointerp.viral.evidence.places, kept with the index) tell apart from one match.

Each seed also keeps the virus of the reference contigs it comes from (`labels`, a code into
`viruses`, as genointerp.viral.panel names them; AMBIGUOUS when contigs of two viruses hold it),
so that a read called viral that no reference places can still be named at the virus level
(genointerp.viral.typing.naming).
"""

from __future__ import annotations

import dataclasses
import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.inputs import first_duplicate
from genointerp.io.sequences import read_reference
from genointerp.report import Reporter
from genointerp.seq.alphabet import INVALID, N_CODE, encode, first_invalid, reverse_complement_codes
from genointerp.seq.entropy import window_entropy
from genointerp.seq.idset import IdSet, member, sorted_unique
from genointerp.seq.kmers import MAX_COUNT_K, decode_kmers, kmer_ids, reverse_complement_ids
from genointerp.seq.scan import SeedHits, seed_hits
from genointerp.seq.scan import stretch_sums
from genointerp.viral.evidence.chance import owner_of_ascending, read_composition, stretch_bits, stretches
from genointerp.viral.evidence.places import ReferenceBases
from genointerp.viral.model_files import KMER_EXCLUDED_FILE, KMER_KEY, REFS_FILE
from genointerp.viral.panel import name_reference

# Chosen on held-out genomes (benchmarks/README.md "Exact-match evidence", benchmarks/kmer_evidence.py): weight 18
# over 26 bases, every third base skipped, entropy >= 1.5 and three hits.
CODON_SEED = "11" + "011" * 8
DEFAULT_SEED, DEFAULT_MIN_HITS, DEFAULT_MIN_ENTROPY = CODON_SEED, 3, 1.5
MIN_WEIGHT = 11  # fewer compared bases match any genome by chance
# A base's chance probability in `bits` is at least this (conservative: a read's own skew, e.g. an
# AT-rich stretch or a poly-G tail, must not make the rest of it look unlikely)
NT_FLOOR = 0.25
_NEGATIVE_BLOCK = 8_000_000  # bases of a negative reference scanned at once (~0.5 GB of temporaries)
AMBIGUOUS = 255  # the label of a seed that contigs of two viruses hold (and of every seed past 255 viruses)


@dataclass(frozen=True)
class KmerSettings:
    seed: str = DEFAULT_SEED  # '1': compared base, '0': skipped; "1" * k for plain k-mers
    min_hits: int = DEFAULT_MIN_HITS
    min_entropy: float = DEFAULT_MIN_ENTROPY

    @classmethod
    def contiguous(cls, k: int, min_hits: int = DEFAULT_MIN_HITS, min_entropy: float = DEFAULT_MIN_ENTROPY) -> "KmerSettings":
        return cls("1" * k, min_hits, min_entropy)

    @property
    def k(self) -> int:
        """The window a seed spans (bases)."""
        return len(self.seed)

    @property
    def weight(self) -> int:
        """Bases a seed compares."""
        return self.seed.count("1")

    def describe(self) -> str:
        return f"{self.k}-mers" if self.weight == self.k else f"seeds {self.seed} (weight {self.weight})"

    def check(self) -> None:
        if not self.seed or set(self.seed) - {"0", "1"}:
            raise InputError(f"k-mer index: a seed is a pattern of 1 (compared) and 0 (skipped), not {self.seed!r}")
        if self.seed[0] != "1" or self.seed != self.seed[::-1]:
            raise InputError(f"k-mer index: seed {self.seed} must start with 1 and read the same backwards "
                             "(one pattern for both strands)")
        if self.weight < MIN_WEIGHT or self.k > MAX_COUNT_K:
            raise InputError(f"k-mer index: a seed must compare at least {MIN_WEIGHT} bases (fewer match any genome by "
                             f"chance) and span at most {MAX_COUNT_K}; {self.seed} compares {self.weight} over {self.k}")
        if self.min_hits < 1:
            raise InputError(f"k-mer index: min_hits must be at least 1, not {self.min_hits}")
        if not 0 <= self.min_entropy <= 2:
            raise InputError(f"k-mer index: min_entropy must be 0..2 bits, not {self.min_entropy}")


def seed_mask(seed: str) -> np.uint64:
    """The bits of a window's 2-bit id (first base highest) that a seed compares."""
    return np.uint64(int("".join("11" if c == "1" else "00" for c in seed), 2))


def strand_ids(codes: np.ndarray, seed: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(forward ids uint64 (..., L-k+1), reverse-complement ids alike, valid bool (..., L-k+1)) of
    every k-window of codes uint8 (..., L), k = len(seed), skipped bases zeroed; valid is False where
    the window holds an N (or any code >= 4), whose ids are meaningless."""
    k = len(seed)
    (fwd, valid), rev = kmer_ids(codes, k), reverse_complement_ids(codes, k)
    if "0" in seed:  # a palindromic seed compares the same bases on the reverse strand
        mask = seed_mask(seed)
        fwd &= mask
        rev &= mask
    return fwd, rev, valid


def canonical_ids(codes: np.ndarray, seed: str) -> tuple[np.ndarray, np.ndarray]:
    """Canonical seed ids uint64 (..., L-k+1) of every k-window of codes uint8 (..., L), k =
    len(seed): the window's id with skipped bases zeroed, the smaller of both strands; and valid
    bool (..., L-k+1): False where the window holds an N (or any code >= 4), whose id is meaningless."""
    fwd, rev, valid = strand_ids(codes, seed)
    return np.minimum(fwd, rev), valid


def complex_enough(codes: np.ndarray, k: int, min_entropy: float) -> np.ndarray:
    """bool (M-k+1,): the Shannon entropy (bits) of each window's base composition >= min_entropy."""
    n = codes.size - k + 1
    if n <= 0 or min_entropy <= 0:
        return np.ones(max(n, 0), dtype=bool)
    return window_entropy(codes, k, 4) >= min_entropy - 1e-9


def reference_codes(name: str, seq: str, path: str) -> np.ndarray:
    """uint8 (len,) codes of a reference contig; IUPAC letters count as N (their k-mers are skipped)."""
    raw = np.frombuffer(seq.encode("ascii", "replace"), np.uint8)
    if (bad := first_invalid(raw)) is not None:
        raise InputError(f"{path}: contig {name}: position {bad + 1}: {chr(raw[bad])!r} is not a nucleotide letter")
    return encode(raw)


def joined_contigs(records: list[tuple[str, str]], wrap: int, path: str = "references") -> np.ndarray:
    """uint8 (M,): the contigs' codes one after another, each followed by its own first `wrap`
    bases again (circular contigs: windows across the origin; 0 for linear ones) and then an N, so
    that no window spans two contigs."""
    parts = []
    for name, seq in records:
        codes = reference_codes(name, seq, path)
        parts += [np.concatenate([codes, codes[:wrap]]) if wrap else codes, np.array([N_CODE], np.uint8)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)


def reference_kmers(records: list[tuple[str, str]], settings: KmerSettings, circular: bool,
                    path: str = "references") -> np.ndarray:
    """Sorted unique canonical seed ids uint64 (n,) of the contigs' windows, complex enough, each
    circular contig wrapped by k-1 bases so windows across its origin count. Contigs are joined by
    an N so no window spans two of them."""
    k = settings.k
    codes = joined_contigs(records, k - 1 if circular else 0, path)
    if codes.size < k:
        return np.zeros(0, np.uint64)
    ids, valid = canonical_ids(codes, settings.seed)
    return sorted_unique(ids[valid & complex_enough(codes, k, settings.min_entropy)])


def reference_places(records: list[tuple[str, str]], index: "KmerIndex", circular: bool,
                     path: str = "references") -> ReferenceBases:
    """The places of the index's seeds in both strands of the contigs (ReferenceBases), each
    circular contig wrapped by 2k bases so that a diagonal runs on across its origin."""
    k = index.settings.k
    forward = joined_contigs(records, 2 * k if circular else 0, path)
    letters = np.concatenate([forward, reverse_complement_codes(forward)])
    if letters.size < k:
        return ReferenceBases(letters, np.zeros(0, np.uint64), np.zeros(0, np.int64))
    ids, rev, valid = strand_ids(letters, index.settings.seed)
    # the windows that read as their canonical id forward (the reverse strand's copy of each is in
    # the letters' other half), looked up in id order: nearly all are in the index, and a binary
    # search for each in turn would miss the cache at every step (seconds for the built-in panel)
    where = np.flatnonzero(valid & (ids <= rev))
    order = np.argsort(ids[where], kind="stable")
    ids, where = ids[where][order], where[order]
    keep = member(index.ids, ids)
    return ReferenceBases(letters, ids[keep], where[keep])


def labelled_ids(records: list[tuple[str, str]], per_record: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(sorted unique ids uint64 (n,), labels uint8 (n,), viruses): the ids of every contig
    (`per_record`, one array per record), each id labelled with the code in `viruses` of the one
    virus whose contigs hold it, AMBIGUOUS where contigs of several viruses do. The viruses are
    genointerp.viral.panel's (HPV16_v2 -> HPV), in order of first appearance; past 255 of them (a
    folder of contigs with names no virus matches) every id is AMBIGUOUS."""
    groups: dict[str, list[np.ndarray]] = {}
    for (name, _), ids in zip(records, per_record, strict=True):
        groups.setdefault(name_reference(name).virus, []).append(ids)
    viruses = tuple(groups)
    parts = [sorted_unique(np.concatenate(arrays)) for arrays in groups.values()]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint8), viruses
    ids = np.concatenate(parts)
    code = np.repeat(np.arange(len(parts)), [p.size for p in parts])
    order = np.argsort(ids, kind="stable")
    ids, code = ids[order], code[order]
    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if ids.size else np.zeros(0, np.int64)
    labels = np.where(np.diff(np.r_[first, ids.size]) > 1, AMBIGUOUS, code[first])
    if len(viruses) >= AMBIGUOUS:
        labels[:] = AMBIGUOUS
    return ids[first], labels.astype(np.uint8), viruses


def virus_counts(read: np.ndarray, label: np.ndarray, n: int, n_viruses: int) -> np.ndarray:
    """int64 (n, n_viruses): per read, its matched seeds labelled with each virus (read, label
    (h,) per matched seed; AMBIGUOUS ones count to none)."""
    keep = label != AMBIGUOUS
    flat = read[keep].astype(np.int64) * n_viruses + label[keep]
    return np.bincount(flat, minlength=n * n_viruses).reshape(n, n_viruses)


def shared_kmers(index: "KmerIndex", path: str, report: Reporter) -> np.ndarray:
    """Sorted ids uint64 (m,) of the index's seeds that occur, either strand, in the reference at
    `path`; scanned in blocks so a whole genome needs no more memory than one block."""
    found, k = [], index.settings.k
    records = read_reference(path)
    total = sum(len(s) for _, s in records)
    with report.progress(f"k-mer index: subtracting {Path(path).name}", total) as advance:
        for name, seq in records:
            for start in range(0, max(len(seq) - k + 1, 1), _NEGATIVE_BLOCK):
                codes = reference_codes(name, seq[start : start + _NEGATIVE_BLOCK + k - 1], path)
                if codes.size >= k:
                    ids, valid = canonical_ids(codes, index.settings.seed)
                    found.append(ids[valid][index.contains(ids[valid])])
                advance(min(_NEGATIVE_BLOCK, len(seq) - start))
    return sorted_unique(np.concatenate(found)) if found else np.zeros(0, np.uint64)


@dataclass
class KmerIndex:
    """Sorted canonical seed ids, answering membership through an IdSet (a bit filter in front)."""

    ids: np.ndarray  # sorted unique canonical seed ids, uint64 (n,)
    settings: KmerSettings
    labels: np.ndarray | None = None  # uint8 (n,): each seed's virus, a code into `viruses` (or AMBIGUOUS)
    viruses: tuple[str, ...] = ()
    table: np.ndarray | None = None  # the IdSet's filter where it is prebuilt (genointerp.viral.evidence.prebuilt)
    # the prebuilt index's folder, where minimap2's index of the references may be (genointerp.viral.typing.placement)
    prebuilt: Path | None = field(default=None, compare=False)
    # where each seed lies in the references, which `evidence` needs (set by `of`, or prebuilt)
    places: ReferenceBases | None = field(default=None, compare=False)
    # the ids by their hash (genointerp.seq.idset.build_lookup), where prebuilt: the look-ups read it
    lookup: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        self._set = IdSet(self.ids, self.table, self.lookup)
        self.table = self._set.table

    @classmethod
    def of(cls, records: list[tuple[str, str]], settings: KmerSettings, circular: bool,
           excluded: np.ndarray | None = None, path: str = "references") -> "KmerIndex":
        """The index of the contigs' seeds, less `excluded` (sorted ids), labelled by virus, with
        the places of its seeds in both strands of the contigs."""
        ids, labels, viruses = labelled_ids(records, [reference_kmers([r], settings, circular, path) for r in records])
        if excluded is not None:
            keep = ~member(excluded, ids)
            ids, labels = ids[keep], labels[keep]
        index = cls(ids, settings, labels, viruses)
        index.places = reference_places(records, index, circular, path)
        return index

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """bool (m,): each of ids uint64 (m,) is in the index."""
        return self._set.contains(ids)

    def hits(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hits int64 (n,), clean k-mers int64 (n,)) per read, from reads codes joined by N
        (flat uint8 (M,), starts and lengths int64 (n,), as reads.kmerize.encode_joined gives):
        the number of window positions found in the index and the number free of N."""
        _, hits, read = self._matches(flat, lengths)
        return np.bincount(read, minlength=len(starts)), hits.clean

    def _matches(self, flat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, SeedHits, np.ndarray]:
        """(codes with N for odd letters (M,), the matched windows (SeedHits), their reads (h,)),
        looked up in one compiled pass (genointerp.seq.scan)."""
        flat = np.where(flat == INVALID, N_CODE, flat)
        hits = seed_hits(flat, lengths, self.settings.k, seed_mask(self.settings.seed), self._set)
        return flat, hits, owner_of_ascending(hits.at, lengths)  # seed_scan's windows come in order of start

    def virus_hits(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """int64 (n, len(viruses)): per read (codes joined by N, as `hits` takes them), its matched
        windows whose seed one virus alone holds, by virus (zeros without labels)."""
        n, v = len(starts), len(self.viruses)
        if self.labels is None:
            return np.zeros((n, v), np.int64)
        _, hits, read = self._matches(flat, lengths)
        return virus_counts(read, self.labels[hits.slot], n, v)

    def evidence(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> "SeedEvidence":
        """Per read (codes joined by N, as `hits` takes them): its matched windows, and how much
        independent evidence they are (SeedEvidence)."""
        if self.places is None or self.places.keys.size != self.ids.size:  # the look-ups' rows are the table's
            raise ValueError("KmerIndex.evidence needs the references' places, one row per id (KmerIndex.of, or prebuilt)")
        k, n = self.settings.k, len(starts)
        if flat.size < k:
            return SeedEvidence.none(n)
        flat, hits, read = self._matches(flat, lengths)
        at, clean = hits.at, hits.clean
        # A stretch: matched windows each within k of the previous (one stretch of matching
        # sequence, which overlapping windows would otherwise count several times).
        opens = stretches(read, at, k)
        of = read[opens]
        compared = np.flatnonzero(np.frombuffer(self.settings.seed.encode(), np.uint8) == ord("1"))
        freq = read_composition(flat, lengths, of, 4, NT_FLOOR)  # (n, 4), of the reads with a stretch
        # Windows of one stretch matched at unrelated places are as many chance draws from the index
        # (genointerp.viral.evidence.places): two such windows a few bases apart in a human read
        # were otherwise one match of some 30 fixed bases.
        # the check reads every matched seed's row of the table: kept for the typing on the diagonals
        rows = (np.empty(at.size, np.int64), np.empty(at.size, np.int64))
        draws = self.places.stretch_draws(flat, at, hits.slot, compared[None, :], opens, k, hits.flip,
                                          place=hits.place, rows=rows)
        hits = dataclasses.replace(hits, row=rows[0], count=rows[1])
        # Either strand's seed may match a window: twice the windows tested.
        # each read's four log frequencies, then each stretch's fixed letters' summed (the same
        # numbers as the log of each letter's frequency, added as chance_bits adds them:
        # genointerp.viral.evidence.chance.fixed_letters and chance_bits are the definition)
        log_p = stretch_sums(at, opens, compared, flat, read, np.log10(freq).ravel(), 4)
        bits = stretch_bits(log_p, of, 2 * clean, self.ids.size, n, draws)
        return SeedEvidence(hits=np.bincount(read, minlength=n), clean=clean, clusters=np.bincount(of, minlength=n),
                            bits=bits, matches=hits)


@dataclass
class SeedEvidence:
    """A batch of reads' seed matches, int64 (n,) each but `bits`.

    hits: window positions whose seed is in the index (one ~30 bp match counts up to k - weight + 1
    times over); clean: window positions free of N; clusters: stretches of matched windows, each
    within k of the previous; bits: float64, how unlikely the stretches are by chance, -log10
    summed over stretches (genointerp.viral.evidence.chance).
    """

    hits: np.ndarray
    clean: np.ndarray
    clusters: np.ndarray
    bits: np.ndarray
    matches: SeedHits | None = None  # the matched windows themselves, in order of start (None: none)

    @classmethod
    def none(cls, n: int) -> "SeedEvidence":
        zero = np.zeros(n, np.int64)
        return cls(zero, zero.copy(), zero.copy(), np.zeros(n))

    def windows_of(self, reads: np.ndarray) -> tuple:
        """The matched windows of `reads` (int64 (r,), ascending indexes into the batch): (first
        int64 (r + 1,): reads[i]'s windows are first[i]:first[i + 1] of the rest; at, slot int64,
        flip bool (w,); rows: (row, count, place) int64 (w,) each, each window's seed's row of the
        places table and first place as the evidence read them (genointerp.seq.scan.SeedHits; place
        None without the index's lookup table), or None), as
        genointerp.viral.typing.typer.Typer.place_seeded takes them."""
        if self.matches is None:
            zero = np.zeros(0, np.int64)
            return np.zeros(reads.size + 1, np.int64), zero, zero, None, None
        m = self.matches
        count = self.hits[reads]
        out = np.r_[0, np.cumsum(count)]
        if reads.size == self.hits.size:  # every read (ascending, so in order): the windows as they are
            take = slice(None)
        else:  # the chosen reads' windows, picked by a mask (a copy each, where indexes cost a read each)
            chosen = np.zeros(self.hits.size, bool)
            chosen[reads] = True
            take = np.repeat(chosen, self.hits)
        rows = None if m.row is None else (m.row[take], m.count[take], None if m.place is None else m.place[take])
        return out, m.at[take], m.slot[take], m.flip[take], rows


def build_index(folder: str | Path, viral: list[str], negatives: list[str], settings: KmerSettings,
                circular: bool, report: Reporter) -> dict:
    """Write a model folder's k-mer evidence files from viral reference paths (FASTA/GenBank) and
    negative reference paths; returns the config.json "kmer_index" entry to record."""
    settings.check()
    folder = Path(folder)
    records = [(name, seq) for path in viral for name, seq in read_reference(path)]
    if (dup := first_duplicate([name for name, _ in records])) is not None:
        raise InputError(f"viral references: contig name {dup!r} appears twice")
    index = KmerIndex(reference_kmers(records, settings, circular), settings)
    report.log(f"k-mer index: {index.ids.size:,} canonical {settings.describe()} from {len(records):,} viral contigs")
    excluded = np.zeros(0, np.uint64)
    for path in negatives:
        excluded = np.union1d(excluded, shared_kmers(index, path, report))
    report.log(f"k-mer index: {excluded.size:,} of them also occur in the negative references and are excluded")
    refs_text = "".join(f">{name}\n{seq}\n" for name, seq in records).encode()
    _write_gzip(folder / REFS_FILE, refs_text)
    _write_gzip(folder / KMER_EXCLUDED_FILE, b"".join(kmer_text(excluded, settings.seed)))
    return {"k": settings.k, "seed": settings.seed, "min_hits": settings.min_hits, "min_entropy": settings.min_entropy, "circular": circular,
            "references": REFS_FILE, "excluded": KMER_EXCLUDED_FILE, "n_contigs": len(records),
            "n_excluded": int(excluded.size), "n_kmers": int(index.ids.size - excluded.size),
            "sources": {"viral": [str(p) for p in viral], "negative": [str(p) for p in negatives]}}


def kmer_text(ids: np.ndarray, seed: str) -> list[bytes]:
    """One line b'ACNT...\\n' per seed id of ids uint64 (n,), N at the bases the seed skips."""
    letters = decode_kmers(ids, len(seed))
    letters[:, [i for i, c in enumerate(seed) if c == "0"]] = ord("N")
    return [row.tobytes() + b"\n" for row in letters]


def _write_gzip(path: Path, data: bytes) -> None:
    # mtime 0 and no file name in the header: the same index gives the same bytes
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
        fh.write(data)


@dataclass(frozen=True)
class IndexSource:
    """What a model folder's config.json says one of its indexes is built from: the seed index or
    the protein index."""

    settings: object  # KmerSettings, or genointerp.viral.evidence.protein.ProteinSettings
    circular: bool
    expected: int  # seeds the index must hold (config.json's n_kmers)
    references: Path
    excluded: Path


def index_source(folder: str | Path, config: dict, min_hits: int | None = None) -> IndexSource | None:
    """The folder's "kmer_index" entry, checked (None without one), with `min_hits` in place of the
    recorded one when given. A damaged entry or a missing file is an InputError."""
    entry = config.get(KMER_KEY)
    if entry is None:
        return None
    folder, where = Path(folder), f"{folder}/config.json"
    try:
        settings = KmerSettings(str(entry.get("seed", "1" * int(entry["k"]))),  # k alone: plain k-mers
                                int(entry["min_hits"] if min_hits is None else min_hits), float(entry["min_entropy"]))
        source = IndexSource(settings, bool(entry["circular"]), int(entry["n_kmers"]),
                             folder / str(entry["references"]), folder / str(entry["excluded"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{where}: damaged 'kmer_index' entry ({exc})") from None
    settings.check()
    require_files(folder, (source.references, source.excluded), "k-mer index")
    return source


def load_index(folder: str | Path, config: dict, min_hits: int | None = None) -> KmerIndex | None:
    """The model folder's k-mer index built from its references (None when its config.json has no
    "kmer_index"), with `min_hits` in place of the recorded one when given. A damaged entry or file
    is an InputError. genointerp.viral.evidence.prebuilt loads the same index from its stored arrays."""
    source = index_source(folder, config, min_hits)
    return None if source is None else build_from(source)


def build_from(source: IndexSource) -> KmerIndex:
    """The seed index of `source`, built from its references and excluded list."""
    settings, refs = source.settings, source.references
    index = KmerIndex.of(read_reference(str(refs)), settings, source.circular,
                         _read_kmers(source.excluded, settings.seed), str(refs))
    if index.ids.size != source.expected:
        raise InputError(f"{refs.parent}: the k-mer index holds {index.ids.size:,} k-mers, config.json says "
                         f"{source.expected:,}; {refs.name} or {source.excluded.name} is damaged")
    return index


def require_files(folder: Path, paths, what: str) -> None:
    """An InputError for the first of an index's `paths` that is missing from model `folder`."""
    for path in paths:
        if not path.is_file():
            raise InputError(f"{folder}: config.json names a {what} file {path.name} that is missing")


def read_fixed_lines(path: Path, width: int, what: str, item: str) -> np.ndarray:
    """uint8 (n, width): the lines of a gzipped file of lines `width` characters long (none for an
    empty file); a damaged file is an InputError naming `what` and `item`."""
    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: damaged {what} ({exc})") from None
    rows = np.frombuffer(data, np.uint8)
    if rows.size % (width + 1) or (rows.reshape(-1, width + 1)[:, width] != ord("\n")).any():
        raise InputError(f"{path}: damaged {what} (expected one {item} per line)")
    return rows.reshape(-1, width + 1)[:, :width]


def _read_kmers(path: Path, seed: str) -> np.ndarray:
    """Sorted unique canonical ids uint64 (n,) of a file of one seed per line (gzip; N where the
    seed skips a base, as kmer_text writes)."""
    k, compared = len(seed), np.frombuffer(seed.encode(), np.uint8) == ord("1")
    rows = read_fixed_lines(path, k, "k-mer list", f"{k}-base seed")
    if rows.size == 0:
        return np.zeros(0, np.uint64)
    codes = encode(rows)
    if (codes[:, compared] >= N_CODE).any():
        raise InputError(f"{path}: damaged k-mer list (letters other than A, C, G, T)")
    codes[:, ~compared] = 0  # skipped bases: any letter gives the same id
    ids, _ = canonical_ids(codes, seed)  # rows (n, k) -> (n, 1)
    return np.unique(ids[:, 0])


def index_files(folder: str | Path, config: dict) -> list[Path]:
    """The k-mer index files of a model folder (part of its digest), none without an index."""
    entry = config.get(KMER_KEY)
    if not isinstance(entry, dict):
        return []
    return [Path(folder) / str(entry.get(key, "")) for key in ("references", "excluded")]

