"""The capsule network's parts against hand computations: squash, routing, margin loss, sizes."""

import numpy as np
import pytest
import torch

from genointerp.capsule.interpret import gene_groups, primary_length_per_gene
from genointerp.capsule.splits import make_split
from genointerp.models.capsule import CapsuleConfig, CapsuleNet, margin_loss, parameter_count, route, squash
from genointerp.models.xvir import XVirConfig, count_parameters

SMALL = CapsuleConfig(n_features=12, hidden=16, primary_channels=3, primary_dim=4, kernel_size=5, stride=2, class_dim=8)


def test_squash_keeps_direction_and_maps_length_below_one():
    s = torch.tensor([[3.0, 4.0], [0.03, -0.04], [300.0, 400.0]])
    v = squash(s)
    norms = v.norm(dim=-1)
    assert torch.allclose(norms, torch.tensor([25 / 26, 0.0025 / 1.0025, 250000 / 250001]), atol=1e-6)
    assert (norms < 1).all()
    assert torch.allclose(v / norms[:, None], s / s.norm(dim=-1, keepdim=True), atol=1e-6)
    assert torch.equal(squash(torch.zeros(2, 3)), torch.zeros(2, 3))  # finite at 0


def test_one_routing_iteration_couples_uniformly_and_agreement_raises_coupling():
    torch.manual_seed(0)
    u_hat = torch.randn(2, 3, 6, 5)  # (B, C, N, D)
    _, c1 = route(u_hat, 1)
    assert torch.allclose(c1, torch.full_like(c1, 1 / 3))
    # every primary capsule predicts the same vector for class 0 and weaker, disagreeing noise for the others
    u_hat = 0.3 * u_hat
    u_hat[:, 0] = torch.tensor([1.0, 0, 0, 0, 0])
    v, c3 = route(u_hat, 3)
    assert torch.allclose(c3.sum(-1), torch.ones(2, 6))
    assert (c3[:, :, 0] > 1 / 3).all()
    assert v.shape == (2, 3, 5)


def test_margin_loss_matches_a_hand_computation():
    lengths = torch.tensor([[0.95, 0.3], [0.2, 0.05]])
    # sample 1 (class 0): 0 + 0.5 * (0.3 - 0.1)^2 = 0.02; sample 2 (class 1): 0.5 * 0.1^2 + 0.85^2 = 0.7275
    assert float(margin_loss(lengths, torch.tensor([0, 1]))) == pytest.approx((0.02 + 0.7275) / 2)


def test_parameter_count_formula_and_shapes(device):
    default = CapsuleConfig(n_features=100)
    assert default.n_primary == 32 * 124
    assert count_parameters(CapsuleNet(default)) == parameter_count(default) == 25_856 + 1_280 + 507_904
    model = CapsuleNet(SMALL).to(device)
    lengths, coupling = (t.cpu() for t in model(torch.randn(7, 12).to(device), need_coupling=True))
    assert lengths.shape == (7, 2) and coupling.shape == (7, SMALL.n_primary, 2) and SMALL.n_primary == 18
    assert ((lengths >= 0) & (lengths < 1)).all()
    assert torch.allclose(coupling.sum(-1), torch.ones(7, 18))


def test_config_round_trip_and_refusals():
    assert CapsuleConfig.from_dict(SMALL.to_dict()) == SMALL
    dropped = CapsuleConfig(n_features=12, hidden=16, kernel_size=5, input_dropout=0.1, dropout=0.3)
    assert CapsuleConfig.from_dict(dropped.to_dict()) == dropped
    # a config.json written before the dropout fields existed still loads (dropout does not change inference)
    old = {k: v for k, v in SMALL.to_dict().items() if k not in ("input_dropout", "dropout")}
    assert CapsuleConfig.from_dict(old).n_primary == SMALL.n_primary
    with pytest.raises(ValueError, match="dropout"):
        CapsuleNet(CapsuleConfig(n_features=12, hidden=16, kernel_size=5, dropout=1.0))
    with pytest.raises(ValueError, match="not a capsule"):
        CapsuleConfig.from_dict(XVirConfig().to_dict())
    with pytest.raises(ValueError, match="kernel_size"):
        CapsuleNet(CapsuleConfig(n_features=5, hidden=4, kernel_size=9))


