"""capsule-train and capsule-predict through the CLI on a small cohort with one planted causal gene."""

import json
import shutil

import numpy as np
import pytest

from conftest import assert_one_error_line, read_tsv, run_cli
from genointerp.io.features import Features, write_features

# a tiny network and short training: the planted signal is easy and linear. The paper's conv primary
# capsules (tests of gene capsules give --primary gene after SMALL: the last one counts)
SMALL = ["--primary", "conv", "--hidden", "16", "--capsule-channels", "4", "--capsule-dim", "4", "--kernel-size", "5", "--class-dim", "8",
         "--epochs", "30", "--lr", "0.01", "--folds", "2", "--batch-size", "64", "--seed", "2"]
N, GENES, CAUSAL = 240, 6, "G1"


def cohort(n: int = N, genes: int = GENES, seed: int = 0) -> tuple[Features, np.ndarray]:
    """Standard-normal Gene-PCs (2 per gene); cases have pc1 of G1 shifted by +3, controls by -3,
    so one feature separates the classes: 99.87 % of samples lie on their class's side of 0."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    x = rng.normal(size=(n, 2 * genes)).astype(np.float32)
    x[:, 2 * int(CAUSAL[1:])] += np.where(y == 1, 3.0, -3.0)
    columns = [f"chr1:G{g}:pc{k}" for g in range(genes) for k in (1, 2)]
    return Features([f"S{i:03d}" for i in range(n)], columns, x), y


def write_cohort(folder, features: Features, y: np.ndarray):
    (folder / "feats").mkdir()
    write_features(folder / "feats", features)
    rows = [f"{s}\t{'case' if v else 'control'}\n" for s, v in zip(features.samples, y)]
    (folder / "pheno.tsv").write_text("sample\tstatus\n" + "".join(rows))
    return folder / "feats", folder / "pheno.tsv"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("capsule")
    feats, pheno = write_cohort(d, *cohort())
    # on the CPU, where test_predict_reproduces_the_test_predictions' promise holds (docs/reliability.md)
    res = run_cli("capsule-train", str(feats), "-p", str(pheno), "-o", str(d / "m"),
                  "--train-fraction", "0.5", "--device", "cpu", *SMALL)
    assert res.exit_code == 0, res.output
    return d


def test_train_writes_a_complete_model_directory(trained):
    m = trained / "m"
    assert sorted(p.name for p in m.iterdir()) == sorted([
        "config.json", "model.safetensors", "results.tsv", "folds.tsv", "split.tsv", "metrics.tsv",
        "test_predictions.tsv", "train_fraction.tsv", "coupling.tsv", "coupling.png", "genes.tsv", ".genointerp"])
    cfg = json.loads((m / "config.json").read_text())
    assert cfg["model"]["architecture"] == "capsule" and cfg["model"]["n_features"] == 12
    assert cfg["phenotype"]["classes"] == ["control", "case"] and cfg["phenotype"]["case"] == "case"
    assert cfg["phenotype"]["column"] == "status" and len(cfg["features"]["columns"]) == 12
    assert len(cfg["scaler"]["mean"]) == len(cfg["scaler"]["sd"]) == 12
    split = read_tsv(m / "split.tsv")
    test = [r for r in split if r["set"] == "test"]
    assert len(test) == 48 and sum(r["class"] == "case" for r in test) == 24  # 0.2 x 240, balanced
    assert cfg["training"]["n_test"] == 48 and cfg["training"]["n_train"] == 192


def test_capsule_and_logistic_regression_learn_the_planted_signal(trained):
    results = {r["method"]: r for r in read_tsv(trained / "m" / "results.tsv")}
    assert list(results) == ["capsule", "logistic_regression", "svm", "random_forest", "adaboost", "mlp"]
    # the Bayes accuracy is 0.9987 (see cohort); 0.9 leaves room for small folds and 30 epochs
    for method in ("capsule", "logistic_regression"):
        assert float(results[method]["test_accuracy"]) >= 0.9, results[method]
        assert float(results[method]["cv_accuracy_mean"]) >= 0.85, results[method]
    assert len(read_tsv(trained / "m" / "folds.tsv")) == 6 * 2
    curve = read_tsv(trained / "m" / "train_fraction.tsv")
    assert [(r["fraction"], r["method"]) for r in curve][:2] == [("0.5", "capsule"), ("0.5", "logistic_regression")]
    assert float(curve[0]["n_train_mean"]) == 48.0  # half of the 96 samples in each training fold


def test_the_causal_gene_is_decisive_and_coupling_is_a_distribution(trained):
    genes = read_tsv(trained / "m" / "genes.tsv")
    assert len(genes) == GENES and genes[0]["gene"] == CAUSAL and genes[0]["decisive"] == "yes"
    assert [g["decisive"] for g in genes].count("yes") == 1  # top 5 % of 6 genes, at least one
    coupling = read_tsv(trained / "m" / "coupling.tsv")
    assert len(coupling) == 4 * 6  # 4 channels x (16 - 5) // 2 + 1 positions
    for row in coupling[:5]:
        assert float(row["c[case|case]"]) + float(row["c[control|case]"]) == pytest.approx(1, abs=2e-6)


def test_predict_reproduces_the_test_predictions(trained, cli):
    """Byte for byte on the CPU, whose kernels give a row the same bits whatever rows share its pass;
    pinned there: on a GPU a held-out sample sits at another row of its 512-row pass in capsule-train
    than in a whole table, and CUDA's kernels do not promise that (docs/reliability.md)."""
    out = trained / "pred.tsv"
    res = cli("capsule-predict", trained / "m", trained / "feats", "-o", out, "--device", "cpu")
    assert res.exit_code == 0, res.output
    pred = {r["sample"]: r for r in read_tsv(out)}
    assert len(pred) == N
    test = read_tsv(trained / "m" / "test_predictions.tsv")
    for row in test:
        assert {k: pred[row["sample"]][k] for k in ("p_case", "p_control", "call")} == \
            {k: row[k] for k in ("p_case", "p_control", "call")}
    assert np.mean([r["call"] == r["class"] for r in test]) >= 0.9


