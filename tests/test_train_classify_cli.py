"""train-xvir and classify-reads through the CLI on a small simulated HPV/human set."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from safetensors.torch import load_file

from conftest import assert_one_error_line, interrupt_at_call, metrics_without_timing, read_fastq, run_cli, torchrun, write_bam

SMALL = ["--d-model", "16", "--heads", "2", "--lr", "0.005", "--batch-size", "64", "--seed", "3"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from conftest import DATA

    d = tmp_path_factory.mktemp("xvir")
    assert run_cli("-q", "simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-s", f"human={DATA / 'chr20_slice.fa.gz'}",
                   "--circular", "viral", "-n", "2000", "--balance", "--seed", "5", "-o", str(d / "r.fq")).exit_code == 0
    assert run_cli("-q", "kmerize", str(d / "r.fq"), "--label-field", "0", "-k", "4", "--length", "50",
                   "-o", str(d / "ds")).exit_code == 0
    return d


@pytest.fixture(scope="module")
def model(dataset):
    res = run_cli("train-xvir", str(dataset / "ds"), "-o", str(dataset / "m"), "--epochs", "6", *SMALL)
    assert res.exit_code == 0, res.output
    return dataset / "m"


def test_train_writes_a_complete_model_directory(model):
    assert sorted(p.name for p in model.iterdir()) == [".genointerp", "config.json", "metrics.tsv", "model.safetensors", "roc.png",
                                                       "test_metrics.json", "xvir_folded.safetensors"]
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["model"]["architecture"] == "xvir" and cfg["model"]["k"] == 4 and cfg["model"]["read_length"] == 50
    assert cfg["positive_label"] == "viral" and cfg["negative_labels"] == ["human"]
    assert cfg["training"]["data"][0]["n_reads"] == 2000
    rows = (model / "metrics.tsv").read_text().splitlines()
    assert rows[0].startswith("epoch\ttrain_loss\tvalid_loss")
    n = cfg["training"]["epochs_run"]  # 6, or fewer if early stopping ended the run
    assert [r.split("\t")[0] for r in rows[1:]] == [str(e) for e in range(1, n + 1)] and 1 <= cfg["training"]["best_epoch"] <= n
    test = json.loads((model / "test_metrics.json").read_text())
    assert test["n"] == 200 and test["auroc"] > 0.6  # chance is 0.5; 2,000 reads and 6 epochs of a tiny model
    assert not (model.parent / "m.checkpoint").exists()
    assert (model / "model.safetensors").stat().st_mode & 0o044 == 0o044  # readable by group and others


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(dataset, cli, monkeypatch):
    import genointerp.runtime as runtime

    args = ["train-xvir", dataset / "ds", "--epochs", 4, "--patience", 10, *SMALL]
    assert cli(*args, "-o", dataset / "full").exit_code == 0
    restore = interrupt_at_call(monkeypatch, runtime, "predict_proba", 3)  # at the third validation
    res = cli(*args, "-o", dataset / "cut")
    assert res.exit_code != 0 and not (dataset / "cut").exists()
    assert (dataset / "cut.checkpoint" / "last.pt").exists()
    restore()
    res = cli(*args, "-o", dataset / "cut")
    assert res.exit_code == 1 and "interrupted run" in res.stderr  # no silent restart
    res = cli(*args, "-o", dataset / "cut", "--resume")
    assert res.exit_code == 0, res.output
    a, b = load_file(dataset / "full" / "model.safetensors"), load_file(dataset / "cut" / "model.safetensors")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    full = metrics_without_timing(dataset / "full")
    assert len(full) == 1 + 4 and metrics_without_timing(dataset / "cut") == full  # each epoch once, same metrics


def test_classify_reads_outputs(model, dataset, cli, tmp_path):
    fq = tmp_path / "mix.fq"
    reads = read_fastq(dataset / "r.fq")[:40]
    text = "".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in reads)
    text += "@short\nACGTACGT\n+\nIIIIIIII\n"  # shorter than the model's 50 bp
    text += "@allN\n" + "N" * 60 + "\n+\n" + "I" * 60 + "\n"
    text += "@long\n" + reads[0][1] * 2 + "\n+\n" + reads[0][2] * 2 + "\n"
    fq.write_text(text)
    res = cli("classify-reads", fq, "-m", model, "-o", tmp_path / "c.tsv", "--summary", tmp_path / "s.json",
              "--viral-out", tmp_path / "v.fq", "--threshold", 0.5)
    assert res.exit_code == 0, res.output
    rows = [r.split("\t") for r in (tmp_path / "c.tsv").read_text().splitlines()]
    assert rows[0] == ["read_id", "length", "p_viral", "call", "status", "kmer_hits", "evidence", "bits", "reference"]
    assert len(rows) == 44
    by_id = {r[0]: r for r in rows[1:]}
    # this model has no viral index: the model alone calls, and there are no hits or bits
    # nor references to type reads on: reference NA
    assert by_id["short"][2:] == ["NA", "NA", "too_short", "NA", "none", "NA", "NA"]
    assert by_id["allN"][2:] == ["NA", "NA", "ambiguous", "NA", "none", "NA", "NA"]
    assert all(r[6] == ("model" if r[3] == "viral" else "none") for r in rows[1:])
    assert by_id["long"][1] == str(2 * len(reads[0][1])) and by_id["long"][4] == "scored"
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["reads_total"] == 43
    assert summary["status_counts"] == {"scored": 41, "model_abstained": 0, "too_short": 1, "ambiguous": 1}
    assert summary["evidence"] == "model" and summary["kmer_index"] is None and summary["rule"] is None
    assert summary["reads_model_scored"] == 41
    called = [r[0] for r in rows[1:] if r[3] == "viral"]
    assert summary["reads_called_viral"] == len(called)
    assert [n for n, _, _ in read_fastq(tmp_path / "v.fq")] == called
    assert "called viral" in res.stderr


def test_classify_reads_from_bam_unmapped_only(model, dataset, tmp_path, cli):
    reads = read_fastq(dataset / "r.fq")[:6]
    write_bam(tmp_path / "r.bam", reads, lambda i: i < 2)  # the first two mapped
    res = cli("-q", "classify-reads", tmp_path / "r.bam", "-m", model, "--unmapped-only")
    assert res.exit_code == 0, res.output
    assert [r.split("\t")[0] for r in res.stdout.splitlines()[1:]] == [n for n, _, _ in reads[2:]]


def _aligned(path, records, reference_fa=None, flags=None):
    """BAM (or CRAM against reference_fa, each record aligned full-length at 150 * i of contig 'ref')
    of FASTQ records; flags[i] is record i's SAM flag (default: unmapped, or mapped for CRAM)."""
    import pysam

    length = 150 * len(records)
    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": "ref", "LN": length}]}
    mode, extra = ("wc", {"reference_filename": str(reference_fa)}) if reference_fa else ("wb", {})
    with pysam.AlignmentFile(str(path), mode, header=header, **extra) as out:
        for i, (name, seq, qual) in enumerate(records):
            a = pysam.AlignedSegment()
            a.query_name, a.query_sequence = name, seq
            a.query_qualities = pysam.qualitystring_to_array(qual)
            a.flag = flags[i] if flags else 0 if reference_fa else 4
            if not a.is_unmapped:
                a.reference_id, a.reference_start, a.cigarstring = 0, 150 * i, f"{len(seq)}M"
            out.write(a)
    return path


