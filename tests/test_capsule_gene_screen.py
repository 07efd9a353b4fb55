"""The gene screen (fit.gene_screen_p, fit.screened_out, CapsuleConfig.genes_off): genes whose
marginal score test does not reach the level, or whose columns add nothing to the genes kept before
them, are switched off before training, the pair test's pair kept; saved in config.json and applied
as saved by capsule-predict."""

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from genointerp.capsule.fit import gene_screen_p, screened_out
from genointerp.models.capsule import CapsuleConfig, CapsuleNet

from test_capsule_pair_view import xor_cohort, xor_folder


def test_the_screen_is_the_score_test_of_each_genes_columns():
    rng = np.random.default_rng(2)
    n = 500
    x = rng.normal(size=(n, 5))
    y = (x[:, 0] + rng.normal(size=n) > 0).astype(np.int64)
    index = (0, 1, 1, 2, 2)
    x[:, 4] = x[:, 3]  # gene 2's two columns are one direction: 1 degree of freedom
    p = gene_screen_p(x.astype(np.float32), y, index)
    # one column: n r^2 against chi-square(1), r the correlation of y with the column
    for g, cols in ((0, [0]), (2, [3])):
        r = np.corrcoef(x[:, cols[0]], y)[0, 1]
        assert p[g] == pytest.approx(chi2.sf(n * r ** 2, 1), rel=1e-4)
    # two columns: n R^2 of the least-squares fit of y on them against chi-square(2)
    design = np.column_stack([np.ones(n), x[:, 1:3]])
    fitted = design @ np.linalg.lstsq(design, y, rcond=None)[0]
    r2 = 1 - np.sum((y - fitted) ** 2) / np.sum((y - y.mean()) ** 2)
    assert p[1] == pytest.approx(chi2.sf(n * r2, 2), rel=1e-4)
    assert p[0] < 1e-20


def test_the_screen_switches_off_genes_without_evidence_and_keeps_the_pair():
    x, y, _ = xor_cohort()  # genes 0, 1 add; 2, 3 an exclusive-or (no marginal effect); 4, 5 noise
    config = CapsuleConfig(n_features=x.shape[1], primary="gene", gene_index=tuple(np.repeat(np.arange(6), 12).tolist()))
    p = gene_screen_p(x, y, config.gene_index)
    assert p[0] < 1e-10 and p[1] < 1e-10 and min(p[2:]) > 0.001
    assert screened_out(x, y, config, 0.001) == (2, 3, 4, 5)
    assert screened_out(x, y, config, 0.001, keep=(2, 3)) == (4, 5)
    assert screened_out(x[:, 24:], y, CapsuleConfig(n_features=48, primary="gene", gene_index=tuple(
        np.repeat(np.arange(4), 12).tolist())), 1e-6) == ()  # no gene passes: none is switched off


