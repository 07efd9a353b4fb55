"""Protein evidence beside the seeds: amino-acid k-mers of the viral references' proteins.

Types of one virus family differ most at the third codon position, where a change rarely changes
the amino acid, so a read of a type no index has seen still matches the known types' proteins
where its bases no longer match theirs. The codon seeds (genointerp.viral.evidence.seeds) tolerate
third-position changes in one frame; amino-acid k-mers tolerate every synonymous change.

The index: every amino-acid seed of the references' open reading frames (stretches of at least
`min_orf` codons without a stop, in all six frames, circular contigs wrapped). A seed is a pattern
of compared ('1') and skipped ('0') residues, "110110111" by default; "1" * k is a plain k-mer.
Seeds whose compared residues hold fewer than `min_distinct` different residues are left out
(low-complexity peptides such as poly-K match anything AT-rich), and so are those found in any frame
of the negative references (listed in `protein_excluded.txt.gz`). A read is translated in all six
frames at every position; its matched seeds form stretches (matched seeds of one frame each within
one span of the previous), weighed two ways, -log10 of how often chance would give them:
  - exactly, as the nucleotide seeds (genointerp.viral.evidence.chance): W seeds tested against I index
    entries yield a stretch fixing residues r1 .. rm (the compared ones) about W * I * f(r1) ...
    f(rm) times; summed over stretches. That holds where the stretch is one match: its seeds lie
    on one diagonal of the references' frames. Each seed that lies on none with the seed before it
    (no place of either holds all but two of the other's residues on their diagonal) is another
    draw from the index and multiplies the count by I: seven residues agree by chance
    often enough that two such seeds side by side in a read of human sequence no filter saw were
    counted as one match of fourteen, 7 to 8 bits (benchmarks/human_filter.py);
  - aligned: the first seed of each stretch grown into an ungapped alignment with the references'
    proteins (genointerp.viral.evidence.extension); the best alignment counts.
A read's protein bits are the stronger of the two less log10(2), the price of choosing. Exact
stretches weigh more on short reads (an alignment of 25 residues is weak evidence next to an exact
stretch of them), alignments on reads of divergent types, whose scattered substitutions break
every further exact seed.

The index and the references' reading frames are built from the model folder's references (the
seeds' `kmer_refs.fa.gz`) and its excluded list, settings in config.json's "protein_index";
building takes about four seconds for the built-in references, so runs load them prebuilt
(genointerp.viral.evidence.prebuilt). Each seed keeps the virus of the
contigs it comes from, as the nucleotide seeds do (genointerp.viral.evidence.seeds.labelled_ids).
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.sequences import read_reference
from genointerp.report import Reporter
from genointerp.seq.alphabet import reverse_complement_codes
from genointerp.seq.idset import IdSet, member, sorted_unique
from genointerp.seq.scan import aa_hits, strand_codons
from genointerp.seq.translate import AMINO_ACIDS, STOP, aa_kmer_ids, codons, distinct_residues
from genointerp.viral.evidence.chance import (chance_bits, composition, fixed_letters, owned_positions, owner_of,
                                              stretches)
from genointerp.viral.evidence.extension import EDGE, ReferenceProteins
from genointerp.viral.evidence.seeds import (IndexSource, labelled_ids, read_fixed_lines, reference_codes,
                                             require_files, virus_counts)
from genointerp.viral.model_files import KMER_KEY, PROTEIN_EXCLUDED_FILE, PROTEIN_KEY

AA_FLOOR = 0.05  # a residue's chance probability in exact-match bits is at least 1/20 (genointerp.viral.evidence.chance)
TWO_LOOKS = math.log10(2)  # a read's protein bits are the stronger of two measures: the cost of choosing
_NEGATIVE_BLOCK = 6_000_000  # bases of a negative reference translated at once
# Seven compared residues over nine, chosen on the validation types of benchmarks/viral_calls.py
# (benchmarks/README.md): related types differ by scattered substitutions, which a contiguous
# 8-mer must avoid for eight residues in a row and this seed only at its seven.
DEFAULT_SEED = "110110111"


@dataclass(frozen=True)
class ProteinSettings:
    seed: str = DEFAULT_SEED  # residues: '1' compared, '0' skipped ("1" * k: plain k-mers); several: "a,b"
    min_orf: int = 60  # codons of a stop-free stretch for its k-mers to join the index
    min_distinct: int = 5  # different residues a k-mer's compared residues must hold

    @classmethod
    def contiguous(cls, k: int, min_orf: int = 60, min_distinct: int = 5) -> "ProteinSettings":
        return cls("1" * k, min_orf, min_distinct)

    @property
    def patterns(self) -> list[str]:
        """The seeds: each window of a read is tested with every one."""
        return self.seed.split(",")

    @property
    def span(self) -> int:
        """Residues a seed spans."""
        return len(self.patterns[0])

    @property
    def weight(self) -> int:
        """Residues a seed compares (the digits of its id)."""
        return self.patterns[0].count("1")

    @property
    def compared(self) -> np.ndarray:
        """int64 (seeds, weight): each seed's compared residues' places."""
        return np.stack([np.flatnonzero(np.frombuffer(p.encode(), np.uint8) == ord("1")) for p in self.patterns])

    def check(self) -> None:
        for p in self.patterns:
            if not p or set(p) - {"0", "1"} or p[0] != "1" or p[-1] != "1":
                raise InputError(f"protein index: a seed is a pattern of 1 (compared) and 0 (skipped) residues that "
                                 f"starts and ends with 1, not {p!r}")
        if len({(len(p), p.count("1")) for p in self.patterns}) > 1 or len(set(self.patterns)) < len(self.patterns):
            raise InputError(f"protein index: seeds {self.seed} must differ and share one span and weight")
        if not 5 <= self.weight <= 12 or self.span > 16 or len(self.patterns) > 9:
            raise InputError(f"protein index: up to 9 seeds comparing 5..12 residues over at most 16; {self.seed} "
                             f"compares {self.weight} over {self.span}")
        if self.min_orf < self.span or not 1 <= self.min_distinct <= self.weight:
            raise InputError(f"protein index: need min_orf >= the seed's span and 1 <= min_distinct <= its weight ({self})")

    def as_dict(self) -> dict:
        return {"seed": self.seed, "k": self.weight, "min_orf": self.min_orf, "min_distinct": self.min_distinct}

    @classmethod
    def from_dict(cls, entry: dict) -> "ProteinSettings":
        """From config.json's entry; folders written before spaced seeds hold k alone (k-mers)."""
        return cls(str(entry.get("seed") or "1" * int(entry["k"])), int(entry["min_orf"]), int(entry["min_distinct"]))