def _p_viral(text):
    return {r.split("\t")[0]: r.split("\t")[2] for r in text.splitlines()[1:]}


def test_classify_reads_from_cram_with_reference_scores_as_fastq(model, dataset, tmp_path, cli):
    import pysam

    reads = read_fastq(dataset / "r.fq")[:8]
    # the reference is the reads laid end to end with every 10th base changed, so the CRAM stores
    # differences that only --reference can decode back into the reads
    ref = "".join(s[:150] for _, s, _ in reads)
    ref = "".join("A" if i % 10 == 0 and c != "A" else "C" if i % 10 == 0 else c for i, c in enumerate(ref))
    (tmp_path / "ref.fa").write_text(">ref\n" + ref + "\n")
    pysam.faidx(str(tmp_path / "ref.fa"))
    cram = _aligned(tmp_path / "r.cram", reads, reference_fa=tmp_path / "ref.fa")
    fq = tmp_path / "r.fq"
    fq.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in reads))
    res = cli("-q", "classify-reads", cram, "--reference", tmp_path / "ref.fa", "-m", model)
    assert res.exit_code == 0, res.output
    want = cli("-q", "classify-reads", fq, "-m", model)
    assert _p_viral(res.stdout) == _p_viral(want.stdout) and len(_p_viral(res.stdout)) == 8
    from conftest import Pipes

    pipes = Pipes()  # CRAM from a pipe: told apart by its magic bytes, not its name
    try:
        piped = cli("-q", "classify-reads", pipes(cram.read_bytes()), "--reference", tmp_path / "ref.fa", "-m", model)
    finally:
        pipes.close()
    assert piped.exit_code == 0, piped.output
    assert piped.stdout == res.stdout