def test_predict_ignores_extra_columns_with_a_warning_and_refuses_missing_ones(trained, cli, tmp_path):
    features, _ = cohort()
    wider = Features(features.samples, features.columns + ["chr2:EXTRA:pc1"],
                     np.hstack([features.matrix, np.ones((N, 1), np.float32)]))
    (tmp_path / "wide").mkdir()
    write_features(tmp_path / "wide", wider)
    res = cli("capsule-predict", trained / "m", tmp_path / "wide")
    assert res.exit_code == 0 and "ignoring 1 feature column" in res.stderr
    assert res.stdout == cli("capsule-predict", trained / "m", trained / "feats").stdout
    narrow = Features(features.samples, features.columns[1:], features.matrix[:, 1:].copy())
    (tmp_path / "narrow").mkdir()
    write_features(tmp_path / "narrow", narrow)
    res = cli("capsule-predict", trained / "m", tmp_path / "narrow", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, "1 of the model's 12 feature columns are missing, e.g. 'chr1:G0:pc1'")


def test_same_seed_gives_byte_identical_outputs_without_a_test_set(tmp_path, cli):
    feats, pheno = write_cohort(tmp_path, *cohort(60, 4))
    args = ["capsule-train", feats, "-p", pheno, "--no-baselines", *SMALL, "--epochs", "3", "--folds", "2",
            "--test-fraction", "0"]
    for name in ("a", "b"):
        assert cli(*args, "-o", tmp_path / name).exit_code == 0
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert "results.tsv" in files and "train_fraction.tsv" not in files and "test_predictions.tsv" not in files
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    results = read_tsv(tmp_path / "a" / "results.tsv")
    assert [r["method"] for r in results] == ["capsule"] and results[0]["test_accuracy"] == "NA"


def test_bad_training_input_is_one_error_line_and_leaves_nothing(tmp_path, cli):
    features, y = cohort(40, 3)
    feats, pheno = write_cohort(tmp_path, features, y)
    base = ["capsule-train", feats, *SMALL, "--epochs", "1", "--no-baselines"]

    def fails(pheno_text, message, *extra):
        (tmp_path / "p.tsv").write_text(pheno_text)
        res = cli(*base, "-p", tmp_path / "p.tsv", "-o", tmp_path / "out", *extra)
        assert res.exit_code == 1, res.output
        assert_one_error_line(res, message)
        assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".genointerp-tmp-*"))

    good = pheno.read_text()
    fails(good + "GHOST\tcase\n", "1 phenotyped sample(s) have no features, e.g. 'GHOST'")
    fails("sample\tstatus\n" + "".join(f"{s}\tcase\n" for s in features.samples), "single class ('case')")
    fails(good, "class 'control' has 20 samples: too few for 9 folds", "--folds", "9")  # 4 of 20 are test
    fails("sample\tstatus\n" + "".join(f"{s}\t{i % 3}\n" for i, s in enumerate(features.samples)), "has 3 classes")
    fails(good, "--case 'sick' is not a value of 'status' (case, control)", "--case", "sick")
    (tmp_path / "out").mkdir()
    res = cli(*base, "-p", pheno, "-o", tmp_path / "out")
    assert res.exit_code == 1 and list((tmp_path / "out").iterdir()) == []
    assert_one_error_line(res, "output exists")


