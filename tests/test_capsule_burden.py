"""capsule-train --burden-maf: one burden column per gene (genointerp/capsule/burden.py), computed by
capsule-predict from a new cohort's dosages as in training."""

import json

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line, read_tsv, run_cli
from genointerp.capsule.burden import burden_matrix, burden_plan, snp_genes, with_burden
from genointerp.errors import InputError
from genointerp.io.features import Dosages, Features, read_dosages, read_features


def hand_dosages() -> tuple[Dosages, list[list[str]]]:
    """10 samples (20 alleles). Gene 1:A: a1 one ALT copy (sample 0: MAF 0.05, ALT minor), a2 ALT in
    every sample but sample 1 (MAF 0.1, REF minor: sample 1 carries 2 minor copies), a3 common (MAF
    0.5), c1 shared with 1:C (sample 4 one ALT copy, sample 3 missing: MAF 1/18); 1:B one rare SNP
    only; 2:A (another chromosome) one rare SNP; m1 monomorphic."""
    d = np.zeros((10, 6), dtype=np.int8)
    d[0, 0] = 1                               # a1
    d[:, 1] = 2; d[1, 1] = 0                  # a2
    d[:5, 2] = 2                              # a3: 10 of 20 alleles
    d[2, 3] = 1                               # b1
    d[4, 4] = 1; d[3, 4] = -1                 # c1
    snps = ["1:10:A:G", "1:20:C:T", "1:30:G:A", "1:40:T:C", "1:50:A:C", "1:60:A:T"]
    chrom = ["1"] * 6
    genes = [["A"], ["A"], ["A"], ["B"], ["A", "C"], ["A"]]
    # a 7th SNP on chromosome 2, gene A, rare in sample 5
    d = np.hstack([d, np.eye(10, dtype=np.int8)[:, [5]]])
    snps.append("2:10:G:C"), chrom.append("2"), genes.append(["A"])
    d[:, 5] = 0  # m1 monomorphic
    return Dosages(d, snps, chrom, np.array([10, 20, 30, 40, 50, 60, 10])), genes


def test_the_plan_takes_each_genes_rare_snps_with_their_minor_alleles():
    dosages, genes = hand_dosages()
    plan = burden_plan(dosages, genes, ["1:A", "1:B", "1:C"], 0.2)
    # 1:B and 1:C have one rare SNP each (no column); a3 is common, m1 monomorphic, 2:10 another chromosome
    assert [g["column"] for g in plan] == ["1:A:burden"]
    assert plan[0]["snps"] == ["1:10:A:G", "1:20:C:T", "1:50:A:C"]
    assert plan[0]["alt_minor"] == [True, False, True]
    assert plan[0]["maf"] == pytest.approx([0.05, 0.1, 1 / 18])
    # minor copies: sample 0 a1's one, sample 1 a2's two REF copies, sample 3 c1's missing call at its
    # expected copies 2/18, sample 4 c1's one
    want = np.zeros(10)
    want[[0, 1, 3, 4]] = [1, 2, 2 / 18, 1]
    np.testing.assert_allclose(burden_matrix(dosages, plan, "x")[:, 0], want, rtol=1e-6)
    # below MAF 0.08 only a1 and c1 are rare: still two SNPs
    assert burden_plan(dosages, genes, ["1:A"], 0.08)[0]["snps"] == ["1:10:A:G", "1:50:A:C"]
    assert burden_plan(dosages, genes, ["1:A"], 0.06) == burden_plan(dosages, genes, ["1:A"], 0.08)
    assert burden_plan(dosages, genes, ["1:A"], 0.05) == []  # a1 is at 0.05, not below it: one SNP left


def test_burden_columns_are_appended_and_a_missing_snp_is_an_error():
    dosages, genes = hand_dosages()
    plan = burden_plan(dosages, genes, ["1:A"], 0.2)
    features = Features([f"S{i}" for i in range(10)], ["1:A:pc1"], np.zeros((10, 1), np.float32))
    out = with_burden(features, dosages, plan, "x")
    assert out.columns == ["1:A:pc1", "1:A:burden"] and out.matrix.dtype == np.float32
    assert with_burden(features, dosages, [], "x") is features
    fewer = Dosages(dosages.matrix[:, 1:], dosages.snps[1:], dosages.chrom[1:], dosages.pos[1:])
    with pytest.raises(InputError, match="1 SNP\\(s\\) of the model's burden columns are not in its dosages, e.g. "
                                         "'1:10:A:G'"):
        burden_matrix(fewer, plan, "new")