def test_paired_bam_mates_are_named_with_their_mate_number(model, dataset, tmp_path, cli):
    reads = read_fastq(dataset / "r.fq")[:4]
    # two pairs, unmapped (0x4 | 0x8 | 0x1), read 1 (0x40) then read 2 (0x80), mates sharing a name
    pairs = [(f"pair{i // 2}", s, q) for i, (_, s, q) in enumerate(reads)]
    bam = _aligned(tmp_path / "p.bam", pairs, flags=[0x4D, 0x8D, 0x4D, 0x8D])
    res = cli("-q", "classify-reads", bam, "-m", model)
    assert res.exit_code == 0, res.output
    fq = tmp_path / "p.fq"
    fq.write_text("".join(f"@{n}/{1 + i % 2}\n{s}\n+\n{q}\n" for i, (n, s, q) in enumerate(pairs)))
    want = _p_viral(cli("-q", "classify-reads", fq, "-m", model).stdout)
    assert list(_p_viral(res.stdout)) == ["pair0/1", "pair0/2", "pair1/1", "pair1/2"]
    assert _p_viral(res.stdout) == want

def test_wrong_and_damaged_models_are_refused(model, dataset, tmp_path, cli):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(model, broken)
    (broken / "model.safetensors").write_bytes(b"\x00" * 100)
    res = cli("classify-reads", dataset / "r.fq", "-m", broken, "-o", tmp_path / "o.tsv")
    assert res.exit_code == 1 and not (tmp_path / "o.tsv").exists()
    assert_one_error_line(res, "damaged or not a safetensors file")
    mismatched, cfg = _mismatched(model, tmp_path)
    res = cli("classify-reads", dataset / "r.fq", "-m", mismatched, "-o", tmp_path / "o.tsv")
    assert_one_error_line(res, "weights do not match config.json")
    cfg["model"]["architecture"] = "swin1d"
    (mismatched / "config.json").write_text(json.dumps(cfg))
    res = cli("classify-reads", dataset / "r.fq", "-m", mismatched)
    assert_one_error_line(res, "needs 'xvir'")


