"""The DiseaseCapsule pipeline on real genotypes, through the CLI: gene-pca (fit on training
samples) -> capsule-train -> gene-pca --apply -> capsule-predict."""

import gzip

import numpy as np

from conftest import DATA, assert_one_error_line, read_tsv
from genointerp.io.features import read_features

VCF, BED = DATA / "eur_chr21_22_small.vcf.gz", DATA / "genes_chr21_22.bed"
SMALL = ["--hidden", "16", "--capsule-channels", "4", "--capsule-dim", "4", "--kernel-size", "5", "--class-dim", "8",
         "--epochs", "40", "--lr", "0.01", "--folds", "2", "--batch-size", "16", "--seed", "3", "--no-baselines"]


def test_gene_pcs_of_real_genotypes_train_a_capsule_network_that_predicts_a_new_projection(cli, tmp_path):
    samples = [line.rstrip("\n").split("\t")[9:] for line in gzip.open(VCF, "rt") if line.startswith("#CHROM")][0]
    (tmp_path / "fit.txt").write_text("\n".join(samples[:48]) + "\n")
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--fit-samples", tmp_path / "fit.txt", "-o", tmp_path / "pcs")
    assert res.exit_code == 0, res.output
    feats = read_features(tmp_path / "pcs")

    # a phenotype driven by one real gene: cases carry the upper half of its first Gene-PC
    genes = read_tsv(tmp_path / "pcs" / "genes.tsv")
    causal = max(genes, key=lambda g: int(g["n_snps"]))["gene"]
    col = next(i for i, c in enumerate(feats.columns) if c.split(":")[1] == causal and c.endswith(":pc1"))
    score = feats.matrix[:, col]
    case = score > np.median(score)
    (tmp_path / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if c else 'control'}\n" for s, c in zip(feats.samples, case)))

    res = cli("-q", "capsule-train", tmp_path / "pcs", "-p", tmp_path / "pheno.tsv", "-o", tmp_path / "model", *SMALL)
    assert res.exit_code == 0, res.output
    ranked = read_tsv(tmp_path / "model" / "genes.tsv")
    assert ranked[0]["gene"] == causal  # the only informative gene scores highest

    # a new cohort projected on the training transform gives the training features exactly,
    # so capsule-predict gives byte-identical predictions on both
    res = cli("-q", "gene-pca", VCF, "--apply", tmp_path / "pcs", "-o", tmp_path / "applied")
    assert res.exit_code == 0, res.output
    for name in ("pcs", "applied"):
        res = cli("-q", "capsule-predict", tmp_path / "model", tmp_path / name, "-o", tmp_path / f"{name}.tsv")
        assert res.exit_code == 0, res.output
    assert (tmp_path / "pcs.tsv").read_bytes() == (tmp_path / "applied.tsv").read_bytes()
    calls = {r["sample"]: r["call"] == "case" for r in read_tsv(tmp_path / "applied.tsv")}
    accuracy = np.mean([calls[s] == c for s, c in zip(feats.samples, case)])
    assert accuracy >= 0.9, accuracy  # one feature separates the classes by construction

    # features of a fresh fit (other fit samples, the same genes) have other axes: the model knows
    # its transform (a digest of the loadings, recorded by gene-pca and kept by capsule-train) and
    # refuses them with one line, rather than scoring every sample on axes it was not trained on
    (tmp_path / "fit2.txt").write_text("\n".join(samples[12:]) + "\n")
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--fit-samples", tmp_path / "fit2.txt", "-o", tmp_path / "refit")
    assert res.exit_code == 0, res.output
    digests = {name: read_features(tmp_path / name).info.get("transform_sha256") for name in ("pcs", "applied", "refit")}
    assert digests["pcs"] == digests["applied"] != digests["refit"] and len(digests["refit"]) == 64
    res = cli("-q", "capsule-predict", tmp_path / "model", tmp_path / "refit", "-o", tmp_path / "refit.tsv")
    assert res.exit_code == 1 and not (tmp_path / "refit.tsv").exists()
    assert_one_error_line(res, "made by another gene-pca transform than the model's")
    assert "gene-pca --apply" in res.stderr