def test_predict_refuses_other_architectures_and_damaged_weights(trained, cli, tmp_path):
    from genointerp.resources import builtin_model_dir

    res = cli("capsule-predict", builtin_model_dir(), trained / "feats", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, "a 'xvir' model, but this command needs 'capsule'")
    shutil.copytree(trained / "m", tmp_path / "broken")
    weights = tmp_path / "broken" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    res = cli("capsule-predict", tmp_path / "broken", trained / "feats", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, "damaged or not a safetensors file")
    (tmp_path / "p.tsv").write_text("x")
    res = cli("capsule-predict", trained / "m", trained / "feats", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and (tmp_path / "p.tsv").read_text() == "x"
    assert_one_error_line(res, "output exists")


# a quick run for the options below: 60 samples, 4 genes, no test set or baselines, 3 epochs
QUICK = [*SMALL, "--epochs", "3", "--test-fraction", "0", "--no-baselines"]


def test_phenotype_picks_the_column_that_labels_the_samples(tmp_path, cli):
    features, y = cohort(60, 4)
    feats, _ = write_cohort(tmp_path, features, y)
    # 'other' splits the samples differently from 'status' (thirds, not alternating)
    other = ["yes" if i % 3 == 0 else "no" for i in range(60)]
    (tmp_path / "p.tsv").write_text("sample\tstatus\tother\n" + "".join(
        f"{s}\t{'case' if v else 'control'}\t{o}\n" for s, v, o in zip(features.samples, y, other)))
    res = cli("capsule-train", feats, "-p", tmp_path / "p.tsv", "--phenotype", "other", *QUICK, "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["phenotype"]["column"] == "other" and cfg["phenotype"]["classes"] == ["no", "yes"]
    assert {r["sample"]: r["class"] for r in read_tsv(tmp_path / "m" / "split.tsv")} == dict(zip(features.samples, other))


def test_one_routing_iteration_leaves_the_coupling_uniform(tmp_path, cli, trained):
    feats, pheno = write_cohort(tmp_path, *cohort(60, 4))
    res = cli("capsule-train", feats, "-p", pheno, "--routing", 1, *QUICK, "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "m" / "config.json").read_text())["model"]["routing_iterations"] == 1
    # routing logits start at 0 and the first iteration's softmax over 2 classes gives exactly 1/2;
    # later iterations move them (the default, 3, in the module's model does)
    values = lambda rows: [float(v) for r in rows for k, v in r.items() if k.startswith("c[")]  # noqa: E731
    assert set(values(read_tsv(tmp_path / "m" / "coupling.tsv"))) == {0.5}
    assert set(values(read_tsv(trained / "m" / "coupling.tsv"))) != {0.5}


def test_primary_capsule_is_the_one_the_gene_scores_read(tmp_path, cli):
    import torch

    from genointerp.model_folder import load_model_dir

    features, y = cohort(60, 4)
    feats, pheno = write_cohort(tmp_path, features, y)
    res = cli("capsule-train", feats, "-p", pheno, "--primary-capsule", 5, *QUICK, "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["interpretation"] == {"primary_capsule": 5, "primary_capsule_choice": "given"}
    # the read-out by a full forward pass: capsule 5's length with one gene's PCs kept (the others
    # at their training mean, 0 once standardised) against all at the mean, averaged over the samples
    net, _ = load_model_dir(tmp_path / "m", expect="capsule")
    xs = ((features.matrix - np.array(cfg["scaler"]["mean"])) / np.array(cfg["scaler"]["sd"])).astype(np.float32)
    with torch.no_grad():
        length = lambda x: net.primary(torch.from_numpy(x))[:, 5].norm(dim=-1).double().numpy()  # noqa: E731
        zero = length(np.zeros_like(xs))
        want = {}
        for g in range(4):
            kept = np.zeros_like(xs)
            kept[:, 2 * g : 2 * g + 2] = xs[:, 2 * g : 2 * g + 2]
            want[f"G{g}"] = np.abs(length(kept) - zero).mean()
    got = {r["gene"]: float(r["score"]) for r in read_tsv(tmp_path / "m" / "genes.tsv")}
    assert got == pytest.approx(want, rel=1e-4)  # genes.tsv keeps 6 significant digits


def test_dropout_changes_training_but_not_prediction_determinism(tmp_path, cli):
    from safetensors.torch import load_file

    feats, pheno = write_cohort(tmp_path, *cohort(60, 4))
    for name, extra in (("a", ["--dropout", "0.5"]), ("b", ["--dropout", "0.5"]), ("c", [])):
        assert cli("capsule-train", feats, "-p", pheno, *extra, *QUICK, "-o", tmp_path / name).exit_code == 0
    assert json.loads((tmp_path / "a" / "config.json").read_text())["model"]["dropout"] == 0.5
    a, b, c = (load_file(tmp_path / name / "model.safetensors") for name in "abc")
    assert all(torch_equal(a[k], b[k]) for k in a)  # seeded: the same units dropped
    assert not all(torch_equal(a[k], c[k]) for k in a)  # dropped units change the gradients
    # at prediction dropout is off: the same model gives the same probabilities every time
    runs = [cli("capsule-predict", tmp_path / "a", feats).stdout for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0].splitlines()) == 61


def torch_equal(x, y) -> bool:
    return bool((x == y).all())


# ---- issue 14: what a pipeline may feed the capsule commands ---------------------------------------

BINARY = bytes(range(128, 256)) * 8  # not UTF-8 text


def test_nan_or_missing_features_are_refused_naming_the_sample_and_column(trained, cli, tmp_path):
    features, y = cohort(40, 3)
    feats, pheno = write_cohort(tmp_path, features, y)
    matrix = np.load(feats / "features.npy")
    matrix[5, 2] = np.nan
    np.save(feats / "features.npy", matrix)
    res = cli("capsule-train", feats, "-p", pheno, *QUICK, "-o", tmp_path / "m")
    assert res.exit_code == 1 and not (tmp_path / "m").exists()
    assert_one_error_line(res, "features.npy: sample 'S005', column 'chr1:G1:pc1': NaN (a missing value)")
    # capsule-predict used to write `nan nan control` for such a row
    rows = (trained / "feats" / "features.tsv").read_text().splitlines()
    for value, message in (("nan", "NaN (a missing value)"), ("", "'' is a missing value"),
                           ("NA", "'NA' is a missing value"), ("-inf", "-inf (infinite)"), ("x1", "'x1' is not a number")):
        cells = rows[4].split("\t")
        cells[3] = value
        (tmp_path / "f.tsv").write_text("\n".join(rows[:4] + ["\t".join(cells)] + rows[5:]) + "\n")
        res = cli("capsule-predict", trained / "m", tmp_path / "f.tsv", "-o", tmp_path / "p.tsv")
        assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists(), value
        assert_one_error_line(res, f"sample 'S003', column 'chr1:G1:pc1': {message}")


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.pop("features"), "no 'features' entry with a 'columns' list"),
    (lambda c: c.update(features=["chr1:G0:pc1"]), "no 'features' entry with a 'columns' list"),
    (lambda c: c["features"]["columns"].pop(), "'features' lists 11 columns (11 distinct), the network takes 12"),
    (lambda c: c["scaler"]["sd"].__setitem__(0, 0), "no valid 'scaler' entry"),
    (lambda c: c.pop("scaler"), "no valid 'scaler' entry"),
    (lambda c: c["phenotype"].update(classes=["case"]), "no valid 'phenotype' entry"),
])
def test_predict_refuses_a_config_without_valid_features_scaler_or_classes(edit, message, trained, cli, tmp_path):
    shutil.copytree(trained / "m", tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    edit(config)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    res = cli("capsule-predict", tmp_path / "m", trained / "feats", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, f"config.json: {message}")


def test_text_inputs_are_read_gzipped_from_stdin_and_binary_ones_refused(trained, cli, tmp_path):
    import gzip

    features, y = cohort(60, 4)
    feats, pheno = write_cohort(tmp_path, features, y)
    # a gzipped phenotype table without .gz in its name, from stdin
    res = cli("capsule-train", feats, "-p", "-", *QUICK, "-o", tmp_path / "m", input=gzip.compress(pheno.read_bytes()))
    assert res.exit_code == 0, res.output
    assert {r["sample"]: r["class"] for r in read_tsv(tmp_path / "m" / "split.tsv")} == \
        {s: "case" if v else "control" for s, v in zip(features.samples, y)}
    table = (trained / "feats" / "features.tsv").read_bytes()
    (tmp_path / "f.tsv.gz").write_bytes(gzip.compress(table))
    plain = cli("capsule-predict", trained / "m", trained / "feats" / "features.tsv")
    assert plain.exit_code == 0 and len(plain.stdout.splitlines()) == N + 1
    assert cli("capsule-predict", trained / "m", tmp_path / "f.tsv.gz").stdout == plain.stdout
    assert cli("capsule-predict", trained / "m", "-", input=gzip.compress(table)).stdout == plain.stdout
    (tmp_path / "junk").write_bytes(BINARY)
    for args in (["capsule-train", feats, "-p", tmp_path / "junk", *QUICK, "-o", tmp_path / "o"],
                 ["capsule-train", tmp_path / "junk", "-p", pheno, *QUICK, "-o", tmp_path / "o"],
                 ["capsule-predict", trained / "m", tmp_path / "junk", "-o", tmp_path / "o"]):
        res = cli(*args)
        assert res.exit_code == 1 and not (tmp_path / "o").exists()
        assert_one_error_line(res, "junk: not a text file")
    res = cli("capsule-train", "-", "-p", "-", *QUICK, "-o", tmp_path / "o", input=table)
    assert res.exit_code == 2 and "FEATURES and --phenotypes are both - (stdin)" in res.stderr


@pytest.mark.parametrize("edit,message", [
    (lambda index, m: index["samples"].__setitem__(1, "S000"), "sample 'S000' appears more than once"),
    (lambda index, m: index["columns"].__setitem__(1, "chr1:G0:pc1"), "feature column 'chr1:G0:pc1' appears more than once"),
    (lambda index, m: index["samples"].pop(), "features.npy is 40 x 6, but features.json names 39 samples"),
    (lambda index, m: index.update(samples=[], columns=[]), "no samples"),
])
def test_a_damaged_feature_folder_is_one_error_line(edit, message, cli, tmp_path):
    features, y = cohort(40, 3)
    feats, pheno = write_cohort(tmp_path, features, y)
    index = json.loads((feats / "features.json").read_text())
    matrix = np.load(feats / "features.npy")
    edit(index, matrix)
    if not index["samples"]:
        np.save(feats / "features.npy", matrix[:0, :0])
    (feats / "features.json").write_text(json.dumps(index))
    res = cli("capsule-train", feats, "-p", pheno, *QUICK, "-o", tmp_path / "m")
    assert res.exit_code == 1 and not (tmp_path / "m").exists()
    assert_one_error_line(res, message)


# ---- issue 18: --gene-sets, enrichment of the decisive genes ----------------------------------------

def test_gene_sets_give_enrichment_of_the_decisive_genes(tmp_path, cli):
    feats, pheno = write_cohort(tmp_path, *cohort(60, 6))  # genes G0..G5
    # BIG names all 6 feature genes, FIVE all but G0, REST all but G1, TINY two (untested: K < 5) and
    # FOREIGN none: the universe is the 6 feature genes, all named
    (tmp_path / "sets.gmt").write_text(
        "BIG\thttp://example.org/big\tG0\tG1\tG2\tG3\tG4\tG5\tTP53\n"
        "FIVE\t\tG1\tG2\tG3\tG4\tG5\tG5\n"
        "REST\tall but G1\tG0\tG2\tG3\tG4\tG5\n"
        "TINY\tuntested\tG1\tG2\n"
        "FOREIGN\tno feature genes\tTP53\tBRCA1\n")
    res = cli("capsule-train", feats, "-p", pheno, *QUICK, "--gene-sets", tmp_path / "sets.gmt", "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    assert "5 gene sets, 3 with 5 to 500 feature genes to test; universe 6 of 6 feature genes" in res.stderr
    decisive = [g["gene"] for g in read_tsv(tmp_path / "m" / "genes.tsv") if g["decisive"] == "yes"]
    assert len(decisive) == 1  # top 5 % of 6 genes, at least one
    members = {"BIG": {f"G{i}" for i in range(6)}, "FIVE": {f"G{i}" for i in range(1, 6)},
               "REST": {f"G{i}" for i in range(6)} - {"G1"}}
    text = (tmp_path / "m" / "enrichment.tsv").read_text()
    assert text.splitlines()[0] == "set\tdescription\tset_size\toverlap\tdecisive_in_universe\tuniverse\tp_value\tfdr\tgenes"
    rows = {r["set"]: r for r in read_tsv(tmp_path / "m" / "enrichment.tsv")}
    assert sorted(rows) == ["BIG", "FIVE", "REST"]
    for name, genes in members.items():
        row, overlap = rows[name], [g for g in decisive if g in genes]
        assert (row["set_size"], row["overlap"], row["decisive_in_universe"], row["universe"], row["genes"]) == \
            (str(len(genes)), str(len(overlap)), "1", "6", ",".join(overlap)), row
        # one decisive gene drawn from 6: it lies in a set of K with probability K / 6; P(X >= 0) = 1
        assert float(row["p_value"]) == pytest.approx(len(genes) / 6 if overlap else 1.0, rel=1e-5)
    assert rows["BIG"]["description"] == "http://example.org/big" and rows["FIVE"]["description"] == ""


def test_bad_gene_sets_are_one_error_line_before_training_and_leave_nothing(tmp_path, cli):
    feats, pheno = write_cohort(tmp_path, *cohort(40, 6))
    gmt = tmp_path / "sets.gmt"

    def fails(text, message, *extra):
        if text is None:
            gmt.unlink(missing_ok=True)
        else:
            gmt.write_text(text)
        res = cli("capsule-train", feats, "-p", pheno, *QUICK, "--gene-sets", gmt, "-o", tmp_path / "out", *extra)
        assert res.exit_code == 1, res.output
        assert_one_error_line(res, message)
        assert "fold 1" not in res.stderr  # refused before any training
        assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".genointerp-tmp-*"))

    fails(None, "sets.gmt: no such file")
    fails("", "sets.gmt: empty gene-set file (no gene sets)")
    fails("OK\td\tG0\tG1\nBROKEN\tdescription only\n", "sets.gmt: line 2: a gene set needs a name, a description and genes")
    fails("A\td\tG0\tG1\nB\td\tG2\nA\td\tG3\n", "sets.gmt: line 3: gene set 'A' is given twice (first on line 1)")
    fails("A\td\tg0\tg1\nB\td\tENSG00000141510\n",
          "sets.gmt: none of the 2 gene sets names a gene of the features: gene symbols differ?")
    fails("A\td\tG0\tG1\tG2\n", "no gene set has 5 to 500 genes of the features (the largest has 3)")
    fails("A\td\tG0\tG1\tG2\n", "no gene set has 4 to 500 genes", "--min-set-size", "4")
    res = cli("capsule-train", feats, "-p", pheno, *QUICK, "--gene-sets", gmt, "--min-set-size", 10,
              "--max-set-size", 5, "-o", tmp_path / "out")
    assert res.exit_code == 2 and "10 is above --max-set-size 5" in res.stderr and not (tmp_path / "out").exists()


