"""Which viral type each read comes from, and how much of each type a sample holds.

Placement: every read called viral is placed on all references of the model folder: on the
diagonals of its matched seeds where those say where it lies (genointerp.viral.typing.diagonals:
reads of the genomes the panel holds, `Typer.place_seeded`), else aligned with minimap2 (mappy,
through genointerp.viral.typing.placement's panel of the references; `Typer.place`); each
reference keeps its best placement, and the read keeps the references within MARGIN edits of its
best (edits = the alignment's edit distance plus the read's unaligned bases). A placement must
cover at least half of the read at 75 % identity or more. Long reads (placement.LONG_READ bases
and more) are placed with minimap2's long-read preset, their split alignments to a reference
joined (placement.ViralPanel.place_long): one read is one placement whatever its length, and a
long read with host sequence beside the virus (an integration) is placed by its viral part. The read's `reference` is the type
(display name: HPV16, HBV genotype C) of its best alignment, or the tied types joined by ','.

EM: a read's likelihood on a reference is (1 - e)^(n - d) e^d with d its edits and e = ERROR_RATE,
so a reference one edit worse is 1/ODDS as likely. Abundances over references start equal and are
updated for a fixed EM_ITERATIONS at most (stopping early when no abundance moves by more than
EM_TOLERANCE), over compatibility classes (reads with the same references at the same edits behind
their best: one likelihood row, weighed by its reads); reads are then shared among references by
their posterior, and references are grouped into their types (lineage genomes HPV16_v2 ... into
HPV16). Sums run in a fixed order (np.bincount over classes in order of their first read, reads in
input order), so the same reads give the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from genointerp import _scan
from genointerp.seq.idset import sorted_unique
from genointerp.viral.typing.diagonals import ContigSpans, best_per_contig, diagonal_edits
from genointerp.viral.typing.naming import name_viruses, virus_label
from genointerp.viral.typing.placed import Hit, PlacedReads, ReadType, TypedReads, TypeHits, ranks
from genointerp.viral.typing.placement import LONG_READ, ViralPanel

MARGIN = 6  # edits behind a read's best alignment that still count as a match
ERROR_RATE = 0.02  # per-base mismatch rate of the likelihood (sequencing errors + strain variation)
EM_ITERATIONS = 500
EM_TOLERANCE = 1e-9
MIN_READ_SHARE = 0.5  # a placement covers at least this share of the read


class Typer:
    """Places reads called viral on a model folder's references (lazily: the references are read
    at the first read to place, or where their names are asked for, and minimap2's aligner loads at
    the first read left to align, unless `load` loads both beforehand)."""

    def __init__(self, model_dir: str, index, log) -> None:
        self.model_dir, self.index, self.log = model_dir, index, log
        self._panel = None
        self._display: dict[str, str] | None = None  # reference -> its type's display name
        self._spans: ContigSpans | None | bool = False  # False: not looked at yet

    @property
    def panel(self) -> ViralPanel:
        if self._panel is None:  # at the first read to type, where not beforehand: its references load then, not at start
            self._load_panel()
        return self._panel

    def load(self) -> None:
        """Read the references and load the aligner now, where they are not (about 0.1 s and 65 MB
        for the built-in model's references)."""
        self._load_panel()
        self._panel.load_aligners()

    def aligner_loaded(self) -> bool:
        """Whether a short read left to align costs no aligner's load first in this process."""
        return self._panel is not None and self._panel.aligners_loaded()

    def _load_panel(self) -> None:
        """The panel's references now (0.05 s for the built-in model's); its aligner loads at its
        first read (genointerp.viral.typing.placement.StoredAligner)."""
        if self._panel is None:
            self._panel = ViralPanel(self.model_dir, [], self.log, best_n=64, index=self.index)

    def close(self) -> None:
        if self._panel is not None:
            self._panel.close()

    def spans(self) -> ContigSpans | None:
        """Where the panel's references lie in the seed index's letters (None where the index has
        no places, or they are not of these references: then every read is aligned)."""
        if self._spans is False:
            places = getattr(self.index, "places", None)
            refs = list(self.panel.refs.values())
            self._spans = None if places is None else ContigSpans.of([r.length for r in refs], places.letters,
                                                                     self.index.settings.k,
                                                                     [r.naming.circular for r in refs])
            self._names = [r.name for r in refs]
            if self._spans is not None:
                self._rank = np.argsort(np.argsort(np.array(self._names, dtype=object), kind="stable"), kind="stable")
        return self._spans

    def place_seeded(self, codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray,
                     at: np.ndarray, slot: np.ndarray, flip: np.ndarray | None, rows=None) -> list[TypeHits | None]:
        """`place_seeded_arrays`' placements as TypeHits (None for a read they do not place)."""
        placed, hits = self.place_seeded_arrays(codes, starts, lengths, first, at, slot, flip, rows)
        out: list[TypeHits | None] = [None] * lengths.size
        for i, p in zip(np.flatnonzero(placed).tolist(), hits.as_list()):
            out[i] = p
        return out

    def place_seeded_arrays(self, codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray,
                            at: np.ndarray, slot: np.ndarray, flip: np.ndarray | None,
                            rows=None) -> tuple[np.ndarray, PlacedReads]:
        """The placements of n reads (codes uint8 joined, starts and lengths int64 (n,)) on the
        diagonals of their matched seeds (first int64 (n + 1,): read i's windows first[i]:first[i + 1]
        of at, slot, flip (h,), and rows (each window's seed's row, places and first place, or None),
        as genointerp.viral.evidence.seeds.SeedEvidence.windows_of gives them): (placed bool (n,), the
        placed reads' matches in read order, as `place` gives them, on the typer's `names`). The
        reads not placed here (genointerp.viral.typing.diagonals) `place` then aligns. Long reads are
        never placed here."""
        placed = np.zeros(lengths.size, bool)
        short = np.flatnonzero(lengths < LONG_READ)
        spans = self.spans() if short.size else None
        if spans is None:
            return placed, PlacedReads.empty(self.names())
        if short.size < lengths.size:  # long reads' windows left out
            starts, lengths, first, at, slot, flip, rows = _only(short, starts, lengths, first, at, slot, flip, rows)
        # a circular index's reads across a genome's origin are placed around it
        found = diagonal_edits(codes, starts, lengths, first, at, slot, flip, self.index.places,
                               self.index.settings.k, MARGIN, spans=spans if spans.wrap else None, rows=rows)
        got = best_per_contig(found, spans, lengths, self._rank, MARGIN)
        placed[short[got.placed]] = True
        count = np.bincount(got.read, minlength=lengths.size)[got.placed]  # only placed reads have matches
        return placed, PlacedReads(self._names, count, got.contig, got.edits, got.r_st, got.r_en, got.aligned)

    def names(self) -> list[str]:
        """The references' names, in the panel's order: what the typer's PlacedReads index."""
        if self._spans is False:
            self.spans()
        return self._names

    def labels(self, placed: PlacedReads) -> list[str]:
        """`reference_label` of each read of `placed` (on the typer's names), on arrays: the
        display names of its matches at its best, sorted and joined by ','."""
        if not len(placed):
            return []
        if self._display is None:  # each reference's type, looked up once
            self._display = {name: ref.naming.display for name, ref in self.panel.refs.items()}
        shown = sorted(set(self._display.values()))
        rank_of = {d: i for i, d in enumerate(shown)}
        rank = np.array([rank_of[self._display[name]] for name in placed.names], np.int64)
        n, wide = len(placed), len(shown)
        read = np.repeat(np.arange(n), placed.count)
        top = placed.edits == np.repeat(placed.edits[placed.starts()], placed.count)  # the matches at the best
        keys = sorted_unique(read[top] * wide + rank[placed.ref[top]])
        per = np.bincount(keys // wide, minlength=n)
        cut = np.r_[0, np.cumsum(per)].tolist()
        kinds = (keys % wide).tolist()
        out = [shown[kinds[a]] for a in cut[:-1]]
        for i in np.flatnonzero(per > 1).tolist():
            out[i] = ",".join(shown[k] for k in kinds[cut[i] : cut[i + 1]])
        return out

    def place(self, seq: str) -> TypeHits | None:
        hits = []
        if len(seq) >= LONG_READ:
            hits = [Hit(p.ref, p.edits + len(seq) - p.aligned, p.r_st, p.r_en, p.aligned)
                    for p in self.panel.place_long(seq)]
            return self._within_margin(hits)
        need = math.ceil(MIN_READ_SHARE * len(seq))
        for p in self.panel.place_all(seq, need):
            edits = p.edits + p.q_st + (len(seq) - p.q_en)
            hits.append(Hit(p.ref, edits, p.r_st, p.r_en, p.q_en - p.q_st))
        return self._within_margin(hits)

    @staticmethod
    def _within_margin(hits: list[Hit]) -> TypeHits | None:
        if not hits:
            return None
        best = min(h.edits for h in hits)
        return TypeHits(sorted((h for h in hits if h.edits <= best + MARGIN), key=lambda h: (h.edits, h.ref)))

    def type_of(self, ref: str) -> str:
        return self.panel.refs[ref].naming.display

    def reference_label(self, placed: TypeHits | None) -> str:
        """The read's best type, or its tied types joined by ',' (sorted); 'unplaced' without one."""
        if placed is None:
            return "unplaced"
        if self._display is None:  # each reference's type, looked up once
            self._display = {name: ref.naming.display for name, ref in self.panel.refs.items()}
        display, best = self._display, placed.hits[0].edits
        return ",".join(sorted({display[h.ref] for h in placed.hits if h.edits == best}))


def _only(keep: np.ndarray, starts, lengths, first, at, slot, flip, rows=None) -> tuple:
    """place_seeded's reads `keep` (int64 (r,), ascending) and their windows alone."""
    count = np.diff(first)[keep]
    new_first = np.r_[0, np.cumsum(count)]
    take = np.arange(new_first[-1]) + np.repeat(first[keep] - new_first[:-1], count)
    return (starts[keep], lengths[keep], new_first, at[take], slot[take], None if flip is None else flip[take],
            None if rows is None else tuple(None if a is None else a[take] for a in rows))


def type_reads(typer: Typer, index, protein, seqs: list[str],
               seeded: list[TypeHits | None] | None = None) -> list[ReadType]:
    """The typing of each read of `seqs`, by its placement on the typer's references, else by
    its seeds (genointerp.viral.typing.naming): each read on its own, so any batch gives the same.
    `seeded`: the reads' placements on their seeds' diagonals (Typer.place_seeded) where already
    known; the reads without one are aligned."""
    placements = [p if p is not None else typer.place(seq) for seq, p in zip(seqs, seeded or [None] * len(seqs))]
    unplaced = [i for i, p in enumerate(placements) if p is None]
    names = dict(zip(unplaced, name_viruses(index, protein, [seqs[i] for i in unplaced])))
    return [ReadType(p, virus_label(names[i]) if names.get(i) else typer.reference_label(p), names.get(i))
            for i, p in enumerate(placements)]


def type_batch(typer: Typer, index, protein, seqs: list[str], reads: np.ndarray,
               seeded: tuple[np.ndarray, PlacedReads] | None = None) -> TypedReads:
    """`type_reads` as arrays: the typing of the reads `seqs`, whose indexes in their batch are
    `reads` (int64, ascending); `seeded`: (placed bool, matches) of Typer.place_seeded_arrays,
    where known. The reads placed there get their labels on arrays (Typer.labels); the others
    are typed by type_reads, one by one (only their `seqs` are read: the placed ones' may be None)."""
    names = typer.names()
    if seeded is None:
        seeded = (np.zeros(len(seqs), bool), PlacedReads.empty(names))
    placed, hits = seeded
    rest = np.flatnonzero(~placed)
    on_seeds = TypedReads(reads[placed], typer.labels(hits), [None] * int(placed.sum()),
                          np.ones(int(placed.sum()), bool), hits)
    if not rest.size:
        return on_seeds
    rest_typed = dict(zip(reads[rest].tolist(), type_reads(typer, index, protein, [seqs[i] for i in rest.tolist()])))
    return TypedReads.merge([on_seeds, TypedReads.of(rest_typed, names)])


@dataclass
class EMResult:
    refs: list[str]  # the references any read matched, sorted
    abundance: np.ndarray  # (R,) share of reads per reference
    read: np.ndarray  # (H,) read index of each hit
    ref: np.ndarray  # (H,) reference index of each hit
    posterior: np.ndarray  # (H,) the read's share on that reference
    iterations: int
    hits: PlacedReads | None = None  # the reads' matches, in the order of read and ref (type_rows reads them)


def compatibility_classes(placed: list[TypeHits], index: dict[str, int]) -> tuple[np.ndarray, list[tuple]]:
    """(class int64 (n,): each read's class, classes: their keys in order of first appearance). A
    class is the reads with the same matches, references (`index`: name -> its index) and edits
    behind their best alike: ((reference index, edits - best), ...) in the reads' match order."""
    keys: dict[tuple, int] = {}
    of = np.empty(len(placed), np.int64)
    for i, p in enumerate(placed):
        best = p.hits[0].edits
        key = tuple((index[h.ref], h.edits - best) for h in p.hits)
        of[i] = keys.setdefault(key, len(keys))
    return of, list(keys)


def class_of_reads(ref: np.ndarray, behind: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`compatibility_classes` on arrays: ref and behind int64 (H,) (each match's reference index
    and edits behind its read's best, the reads' matches one after another), count int64 (n,);
    returns (class int64 (n,), in order of first appearance; the first read of each class, int64).

    Compiled (genointerp._scan.read_classes: a table of the classes' first reads by a hash of their
    matches, each read compared match by match with the first read of the class its hash finds),
    so the classes are those of `_class_of_reads_by_text`, the definition (a dict of each read's
    matches as bytes: a Python step a read, 0.1 s of the report of 108,181 all-HPV reads, on the
    job's own process after every batch is in; numpy's hash, sorts and check took 19 ms, this 2)."""
    as64 = [np.ascontiguousarray(a, np.int64) for a in (ref, behind, count)]
    of, first = np.empty(count.size, np.int64), np.empty(count.size, np.int64)
    classes = _scan.read_classes(*as64, of, first)
    return of, first[:classes].copy()


def _class_of_reads_by_text(ref: np.ndarray, behind: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`class_of_reads`' definition: each read's matches are one byte string (16 bytes a match), so
    two reads share a key exactly where their tuples of (reference, edits behind) are equal."""
    text = np.stack([ref, behind], axis=1).astype(np.int64).tobytes()
    cut = (np.r_[0, np.cumsum(count)] * 16).tolist()
    keys: dict[bytes, int] = {}
    of = np.fromiter((keys.setdefault(text[a:b], len(keys)) for a, b in zip(cut[:-1], cut[1:])), np.int64, count.size)
    _, first = np.unique(of, return_index=True)
    return of, first


def _as_arrays(placed: PlacedReads | list[TypeHits]) -> PlacedReads:
    return placed if isinstance(placed, PlacedReads) else PlacedReads.of(placed)


def run_em(placed: PlacedReads | list[TypeHits], read_lengths: list[int] | None = None, threads: int = 1) -> EMResult:
    """Abundances of the references, and each read's posterior over its matches.

    Reads of one compatibility class (`compatibility_classes`: the same references at the same
    edits behind their best) have the same likelihoods, hence the same posterior: the EM runs over
    the classes, each weighed by its reads (as kallisto does), and each read takes its class's
    posterior. A capture panel's 100,000 reads of a few types make a few thousand classes. The
    steps run compiled (genointerp._scan.em_classes: `em_steps_numpy`'s arithmetic in its order), on
    up to `threads` threads: the references that classes join make parts whose steps share no sum,
    each stepped by one thread, so the numbers are the same bytes for any `threads`."""
    hits = _as_arrays(placed)
    used = hits.used()
    refs = sorted(hits.names[u] for u in used.tolist())
    n, r = len(hits), len(refs)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return EMResult(refs, np.zeros(0), empty, empty, np.zeros(0), 0, hits)
    index = {name: i for i, name in enumerate(refs)}
    sorted_index = np.full(len(hits.names), -1, np.int64)
    sorted_index[used] = [index[hits.names[u]] for u in used.tolist()]
    ref = sorted_index[hits.ref]
    starts = np.r_[0, np.cumsum(hits.count)[:-1]]
    behind = hits.edits - np.repeat(hits.edits[starts], hits.count)  # each read's best is its first match
    of, first_read = class_of_reads(ref, behind, hits.count)
    size = hits.count[first_read]
    take = np.arange(int(size.sum())) + np.repeat(starts[first_read] - np.r_[0, np.cumsum(size)][:-1], size)
    c_read = np.repeat(np.arange(first_read.size), size)  # (class hits,)
    c_ref, edits = ref[take], behind[take].astype(np.float64)
    weight = np.bincount(of, minlength=first_read.size).astype(np.float64)[c_read]  # the class's reads
    like = np.exp(-edits * math.log((1 - ERROR_RATE) / ERROR_RATE))  # relative to the read's best
    abundance = np.full(r, 1.0 / r)
    posterior = np.empty_like(like)
    class_first = np.r_[0, np.cumsum(size)]  # class c's hits: class_first[c]:class_first[c + 1]
    it = _scan.em_classes(class_first, c_ref, like, weight, n, EM_ITERATIONS, EM_TOLERANCE, abundance, posterior,
                          threads)
    # each read's matches are its class's, in order (the same references as its own)
    class_first = class_first[:-1]
    hit = np.arange(ref.size) + np.repeat(class_first[of] - starts, hits.count)
    return EMResult(refs, abundance, np.repeat(np.arange(n), hits.count), c_ref[hit], posterior[hit], it, hits)


def em_steps_numpy(c_read: np.ndarray, c_ref: np.ndarray, like: np.ndarray, weight: np.ndarray, classes: int, n: int,
                   iterations: int, tolerance: float, abundance: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The definition of genointerp._scan.em_classes (for tests): (abundance, posterior, steps)."""
    r, it = abundance.size, 0
    for it in range(1, iterations + 1):
        w = abundance[c_ref] * like
        posterior = w / np.bincount(c_read, w, classes)[c_read]
        new = np.bincount(c_ref, posterior * weight, r) / n
        moved = float(np.abs(new - abundance).max())
        abundance = new
        if moved < tolerance:
            break
    w = abundance[c_ref] * like
    return abundance, w / np.bincount(c_read, w, classes)[c_read], it


@dataclass
class TypeRow:
    virus: str
    type: str
    reads: float  # EM-assigned
    unique_reads: int  # reads matching no other type within MARGIN
    covered_bases: int  # of the lead reference, by reads mostly assigned to the type
    genome_length: int  # the lead reference's
    mean_depth: float
    lead: str  # the type's reference with the highest abundance
    matching_reads: int  # reads with a match on the type (within MARGIN of their best)
    reads_shared: dict[str, int] = field(default_factory=dict)  # other type -> reads of this type matching it


def covered_bases(spans: list[tuple[int, int]], length: int) -> int:
    """Bases of a genome of `length` covered by stretches [r_st, r_en) (r_st in [0, length); r_en
    past the end of a circular genome goes on from its start): _covered_by_group of one genome."""
    if not spans:
        return 0
    st, en = np.array(spans, np.int64).T
    return int(_covered_by_group(st, en, np.zeros(st.size, np.int64), np.array([length], np.int64))[0])


def _covered_by_group(st: np.ndarray, en: np.ndarray, group: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The bases each group's stretches cover, all groups at once: int64 (G,), group g's stretches those where
    `group` (int64 (s,), ascending) is g, on a genome of length[g] bases (int64 (G,)). Each stretch
    is its part up to the genome's end and its part past it from the start; their union's length
    is summed over the parts sorted by start, each counting the bases beyond the furthest end of
    those before it in its group (a type a step, a zeroed genome-long array and its running sum
    each, took a quarter of the report of 108,181 all-HPV reads, on the job's process alone)."""
    n_groups = length.size
    if not st.size:
        return np.zeros(n_groups, np.int64)
    size = length[group]
    past = en > size
    lo = np.concatenate([st, np.zeros(int(past.sum()), np.int64)])
    hi = np.concatenate([np.minimum(en, size), np.minimum(en[past] - size[past], size[past])])
    of = np.concatenate([group, group[past]])
    keep = hi > lo  # an empty part covers nothing
    lo, hi, of = lo[keep], hi[keep], of[keep]
    if not lo.size:
        return np.zeros(n_groups, np.int64)
    # every start and end lies in 0 .. wide - 1, so that a group's keys all exceed the ones before it
    wide = int(hi.max()) + 1
    order = np.argsort(of * wide + lo, kind="stable")  # by group, then start (a radix sort: np.lexsort's took 15 ms)
    lo, hi, of = lo[order], hi[order], of[order]
    # the furthest end of the parts before each in its group: a running maximum of group-offset ends
    key = of * wide + hi
    reach = np.maximum.accumulate(key) - of * wide
    before = np.r_[0, reach[:-1]]
    before[np.r_[True, of[1:] != of[:-1]]] = 0
    new = np.maximum(hi - np.maximum(lo, before), 0)
    return np.bincount(of, weights=new, minlength=n_groups).astype(np.int64)


def type_rows(placed, em: EMResult, naming, lengths: dict[str, int]) -> list[TypeRow]:
    """Per type: EM reads, unique reads, coverage and depth on its lead reference. `naming`: ref ->
    ViralName; `lengths`: ref -> genome length. Computed on the EM's arrays of the matches
    (`run_em`'s `hits`), type by type where tests/test_em_classes.py's definition goes read by read, the same numbers:
    each type's reads and depth summed in the same order."""
    hits = em.hits if em.hits is not None else _as_arrays(placed)
    types = sorted({naming[r].display for r in em.refs})
    t_index = {t: i for i, t in enumerate(types)}
    ref_type = np.array([t_index[naming[r].display] for r in em.refs], dtype=np.int64)
    hit_type = ref_type[em.ref]
    n, n_types = max(len(placed), 1), len(types)
    # a read's posterior summed over each type's references: (type, read) pairs, sorted
    keys, inverse, pair_hit = _pairs(hit_type, em.read, n, n_types)
    share = np.bincount(inverse, em.posterior, keys.size)
    pair_type, pair_read = keys // n, keys % n
    bounds = np.searchsorted(pair_type, np.arange(n_types + 1)).tolist()  # each type's pairs
    # each pair's first match (a read's first on the type): its aligned bases weigh the depth
    depth_terms = share * hits.aligned[pair_hit]
    # the types each read matches: a pair whose read matches no other type is unique to it;
    # every other type the read matches counts it as shared
    kinds = np.bincount(pair_read, minlength=n)
    unique = np.bincount(pair_type[kinds[pair_read] == 1], minlength=n_types)
    # by read, then type: the pairs are distinct, so a stable radix sort of one key orders them as
    # np.lexsort does (its sort of the 120,000 pairs of 108,181 all-HPV reads took 15 ms)
    by_read = np.argsort(pair_read * n_types + pair_type, kind="stable")
    multi = by_read[kinds[pair_read[by_read]] > 1]
    k = kinds[pair_read[multi]]
    group_start = np.arange(multi.size) - _rank_in_group(pair_read[multi])
    partner = multi[np.repeat(group_start, k) + ranks(k)]
    own = np.repeat(multi, k)
    other = pair_type[partner] != pair_type[own]
    shared_keys, shared_counts = np.unique(pair_type[own][other] * n_types + pair_type[partner][other],
                                           return_counts=True)
    shared_bounds = np.searchsorted(shared_keys // n_types, np.arange(n_types + 1)).tolist()
    # each type's lead reference: the highest abundance, then the first name
    lead_of = np.full(n_types, -1, np.int64)
    order = np.lexsort((np.arange(len(em.refs)), -em.abundance, ref_type))
    first_of_type = np.r_[True, ref_type[order][1:] != ref_type[order][:-1]]
    lead_of[ref_type[order][first_of_type]] = order[first_of_type]
    # the lead's stretches covered by the reads mostly assigned to the type (each read's first match on it)
    on_lead = np.flatnonzero((em.ref == lead_of[hit_type]) & (share[inverse] >= 0.5))
    on_lead = on_lead[_first_of_each(em.read[on_lead] * len(em.refs) + em.ref[on_lead])]
    lead_type = hit_type[on_lead]
    by_type = np.argsort(lead_type.astype(np.int16) if n_types < 1 << 15 else lead_type, kind="stable")
    lead_order = on_lead[by_type]
    lead_length = np.array([lengths[em.refs[int(i)]] for i in lead_of.tolist()], np.int64)
    covered_of = _covered_by_group(hits.r_st[lead_order], hits.r_en[lead_order], lead_type[by_type], lead_length)
    terms = depth_terms.tolist()
    rows = []
    for t, name in enumerate(types):
        a, b = bounds[t], bounds[t + 1]
        lead_ref = em.refs[int(lead_of[t])]
        length = lengths[lead_ref]
        reads = float(share[a:b].sum())
        # in order, from 0.0, as a running sum (np.cumsum's): Python's sum of floats adds so
        depth_bases = sum(terms[a:b], 0.0)
        covered = int(covered_of[t])
        sa, sb = shared_bounds[t], shared_bounds[t + 1]
        shared = {types[int(o)]: int(c) for o, c in zip(shared_keys[sa:sb] % n_types, shared_counts[sa:sb])}
        naming_t = naming[lead_ref]
        rows.append(TypeRow(naming_t.virus, name, reads, int(unique[t]), covered, length, depth_bases / length, lead_ref,
                            b - a, shared))
    rows.sort(key=lambda r: (-round(r.reads, 6), r.type))
    return rows


def _pairs(hit_type: np.ndarray, read: np.ndarray, n: int, n_types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (type, read) pairs of the matches (hit_type, read int64 (h,)), as np.unique of
    hit_type * n + read gives them: (keys sorted, each match's pair, each pair's first match).
    Where the reads come in order (run_em's matches, read by read), a stable sort of the types
    alone puts the keys in order: a radix sort of 16-bit types, where np.unique's sorts of 354,116
    int64 keys took 0.03 s of the report of 108,181 all-HPV reads (the job's process alone, after
    every batch is in)."""
    key = hit_type * n + read
    if not key.size or n_types >= 1 << 15 or bool((read[1:] < read[:-1]).any()):
        keys, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.ravel()
        return keys, inverse, np.unique(inverse, return_index=True)[1]
    order = np.argsort(hit_type.astype(np.int16), kind="stable")  # each type's matches in read order
    ordered = key[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    inverse = np.empty(key.size, np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse, order[first]  # a pair's first in `order` is its first match: the sort is stable


def _first_of_each(key: np.ndarray) -> np.ndarray:
    """bool (k,): each key's first appearance, as np.unique's return_index finds them (a stable
    sort: where the keys come nearly in order, as a read's matches on the leads do, timsort's runs
    are long, where np.unique then np.sort of the places took 0.01 s of the report of 108,181
    all-HPV reads)."""
    first = np.zeros(key.size, bool)
    if key.size:
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        first[order[np.r_[True, ordered[1:] != ordered[:-1]]]] = True
    return first


def _rank_in_group(values: np.ndarray) -> np.ndarray:
    """Each element's place within its run of equal `values` (runs consecutive)."""
    if not values.size:
        return values
    start = np.r_[True, values[1:] != values[:-1]]
    return ranks(np.diff(np.r_[np.flatnonzero(start), values.size]))
