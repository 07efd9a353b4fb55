"""The pair test's additive null model: how firmly it fits the genes' additive effects, and the
per-gene burden columns it takes beside the Gene-PCs (capsule-train --burden-maf)."""

import numpy as np

from genointerp.capsule import pair_screen


def burden_cohort(seed: int, n: int = 3000, genes: int = 10, rare: int = 8, common: int = 2, h2: float = 0.9,
                  rare_maf: tuple[float, float] = (0.01, 0.05), cooccur: float = 0.0):
    """A cohort of `genes` genes of `rare` low-frequency SNPs (MAF uniform in `rare_maf`, 0.01-0.05) and
    `common` common ones (0.1-0.5), each gene's columns all its PCs; cases above the median liability,
    where genes 0 and 1 add up through their burdens (copies of their low-frequency alleles) and,
    with `cooccur` > 0, genes 2 and 3 co-occur: carriers of both (a low-frequency allele of each)
    get `cooccur` times the additive part's sd more (the two parts standardised). Returns
    (x (n, F) standardised, y (n,), the genes' column indices, the burdens (n, genes) standardised)."""
    rng = np.random.default_rng(seed)
    blocks, burdens = [], []
    for _ in range(genes):
        maf = np.concatenate([rng.uniform(*rare_maf, size=rare), rng.uniform(0.1, 0.5, size=common)])
        d = rng.binomial(2, maf, size=(n, rare + common)).astype(np.float64)
        z = (d - d.mean(0)) / d.std(0)
        u, s, _ = np.linalg.svd(z, full_matrices=False)
        blocks.append(u * s)
        burdens.append(d[:, :rare].sum(1))
    sizes = np.cumsum([0] + [b.shape[1] for b in blocks])
    x = np.hstack(blocks)
    x = (x - x.mean(0)) / x.std(0)
    copies = np.stack(burdens, 1)
    b = (copies - copies.mean(0)) / copies.std(0)
    g = b[:, 0] + b[:, 1]
    if cooccur:
        both = ((copies[:, 2] > 0) & (copies[:, 3] > 0)).astype(np.float64)
        g = g / g.std() + cooccur * (both - both.mean()) / both.std()
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
        found = pair_screen.interaction_screen(x, y, genes, seed)
    assert found.ranked()[0][:2] == ((0, 1), "products") and found.ranked()[0][2] > found.block_bar
    # the null as it is, with each gene's burden column beside its PCs (one more direction along the
    # burden, so the fit no longer shrinks it away): the two additive genes stay within chance in both
    # families of the test
    found = pair_screen.interaction_screen(x, y, genes, seed, covariates=burden, covariate_genes=range(len(genes)))
    pair, family, z, bar = found.ranked()[0]
    assert abs(z) < bar
    i = found.pairs.index((0, 1))
    assert found.block_z[i] < found.block_bar and abs(found.score_z[i]) < found.score_bar
    # nor in the burden family, whose product is of these two genes' carrier indicators: the null
    # refitted along every carrier column holds their main effects (measured: |z| 1.8 against 4.2)
    assert abs(found.burden_z[i]) < found.burden_bar


def test_the_burden_family_finds_a_co_occurrence_of_two_burdens_that_the_other_families_miss():
    """Genes 2 and 3 co-occur through their carriers (MAF 0.005-0.02 alleles, 18 and 21 % carriers,
    both 4 %), beside two additive burden genes. A gene's own effect is weak here (each acts where the
    other's carrier state is at hand), so the null's fitted score axes for them are noisy, and the
    rank-1 family's product of those scores stays under its bar, as the PC-block family does; the
    product of the two genes' carrier indicators, an axis no phenotype chose, is past its own
    (measured: blocks 2.8 against 3.4, scores 3.2 against 3.7, burdens 9.4 against 6.5). That bar is
    high because every permutation's best is the two strong additive genes' product (|z| 5.2-6.1: the
    permutations keep each stratum of risk's residuals, which the real residuals offset within the
    strata: |z| 2.7 in the data): a cost in power, not a call. Every pair's carrier product rests on enough
    samples here (4 % and more carry both: the copy counts' product of genes 1 and 4 rested on 16
    samples' worth). Without the burden columns the family is not there, and the PC-block family
    keeps its whole level."""
    seed = 1
    x, y, genes, burden = burden_cohort(seed, h2=0.8, rare_maf=(0.005, 0.02), cooccur=1.0)
    found = pair_screen.interaction_screen(x, y, genes, seed, covariates=burden, covariate_genes=range(len(genes)))
    i = found.pairs.index((2, 3))
    assert found.block_z[i] < found.block_bar and abs(found.score_z[i]) < found.score_bar
    assert found.ranked()[0][:2] == ((2, 3), "burdens") and found.burden_z[i] > found.burden_bar + 2
    assert found.tested("burdens") == 45
    assert found.block_alpha == pair_screen.BLOCK_ALPHA - pair_screen.BURDEN_ALPHA
    assert found.level("burdens") == pair_screen.BURDEN_ALPHA
    plain = pair_screen.interaction_screen(x, y, genes, seed)
    assert plain.burden_z is None and plain.tested("burdens") == 0 and plain.block_alpha == pair_screen.BLOCK_ALPHA
    assert plain.ranked()[0][1] != "burdens"