def _mismatched(model, tmp_path):
    """A copy of `model` whose config.json says d_model 32 (its weights have 16): (folder, config)."""
    import shutil

    folder = tmp_path / "mismatched"
    shutil.copytree(model, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model"]["d_model"] = 32
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder, cfg


def test_truncated_input_fails_cleanly(model, tmp_path, cli):
    fq = tmp_path / "t.fq"
    fq.write_text("@r1\n" + "A" * 60 + "\n+\n")
    res = cli("classify-reads", fq, "-m", model, "-o", tmp_path / "o.tsv")
    assert res.exit_code == 1 and not (tmp_path / "o.tsv").exists()
    junk = tmp_path / "junk.fq"
    junk.write_bytes(bytes(range(256)) * 4)
    res = cli("classify-reads", junk, "-m", model, "-o", tmp_path / "o.tsv")
    assert_one_error_line(res, "not FASTA, FASTQ or GenBank")


def test_train_refuses_one_class_data(tmp_path, cli, dataset):
    fq = tmp_path / "v.fq"
    fq.write_text("".join(f"@viral|{i}\n{s}\n+\n{q}\n" for i, (_, s, q) in enumerate(read_fastq(dataset / "r.fq")[:50])))
    assert cli("-q", "kmerize", fq, "--label-field", 0, "-k", 4, "--length", 50, "-o", tmp_path / "ds").exit_code == 0
    res = cli("train-xvir", tmp_path / "ds", "-o", tmp_path / "m", "--epochs", 1)
    assert res.exit_code == 1 and "needs reads of both classes" in res.stderr and not (tmp_path / "m").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo")
def test_ddp_two_processes_reproduce_one_process_with_double_batch(dataset, tmp_path):
    common = [str(dataset / "ds"), "--epochs", "2", "--d-model", "16", "--heads", "2", "--lr", "0.005",
              "--dropout", "0", "--seed", "3", "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = subprocess.run([sys.executable, "-m", "genointerp", "-q", "train-xvir", *common, "--batch-size", "64",
                          "-o", str(tmp_path / "one")], env=env, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([*torchrun(2), "-m", "genointerp", "-q", "train-xvir", *common, "--batch-size", "32",
                          "-o", str(tmp_path / "two")], env=env, capture_output=True, text=True)
    assert two.returncode == 0, two.stderr
    # rank 0 wrote the model directory once: the same files, model and settings but the batch size
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    assert not (tmp_path / "two.checkpoint").exists()
    cfg = [json.loads((tmp_path / run / "config.json").read_text()) for run in ("one", "two")]
    assert [c["training"].pop("batch_size") for c in cfg] == [64, 32]
    for c in cfg:
        del c["test_metrics"]  # its loss is compared below
    assert cfg[0] == cfg[1]  # epochs run, best epoch, data, model
    # The same reads in every step and the gradient of their mean loss (test_ddp.py checks a step
    # to within float32 rounding); only the order of float32 sums differs, and 50 Adam steps amplify
    # that in the weights: Adam divides each gradient by its own running RMS, so a weight whose
    # gradient is near zero can move by up to ~lr a step on rounding noise (weights then differ by
    # up to 1.6e-3 on an AVX-512 Xeon, issue 14). Compared instead: the validation loss of every
    # epoch and the test loss, each a mean over 200 reads, and each epoch's training loss (summed
    # over both ranks' reads). Measured |difference| <= 1.8e-5 of the loss with AVX-512, AVX2 and
    # default ATen kernels and MKL's SSE4.2 path, so rtol 1e-3 leaves 50x; ranks that do not
    # all-reduce their gradients, or train on the same half of the reads, miss each loss by 9.8 %
    # or more, and a training loss of rank 0's half alone by 1 % (0.7181 against 0.7260).
    losses = []
    for run in ("one", "two"):
        rows = [line.split("\t") for line in (tmp_path / run / "metrics.tsv").read_text().splitlines()]
        columns = [rows[0].index("valid_loss"), rows[0].index("train_loss")]
        test = json.loads((tmp_path / run / "test_metrics.json").read_text())["loss"]
        losses.append([float(r[c]) for r in rows[1:] for c in columns] + [test])
    assert len(losses[0]) == 5
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-3, atol=0)


def test_train_directly_from_fastq_labels_from_read_names(dataset, cli, tmp_path):
    res = cli("train-xvir", dataset / "r.fq", "-k", 4, "--length", 50, "-o", tmp_path / "m", "--epochs", 1, *SMALL)
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["model"]["k"] == 4 and cfg["training"]["data"][0]["n_reads"] == 2000
    assert not (tmp_path / "m.checkpoint").exists()


def test_builtin_model_is_installed_and_is_the_papers_architecture():
    from genointerp.model_folder import load_model_dir
    from genointerp.models.xvir import XVirConfig, count_parameters
    from genointerp.resources import builtin_model_dir

    model, cfg = load_model_dir(builtin_model_dir(), expect="xvir")
    assert model.config == XVirConfig() and count_parameters(model) == 741_377
    assert cfg["positive_label"] == "viral" and cfg["negative_labels"] == ["bacterial", "fungal", "human", "protist"]
    calling = cfg["calling"]  # train-xvir --target-fpr: the rate of every negative kind within the target
    assert 0.5 < calling["threshold"] < 1 and set(calling["fpr"]) == {"bacterial", "fungal", "human", "protist"}
    assert max(calling["fpr"].values()) <= calling["target_fpr"] and cfg["kmer_index"]["n_kmers"] > 2_000_000


