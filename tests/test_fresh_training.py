"""train-xvir on fresh reads simulated from references every epoch (genointerp.viral.training.fresh)."""

import json

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line, interrupt_at_call, metrics_without_timing, run_cli
from genointerp.errors import InputError
from genointerp.report import SILENT
from genointerp.viral.training.fresh import FreshReads, ReadSimulator

HPV, HUMAN, ECOLI = str(DATA / "hpv4.fa"), str(DATA / "chr20_slice.fa.gz"), str(DATA / "ecoli_slice.fa")
REFS = ["--viral", HPV, "--circular", "--negative", f"human={HUMAN}", "--negative", f"bacterial={ECOLI}"]
SMALL = ["-k", "4", "--length", "50", "--reads-per-epoch", "2000", "--d-model", "16", "--heads", "2", "--lr", "0.005",
         "--batch-size", "64", "--seed", "3"]


def simulator(**kw):
    spec = FreshReads([HPV], [("human", HUMAN), ("bacterial", ECOLI)], True, k=4, length=50, **kw)
    return ReadSimulator(spec, 3, SILENT)


def test_draws_are_seeded_by_purpose_and_epoch():
    sim = simulator()
    a, ta, la = sim.draw(1000, "train", 0)
    b, tb, lb = sim.draw(1000, "train", 0)
    c, _, _ = sim.draw(1000, "train", 1)
    v, _, _ = sim.draw(1000, "valid", 0)
    assert np.array_equal(a, b) and np.array_equal(ta, tb) and np.array_equal(la, lb)
    assert not np.array_equal(a, c) and not np.array_equal(a, v)
    assert a.shape == (len(la), 50) and ta.shape == (len(la), 47) and (a < 4).all()  # reads with N dropped
    # the default mix: half viral, the rest split between the two negative labels
    assert sim.labels() == ["viral", "human", "bacterial"]
    assert np.bincount(la, minlength=3).tolist() == [500, 250, 250]  # no N in these references' reads


def test_mix_weights_and_mutated_viral_reads():
    sim = simulator(mix={"viral": 2, "human": 1, "bacterial": 1}, viral_sub_rate=0.1)
    codes, _, label = sim.draw(1200, "train", 0)
    assert np.bincount(label).tolist() == [600, 300, 300]
    with pytest.raises(InputError, match="but not for bacterial"):
        simulator(mix={"viral": 1, "human": 1})
    with pytest.raises(InputError, match="no reference has"):
        simulator(mix={"viral": 1, "human": 1, "bacterial": 1, "yeast": 1})
    with pytest.raises(InputError, match="the viral label"):
        ReadSimulator(FreshReads([HPV], [("viral", HUMAN)]), 1, SILENT)


@pytest.fixture(scope="module")
def fresh_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("fresh") / "m"
    res = run_cli("train-xvir", "-o", str(out), *REFS, *SMALL, "--epochs", "3", "--target-fpr", "0.01")
    assert res.exit_code == 0, res.output
    assert "fresh reads per epoch" in res.stderr and "calling threshold" in res.stderr
    return out


def test_fresh_training_writes_a_model_with_index_and_calibrated_threshold(fresh_model):
    cfg = json.loads((fresh_model / "config.json").read_text())
    fresh = cfg["training"]["data"][0]["fresh_reads"]
    assert fresh["reads_per_epoch"] == 2000 and fresh["shares"] == {"viral": 0.5, "human": 0.25, "bacterial": 0.25}
    assert cfg["negative_labels"] == ["bacterial", "human"] and cfg["model"]["vocab_size"] == 4**4
    calling = cfg["calling"]
    assert calling["rule"] == "p_viral >= threshold (--evidence model)" and 0 <= calling["threshold"] <= 1
    assert calling["score_rule"] == {"min_bits": 9.0, "model_weight": 2.0, "model_clip": 3.0}  # with the index
    assert set(calling["fpr"]) == {"human", "bacterial"} and max(calling["fpr"].values()) <= 0.01
    assert cfg["kmer_index"]["n_contigs"] == 4
    assert json.loads((fresh_model / "test_metrics.json").read_text())["n"] == 1000  # a tenth of 2,000, at least 1,000