def test_dropout_acts_in_training_only(device):
    torch.manual_seed(2)
    model = CapsuleNet(CapsuleConfig(n_features=12, hidden=16, primary_channels=3, kernel_size=5, class_dim=8,
                                     input_dropout=0.2, dropout=0.5)).to(device)
    x = torch.randn(4, 12).to(device)
    model.train()
    assert not torch.allclose(model(x).cpu(), model(x).cpu())
    model.eval()
    assert torch.equal(model(x).cpu(), model(x).cpu())


def test_gene_shortcut_equals_the_full_forward_pass_on_masked_input(device):
    torch.manual_seed(1)
    model = CapsuleNet(SMALL).eval().to(device)
    # CUDA: cuDNN may run float32 convolutions in TF32 (torch.backends.cudnn.allow_tf32 is on by
    # default), rounding the conv's inputs and weights to 10 mantissa bits (2^-11 = 4.9e-4 relative
    # each): over a 5-tap kernel the full pass's capsule lengths (< 1) can be off by up to about 2e-3
    # from the float64 shortcut, which no float32 rounding on the CPU comes near
    atol, atol_zero = (1e-5, 1e-6) if device == "cpu" else (5e-3, 5e-3)
    columns = [f"chr1:G{g}:pc{k}" for g in range(4) for k in (1, 2, 3)]
    groups = gene_groups(columns)
    assert [g for g, _ in groups] == ["chr1:G0", "chr1:G1", "chr1:G2", "chr1:G3"]
    x = np.random.default_rng(0).normal(size=(5, 12))
    for primary in (0, 7, 17):
        fast = primary_length_per_gene(model, x, groups, primary)
        for g, (_, idx) in enumerate(groups):
            masked = np.zeros_like(x)
            masked[:, idx] = x[:, idx]
            full = model.primary(torch.from_numpy(masked).float().to(device))[:, primary].norm(dim=-1)
            assert np.allclose(fast[g], full.detach().cpu().numpy(), atol=atol)
        zero = model.primary(torch.zeros(1, 12).to(device))[0, primary].norm().item()
        assert np.allclose(fast[-1], zero, atol=atol_zero)


def test_split_is_balanced_stratified_disjoint_and_seeded():
    y = np.array([0] * 60 + [1] * 40)
    s = make_split(y, ["control", "case"], folds=4, test_fraction=0.2, seed=3)
    assert np.bincount(y[s.test]).tolist() == [10, 10]
    assert len(set(s.test) | set(s.train)) == 100 and not set(s.test) & set(s.train)
    for k in range(4):
        _, ev = s.fold(k)
        assert np.bincount(y[ev]).tolist() in ([12, 7], [13, 8], [12, 8], [13, 7])
    again = make_split(y, ["control", "case"], folds=4, test_fraction=0.2, seed=3)
    assert np.array_equal(s.test, again.test) and np.array_equal(s.fold_of, again.fold_of)
    assert not np.array_equal(s.test, make_split(y, ["control", "case"], 4, 0.2, seed=4).test)


# ---- issue 18: one primary capsule per gene (--primary gene) ----------------------------------------

# 4 genes with 1, 3, 2 and 4 PCs; G2's columns are not contiguous (a TSV may order them so)
GENE_COLUMNS = ["chr1:G0:pc1", "chr1:G1:pc1", "chr1:G1:pc2", "chr1:G2:pc1", "chr1:G1:pc3",
                "chr2:G3:pc1", "chr2:G3:pc2", "chr2:G3:pc3", "chr2:G3:pc4", "chr1:G2:pc2"]


def gene_config(**kw) -> CapsuleConfig:
    from genointerp.capsule.interpret import gene_index

    return CapsuleConfig(n_features=len(GENE_COLUMNS), primary="gene", gene_index=gene_index(GENE_COLUMNS),
                         primary_dim=4, class_dim=8, **kw)


def test_gene_index_numbers_genes_in_first_appearance_order():
    from genointerp.capsule.interpret import gene_index

    assert gene_index(GENE_COLUMNS) == [0, 1, 1, 2, 1, 3, 3, 3, 3, 2]
    c = gene_config()
    assert (c.n_genes, c.max_pcs, c.n_primary) == (4, 4, 4)