def test_carrier_indicators_are_read_from_the_standardised_copies():
    """The burden family multiplies carrier indicators, read from the burden columns as the pair test
    gets them (standardised): one copy is the step from the lowest value to the commonest above it,
    and a carrier is half a copy or more above the lowest; a missing call's expected copies (2 MAF,
    here 0.1 and 0.04) stay under it. A column nobody carries gives 0s."""
    copies = np.array([0, 0, 0, 0, 1, 1, 1, 2, 3, 0.1, 0.04, 0])
    carrier = (copies >= 1).astype(np.float64)
    got = pair_screen.carrier_columns(np.column_stack([(copies - copies.mean()) / copies.std(), np.zeros(12)]))
    np.testing.assert_allclose(got[:, 0], (carrier - carrier.mean()) / carrier.std(), rtol=1e-12)
    assert got[:, 1].tolist() == [0.0] * 12


def test_the_burden_family_tests_only_pairs_with_two_burden_columns_that_enough_samples_carry():
    rng = np.random.default_rng(0)
    n = 400
    scores = rng.normal(size=(n, 4))
    y = (scores[:, 0] + rng.normal(size=n) > 0).astype(np.int64)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    common = rng.binomial(2, 0.3, size=(n, 2)).astype(np.float64)  # copies: about half carry one
    common = (common - common.mean(0)) / common.std(0)
    # genes 0 and 2 have a burden column; gene 3's is carried by 3 samples: (0, 3) and (2, 3) rest on
    # under MIN_EFFECTIVE (20) effective samples; gene 1 has none
    lone = np.zeros(n)
    lone[:3] = 1.0
    lone = (lone - lone.mean()) / lone.std()
    z, bar = pair_screen.burden_family(scores, np.column_stack([common, lone]), [0, 2, 3], y, pairs, 1, 0.01)
    assert np.isnan(z).tolist() == [True, False, True, True, True, True] and np.isfinite(bar)
    z, bar = pair_screen.burden_family(scores, common[:, :1], [0], y, pairs, 1, 0.01)
    assert np.isnan(z).all() and bar == np.inf


def test_the_rank_1_family_refits_the_null_along_the_genes_scores():
    """The product of two strong additive genes' fitted scores against the shrunk null's residuals
    looks like an interaction (the lesson of the second family's first try: additive cohorts called
    at z 5-11); against the null refitted along every gene's score, with the product projected on
    that refit, it does not."""
    seed = 1
    x, y, genes, _ = burden_cohort(seed)
    owner = np.concatenate([np.full(len(cols), g) for g, cols in enumerate(genes)])
    r, scores = pair_screen.null_fit(x, y, pair_screen._screen_split(y, seed), 3, owner, len(genes))
    raw = pair_screen.score_zs((scores[:, 0] * scores[:, 1])[:, None], r)[0]
    found = pair_screen.interaction_screen(x, y, genes, seed)
    refitted = found.score_z[found.pairs.index((0, 1))]
    # measured: raw -11.0; refitted -1.2 against a bar of 4.3 (a |z| bar for 45 pairs at the family's
    # level 0.005: Bonferroni's Gaussian Phi^-1(1 - 0.0025 / 45) = 3.86, more for the heavy products)
    assert abs(raw) > 8 and abs(refitted) < 2.5 < found.score_bar
    assert np.abs(found.score_z).max() < found.score_bar


def test_capsule_train_gives_the_pair_tests_null_the_burden_columns(tmp_path, cli):
    """capsule-train --burden-maf: config.json's interaction says the null model carried one burden
    column per gene with 2 or more low-frequency SNPs (null_covariates), and none with --burden-maf 0;
    the default (auto) is 0.05 here, where the folder holds dosages; the planted XOR pair is found
    every way, the same with -t 1 and -t 2."""
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
    for name, extra in (("plain", ["--burden-maf", "0"]), ("burden", ["--burden-maf", "0.05"]),
                        ("burden2", ["--burden-maf", "0.05", "-t", "2"]), ("default", [])):
        res = cli(*base, *extra, "-o", tmp_path / name)
        assert res.exit_code == 0, res.output
        found[name] = json.loads((tmp_path / name / "config.json").read_text())["interaction"]
    assert found["plain"]["null_covariates"] == 0 and found["burden"]["null_covariates"] == 3
    for evidence in found.values():
        assert evidence["genes"] == ["chr1:G0", "chr1:G2"] and evidence["interacting"] is True
    assert found["burden2"] == found["burden"] == found["default"]