def test_a_gene_that_passes_only_on_its_neighbours_signal_is_switched_off():
    """Gene 1's first column is half gene 0's causal column (linkage disequilibrium): it passes the
    marginal test but adds nothing to gene 0, and is switched off; gene 2 acts on its own and is kept
    though its marginal p-value is weaker than gene 1's."""
    rng = np.random.default_rng(3)
    n = 2000
    x = rng.normal(size=(n, 9))
    x[:, 3] = 0.5 * x[:, 0] + np.sqrt(0.75) * x[:, 3]
    y = (x[:, 0] + 0.3 * x[:, 6] + rng.normal(size=n) > 0).astype(np.int64)
    config = CapsuleConfig(n_features=9, primary="gene", gene_index=(0, 0, 0, 1, 1, 1, 2, 2, 2))
    p = gene_screen_p(x, y, config.gene_index)
    assert p[0] < p[1] < 1e-6 and p[1] < p[2] < 1e-3  # all three pass the marginal test at 0.001
    assert screened_out(x, y, config, 0.001) == (1,)
    # where gene 1 is the pair test's pair it is kept, and it is gene 0 then that must add to it
    assert screened_out(x, y, config, 0.001, keep=(1,)) == ()
    # the conditional test is the score test of gene_screen_p with the kept genes' columns in the null:
    # n R^2 of y on [1, gene 0, gene 1] against [1, gene 0], over the latter's residual sum of squares
    yd = y.astype(np.float64)

    def rss(cols):
        design = np.column_stack([np.ones(n), x[:, cols]])
        return float(np.sum((yd - design @ np.linalg.lstsq(design, yd, rcond=None)[0]) ** 2))

    p1 = chi2.sf(n * (rss([0, 1, 2]) - rss([0, 1, 2, 3, 4, 5])) / rss([0, 1, 2]), 3)
    assert 0.5 < p1 < 0.9  # nothing beside gene 0: what switched gene 1 off
    # kept at a level just above it, switched off just under it (every marginal p-value is far under both)
    assert screened_out(x, y, config, p1 * (1 + 1e-6)) == ()
    assert screened_out(x, y, config, p1 * (1 - 1e-6)) == (1,)

def test_a_switched_off_gene_sends_one_capsule_for_every_sample_and_stays_off_in_training():
    from genointerp.capsule.fit import fit_capsule
    from genointerp.capsule.settings import CapsuleSettings

    index = (0, 1, 1, 2, 2, 2)
    config = CapsuleConfig(n_features=6, primary="gene", gene_index=index, genes_off=(1,))
    assert CapsuleConfig.from_dict(config.to_dict()) == config
    torch.manual_seed(1)
    u = CapsuleNet(config).eval().primary(torch.randn(9, 6))
    assert torch.equal(u[:, 1], u[:1, 1].expand(9, -1)) and not torch.equal(u[:, 0], u[:1, 0].expand(9, -1))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 6)).astype(np.float32)
    y = (x[:, 1] > 0).astype(np.int64)  # gene 1 decides, but it is switched off
    model = fit_capsule(x, y, config, CapsuleSettings(epochs=3, batch_size=8), seed=2)
    norms = model.gene_norms().detach()
    assert float(norms[1]) < 1e-5 and float(norms[0]) > 0.01
    for bad in ((3,), (1, 1), (-1,)):
        with pytest.raises(ValueError, match="genes_off must be different gene numbers below 3"):
            CapsuleNet(CapsuleConfig(n_features=6, primary="gene", gene_index=index, genes_off=bad))
    with pytest.raises(ValueError, match="not the pair's"):
        CapsuleNet(CapsuleConfig(n_features=6, primary="gene", gene_index=index, pair=(0, 1), genes_off=(1,),
                                 pair_products=True))
    with pytest.raises(ValueError, match="genes_off and columns_off need gene primary capsules"):
        CapsuleNet(CapsuleConfig(n_features=12, hidden=16, kernel_size=5, genes_off=(0,)))


def test_gene_screen_0_switches_nothing_off_and_conv_capsules_refuse_it(tmp_path, cli):
    """The exclusive-or cohort as a feature folder (test_capsule_pair_view's capsule-train test shows the
    default screen, saved and applied by capsule-predict): --gene-screen 0 switches no gene off."""
    import json

    folder, _ = xor_folder(tmp_path)
    base = ["capsule-train", folder, "-p", tmp_path / "pheno.tsv", "--folds", "2", "--no-baselines", "--epochs", "2"]
    res = cli(*base, "--gene-screen", "0", "-o", tmp_path / "off")
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "off" / "config.json").read_text())
    assert config["training"]["gene_screen"] == 0 and config["model"]["genes_off"] == []
    res = cli(*base, "--primary", "conv", "--gene-screen", "0.01", "-o", tmp_path / "conv")
    assert res.exit_code == 2 and "--gene-screen" in res.stderr and not (tmp_path / "conv").exists()