def test_gene_capsules_shapes_parameters_and_coupling_distribution(device):
    c = gene_config()
    torch.manual_seed(0)
    model = CapsuleNet(c).to(device)
    assert count_parameters(model) == parameter_count(c) == 4 * 4 * 4 + 4 * 4 + 4 * 2 * 8 * 4
    # buffers rebuilt from gene_index are not weights: a saved model holds parameters only
    assert sorted(model.state_dict()) == ["W", "gene_bias", "gene_weight"]
    x = torch.randn(7, 10).to(device)
    u = model.primary(x)
    lengths, coupling = model(x, need_coupling=True)
    assert u.shape == (7, 4, 4) and lengths.shape == (7, 2) and coupling.shape == (7, 4, 2)
    assert ((lengths >= 0) & (lengths < 1)).all() and (u.norm(dim=-1) < 1).all()
    assert torch.allclose(coupling.sum(-1).cpu(), torch.ones(7, 4))  # each gene's coupling sums to 1 over classes
    # padding rows: G0 has 1 PC of 4 slots, G2 2, G1 3
    pad = model.gene_weight.detach().cpu()
    assert (pad[0, 1:] == 0).all() and (pad[2, 2:] == 0).all() and (pad[1, 3:] == 0).all() and (pad[3] != 0).all()


def test_capsule_lengths_score_every_row_in_passes_of_one_shape(device):
    """A GPU picks its matrix kernels by shape: every pass has batch_size rows, the last one padded."""
    from genointerp.capsule.predict import capsule_lengths

    torch.manual_seed(0)
    model = CapsuleNet(gene_config()).to(device).eval()
    shapes = []
    model.register_forward_hook(lambda module, inputs, output: shapes.append(tuple(inputs[0].shape)))
    x = np.random.default_rng(2).normal(size=(11, 10))
    lengths = capsule_lengths(model, x, device, batch_size=4)
    assert shapes == [(4, 10)] * 3 and lengths.dtype == np.float64 and lengths.shape == (11, 2)
    with torch.inference_mode():
        direct = model(torch.from_numpy(x.astype(np.float32)).to(device)).cpu().double().numpy()
    np.testing.assert_allclose(lengths, direct, rtol=1e-6)  # the same rows, in order (padding dropped)
    assert capsule_lengths(model, x[:0], device).shape == (0, 2)


def test_a_gene_capsule_depends_on_its_own_pcs_only():
    from genointerp.capsule.interpret import gene_groups

    torch.manual_seed(3)
    model = CapsuleNet(gene_config()).eval()
    x = torch.randn(5, 10)
    base = model.primary(x)
    for g, (_, idx) in enumerate(gene_groups(GENE_COLUMNS)):
        moved = x.clone()
        moved[:, idx] += 2.5 * torch.randn(5, len(idx))
        u = model.primary(moved)
        others = [h for h in range(4) if h != g]
        assert torch.equal(u[:, others], base[:, others]), g  # bit for bit: no other gene's capsule moves
        assert not torch.allclose(u[:, g], base[:, g]), g
    # a capsule is squash(x_g A_g + b_g) by hand (G2: columns 3 and 9)
    want = squash(x[:, [3, 9]] @ model.gene_weight[2, :2] + model.gene_bias[2])
    assert torch.allclose(base[:, 2], want, atol=1e-6)


def test_gene_capsules_train_deterministically_and_padding_stays_zero():
    from genointerp.capsule.fit import fit_capsule
    from genointerp.capsule.settings import CapsuleSettings

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 10)).astype(np.float32)
    y = (x[:, 5] > 0).astype(np.int64)  # G3's pc1
    s = CapsuleSettings(epochs=3, batch_size=8, weight_decay=1e-2)
    a, b = (fit_capsule(x, y, gene_config(), s, seed=4) for _ in range(2))
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
    trained = a.gene_weight.detach()
    assert (trained[0, 1:] == 0).all() and (trained[2, 2:] == 0).all() and (trained[1, 3:] == 0).all()
    assert not torch.equal(trained, CapsuleNet(gene_config()).gene_weight.detach())


