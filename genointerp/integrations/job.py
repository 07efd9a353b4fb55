"""The find-integrations job: host-virus junctions from a host-aligned BAM/CRAM or paired FASTQ.

Evidence, read by read:
- **split reads**: a read aligned to the host whose soft-clipped end (at least `min_clip` bases)
  is viral; the host breakpoint is exact (the alignment's end). An aligned part given only as an
  SA tag (a read whose primary alignment is on a viral contig of a host+virus reference) counts the
  same way.
- **spanning pairs**: one mate aligned to the host (mapping quality at least `min_mapq`), the other
  unaligned (or on a viral contig) and viral; the junction lies beyond the anchor, within a
  fragment length. When the viral mate's unaligned end is long enough, it is looked for in the host
  next to the anchor (mappy on that window): found, the pair's read becomes a split read too.
- fully unaligned viral pairs tell no host position; they are counted per type in the summary.
Viral parts are placed by genointerp.viral.typing.placement (seed evidence, then mappy). Split reads are
clustered by host position (within CLUSTER_BP), pairs joined to the nearest split-read junction
they can reach or clustered among themselves (imprecise junctions); a junction needs `min_support`
reads and pairs in all. Its virus and type are the panel reference most of its viral bases align
to (by matching bases), its viral position the commonest among split reads on that reference;
below 90 % identity to it the type is reported as e.g. "HPV70-like" (a type the panel lacks).
One junction is one call: where two calls of one type lie at one host breakpoint (one's position
within the other's tolerance, on the same strand), the one with more reads is kept
(`_one_per_junction`).

Every output names a type the same way, by its display name (`HPV16`, `HBV genotype A`,
`HPV70-like`: genointerp.viral.panel), the VCF too (VCF 4.3 allows spaces in INFO values).

Input modes: a coordinate-sorted, indexed BAM/CRAM (with its unmapped reads; an unmapped-only BAM
works from the mates' positions its records carry), or paired FASTQ aligned here with mappy (only
pairs with viral evidence are aligned to the host). Outputs are sorted by host position (the VCF,
with a viral breakend beside each host one, by contig in its header's order, the host's first,
then position) and deterministic (no floating point, no threads in the decisions).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import islice

import mappy
import pysam

from genointerp import __version__
from genointerp.errors import InputError, UsageError
from genointerp.io.atomic import AtomicOutputs, open_streams
from genointerp.io.chroms import chrom_alias
from genointerp.io.genes import read_genes
from genointerp.io.inputs import check_readable, is_stream
from genointerp.io.junctions import Junction, tabix_vcf, vcf_text, write_bedpe, write_vcf
from genointerp.io.paths import own_descriptor
from genointerp.io.reference import Reference
from genointerp.io.sequences import iter_records
from genointerp.io.viral_report import report_files, write_multiqc_integrations
from genointerp.job import distinct_inputs, one_stdout
from genointerp.report import Reporter
from genointerp.resources import builtin_model_dir
from genointerp.seq.alphabet import decode
from genointerp.viral.panel import ViralName, known_virus
from genointerp.viral.report.sample_report import check_sample_name, sample_name
from genointerp.viral.typing.placement import Placement, ViralPanel, entropy_ok, junction_side, revcomp, unaligned_flank

CLUSTER_BP = 10  # split reads within this many bases of a cluster's first are one junction
BATCH = 4096  # pieces placed at once
# below this identity to the best panel genome the reads come from another type (HPV types differ
# by more than 10 % in L1): the type is reported as its nearest relative's with "-like"
SAME_TYPE_IDENTITY = 0.9
TSV_COLUMNS = ["junction_id", "host_chrom", "host_pos", "host_strand", "virus", "type", "viral_contig", "viral_pos",
               "orientation", "split_reads", "spanning_pairs", "kmer_hits", "nearest_genes", "status"]
INFO_DEFS = [
    'ID=SVTYPE,Number=1,Type=String,Description="Type of structural variant"',
    'ID=IMPRECISE,Number=0,Type=Flag,Description="Breakpoint estimated from read pairs only"',
    'ID=CIPOS,Number=2,Type=Integer,Description="Confidence interval around POS"',
    'ID=VIRUS,Number=1,Type=String,Description="Virus of the junction (HPV, HBV, ...)"',
    'ID=VTYPE,Number=1,Type=String,Description="Viral type as the table names it (HPV16, HBV genotype A, HPV70-like, ...)"',
    'ID=SR,Number=1,Type=Integer,Description="Split reads across the junction"',
    'ID=PE,Number=1,Type=Integer,Description="Read pairs spanning the junction"',
    'ID=KMERHITS,Number=1,Type=Integer,Description="Viral seed hits of the supporting reads"',
    'ID=GENES,Number=.,Type=String,Description="Host genes overlapping the junction, else the nearest on each side (NAME(-distance) left, NAME(+distance) right)"',
]
VCF_SIDES = ("host", "virus")  # VCF IDs of a junction's two breakends: INT1_host, INT1_virus


@dataclass
class IntegrationRequest:
    """find-integrations: the fields are its options (files as paths, `-` for stdout)."""

    host: str  # indexed host FASTA (the BAM's reference)
    bam: str | None = None
    reads1: str | None = None
    reads2: str | None = None
    output: str = "-"  # junction table (TSV)
    vcf: str | None = None  # the junctions as VCF breakends
    index_vcf: bool = False  # also VCF.tbi (tabix), for a bgzipped VCF file
    bedpe: str | None = None  # the junctions as BEDPE
    summary: str | None = None  # summary JSON
    multiqc: str | None = None  # the junctions as MultiQC custom content (*_mqc.tsv)
    sample: str | None = None  # the MultiQC rows' sample name; None: from the input's file name
    genes: str | None = None
    viral_refs: list[str] = field(default_factory=list)
    model: str | None = None  # model folder whose viral references and seed index are used
    min_mapq: int = 20
    min_clip: int = 20
    min_support: int = 3
    max_fragment: int = 1000
    threads: int = 1

    def check(self) -> None:
        if (self.bam is None) == (self.reads1 is None):
            raise UsageError("BAM: give a host-aligned BAM/CRAM, or paired FASTQ (--reads1 and --reads2), not both")
        if self.bam == "-":
            raise UsageError("BAM: the BAM must be an indexed file, not stdin")
        if (self.reads1 is None) != (self.reads2 is None):
            raise UsageError("--reads2: paired FASTQ needs both --reads1 and --reads2")
        distinct_inputs(("--reads1", self.reads1), ("--reads2", self.reads2),
                        why="each read of a pair would be paired with itself")
        for name, value, low in (("--min-mapq", self.min_mapq, 0), ("--min-clip", self.min_clip, 15),
                                 ("--min-support", self.min_support, 1), ("--max-fragment", self.max_fragment, 100),
                                 ("--threads", self.threads, 1)):
            if value < low:
                raise UsageError(f"{name}: must be at least {low}")
        one_stdout(("--output", self.output), ("--vcf", self.vcf), ("--bedpe", self.bedpe), ("--summary", self.summary),
                   *((option, path) for option, _, path in report_files(None, None, None, None, self.multiqc)))
        check_sample_name(self.sample)
        if self.index_vcf and (self.vcf is None or self.vcf == "-" or not self.vcf.endswith(".gz")
                               or is_stream(self.vcf) or own_descriptor(self.vcf) is not None):
            raise UsageError("--index-vcf: needs --vcf naming a file that ends in .gz (bgzipped), "
                             "not stdout or a pipe")

    def inputs(self) -> list[str | None]:
        return [self.bam, self.host, self.reads1, self.reads2, self.genes, self.model, *self.viral_refs]


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
class _Evidence:
    kind: str
    chrom: str
    side: str
    pos: int
    name: str
    place: Placement
    vside: str
    vpos: int
    anchor: tuple[int, int] = (0, 0)  # pair: the anchor's alignment (start, end)


@dataclass
class Stats:
    reads: int = 0
    pieces: int = 0
    viral_pieces: int = 0
    rescued: int = 0
    unanchored: Counter = field(default_factory=Counter)
    mode: str = ""


# ------------------------------------------------------------------------------------------------
# placing pieces and rescuing split reads


class _Collector:
    """Pieces queued for placement in batches; placed ones become evidence."""

    def __init__(self, panel: ViralPanel, req: IntegrationRequest, host, stats: Stats) -> None:
        self.panel, self.req, self.host, self.stats = panel, req, host, stats
        self.queue: list[_Piece] = []
        self.unanchored: list[str] = []
        self.evidence: list[_Evidence] = []

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
                self.evidence.append(_Evidence("split", piece.chrom, piece.side, piece.pos, piece.name, p, vside, vpos))
                continue
            vside, vpos = junction_side(piece.side, p, length)
            self.evidence.append(_Evidence("pair", piece.chrom, piece.side, piece.pos, piece.name, p, vside, vpos,
                                           piece.anchor))
            flank = unaligned_flank(piece.side, p, piece.seq)
            if len(flank) >= self.req.min_clip:
                at = self._rescue(piece, flank)
                if at is not None:
                    self.stats.rescued += 1
                    self.evidence.append(_Evidence("split", piece.chrom, piece.side, at, piece.name + "/rescued", p, vside, vpos))
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


# ------------------------------------------------------------------------------------------------
# BAM/CRAM input

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
    for entry in str(rec.get_tag("SA")).rstrip(";").split(";"):
        f = entry.split(",")
        if len(f) < 6 or f[0] not in rec.header.references:
            continue
        tid = rec.header.get_tid(f[0])
        mapq = int(f[4])
        if tid in host_tids and mapq >= min_mapq and (best is None or mapq > best[0]):
            best = (mapq, f)
    if best is None:
        return None
    f = best[1]
    left, ref_len, right = _cigar_parts(f[3])
    original = revcomp(seq) if rec.is_reverse else seq
    reverse = f[2] == "-"
    oriented = revcomp(original) if reverse else original
    start = int(f[1]) - 1
    return f[0], start, start + ref_len, reverse, left, right, oriented


def _add_splits(col: _Collector, aln, name: str, min_clip: int) -> None:
    chrom, start, end, _, left, right, seq = aln
    if right >= min_clip:
        col.add(_Piece("split", chrom, "+", end - 1, name, seq[len(seq) - right:]))
    if left >= min_clip:
        col.add(_Piece("split", chrom, "-", start, name, seq[:left]))


def _pair_piece(anchor, mate_seq_original: str, name: str) -> _Piece:
    """The pair evidence of an anchor (chrom, start, end, reverse) and its mate's read as sequenced."""
    chrom, start, end, reverse = anchor
    if reverse:  # the fragment's host-forward strand is the mate's own
        return _Piece("pair", chrom, "-", start, name, mate_seq_original, (start, end))
    return _Piece("pair", chrom, "+", end - 1, name, revcomp(mate_seq_original), (start, end))


