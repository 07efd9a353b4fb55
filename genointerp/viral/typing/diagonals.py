"""Typing where the seeds already say where a read lies: placements on their diagonals.

A read called viral matched the seed index at dozens of windows, and the index keeps every place
of every seed in the references (genointerp.viral.evidence.places.ReferenceBases: both strands'
bases, each contig followed by its first `wrap` bases again where the index is circular, then an
N). Each place of each matched seed is a diagonal: the read's base j faces letter d + j. A read of a
panel genome (sequencing errors and a few strain differences) lies on the diagonal of its genome
and of each close relative; its mismatches there, or along two diagonals a few bases apart with
the gap between (an indel), are its edits: what minimap2 (genointerp.viral.typing.placement) spends
some 0.15 ms a read finding with 11-mer seeds, chaining and dynamic programming over 562 genomes.
So (`diagonal_edits`, compiled; `diagonal_edits_numpy` is its definition):

- every distinct diagonal of a read's matched seeds is a placement: mismatches over the whole read;
- with one gap: the read's first part on one diagonal and the rest on another at most the margin
  plus the read's best apart (a wider gap costs more edits than the margin allows), at the best
  split, for every such pair of its diagonals, and from each diagonal whose mismatches lie in its
  ends (ENDS bases at each end: an indel there, whose short side matched no seed) to every
  diagonal that close;
- each reference keeps its best (fewest edits, then lowest start, then reverse strand first,
  minimap2's order of equal alignments in `ViralPanel.place_all`), and the read keeps the references
  within the typer's MARGIN of its best, as the aligner's placements are kept (`best_per_contig`);
- a read across a circular genome's origin, further than the index's short wrap (2k bases), has
  a diagonal that leaves its contig's letters; so does a read near a genome's start, whose first
  seeds also lie in the wrap, where that copy's diagonal runs on past it. Such a read's diagonals
  are taken around their genomes (each modulo the length of the genome its first seed place lies
  in, on that strand: the wrap's copy and the genome's own diagonal become one) and every
  placement's letters read around the genome, as minimap2 aligns it to the genome with its own
  wrap (genointerp.viral.typing.placement.WRAP). These were nearly all the reads left to the
  aligner (1,729 of 1,794 of 108,181 ART reads of the HPV genomes) and a tenth of that run;
- a read is placed here only where its best has at most FAST_SHARE of its length in edits (a read
  of a genome the panel holds, not of a type it lacks, whose nearest genomes differ too much for
  exact seeds to find every one of them), and no placement of it runs past its contig's letters
  (a linear index's contig end). Every other read (unseen types, reads of seeds with more than
  MAX_VISITS places in all, long reads) goes to the aligner, as before.

Against the aligner on ART reads of every genome of the panel (benchmarks/viral_panel.py): the
same `reference` label for every read placed here, the same matches for 99 % of them (where they
differ the diagonals mostly find a genome at fewer edits than minimap2's alignment, which weighs a
gap against mismatches by its own scores), about 0.06 % of the reads left to the aligner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp import _scan
from genointerp.seq.alphabet import N_CODE

MAX_VISITS = 4000  # seed places a read's matched windows may have in all (a table of 8,192 diagonals)
FAST_SHARE = 0.02  # a read's best placement has at most this share of its length in edits
# bases at each end of a read (at most a quarter of it) whose mismatches on a diagonal point to an
# indel there, whose short side matched no seed: one-gap placements are tried from such a diagonal
ENDS = 32
UNPLACED, CROWDED, FULL = -1, -2, -3  # diagonal_edits' `best` codes below 0


@dataclass(frozen=True)
class Diagonals:
    """Candidate placements of n reads, (c,) each: read int64 (the read's index), diagonal int64
    (the letter its first base faces), edits int64 (mismatches plus gap bases), span int64 (letters
    covered), aligned int64 (read bases aligned: the read's length less those the genome lacks):
    those within the margin of the read's best, and every ungapped one facing an unknown letter or
    none (a read past its contig's end, whose placement there is not counted right); and best
    int64 (n,): each read's fewest edits, or a code below 0 (no seed place, too many places,
    outputs full)."""

    read: np.ndarray
    diagonal: np.ndarray
    edits: np.ndarray
    span: np.ndarray
    aligned: np.ndarray
    best: np.ndarray
    around: np.ndarray | None = None  # bool (n,): the read's placements were made around its genomes' origins


def diagonal_edits(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray, at: np.ndarray,
                   slot: np.ndarray, flip: np.ndarray | None, table, span: int, margin: int,
                   max_visits: int = MAX_VISITS, ends: int = ENDS, spans: "ContigSpans | None" = None,
                   rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> Diagonals:
    """The placements of n reads on their matched seeds' diagonals, ungapped and with one gap,
    within `margin` edits of each read's best.

    codes uint8 (M,): joined reads; starts, lengths int64 (n,); first int64 (n + 1,): read i owns
    matched windows first[i]:first[i + 1] of at (their starts in codes), slot (their seeds' rows of
    `table`, a ReferenceBases) and flip (bool: the window is its seed's reverse complement; None:
    none is), int64 (h,) each; span: the seed's width. spans: a circular index's contigs in the
    table's letters, so that a read across a genome's origin is placed around it (None: along the
    letters only). rows: (row, count, place) int64 (h,) each, each window's seed's row of the table
    (its first entry and number of places) and first place (-1 where unknown; place None: none
    known), as the evidence's
    places check read them (genointerp.seq.scan.SeedHits), so that the kernel need not fetch the
    rows again (None: it reads them by slot); the same placements either way. Compiled
    (genointerp/_scan.c, which spells the rule out); `diagonal_edits_numpy` is the definition."""
    c = np.ascontiguousarray
    wide = table.places.dtype == np.int64
    index_type = np.int64 if wide else np.int32
    n = lengths.size
    capacity = max(int(first[-1]) * 4, 1024) if n else 1
    out = [np.empty(capacity, np.int64) for _ in range(5)]
    best = np.empty(n, np.int64)
    contigs = ()
    around = None
    if spans is not None:
        around = np.zeros(n, np.uint8)
        contigs = (c(spans.start, np.int64), c(spans.length, np.int64), int(spans.wrap), int(spans.forward), around)
    if rows is not None:
        contigs = (contigs or (b"", b"", 0, 0, bytearray())) + tuple(b"" if a is None else c(a, np.int64) for a in rows)
    found = _scan.diagonal_edits(c(codes, np.uint8), c(starts, np.int64), c(lengths, np.int64), c(first, np.int64),
                                 c(at, np.int64), c(slot, np.int64), b"" if flip is None else c(flip, np.uint8),
                                 c(table.letters, np.uint8), c(table.start, index_type), c(table.places, index_type),
                                 int(wide), int(span), int(max_visits), int(margin), int(ends), *out, best, *contigs)
    return Diagonals(*(a[:found].copy() for a in out), best, None if around is None else around.view(bool))


def _facing(letters: np.ndarray, d: int, n: int, frame: tuple[int, int] | None = None) -> np.ndarray:
    """uint8 (n,): the letters a read of n bases faces on diagonal d, 255 beyond the letters; with
    `frame` (base, length: a genome's letters on one strand, ContigSpans.frame), around that genome
    (letter base + (d + j - base) mod length)."""
    where = d + np.arange(n)
    if frame is not None:
        base, length = frame
        return letters[base + (where - base) % length]
    return np.where((where >= 0) & (where < letters.size), letters[np.clip(where, 0, letters.size - 1)], 255)


def _mismatches(query: np.ndarray, facing: np.ndarray) -> np.ndarray:
    """bool (len(query),): the read's bases that differ from the letters they face."""
    return (query > 3) | (facing != query)


def _one_gap(query: np.ndarray, a: int, b: int, seen: dict, wrong) -> tuple[int, int, int] | None:
    """(edits, span, aligned) of the read with its bases [0, s) on diagonal a and the rest on b, at
    the best split s >= 1 (b > a: a deletion of b - a bases; b < a: the read's a - b bases the
    genome lacks follow s), or None where no split fits. `seen`: diagonal -> its mismatches, kept;
    `wrong`: a diagonal's mismatches, where `seen` lacks them."""
    n, g = query.size, abs(b - a)
    skip = 0 if b > a else g
    if n - skip < 2:
        return None
    for d in (a, b):
        if d not in seen:
            seen[d] = wrong(d)
    on_a, on_b = seen[a], seen[b]
    prefix = np.cumsum(on_a)  # prefix[s - 1]: mismatches of bases [0, s) on a
    suffix = np.r_[np.cumsum(on_b[::-1])[::-1], 0]  # suffix[j]: of bases j.. on b
    s = np.arange(1, n - skip)
    return int((prefix[s - 1] + suffix[s + skip]).min()) + g, b + n - a, n - skip


def diagonal_edits_numpy(codes, starts, lengths, first, at, slot, flip, table, span: int, margin: int,
                         max_visits: int = MAX_VISITS, ends: int = ENDS, spans: "ContigSpans | None" = None) -> Diagonals:
    """The definition of `diagonal_edits`, read by read (for tests): the same placements in the same
    order (ungapped ones by first sight: windows in order, each seed's places in order; then the
    gapped ones as tried), the same counts. With `spans` (a circular index's contigs), a read with
    a diagonal that leaves its genome's letters is placed around the genomes' origins: each
    diagonal taken modulo the length of the genome its first seed place lies in (the first of
    equal ones kept), and every placement's letters read around that genome."""
    letters, r = table.letters, table.letters.size
    rows: list[tuple[int, int, int, int, int]] = []
    best = np.empty(lengths.size, np.int64)
    around = np.zeros(lengths.size, bool)
    for i in range(lengths.size):
        s0, n = int(starts[i]), int(lengths[i])
        query = codes[s0 : s0 + n]
        seen: list[int] = []
        anchor: dict[int, int] = {}
        visits = 0
        for w in range(int(first[i]), int(first[i + 1])):
            if slot[w] < 0:
                continue
            a, b = int(table.start[slot[w]]), int(table.start[slot[w] + 1])
            visits += b - a
            if visits > max_visits:
                break
            for place in table.places[a:b].tolist():
                if flip is not None and flip[w]:
                    place = r - place - span
                d = place - (int(at[w]) - s0)
                if d not in seen:
                    seen.append(d)
                    anchor[d] = place
        if visits > max_visits or not seen:
            best[i] = CROWDED if visits > max_visits else UNPLACED
            continue
        frames: dict[int, tuple[int, int]] = {}  # a diagonal around a genome -> that genome's frame
        if spans is not None and not all(spans.holds(d, n) for d in seen):
            around[i] = True
            for d in seen:
                base, length = spans.frame(anchor[d])
                frames.setdefault(base + (d - base) % length, (base, length))
            seen = list(frames)

        def own(x: int, like: int) -> bool:
            """Whether diagonal x (near the read's diagonal `like`) is one of the read's."""
            if not frames:
                return x in seen
            base, length = frames[like]
            return base + (x - base) % length in frames

        def wrong_near(like: int):
            return lambda x: _mismatches(query, _facing(letters, x, n, frames.get(like)))

        end = min(n // 4, ends)
        wrong = [wrong_near(d)(d) for d in seen]
        edits = [int(w.sum()) for w in wrong]
        middle = [int(w[end : n - end].sum()) for w in wrong]
        bound = min(edits) + margin
        gapped = []
        memo = dict(zip(seen, wrong))

        def tried(a: int, b: int, like: int) -> None:
            got = _one_gap(query, a, b, memo, wrong_near(like))
            if got is not None and got[0] <= bound:
                if frames:  # its first diagonal taken into its genome's letters, as the read's are
                    base, length = frames[like]
                    a = base + (a - base) % length
                gapped.append((a, *got))

        order = sorted(seen)
        for x, lo in enumerate(order):
            for hi in order[x + 1 :]:
                if hi - lo > bound:
                    break
                tried(lo, hi, lo)
                tried(hi, lo, lo)
        for d, e, mid in zip(seen, edits, middle):
            if mid <= bound and e - mid >= 2:
                for g in range(-bound, bound + 1):
                    if g and not own(d + g, d):
                        tried(d, d + g, d)
                        tried(d + g, d, d)
        best[i] = top = min(edits + [g[1] for g in gapped])
        unknown = [bool((_facing(letters, d, n, frames.get(d)) > 3).any()) for d in seen]
        rows += [(i, d, e, n, n) for d, e, u in zip(seen, edits, unknown) if e <= top + margin or u]
        rows += [(i, *g) for g in gapped if g[1] <= top + margin]
    columns = np.array(rows, np.int64).reshape(-1, 5).T
    return Diagonals(*columns, best, around if spans is not None else None)


@dataclass(frozen=True)
class ContigSpans:
    """Where the panel's contigs lie in the seed places' letters (their forward half): start int64
    (R,), each contig's first letter; length int64 (R,); wrap: the bases repeated after each (the
    index's, 0 where it is linear); forward: the forward half's letters (the reverse half mirrors
    it); circular bool (R,): the genome is circular (the panel's naming: a placement may run past
    its origin; None: every contig is)."""

    start: np.ndarray
    length: np.ndarray
    wrap: int
    forward: int
    circular: np.ndarray | None = None

    @classmethod
    def of(cls, lengths: list[int], letters: np.ndarray, k: int,
           circular: list[bool] | None = None) -> "ContigSpans | None":
        """The spans of contigs of `lengths` (and whether each is circular: None, all), in the
        index's order, in the seed places' `letters` (uint8, laid out by
        genointerp.viral.evidence.seeds.reference_places with seeds of width k: each contig, its
        wrap, an N); None where they are not laid out so, to the last separator (another panel:
        then every read is aligned)."""
        length = np.asarray(lengths, np.int64)
        forward = letters.size // 2
        for wrap in (2 * k, 0):
            if letters.size % 2 == 0 and int(length.sum()) + length.size * (wrap + 1) == forward:
                start = np.r_[0, np.cumsum(length + wrap + 1)[:-1]].astype(np.int64)
                if (letters[start + length + wrap] == N_CODE).all():
                    return cls(start, length, wrap, forward, None if circular is None else np.asarray(circular, bool))
        return None

    def holds(self, d: int, n: int) -> bool:
        """Whether an ungapped placement of n bases on diagonal d lies whole in one contig's letters
        (its wrap included), on either strand."""
        f = self.forward
        if d < 0 or d + n > 2 * f or d < f < d + n:
            return False
        lo = d if d < f else 2 * f - d - n  # the forward letters it covers: lo .. lo + n - 1
        c = int(np.searchsorted(self.start, lo, side="right")) - 1
        return c >= 0 and lo + n <= self.start[c] + self.length[c] + self.wrap

    def frame(self, place: int) -> tuple[int, int]:
        """(base, length): the letters of the genome whose letters (wrap included) hold `place`, on
        place's strand: that strand's copy of the genome is letters base .. base + length - 1."""
        f = self.forward
        forward = place if place < f else 2 * f - 1 - place
        c = max(int(np.searchsorted(self.start, forward, side="right")) - 1, 0)
        start, length = int(self.start[c]), int(self.length[c])
        return (start, length) if place < f else (2 * f - start - length, length)

    def locate(self, diagonal: np.ndarray, span: np.ndarray,
               around: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For placements starting at letter `diagonal` and covering `span` letters, int64 (c,)
        each: (contig int64, strand int64 (+1: the read's forward strand lies on the contig, -1:
        its reverse complement), r_st int64 (the first contig base covered, modulo the contig's
        length), inside bool: the placement lies whole in the contig's letters, wrap included, or
        was made around the contig's origin (`around`, bool (c,): diagonal_edits' reads placed so,
        whose diagonals lie in their genome's letters, the read's first base facing the contig's
        letter) and the contig is circular or the placement lies whole in it."""
        reverse = diagonal >= self.forward
        # on the reverse half, letter F + e mirrors forward letter F - 1 - e: the placement covers
        # forward letters from F - e - span on
        begin = np.where(reverse, 2 * self.forward - diagonal - span, diagonal)
        if around is None:
            around = np.zeros(diagonal.size, bool)
        # a placement around an origin: its contig is the one its first base faces
        facing = np.where(around, np.where(reverse, 2 * self.forward - 1 - diagonal, diagonal), begin)
        contig = np.clip(np.searchsorted(self.start, facing, side="right") - 1, 0, self.start.size - 1)
        offset = begin - self.start[contig]
        # around a linear genome's origin (a read near its start, whose seeds the wrap holds too)
        # only where the placement lies whole in the genome
        across = (offset < 0) | (offset + span > self.length[contig])
        if self.circular is not None:
            around = around & (self.circular[contig] | ~across)
        inside = ((offset >= 0) & (offset + span <= self.length[contig] + self.wrap)) | around
        r_st = np.where(around, offset % self.length[contig],
                        np.where(offset >= self.length[contig], offset - self.length[contig], offset))
        return contig, np.where(reverse, -1, 1), r_st, inside


@dataclass(frozen=True)
class Placed:
    """Reads placed on the diagonals, (p,) each, sorted by read, then edits, then the contig's name
    (`name_rank`): read int64, contig int64 (its index in the panel's order), edits int64, r_st int64
    (modulo the contig's length), r_en int64 (r_st + the letters covered), aligned int64 (read bases
    aligned); and placed bool (n,): the reads placed here (the others go to the aligner)."""

    read: np.ndarray
    contig: np.ndarray
    edits: np.ndarray
    r_st: np.ndarray
    r_en: np.ndarray
    aligned: np.ndarray
    placed: np.ndarray


def _lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """np.lexsort(keys) (the last key first; int arrays of one size), as one stable argsort of the
    keys packed into one int64 where their ranges fit in 63 bits (lexsort sorts once a key: this
    function's two sorts were 0.36 s of a 10 s run of 108,181 all-viral reads, 0.16-0.23 s packed),
    lexsort itself where they do not."""
    if keys[0].size == 0:
        return np.zeros(0, np.int64)
    packed, bits = np.zeros(keys[0].size, np.int64), 0
    for key in keys:
        low = int(key.min())
        width = (int(key.max()) - low).bit_length()
        if bits + width > 63:
            return np.lexsort(keys)
        if width:
            packed |= (key.astype(np.int64) - low) << bits
        bits += width
    return np.argsort(packed, kind="stable")


def best_per_contig(found: Diagonals, spans: ContigSpans, lengths: np.ndarray, name_rank: np.ndarray,
                    margin: int) -> Placed:
    """Each read's best placement per contig among those within `margin` of its best, for
    the reads whose best has at most FAST_SHARE of their length (lengths int64 (n,)) in edits and
    whose placements lie whole in their contigs. Ties on a contig: the lowest start, then the
    reverse strand (minimap2's order in genointerp.viral.typing.placement.ViralPanel.place_all).
    Compiled, read by read (genointerp/_scan.c: a read's few rows sorted in place, where numpy's
    sorts, masks and gathers over the batch were a twentieth of an all-viral run);
    `best_per_contig_numpy` is the definition."""
    c = np.ascontiguousarray
    n, rows = lengths.size, found.read.size
    out = [np.empty(rows, np.int64) for _ in range(6)]
    placed = np.empty(n, np.uint8)
    around = b"" if found.around is None else c(found.around, np.uint8)
    circular = b"" if spans.circular is None else c(spans.circular, np.uint8)
    count = _scan.best_per_contig(*(c(a, np.int64) for a in (found.read, found.diagonal, found.edits, found.span,
                                                              found.aligned, found.best)),
                                  around, c(lengths, np.int64), c(name_rank, np.int64), c(spans.start, np.int64),
                                  c(spans.length, np.int64), circular, int(spans.wrap), int(spans.forward), int(margin),
                                  FAST_SHARE, *out, placed)
    read, contig, edits, r_st, r_en, aligned = (a[:count].copy() for a in out)
    return Placed(read, contig, edits, r_st, r_en, aligned, placed.view(bool))


def best_per_contig_numpy(found: Diagonals, spans: ContigSpans, lengths: np.ndarray, name_rank: np.ndarray,
                          margin: int) -> Placed:
    """The definition of `best_per_contig`, on the batch's arrays at once (for tests)."""
    n = lengths.size
    ok = (found.best >= 0) & (found.best <= np.floor(FAST_SHARE * lengths))
    read = found.read
    contig, strand, r_st, inside = spans.locate(found.diagonal, found.span,
                                                None if found.around is None else found.around[read])
    # one past its contig's letters (a linear index's contig end; around a circular one's origin the
    # kernel reads the genome's own letters): aligned instead
    ok &= np.bincount(read[~inside], minlength=n) == 0
    keep = ok[read] & (found.edits <= found.best[read] + margin)
    read, contig, strand, r_st, edits, span, aligned = (
        a[keep] for a in (read, contig, strand, r_st, found.edits, found.span, found.aligned))
    order = _lexsort((strand, r_st, edits, contig, read))
    read, contig, r_st, edits, span, aligned = (a[order] for a in (read, contig, r_st, edits, span, aligned))
    first = np.r_[True, (read[1:] != read[:-1]) | (contig[1:] != contig[:-1])] if read.size else np.zeros(0, bool)
    read, contig, r_st, edits, span, aligned = (a[first] for a in (read, contig, r_st, edits, span, aligned))
    order = _lexsort((name_rank[contig], edits, read))
    read, contig, r_st, edits, span, aligned = (a[order] for a in (read, contig, r_st, edits, span, aligned))
    return Placed(read, contig, edits, r_st, r_st + span, aligned, ok)