def test_gene_config_round_trip_and_refusals():
    c = gene_config()
    again = CapsuleConfig.from_dict(json_round_trip(c.to_dict()))
    assert again == c and isinstance(again.gene_index, tuple)
    old = {k: v for k, v in SMALL.to_dict().items() if k not in ("primary", "gene_index")}
    assert CapsuleConfig.from_dict(old).primary == "conv"  # a config.json from before the option
    fields = {k: v for k, v in c.to_dict().items() if k != "architecture"}
    for bad, message in (({"primary": "dense"}, "primary must be one of conv, gene"),
                         ({"gene_index": (0, 1)}, "gene_index gives the gene of 2 columns"),
                         ({"gene_index": (0, 2) * 5}, "without gaps"),
                         ({"gene_index": (0, -1) * 5}, "without gaps")):
        with pytest.raises(ValueError, match=message):
            CapsuleNet(CapsuleConfig(**{**fields, **bad}))


def test_gene_scores_read_the_coupling_of_each_gene_capsule():
    from genointerp.capsule.interpret import gene_scores, mean_coupling

    torch.manual_seed(5)
    model = CapsuleNet(gene_config()).eval()
    x = np.random.default_rng(1).normal(size=(30, 10)).astype(np.float32)
    y = np.arange(30) % 2
    coupling = mean_coupling(model, x, y, 2, "cpu")
    assert coupling.shape == (2, 4, 2)
    rows = gene_scores(model, x, GENE_COLUMNS, None, coupling)
    want = (coupling[0, :, 0] + coupling[1, :, 1]) / 2 - 0.5
    assert {r["gene"]: r["score"] for r in rows} == pytest.approx({f"G{g}": want[g] for g in range(4)})
    assert [r["n_pcs"] for r in sorted(rows, key=lambda r: r["gene"])] == [1, 3, 2, 4]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4] and [r["score"] for r in rows] == sorted(want, reverse=True)
    # map_norm is each gene's |A_g|_F (G2's two PCs sit in padded rows 0-1 of its slot)
    norms = model.gene_weight.detach().flatten(1).norm(dim=1).numpy()
    assert {r["gene"]: r["map_norm"] for r in rows} == pytest.approx({f"G{g}": norms[g] for g in range(4)}, rel=1e-5)
    from genointerp.capsule.interpret import genes_table

    table = genes_table(rows).splitlines()
    assert table[0].split("\t")[-1] == "map_norm" and len(table[1].split("\t")) == 7


def json_round_trip(d: dict) -> dict:
    import json

    return json.loads(json.dumps(d))


# ---- the group penalty on gene capsules (--gene-penalty) ------------------

def test_group_penalty_is_the_size_weighted_sum_of_gene_map_norms():
    torch.manual_seed(5)
    model = CapsuleNet(gene_config())
    a = model.gene_weight.detach()
    # genes with 1, 3, 2 and 4 PCs: weights sqrt(K_g); padding rows are 0 and add nothing
    want = sum(np.sqrt(k) * float(a[g].norm()) for g, k in enumerate((1, 3, 2, 4)))
    assert model.group_penalty().item() == pytest.approx(want, rel=1e-6)
    assert torch.allclose(model.gene_norms(), a.flatten(1).norm(dim=1), atol=1e-6)
    with pytest.raises(ValueError, match="gene primary capsules"):
        CapsuleNet(SMALL).group_penalty()


def test_the_group_penalty_switches_off_genes_that_do_not_help():
    from genointerp.capsule.fit import fit_capsule
    from genointerp.capsule.settings import CapsuleSettings

    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 10)).astype(np.float32)
    y = (x[:, 1] + 0.3 * rng.normal(size=200) > 0).astype(np.int64)  # G1's pc1 decides; G0, G2, G3 are noise
    plain = CapsuleSettings(epochs=40, patience=40, lr=3e-3, batch_size=16)
    penalised = CapsuleSettings(epochs=40, patience=40, lr=3e-3, batch_size=16, gene_penalty=0.005)
    free = fit_capsule(x, y, gene_config(), plain, seed=2).gene_norms().detach()
    lasso = fit_capsule(x, y, gene_config(), penalised, seed=2).gene_norms().detach()
    noise = [0, 2, 3]
    # with the penalty the noise genes' maps shrink towards 0 while the signal gene keeps a map
    assert (lasso[noise] < 0.5 * free[noise]).all(), (free, lasso)
    assert lasso[1] > 5 * lasso[noise].max(), lasso
    with pytest.raises(ValueError, match="gene primary capsules"):
        fit_capsule(rng.normal(size=(40, 12)).astype(np.float32), y[:40], SMALL,
                    CapsuleSettings(epochs=1, gene_penalty=0.01), seed=1)