def _scan_bam(req: IntegrationRequest, col: _Collector, host, report: Reporter) -> None:
    check_readable(req.bam)
    try:
        fh = pysam.AlignmentFile(req.bam, "r", reference_filename=req.host, threads=req.threads)
    except (ValueError, OSError) as exc:
        raise InputError(f"{req.bam}: cannot open as BAM/CRAM ({exc})") from None
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
                        _add_splits(col, aln, rec.query_name, req.min_clip)
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


def _pair(col: _Collector, anchor: tuple, mate: tuple, name: str, req: IntegrationRequest) -> None:
    chrom, start, end, reverse, mapq = anchor
    if mapq < req.min_mapq or not mate[0]:
        return
    col.add(_pair_piece((chrom, start, end, reverse), mate[0], name))


# ------------------------------------------------------------------------------------------------
# paired FASTQ input


def _pair_names(n1: str, n2: str) -> tuple[str, str]:
    a, b = n1.split()[0], n2.split()[0]
    for suffix in ("/1", "/2"):
        a = a[:-2] if a.endswith(suffix) else a
        b = b[:-2] if b.endswith(suffix) else b
    return a, b


def _scan_fastq(req: IntegrationRequest, col: _Collector, host, report: Reporter) -> None:
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


def _fastq_pair(col: _Collector, aligner, s1: str, s2: str, name: str, req: IntegrationRequest) -> None:
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
            _add_splits(col, aln, f"{name}/{i + 1}", req.min_clip)
    for i in (0, 1):
        anchor, other = alns[i], alns[1 - i]
        if isinstance(anchor, tuple) and other is None:
            col.add(_pair_piece(anchor[:4], (s2, s1)[i], name))
    if alns[0] is None and alns[1] is None:
        col.add_unanchored(s1)
        col.add_unanchored(s2)


