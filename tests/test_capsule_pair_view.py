"""The pair capsule's view along the two genes' interacting axes (fit.interaction_axes,
CapsuleConfig.pair_interaction_axes): fitted on the training rows, saved in config.json, applied
as saved by capsule-predict."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from genointerp.capsule.fit import interaction_axes, pair_axes, pair_cuts
from genointerp.models.capsule import CapsuleConfig, CapsuleNet, parameter_count, squash
from genointerp.models.xvir import count_parameters


def xor_cohort(n: int = 1000, genes: int = 6, k: int = 12, seed: int = 3):
    """n samples of `genes` genes x k PCs: genes 0 and 1 add, genes 2 and 3 act as an exclusive-or of
    their high states (one random direction u_g of each gene's PCs, the case rate raised where exactly
    one is above 0). Returns (x (n, genes k) standardised float32, y (n,) 0/1, u (genes, k))."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, genes * k))
    u = rng.normal(size=(genes, k))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    s = np.stack([x[:, g * k:(g + 1) * k] @ u[g] for g in range(genes)], 1)
    li = s[:, 0] + s[:, 1] + 2.0 * ((s[:, 2] > 0) ^ (s[:, 3] > 0)) + 0.5 * rng.normal(size=n)
    x = (x - x.mean(0)) / x.std(0)
    return x.astype(np.float32), (li > np.median(li)).astype(np.int64), u