def co_occurrence_cohort(tmp_path):
    """1,000 samples of 6 genes x 12 PCs: genes 0 and 1 add, genes 2 and 3 co-occur (one random
    direction u_g of each gene's PCs, the case rate raised where both are high). Returns (the feature
    folder, pheno.tsv, u (6, 12))."""
    from genointerp.io.features import Features, write_features

    rng = np.random.default_rng(2)
    n, genes, k = 1000, 6, 12
    x = rng.normal(size=(n, genes * k))
    u = rng.normal(size=(genes, k))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    s = np.stack([x[:, g * k:(g + 1) * k] @ u[g] for g in range(genes)], 1)
    li = s[:, 0] + s[:, 1] + 2.0 * ((s[:, 2] > 0) & (s[:, 3] > 0)) + 0.5 * rng.normal(size=n)
    y = li > np.median(li)
    samples = [f"S{i:03d}" for i in range(n)]
    folder = tmp_path / "feats"
    folder.mkdir()
    write_features(folder, Features(samples, [f"chr1:G{g}:pc{j + 1}" for g in range(genes) for j in range(k)],
                                    x.astype(np.float32)))
    (tmp_path / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{name}\t{'case' if v else 'control'}\n" for name, v in zip(samples, y)))
    return folder, tmp_path / "pheno.tsv", u


def test_capsule_train_reports_a_co_occurrence_of_many_pc_genes_through_the_rank_1_family(tmp_path, cli):
    """Two genes of 12 PCs each whose scores (one random direction of each gene's PCs) raise the case
    rate together (co-occurrence of their high states) beside two additive genes. The PC-block family
    barely sees it: a 12 x 12 block's largest singular value has a median of 6.27 by chance, and on all
    1,000 rows the pair's block z is 2.0 against its bar of 1.7; the rank-1 family (the product of the
    two genes' additive scores) sees it plainly, 5.9 against 3.1 (measured). capsule-train, on its 800
    training rows, reports the pair from the scores family (z 5.66 against 3.5), the same with -t 1
    and -t 2."""
    import json

    folder, _, _ = co_occurrence_cohort(tmp_path)
    base = ["capsule-train", folder, "-p", tmp_path / "pheno.tsv", "--folds", "2", "--no-baselines", "--epochs", "2"]
    found = {}
    for threads in ("1", "2"):
        res = cli(*base, "-t", threads, "-o", tmp_path / threads)
        assert res.exit_code == 0, res.output
        found[threads] = json.loads((tmp_path / threads / "config.json").read_text())["interaction"]
    evidence = found["1"]
    assert evidence["genes"] == ["chr1:G2", "chr1:G3"] and evidence["test"] == "scores"
    assert evidence["interacting"] is True and abs(evidence["z"]) > evidence["chance_z"]
    assert found["2"] == found["1"]


def test_the_pair_capsule_reads_the_pairs_additive_score_axes_as_trained(tmp_path, cli):
    """The co-occurrence cohort above, with a test set: the final model's pair capsule gets the product
    of the two genes' additive scores, each gene's axis fitted on the training rows and saved in
    config.json (model.pair_axes, 12 weights each), and, the pair being called from the scores family,
    not the 144 PC products (model.pair_products false). Each axis points along the planted direction u_g
    of its gene's PCs (the only direction of the gene that moves the case rate, so an additive fit
    finds it up to noise in the 11 others: cosine 0.92-0.96 for fits on 800 of the rows, where the two
    genes that do nothing get -0.49 to 0.23; the bar 0.9). capsule-predict applies the
    saved axes with no refit and gives the test predictions capsule-train wrote, byte for byte; -t 1
    and -t 2 give the same model."""
    import json

    from conftest import read_tsv

    folder, pheno, u = co_occurrence_cohort(tmp_path)
    base = ["capsule-train", folder, "-p", pheno, "--folds", "2", "--no-baselines", "--epochs", "20"]
    for threads in ("1", "2"):
        res = cli(*base, "-t", threads, "-o", tmp_path / threads)
        assert res.exit_code == 0, res.output
    model = json.loads((tmp_path / "1" / "config.json").read_text())["model"]
    assert model["pair"] == [2, 3] and [len(axis) for axis in model["pair_axes"]] == [12, 12]
    assert model["pair_products"] is False
    for axis, planted in zip(model["pair_axes"], u[[2, 3]]):
        assert np.dot(axis, planted) / np.linalg.norm(axis) > 0.9
    for name in ("config.json", "model.safetensors", "test_predictions.tsv"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
    assert cli("capsule-predict", tmp_path / "1", folder, "-o", tmp_path / "p.tsv").exit_code == 0
    predicted = {r["sample"]: r for r in read_tsv(tmp_path / "p.tsv")}
    test = read_tsv(tmp_path / "1" / "test_predictions.tsv")
    assert len(test) == 200 and all(predicted[r["sample"]]["p_case"] == r["p_case"] for r in test)
