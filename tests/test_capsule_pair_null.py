"""The pair test's additive null model: how firmly it fits the genes' additive effects, and the
per-gene burden columns it takes beside the Gene-PCs (capsule-train --burden-maf)."""

import numpy as np

from genointerp.capsule import pair_screen


def burden_cohort(seed: int, n: int = 3000, genes: int = 10, rare: int = 8, common: int = 2, h2: float = 0.9):
    """A cohort of `genes` genes of `rare` low-frequency SNPs (MAF 0.01-0.05) and `common` common ones
    (0.1-0.5), each gene's columns all its PCs; cases above the median liability, where genes 0 and 1
    add up through their burdens (copies of their low-frequency alleles) and nothing interacts.
    Returns (x (n, F) standardised, y (n,), the genes' column indices, the burdens (n, genes) standardised)."""
    rng = np.random.default_rng(seed)
    blocks, burdens = [], []
    for _ in range(genes):
        maf = np.concatenate([rng.uniform(0.01, 0.05, size=rare), rng.uniform(0.1, 0.5, size=common)])
        d = rng.binomial(2, maf, size=(n, rare + common)).astype(np.float64)
        z = (d - d.mean(0)) / d.std(0)
        u, s, _ = np.linalg.svd(z, full_matrices=False)
        blocks.append(u * s)
        burdens.append(d[:, :rare].sum(1))
    sizes = np.cumsum([0] + [b.shape[1] for b in blocks])
    x = np.hstack(blocks)
    x = (x - x.mean(0)) / x.std(0)
    b = np.stack(burdens, 1)
    b = (b - b.mean(0)) / b.std(0)
    g = b[:, 0] + b[:, 1]
    liability = np.sqrt(h2) * g / g.std() + np.sqrt(1 - h2) * rng.normal(size=n)
    return x, (liability > np.median(liability)).astype(np.int64), [np.arange(a, e) for a, e in zip(sizes, sizes[1:])], b


def test_two_additive_burden_genes_do_not_look_interacting_to_the_null_that_fits_them(monkeypatch):
    seed = 1
    x, y, genes, burden = burden_cohort(seed)
    # every gene's PCs carry its burden whole (all its PCs are kept here)
    for g in range(len(genes)):
        fit = np.linalg.lstsq(x[:, genes[g]], burden[:, g], rcond=None)[0]
        assert np.corrcoef(x[:, genes[g]] @ fit, burden[:, g])[0, 1] > 0.999
    # the null model as it was (C 0.01 on the PCs alone) shrank the two genes' weights, spread over
    # their low-frequency axes; the part of each gene's effect it left in the residuals, bent by the
    # logistic link, made the two genes' skewed axes look like a product: the pair passed its bar
    with monkeypatch.context() as old:
        old.setattr(pair_screen, "NULL_C", 0.01)
        screened, bar = pair_screen.interaction_screen(x, y, genes, seed)
    assert screened[0][0] == (0, 1) and screened[0][1] > bar
    # the null as it is, with each gene's burden column beside its PCs (one more direction along the
    # burden, so the fit no longer shrinks it away): the two additive genes stay within chance
    screened, bar = pair_screen.interaction_screen(x, y, genes, seed, covariates=burden)
    assert screened[0][1] < bar and dict(screened)[(0, 1)] < bar


def test_capsule_train_gives_the_pair_tests_null_the_burden_columns(tmp_path, cli):
    """capsule-train --burden-maf: config.json's interaction says the null model carried one burden
    column per gene with 2 or more low-frequency SNPs (null_covariates), and none without it; the
    planted XOR pair is found either way, the same with -t 1 and -t 2."""
    import json

    from genointerp.io.features import SNP_COLUMNS, Features, write_features

    rng = np.random.default_rng(3)
    n, genes = 300, 4
    x = rng.normal(size=(n, 2 * genes)).astype(np.float32)
    y = ((x[:, 0] > 0) ^ (x[:, 4] > 0)).astype(int)  # XOR of G0's and G2's pc1
    samples = [f"S{i:03d}" for i in range(n)]
    folder = tmp_path / "feats"
    folder.mkdir()
    write_features(folder, Features(samples, [f"chr1:G{g}:pc{k}" for g in range(genes) for k in (1, 2)], x))
    # three SNPs of MAF about 0.03 in each of G0, G1, G2 and one in G3 (too few for a burden column)
    snps = [(g, 100 * g + j) for g in range(3) for j in range(3)] + [(3, 300)]
    np.save(folder / "dosages.npy", rng.binomial(2, 0.03, size=(n, len(snps))).astype(np.int8))
    (folder / "snps.tsv").write_text("\t".join(SNP_COLUMNS) + "\n" + "".join(
        f"chr1:{pos}:A:G\tchr1\t{pos}\tA\tG\tG{g}\n" for g, pos in snps))
    (tmp_path / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if v else 'control'}\n" for s, v in zip(samples, y)))
    base = ["capsule-train", folder, "-p", tmp_path / "pheno.tsv", "--folds", "2", "--no-baselines", "--epochs", "2"]
    found = {}
    for name, extra in (("plain", []), ("burden", ["--burden-maf", "0.05"]), ("burden2", ["--burden-maf", "0.05", "-t", "2"])):
        res = cli(*base, *extra, "-o", tmp_path / name)
        assert res.exit_code == 0, res.output
        found[name] = json.loads((tmp_path / name / "config.json").read_text())["interaction"]
    assert found["plain"]["null_covariates"] == 0 and found["burden"]["null_covariates"] == 3
    for evidence in found.values():
        assert evidence["genes"] == ["chr1:G0", "chr1:G2"] and evidence["interacting"] is True
    assert found["burden2"] == found["burden"]
