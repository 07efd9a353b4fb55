"""find-integrations' evidence clustered into junction calls: split reads by host position, pairs joined
to the nearest split-read junction or clustered among themselves; each call's viral end; one call
per junction."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from genointerp.integrations.pieces import JunctionEvidence, type_name
from genointerp.integrations.request import IntegrationRequest
from genointerp.viral.typing.placement import ViralPanel

CLUSTER_BP = 10  # split reads within this many bases of a cluster's first are one junction


@dataclass
class _Call:
    chrom: str
    side: str
    pos: int
    precise: bool
    splits: list[JunctionEvidence] = field(default_factory=list)
    pairs: list[JunctionEvidence] = field(default_factory=list)
    lo: int = 0
    hi: int = 0


def _cluster(evidence: list[JunctionEvidence], panel: ViralPanel, req: IntegrationRequest) -> list[_Call]:
    groups: dict[tuple, list[JunctionEvidence]] = defaultdict(list)
    for e in evidence:
        groups[(e.chrom, e.side, panel.refs[e.place.ref].naming.virus)].append(e)
    calls = []
    for (chrom, side, _), items in sorted(groups.items()):
        splits = sorted((e for e in items if e.kind == "split"), key=lambda e: (e.pos, e.name))
        pairs = sorted((e for e in items if e.kind == "pair"), key=lambda e: (e.pos, e.name))
        precise: list[_Call] = []
        for e in splits:
            if precise and e.pos - precise[-1].splits[0].pos <= CLUSTER_BP:
                precise[-1].splits.append(e)
            else:
                precise.append(_Call(chrom, side, e.pos, True, [e]))
        for c in precise:
            c.pos = min(Counter(e.pos for e in c.splits).most_common(), key=lambda kv: (-kv[1], kv[0]))[0]
            c.lo, c.hi = c.pos, c.pos + 1
        loose: list[JunctionEvidence] = []
        for e in pairs:
            best = None
            for c in precise:
                # measured from the anchor's start: an unmapped-only BAM gives no exact end
                gap = c.pos - e.anchor[0] if side == "+" else e.pos - c.pos
                if -CLUSTER_BP <= gap <= req.max_fragment and (best is None or gap < best[0]):
                    best = (gap, c)
            if best is not None:
                best[1].pairs.append(e)
            else:
                loose.append(e)
        imprecise: list[_Call] = []
        for e in loose:
            if imprecise and e.pos - imprecise[-1].pairs[-1].pos <= req.max_fragment // 2:
                imprecise[-1].pairs.append(e)
            else:
                imprecise.append(_Call(chrom, side, e.pos, False, pairs=[e]))
        for c in imprecise:  # the junction lies beyond the anchor nearest to it, within a fragment
            reach = req.max_fragment // 2
            if side == "+":
                c.pos = max(e.pos for e in c.pairs)
                c.lo, c.hi = min(max(e.anchor[0] for e in c.pairs), c.pos), c.pos + reach
            else:
                c.pos = min(e.pos for e in c.pairs)
                c.lo, c.hi = max(c.pos - reach, 0), c.pos + 1  # an anchor's start is exact in every mode
        calls += [c for c in precise + imprecise if len(c.splits) + len(c.pairs) >= req.min_support]
    return calls


@dataclass(frozen=True)
class _ViralEnd:
    """The viral side of a call: the panel reference most of its viral bases align to, the
    junction's side and 0-based position on it, the seed hits of its reads, their identity to the
    reference (matching bases over alignment length) and the type as the outputs name it."""

    ref: str
    side: str
    pos: int
    kmer_hits: int
    identity: float
    type: str


def _viral_end(call: _Call, panel: ViralPanel) -> _ViralEnd:
    """The viral side of a junction (see _ViralEnd)."""
    votes: Counter = Counter()
    for e in call.splits + call.pairs:
        votes[e.place.ref] += e.place.mlen
    ref = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    on_ref = [e for e in call.splits + call.pairs if e.place.ref == ref]
    vside = min(Counter(e.vside for e in on_ref).most_common(), key=lambda kv: (-kv[1], kv[0]))[0]
    split_pos = [e.vpos for e in on_ref if e.kind == "split" and e.vside == vside]
    if split_pos and all(e.long for e in on_ref):  # long reads' ends scatter by their indels: the median
        vpos = sorted(split_pos)[(len(split_pos) - 1) // 2]
    elif split_pos:
        vpos = min(Counter(split_pos).most_common(), key=lambda kv: (-kv[1], kv[0]))[0]
    else:
        pos = [e.vpos for e in on_ref if e.vside == vside]
        vpos = min(pos) if vside == "-" else max(pos)
    hits = sum(e.place.kmer_hits for e in call.splits + call.pairs)
    identity = sum(e.place.mlen for e in on_ref) / sum(e.place.blen for e in on_ref)
    return _ViralEnd(ref, vside, vpos, hits, identity,
                     type_name(panel.refs[ref].naming, identity, all(e.long for e in on_ref)))


def _support(call: _Call) -> int:
    """Reads and pairs behind a call, as the table counts them (split_reads + spanning_pairs)."""
    return len({e.name for e in call.splits}) + len({e.name for e in call.pairs})


def _window(call: _Call) -> tuple[int, int]:
    """The host positions a call's breakpoint may be at, 0-based half-open: a precise call's base
    within CLUSTER_BP (split reads of one junction lie that close), an imprecise call's interval."""
    return (call.pos - CLUSTER_BP, call.pos + CLUSTER_BP + 1) if call.precise else (call.lo, call.hi)


def _one_per_junction(calls: list[tuple[_Call, _ViralEnd]]) -> list[tuple[_Call, _ViralEnd]]:
    """One call per junction. Two calls are one junction when they are on the same host contig and
    strand, their types (as reported) are the same and one's position lies in the other's window
    (`_window`): the reads of one insertion placed on two genomes of its type (lineages such as
    HPV16 and HPV16_v2, two HBV genomes of one genotype) or cut into two clusters. Of those the
    call with the most reads and pairs is kept, ties to the first reference name, then the first
    position; the rest are dropped (their reads are the same junction's: adding them would count
    reads placed twice). Returns the kept calls in the input order."""
    ranked = sorted(range(len(calls)), key=lambda i: (-_support(calls[i][0]), calls[i][1].ref, calls[i][0].pos, i))
    kept: dict[tuple, list[_Call]] = defaultdict(list)
    keep = set()
    for i in ranked:
        call, end = calls[i]
        same = kept[(call.chrom, call.side, end.type)]
        lo, hi = _window(call)
        if any(lo <= k.pos < hi or _window(k)[0] <= call.pos < _window(k)[1] for k in same):
            continue
        same.append(call)
        keep.add(i)
    return [c for i, c in enumerate(calls) if i in keep]


def junction_calls(evidence: list[JunctionEvidence], panel: ViralPanel, req: IntegrationRequest
                    ) -> list[tuple[_Call, _ViralEnd]]:
    """The junctions of the evidence: calls (`_cluster`) with their viral ends, one per junction
    (`_one_per_junction`), in no particular order."""
    return _one_per_junction([(c, _viral_end(c, panel)) for c in _cluster(evidence, panel, req)])