@dataclass
class ProteinEvidence:
    """A batch of reads' amino-acid matches, (n,) each: hits int64 (matched seeds, all frames);
    exact float64 (-log10 chance of the stretches of exact matches, summed over stretches) and
    aligned float64 (-log10 chance of the best alignment, genointerp.viral.evidence.extension)."""

    hits: np.ndarray
    exact: np.ndarray
    aligned: np.ndarray

    @property
    def bits(self) -> np.ndarray:
        """float64 (n,): the stronger measure, less log10(2) for choosing between two, at least 0."""
        return np.maximum(np.maximum(self.exact, self.aligned) - TWO_LOOKS, 0.0)


def seed_ids(aa: np.ndarray, settings: ProteinSettings, step: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per seed, (ids uint64 (n,), valid bool (n,)) of `aa_kmer_ids`, the i-th seed's ids offset by
    i * 20^weight so that one index holds them all apart."""
    width = np.uint64(20**settings.weight)
    return [(ids + np.uint64(i) * width, valid)
            for i, (ids, valid) in enumerate(aa_kmer_ids(aa, p, step) for p in settings.patterns)]


def reading_frames(name: str, seq: str, settings: ProteinSettings, circular: bool, path: str = "references"):
    """A contig's six reading frames: (protein uint8 (r,), ids, keep) per frame, where ids and keep
    hold per seed pattern its ids uint64 (r - span + 1,) and which of them may join the index
    (bool: in an open reading frame of >= min_orf codons, at least min_distinct residues, no stop)."""
    codes = reference_codes(name, seq, path)
    if circular:  # frames across the origin
        codes = np.concatenate([codes, codes[: 3 * settings.min_orf]])
    for strand in (codes, reverse_complement_codes(codes)):
        aa = codons(strand)
        for frame in range(3):
            protein = aa[frame::3]
            in_orf = _in_orf(protein, settings.min_orf, settings.span)
            ids = seed_ids(protein, settings, 1)
            keep = [valid & in_orf & (distinct_residues(protein, p, step=1) >= settings.min_distinct)
                    for p, (_, valid) in zip(settings.patterns, ids)]
            yield protein, [i for i, _ in ids], keep


def orf_kmers(records: list[tuple[str, str]], settings: ProteinSettings, circular: bool,
              path: str = "references") -> np.ndarray:
    """Sorted unique amino-acid seed ids uint64 (n,) of the contigs' open reading frames."""
    found = [ids[keep] for name, seq in records for _, per_seed, keeps in reading_frames(name, seq, settings, circular, path)
             for ids, keep in zip(per_seed, keeps)]
    return sorted_unique(np.concatenate(found)) if found else np.zeros(0, np.uint64)


def _in_orf(protein: np.ndarray, min_orf: int, k: int) -> np.ndarray:
    """bool (len - k + 1,): the k-mer at each residue lies in a stop-free stretch of >= min_orf."""
    stop = protein >= STOP
    run_id = np.cumsum(stop)  # residues between two stops share an id
    run_len = np.bincount(run_id, weights=~stop)
    good = ~stop & (run_len[run_id] >= min_orf)
    n = protein.size - k + 1
    if n <= 0:
        return np.zeros(0, bool)
    # all k residues good: a window sum over a prefix count
    prefix = np.concatenate([[0], np.cumsum(good)])
    return prefix[k:] - prefix[:-k] == k




class ProteinIndex:
    """Amino-acid seeds of the references' proteins, asked read by read in six frames; built by `of`,
    it holds the references' proteins too (`proteins`), to which its evidence aligns each match
    (genointerp.viral.evidence.extension)."""

    def __init__(self, ids: np.ndarray, settings: ProteinSettings, labels: np.ndarray | None = None,
                 viruses: tuple[str, ...] = (), proteins: ReferenceProteins | None = None,
                 table: np.ndarray | None = None) -> None:
        self.ids, self.settings = ids, settings
        self.labels, self.viruses = labels, viruses  # uint8 (n,) codes into viruses, as KmerIndex's
        self.proteins = proteins  # set by `of`, from the places of the ids kept (or prebuilt)
        self._set = IdSet(ids, table)  # table: the filter where it is prebuilt (genointerp.viral.evidence.prebuilt)

    @classmethod
    def of(cls, records: list[tuple[str, str]], settings: ProteinSettings, circular: bool,
           excluded: np.ndarray | None = None, path: str = "references") -> "ProteinIndex":
        """The index of the contigs' seeds, less `excluded` (sorted ids), labelled by virus, with
        their reading frames and the places of its seeds in them (one translation of each contig)."""
        frames, per_record, seeds, places, at = [], [], [], [], 0
        for name, seq in records:
            mine = []
            for protein, per_seed, keeps in reading_frames(name, seq, settings, circular, path):
                for ids, keep in zip(per_seed, keeps):
                    where = np.flatnonzero(keep)
                    mine.append(ids[where])
                    places.append(where + at)
                frames += [protein, np.array([EDGE], np.uint8)]
                at += protein.size + 1
            seeds += mine
            per_record.append(sorted_unique(np.concatenate(mine)) if mine else np.zeros(0, np.uint64))
        ids, labels, viruses = labelled_ids(records, per_record)
        if excluded is not None:
            keep = ~member(excluded, ids)
            ids, labels = ids[keep], labels[keep]
        index = cls(ids, settings, labels, viruses)
        if frames:
            seeds, places = np.concatenate(seeds), np.concatenate(places)
            indexed = index.contains(seeds)
            index.proteins = ReferenceProteins(np.concatenate(frames), seeds[indexed], places[indexed])
        else:
            index.proteins = ReferenceProteins(np.zeros(0, np.uint8), np.zeros(0, np.uint64), np.zeros(0, np.int64))
        return index

    @property
    def table(self) -> np.ndarray:
        """The membership filter (genointerp.seq.idset), as genointerp.viral.evidence.prebuilt stores it."""
        return self._set.table

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return self._set.contains(ids)

    def virus_hits(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """int64 (n, len(viruses)): per read (codes joined by N), its matched seeds, all six frames
        and every seed pattern, whose id one virus alone holds, by virus (zeros without labels)."""
        n, v = len(starts), len(self.viruses)
        if self.labels is None or flat.size < 3 * self.settings.span:
            return np.zeros((n, v), np.int64)
        out = np.zeros((n, v), np.int64)
        for _, _, read, _, slot in self._matches(flat, lengths, np.zeros(n, np.int64)):
            out += virus_counts(read, self.labels[slot], n, v)
        return out

    def _matches(self, flat: np.ndarray, lengths: np.ndarray, tested: np.ndarray) -> list[tuple]:
        """Per strand of reads joined by N (flat uint8 (M,), lengths int64 (n,)): (its codons,
        matched seeds' starts in them, their reads, their seed pattern's number, their ids' rows of
        `ids`, which are their rows of the places table too: its keys are the ids), from
        one compiled pass per strand and pattern (genointerp.seq.scan); every seed tested counts
        to its read's `tested` (int64 (n,), added to)."""
        m, span = flat.size, self.settings.span
        width = 20**self.settings.weight  # the i-th pattern's ids are offset by i * width: one index holds them all apart
        matched = []
        for s, aa in enumerate(strand_codons(flat)):
            found = [aa_hits(aa, pattern, i * width, lengths, s == 1, self._set, tested)
                     for i, pattern in enumerate(self.settings.patterns)]
            at = np.concatenate([a for a, _, _ in found])
            reads = owner_of(at if s == 0 else m - at - 3 * span, lengths)  # by the window's first base on the forward strand
            matched.append((aa, at, reads, np.repeat(np.arange(len(found)), [a.size for a, _, _ in found]),
                            np.concatenate([slot for _, _, slot in found])))
        return matched

    def evidence(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> ProteinEvidence:
        """Per read, from codes joined by N (flat uint8 (M,), starts and lengths int64 (n,), as
        reads.kmerize.encode_joined gives): its matched seeds, and two measures of how unlikely
        they are by chance: its stretches of exact matches, and its best alignment to the
        references' proteins, grown from the first matched seed of each stretch."""
        if self.proteins is None or self.proteins.keys.size != self.ids.size:
            raise ValueError("ProteinIndex.evidence needs the references' proteins, one row per id (ProteinIndex.of)")
        span, n, m = self.settings.span, len(starts), flat.size
        hits, aligned = np.zeros(n, np.int64), np.zeros(n)
        if m < 3 * span:
            return ProteinEvidence(hits, np.zeros(n), aligned)
        tested = np.zeros(n, np.int64)
        matched = self._matches(flat, lengths, tested)
        if not any(at.size for _, at, _, _, _ in matched):
            return ProteinEvidence(hits, np.zeros(n), aligned)
        freq = _aa_composition([aa for aa, *_ in matched], lengths,
                               sorted_unique(np.concatenate([read for _, _, read, _, _ in matched])), n)
        log_freq, mark_cluster, cluster_read, draws = [], [], [], []
        compared = self.settings.compared
        for s, (aa, at, read, seed, slot) in enumerate(matched):
            hits += np.bincount(read, minlength=n)
            if not at.size:
                continue
            frame = at % 3
            order = np.lexsort((seed, at, frame, read))
            at, read, frame, seed, slot = at[order], read[order], frame[order], seed[order], slot[order]
            opens = stretches(read, at, 3 * span, frame)
            # each compared residue's codon, once, whichever seeds compared it (a stretch keeps to one frame)
            marks, stretch, mark_read = fixed_letters(at, read, opens, 3 * compared, seed)
            log_freq.append(np.log10(freq[mark_read, aa[marks]]))
            mark_cluster.append(sum(c.size for c in cluster_read) + stretch)
            cluster_read.append(read[opens])
            # Against a million seeds, seven residues agree by chance in about one window of 1,300
            # (more in reads of skewed composition), so a read's 900 or so windows draw one now and
            # then; two side by side are two such draws, not one match of fourteen residues
            draws.append(self.proteins.draws(aa, at, slot, compared, opens, pattern=seed))
            # one alignment per stretch: the seeds after its first mostly lie on the same diagonal
            first, first_read = at[opens], read[opens]
            lo = starts[first_read] if s == 0 else m - starts[first_read] - lengths[first_read]
            score = self.proteins.align(aa, first, slot[opens], lo, lo + lengths[first_read], span)
            np.maximum.at(aligned, first_read, self.proteins.bits(score, lengths[first_read]))
        exact = chance_bits(np.concatenate(log_freq), np.concatenate(mark_cluster), np.concatenate(cluster_read),
                            tested, self.ids.size, n, np.concatenate(draws))
        return ProteinEvidence(hits, exact, aligned)


def _aa_composition(residues: list[np.ndarray], lengths: np.ndarray, reads: np.ndarray, n: int) -> np.ndarray:
    """float64 (n, 20): the residue frequencies of `reads` of n over all six frames, at least
    AA_FLOOR (residues: the codons of both strands of the reads joined by one separator, lengths
    int64 (n,)). A codon counts to the read of its first forward base: a reverse-strand codon at
    j covers forward bases m-3-j .. m-1-j, so it counts to the read of m-3-j."""
    fwd, rev = residues
    m = fwd.size + 2
    pos, owner = owned_positions(reads, lengths, m)
    on_fwd, on_rev = pos < fwd.size, m - 3 - pos >= 0
    symbols = np.concatenate([fwd[pos[on_fwd]], rev[m - 3 - pos[on_rev]]])
    return composition(symbols, np.concatenate([owner[on_fwd], owner[on_rev]]), n, len(AMINO_ACIDS), AA_FLOOR)


def build_protein_index(folder: str | Path, records: list[tuple[str, str]], negatives: list[str],
                        settings: ProteinSettings, circular: bool, report: Reporter) -> dict:
    """Write a model folder's protein-evidence file from its viral references and negative
    reference paths; returns the config.json "protein_index" entry to record."""
    settings.check()
    index = ProteinIndex(orf_kmers(records, settings, circular), settings)
    report.log(f"protein index: {index.ids.size:,} amino-acid seeds {settings.seed} from the reading frames of "
               f"{len(records):,} viral contigs")
    excluded = np.zeros(0, np.uint64)
    for path in negatives:
        excluded = np.union1d(excluded, _negative_kmers(index, path, report))
    report.log(f"protein index: {excluded.size:,} of them also occur in the negative references and are excluded")
    text = b"".join(_aa_text(excluded, settings))
    with open(Path(folder) / PROTEIN_EXCLUDED_FILE, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
        fh.write(text)
    return {**settings.as_dict(), "circular": circular, "excluded": PROTEIN_EXCLUDED_FILE,
            "n_excluded": int(excluded.size), "n_kmers": int(index.ids.size - excluded.size)}


def _negative_kmers(index: ProteinIndex, path: str, report: Reporter) -> np.ndarray:
    found, span = [], index.settings.span
    records = read_reference(path)
    total = sum(len(s) for _, s in records)
    with report.progress(f"protein index: subtracting {Path(path).name}", total) as advance:
        for name, seq in records:
            for start in range(0, max(len(seq) - 3 * span + 1, 1), _NEGATIVE_BLOCK):
                codes = reference_codes(name, seq[start : start + _NEGATIVE_BLOCK + 3 * span - 1], path)
                for strand in (codes, reverse_complement_codes(codes)):
                    for ids, valid in seed_ids(codons(strand), index.settings, 3):
                        ids = ids[valid]
                        found.append(sorted_unique(ids[index.contains(ids)]))
                advance(min(_NEGATIVE_BLOCK, len(seq) - start))
    return sorted_unique(np.concatenate(found)) if found else np.zeros(0, np.uint64)


def _aa_text(ids: np.ndarray, settings: ProteinSettings) -> list[bytes]:
    """One line per id: its compared residues, after the seed's number (0..8) where there are several."""
    k = settings.weight
    letters = np.frombuffer(AMINO_ACIDS.encode(), np.uint8)
    digits = np.zeros((ids.size, k), np.uint8)
    rest = ids.copy()
    for j in reversed(range(k)):
        digits[:, j] = (rest % np.uint64(20)).astype(np.uint8)
        rest //= np.uint64(20)
    text = letters[digits]
    if len(settings.patterns) > 1:
        text = np.concatenate([(rest.astype(np.uint8) + ord("0"))[:, None], text], 1)
    return [row.tobytes() + b"\n" for row in text]


def _read_aa_kmers(path: Path, settings: ProteinSettings) -> np.ndarray:
    k, several = settings.weight, len(settings.patterns) > 1
    rows = read_fixed_lines(path, k + several, "amino-acid k-mer list",
                            f"{k}-residue peptide" + (" after its seed's number" if several else ""))
    table = np.full(256, 255, np.uint8)
    table[np.frombuffer(AMINO_ACIDS.encode(), np.uint8)] = np.arange(20, dtype=np.uint8)
    digits = table[rows[:, several:]]
    seed = rows[:, 0].astype(np.int64) - ord("0") if several else np.zeros(len(rows), np.int64)
    if (digits == 255).any() or ((seed < 0) | (seed >= len(settings.patterns))).any():
        raise InputError(f"{path}: damaged amino-acid k-mer list (letters other than the 20 amino acids, or no such seed)")
    ids = np.zeros(len(digits), np.uint64)
    for j in range(k):
        ids = ids * np.uint64(20) + digits[:, j].astype(np.uint64)
    return sorted_unique(ids + seed.astype(np.uint64) * np.uint64(20**k))


def protein_source(folder: str | Path, config: dict) -> IndexSource | None:
    """The folder's "protein_index" entry, checked (None without one). A damaged entry or a missing
    file is an InputError."""
    entry = config.get(PROTEIN_KEY)
    if entry is None:
        return None
    folder, where = Path(folder), f"{folder}/config.json"
    try:
        source = IndexSource(ProteinSettings.from_dict(entry), bool(entry["circular"]), int(entry["n_kmers"]),
                               folder / str(config[KMER_KEY]["references"]), folder / str(entry["excluded"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{where}: damaged 'protein_index' entry ({exc})") from None
    source.settings.check()
    require_files(folder, (source.references, source.excluded), "protein index")
    return source


def load_protein_index(folder: str | Path, config: dict) -> ProteinIndex | None:
    """The model folder's protein index built from its references (None without a "protein_index"
    entry). A damaged entry or file is an InputError. genointerp.viral.evidence.prebuilt loads the same
    index from its stored arrays."""
    source = protein_source(folder, config)
    return None if source is None else build_protein_from(source)


def build_protein_from(source: IndexSource) -> ProteinIndex:
    """The protein index of `source`, built from its references and excluded list."""
    refs, settings = source.references, source.settings
    index = ProteinIndex.of(read_reference(str(refs)), settings, source.circular,
                            _read_aa_kmers(source.excluded, settings), str(refs))
    if index.ids.size != source.expected:
        raise InputError(f"{refs.parent}: the protein index holds {index.ids.size:,} k-mers, config.json says "
                         f"{source.expected:,}; {refs.name} or {source.excluded.name} is damaged")
    return index
