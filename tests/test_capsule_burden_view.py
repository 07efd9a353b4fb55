"""The burden view (fit.pcs_screened_out, CapsuleConfig.columns_off): the PCs of a gene whose burden
column carries what they would add are switched off before training; a gene whose PCs add beside its
burden column keeps them. Saved in config.json (test_capsule_burden checks capsule-predict applies it)."""

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from genointerp.capsule.fit import pcs_screened_out
from genointerp.models.capsule import CapsuleConfig, CapsuleNet

# columns: gene 0 PCs 0-2, gene 1 PCs 3-5, gene 2 PCs 6-7; burden columns 8 (gene 0) and 9 (gene 1)
INDEX = (0, 0, 0, 1, 1, 1, 2, 2, 0, 1)


def cohort(n: int = 2000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """y (n,) 0/1 from gene 0's burden column alone and from gene 1's PC 4 beside its burden column."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(INDEX)))
    x[:, 0] += 0.5 * x[:, 8]  # gene 0's PCs follow its burden in part, as a gene's last PCs do
    logit = 1.2 * x[:, 8] + 0.8 * x[:, 4] + 0.5 * x[:, 9]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return x.astype(np.float32), y


def test_pcs_that_add_nothing_to_the_burden_column_are_switched_off_and_others_kept():
    x, y = cohort()
    config = CapsuleConfig(n_features=10, primary="gene", gene_index=INDEX)
    # gene 0's PCs add nothing beside its burden column; gene 1's PC 4 does; gene 2 has no burden column
    assert pcs_screened_out(x, y, config, burden_columns=2, level=0.05) == (0, 1, 2)
    assert pcs_screened_out(x, y, config, burden_columns=0, level=0.05) == ()
    # level 0 keeps every PC (no p-value is under 0); a level under gene 1's p-value switches its PCs off too
    assert pcs_screened_out(x, y, config, burden_columns=2, level=0.0) == ()
    assert pcs_screened_out(x, y, config, burden_columns=2, level=1e-300) == (0, 1, 2, 3, 4, 5)


def test_the_test_is_the_score_test_of_the_pcs_with_the_burden_column_in_the_null():
    """Gene 0's p-value by hand: n R^2 of the least-squares fit of y on [1, burden, PCs] against the
    fit on [1, burden], over the residual sum of squares of the latter, against chi-square(3)."""
    x, y = cohort()
    xd, yd, n = x.astype(np.float64), y.astype(np.float64), len(y)

    def rss(cols):
        design = np.column_stack([np.ones(n), xd[:, cols]])
        return float(np.sum((yd - design @ np.linalg.lstsq(design, yd, rcond=None)[0]) ** 2))

    p = chi2.sf(n * (rss([8]) - rss([8, 0, 1, 2])) / rss([8]), 3)
    config = CapsuleConfig(n_features=10, primary="gene", gene_index=INDEX)
    assert 0.05 < p < 1  # noise PCs: not under the usual levels, and a level just above p is a level
    # switched off where p is not under the level: just above p keeps them, just at or under it does not
    assert pcs_screened_out(x, y, config, 2, level=p * (1 - 1e-6)) == (0, 1, 2)
    assert pcs_screened_out(x, y, config, 2, level=p * (1 + 1e-6)) == ()


def test_switched_off_columns_are_not_read_and_the_config_round_trips():
    config = CapsuleConfig(n_features=10, primary="gene", gene_index=INDEX, columns_off=(0, 1, 2))
    assert CapsuleConfig.from_dict(config.to_dict()) == config
    torch.manual_seed(1)
    net = CapsuleNet(config).eval()
    x = torch.randn(7, 10)
    moved = x.clone()
    moved[:, :3] = torch.randn(7, 3)  # gene 0's PCs change, its burden column does not
    assert torch.equal(net.primary(x), net.primary(moved))
    moved[:, 8] += 1
    assert not torch.equal(net.primary(x)[:, 0], net.primary(moved)[:, 0])
    for bad in ((10,), (1, 1), (-1,), (True,)):
        with pytest.raises(ValueError, match="columns_off must be different column numbers below 10"):
            CapsuleNet(CapsuleConfig(n_features=10, primary="gene", gene_index=INDEX, columns_off=bad))
    with pytest.raises(ValueError, match="columns_off need gene primary capsules"):
        CapsuleNet(CapsuleConfig(n_features=12, hidden=16, kernel_size=5, columns_off=(0,)))


def test_the_pair_capsule_leaves_out_its_pair_columns_off():
    """pair_columns_off (the burden view of a pair found in its genes' burden columns, fit.pair_pcs):
    the pair capsule reads neither those columns nor, through them, its rank-1 views; its other columns
    still move it. Without them (older config.json files) it reads every column of its two genes."""
    from genointerp.capsule.fit import pair_pcs

    axes = ((1.0, 1.0, 1.0, 1.0), (1.0, 1.0, 1.0, 1.0))
    base = dict(n_features=10, primary="gene", gene_index=INDEX, pair=(0, 1), pair_products=False,
                pair_interaction_axes=axes)
    assert pair_pcs(CapsuleConfig(**base), burden_columns=2) == (0, 1, 2, 3, 4, 5)
    config = CapsuleConfig(**base, pair_columns_off=(0, 1, 2, 3, 4, 5))
    assert CapsuleConfig.from_dict(config.to_dict()) == config
    torch.manual_seed(1)
    net = CapsuleNet(config).eval()
    x = torch.randn(7, 10)
    moved = x.clone()
    moved[:, :6] = torch.randn(7, 6)
    assert torch.equal(net.primary(x)[:, -1], net.primary(moved)[:, -1])
    moved[:, 9] += 1  # gene 1's burden column
    assert not torch.equal(net.primary(x)[:, -1], net.primary(moved)[:, -1])
    torch.manual_seed(1)
    every = CapsuleNet(CapsuleConfig(**base)).eval()
    assert not torch.equal(every.primary(x)[:, -1], every.primary(x.clone().index_fill_(1, torch.tensor([0]), 3.0))[:, -1])
    for bad in ((6,), (0, 0), (10,)):
        with pytest.raises(ValueError, match="pair_columns_off must be different column numbers of the pair's two genes"):
            CapsuleNet(CapsuleConfig(**base, pair_columns_off=bad))


def test_a_pair_found_in_its_burden_columns_gets_a_pair_capsule_of_those_only():
    """test_capsule_pair_null's co-occurrence of two burdens (genes 2 and 3, found by the pair test's
    burden family only), each gene's PCs and then its burden column: with the burden view the pair
    capsule leaves out the pair's PCs, and its interacting axes, fitted with them left out, weigh the
    burden columns alone; at --burden-view 0 it reads every column, as before the view."""
    from dataclasses import replace

    from genointerp.capsule.fit import fit_capsule
    from genointerp.capsule.settings import CapsuleSettings
    from test_capsule_pair_null import burden_cohort

    pcs, y, genes, burden = burden_cohort(1, h2=0.8, rare_maf=(0.005, 0.02), cooccur=1.0)
    x = np.hstack([pcs, burden]).astype(np.float32)
    index = tuple(int(g) for g in np.concatenate([np.full(len(c), g) for g, c in enumerate(genes)])) + tuple(range(10))
    config = CapsuleConfig(n_features=x.shape[1], primary="gene", gene_index=index)
    s = CapsuleSettings(epochs=1, gene_penalty=0.0012, pair_screen=True, pair_capsule=True, gene_screen=0.001,
                        burden_view=0.05, burden_columns=10)
    model = fit_capsule(x, y, config, s, seed=1)
    c = model.config
    assert c.pair == (2, 3) and model.pair_evidence["test"] == "burdens"
    assert c.pair_columns_off == tuple(int(j) for j in np.concatenate([genes[2], genes[3]]))
    for axis in c.pair_interaction_axes + c.pair_axes:
        assert all(w == 0 for w in axis[:-1]) and axis[-1] != 0  # a gene's burden column is its last
    plain = fit_capsule(x, y, config, replace(s, burden_view=0.0), seed=1).config
    assert plain.pair == (2, 3) and plain.pair_columns_off == () and plain.columns_off == ()
    assert sum(w != 0 for w in plain.pair_interaction_axes[0]) > 1