# ------------------------------------------------------------------------------------------------
# clustering


@dataclass
class _Call:
    chrom: str
    side: str
    pos: int
    precise: bool
    splits: list[_Evidence] = field(default_factory=list)
    pairs: list[_Evidence] = field(default_factory=list)
    lo: int = 0
    hi: int = 0


def _cluster(evidence: list[_Evidence], panel: ViralPanel, req: IntegrationRequest) -> list[_Call]:
    groups: dict[tuple, list[_Evidence]] = defaultdict(list)
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
        loose: list[_Evidence] = []
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


def type_name(naming: ViralName, identity: float) -> str:
    """The type as every output names it: the display name (HPV16, HBV genotype A), with "-like"
    below SAME_TYPE_IDENTITY (reads of a type the panel lacks, placed on its nearest relative)."""
    return naming.display if identity >= SAME_TYPE_IDENTITY else f"{naming.display}-like"


def _viral_end(call: _Call, panel: ViralPanel) -> _ViralEnd:
    """The viral side of a junction (see _ViralEnd)."""
    votes: Counter = Counter()
    for e in call.splits + call.pairs:
        votes[e.place.ref] += e.place.mlen
    ref = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    on_ref = [e for e in call.splits + call.pairs if e.place.ref == ref]
    vside = min(Counter(e.vside for e in on_ref).most_common(), key=lambda kv: (-kv[1], kv[0]))[0]
    split_pos = [e.vpos for e in on_ref if e.kind == "split" and e.vside == vside]
    if split_pos:
        vpos = min(Counter(split_pos).most_common(), key=lambda kv: (-kv[1], kv[0]))[0]
    else:
        pos = [e.vpos for e in on_ref if e.vside == vside]
        vpos = min(pos) if vside == "-" else max(pos)
    hits = sum(e.place.kmer_hits for e in call.splits + call.pairs)
    identity = sum(e.place.mlen for e in on_ref) / sum(e.place.blen for e in on_ref)
    return _ViralEnd(ref, vside, vpos, hits, identity, type_name(panel.refs[ref].naming, identity))


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