def test_fresh_training_is_reproducible_and_resumable(fresh_model, cli, tmp_path, monkeypatch):
    import genointerp.runtime as runtime

    args = ["train-xvir", *REFS, *SMALL, "--epochs", 3, "--target-fpr", 0.01, "--patience", 10]
    assert cli(*args, "-o", tmp_path / "again").exit_code == 0
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (fresh_model / "model.safetensors").read_bytes()
    restore = interrupt_at_call(monkeypatch, runtime, "predict_proba", 2)  # at the second validation
    res = cli(*args, "-o", tmp_path / "cut")
    assert res.exit_code != 0 and (tmp_path / "cut.checkpoint" / "last.pt").exists()
    restore()
    res = cli(*args, "-o", tmp_path / "cut", "--resume")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cut" / "model.safetensors").read_bytes() == (fresh_model / "model.safetensors").read_bytes()
    assert metrics_without_timing(tmp_path / "cut") == metrics_without_timing(fresh_model)


@pytest.mark.parametrize("extra, code, message", [
    ([], 2, "give kmerize datasets or read files, or --viral and --negative"),
    (["--viral", HPV], 2, "give kmerize datasets or read files, or --viral and --negative"),
    ([*REFS, "--mix", "viral=many"], 2, "is not a number"),
    ([*REFS, "--negative", HUMAN], 2, "expected LABEL=REF"),
    ([*REFS, "--negative", f"viral={HUMAN}"], 1, "the viral label"),
    ([*REFS, "--mix", "viral=1", "--mix", "human=1"], 1, "but not for bacterial"),
    ([*REFS, "--valid", HPV], 2, "draws its own validation"),
])
def test_bad_fresh_training_options_are_one_error(extra, code, message, cli, tmp_path):
    res = cli("train-xvir", "-o", tmp_path / "m", *extra, "--epochs", 1)
    assert res.exit_code == code and not (tmp_path / "m").exists() and not (tmp_path / "m.checkpoint").exists()
    if code == 1:
        assert_one_error_line(res, message)
    else:
        assert message in res.stderr


def test_fresh_only_options_need_fresh_training(cli, tmp_path):
    reads = tmp_path / "r.fq"
    reads.write_text("@viral|1\n" + "ACGT" * 20 + "\n+\n" + "I" * 80 + "\n")
    res = cli("train-xvir", reads, "-o", tmp_path / "m", "--mix", "viral=1")
    assert res.exit_code == 2 and "is for training on fresh reads" in res.stderr


def test_bad_reference_files_are_one_error_and_leave_nothing(cli, tmp_path):
    import gzip

    (tmp_path / "empty.fa").write_text("")
    (tmp_path / "cut.fa.gz").write_bytes(gzip.compress(open(HPV, "rb").read())[:3000])
    for viral, negative, message in ((tmp_path / "nope.fa", ECOLI, "no such file"),
                                     (HPV, tmp_path / "empty.fa", "file is empty"),
                                     (tmp_path / "cut.fa.gz", ECOLI, "truncated or corrupt gzip")):
        res = cli("train-xvir", "-o", tmp_path / "m", "--viral", viral, "--negative", f"human={negative}", *SMALL, "--epochs", 1)
        assert res.exit_code == 1 and not (tmp_path / "m").exists() and not (tmp_path / "m.checkpoint").exists()
        assert_one_error_line(res, message)


def test_a_model_with_a_cut_index_file_is_one_error(fresh_model, cli, tmp_path):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(fresh_model, damaged)
    (damaged / "kmer_refs.fa.gz").write_bytes((fresh_model / "kmer_refs.fa.gz").read_bytes()[:1000])
    res = cli("classify-reads", DATA / "tumor_small.fq.gz", "-m", damaged, "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1 and not (tmp_path / "c.tsv").exists()
    assert_one_error_line(res, "kmer_refs.fa.gz: truncated or corrupt gzip")