def test_the_pair_test_reads_the_pcs_only():
    from genointerp.capsule.fit import pcs_only
    from genointerp.models.capsule import CapsuleConfig

    config = CapsuleConfig(n_features=5, primary="gene", gene_index=(0, 0, 1, 0, 1))
    x = np.arange(10.0).reshape(2, 5)
    xp, cp = pcs_only(x, config, 2)
    assert xp.tolist() == x[:, :3].tolist() and cp.gene_index == (0, 0, 1) and cp.n_features == 3
    assert pcs_only(x, config, 0) == (x, config)


@pytest.fixture(scope="module")
def burden_run(tmp_path_factory):
    """gene-pca --keep-dosages on the 1000 Genomes fixture (60 samples; 7 genes with 2 or more SNPs of
    MAF under 0.05), a phenotype of one such gene's rare-allele carriers, capsule-train --burden-maf 0.05."""
    d = tmp_path_factory.mktemp("burden")
    res = run_cli("gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "-g", str(DATA / "genes_chr21_22.bed"),
                  "--keep-dosages", "-o", str(d / "pcs"))
    assert res.exit_code == 0, res.output
    samples = json.loads((d / "pcs" / "features.json").read_text())["samples"]
    y = np.arange(len(samples)) % 2
    (d / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if c else 'control'}\n" for s, c in zip(samples, y)))
    args = ["capsule-train", str(d / "pcs"), "-p", str(d / "pheno.tsv"), "--burden-maf", "0.05", "--no-baselines",
            "--folds", "2", "--epochs", "3", "--seed", "3"]
    res = run_cli(*args, "-o", str(d / "m"))
    assert res.exit_code == 0, res.output
    return d, args, res


def test_train_saves_the_plan_and_the_columns_and_predict_applies_them(burden_run, tmp_path):
    from genointerp.capsule.interpret import gene_groups

    d, args, res = burden_run
    cfg = json.loads((d / "m" / "config.json").read_text())
    pcs = read_features(d / "pcs")
    plan = burden_plan(read_dosages(d / "pcs", 60), snp_genes(d / "pcs"), [g for g, _ in gene_groups(pcs.columns)],
                       0.05)
    assert len(plan) == 7 and cfg["burden"] == {"maf_below": 0.05, "genes": plan}
    # the burden view (fit.pcs_screened_out) switched off PCs of genes with a burden column only (this
    # phenotype is no gene's, so few of those genes' PCs add at 0.05 on 60 samples); capsule-predict
    # below gives the test predictions again, so it reads the saved columns_off
    off, model = cfg["model"]["columns_off"], cfg["model"]
    with_column = {model["gene_index"][len(pcs.columns) + i] for i in range(len(plan))}
    assert cfg["training"]["burden_view"] == 0.05 and off
    assert all(j < len(pcs.columns) and model["gene_index"][j] in with_column for j in off)
    assert cfg["features"]["columns"] == pcs.columns + [g["column"] for g in plan]
    assert "burden columns: 7 of 74 genes have at least 2 SNPs of minor allele frequency under 0.05" in res.stderr
    # the scaler's means of the burden columns are the training rows' mean minor-allele copies
    split = read_tsv(d / "m" / "split.tsv")
    train = [i for i, r in enumerate(split) if r["set"] != "test"]
    burden = burden_matrix(read_dosages(d / "pcs", 60), plan, "x").astype(np.float64)
    np.testing.assert_allclose(cfg["scaler"]["mean"][len(pcs.columns):], burden[train].mean(0), rtol=1e-9)
    # capsule-predict computes the same columns from the folder's dosages: the test predictions again
    assert run_cli("capsule-predict", d / "m", d / "pcs", "-o", tmp_path / "p.tsv").exit_code == 0
    predicted = {r["sample"]: r for r in read_tsv(tmp_path / "p.tsv")}
    test = read_tsv(d / "m" / "test_predictions.tsv")
    assert test and all(predicted[r["sample"]]["p_case"] == r["p_case"] for r in test)
    # -t 2 writes the same bytes
    assert run_cli(*args, "-t", "2", "-o", str(tmp_path / "m2")).exit_code == 0
    for name in ("config.json", "model.safetensors", "test_predictions.tsv", "genes.tsv"):
        assert (tmp_path / "m2" / name).read_bytes() == (d / "m" / name).read_bytes(), name


