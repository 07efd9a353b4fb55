"""Track-prediction inputs: one-hot, indexed reference, targets table, binned signal, regions."""

from __future__ import annotations

import gzip
import importlib.util
import pickle
import shutil
import struct
from pathlib import Path

import numpy as np
import pyBigWig
import pytest

from genointerp.errors import InputError, UsageError
from genointerp.io.reference import Reference
from genointerp.io.regions import Region, parse_region, read_regions, whole_chromosomes
from genointerp.io.tracks import TrackSpec, binned_signals, read_targets, track_format
from genointerp.seq.alphabet import decode, encode, reverse_complement_codes
from genointerp.seq.onehot import one_hot

TRACKS = Path(__file__).resolve().parent.parent / "test-data" / "tracks"


def _generator():
    spec = importlib.util.spec_from_file_location("make_tracks_data", TRACKS.parent / "make_tracks_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def ref():
    with Reference(str(TRACKS / "ref.fa.gz")) as r:
        yield r


def _text(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def _bins(ref, path, stat, bin_size=100, chrom="chr1", name="", warn=None):
    return binned_signals([TrackSpec("t", str(path), "g", "", name)], ref, chrom, bin_size, stat, warn)[:, 0]


# --- one-hot ------------------------------------------------------------------------------------

def test_one_hot_table_batch_and_reverse_complement():
    x = one_hot(np.array([0, 1, 2, 3, 4], dtype=np.uint8))
    assert x.dtype == np.float32 and x.shape == (5, 4)
    assert np.array_equal(x, np.vstack([np.eye(4), np.zeros(4)]))
    codes = encode(b"ACGTNNRYACGGT").reshape(1, -1).repeat(3, axis=0)
    assert one_hot(codes).shape == (3, 13, 4)
    rc = reverse_complement_codes(codes)
    assert np.array_equal(one_hot(rc), one_hot(codes)[:, ::-1, ::-1])
    with pytest.raises(ValueError, match="not a nucleotide code"):
        one_hot(np.array([0, 255], dtype=np.uint8))


# --- reference ----------------------------------------------------------------------------------

def test_reference_names_codes_gaps_and_end_padding(ref):
    assert ref.names == ["chr1", "chr2"] and ref.lengths == {"chr1": 40_000, "chr2": 20_000}
    assert (ref.codes("chr1", 15_000, 16_000) == 4).all()  # the N gap
    soft = ref.codes("chr2", 5_000, 5_200)  # lower-case (soft-masked) bases are bases
    assert soft.dtype == np.uint8 and (soft < 4).all()
    tail = ref.codes("chr1", 39_995, 40_005)
    assert np.array_equal(tail[:5], ref.codes("chr1", 39_995, 40_000)) and (tail[:5] < 4).all()
    assert (tail[5:] == 4).all()
    head = ref.codes("chr1", -3, 3)
    assert (head[:3] == 4).all() and np.array_equal(head[3:], ref.codes("chr1", 0, 3))
    assert (ref.codes("chr1", 50_000, 50_010) == 4).all()
    assert pickle.loads(pickle.dumps(ref)).lengths == ref.lengths


def test_reference_resolve_aliases_once_per_source(ref):
    warnings = []
    assert ref.resolve("chr2", "a.bed", warnings.append) == "chr2"
    assert [ref.resolve("1", "a.bed", warnings.append) for _ in range(3)] == ["chr1"] * 3
    assert ref.resolve("1", "b.bed", warnings.append) == "chr1"
    assert len(warnings) == 2 and "a.bed: chromosome 1 taken as chr1" in warnings[0]
    with pytest.raises(InputError, match=r"a\.bed: chromosome chrZ is not in the reference .*chr1, chr2"):
        ref.resolve("chrZ", "a.bed")


def test_reference_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        Reference(str(tmp_path / "missing.fa"))
    shutil.copy(TRACKS / "ref.fa.gz", tmp_path / "nofai.fa.gz")
    shutil.copy(TRACKS / "ref.fa.gz.gzi", tmp_path / "nofai.fa.gz.gzi")
    with pytest.raises(InputError, match=r"no index .*nofai\.fa\.gz\.fai; create it with `samtools faidx"):
        Reference(str(tmp_path / "nofai.fa.gz"))
    assert not (tmp_path / "nofai.fa.gz.fai").exists()  # never indexes behind the user's back
    shutil.copy(TRACKS / "ref.fa.gz", tmp_path / "nogzi.fa.gz")
    shutil.copy(TRACKS / "ref.fa.gz.fai", tmp_path / "nogzi.fa.gz.fai")
    with pytest.raises(InputError, match=r"no bgzip index .*\.gzi"):
        Reference(str(tmp_path / "nogzi.fa.gz"))
    (tmp_path / "plain.fa.gz").write_bytes(gzip.compress(b">x\nACGT\n"))
    with pytest.raises(InputError, match="not bgzip"):
        Reference(str(tmp_path / "plain.fa.gz"))
    _text(tmp_path / "notfasta.fa", ["chr1\t0\t10"])
    with pytest.raises(InputError, match="not a FASTA file"):
        Reference(str(tmp_path / "notfasta.fa"))


# --- targets table ------------------------------------------------------------------------------

def test_read_targets_of_the_test_data():
    specs = read_targets(str(TRACKS / "targets.tsv"))
    assert [s.id for s in specs] == ["motif_a", "motif_b", "cellX.TF1.conservative", "cellX.TF2.conservative"]
    assert [s.group for s in specs] == ["DNase", "ChIP", "ChIP", "ChIP"]
    assert [s.format for s in specs] == ["bigwig", "bedgraph", "narrowpeak", "narrowpeak"]
    assert specs[2].name == "cellX|TF1|conservative" and specs[0].name == ""
    assert all(Path(s.path).is_file() and Path(s.path).parent == TRACKS for s in specs)


def test_track_format_by_name():
    assert [track_format(p) for p in ["a.bw", "a.bigWig", "a.bedGraph.gz", "a.bg", "a.narrowPeak.gz",
                                      "a.bed", "a.txt"]] == ["bigwig", "bigwig", "bedgraph", "bedgraph",
                                                             "narrowpeak", "bed", None]


@pytest.mark.parametrize("lines, message", [
    ([], "empty targets file"),
    (["id\tpath"], "no tracks"),
    (["id\tfile", "a\tx.bw"], r"targets\.tsv:1: header has no 'path' column"),
    (["id\tpath", "a\tt.bedGraph", "a\tt.bedGraph"], r"targets\.tsv:3: duplicate track id 'a' \(first on line 2\)"),
    (["id\tpath", "a\tmissing.bw"], r"targets\.tsv:2: track file .*missing\.bw does not exist"),
    (["id\tpath", "a\tt.txt"], r"targets\.tsv:2: t\.txt: unsupported track format"),
    (["id\tpath\tname", "a\tt.bedGraph\tX"], r"targets\.tsv:2: name 'X' selects BED/narrowPeak"),
    (["id\tpath", "a/b\tt.bedGraph"], r"targets\.tsv:2: track id 'a/b' cannot name an output file"),
])
def test_read_targets_errors(tmp_path, lines, message):
    _text(tmp_path / "t.bedGraph", ["chr1\t0\t10\t1"])
    (tmp_path / "t.txt").write_text("x\n")
    with pytest.raises(InputError, match=message):
        read_targets(_text(tmp_path / "targets.tsv", lines))
    with pytest.raises(InputError, match="no such file"):
        read_targets(str(tmp_path / "none.tsv"))


def test_read_targets_defaults_and_relative_paths(tmp_path):
    (tmp_path / "sub").mkdir()
    _text(tmp_path / "sub" / "t.bedGraph", ["chr1\t0\t10\t1"])
    specs = read_targets(_text(tmp_path / "targets.tsv", ["#id\tpath", "", "# a comment", "a\tsub/t.bedGraph"]))
    assert specs == [TrackSpec("a", str(tmp_path / "sub" / "t.bedGraph"), "signal", "", "")]


# --- binned signal: hand-computed values --------------------------------------------------------

def test_bedgraph_mean_sum_max_by_hand(ref, tmp_path):
    # 2 over [0,50), 4 over [50,150), 10 over [250,260), -2 over [400,500), -1 over [650,700)
    bg = _text(tmp_path / "t.bedGraph", ["track type=bedGraph", "chr1 0 50 2", "chr1 50 150 4",
                                         "chr1 250 260 10", "chr1\t400\t500\t-2", "chr1\t650\t700\t-1"])
    total, mean, peak = (_bins(ref, bg, s) for s in ("sum", "mean", "max"))
    assert total.dtype == np.float32 and total.shape == (400,)
    assert total[:8].tolist() == [300, 200, 100, 0, -200, 0, -50, 0]
    assert mean[:8].tolist() == [3, 2, 1, 0, -2, 0, -0.5, 0]
    assert peak[:8].tolist() == [4, 4, 10, 0, -2, 0, 0, 0]  # bin 6 is half uncovered: its max is 0
    assert not total[8:].any()


def test_last_partial_bin_uses_the_bases_it_has(ref, tmp_path):
    bg = _text(tmp_path / "t.bedGraph", ["chr1\t39950\t40000\t6"])
    for stat, last in [("sum", 300.0), ("mean", 3.0), ("max", 6.0)]:
        y = _bins(ref, bg, stat, bin_size=300)  # 133 full bins + one of 100 bp
        assert y.shape == (134,) and y[-1] == last and not y[:-1].any()


def test_overlaps_combine_by_max_and_short_bed_is_one(ref, tmp_path):
    bed6 = _text(tmp_path / "t.bed", ["chr1\t0\t100\tp\t5\t+", "chr1\t50\t150\tq\t7\t+", "chr1\t60\t70\tr\t1\t+"])
    assert _bins(ref, bed6, "sum")[:3].tolist() == [5 * 50 + 7 * 50, 7 * 50, 0]
    bed3 = _text(tmp_path / "u.bed", ["chr1\t10\t30", "chr1\t20\t40"])
    assert _bins(ref, bed3, "sum")[:2].tolist() == [30, 0]


def test_bigwig_and_bedgraph_of_one_signal_bin_identically(ref, tmp_path):
    iv = [(0, 50, 2.0), (50, 150, 4.0), (250, 260, 10.0), (39_990, 40_000, 1.5)]
    bg = _text(tmp_path / "t.bedGraph", [f"chr1\t{s}\t{e}\t{v}" for s, e, v in iv])
    bw = pyBigWig.open(str(tmp_path / "t.bw"), "w")
    bw.addHeader([("chr1", 40_000), ("chr2", 20_000)])
    bw.addEntries(["chr1"] * 4, [s for s, _, _ in iv], ends=[e for _, e, _ in iv], values=[v for *_, v in iv])
    bw.close()
    for stat in ("mean", "sum", "max"):
        for size in (1, 7, 128):
            assert np.array_equal(_bins(ref, bg, stat, size), _bins(ref, tmp_path / "t.bw", stat, size))


def test_narrowpeak_name_filter_and_repeated_file(ref, tmp_path):
    np_file = _text(tmp_path / "p.narrowPeak", [
        "chr1\t0\t100\tA|TF1|conservative\t0\t.\t5\t-1\t-1\t50",
        "chr1\t100\t200\tB|TF2|relaxed\t0\t.\t3\t-1\t-1\t50",
        "chr1\t150\t250\tA|TF1|conservative\t0\t.\t2\t-1\t-1\t50"])
    specs = [TrackSpec(n, np_file, "ChIP", "", n) for n in ("A|TF1|conservative", "B|TF2|relaxed")]
    specs.append(TrackSpec("all", np_file, "ChIP", ""))
    y = binned_signals(specs, ref, "chr1", 100, "sum")
    assert y[:3].tolist() == [[500, 0, 500], [100, 300, 300], [100, 0, 100]]
    with pytest.raises(InputError, match=r"no rows named 'C\|TF3\|x' in column 4"):
        _bins(ref, np_file, "sum", name="C|TF3|x")


def test_chromosome_aliases_warn_once_and_missing_chromosome_is_zero(ref, tmp_path):
    bg = _text(tmp_path / "t.bedGraph", ["1\t0\t100\t1"])
    warnings: list[str] = []
    for _ in range(2):
        assert _bins(ref, bg, "sum", warn=warnings.append)[0] == 100
    assert len(warnings) == 1 and "chromosome 1 taken as chr1" in warnings[0]
    assert not _bins(ref, bg, "mean", chrom="chr2", warn=warnings.append).any()
    assert "no intervals on chr2" in warnings[-1]


@pytest.mark.parametrize("lines, message", [
    (["chr1\t39990\t40010\t1"], r"t\.bedGraph:1: interval chr1:39990-40010 runs past the end of chr1 \(40,000 bp"),
    (["chr1\t0\t10\t1", "chr1\t10\t20"], r"t\.bedGraph:2: a bedgraph line needs at least 4 columns"),
    (["chr1\t0\tten\t1"], r"t\.bedGraph:1: start/end .* are not integers"),
    (["chr1\t0\t10\tx"], r"t\.bedGraph:1: value 'x' in column 4 is not a number"),
    (["chr1\t0\t10\tnan"], r"t\.bedGraph:1: value nan is not a finite number"),
    (["chr1\t20\t10\t1"], r"t\.bedGraph:1: bad interval 20-10"),
    (["# nothing"], r"t\.bedGraph: no intervals"),
])
def test_text_track_errors(ref, tmp_path, lines, message):
    with pytest.raises(InputError, match=message):
        _bins(ref, _text(tmp_path / "t.bedGraph", lines), "mean")


def test_bigwig_of_another_assembly_and_bad_options(ref, tmp_path):
    with pytest.raises(InputError, match=r"other_assembly\.bw: chr1 is 41,000 bp here but 40,000 bp in the "
                                         r"reference FASTA; another assembly\?"):
        _bins(ref, TRACKS / "other_assembly.bw", "mean")
    bg = _text(tmp_path / "t.bedGraph", ["chr1\t0\t10\t1"])
    with pytest.raises(InputError, match="bin statistic 'median'"):
        _bins(ref, bg, "median")
    with pytest.raises(InputError, match="no chromosome chr9"):
        _bins(ref, bg, "mean", chrom="chr9")
    (tmp_path / "fake.bw").write_bytes(b"not a bigwig")
    with pytest.raises(InputError, match="not a bigWig file"):
        _bins(ref, tmp_path / "fake.bw", "mean")


# --- the committed test data is what its generator says -----------------------------------------

def test_test_data_tracks_follow_the_sequence(ref):
    gen = _generator()
    specs = read_targets(str(TRACKS / "targets.tsv"))
    for chrom in ref.names:
        seq = decode(ref.codes(chrom, 0, ref.lengths[chrom])).decode()
        expected = np.zeros((len(seq), 4), dtype=np.float32)
        for s, e in gen.site_intervals(seq, gen.MOTIF_A, gen.FLANK_A):
            expected[s:e, 0] = gen.VALUE_A
        for s, e in gen.site_intervals(seq, gen.MOTIF_B, gen.FLANK_B):
            expected[s:e, 1] = gen.VALUE_B
        for col, (motif, half, flank, value) in enumerate(gen.PEAK_SETS.values(), start=2):
            for s, e in gen.peaks(seq, motif, half, flank):
                expected[s:e, col] = value
        got = binned_signals(specs, ref, chrom, 1, "mean")
        assert np.array_equal(got, expected), chrom
        assert (expected[:, 0] > 0).sum() > 1000 and (expected[:, 1] > 0).sum() > 500
    regions = read_regions(str(TRACKS / "regions.bed"), ref)
    assert {r.chrom for r in regions} == {"chr1", "chr2"}


def _bgzf_blocks(path: Path) -> set[tuple[int, int]]:
    """(compressed, uncompressed) offset of the start of every BGZF block of `path`."""
    data, blocks, c, u = path.read_bytes(), set(), 0, 0
    while c < len(data):
        assert data[c : c + 4] == b"\x1f\x8b\x08\x04" and data[c + 12 : c + 14] == b"BC", (path, c)
        size = struct.unpack_from("<H", data, c + 16)[0] + 1  # BSIZE: the block's length - 1
        blocks.add((c, u))
        c, u = c + size, u + struct.unpack_from("<I", data, c + size - 4)[0]  # ISIZE: its text's length
    return blocks


def _gzi(path: Path) -> list[tuple[int, int]]:
    """The (compressed, uncompressed) offsets a .gzi index lists."""
    data = path.read_bytes()
    n = struct.unpack_from("<Q", data)[0]
    pairs = struct.unpack_from(f"<{2 * n}Q", data, 8)
    return list(zip(pairs[0::2], pairs[1::2]))


def _bigwig_content(path: Path) -> tuple:
    """What a bigWig says, read back: header (zoom levels, coverage, sums), chromosome sizes,
    every interval and value, and summaries from the zoom levels."""
    bw = pyBigWig.open(str(path))
    try:
        chroms = bw.chroms()
        return (bw.header(), list(chroms.items()), [bw.intervals(c) for c in chroms],
                [bw.stats(c, type=t, nBins=8) for c in chroms for t in ("mean", "min", "max", "coverage", "std")])
    finally:
        bw.close()


def test_generator_is_deterministic(tmp_path):
    """Rerunning the generator gives the committed data: the same text, the same text inside the
    gzip/BGZF files (their compressed bytes depend on the zlib build: zlib-ng or libdeflate
    compress the same text differently) and the same header, chromosomes, intervals and zoom
    summaries in the bigWigs (whose data blocks are zlib-compressed too)."""
    _generator().build(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in TRACKS.iterdir())
    for f in sorted(TRACKS.iterdir()):
        new = tmp_path / f.name
        if f.suffix == ".gz":
            assert gzip.decompress(new.read_bytes()) == gzip.decompress(f.read_bytes()), f.name
        elif f.suffix == ".bw":
            assert _bigwig_content(new) == _bigwig_content(f), f.name
        elif f.suffix == ".gzi":  # BGZF blocks hold fixed stretches of text, so only their compressed offsets may move
            assert [u for _, u in _gzi(new)] == [u for _, u in _gzi(f)], f.name
            assert set(_gzi(new)) <= _bgzf_blocks(tmp_path / f.stem), f.name
        else:
            assert new.read_bytes() == f.read_bytes(), f.name
    assert sum(f.stat().st_size for f in TRACKS.iterdir()) < 200_000


# --- regions ------------------------------------------------------------------------------------

def test_read_regions_and_whole_chromosomes(ref, tmp_path):
    regions = read_regions(str(TRACKS / "regions.bed"), ref)
    assert regions[0] == Region("chr1", 0, 15_000, "train") and len(regions[0]) == 15_000
    warnings: list[str] = []
    bed = _text(tmp_path / "r.bed", ["track name=x", "# comment", "1\t10\t20", "1\t30\t40\t.", "chr2\t0\t20000\tall"])
    assert read_regions(bed, ref, warnings.append) == [Region("chr1", 10, 20), Region("chr1", 30, 40),
                                                      Region("chr2", 0, 20_000, "all")]
    assert len(warnings) == 1
    assert whole_chromosomes(ref) == [Region("chr1", 0, 40_000, "chr1"), Region("chr2", 0, 20_000, "chr2")]
    assert whole_chromosomes(ref, ["2"]) == [Region("chr2", 0, 20_000, "chr2")]


@pytest.mark.parametrize("lines, message", [
    (["# only a comment"], r"r\.bed: no regions"),
    (["chr1\t10"], r"r\.bed:1: a BED line needs chrom, start, end"),
    (["chr1\t10\tx"], r"r\.bed:1: start/end .* are not integers"),
    (["chr1\t0\t5", "chr1\t20\t20"], r"r\.bed:2: empty or reversed region chr1:20-20"),
    (["chr1\t39000\t41000"], r"r\.bed:1: region chr1:39,000-41,000 is off the end of chr1 \(40,000 bp\)"),
    (["chrZ\t0\t10"], r"r\.bed:1: chromosome chrZ is not in the reference"),
])
def test_read_regions_errors(ref, tmp_path, lines, message):
    with pytest.raises(InputError, match=message):
        read_regions(_text(tmp_path / "r.bed", lines), ref)
    with pytest.raises(InputError, match="no such file"):
        read_regions(str(tmp_path / "none.bed"), ref)


def test_parse_region_of_an_option_value():
    assert parse_region("chr20:31,000,000-31,000,200") == ("chr20", 31_000_000, 31_000_200)
    assert parse_region("HLA-A*01:01:1-5", "--plot-region") == ("HLA-A*01:01", 1, 5)  # last ':' splits


@pytest.mark.parametrize("text, message", [
    ("chr1", r"^--zoom 'chr1': expected chr:start-end \(0-based, end exclusive\)$"),
    ("chr1:5", "expected chr:start-end"),
    ("chr1:a-5", "expected chr:start-end"),
    ("chr1:-5-10", "expected chr:start-end"),
    (":1-5", "expected chr:start-end"),
    ("chr1:20-10", r"^--zoom 'chr1:20-10': empty or reversed region \(need start < end\)$"),
    ("chr1:20-20", "empty or reversed"),
])
def test_parse_region_errors_name_the_option_and_value(text, message):
    with pytest.raises(UsageError, match=message):
        parse_region(text, "--zoom")
