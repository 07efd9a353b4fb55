"""simulate-reads' insertion mode: viral fragments integrated into a host at known places.

The protocol of VIRUSBreakend's authors (Cameron et al. 2021): fragments of `length` bases (2 kb)
of a viral genome, each replacing `host_deletion` (10) host bases at a site, read as paired 150 bp
reads of 500 +- 100 bp fragments at a chosen depth; reads of other labels (bacteria) may be mixed
in with --count. Sites are drawn uniformly over the host, at least `spacing` apart and with no N
within `flank` bases, so every junction is one a short-read aligner can anchor. Viral genomes are
used in turn (a shuffled round robin over the viral label's contigs), from a uniform start
(wrapping on circular genomes), on a random strand.

Each insertion makes two junctions, written as BEDPE truth (io.junctions' strand convention):
the left one joins the host base before the deleted bases (strand '+') to the fragment's first
base, the right one the fragment's last base to the first host base after them (strand '-').
The viral strand is '-' where the viral sequence continues after the viral base (a forward
fragment's first base) and '+' where it lies before it. Host coordinates are those of the
unmodified host; read names keep the host's coordinates too (viral bases take the position of the
host base before the insertion).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genointerp.errors import InputError
from genointerp.io.junctions import Junction
from genointerp.seq.alphabet import N_CODE, reverse_complement_codes
from genointerp.seq.simulate import Layout, Source


@dataclass(frozen=True)
class InsertionPlan:
    viral_label: str
    host_label: str
    count: int
    depth: float
    length: int = 2000
    host_deletion: int = 10
    spacing: int = 5000
    flank: int = 1000


BEDPE_EXTRA = ["insertion", "fragment_start", "fragment_length", "fragment_strand"]


def _contig_codes(source: Source, i: int) -> np.ndarray:
    c = source.contigs[i]
    return source.padded[c.offset: c.offset + c.length]


def _original(contig, pos: int) -> int:
    """A position of a (possibly mutated) contig on the unmutated one."""
    return int(contig.origin[pos]) if contig.origin is not None else pos


def _draw_sites(host: Source, plan: InsertionPlan, rng: np.random.Generator) -> list[tuple[int, int]]:
    """(contig index, site) pairs, sorted: the first deleted host base of each insertion."""
    span = plan.host_deletion + 2 * plan.flank
    lengths = host.lengths
    room = np.maximum(lengths - span, 0)
    if room.sum() == 0:
        raise InputError(f"source {host.label}: no contig is longer than {span:,} bp, too short for an insertion")
    sites: list[tuple[int, int]] = []
    for _ in range(200 * plan.count + 1000):
        if len(sites) == plan.count:
            break
        ci = int(rng.choice(len(lengths), p=room / room.sum()))
        s = int(rng.integers(plan.flank, lengths[ci] - plan.flank - plan.host_deletion + 1))
        if any(c == ci and abs(s - t) < plan.spacing for c, t in sites):
            continue
        if (_contig_codes(host, ci)[s - plan.flank: s + plan.host_deletion + plan.flank] == N_CODE).any():
            continue
        sites.append((ci, s))
    if len(sites) < plan.count:
        raise InputError(f"source {host.label}: found room for {len(sites)} of {plan.count} insertions "
                         f"({plan.spacing:,} bp apart, no N within {plan.flank:,} bp); use fewer or a longer host")
    return sorted(sites)


def apply_insertions(sources: dict[str, Source], plan: InsertionPlan, layout: Layout,
                     rng: np.random.Generator) -> tuple[dict[str, Source], list[Junction]]:
    """The sources with the host label's contigs replaced by copies carrying the insertions, and the
    truth junctions (two per insertion, in host order)."""
    for label in (plan.viral_label, plan.host_label):
        if label not in sources:
            raise InputError(f"--insert: label {label!r} names no --source (labels: {', '.join(sources)})")
    if plan.viral_label == plan.host_label:
        raise InputError("--insert: the viral and host labels must differ")
    host, viral = sources[plan.host_label], sources[plan.viral_label]
    sites = _draw_sites(host, plan, rng)
    n_viral = len(viral.contigs)
    genomes = [i % n_viral for i in rng.permutation(plan.count)]
    by_contig: dict[int, list] = {}
    for (ci, s), vi in zip(sites, genomes):
        by_contig.setdefault(ci, []).append((s, vi))
    contigs, truth = [], []
    serial = 0
    for ci, contig in enumerate(host.contigs):
        codes = _contig_codes(host, ci)
        if ci not in by_contig:
            contigs.append((contig.name, codes, contig.origin, contig.origin_length))
            continue
        pieces, origin, prev = [], [], 0
        base_origin = contig.origin if contig.origin is not None else np.arange(contig.length, dtype=np.int64)
        for s, vi in by_contig[ci]:
            vc = viral.contigs[vi]
            vcodes = _contig_codes(viral, vi)
            n = min(plan.length, vc.length)
            start = int(rng.integers(0, vc.length if viral.circular else vc.length - n + 1))
            frag = vcodes[np.arange(start, start + n) % vc.length]
            reverse = bool(rng.integers(0, 2))
            if reverse:
                frag = reverse_complement_codes(frag)
            pieces += [codes[prev:s], frag]
            origin += [base_origin[prev:s], np.full(n, base_origin[s - 1], np.int64)]
            prev = s + plan.host_deletion
            first_v, last_v = _original(vc, start % vc.length), _original(vc, (start + n - 1) % vc.length)
            left_v, left_strand = (last_v, "+") if reverse else (first_v, "-")
            right_v, right_strand = (first_v, "-") if reverse else (last_v, "+")
            serial += 1
            extra = (f"ins{serial}", first_v, n, "-" if reverse else "+")
            h_left, h_right = _original(contig, s - 1), _original(contig, prev)
            truth.append(Junction(f"ins{serial}_left", contig.name, h_left, "+", vc.name, left_v, left_strand, 0,
                                  extra=extra))
            truth.append(Junction(f"ins{serial}_right", contig.name, h_right, "-", vc.name, right_v, right_strand, 0,
                                  extra=extra))
        pieces.append(codes[prev:])
        origin.append(base_origin[prev:])
        contigs.append((contig.name, np.concatenate(pieces), np.concatenate(origin), contig.origin_length))
    out = dict(sources)
    out[plan.host_label] = Source(host.label, contigs, host.circular, layout)
    return out, truth


def insertion_counts(sources: dict[str, Source], plan: InsertionPlan, layout: Layout,
                     counts: dict[str, int]) -> dict[str, int]:
    """Reads (fragments when paired) per label: the host's from the depth, none drawn from the viral
    genomes themselves (their reads come from the insertions), other labels from --count."""
    for label in counts:
        if label not in sources:
            raise InputError(f"--count: label {label!r} names no --source (labels: {', '.join(sources)})")
        if label in (plan.host_label, plan.viral_label):
            raise InputError(f"--count {label}: with --insert the host's reads come from --depth and the viral "
                             "genomes give reads only through their insertions")
    per_fragment = layout.read_length * (2 if layout.paired else 1)
    host_bases = int(sources[plan.host_label].lengths.sum())
    out = {label: counts.get(label, 0) for label in sources}
    out[plan.host_label] = int(round(plan.depth * host_bases / per_fragment))
    out[plan.viral_label] = 0
    return out
