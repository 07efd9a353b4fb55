"""train-tracks, predict-tracks and evaluate-tracks end to end on the synthetic genome in test-data/tracks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyBigWig
import pytest
from safetensors.torch import load_file

from conftest import DATA, assert_one_error_line

TRACKS = DATA / "tracks"
FASTA, TARGETS, REGIONS = TRACKS / "ref.fa.gz", TRACKS / "targets.tsv", TRACKS / "regions.bed"
# 1,024 bp windows -> 16 bins of 32 bp: chr1 (40 kb) and chr2 (20 kb) give ~110 windows
GEOMETRY = ["--seq-len", 1024, "--bin-size", 32, "--target-bins", 16]
SMALL = [*GEOMETRY, "--width", 16, "--batch-size", 8, "--lr", 3e-3, "--seed", 2, "--device", "cpu"]
TRACK_IDS = ["motif_a", "motif_b", "cellX.TF1.conservative", "cellX.TF2.conservative"]


def train_args(out, *extra):
    return ["train-tracks", "--fasta", FASTA, "--targets", TARGETS, *SMALL, "-o", out, *extra]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from typer.testing import CliRunner

    from genointerp.cli import app

    out = tmp_path_factory.mktemp("tracks") / "swin"
    res = CliRunner().invoke(app, [str(a) for a in train_args(out, "--epochs", 2)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def test_train_tracks_writes_a_model_directory(model):
    files = {p.name for p in model.iterdir()}
    assert {"model.safetensors", "config.json", "metrics.tsv", "test_pearson.tsv", "test_metrics.json"} <= files
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["task"] == "track prediction" and cfg["model"]["architecture"] == "swin1d"
    # groups made contiguous for the per-group heads: DNase first (first seen), then the three ChIP tracks
    assert [t["id"] for t in cfg["tracks"]] == TRACK_IDS and cfg["model"]["track_groups"] == [1, 3]
    assert cfg["window"] == {"seq_len": 1024, "bin_size": 32, "target_bins": 16, "stat": "mean", "clip": 32.0}
    assert cfg["reference"]["chroms"] == {"chr1": 40_000, "chr2": 20_000}
    assert cfg["training"]["schedule"] == "cosine" and cfg["training"]["lr"] == 3e-3
    # default split: target-span centres in the last 20 % of each chromosome are held out
    w = cfg["training"]["windows"]
    assert w["valid"] > 0 and w["test"] > 0 and w["train"] > 4 * (w["valid"] + w["test"]) * 0.8
    rows = (model / "metrics.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["epoch", "train_loss", "valid_loss", "valid_pearson", "seconds"] and len(rows) == 3
    table = [r.split("\t") for r in (model / "test_pearson.tsv").read_text().splitlines()]
    assert [r[0] for r in table[1:5]] == TRACK_IDS and table[-1][:2] == ["(mean)", "ALL"]
    assert not model.with_name("swin.checkpoint").exists()  # the target cache went with the checkpoint


def test_split_keeps_held_out_bases_out_of_training():
    from genointerp.io.reference import Reference
    from genointerp.io.regions import whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks_data import SplitRule, WindowGeometry, assign_splits, build_windows

    ref = Reference(str(FASTA))
    g = WindowGeometry(1024, 32, 16)
    w = build_windows(ref, read_targets(str(TARGETS)), whole_chromosomes(ref), g, "mean", None, 0.5,
                      lambda m: None, lambda m: None)
    split = assign_splits(w, SplitRule())
    for ci, chrom in enumerate(w.chroms):
        held = [w.coordinates(i)[1:] for i in np.flatnonzero((split > 0) & (w.chrom_index == ci))]
        for i in np.flatnonzero((split == 0) & (w.chrom_index == ci)):
            s0, s1 = w.starts[i], w.starts[i] + g.seq_len
            assert all(s1 <= a or s0 >= b for a, b in held)
    assert (split == -1).sum() > 0  # windows at the train/held-out border were dropped, not kept


def test_training_windows_see_the_signal_their_sequence_makes():
    """The bins with AP-1 signal are exactly those within 64 bp of a TGACTCA/TGAGTCA in the window."""
    from genointerp.io.reference import Reference
    from genointerp.io.regions import whole_chromosomes
    from genointerp.io.tracks import read_targets
    from genointerp.tracks_data import WindowGeometry, build_windows

    ref = Reference(str(FASTA))
    g = WindowGeometry(1024, 32, 16)
    w = build_windows(ref, read_targets(str(TARGETS)), whole_chromosomes(ref), g, "mean", None, 0.5,
                      lambda m: None, lambda m: None)
    x, y = w.batch(np.arange(len(w)), flips=np.arange(len(w)) % 2 == 1)  # odd windows reverse-complemented
    letters = np.array(list("ACGTN"))
    for i in range(0, len(w), 7):
        seq = "".join(letters[np.where(x[i].sum(1) > 0, x[i].argmax(1), 4)])
        expect = np.zeros(g.target_bins, dtype=bool)
        for motif in ("TGACTCA", "TGAGTCA"):
            p = seq.find(motif)
            while p != -1:
                lo, hi = p - 64 - g.crop, p + 7 + 64 - g.crop
                for b in range(g.target_bins):
                    expect[b] |= lo < (b + 1) * 32 and hi > b * 32
                p = seq.find(motif, p + 1)
        assert np.array_equal(y[i, :, 0] > 0, expect), i


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(tmp_path, cli, monkeypatch):
    import genointerp.train.tracks as tracks

    args = train_args(tmp_path / "full", "--epochs", 3, "--patience", 10, "--arch", "maxpool-cnn")
    assert cli(*args).exit_code == 0
    real, calls = tracks.evaluate, {"n": 0}

    def interrupt_at_second_validation(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(tracks, "evaluate", interrupt_at_second_validation)
    cut = train_args(tmp_path / "cut", "--epochs", 3, "--patience", 10, "--arch", "maxpool-cnn")
    assert cli(*cut).exit_code != 0 and not (tmp_path / "cut").exists()
    cache = list((tmp_path / "cut.checkpoint").glob("targets.*.npy"))
    assert len(cache) == 2  # binned targets of chr1 and chr2, reused on resume
    monkeypatch.setattr(tracks, "evaluate", real)
    res = cli(*cut, "--resume")
    assert res.exit_code == 0, res.output
    a, b = load_file(tmp_path / "full" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert (tmp_path / "full" / "metrics.tsv").read_text().splitlines()[1:] != []


def test_same_seed_gives_byte_identical_models(tmp_path, cli):
    for name in ("a", "b"):
        assert cli(*train_args(tmp_path / name, "--epochs", 1, "--arch", "attpool-cnn")).exit_code == 0
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_predict_tracks_writes_bigwigs_and_peaks(model, cli, tmp_path):
    out = tmp_path / "pred"
    res = cli("predict-tracks", "-m", model, "--fasta", FASTA, "--regions", REGIONS, "-o", out, "--bedgraph",
              "--device", "cpu")
    assert res.exit_code == 0, res.output
    assert {p.name for p in out.iterdir()} == ({f"{t}.bw" for t in TRACK_IDS} | {f"{t}.peaks.bed" for t in TRACK_IDS}
                                               | {f"{t}.bedGraph.gz" for t in TRACK_IDS} | {".genointerp"})
    bw = pyBigWig.open(str(out / "motif_a.bw"))
    assert list(bw.chroms().items()) == [("chr1", 40_000), ("chr2", 20_000)]  # .fai order and lengths
    # regions.bed: chr1 0-15000 and 16000-40000 (apart by 1 kb, not merged), chr2 300-10000 and 10000-20000
    # (touching: merged into one run 288-20000 on the 32 bp grid; the chromosome ends in a whole bin)
    runs = [(c, iv[0][0], iv[-1][1], len(iv)) for c in ("chr1", "chr2") for iv in _runs(bw.intervals(c))]
    assert runs == [("chr1", 0, 15008, 469), ("chr1", 16000, 40000, 750), ("chr2", 288, 20000, 616)]
    assert all(e - s == 32 for s, e, _ in bw.intervals("chr1")[:-1])
    peaks = [line.split("\t") for line in (out / "motif_a.peaks.bed").read_text().splitlines()]
    assert peaks and all(float(p[6]) >= float(p[7]) > 0 for p in peaks)  # max >= mean signal


def _runs(intervals):
    out, cur = [], []
    for iv in intervals:
        if cur and iv[0] != cur[-1][1]:
            out.append(cur)
            cur = []
        cur.append(iv)
    return out + [cur]


def test_predicted_bins_equal_the_model_on_the_window(model, cli, tmp_path):
    """One region exactly one target span long, on the grid: the bigWig holds the model's output for
    the window centred on it, bin for bin."""
    import torch

    from genointerp.checkpoint import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.seq.onehot import one_hot

    (tmp_path / "one.bed").write_text("chr1\t20480\t20992\n")  # 16 bins x 32 bp
    assert cli("predict-tracks", "-m", model, "--fasta", FASTA, "--regions", tmp_path / "one.bed",
               "-o", tmp_path / "p", "--device", "cpu").exit_code == 0
    net, _ = load_model_dir(model)
    codes = Reference(str(FASTA)).codes("chr1", 20480 - 256, 20480 - 256 + 1024)  # crop = (1024 - 512) / 2
    with torch.no_grad():
        expect = net(torch.from_numpy(one_hot(codes)[None])).numpy()[0]
    for t, tid in enumerate(TRACK_IDS):
        got = np.array(pyBigWig.open(str(tmp_path / "p" / f"{tid}.bw")).values("chr1", 20480, 20992)[::32])
        np.testing.assert_allclose(got, expect[:, t], rtol=1e-5)


def test_evaluate_tracks_compares_two_models(model, cli, tmp_path):
    other = tmp_path / "cnn"
    assert cli(*train_args(other, "--epochs", 1, "--arch", "maxpool-cnn")).exit_code == 0
    (tmp_path / "test.bed").write_text("chr2\t10000\t20000\n")
    res = cli("evaluate-tracks", "-m", other, "-m", model, "--fasta", FASTA, "--targets", TARGETS,
              "--regions", tmp_path / "test.bed", "-o", tmp_path / "eval.tsv", "--scatter", tmp_path / "fig2.png",
              "--plot-region", "chr2:12000-16000", "--plot", tmp_path / "fig3.png", "--device", "cpu")
    assert res.exit_code == 0, res.output
    rows = [r.split("\t") for r in (tmp_path / "eval.tsv").read_text().splitlines()]
    assert rows[0] == ["track", "group", "pearson", "pearson_2"] and [r[0] for r in rows[1:5]] == TRACK_IDS
    assert [r[:2] for r in rows[5:]] == [["(mean)", "DNase"], ["(mean)", "ChIP"], ["(mean)", "ALL"]]
    r = np.array([[float(v) for v in row[2:]] for row in rows[1:5]])
    assert np.all(np.abs(r) <= 1)
    for png in ("fig2.png", "fig3.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_equals_numpy_pearson_over_the_windows(model, cli, tmp_path):
    import torch

    from genointerp.checkpoint import load_model_dir
    from genointerp.io.reference import Reference
    from genointerp.io.regions import read_regions
    from genointerp.io.tracks import read_targets
    from genointerp.tracks_data import WindowGeometry, build_windows

    (tmp_path / "test.bed").write_text("chr1\t30000\t40000\n")
    assert cli("evaluate-tracks", "-m", model, "--fasta", FASTA, "--targets", TARGETS, "--regions",
               tmp_path / "test.bed", "-o", tmp_path / "e.tsv", "--device", "cpu").exit_code == 0
    got = [float(r.split("\t")[2]) for r in (tmp_path / "e.tsv").read_text().splitlines()[1:5]]
    ref = Reference(str(FASTA))
    w = build_windows(ref, read_targets(str(TARGETS)), read_regions(str(tmp_path / "test.bed"), ref),
                      WindowGeometry(1024, 32, 16), "mean", None, 0.5, lambda m: None, lambda m: None)
    x, y = w.batch(np.arange(len(w)))
    net, _ = load_model_dir(model)
    with torch.no_grad():
        p = net(torch.from_numpy(x)).numpy()
    expect = [np.corrcoef(p[..., t].ravel(), y[..., t].ravel())[0, 1] for t in range(4)]
    np.testing.assert_allclose(got, expect, atol=1e-5)  # model outputs differ in the last float32 bits by batch size


def test_train_on_a_basenji_tfrecord_set(tmp_path, cli):
    from test_tfrecord import basenji_record, write_tfr

    rng = np.random.default_rng(3)
    (tmp_path / "tfrecords").mkdir()
    for split, n in (("train", 6), ("valid", 2), ("test", 2)):
        recs = [basenji_record(np.eye(4, dtype=np.uint8)[rng.integers(0, 4, 512)],
                               rng.gamma(1.0, 2.0, (8, 3)).astype(np.float16)) for _ in range(n)]
        write_tfr(tmp_path / "tfrecords" / f"{split}-0.tfr", recs)
    (tmp_path / "statistics.json").write_text(json.dumps(dict(
        seq_length=512, seq_depth=4, target_length=8, num_targets=3, pool_width=32, crop_bp=128,
        train_seqs=6, valid_seqs=2, test_seqs=2)))
    (tmp_path / "targets.txt").write_text("index\tidentifier\tfile\tclip\tsum_stat\tdescription\n"
                                          "0\tENCFF1\tx\t32\tsum\tDNASE:liver\n1\tENCFF2\tx\t32\tsum\tCHIP:CTCF:liver\n"
                                          "2\tENCFF3\tx\t32\tsum\tDNASE:heart\n")
    res = cli("train-tracks", "--basenji", tmp_path, "--width", 16, "--epochs", 1, "--batch-size", 2,
              "--device", "cpu", "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert [t["id"] for t in cfg["tracks"]] == ["ENCFF1", "ENCFF3", "ENCFF2"]  # DNASE group first, contiguous
    assert cfg["window"]["seq_len"] == 512 and cfg["window"]["target_bins"] == 8
    # evaluating on the set's test split must pair each model track with its own column, not the
    # column at the same index: the same Pearson r per track as train-tracks' own test pass
    res = cli("evaluate-tracks", "-m", tmp_path / "m", "--basenji", tmp_path, "--split", "test",
              "-o", tmp_path / "e.tsv", "--device", "cpu")
    assert res.exit_code == 0, res.output
    got, want = ([r.split("\t") for r in (tmp_path / name).read_text().splitlines()[1:4]]
                 for name in ("e.tsv", "m/test_pearson.tsv"))
    assert [r[0] for r in got] == [r[0] for r in want] == ["ENCFF1", "ENCFF3", "ENCFF2"]
    np.testing.assert_allclose([float(r[2]) for r in got], [float(r[2]) for r in want], atol=1e-5)


def test_bigwig_from_another_assembly_is_refused(tmp_path, cli):
    (tmp_path / "t.tsv").write_text(f"id\tpath\tgroup\nx\t{TRACKS / 'other_assembly.bw'}\tDNase\n")
    res = cli("train-tracks", "--fasta", FASTA, "--targets", tmp_path / "t.tsv", *SMALL, "--epochs", 1,
              "-o", tmp_path / "m")
    assert_one_error_line(res, "another assembly")
    assert res.exit_code == 1 and not (tmp_path / "m").exists()


def test_targets_with_a_missing_file_is_refused(tmp_path, cli):
    (tmp_path / "t.tsv").write_text("id\tpath\tgroup\nx\tnowhere.bw\tDNase\n")
    res = cli("train-tracks", "--fasta", FASTA, "--targets", tmp_path / "t.tsv", *SMALL, "-o", tmp_path / "m")
    assert_one_error_line(res, "nowhere.bw")
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.checkpoint" / "last.pt").exists()


@pytest.mark.parametrize("bed, message", [
    ("chr1\t39000\t41000\n", "off the end of chr1"),
    ("", "no regions"),
    ("chr9\t0\t100\n", "chr9"),
])
def test_bad_regions_are_refused(model, cli, tmp_path, bed, message):
    (tmp_path / "r.bed").write_text(bed)
    res = cli("predict-tracks", "-m", model, "--fasta", FASTA, "--regions", tmp_path / "r.bed", "-o", tmp_path / "p")
    assert_one_error_line(res, message)
    assert res.exit_code == 1 and not (tmp_path / "p").exists()


def test_predict_refuses_an_xvir_model_and_an_existing_output(model, cli, tmp_path):
    from genointerp.resources import builtin_model_dir

    res = cli("predict-tracks", "-m", builtin_model_dir(), "--fasta", FASTA, "--regions", REGIONS, "-o", tmp_path / "p")
    assert_one_error_line(res, "not a track model")
    (tmp_path / "p").mkdir()
    res = cli("predict-tracks", "-m", model, "--fasta", FASTA, "--regions", REGIONS, "-o", tmp_path / "p")
    assert_one_error_line(res, "output exists")


def test_evaluate_refuses_targets_without_the_models_tracks(model, cli, tmp_path):
    (tmp_path / "t.tsv").write_text(f"id\tpath\tgroup\nmotif_a\t{TRACKS / 'motif_a.bw'}\tDNase\n")
    res = cli("evaluate-tracks", "-m", model, "--fasta", FASTA, "--targets", tmp_path / "t.tsv", "--chroms", "chr2",
              "-o", tmp_path / "e.tsv")
    assert_one_error_line(res, "motif_b")
    assert not (tmp_path / "e.tsv").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo")
def test_ddp_two_processes_match_one_process_with_double_batch(tmp_path):
    common = ["-q", *train_args(tmp_path / "x", "--epochs", 2, "--arch", "maxpool-cnn", "--no-rc-augment",
                                "--shift", 0, "--dropout", 0, "--grad-clip", 0)]
    common = [str(a) for a in common]
    i = common.index("--batch-size")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def args(batch, out):
        a = list(common)
        a[i + 1] = str(batch)
        a[a.index("-o") + 1] = str(out)
        return a

    one = subprocess.run([sys.executable, "-m", "genointerp", *args(16, tmp_path / "one")], env=env,
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29617",
                          "-m", "genointerp", *args(8, tmp_path / "two")], env=env, capture_output=True, text=True)
    assert two.returncode == 0, two.stderr
    a, b = load_file(tmp_path / "one" / "model.safetensors"), load_file(tmp_path / "two" / "model.safetensors")
    # the same windows per step with gradients averaged over the same set: only the order of
    # floating-point sums differs (see the XVir DDP test); no gradient clipping, whose rescaling of
    # every step would add its own rounding on top of what this test is about
    for k in a:
        np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=1e-3, atol=1e-3)


def test_held_out_regions_are_tiled_even_outside_the_training_regions(tmp_path, cli):
    rows = [line.split("\t") for line in REGIONS.read_text().splitlines()]
    for name in ("train", "valid", "test"):
        (tmp_path / f"{name}.bed").write_text("".join("\t".join(r[:3]) + "\n" for r in rows if r[3] == name))
    res = cli(*train_args(tmp_path / "m", "--epochs", 1, "--arch", "maxpool-cnn", "--regions", tmp_path / "train.bed",
                          "--valid-regions", tmp_path / "valid.bed", "--test-regions", tmp_path / "test.bed"))
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    # on the 32 bp grid chr2 320-10000 holds (10000 - 320) // 512 = 18 whole 512 bp target spans and
    # 10016-19968 (the last whole bin) holds (19968 - 10016) // 512 = 19
    w = cfg["training"]["windows"]
    assert w["valid"] == 18 and w["test"] == 19 and w["train"] > 60
    assert cfg["training"]["data"]["split"]["test_regions"] == ["chr2:10000-20000"]


def test_soft_clip_compresses_only_the_excess():
    from genointerp.tracks_data import soft_clip

    y = np.array([10.0, 32.0, 36.0, 132.0], dtype=np.float32)
    np.testing.assert_array_equal(soft_clip(y, 32.0), [10.0, 32.0, 34.0, 42.0])  # 32 + sqrt(4), 32 + sqrt(100)
    assert soft_clip(y, None) is y


def test_builtin_tracks_model_predicts_out_of_the_box(cli, tmp_path):
    """No -m: the built-in chr20 TF ChIP-seq model, on a slice of real GRCh37 chr20."""
    from genointerp.resources import BUILTIN_TRACKS, builtin_model_dir

    cfg = json.loads((builtin_model_dir(BUILTIN_TRACKS) / "config.json").read_text())
    ids = [t["id"] for t in cfg["tracks"]]
    assert len(ids) == 87 and "A549.CEBPB.conservative" in ids and cfg["model"]["architecture"] == "swin1d"
    assert cfg["training"]["valid_pearson"] > 0.05  # well above a constant prediction (0)
    (tmp_path / "r.bed").write_text("20\t40000\t44096\n")  # 32 bins of 128 bp inside test-data's slice
    res = cli("predict-tracks", "--fasta", DATA / "chr20_slice.fa.gz", "--regions", tmp_path / "r.bed",
              "-o", tmp_path / "p", "--device", "cpu")
    assert res.exit_code == 0, res.output
    bw = pyBigWig.open(str(tmp_path / "p" / "A549.CEBPB.conservative.bw"))
    values = bw.values("20", 40000, 44096)
    assert list(bw.chroms().items()) == [("20", 100_000)] and all(v >= 0 for v in values)
    assert len({p.name for p in (tmp_path / "p").glob("*.bw")}) == 87
