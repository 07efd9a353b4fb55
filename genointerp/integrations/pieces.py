"""Pieces of reads placed on the viral panel: the clipped end of a host-aligned read (a split read)
or the mate of a host-anchored read (a spanning pair), queued and placed in batches
(genointerp.viral.typing.placement). Placed, a piece is evidence of a junction; a pair's unaligned
end found in the host next to its anchor is a rescued split read. Both inputs (genointerp.integrations
.bam, .fastq) add their pieces here."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import mappy

from genointerp.integrations.request import IntegrationRequest
from genointerp.seq.alphabet import decode, revcomp
from genointerp.viral.panel import ViralName
from genointerp.viral.typing.placement import (LONG_READ, WRAP, Placement, ViralPanel, entropy_ok, junction_side,
                                               unaligned_flank)

BATCH = 4096  # pieces placed at once
# below this identity to the best panel genome the reads come from another type (HPV types differ
# by more than 10 % in L1): the type is reported as its nearest relative's with "-like"
SAME_TYPE_IDENTITY = 0.9
# long reads (nanopore 85-95 % accurate) lose their errors' share of identity on their own type,
# while HPV types the panel lacks lie under 80 % on their relatives before any read error
SAME_TYPE_IDENTITY_LONG = 0.75
# a long read's clipped end is placed by its JUNCTION_PIECE bases next to the junction: beyond them
# lie the rest of the virus and maybe host sequence again (an insertion's other side); no more than
# the bases a circular genome's index repeats past its origin (placement.WRAP), so that a piece
# across the origin aligns whole, up to the junction
JUNCTION_PIECE = WRAP


@dataclass
class _Piece:
    kind: str  # 'split' or 'pair'
    chrom: str
    side: str  # host side of the junction
    pos: int  # split: the host base at the junction; pair: the anchor's base nearest the junction
    name: str  # read or pair name
    seq: str  # the piece in the host's forward orientation
    anchor: tuple[int, int] = (0, 0)  # pair: the anchor's alignment (start, end)


@dataclass
class JunctionEvidence:
    """A piece placed on the viral panel: one read's (split) or pair's evidence of a junction, its
    host side and position, and the viral side and position it was placed at."""

    kind: str
    chrom: str
    side: str
    pos: int
    name: str
    place: Placement
    vside: str
    vpos: int
    anchor: tuple[int, int] = (0, 0)  # pair: the anchor's alignment (start, end)
    long: bool = False  # a piece of a long read (placed with the long-read preset)


@dataclass
class Stats:
    reads: int = 0
    pieces: int = 0
    viral_pieces: int = 0
    rescued: int = 0
    unanchored: Counter = field(default_factory=Counter)
    mode: str = ""


class PieceCollector:
    """Pieces queued for placement in batches; placed ones become evidence."""

    def __init__(self, panel: ViralPanel, req: IntegrationRequest, host, stats: Stats) -> None:
        self.panel, self.req, self.host, self.stats = panel, req, host, stats
        self.queue: list[_Piece] = []
        self.unanchored: list[str] = []
        self.evidence: list[JunctionEvidence] = []

    def add(self, piece: _Piece) -> None:
        self.queue.append(piece)
        if len(self.queue) >= BATCH:
            self.flush()

    def add_unanchored(self, seq: str) -> None:
        self.unanchored.append(seq)
        if len(self.unanchored) >= BATCH:
            self.flush()

    def flush(self) -> None:
        queue, self.queue = self.queue, []
        self.stats.pieces += len(queue)
        for piece, p in zip(queue, self.panel.place([q.seq for q in queue])):
            if p is None or not entropy_ok(piece.seq[p.q_st:p.q_en]):
                continue
            self.stats.viral_pieces += 1
            length = self.panel.refs[p.ref].length
            if piece.kind == "split":
                vside, vpos = junction_side(piece.side, p, length, extend=_flank_len(piece.side, p, piece.seq))
                self.evidence.append(JunctionEvidence("split", piece.chrom, piece.side, piece.pos, piece.name, p, vside, vpos,
                                                      long=len(piece.seq) >= LONG_READ))
                continue
            vside, vpos = junction_side(piece.side, p, length)
            self.evidence.append(JunctionEvidence("pair", piece.chrom, piece.side, piece.pos, piece.name, p, vside, vpos,
                                           piece.anchor))
            flank = unaligned_flank(piece.side, p, piece.seq)
            if len(flank) >= self.req.min_clip:
                at = self._rescue(piece, flank)
                if at is not None:
                    self.stats.rescued += 1
                    self.evidence.append(JunctionEvidence("split", piece.chrom, piece.side, at, piece.name + "/rescued", p, vside, vpos))
        seqs, self.unanchored = self.unanchored, []
        for p in self.panel.place(seqs):
            if p is not None:
                self.stats.unanchored[type_name(self.panel.refs[p.ref].naming, p.mlen / p.blen)] += 1

    def _rescue(self, piece: _Piece, flank: str) -> int | None:
        """The host base at the junction, from the viral read's host flank found next to its anchor."""
        start, end = piece.anchor
        lo, hi = (start, start + self.req.max_fragment) if piece.side == "+" else (end - self.req.max_fragment, end)
        lo, hi = max(lo, 0), min(hi, self.host.length(piece.chrom))
        if hi - lo < len(flank):
            return None
        window = decode(self.host.codes(piece.chrom, lo, hi)).decode()
        aligner = mappy.Aligner(seq=window, preset="sr", k=11, w=3, min_chain_score=15, min_dp_score=20)
        best = None
        for h in aligner.map(flank):
            if h.strand > 0 and h.mlen >= 0.9 * h.blen and (best is None or (h.mlen, -h.r_st) > (best.mlen, -best.r_st)):
                best = h
        if best is None:
            return None
        if piece.side == "+":  # the flank's last base is the host base at the junction
            return lo + best.r_en - 1 + (len(flank) - best.q_en) if len(flank) - best.q_en <= 2 else None
        return lo + best.r_st - best.q_st if best.q_st <= 2 else None


