"""fit.refit (capsule-train --refit): after early stopping, the network is trained anew on every
training row for the epochs early stopping chose, its screens and pair views as first fitted."""

import json

import numpy as np
import pytest
import torch

from genointerp.capsule import fit
from genointerp.capsule.settings import CapsuleSettings
from genointerp.models.capsule import CapsuleConfig, CapsuleNet
from test_capsule_pair_view import xor_cohort


@pytest.fixture(scope="module")
def cohort():
    x, y, _ = xor_cohort(n=400)
    config = CapsuleConfig(n_features=72, primary="gene", gene_index=tuple(j // 12 for j in range(72)))
    return x, y, config


def settings(**kw) -> CapsuleSettings:
    return CapsuleSettings(epochs=15, patience=3, lr=0.01, gene_penalty=0.0012, pair_screen=True, pair_capsule=True,
                           gene_screen=0.001, **kw)


def test_refit_trains_every_row_for_the_chosen_epochs_with_the_first_trainings_screens(cohort, monkeypatch):
    x, y, config = cohort
    history = []
    first = fit.fit_capsule(x, y, config, settings(), 1, history)
    # what early stopping chose: the lowest validation loss from PAIR_MIN_EPOCHS on (a pair capsule here)
    assert first.config.pair == (2, 3)
    floor = fit.PAIR_MIN_EPOCHS
    best = min((h for h in history if h["epoch"] >= floor), key=lambda h: h["valid_loss"])["epoch"]
    passes = []
    real = fit.train_epoch

    def spy(model, opt, xt, yt, gen, s, penalty, exempt):
        passes.append((len(yt), penalty))
        return real(model, opt, xt, yt, gen, s, penalty, exempt)

    monkeypatch.setattr(fit, "train_epoch", spy)
    history_refit = []
    model = fit.fit_capsule(x, y, config, settings(refit=True), 1, history_refit)
    # the same first training (its history is what metrics.tsv shows), then `best` passes over all 400 rows
    # at the group penalty's weight for 400 rows
    assert history_refit == history
    first_pass = len(history)
    assert [n for n, _ in passes[:first_pass]] == [340] * first_pass  # 400 less the 15 % inner validation part
    assert passes[first_pass:] == [(400, fit.penalty_weight(settings(), 400))] * best
    # the screens, pair axes and cuts are the first training's; the weights are new
    assert model.config == first.config and not model.training
    assert model.screened_pair == first.screened_pair and model.pair_evidence == first.pair_evidence
    assert not all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), first.state_dict().values()))


def test_refit_is_a_pure_function_of_its_seed_and_starts_from_the_first_trainings_initialisation(cohort):
    x, y, config = cohort
    a, b = (fit.fit_capsule(x, y, config, settings(refit=True), 1) for _ in range(2))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    # no epochs: the initialisation the first training started from (its config is the first training's)
    start = fit.refit(x, y, a.config, settings(), 1, 0, a.screened_pair, a.pair_evidence)
    torch.manual_seed(1)
    init = CapsuleNet(a.config)
    assert all(torch.equal(start.state_dict()[k], init.state_dict()[k]) for k in init.state_dict())


def test_capsule_train_refit_is_recorded_and_the_same_at_any_thread_count(tmp_path, cli):
    from test_capsule_cli import QUICK, cohort as small_cohort, write_cohort

    feats, pheno = write_cohort(tmp_path, *small_cohort(60, 4))
    quick = [a for a in QUICK if a not in ("--primary", "conv")]
    for threads in ("1", "2"):
        res = cli("capsule-train", feats, "-p", pheno, *quick, "--refit", "-t", threads, "-o", tmp_path / threads)
        assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "1" / "config.json").read_text())
    assert cfg["training"]["refit"] is True
    for path in (tmp_path / "1").iterdir():
        assert path.read_bytes() == (tmp_path / "2" / path.name).read_bytes(), path.name
    # the default: on for gene capsules, off for the paper's conv capsules; --no-refit turns it off
    for args, name, want in ((quick, "default", True), ([*quick, "--no-refit"], "off", False), (QUICK, "conv", False)):
        res = cli("capsule-train", feats, "-p", pheno, *args, "-o", tmp_path / name)
        assert res.exit_code == 0, res.output
        assert json.loads((tmp_path / name / "config.json").read_text())["training"]["refit"] is want, name