def test_burden_view_0_keeps_every_pc_and_conv_capsules_refuse_it(burden_run, tmp_path):
    d, args, _ = burden_run
    assert run_cli(*args, "--burden-view", "0", "-o", str(tmp_path / "m")).exit_code == 0
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["training"]["burden_view"] == 0 and cfg["model"]["columns_off"] == []
    res = run_cli(*args, "--primary", "conv", "--burden-view", "0.01", "-o", str(tmp_path / "conv"))
    assert res.exit_code == 2 and "--burden-view" in res.stderr and not (tmp_path / "conv").exists()


def test_burden_without_dosages_is_one_error_line(burden_run, tmp_path):
    import shutil

    d, args, _ = burden_run
    shutil.copytree(d / "pcs", tmp_path / "pcs")
    for name in ("dosages.npy", "snps.tsv"):
        (tmp_path / "pcs" / name).unlink()
    res = run_cli("capsule-predict", d / "m", tmp_path / "pcs", "-o", tmp_path / "p.tsv")
    assert res.exit_code == 1 and not (tmp_path / "p.tsv").exists()
    assert_one_error_line(res, "the model reads per-gene burden columns (capsule-train --burden-maf), which need SNP "
                               "dosages: project the cohort with gene-pca --apply --keep-dosages")
    res = run_cli(*[str(tmp_path / "pcs") if a == str(d / "pcs") else a for a in args], "-o", str(tmp_path / "m"))
    assert res.exit_code == 1 and not (tmp_path / "m").exists()
    assert_one_error_line(res, "--burden-maf: ")


def test_burden_maf_auto_is_the_default_where_the_folder_holds_dosages(burden_run, tmp_path):
    """--burden-maf auto (the default): 0.05 (AUTO_BURDEN_MAF) where the feature folder holds SNP
    dosages and the primary capsules are gene capsules, so the fixture's run without the option is
    the burden run's byte for byte; none without dosages (an older folder trains as before, no error)
    or with the paper's conv capsules (their input stays the Gene-PCs)."""
    import shutil

    from genointerp.capsule.burden import AUTO_BURDEN_MAF

    assert AUTO_BURDEN_MAF == 0.05
    d, args, _ = burden_run
    default = [a for a in args if a not in ("--burden-maf", "0.05")]
    for name, given in (("default", default), ("auto", [*default, "--burden-maf", "auto"])):
        res = run_cli(*given, "-o", str(tmp_path / name))
        assert res.exit_code == 0, res.output
        assert "burden columns: 7 of 74 genes" in res.stderr
        for path in ("config.json", "model.safetensors", "test_predictions.tsv", "genes.tsv"):
            assert (tmp_path / name / path).read_bytes() == (d / "m" / path).read_bytes(), (name, path)
    off = run_cli(*default, "--burden-maf", "0", "-o", str(tmp_path / "off"))
    assert off.exit_code == 0 and "burden columns" not in off.stderr
    assert "burden" not in json.loads((tmp_path / "off" / "config.json").read_text())
    shutil.copytree(d / "pcs", tmp_path / "pcs")
    for name in ("dosages.npy", "snps.tsv"):
        (tmp_path / "pcs" / name).unlink()
    plain = run_cli(*[str(tmp_path / "pcs") if a == str(d / "pcs") else a for a in default], "-o", str(tmp_path / "p"))
    assert plain.exit_code == 0 and "burden columns" not in plain.stderr
    # without dosages auto is --burden-maf 0: the same model as the dosage folder's run with it off
    for path in ("model.safetensors", "test_predictions.tsv", "genes.tsv"):
        assert (tmp_path / "p" / path).read_bytes() == (tmp_path / "off" / path).read_bytes(), path
    conv = run_cli(*default, "--primary", "conv", "-o", str(tmp_path / "conv"))
    assert conv.exit_code == 0 and "burden columns" not in conv.stderr
    assert "burden" not in json.loads((tmp_path / "conv" / "config.json").read_text())


@pytest.mark.parametrize("value, message", [("often", "'often' is neither a number nor auto"),
                                            ("0.6", "0.6 is outside 0..0.5")])
def test_a_bad_burden_maf_is_one_error_line(burden_run, tmp_path, value, message):
    d, args, _ = burden_run
    res = run_cli(*[value if a == "0.05" else a for a in args], "-o", str(tmp_path / "m"))
    assert res.exit_code != 0 and message in res.stderr and not (tmp_path / "m").exists()