def test_the_penalty_weight_falls_with_the_training_rows():
    from genointerp.capsule.fit import penalty_weight
    from genointerp.capsule.settings import CapsuleSettings

    s = CapsuleSettings(gene_penalty=0.0012)
    assert penalty_weight(s, 1000) == pytest.approx(0.0012)
    assert penalty_weight(s, 4000) == pytest.approx(0.0012 / 8)  # 4x the rows: (1/4)^1.5
    # capsule-train's default at 1,000 samples (544 rows in a fold's inner training part) and 3,000 (1,632)
    assert penalty_weight(s, 544) == pytest.approx(0.003, rel=0.01)
    assert penalty_weight(s, 1632) == pytest.approx(0.000576, rel=0.01)
    # a small cohort keeps the weight of 500 rows rather than one that switches every gene off
    assert penalty_weight(s, 40) == penalty_weight(s, 500) == pytest.approx(0.0012 * 2 ** 1.5)


def test_the_pair_test_finds_an_xor_pair_and_the_penalty_spares_it():
    from scipy.stats import norm
    from genointerp.capsule.pair_screen import screened_pair

    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 10)).astype(np.float32)
    # XOR of G0's pc1 (column 0) and G2's pc1 (column 3): no marginal effect, only their product
    y = ((x[:, 0] > 0) ^ (x[:, 3] > 0)).astype(np.int64)
    pair, found = screened_pair(x, y, gene_config(), seed=1)
    assert pair == (0, 2) and found["interacting"] and found["pairs"] == 6 and found["z"] > 5
    # the permutation bar for the best of 6 pairs in the PC-block family: above 0 (a pair's z is its
    # block's largest singular value less that value's median under no interaction) and below the
    # conservative bound, Bonferroni over the 6 pairs at the family's level (BLOCK_ALPHA 0.04) on the
    # Gaussian-isoperimetry tail, Phi^-1(1 - 0.04 / 6) = 2.475
    assert found["test"] == "products" and 0 < found["chance_z"] < norm.isf(0.04 / 6)
    assert screened_pair(x, y, gene_config(), seed=1) == (pair, found)  # seeded: the same bar every run
    noise = rng.integers(0, 2, size=300)
    assert screened_pair(x, noise, gene_config(), seed=1) == ((), None)  # no pair passes the sparing gate
    additive = (x[:, 0] + x[:, 3] > 0).astype(np.int64)  # both genes matter, neither through the other
    pair, found = screened_pair(x, additive, gene_config(), seed=1)
    assert found is None or not found["interacting"]
    torch.manual_seed(5)
    model = CapsuleNet(gene_config())
    with torch.no_grad():
        terms = model.gene_penalty_weight * model.gene_norms()
        assert model.group_penalty((0, 2)).item() == pytest.approx(float(terms[1] + terms[3]), rel=1e-6)


def test_the_pair_tests_null_median_matches_the_closed_forms():
    from scipy.stats import chi2
    from genointerp.capsule.pair_screen import singular_median

    # a 1 x K block's largest singular value is the norm of K normals: the root of a chi-square's median
    # (the draws' median, rounded up to 0.01, is within its sampling error, about 0.06 at 400 draws)
    for k in (1, 4, 16):
        for shape in ((1, k), (k, 1)):
            assert singular_median(*shape) == pytest.approx(np.sqrt(chi2.median(k)), abs=0.1)
    # and below sqrt(Ka) + sqrt(Kb), the bound on the mean of a Gaussian matrix's norm (Gordon)
    assert singular_median(32, 32) < 2 * np.sqrt(32)
    assert singular_median(3, 7) == singular_median(3, 7)  # seeded by the shape: the same every call