def _flank_len(side: str, p: Placement, seq: str) -> int:
    """Bases of a clipped piece between the junction and its viral alignment (read errors at the
    clip's end): the viral position is extended over them."""
    return p.q_st if side == "+" else len(seq) - p.q_en


def add_splits(col: PieceCollector, aln, name: str, min_clip: int) -> None:
    """The split pieces of a host alignment's clipped ends (of at least min_clip bases), each cut to
    its JUNCTION_PIECE bases next to the junction."""
    chrom, start, end, _, left, right, seq = aln
    if right >= min_clip:
        col.add(_Piece("split", chrom, "+", end - 1, name, seq[len(seq) - right:][:JUNCTION_PIECE]))
    if left >= min_clip:
        col.add(_Piece("split", chrom, "-", start, name, seq[max(left - JUNCTION_PIECE, 0):left]))


def pair_piece(anchor, mate_seq_original: str, name: str) -> _Piece:
    """The pair evidence of an anchor (chrom, start, end, reverse) and its mate's read as sequenced."""
    chrom, start, end, reverse = anchor
    if reverse:  # the fragment's host-forward strand is the mate's own
        return _Piece("pair", chrom, "-", start, name, mate_seq_original, (start, end))
    return _Piece("pair", chrom, "+", end - 1, name, revcomp(mate_seq_original), (start, end))


def type_name(naming: ViralName, identity: float, long: bool = False) -> str:
    """The type as every output names it: the display name (HPV16, HBV genotype A), with "-like"
    below SAME_TYPE_IDENTITY (SAME_TYPE_IDENTITY_LONG for long reads' pieces: reads of a type the
    panel lacks, placed on its nearest relative)."""
    return naming.display if identity >= (SAME_TYPE_IDENTITY_LONG if long else SAME_TYPE_IDENTITY) \
        else f"{naming.display}-like"