# ---- issue 18: the PRS baseline on SNP dosages (gene-pca --keep-dosages) ------------------------------

@pytest.fixture(scope="module")
def prs_run(tmp_path_factory):
    """gene-pca --keep-dosages on the 1000 Genomes fixture (60 samples), a phenotype that is carrier
    status of one SNP behind the Gene-PCs, and capsule-train on both with a training-fraction curve."""
    from conftest import DATA

    d = tmp_path_factory.mktemp("prs")
    res = run_cli("gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "-g", str(DATA / "genes_chr21_22.bed"),
                  "--keep-dosages", "-o", str(d / "pcs"))
    assert res.exit_code == 0, res.output
    dosages = np.load(d / "pcs" / "dosages.npy")
    samples = json.loads((d / "pcs" / "features.json").read_text())["samples"]
    # the SNP whose carriers are nearest half of the cohort, without a missing call
    carriers = (dosages > 0).mean(axis=0) + (dosages == -1).any(axis=0)
    causal = int(np.argmin(np.abs(carriers - 0.5)))
    case = dosages[:, causal] > 0
    (d / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if c else 'control'}\n" for s, c in zip(samples, case)))
    res = run_cli("capsule-train", str(d / "pcs"), "-p", str(d / "pheno.tsv"), "-o", str(d / "m"),
                  "--train-fraction", "0.5,1", *SMALL)
    assert res.exit_code == 0, res.output
    return d, samples, causal, res


