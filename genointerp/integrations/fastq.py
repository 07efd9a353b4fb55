"""find-integrations' paired FASTQ input: pairs screened on the viral panel, and only those with viral
evidence aligned to the host (mappy)."""

from __future__ import annotations

from itertools import islice

import mappy

from genointerp.errors import InputError
from genointerp.integrations.pieces import BATCH, PieceCollector, add_splits, pair_piece
from genointerp.integrations.request import IntegrationRequest
from genointerp.io.sequences import iter_records
from genointerp.report import Reporter
from genointerp.seq.alphabet import revcomp


def _pair_names(n1: str, n2: str) -> tuple[str, str]:
    a, b = n1.split()[0], n2.split()[0]
    for suffix in ("/1", "/2"):
        a = a[:-2] if a.endswith(suffix) else a
        b = b[:-2] if b.endswith(suffix) else b
    return a, b


def scan_fastq(req: IntegrationRequest, col: PieceCollector, host, report: Reporter) -> None:
    stats = col.stats
    stats.mode = "fastq"
    aligner = None
    r1, r2 = iter_records(req.reads1), iter_records(req.reads2)
    n = 0
    with report.progress("screening read pairs", None) as advance:
        while True:
            b1, b2 = list(islice(r1, BATCH)), list(islice(r2, BATCH))
            for i, (x, y) in enumerate(zip(b1, b2)):
                a, b = _pair_names(x[0], y[0])
                if a != b:
                    raise InputError(f"{req.reads2}: read {n + i + 1:,} is {y[0]}, but read {n + i + 1:,} of "
                                     f"{req.reads1} is {x[0]}: the files do not hold the same pairs in the same order")
            if len(b1) != len(b2):
                short = req.reads1 if len(b1) < len(b2) else req.reads2
                raise InputError(f"{short}: ends after {n + min(len(b1), len(b2)):,} reads, its mate file goes on: "
                                 "mates are missing")
            if not b1:
                break
            seqs = [r[1].upper() for pair in zip(b1, b2) for r in pair]
            placed = col.panel.place(seqs)
            stats.reads += len(seqs)
            for i in range(len(b1)):
                if placed[2 * i] is None and placed[2 * i + 1] is None:
                    continue
                if aligner is None:
                    report.log(f"indexing the host {req.host} with minimap2")
                    aligner = mappy.Aligner(req.host, preset="sr")
                    if not aligner:
                        raise InputError(f"{req.host}: minimap2 could not index the host FASTA")
                _fastq_pair(col, aligner, seqs[2 * i], seqs[2 * i + 1], _pair_names(b1[i][0], b2[i][0])[0], req)
            n += len(b1)
            advance(len(b1))


def _fastq_pair(col: PieceCollector, aligner, s1: str, s2: str, name: str, req: IntegrationRequest) -> None:
    alns = []
    for seq in (s1, s2):
        best = None
        for h in aligner.map(seq):
            if h.is_primary:
                best = h
                break
        if best is None or best.mapq < req.min_mapq:
            alns.append(None if best is None else "low")
            continue
        reverse = best.strand < 0
        oriented = revcomp(seq) if reverse else seq
        left, right = (len(seq) - best.q_en, best.q_st) if reverse else (best.q_st, len(seq) - best.q_en)
        alns.append((best.ctg, best.r_st, best.r_en, reverse, left, right, oriented))
    for i, aln in enumerate(alns):
        if isinstance(aln, tuple):
            add_splits(col, aln, f"{name}/{i + 1}", req.min_clip)
    for i in (0, 1):
        anchor, other = alns[i], alns[1 - i]
        if isinstance(anchor, tuple) and other is None:
            col.add(pair_piece(anchor[:4], (s2, s1)[i], name))
    if alns[0] is None and alns[1] is None:
        col.add_unanchored(s1)
        col.add_unanchored(s2)