def test_fine_tuning_from_a_model_and_refusing_another_architecture(model, dataset, cli, tmp_path):
    res = cli("train-xvir", dataset / "ds", "-o", tmp_path / "t", "--init-from", model, "--epochs", 1, *SMALL)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "t" / "config.json").read_text())["training"]["data"][0] == {"initialised_from": str(model)}
    res = cli("train-xvir", dataset / "ds", "-o", tmp_path / "u", "--init-from", model, "--epochs", 1, "--d-model", "32")
    assert res.exit_code == 1 and "does not match" in res.stderr and not (tmp_path / "u").exists()


def test_default_threshold_comes_from_the_models_calibration(model, dataset, cli, tmp_path):
    import shutil

    calibrated = tmp_path / "calibrated"
    shutil.copytree(model, calibrated)
    cfg = json.loads((calibrated / "config.json").read_text())
    assert cli("classify-reads", dataset / "r.fq", "-m", model, "-o", tmp_path / "plain.tsv").exit_code == 0
    p = np.array([float(r.split("\t")[2]) for r in (tmp_path / "plain.tsv").read_text().splitlines()[1:]])
    t = float(np.round(np.median(p), 6))  # a threshold that splits these reads in half
    cfg["calling"] = {"threshold": t}
    (calibrated / "config.json").write_text(json.dumps(cfg))
    res = cli("classify-reads", dataset / "r.fq", "-m", calibrated, "-o", tmp_path / "c.tsv", "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    calls = [r.split("\t")[3] for r in (tmp_path / "c.tsv").read_text().splitlines()[1:]]
    assert calls == ["viral" if q >= t else "not_viral" for q in p]
    assert json.loads((tmp_path / "s.json").read_text())["threshold"] == t
    res = cli("classify-reads", dataset / "r.fq", "-m", calibrated, "-o", tmp_path / "d.tsv", "--threshold", 0.5)
    assert [r.split("\t")[3] for r in (tmp_path / "d.tsv").read_text().splitlines()[1:]] == \
        ["viral" if q >= 0.5 else "not_viral" for q in p]


@pytest.mark.parametrize("calling", [{"threshold": "high"}, {"threshold": True}, {"threshold": 1.5}, "0.9"])
@pytest.mark.parametrize("which", ["user", "built-in"])
def test_a_damaged_calling_threshold_is_one_error_line(calling, which, cli, tmp_path, monkeypatch):
    import shutil

    import genointerp.viral.classify.request
    from genointerp.resources import builtin_model_dir

    damaged = tmp_path / "model"
    shutil.copytree(builtin_model_dir(), damaged)
    cfg = json.loads((damaged / "config.json").read_text())
    cfg["calling"] = calling
    (damaged / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "r.fq").write_text("@r\n" + "ACGT" * 40 + "\n+\n" + "I" * 160 + "\n")
    args = ["-m", damaged] if which == "user" else []
    if which == "built-in":
        monkeypatch.setattr(genointerp.viral.classify.request, "builtin_model_dir", lambda *a: damaged)
    res = cli("classify-reads", tmp_path / "r.fq", *args, "-o", tmp_path / "o.tsv")
    assert res.exit_code == 1 and not (tmp_path / "o.tsv").exists()
    assert_one_error_line(res, f"{damaged}/config.json: ")
    assert_one_error_line(res, "damaged model configuration")


def test_bf16_on_cpu_is_close_to_fp32_and_fp16_needs_cuda(model, dataset, cli, tmp_path):
    for precision in ("32", "bf16"):
        assert cli("classify-reads", dataset / "r.fq", "-m", model, "-o", tmp_path / f"{precision}.tsv",
                   "--precision", precision, "--device", "cpu").exit_code == 0
    p32, pbf = ([float(r.split("\t")[2]) for r in (tmp_path / f"{x}.tsv").read_text().splitlines()[1:]] for x in ("32", "bf16"))
    assert np.abs(np.subtract(p32, pbf)).max() < 0.02  # bf16 keeps 8 bits of mantissa
    res = cli("classify-reads", dataset / "r.fq", "-m", model, "-o", tmp_path / "16.tsv", "--precision", "16", "--device", "cpu")
    assert res.exit_code == 2 and "CUDA" in res.stderr and not (tmp_path / "16.tsv").exists()


@pytest.mark.parametrize("native", [True, False])
def test_bf16_warns_only_on_cpus_that_emulate_it(native, model, dataset, cli, tmp_path, monkeypatch):
    import genointerp.runtime as runtime

    monkeypatch.setattr(runtime, "cpu_has_bf16", lambda: native)
    res = cli("classify-reads", dataset / "r.fq", "-m", model, "-o", tmp_path / "bf16.tsv", "--precision", "bf16",
              "--device", "cpu")
    assert res.exit_code == 0
    assert ("no native bf16" in res.stderr) is (not native), res.stderr


@pytest.fixture(scope="module")
def split_sets(dataset):
    """The 2,000 reads as three datasets: train 1,650, valid 200, test 150 (not the 8:1:1 split)."""

    reads = read_fastq(dataset / "r.fq")
    for name, part in (("train", reads[:1650]), ("valid", reads[1650:1850]), ("test", reads[1850:])):
        (dataset / f"{name}.fq").write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in part))
        assert run_cli("-q", "kmerize", str(dataset / f"{name}.fq"), "--label-field", "0", "-k", "4",
                       "--length", "50", "-o", str(dataset / f"{name}.ds")).exit_code == 0
    return dataset