def test_gene_pca_dosages_are_the_vcf_genotypes(prs_run):
    import pysam

    from conftest import DATA

    d, samples, _, _ = prs_run
    dosages = np.load(d / "pcs" / "dosages.npy")
    snps = read_tsv(d / "pcs" / "snps.tsv")
    assert dosages.dtype == np.int8 and dosages.shape == (60, len(snps))
    with pysam.VariantFile(str(DATA / "eur_chr21_22_small.vcf.gz")) as vcf:
        records = {(r.chrom, r.pos): r for r in vcf}
    # two called genotypes and the fixture's one missing call that survives the filters ('.', sample 60)
    missing = next(j for j, s in enumerate(snps) if s["snp"] == "21:41963228:T:G")
    for i, j in ((0, 0), (17, len(snps) - 1), (59, missing)):
        snp = snps[j]
        rec = records[(snp["chrom"], int(snp["pos"]))]
        assert (rec.ref, ",".join(rec.alts)) == (snp["ref"], snp["counted"])
        gt = rec.samples[samples[i]]["GT"]
        want = -1 if None in gt else sum(a > 0 for a in gt) * (2 // len(gt))
        assert dosages[i, j] == want, (samples[i], snp["snp"], gt)
    assert dosages[59, missing] == -1


def test_prs_runs_on_the_same_folds_test_set_and_curve(prs_run):
    from genointerp.capsule.prs import P_THRESHOLDS

    d, _, _, res = prs_run
    results = {r["method"]: r for r in read_tsv(d / "m" / "results.tsv")}
    assert list(results) == ["capsule", "logistic_regression", "svm", "random_forest", "adaboost", "mlp", "prs"]
    # the phenotype is one SNP's carrier status: its dosage alone separates the classes (0 against
    # 1 or 2), so a score of that SNP, cut by the logistic regression, calls every sample right. The
    # final fit (48 samples) does; a fold trains on 24, where a null SNP can pass p <= 1e-5 by chance
    # and cost some accuracy (one of the two does here: 0.79)
    prs = results["prs"]
    assert float(prs["test_accuracy"]) == 1.0 and float(prs["cv_accuracy_mean"]) >= 0.75, prs
    assert [r["fold"] for r in read_tsv(d / "m" / "folds.tsv") if r["method"] == "prs"] == ["1", "2"]
    curve = {(r["fraction"], r["method"]): r for r in read_tsv(d / "m" / "train_fraction.tsv")}
    assert {f for f, m in curve if m == "prs"} == {"0.5", "1"}
    assert curve[("1", "prs")]["accuracy_mean"] == prs["cv_accuracy_mean"]  # the full fraction is the CV
    assert curve[("0.5", "prs")]["n_train_mean"] == curve[("0.5", "capsule")]["n_train_mean"]
    cfg = json.loads((d / "m" / "config.json").read_text())["prs"]
    n_snps = len(read_tsv(d / "pcs" / "snps.tsv"))
    assert cfg["p_threshold"] in P_THRESHOLDS and 1 <= cfg["n_snps"] < n_snps and cfg["n_snps_available"] == n_snps
    assert "PRS (final fit): p <= " in res.stderr and "PRS baseline skipped" not in res.stderr


def test_prs_is_skipped_with_one_line_without_dosages_and_a_lone_dosage_file_is_an_error(prs_run, cli, tmp_path):
    d, _, _, _ = prs_run
    shutil.copytree(d / "pcs", tmp_path / "pcs")
    for name in ("dosages.npy", "snps.tsv"):
        (tmp_path / "pcs" / name).unlink()
    args = [*SMALL, "--epochs", "2", "--test-fraction", "0"]
    for feats in (tmp_path / "pcs", d / "pcs" / "features.tsv"):  # an older folder, a TSV
        res = cli("capsule-train", feats, "-p", d / "pheno.tsv", *args, "-o", tmp_path / "m")
        assert res.exit_code == 0, res.output
        assert res.stderr.count("PRS baseline skipped") == 1
        assert f"PRS baseline skipped: {feats} has no SNP dosages" in res.stderr
        assert "prs" not in [r["method"] for r in read_tsv(tmp_path / "m" / "results.tsv")]
        shutil.rmtree(tmp_path / "m")
    res = cli("capsule-train", tmp_path / "pcs", "-p", d / "pheno.tsv", *args, "--no-baselines", "-o", tmp_path / "m")
    assert res.exit_code == 0 and "PRS" not in res.stderr  # no baselines asked: nothing to skip
    shutil.rmtree(tmp_path / "m")

    def fails(message):
        res = cli("capsule-train", tmp_path / "pcs", "-p", d / "pheno.tsv", *args, "-o", tmp_path / "m")
        assert res.exit_code == 1, res.output
        assert_one_error_line(res, message)
        assert "fold 1" not in res.stderr and not (tmp_path / "m").exists()

    shutil.copy(d / "pcs" / "dosages.npy", tmp_path / "pcs")
    fails("dosages.npy without snps.tsv (gene-pca --keep-dosages writes both)")
    (tmp_path / "pcs" / "snps.tsv").write_text("\n".join((d / "pcs" / "snps.tsv").read_text().splitlines()[:-1]) + "\n")
    fails(f"dosages.npy: expected int8 60 samples x {len(read_tsv(d / 'pcs' / 'snps.tsv')) - 1} SNPs (snps.tsv), found int8 60 x")
    shutil.copy(d / "pcs" / "snps.tsv", tmp_path / "pcs")
    np.save(tmp_path / "pcs" / "dosages.npy", np.load(d / "pcs" / "dosages.npy") * 2)
    fails("dosages.npy: dosages must be 0, 1, 2 or -1 (missing)")


def test_same_seed_gives_byte_identical_outputs_with_the_prs(prs_run, cli, tmp_path):
    d, _, _, _ = prs_run
    args = ["capsule-train", d / "pcs", "-p", d / "pheno.tsv", *SMALL, "--epochs", "2", "--train-fraction", "0.5"]
    for name in ("a", "b"):
        assert cli(*args, "-o", tmp_path / name).exit_code == 0
    assert "prs" in (tmp_path / "a" / "results.tsv").read_text()
    for path in (tmp_path / "a").iterdir():
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name


def test_threads_run_trainings_side_by_side_and_give_the_same_bytes(prs_run, cli, tmp_path):
    """-t 2 trains folds, the curve's subsamples and the final model on two processes at once (each
    on one thread); every output, the baselines' and the PRS's included, is -t 1's byte for byte."""
    d, _, _, _ = prs_run
    args = ["capsule-train", d / "pcs", "-p", d / "pheno.tsv", "--epochs", "3", "--folds", "3", "--seed", "4",
            "--train-fraction", "0.5"]  # gene capsules (the default), with the pair test
    runs = {t: cli(*args, "-t", t, "-o", tmp_path / f"t{t}") for t in (1, 2)}
    assert all(res.exit_code == 0 for res in runs.values()), runs[2].output
    logs = [runs[t].stderr.replace(str(tmp_path / f"t{t}"), "OUT") for t in (1, 2)]
    assert logs[0] == logs[1]  # the log too: folds reported in order
    files = sorted(p.name for p in (tmp_path / "t1").iterdir())
    assert {"results.tsv", "folds.tsv", "train_fraction.tsv", "test_predictions.tsv"} <= set(files)
    assert sorted(p.name for p in (tmp_path / "t2").iterdir()) == files
    for name in files:
        assert (tmp_path / "t1" / name).read_bytes() == (tmp_path / "t2" / name).read_bytes(), name


def test_run_fit_gives_the_same_answer_twice_and_leaves_the_thread_settings():
    """A training of the protocol is a pure function of its rows and seed (what lets -t run them
    anywhere), and its one thread is given back: torch's count is what it was before."""
    import torch

    from genointerp.capsule.protocol import Fit, FinalFit, run_fit
    from genointerp.capsule.settings import CapsuleSettings
    from genointerp.models.capsule import CapsuleConfig

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(80, 6)), np.arange(80) % 2
    x[:, 0] += 2 * y
    config = CapsuleConfig(n_features=6, primary="gene", gene_index=(0, 0, 1, 1, 2, 2))
    s = CapsuleSettings(epochs=2, folds=2)
    fit = Fit(np.arange(60), np.arange(60, 80), 3, final=True)
    before = torch.get_num_threads()
    a, b = run_fit(x, y, config, s, None, fit), run_fit(x, y, config, s, None, fit)
    assert torch.get_num_threads() == before
    assert isinstance(a, FinalFit) and set(a.calls) == {"capsule", "logistic_regression", "svm", "random_forest",
                                                        "adaboost", "mlp", "lr_network_inputs"}
    assert all(np.array_equal(a.calls[m], b.calls[m]) for m in a.calls)
    assert all(np.array_equal(a.state[k], b.state[k]) for k in a.state)
    model = a.model("cpu")  # the weights come back as the network they were
    assert not model.training and all(torch.equal(v, torch.from_numpy(a.state[k])) for k, v in model.state_dict().items())
    calls = run_fit(x, y, config, s, None, fit._replace(final=False))
    assert all(np.array_equal(calls[m], a.calls[m]) for m in calls)