def _junction_calls(evidence: list[_Evidence], panel: ViralPanel, req: IntegrationRequest
                    ) -> list[tuple[_Call, _ViralEnd]]:
    """The junctions of the evidence: calls (`_cluster`) with their viral ends, one per junction
    (`_one_per_junction`), in no particular order."""
    return _one_per_junction([(c, _viral_end(c, panel)) for c in _cluster(evidence, panel, req)])


# ------------------------------------------------------------------------------------------------
# genes


class _NearestGenes:
    def __init__(self, path: str, host, warn) -> None:
        self.by_chrom: dict[str, list] = defaultdict(list)
        warned = set()
        for g in read_genes(path):
            chrom = g.chrom if g.chrom in host.lengths else chrom_alias(g.chrom, host.lengths)
            if chrom is None:
                continue
            if chrom != g.chrom and g.chrom not in warned:
                warned.add(g.chrom)
                warn(f"{path}: chromosome {g.chrom} taken as {chrom} of the host {host.path}")
            self.by_chrom[chrom].append(g)

    def __call__(self, chrom: str, pos: int) -> list[str]:
        genes = self.by_chrom.get(chrom, [])
        inside = [g.name for g in genes if g.start <= pos < g.end]
        if inside:
            return inside
        left = max((g for g in genes if g.end <= pos), key=lambda g: (g.end, g.name), default=None)
        right = min((g for g in genes if g.start > pos), key=lambda g: (g.start, g.name), default=None)
        out = []
        if left is not None:
            out.append(f"{left.name}(-{pos - left.end + 1})")
        if right is not None:
            out.append(f"{right.name}(+{right.start - pos})")
        return out


# ------------------------------------------------------------------------------------------------
# the job