@pytest.mark.parametrize("positive", ["viral", "human"])
def test_valid_test_sets_and_positive_label_decide_the_test_metrics(split_sets, cli, tmp_path, positive):
    import torch
    from sklearn.metrics import roc_auc_score

    from genointerp.model_folder import load_model_dir
    from genointerp.io.kmer_dataset import open_kmer_dataset

    d = split_sets
    res = cli("train-xvir", d / "train.ds", "--valid", d / "valid.ds", "--test", d / "test.ds", "--positive", positive,
              "-o", tmp_path / "m", "--epochs", 1, *SMALL)
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    other = {"viral": "human", "human": "viral"}[positive]
    assert cfg["positive_label"] == positive and cfg["negative_labels"] == [other]
    assert cfg["training"]["data"][0]["n_reads"] == 1650
    test = json.loads((tmp_path / "m" / "test_metrics.json").read_text())
    # the 8:1:1 split would test on 165 reads of train.ds; --test's own reads are 150
    assert test["n"] == 150
    # recomputed from the model on test.ds, with `positive` as the class it scores: the AUROC with
    # the other label as positive would be 1 - this
    ds = open_kmer_dataset(d / "test.ds")
    net, _ = load_model_dir(tmp_path / "m", expect="xvir")
    with torch.no_grad():
        p = torch.sigmoid(net(torch.from_numpy(np.asarray(ds.tokens, dtype=np.int64)))).numpy()
    y = np.array([ds.header["labels"][i] == positive for i in ds.labels])
    # the test pass scores the 150 reads in one pass too (predict_proba's passes of 1024), so p has
    # the same bits on any CPU: in another batch shape an ulp could swap two near-tied reads and
    # move the AUROC by a whole step, 1 / (n_pos n_neg) ~ 1.8e-4; left is float64 rounding
    assert test["auroc"] == pytest.approx(roc_auc_score(y, p), abs=1e-6)
    assert abs(test["auroc"] - 0.5) > 0.01  # far enough from 0.5 that 1 - auroc cannot pass