# ---- issue 18: --primary gene, one primary capsule per gene -----------------------------------------

@pytest.fixture(scope="module")
def gene_run(prs_run, tmp_path_factory):
    """capsule-train --primary gene on prs_run's Gene-PCs of the 1000 Genomes fixture (carrier status
    of one SNP as the phenotype)."""

    d, samples, causal, _ = prs_run
    out = tmp_path_factory.mktemp("gene") / "m"
    res = run_cli("capsule-train", str(d / "pcs"), "-p", str(d / "pheno.tsv"), "-o", str(out),
                  "--no-baselines", *SMALL, "--primary", "gene")
    assert res.exit_code == 0, res.output
    return d, out, causal, res


def test_gene_primary_trains_predicts_and_reads_out_genes(gene_run, cli, tmp_path):
    from genointerp.capsule.interpret import gene_groups, gene_index

    d, m, causal, res = gene_run
    cfg = json.loads((m / "config.json").read_text())
    columns = cfg["features"]["columns"]
    genes = [name for name, _ in gene_groups(columns)]
    assert cfg["model"]["primary"] == "gene" and cfg["model"]["gene_index"] == gene_index(columns)
    assert "gene_score" in cfg["interpretation"] and "gene capsules' coupling; decisive genes:" in res.stderr
    # coupling.tsv: one row per gene capsule, named by its gene, a distribution over the classes
    coupling = read_tsv(m / "coupling.tsv")
    assert [r["gene"] for r in coupling] == genes and [r["primary"] for r in coupling] == [str(i) for i in range(len(genes))]
    for row in coupling:
        assert float(row["c[case|case]"]) + float(row["c[control|case]"]) == pytest.approx(1, abs=2e-6)
    # genes.tsv ranks every gene by its capsule's coupling to the true class, less 1/2
    ranked = read_tsv(m / "genes.tsv")
    assert sorted(f"{r['chrom']}:{r['gene']}" for r in ranked) == sorted(genes)
    by_gene = {r["gene"]: r for r in coupling}
    for r in ranked:
        c = by_gene[f"{r['chrom']}:{r['gene']}"]
        want = (float(c["c[case|case]"]) + float(c["c[control|control]"])) / 2 - 0.5
        assert float(r["score"]) == pytest.approx(want, abs=2e-6)
    # the phenotype is carrier status of one SNP: its gene's capsule routes by class the most
    causal_genes = read_tsv(d / "pcs" / "snps.tsv")[causal]["genes"].split(",")
    assert ranked[0]["gene"] in causal_genes and ranked[0]["decisive"] == "yes", (ranked[:3], causal_genes)
    # gene capsules also report the norm of each gene's PC -> capsule map (test_capsule_model checks its value)
    assert all(float(r["map_norm"]) >= 0 for r in ranked)
    # capsule-predict rebuilds the gene capsules from config.json and reproduces the test predictions
    out = tmp_path / "pred.tsv"
    assert cli("capsule-predict", m, d / "pcs", "-o", out).exit_code == 0
    pred = {r["sample"]: r for r in read_tsv(out)}
    for row in read_tsv(m / "test_predictions.tsv"):
        assert {k: pred[row["sample"]][k] for k in ("p_case", "p_control", "call")} == \
            {k: row[k] for k in ("p_case", "p_control", "call")}