def xor_folder(tmp_path):
    """xor_cohort() as a feature folder tmp_path/feats (genes G0-G5, 12 PCs each, samples S000...) and
    tmp_path/pheno.tsv (column status: case/control). Returns (the folder, u)."""
    from genointerp.io.features import Features, write_features

    x, y, u = xor_cohort()
    samples = [f"S{i:03d}" for i in range(len(y))]
    folder = tmp_path / "feats"
    folder.mkdir()
    write_features(folder, Features(samples, [f"chr1:G{g}:pc{j + 1}" for g in range(6) for j in range(12)], x))
    (tmp_path / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{name}\t{'case' if v else 'control'}\n" for name, v in zip(samples, y)))
    return folder, u


def cosines(axes, u) -> list[float]:
    return [float(np.dot(a, planted) / np.linalg.norm(a)) for a, planted in zip(axes, u)]


def test_the_interacting_axes_find_the_directions_of_an_exclusive_or_that_the_additive_axes_miss():
    """An exclusive-or of two genes of 12 PCs: each gene's high state is one direction u_g of its PCs,
    and neither gene moves the case rate alone, so the additive model has no axis for either (its
    weights on the two genes are noise: cosines with u_g of -0.19 and 0.50 here), while the rank-1
    bilinear term finds both (0.99 and 0.97 on these 1,000 rows; the bar 0.9). Each axis has sd 1 on
    the rows it was fitted on and its largest loading positive; the same rows give the same floats."""
    x, y, u = xor_cohort()
    config = CapsuleConfig(n_features=x.shape[1], primary="gene", gene_index=tuple(j // 12 for j in range(72)),
                           pair=(2, 3))
    joint = interaction_axes(x, y, config)
    assert [len(axis) for axis in joint] == [12, 12]
    # the sign of an axis is a convention (largest loading positive), so compare |cos|
    assert min(np.abs(cosines(joint, u[[2, 3]]))) > 0.9
    assert max(np.abs(cosines(pair_axes(x, y, config), u[[2, 3]]))) < 0.6
    for axis, cols in zip(joint, (slice(24, 36), slice(36, 48))):
        w = np.array(axis)
        assert (x[:, cols].astype(np.float64) @ w).std() == pytest.approx(1.0, abs=1e-9)
        assert w[np.argmax(np.abs(w))] > 0
    assert interaction_axes(x, y, config) == joint


def test_a_pair_capsule_with_interacting_axes_reads_their_product_last():
    # genes of 3 and 2 columns (1 and 2 of gene_index below): with both views the pair capsule reads
    # [x_a, x_b, the 6 PC products, the additive scores' product, the interacting axes' product]: Q = 13
    index = (0, 1, 1, 2, 1, 3, 3, 0, 0, 2)
    base = dict(n_features=10, primary="gene", gene_index=index, primary_dim=4, class_dim=8, pair=(1, 2))
    additive, joint = ((0.5, -1.0, 0.25), (2.0, 1.0)), ((1.0, 0.0, -0.5), (0.25, 1.0))
    c = CapsuleConfig(**base, pair_axes=additive, pair_interaction_axes=joint)
    torch.manual_seed(0)
    model = CapsuleNet(c).eval()
    assert c.pair_inputs == 13 and count_parameters(model) == parameter_count(c)
    assert CapsuleConfig.from_dict(c.to_dict()) == c
    x = torch.randn(6, 10)
    xa, xb = x[:, [1, 2, 4]], x[:, [3, 9]]

    def product(axes):
        return ((xa @ torch.tensor(axes[0])) * (xb @ torch.tensor(axes[1])))[:, None]

    z = torch.cat([xa, xb, (xa[:, :, None] * xb[:, None, :]).reshape(6, 6), product(additive), product(joint)], 1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    # the interacting axes alone, without the PC products or the additive axes: Q = 3 + 2 + 1
    lone = CapsuleConfig(**base, pair_products=False, pair_interaction_axes=joint)
    model = CapsuleNet(lone).eval()
    assert lone.pair_inputs == 6 and count_parameters(model) == parameter_count(lone)
    z = torch.cat([xa, xb, product(joint)], 1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    # a config.json written before the field loads without it
    old = {k: v for k, v in c.to_dict().items() if k != "pair_interaction_axes"}
    assert CapsuleConfig.from_dict(old).pair_interaction_axes == ()
    with pytest.raises(ValueError, match="pair_interaction_axes must give one weight per column"):
        CapsuleNet(CapsuleConfig(**base, pair_interaction_axes=((1.0, 0.0), (0.25, 1.0))))
    with pytest.raises(ValueError, match="a pair capsule needs gene primary capsules"):
        CapsuleNet(CapsuleConfig(n_features=10, pair_interaction_axes=joint))


def test_capsule_train_saves_the_interacting_axes_and_capsule_predict_applies_them(tmp_path, cli):
    """The exclusive-or cohort above as a feature folder: capsule-train (two folds, a test set) calls
    the pair and gives it a pair capsule of the two genes' PCs and the two rank-1 views, without the
    144 PC products (model.pair_products false); the interacting axes, fitted on the final model's
    inner training rows (680 of the 800), are saved in config.json and point along the planted
    directions (|cos| above 0.9, as on all the rows above). capsule-predict applies the saved axes
    with no refit and gives the test predictions capsule-train wrote, byte for byte; -t 1 and -t 2
    give the same model and results. The gene screen switches off the two noise genes
    (model.genes_off), not the pair. The baselines' lr_network_inputs row is a logistic regression of
    what the saved network reads (CapsuleNet.read_inputs), fit on the non-test rows."""
    import json

    from conftest import read_tsv

    folder, u = xor_folder(tmp_path)
    base = ["capsule-train", folder, "-p", tmp_path / "pheno.tsv", "--folds", "2", "--epochs", "20"]
    for threads in ("1", "2"):
        res = cli(*base, "-t", threads, "-o", tmp_path / threads)
        assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "1" / "config.json").read_text())
    assert config["interaction"]["interacting"] is True
    model = config["model"]
    assert model["pair"] == [2, 3] and model["pair_products"] is False
    # the gene screen (fit.screened_out) switched off the two noise genes and kept the pair, which has no
    # marginal effect; capsule-predict below applies the saved screen too
    assert config["training"]["gene_screen"] == 0.001 and model["genes_off"] == [4, 5]
    decisive = [r["gene"] for r in read_tsv(tmp_path / "1" / "genes.tsv") if r["decisive"] == "yes"]
    assert not {"chr1:G4", "chr1:G5", "G4", "G5"} & set(decisive)
    assert [len(axis) for axis in model["pair_interaction_axes"]] == [12, 12]
    assert min(np.abs(cosines(model["pair_interaction_axes"], u[[2, 3]]))) > 0.9
    # the learned split starts at each interacting score's median on those rows (sd 1, so near 0)
    assert [len(cut) for cut in model["pair_cuts"]] == [1, 1] and model["pair_cut_width"] == 0.2
    assert max(abs(cut[0]) for cut in model["pair_cuts"]) < 0.2
    assert all((tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
               for name in ("config.json", "model.safetensors", "test_predictions.tsv", "results.tsv", "folds.tsv"))
    res = cli("capsule-predict", tmp_path / "1", folder, "-o", tmp_path / "p.tsv")
    assert res.exit_code == 0, res.output
    wrote = {r["sample"]: (r["p_control"], r["p_case"]) for r in read_tsv(tmp_path / "1" / "test_predictions.tsv")}
    predicted = {r["sample"]: (r["p_control"], r["p_case"]) for r in read_tsv(tmp_path / "p.tsv")}
    assert len(wrote) == 200 and {s: predicted[s] for s in wrote} == wrote
    results = {r["method"]: r for r in read_tsv(tmp_path / "1" / "results.tsv")}
    assert list(results) == ["capsule", "logistic_regression", "svm", "random_forest", "adaboost", "mlp",
                             "lr_network_inputs"]
    # the row, recomputed from the saved model: its scaler, the columns and pair view it reads, the split
    from sklearn.linear_model import LogisticRegression

    from genointerp.capsule.scaler import Scaler
    from genointerp.io.features import read_features
    from genointerp.model_folder import load_model_dir

    net, saved = load_model_dir(tmp_path / "1", expect="capsule")
    features = read_features(str(folder))
    x = Scaler.from_dict(saved["scaler"])(features.matrix.astype(np.float64))
    y = np.array([r["class"] == "case" for r in read_tsv(tmp_path / "1" / "split.tsv")])
    test = np.array([r["set"] == "test" for r in read_tsv(tmp_path / "1" / "split.tsv")])
    with torch.inference_mode():
        read = net.read_inputs(torch.from_numpy(x.astype(np.float32))).numpy()
    assert read.shape[1] == 4 * 12 + net.config.pair_inputs  # genes 0-3 (4 and 5 screened off), the pair's view
    calls = LogisticRegression(max_iter=2000).fit(read[~test], y[~test]).predict(read[test])
    assert results["lr_network_inputs"]["test_accuracy"] == f"{(calls == y[test]).mean():.4f}"
    # the exclusive-or is out of a linear model's reach on the PCs, not on the interacting axes' product
    # the pair capsule reads (0.795 against 0.715 here)
    assert float(results["lr_network_inputs"]["test_accuracy"]) > float(results["logistic_regression"]["test_accuracy"]) + 0.05


def test_a_network_with_a_pair_capsule_takes_its_best_epoch_from_pair_min_epochs_on():
    """Early stopping keeps the epoch of the lowest inner validation margin loss; with a pair capsule
    only from epoch PAIR_MIN_EPOCHS on (the pair capsule's weights need epochs to grow, and an early
    minimum of a noisy validation loss stopped interacting cohorts before they had). With --patience 1
    (and a learning rate at which this cohort's validation loss first rises at epoch 5 and is lowest
    at epoch 9) the network with the pair capsule runs past PAIR_MIN_EPOCHS and keeps the best of the
    epochs from there; the same network without the pair capsule keeps the best of all its epochs."""
    from genointerp.capsule.fit import PAIR_MIN_EPOCHS, fit_capsule
    from genointerp.capsule.settings import CapsuleSettings
    from genointerp.capsule.splits import inner_split

    x, y, _ = xor_cohort()
    config = CapsuleConfig(n_features=72, primary="gene", gene_index=tuple(j // 12 for j in range(72)))
    _, va = inner_split(y, 0.15, np.random.default_rng(1))
    for pair_capsule in (True, False):
        s = CapsuleSettings(epochs=40, patience=1, lr=0.03, gene_penalty=0.0012, pair_screen=True,
                            pair_capsule=pair_capsule)
        history = []
        model = fit_capsule(x, y, config, s, 1, history)
        assert model.config.pair == ((2, 3) if pair_capsule else ())
        with torch.inference_mode():
            kept = float(model.loss(model(torch.from_numpy(x[va])), torch.from_numpy(y[va])))
        floor = PAIR_MIN_EPOCHS if pair_capsule else 1
        assert len(history) > floor
        assert kept == pytest.approx(min(h["valid_loss"] for h in history if h["epoch"] >= floor), abs=1e-7)


def test_a_pair_capsule_with_cut_points_reads_soft_steps_of_the_interacting_scores_and_their_products():
    # the pair of the test above (K_a = 3, K_b = 2) with its interacting axes alone and cut points on
    # the interacting scores t_a (two cuts) and t_b (one): the pair capsule reads [x_a, x_b, t_a t_b,
    # then sigmoid((t_a - c_a) / w) (2), sigmoid((t_b - c_b) / w) (1) and the 2 x 1 products]:
    # Q = 3 + 2 + 1 + 2 + 1 + 2 = 11; the learned split's offsets (axes 3 + 2, cuts 2 + 1) start at 0
    index = (0, 1, 1, 2, 1, 3, 3, 0, 0, 2)
    base = dict(n_features=10, primary="gene", gene_index=index, primary_dim=4, class_dim=8, pair=(1, 2),
                pair_products=False)
    joint = ((1.0, 0.0, -0.5), (0.25, 1.0))
    c = CapsuleConfig(**base, pair_interaction_axes=joint, pair_cuts=((-0.5, 0.25), (0.0,)), pair_cut_width=0.2)
    torch.manual_seed(0)
    model = CapsuleNet(c).eval()
    assert c.pair_inputs == 11 and count_parameters(model) == parameter_count(c)
    assert parameter_count(c) == parameter_count(replace(c, pair_cuts=(), pair_cut_width=0.0)) + 5 * 4 + 8
    assert CapsuleConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert all(float(getattr(model, f"pair_step_{p}").detach().abs().sum()) == 0
               for p in ("axis_a", "axis_b", "cut_a", "cut_b"))
    x = torch.tensor([[0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                      [0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0],
                      [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    xa, xb = x[:, [1, 2, 4]], x[:, [3, 9]]
    ta = torch.tensor([1.0, -1.0, -0.5])  # x_a . (1, 0, -0.5) by hand
    tb = torch.tensor([0.5, -1.0, 1.25])  # x_b . (0.25, 1)
    sig = lambda v: 1 / (1 + torch.exp(-v))  # noqa: E731
    ha = torch.stack([sig((ta + 0.5) / 0.2), sig((ta - 0.25) / 0.2)], 1)
    hb = sig(tb / 0.2)[:, None]
    z = torch.cat([xa, xb, (ta * tb)[:, None], ha, hb, ha * hb], 1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    assert torch.allclose(model.pair_input(x), z, atol=1e-6)  # the pair capsule's inputs on their own
    # a sample at a cut sits half-way up its step: t_a = -0.5 is the first cut of gene a
    assert float(ha[2, 0]) == 0.5
    # the learned split: the steps read x_a . (v_a + d_a) - (c_a + e_a), the product t_a t_b the fixed axes
    with torch.no_grad():
        model.pair_step_axis_a.copy_(torch.tensor([0.0, 1.0, 0.0]))
        model.pair_step_cut_b.copy_(torch.tensor([0.5]))
    ta2 = torch.tensor([1.0, -1.0, 0.5])  # x_a . (1, 1, -0.5)
    ha = torch.stack([sig((ta2 + 0.5) / 0.2), sig((ta2 - 0.25) / 0.2)], 1)
    hb = sig((tb - 0.5) / 0.2)[:, None]
    z = torch.cat([xa, xb, (ta * tb)[:, None], ha, hb, ha * hb], 1)
    assert torch.allclose(model.primary(x)[:, 4], squash(z @ model.pair_weight + model.pair_bias), atol=1e-6)
    # a config.json written before the cut points loads without them
    old = {k: v for k, v in c.to_dict().items() if k not in ("pair_cuts", "pair_cut_width")}
    assert CapsuleConfig.from_dict(old).pair_cuts == () and CapsuleConfig.from_dict(old).pair_inputs == 6
    for bad, match in (({"pair_interaction_axes": ()}, "need pair_interaction_axes"),
                       ({"pair_cuts": ((0.5, 0.25), (0.0,))}, "finite, increasing cut points"),
                       ({"pair_cuts": ((0.0,), ())}, "finite, increasing cut points"),
                       ({"pair_cuts": ((0.0,),)}, "finite, increasing cut points"),
                       ({"pair_cuts": ((float("nan"),), (0.0,))}, "finite, increasing cut points"),
                       ({"pair_cut_width": 0.0}, "pair_cut_width must be above 0")):
        with pytest.raises(ValueError, match=match):
            CapsuleNet(CapsuleConfig(**{**base, "pair_interaction_axes": joint, "pair_cuts": c.pair_cuts,
                                        "pair_cut_width": 0.2, **bad}))


def test_the_cut_points_are_quantiles_of_the_interacting_scores_on_the_fitting_rows():
    """fit.pair_cuts: the given quantiles of each gene's interacting score x_g . v_g on these rows
    (np.quantile's, linear between order statistics); equal quantiles, as a score of few distinct
    values gives, cut once."""
    x, y, _ = xor_cohort()
    config = CapsuleConfig(n_features=x.shape[1], primary="gene", gene_index=tuple(j // 12 for j in range(72)),
                           pair=(2, 3))
    config = replace(config, pair_interaction_axes=interaction_axes(x, y, config))
    cuts = pair_cuts(x, config, (0.25, 0.5, 0.75))
    for cut, axis, cols in zip(cuts, config.pair_interaction_axes, (slice(24, 36), slice(36, 48))):
        score = x[:, cols].astype(np.float64) @ np.array(axis)
        assert cut == pytest.approx(tuple(np.quantile(score, (0.25, 0.5, 0.75))), rel=1e-12, abs=1e-12)
        assert abs(float(np.mean(score < cut[1])) - 0.5) < 0.01
    # one gene of one column holding 0 in 70 % of the rows: its 25 % and 50 % quantiles are both 0
    z = np.zeros((10, 2), np.float32)
    z[7:, 0], z[:, 1] = 1.0, np.arange(10)
    small = CapsuleConfig(n_features=2, primary="gene", gene_index=(0, 1), pair=(0, 1),
                          pair_interaction_axes=((1.0,), (1.0,)))
    assert pair_cuts(z, small, (0.25, 0.5, 0.75)) == ((0.0, 0.75), (2.25, 4.5, 6.75))


def test_the_network_reads_its_kept_columns_in_order_then_the_pair_capsules_inputs():
    # the pair test's layout above with gene 3 screened off (genes_off) and column 7 of gene 0 switched
    # off by the burden view (columns_off): the gene capsules read columns 0-4, 8 and 9; the pair capsule
    # its Q = 11 inputs. read_inputs is what a linear model of the network's own inputs gets
    index = (0, 1, 1, 2, 1, 3, 3, 0, 0, 2)
    c = CapsuleConfig(n_features=10, primary="gene", gene_index=index, primary_dim=4, class_dim=8, pair=(1, 2),
                      pair_products=False, pair_interaction_axes=((1.0, 0.0, -0.5), (0.25, 1.0)),
                      pair_cuts=((-0.5, 0.25), (0.0,)), pair_cut_width=0.2, genes_off=(3,), columns_off=(7,))
    torch.manual_seed(0)
    model = CapsuleNet(c).eval()
    x = torch.from_numpy(np.random.default_rng(1).normal(size=(5, 10)).astype(np.float32))
    read = model.read_inputs(x)
    assert read.shape == (5, 7 + 11)
    assert torch.equal(read[:, :7], x[:, [0, 1, 2, 3, 4, 8, 9]]) and torch.equal(read[:, 7:], model.pair_input(x))
    without_pair = CapsuleNet(replace(c, pair=(), pair_products=True, pair_interaction_axes=(), pair_cuts=(),
                                      pair_cut_width=0.0)).eval()
    assert torch.equal(without_pair.read_inputs(x), x[:, [0, 1, 2, 3, 4, 8, 9]])
    with pytest.raises(ValueError, match="gene primary capsules"):
        CapsuleNet(CapsuleConfig(n_features=10, hidden=16, primary_channels=4, kernel_size=5, class_dim=8)).read_inputs(x)
