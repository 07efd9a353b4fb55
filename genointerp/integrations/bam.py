"""find-integrations' BAM/CRAM input: a coordinate-sorted, indexed host alignment (with its unmapped
reads, or unmapped-only) scanned once for clipped host alignments and host-anchored pairs."""

from __future__ import annotations

import re

from genointerp.errors import InputError
from genointerp.integrations.pieces import PieceCollector, add_splits, pair_piece
from genointerp.integrations.request import IntegrationRequest
from genointerp.io.inputs import check_readable, wrong_kind
from genointerp.io.sequences import quiet_pysam
from genointerp.report import Reporter
from genointerp.runtime import usable_threads
from genointerp.seq.alphabet import revcomp
from genointerp.viral.panel import known_virus
from genointerp.viral.typing.placement import LONG_READ

pysam = quiet_pysam()  # with htslib's stderr chatter off, as when genointerp.io.sequences set it at its import

MIN_LONG_INSERTION = 100  # inserted bases in a long read's host alignment placed as a possible viral insertion
_CIGAR = re.compile(r"(\d+)([MIDNSHP=X])")


def _cigar_parts(cigar: str) -> tuple[int, int, int]:
    """(left clip, reference length, right clip) of a CIGAR string."""
    ops = [(int(n), op) for n, op in _CIGAR.findall(cigar)]
    left = sum(n for n, op in ops[:2] if op in "SH") if ops and ops[0][1] in "SH" else 0
    right = sum(n for n, op in ops[-2:] if op in "SH") if ops and ops[-1][1] in "SH" else 0
    ref_len = sum(n for n, op in ops if op in "MDN=X")
    return left, ref_len, right


def _check_header(fh, req: IntegrationRequest, host) -> set[int]:
    """Refuse an unsorted or unindexed BAM and a host FASTA that does not match its header; return
    the ids of the host contigs (the rest are viral contigs of a host+virus reference)."""
    path = req.bam
    so = fh.header.to_dict().get("HD", {}).get("SO", "unknown")
    if so != "coordinate":
        raise InputError(f"{path}: not sorted by coordinate (header says SO:{so}); run `samtools sort` and `samtools index`")
    if not fh.has_index():
        raise InputError(f"{path}: no index (.bai/.csi/.crai); run `samtools index {path}`")
    host_tids = set()
    for tid, (name, length) in enumerate(zip(fh.references, fh.lengths)):
        if name not in host.lengths:
            plain = name[3:] if name.startswith("chr") else "chr" + name
            hint = f" (it has {plain}: the FASTA names chromosomes another way)" if plain in host.lengths else ""
            raise InputError(f"{req.host}: does not match the header of {path}: contig {name} is missing{hint}")
        if host.lengths[name] != length:
            raise InputError(f"{req.host}: does not match the header of {path}: contig {name} is "
                             f"{host.lengths[name]:,} bp there, {length:,} bp in the BAM")
        if not known_virus(name):
            host_tids.add(tid)
    if not host_tids:
        raise InputError(f"{path}: no host contigs in the header")
    return host_tids


def _clipped_host_alignment(rec, on_host: bool, host_tids: set[int], min_mapq: int, min_clip: int):
    """(chrom, start, end, reverse, left clip, right clip, host-oriented sequence) of a primary
    record's host alignment with a soft clip of at least min_clip bases: its own, else the best
    host part in its SA tag; None if there is none or it is below min_mapq."""
    if on_host:
        if rec.mapping_quality < min_mapq:
            return None
        cig = rec.cigartuples
        left = cig[0][1] if cig[0][0] == 4 else 0  # hard-clipped bases are not in the record
        right = cig[-1][1] if cig[-1][0] == 4 else 0
        if left < min_clip and right < min_clip:
            return None
        return rec.reference_name, rec.reference_start, rec.reference_end, rec.is_reverse, left, right, rec.query_sequence
    if rec.is_unmapped or not rec.has_tag("SA"):
        return None
    seq = rec.query_sequence
    if not seq:
        return None
    best = None
    for mapq, f in _host_sa_entries(rec, host_tids, min_mapq):
        if best is None or mapq > best[0]:
            best = (mapq, f)
    if best is None:
        return None
    return _sa_alignment(rec, best[1])