def test_the_pair_test_stays_within_chance_where_genes_only_add_and_skips_linked_genes():
    from genointerp.capsule.pair_screen import interaction_screen, linked_pairs

    rng = np.random.default_rng(7)
    n, genes = 1200, [np.arange(4 * g, 4 * g + 4) for g in range(12)]
    x = rng.normal(size=(n, 48))
    # strong additive effects of three genes, cases above the median liability: the labels' probability
    # saturates, which raw labels would show as products of the genes' PCs; the null model takes it
    li = 1.5 * (x[:, 0] + x[:, 4] + x[:, 8]) + rng.normal(size=n)
    y = (li > np.median(li)).astype(np.int64)
    found = interaction_screen(x, y, genes, seed=3)
    assert len(found.pairs) == 66 and abs(found.ranked()[0][2]) < found.ranked()[0][3]
    # a gene whose PCs repeat another's (overlapping genes, strong LD) is not paired with it
    x[:, 44:48] = x[:, 0:4] + 0.1 * rng.normal(size=(n, 4))
    assert linked_pairs(x / x.std(0), genes) == {(0, 11)}
    assert len(interaction_screen(x / x.std(0), y, genes, seed=3).pairs) == 65


def test_the_interaction_table_tells_an_exclusive_or_from_co_occurrence_and_additive_genes():
    from genointerp.capsule.interaction import interacting_axes, interaction_rows

    rng = np.random.default_rng(7)
    n = 4000
    # two genes of 3 PCs each; the risk pattern of each is a direction mixing its PCs
    xa, xb = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    da, db = np.array([0.6, -0.8, 0.0]), np.array([0.0, 0.6, 0.8])
    pa, pb = xa @ da > 0, xb @ db > 0
    # the axes are the planted directions (up to the sign fixed by the largest loading)
    a, b = interacting_axes(xa, xb, (pa ^ pb).astype(np.int64))
    assert abs(np.corrcoef(a, xa @ da)[0, 1]) > 0.9 and abs(np.corrcoef(b, xb @ db)[0, 1]) > 0.9

    def rates(y):
        return {(r["axis_a"], r["axis_b"]): r["case_rate"] for r in interaction_rows(xa, xb, y.astype(np.int64))}

    # each axis's sign is a convention (largest loading positive), so an XOR is one diagonal of cases
    xor = rates(pa ^ pb)
    diagonals = sorted([(xor[("low", "high")], xor[("high", "low")]), (xor[("low", "low")], xor[("high", "high")])])
    assert max(diagonals[0]) < 0.2 and min(diagonals[1]) > 0.8
    both = rates(pa & pb)  # one cell holds the cases, whichever sign each axis took
    assert sorted(both.values())[-1] > 0.8 and sorted(both.values())[-2] < 0.2
    rows = interaction_rows(xa, xb, (pa ^ pb).astype(np.int64))
    assert sum(r["samples"] for r in rows) == n and sum(r["cases"] for r in rows) == int((pa ^ pb).sum())


def test_a_pair_capsule_reads_its_two_genes_pcs_and_their_products():
    # G1 (columns 1, 2, 4: 3 PCs) and G2 (columns 3, 9: 2 PCs): Q = 3 + 2 + 3 x 2 = 11 inputs
    c = CapsuleConfig(**{**{k: v for k, v in gene_config().to_dict().items() if k != "architecture"}, "pair": (1, 2)})
    torch.manual_seed(0)
    model = CapsuleNet(c).eval()
    assert c.n_primary == 5 and c.pair_inputs == 11
    assert count_parameters(model) == parameter_count(c) == 4 * 4 * 4 + 4 * 4 + 11 * 4 + 4 + 5 * 2 * 8 * 4
    assert CapsuleConfig.from_dict(json_round_trip(c.to_dict())) == c
    x = torch.randn(6, 10)
    u = model.primary(x)
    xa, xb = x[:, [1, 2, 4]], x[:, [3, 9]]
    z = torch.cat([xa, xb, (xa[:, :, None] * xb[:, None, :]).reshape(6, 6)], dim=1)
    assert torch.allclose(u[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    # the gene capsules are those of the same weights without the pair
    plain = CapsuleNet(gene_config()).eval()
    plain.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("pair")} | {"W": model.W[:4]})
    assert torch.equal(plain.primary(x), u[:, :4])
    fields = {k: v for k, v in c.to_dict().items() if k != "architecture"}
    for bad in ((1, 1), (0, 4), (0,), (0, 1, 2)):
        with pytest.raises(ValueError, match="pair must be two different gene numbers below 4"):
            CapsuleNet(CapsuleConfig(**{**fields, "pair": bad}))
    with pytest.raises(ValueError, match="a pair capsule needs gene primary capsules"):
        CapsuleNet(CapsuleConfig(**{**{k: v for k, v in SMALL.to_dict().items() if k != "architecture"}, "pair": (0, 1)}))