def run(req: IntegrationRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Find the junctions and write them as the TSV req.output and, when named, VCF, BEDPE and a
    summary JSON; returns the summary."""
    model_dir = req.model or builtin_model_dir()
    tsv, vcf, bedpe, summary = req.output, req.vcf, req.bedpe, req.summary
    paths = outputs.files(tsv, vcf, bedpe, summary, req.multiqc)  # refused outputs cost nothing: before the scan
    tbi = str(outputs.file(f"{vcf}.tbi")) if req.index_vcf else None
    with Reference(req.host, report.warn) as host:
        genes = _NearestGenes(req.genes, host, report.warn) if req.genes else None
        panel = ViralPanel(model_dir, req.viral_refs, report.log, keep_sequences=vcf is not None)
        try:
            stats = Stats()
            col = _Collector(panel, req, host, stats)
            if req.bam is not None:
                _scan_bam(req, col, host, report)
            else:
                _scan_fastq(req, col, host, report)
            col.flush()
            calls = _junction_calls(col.evidence, panel, req)
        finally:
            panel.close()
        order = {name: i for i, name in enumerate(host.names)}
        calls.sort(key=lambda ce: (order[ce[0].chrom], ce[0].pos, ce[0].side))
        junctions, rows = [], []
        for i, (c, end) in enumerate(calls, 1):
            naming = panel.refs[end.ref].naming
            near = genes(c.chrom, c.pos) if genes else []
            split_reads = len({e.name for e in c.splits})
            pairs = len({e.name for e in c.pairs})
            status = "precise" if c.precise else "imprecise"
            jid = f"INT{i}"
            info = {"SVTYPE": "BND", "IMPRECISE": not c.precise,
                    "CIPOS": None if c.precise else (c.lo - c.pos, c.hi - 1 - c.pos),
                    "VIRUS": vcf_text(naming.virus), "VTYPE": vcf_text(end.type), "SR": split_reads, "PE": pairs,
                    "KMERHITS": end.kmer_hits, "GENES": [vcf_text(g) for g in near] or None}
            junctions.append(Junction(jid, c.chrom, c.pos, c.side, end.ref, end.pos, end.side, split_reads + pairs,
                                      start=c.lo, end=c.hi, info=info,
                                      extra=(naming.virus, end.type, split_reads, pairs, status)))
            rows.append([jid, c.chrom, c.pos + 1, c.side, naming.virus, end.type, end.ref, end.pos + 1,
                         c.side + end.side, split_reads, pairs, end.kmer_hits, ",".join(near) or ".", status])
        ref_bases = [_base(host, j.chrom, j.pos) for j in junctions]
        # the viral breakends' bases, from the panel's genomes (the positions are theirs); VCF's REF
        # takes A, C, G, T or N, and some genomes carry IUPAC codes (R, Y, ...)
        mate_bases = [_vcf_base(panel.sequences[j.mate_chrom][j.mate_pos]) for j in junctions] if vcf else []
        contigs = [(n, host.lengths[n]) for n in host.names]
        used = sorted({j.mate_chrom for j in junctions})
        contigs += [(n, panel.refs[n].length) for n in used if n not in host.lengths]
    result = _summary(req, rows, stats, panel, model_dir)
    with open_streams(paths) as out:
        out[tsv].write(("\t".join(TSV_COLUMNS) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows)).encode())
        if vcf:
            meta = [f"source=genointerp find-integrations {__version__}", f"reference={req.host}"]
            write_vcf(out[vcf], junctions, contigs, ref_bases, mate_bases, meta, INFO_DEFS, VCF_SIDES)
        if bedpe:
            write_bedpe(out[bedpe], junctions, ["virus", "type", "split_reads", "spanning_pairs", "status"])
        if summary:
            out[summary].write((json.dumps(result, indent=2) + "\n").encode())
        if req.multiqc:
            sample = req.sample or sample_name([req.bam if req.bam is not None else req.reads1])
            write_multiqc_integrations(out[req.multiqc], sample, [dict(zip(TSV_COLUMNS, r)) for r in rows])
    if tbi is not None:
        tabix_vcf(paths[vcf], tbi)
    return result


def _vcf_base(base: str) -> str:
    return base if base in "ACGTN" else "N"


def _base(host, chrom: str, pos: int) -> str:
    return decode(host.codes(chrom, pos, pos + 1)).decode()


def _summary(req: IntegrationRequest, rows: list, stats: Stats, panel: ViralPanel, model_dir) -> dict:
    by_virus, by_type = Counter(r[4] for r in rows), Counter(r[5] for r in rows)
    return {
        "junctions": len(rows),
        "precise": sum(r[13] == "precise" for r in rows),
        "imprecise": sum(r[13] == "imprecise" for r in rows),
        "by_virus": dict(sorted(by_virus.items())),
        "by_type": dict(sorted(by_type.items())),
        "split_reads": sum(r[9] for r in rows),
        "spanning_pairs": sum(r[10] for r in rows),
        "reads_scanned": stats.reads,
        "pieces_placed": stats.pieces,
        "viral_pieces": stats.viral_pieces,
        "split_reads_rescued": stats.rescued,
        "unanchored_viral_reads": dict(sorted(stats.unanchored.items())),
        "input": req.bam if req.bam is not None else [req.reads1, req.reads2],
        "input_mode": stats.mode,
        "host": req.host,
        "viral_panel": {"model": str(model_dir), "added": list(req.viral_refs), "references": len(panel.refs)},
        "settings": {"min_mapq": req.min_mapq, "min_clip": req.min_clip, "min_support": req.min_support,
                     "max_fragment": req.max_fragment},
        "version": __version__,
    }