def test_train_from_reads_takes_labels_from_the_truth_table(dataset, cli, tmp_path):
    # labels renamed in the table only: 'host' can only come from --truth, never from the read names
    names = [n for n, _, _ in read_fastq(dataset / "r.fq")]
    (tmp_path / "t.tsv").write_text("read_id\tlabel\n" + "".join(
        f"{n}\t{'viral' if n.startswith('viral|') else 'host'}\n" for n in names))
    res = cli("train-xvir", dataset / "r.fq", "--truth", tmp_path / "t.tsv", "-k", 4, "--length", 50,
              "-o", tmp_path / "m", "--epochs", 1, *SMALL)
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["positive_label"] == "viral" and cfg["negative_labels"] == ["host"]
    assert cfg["training"]["data"][0]["n_reads"] == 2000


def test_rc_augment_changes_the_weights_and_stays_deterministic(dataset, cli, tmp_path):
    args = ["train-xvir", dataset / "ds", "--epochs", 1, *SMALL]
    for name, extra in (("a", ["--rc-augment"]), ("b", ["--rc-augment"]), ("c", [])):
        assert cli(*args, *extra, "-o", tmp_path / name).exit_code == 0
    a, b, c = (load_file(tmp_path / name / "model.safetensors") for name in "abc")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)  # same seed, same flips
    # half the training reads reverse-complemented: other tokens, other gradients, other weights
    assert not all(np.array_equal(a[k].numpy(), c[k].numpy()) for k in a)
    assert json.loads((tmp_path / "a" / "config.json").read_text())["training"]["rc_augment"] is True


# --- k-mer evidence beside the model ------------------------------------------------------------

@pytest.fixture(scope="module")
def indexed_model(dataset):
    from conftest import DATA

    out = dataset / "indexed"
    res = run_cli("train-xvir", str(dataset / "ds"), "-o", str(out), "--epochs", "1", *SMALL,
                  "--viral", str(DATA / "hpv4.fa"), "--circular", "--negative", f"human={DATA / 'chr20_slice.fa.gz'}")
    assert res.exit_code == 0, res.output
    return out


def _rows(path):
    return [line.split("\t") for line in path.read_text().splitlines()[1:]]


def test_train_xvir_with_viral_references_ships_a_kmer_index(indexed_model):
    cfg = json.loads((indexed_model / "config.json").read_text())
    entry = cfg["kmer_index"]
    assert {k: entry[k] for k in ("k", "seed", "min_hits", "min_entropy", "circular", "n_contigs")} == \
        {"k": 26, "seed": "11011011011011011011011011", "min_hits": 3, "min_entropy": 1.5, "circular": True, "n_contigs": 4}
    assert (indexed_model / "kmer_refs.fa.gz").exists() and (indexed_model / "kmer_excluded.txt.gz").exists()
    protein = cfg["protein_index"]
    assert {k: protein[k] for k in ("seed", "k", "min_orf", "min_distinct", "circular")} == \
        {"seed": "110110111", "k": 7, "min_orf": 60, "min_distinct": 5, "circular": True}
    assert protein["n_kmers"] > 1000 and (indexed_model / "protein_excluded.txt.gz").exists()


def _score(bits, p):
    """The default calling rule (genointerp.viral.classify.calling), written out: bits moved by 2 bits per
    log10 of the model's odds, clipped at +-3."""
    if p == "NA":
        return float(bits)
    p = float(p)
    odds = 3.0 if p >= 1 else -3.0 if p <= 0 else max(-3.0, min(3.0, math.log10(p / (1 - p))))
    return float(bits) + 2 * odds