def test_a_pair_capsule_with_axes_reads_the_product_of_the_two_genes_scores_too():
    # the pair of the test above with its genes' additive-score axes (K_a = 3, K_b = 2 weights): one
    # more input, the product (x_a . w_a)(x_b . w_b), last: Q = 12
    fields = {k: v for k, v in gene_config().to_dict().items() if k != "architecture"}
    c = CapsuleConfig(**{**fields, "pair": (1, 2), "pair_axes": ((0.5, -1.0, 0.25), (2.0, 1.0))})
    torch.manual_seed(0)
    model = CapsuleNet(c).eval()
    assert c.pair_inputs == 12 and count_parameters(model) == parameter_count(c)
    assert CapsuleConfig.from_dict(json_round_trip(c.to_dict())) == c
    x = torch.randn(6, 10)
    xa, xb = x[:, [1, 2, 4]], x[:, [3, 9]]
    t = (xa @ torch.tensor([0.5, -1.0, 0.25])) * (xb @ torch.tensor([2.0, 1.0]))
    z = torch.cat([xa, xb, (xa[:, :, None] * xb[:, None, :]).reshape(6, 6), t[:, None]], dim=1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    # where the scores family called the pair, the rank-1 view alone: no PC products, Q = 3 + 2 + 1
    lone = CapsuleConfig(**{**fields, "pair": (1, 2), "pair_axes": c.pair_axes, "pair_products": False})
    model = CapsuleNet(lone).eval()
    assert lone.pair_inputs == 6 and count_parameters(model) == parameter_count(lone)
    z = torch.cat([xa, xb, t[:, None]], dim=1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    for bad in ({"pair_axes": ((0.5, 1.0), (2.0, 1.0))}, {"pair": (), "pair_axes": ((1.0,), (1.0,))}):
        with pytest.raises(ValueError, match="pair_axes must give one weight per column"):
            CapsuleNet(CapsuleConfig(**{**fields, "pair": (1, 2), **bad}))
    with pytest.raises(ValueError, match="without the PC products needs pair_axes"):
        CapsuleNet(CapsuleConfig(**{**fields, "pair": (1, 2), "pair_products": False}))


def test_a_switched_off_gene_ranks_after_the_others_and_is_never_decisive():
    from genointerp.capsule.interpret import SWITCHED_OFF, gene_scores

    torch.manual_seed(5)
    model = CapsuleNet(gene_config()).eval()
    with torch.no_grad():
        model.gene_weight[1] = 0  # G1's map switched off: the same capsule for every sample
        model.gene_weight[3] *= SWITCHED_OFF * 1.01 * model.gene_norms().max() / model.gene_norms()[3]
    # coupling that would rank G1 first (score 0.4), then G0, G3, G2
    coupling = np.full((2, 4, 2), 0.5)
    for g, s in ((0, 0.3), (1, 0.4), (2, 0.1), (3, 0.2)):
        coupling[0, g] = [0.5 + s, 0.5 - s]
        coupling[1, g] = [0.5 - s, 0.5 + s]
    rows = gene_scores(model, np.zeros((3, 10), np.float32), GENE_COLUMNS, None, coupling)
    # G3, just above the share of the largest map, stays in line; G1 goes last, its score kept
    assert [r["gene"] for r in rows] == ["G0", "G3", "G2", "G1"] and [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert rows[-1]["score"] == pytest.approx(0.4) and rows[-1]["map_norm"] < 1e-5
    # 5 % of 4 genes: one decisive
    assert [r["decisive"] for r in rows] == [True, False, False, False]