def _host_sa_entries(rec, host_tids: set[int], min_mapq: int) -> list[tuple[int, list[str]]]:
    """(mapq, fields) of each host alignment in a record's SA tag at min_mapq or above, in its order."""
    out = []
    for entry in str(rec.get_tag("SA")).rstrip(";").split(";"):
        f = entry.split(",")
        if len(f) < 6 or f[0] not in rec.header.references:
            continue
        mapq = int(f[4])
        if rec.header.get_tid(f[0]) in host_tids and mapq >= min_mapq:
            out.append((mapq, f))
    return out


def _long_read_splits(rec, host_tids: set[int], min_mapq: int, min_clip: int) -> list[tuple]:
    """The other host alignments of a long read (LONG_READ bases and more) whose primary alignment
    is on the host, from its SA tag, with a clip of at least min_clip bases: a read across an
    insertion has its host sides as primary and supplementary alignments, and each side's clip is a
    junction (the supplementary records themselves carry no clipped bases: minimap2 hard-clips them)."""
    if (rec.query_length or 0) < LONG_READ or not rec.has_tag("SA") or not rec.query_sequence:
        return []
    out = []
    for _, f in _host_sa_entries(rec, host_tids, min_mapq):
        aln = _sa_alignment(rec, f)
        if max(aln[4], aln[5]) >= min_clip:
            out.append(aln)
    return out


def _long_read_insertions(rec) -> list[tuple]:
    """The insertions of MIN_LONG_INSERTION bases and more in a long read's host alignment (its
    CIGAR's I operations), each as an alignment clipped on both sides to the inserted bases: minimap2
    aligns a long read across a viral insertion of a few kb as one host alignment with the virus
    inserted, so both junctions lie in the one record (host base before it, host base after it)."""
    if (rec.query_length or 0) < LONG_READ or not rec.query_sequence:
        return []
    out, ref, q, seq = [], rec.reference_start, 0, rec.query_sequence
    for op, n in rec.cigartuples:
        if op in (0, 7, 8):  # M, =, X
            ref += n
            q += n
        elif op == 1:  # I
            if n >= MIN_LONG_INSERTION:
                out.append((rec.reference_name, ref, ref, rec.is_reverse, n, n, seq[q:q + n]))
            q += n
        elif op in (2, 3):  # D, N
            ref += n
        elif op == 4:  # S
            q += n
    return out


def _sa_alignment(rec, f: list[str]) -> tuple:
    """(chrom, start, end, reverse, left clip, right clip, host-oriented sequence) of the SA entry
    `f` (its fields) of a record holding the read's whole sequence."""
    seq = rec.query_sequence
    left, ref_len, right = _cigar_parts(f[3])
    original = revcomp(seq) if rec.is_reverse else seq
    reverse = f[2] == "-"
    oriented = revcomp(original) if reverse else original
    start = int(f[1]) - 1
    return f[0], start, start + ref_len, reverse, left, right, oriented


