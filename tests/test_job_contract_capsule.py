"""The job contract (genointerp.job) for capsule-train, capsule-predict and capsule-search: each
case builds a request that breaks one rule without the CLI and expects the one-line UsageError the
command line gets, and nothing written; then capsule-train and capsule-predict run as library calls."""

from __future__ import annotations

import numpy as np
import pytest

from contract_cases import check_case
from genointerp.capsule import predict_job, search_job, train_job
from genointerp.io.features import Features, write_features
from genointerp.job import execute

# inputs the rules refuse before anything is read: they need not exist
FEATS, PHENO, MODEL = "no/feats", "no/pheno.tsv", "no/model"


def _train(output: str, **fields):
    return train_job.run, train_job.CapsuleTrainRequest(features=FEATS, phenotypes=PHENO, output=output, **fields)


def _predict(output: str, **fields):
    return predict_job.run, predict_job.CapsulePredictRequest(model_dir=MODEL, features=FEATS, output=output, **fields)


def _search(output: str, **fields):
    return search_job.run, search_job.CapsuleSearchRequest(features=FEATS, phenotypes=PHENO, output=output, **fields)


TRAIN = ["capsule-train", FEATS, "-p", PHENO]
SEARCH = ["capsule-search", FEATS, "-p", PHENO]
CASES = [
    ("capsule-train: an unknown --primary", lambda o: _train(o, primary="dense"),
     [*TRAIN, "--primary", "dense"], "--primary: expected one of conv, gene, got 'dense'"),
    ("capsule-train: --pair-screen with conv capsules", lambda o: _train(o, primary="conv", pair_screen=True),
     [*TRAIN, "--primary", "conv", "--pair-screen"], "--pair-screen: the pair screen spares genes"),
    ("capsule-train: --pair-screen without a penalty", lambda o: _train(o, pair_screen=True, gene_penalty=0.0),
     [*TRAIN, "--pair-screen", "--gene-penalty", "0"], "--gene-penalty 0 turns the penalty off"),
    ("capsule-train: --gene-penalty with conv capsules", lambda o: _train(o, primary="conv", gene_penalty=0.01),
     [*TRAIN, "--primary", "conv", "--gene-penalty", "0.01"], "--gene-penalty: the group penalty switches genes off"),
    ("capsule-train: --primary-capsule of gene capsules", lambda o: _train(o, primary_capsule=2),
     [*TRAIN, "--primary-capsule", "2"], "--primary-capsule picks a conv capsule"),
    ("capsule-train: --primary-capsule beyond the network",
     lambda o: _train(o, primary="conv", hidden=16, kernel_size=5, capsule_channels=4, primary_capsule=99),
     [*TRAIN, "--primary", "conv", "--hidden", "16", "--kernel-size", "5", "--capsule-channels", "4",
      "--primary-capsule", "99"], "--primary-capsule: the network has 24 primary capsules"),
    ("capsule-train: a conv kernel wider than the dense layer", lambda o: _train(o, primary="conv", hidden=4),
     [*TRAIN, "--primary", "conv", "--hidden", "4"], "--kernel-size/--hidden: kernel_size 9 is larger than the hidden"),
    ("capsule-train: set sizes crossed", lambda o: _train(o, min_set_size=10, max_set_size=5),
     [*TRAIN, "--min-set-size", "10", "--max-set-size", "5"], "--min-set-size: 10 is above --max-set-size 5"),
    ("capsule-train: a training fraction above 1", lambda o: _train(o, train_fraction=[0.5, 1.5]),
     [*TRAIN, "--train-fraction", "0.5,1.5"], "--train-fraction: 1.5 is not in (0, 1]"),
    ("capsule-train: two inputs from stdin", lambda o: (train_job.run, train_job.CapsuleTrainRequest("-", "-", o)),
     ["capsule-train", "-", "-p", "-"], "--phenotypes: FEATURES and --phenotypes are both - (stdin)"),
    ("capsule-train: one fold", lambda o: _train(o, folds=1), None, "--folds: 1 is below 2"),
    ("capsule-train: a negative seed", lambda o: _train(o, seed=-1), None, "--seed: -1 is outside 0..4294967295"),
    ("capsule-predict: a device that does not exist", lambda o: _predict(o, device="gpu"),
     ["capsule-predict", MODEL, FEATS, "--device", "gpu"], "--device gpu: expected auto, cpu, cuda or cuda:N"),
    ("capsule-predict: no thread", lambda o: _predict(o, threads=0), None, "--threads: 0 is below 1"),
    ("capsule-search: every subset an elite", lambda o: _search(o, population=4, elite=4),
     [*SEARCH, "--population", "4", "--elite", "4"], "--elite: 4 elites leave no child in a population of 4"),
    ("capsule-search: --subset-size MIN above MAX", lambda o: _search(o, subset_size="3-2"),
     [*SEARCH, "--subset-size", "3-2"], "--subset-size: expected 1 <= MIN <= MAX, got '3-2'"),
    ("capsule-search: --subset-size not a size", lambda o: _search(o, subset_size="two"),
     [*SEARCH, "--subset-size", "two"], "--subset-size: expected N or MIN-MAX, got 'two'"),
    ("capsule-search: a conv kernel wider than the dense layer", lambda o: _search(o, primary="conv", hidden=4),
     [*SEARCH, "--primary", "conv", "--hidden", "4"], "--kernel-size/--hidden: kernel_size 5 is larger than the hidden"),
    ("capsule-search: a mutation rate of 1", lambda o: _search(o, mutation_rate=1.0), None,
     "--mutation-rate: 1.0 is outside 0..0.99"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_request_gets_the_cli_error_without_the_cli(case, cli, tmp_path):
    check_case(case, cli, tmp_path)


def test_train_and_predict_run_as_library_calls(tmp_path):
    """capsule-train then capsule-predict through execute(): a model directory, then its calls."""
    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    x = rng.normal(size=(40, 6)).astype(np.float32)
    x[:, 0] += np.where(y == 1, 3.0, -3.0)  # G0's pc1 separates the classes
    samples = [f"S{i:02d}" for i in range(40)]
    (tmp_path / "feats").mkdir()
    write_features(tmp_path / "feats", Features(samples, [f"chr1:G{g}:pc{k}" for g in range(3) for k in (1, 2)], x))
    pheno = tmp_path / "pheno.tsv"
    pheno.write_text("sample\tstatus\n" + "".join(f"{s}\t{'case' if v else 'control'}\n" for s, v in zip(samples, y)))
    trained = execute(train_job.run, train_job.CapsuleTrainRequest(
        features=str(tmp_path / "feats"), phenotypes=str(pheno), output=str(tmp_path / "model"), folds=2,
        test_fraction=0.0, epochs=2, baselines=False, device="cpu"))
    assert trained["samples"] == 40 and (tmp_path / "model" / "config.json").is_file()
    summary = execute(predict_job.run, predict_job.CapsulePredictRequest(
        model_dir=str(tmp_path / "model"), features=str(tmp_path / "feats"), output=str(tmp_path / "calls.tsv"),
        device="cpu"))
    rows = (tmp_path / "calls.tsv").read_text().splitlines()
    assert summary == {"samples": 40} and rows[0] == "sample\tp_control\tp_case\tcall" and len(rows) == 41
    assert {row.split("\t")[-1] for row in rows[1:]} <= {"case", "control"}
