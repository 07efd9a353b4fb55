"""The pair test's additive null model: how firmly it fits the genes' additive effects, and the
per-gene burden columns it takes beside the Gene-PCs (capsule-train --burden-maf)."""

import numpy as np
import pytest

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


@pytest.mark.parametrize("seed", [1])
def test_two_additive_burden_genes_do_not_look_interacting_to_the_null_that_fits_them(seed, monkeypatch):
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