@pytest.mark.parametrize("edit,message", [
    # two genes' columns swapped: gene capsules would read another gene's PCs
    (lambda c: c["features"]["columns"].insert(0, c["features"]["columns"].pop()),
     "config.json: the model's gene_index does not group its 'features' columns by gene"),
    # (genes_off emptied too: a conv config with a gene screen's genes is refused before the weights)
    (lambda c: c["model"].update(primary="conv", genes_off=[], columns_off=[]), "weights do not match config.json"),
    (lambda c: c["model"].update(primary="dense"), "model configuration: primary must be one of conv, gene, not 'dense'"),
    (lambda c: c["model"]["gene_index"].pop(), "model configuration: gene_index gives the gene of"),
])
def test_a_gene_model_whose_config_does_not_match_is_one_error_line(edit, message, gene_run, cli, tmp_path):
    d, m, _, _ = gene_run
    shutil.copytree(m, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    edit(config)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    res = cli("capsule-predict", tmp_path / "m", d / "pcs", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, message)


def test_gene_primary_is_the_default_deterministic_and_refuses_conv_only_options(tmp_path, cli):
    feats, pheno = write_cohort(tmp_path, *cohort(60, 4))
    quick = [a for a in QUICK if a not in ("--primary", "conv")]
    args = ["capsule-train", feats, "-p", pheno, *quick]
    for name in ("a", "b"):
        assert cli(*args, "-o", tmp_path / name).exit_code == 0
    assert json.loads((tmp_path / "a" / "config.json").read_text())["model"]["primary"] == "gene"
    for path in (tmp_path / "a").iterdir():
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name
    res = cli(*args, "--primary-capsule", 2, "-o", tmp_path / "c")
    assert res.exit_code == 2 and "--primary-capsule picks a conv capsule" in res.stderr
    res = cli("capsule-train", feats, "-p", pheno, *QUICK, "--primary", "dense", "-o", tmp_path / "c")
    assert res.exit_code == 2 and "expected one of conv, gene, got 'dense'" in res.stderr
    assert not (tmp_path / "c").exists()


def test_training_defaults_follow_the_primary_kind_and_the_gene_penalty_needs_gene_capsules(tmp_path, cli):
    feats, pheno = write_cohort(tmp_path, *cohort(60, 4))
    base = ["capsule-train", feats, "-p", pheno, "--folds", "2", "--no-baselines", "--test-fraction", "0"]
    assert cli(*base, "--epochs", "2", "-o", tmp_path / "g").exit_code == 0
    assert cli(*base, "--epochs", "2", "--primary", "conv", "--hidden", "16", "--kernel-size", "5",
               "-o", tmp_path / "c").exit_code == 0
    training = {k: json.loads((tmp_path / k / "config.json").read_text())["training"] for k in "gc"}
    # gene capsules: the group penalty and the longer schedule it needs; conv: the paper's settings, no penalty
    keys = ("gene_penalty", "lr", "patience", "pair_screen")
    assert {k: training["g"][k] for k in keys} == {"gene_penalty": 0.0012, "lr": 3e-3, "patience": 20, "pair_screen": True}
    assert {k: training["c"][k] for k in keys} == {"gene_penalty": 0.0, "lr": 1e-3, "patience": 10, "pair_screen": False}
    assert training["g"]["epochs"] == 2  # a given value wins over the kind's default
    res = cli(*base, "--primary", "conv", "--gene-penalty", "0.01", "-o", tmp_path / "x")
    assert res.exit_code == 2 and "--gene-penalty" in res.stderr and "use --primary gene" in res.stderr
    assert not (tmp_path / "x").exists()
    # an explicit 0 turns the penalty off for gene capsules, and with it the pair screen it would spare a pair from
    assert cli(*base, "--epochs", "2", "--gene-penalty", "0", "-o", tmp_path / "z").exit_code == 0
    training = json.loads((tmp_path / "z" / "config.json").read_text())["training"]
    assert (training["gene_penalty"], training["pair_screen"]) == (0.0, False)


def test_pair_screen_is_on_by_default_records_the_spared_pair_and_needs_gene_capsules(tmp_path, cli):
    # 300 samples: the pair test scores a product of two PCs only where 20 samples' worth carry it (one
    # of two normal PCs has n / 9 effective samples)
    features, y = cohort(300, 4)
    # XOR of G0's and G2's pc1 on top of the cohort's G1 signal: the screen's best pair is G0, G2
    x = features.matrix
    y = ((x[:, 0] > 0) ^ (x[:, 4] > 0)).astype(int)
    feats, pheno = write_cohort(tmp_path, features, y)
    base = ["capsule-train", feats, "-p", pheno, "--folds", "2", "--no-baselines", "--test-fraction", "0", "--epochs", "2"]
    res = cli(*base, "-o", tmp_path / "m")
    assert res.exit_code == 0 and "pair screen: the final model spared chr1:G0 and chr1:G2" in res.stderr
    training = json.loads((tmp_path / "m" / "config.json").read_text())["training"]
    assert training["pair_screen"] is True and training["screened_pair"] == ["chr1:G0", "chr1:G2"]
    # the pair's interaction table: an XOR puts the cases on one diagonal, here where exactly one gene's axis
    # is high (each axis's sign is a convention: this data's; not every case, as the axes are estimated from
    # 120 rows and samples near a median can land in the wrong cell)
    cells = [line.split("\t") for line in (tmp_path / "m" / "pair.tsv").read_text().splitlines()]
    assert cells[0] == ["gene_a", "axis_a", "gene_b", "axis_b", "samples", "cases", "case_rate"]
    assert {r[0] for r in cells[1:]} == {"chr1:G0"} and {r[2] for r in cells[1:]} == {"chr1:G2"}
    one_high = [float(r[6]) for r in cells[1:] if (r[1] == "high") != (r[3] == "high")]
    both_or_neither = [float(r[6]) for r in cells[1:] if (r[1] == "high") == (r[3] == "high")]
    assert min(one_high) >= 0.75 and max(both_or_neither) <= 0.25
    assert sum(int(r[4]) for r in cells[1:]) == training["n_train"]
    assert "interacting pair chr1:G0 x chr1:G2: the score test of its PCs' products reaches z = " in res.stderr
    interaction = json.loads((tmp_path / "m" / "config.json").read_text())["interaction"]
    assert interaction["genes"] == ["chr1:G0", "chr1:G2"] and interaction["interacting"] is True
    assert interaction["pairs"] == 6 and interaction["z"] > interaction["chance_z"]
    assert "interacting pair: chr1:G0 x chr1:G2" in res.stderr.splitlines()[-1]  # the closing "wrote" line
    # an interacting pair gets a pair capsule in the final model (and in every fold's): one more primary
    # capsule, last, fed by the two genes' PCs and their products; genes.tsv still ranks the 4 genes
    model = json.loads((tmp_path / "m" / "config.json").read_text())["model"]
    assert model["pair"] == [0, 2]
    coupling = [line.split("\t") for line in (tmp_path / "m" / "coupling.tsv").read_text().splitlines()]
    assert [r[1] for r in coupling[1:]] == ["chr1:G0", "chr1:G1", "chr1:G2", "chr1:G3", "chr1:G0xchr1:G2"]
    assert len((tmp_path / "m" / "genes.tsv").read_text().splitlines()) == 1 + 4
    assert cli(*base, "--no-pair-screen", "-o", tmp_path / "n").exit_code == 0
    assert json.loads((tmp_path / "n" / "config.json").read_text())["model"]["pair"] == []
    assert "screened_pair" not in json.loads((tmp_path / "n" / "config.json").read_text())["training"]
    assert not (tmp_path / "n" / "pair.tsv").exists()
    res = cli(*base, "--pair-screen", "--primary", "conv", "-o", tmp_path / "x")
    assert res.exit_code == 2 and "--pair-screen" in res.stderr and not (tmp_path / "x").exists()
    res = cli(*base, "--pair-screen", "--gene-penalty", "0", "-o", tmp_path / "x")
    assert res.exit_code == 2 and "turns the penalty off" in res.stderr and not (tmp_path / "x").exists()


def test_predict_applies_the_pair_capsule_as_trained(tmp_path, cli):
    # the XOR cohort of the test above, with a test set: capsule-predict rebuilds the pair capsule from
    # config.json and scores the test samples exactly as capsule-train did
    features, _ = cohort(300, 4)
    x = features.matrix
    feats, pheno = write_cohort(tmp_path, features, ((x[:, 0] > 0) ^ (x[:, 4] > 0)).astype(int))
    res = cli("capsule-train", feats, "-p", pheno, "--folds", "2", "--no-baselines", "--epochs", "2", "-o", tmp_path / "m")
    assert res.exit_code == 0 and json.loads((tmp_path / "m" / "config.json").read_text())["model"]["pair"] == [0, 2]
    assert cli("capsule-predict", tmp_path / "m", feats, "-o", tmp_path / "p.tsv").exit_code == 0
    predicted = {r["sample"]: r for r in read_tsv(tmp_path / "p.tsv")}
    test = read_tsv(tmp_path / "m" / "test_predictions.tsv")
    assert test and all(predicted[r["sample"]]["p_case"] == r["p_case"] for r in test)