def scan_bam(req: IntegrationRequest, col: PieceCollector, host, report: Reporter) -> None:
    check_readable(req.bam)
    try:
        fh = pysam.AlignmentFile(req.bam, "r", reference_filename=req.host, threads=usable_threads(req.threads))
    except (ValueError, OSError):
        raise wrong_kind(req.bam, "a BAM/CRAM file", "give a host-aligned BAM/CRAM, or the reads as --reads1/--reads2") \
            from None
    stats = col.stats
    stats.mode = "bam"
    with fh:
        host_tids = _check_header(fh, req, host)
        anchors: dict[str, tuple] = {}  # mapped host mate waiting for its non-host mate
        mates: dict[str, tuple] = {}  # non-host read waiting for its host mate
        host_mapped = 0
        last = (-1, -1)
        try:
            with report.progress("scanning alignments", None) as advance:
                for rec in fh.fetch(until_eof=True):
                    flag = rec.flag
                    if flag & 0x900:
                        continue
                    stats.reads += 1
                    if stats.reads % 100_000 == 0:
                        advance(100_000)
                    here = (rec.reference_id, rec.reference_start)
                    if here[0] < 0:
                        last = (1 << 62, 0)  # unplaced reads come last
                    else:
                        if here < last:
                            raise InputError(f"{req.bam}: not sorted by coordinate at record {stats.reads:,} "
                                             f"({rec.query_name}); run `samtools sort`")
                        last = here
                    on_host = not rec.is_unmapped and rec.reference_id in host_tids
                    host_mapped += on_host
                    aln = _clipped_host_alignment(rec, on_host, host_tids, req.min_mapq, req.min_clip)
                    if aln is not None:
                        add_splits(col, aln, rec.query_name, req.min_clip)
                    if on_host and rec.mapping_quality >= req.min_mapq:
                        for other in _long_read_splits(rec, host_tids, req.min_mapq, req.min_clip) + \
                                _long_read_insertions(rec):
                            add_splits(col, other, rec.query_name, req.min_clip)
                    if not rec.is_paired:
                        continue
                    name = rec.query_name
                    mate_on_host = not rec.mate_is_unmapped and rec.next_reference_id in host_tids
                    if on_host and not mate_on_host:
                        info = (rec.reference_name, rec.reference_start, rec.reference_end, rec.is_reverse,
                                rec.mapping_quality)
                        if name in mates:
                            _pair(col, info, mates.pop(name), name, req)
                        else:
                            anchors[name] = info
                    elif not on_host and mate_on_host:
                        seq = rec.query_sequence or ""
                        mate = (revcomp(seq) if rec.is_reverse else seq, rec)
                        if name in anchors:
                            _pair(col, anchors.pop(name), mate, name, req)
                        else:
                            mates[name] = (mate[0], _mate_fields(rec))
                    elif not on_host and not mate_on_host and rec.query_sequence:
                        col.add_unanchored(rec.query_sequence)
        except (OSError, ValueError) as exc:
            raise InputError(f"{req.bam}: malformed or truncated alignment file after {stats.reads:,} reads ({exc})") from None
    if host_mapped == 0 and mates:
        report.log(f"{req.bam}: no reads aligned to the host (an unmapped-only BAM?): pairs are anchored "
                   "on the mate positions the records carry")
        for name in sorted(mates):
            _pair(col, mates[name][1], mates[name], name, req)
        mates.clear()
    left_over = sorted(anchors) + sorted(mates)
    if left_over:
        raise InputError(f"{req.bam}: {len(left_over):,} reads have no mate record (e.g. {left_over[0]}); "
                         "find-integrations needs both reads of each pair, the unmapped ones too "
                         "(a BAM filtered with -F 4 or cut to a region loses them)")


def _mate_fields(rec) -> tuple:
    """The anchor as an unmapped read's own record describes its mapped mate (for unmapped-only BAMs):
    position and strand, the end from the MC tag (else one read length), mapping quality from MQ."""
    start = rec.next_reference_start
    if rec.has_tag("MC"):
        end = start + _cigar_parts(str(rec.get_tag("MC")))[1]
    else:
        end = start + (rec.query_length or 0)
    mapq = int(rec.get_tag("MQ")) if rec.has_tag("MQ") else 255
    return rec.next_reference_name, start, end, rec.mate_is_reverse, mapq


def _pair(col: PieceCollector, anchor: tuple, mate: tuple, name: str, req: IntegrationRequest) -> None:
    chrom, start, end, reverse, mapq = anchor
    if mapq < req.min_mapq or not mate[0]:
        return
    col.add(pair_piece((chrom, start, end, reverse), mate[0], name))