def test_evidence_modes_call_on_evidence_bits_the_model_or_one_score(indexed_model, dataset, cli, tmp_path):
    fq = tmp_path / "r.fq"
    fq.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in read_fastq(dataset / "r.fq")[:300]))
    out = {}
    for mode in ("both", "model", "kmer"):
        res = cli("-q", "classify-reads", fq, "-m", indexed_model, "--evidence", mode, "-o", tmp_path / f"{mode}.tsv",
                  "--summary", tmp_path / f"{mode}.json")
        assert res.exit_code == 0, res.output
        out[mode] = _rows(tmp_path / f"{mode}.tsv")
    threshold = json.loads((tmp_path / "both.json").read_text())["threshold"]
    line = 9.0
    assert json.loads((tmp_path / "both.json").read_text())["rule"] == {"min_bits": line, "model_weight": 2.0,
                                                                        "model_clip": 3.0}
    for rb, rm, rk in zip(out["both"], out["model"], out["kmer"]):
        bits = float(rb[7])
        assert rk[2] == "NA" and rk[3] == ("viral" if bits >= line else "not_viral") and rk[5] == rb[5] and rk[7] == rb[7]
        # the model runs where it can change the call: within 2 * 3 = 6 bits of the line
        assert (rb[2] == "NA") == (not line - 6 <= bits < line + 6)
        assert rb[3] == ("viral" if _score(bits, rb[2]) >= line else "not_viral")
        assert rb[6] == ("none" if rb[3] != "viral" else "kmer" if bits >= line else "both")
        assert rm[2] != "NA" and rm[3] == ("viral" if float(rm[2]) >= threshold else "not_viral") and rm[5] == rb[5]
        if rb[0].startswith("human|"):
            assert rb[5] == "0" and rb[7] == "0.00"  # the index holds nothing of the human reference they come from
    viral = [r for r in out["kmer"] if r[0].startswith("viral|")]
    assert sum(r[3] == "viral" for r in viral) == len(viral) > 100  # reads from the indexed genomes
    res = cli("-q", "classify-reads", fq, "-m", indexed_model, "--evidence", "kmer", "--min-bits", 1000, "-o", tmp_path / "none.tsv")
    assert res.exit_code == 0 and all(r[3] == "not_viral" for r in _rows(tmp_path / "none.tsv"))


def test_kmer_evidence_needs_a_model_with_an_index(model, indexed_model, dataset, cli, tmp_path):
    res = cli("classify-reads", dataset / "r.fq", "-m", model, "--evidence", "kmer", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1 and not (tmp_path / "c.tsv").exists()
    assert_one_error_line(res, "has no viral index")
    res = cli("classify-reads", dataset / "r.fq", "-m", indexed_model, "--min-bits", 0, "-o", tmp_path / "c.tsv")
    assert res.exit_code == 2 and "--min-bits: 0.0 is not above 0" in res.stderr
    res = cli("train-xvir", dataset / "ds", "-o", tmp_path / "m", "--negative", f"human={dataset / 'r.fq'}", "--epochs", 1)
    assert res.exit_code == 2 and "give --viral" in res.stderr and not (tmp_path / "m").exists()
    from conftest import DATA

    for bad, why in ((["--kmer-seed", "1101101101101"], "backwards"), (["--kmer-seed", "1" * 9], "at least 11"),
                     (["--kmer-k", 21, "--kmer-seed", "1" * 21], "not both")):
        res = cli("train-xvir", dataset / "ds", "-o", tmp_path / "m", "--viral", DATA / "hpv4.fa", *bad, "--epochs", 1, *SMALL)
        assert res.exit_code in (1, 2) and why in res.stderr and not (tmp_path / "m").exists(), res.stderr


def test_a_bad_viral_reference_fails_before_training(dataset, cli, tmp_path):
    bad = tmp_path / "bad.fa"
    bad.write_text(">v\nACGTQACGT\n")
    res = cli("train-xvir", dataset / "ds", "-o", tmp_path / "m", "--viral", bad, "--epochs", 1, *SMALL)
    assert res.exit_code == 1 and not (tmp_path / "m").exists()
    assert_one_error_line(res, "'Q' is not a nucleotide letter")
    assert "XVir" not in res.stderr  # refused before the model was built


def test_a_model_that_fails_to_load_in_its_own_process_is_one_error_line(model, dataset, tmp_path, cli, monkeypatch):
    """The spawned model process (genointerp.viral.classify.model_process) hands its loading error to the job."""
    from genointerp.viral.classify.model_process import ModelProcess

    monkeypatch.setattr(ModelProcess, "HERE", False)
    mismatched, _ = _mismatched(model, tmp_path)
    res = cli("classify-reads", dataset / "r.fq", "-m", mismatched, "-o", tmp_path / "o.tsv")
    assert res.exit_code == 1 and not (tmp_path / "o.tsv").exists()
    assert_one_error_line(res, "weights do not match config.json")
