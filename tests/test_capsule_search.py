"""capsule-search: the GA operators, and the command on Gene-PCs of the 1000 Genomes fixture."""

import json

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line, interrupt_at_call, read_tsv, run_cli
from genointerp.capsule import pair_screen
from genointerp.capsule import genetic as ga
from genointerp.capsule import search as cs
from genointerp.capsule import subset_fitness as sf
from genointerp.capsule.settings import CapsuleSettings
from genointerp.capsule.splits import make_splits

# tiny: 4 subsets x 2 generations, 3 folds of 3 epochs
TINY = ["--population", "4", "--generations", "2", "--epochs", "3", "--patience", "2", "--subset-size", "2",
        "--seed", "3"]


# ---- GA operators ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [(2, 2), (3, 3), (2, 5)])
def test_crossover_keeps_the_subset_size_and_shared_genes(sizes):
    lo, hi = sizes
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = ga.random_subset(12, lo, hi, rng)
        b = ga.random_subset(12, lo, hi, rng)
        child = ga.crossover(a, b, 12, lo, hi, rng)
        assert lo <= len(child) <= hi and min(len(a), len(b)) <= len(child) <= max(len(a), len(b))
        assert len(set(child)) == len(child) and list(child) == sorted(child) and all(0 <= g < 12 for g in child)
        assert set(a) & set(b) <= set(child) or len(set(a) & set(b)) > len(child)
        if len(set(a) | set(b)) >= len(child):
            assert set(child) <= set(a) | set(b)  # repair fills from the parents first


def test_crossover_of_identical_parents_is_the_parent():
    rng = np.random.default_rng(1)
    assert ga.crossover((1, 4, 7), (1, 4, 7), 10, 3, 3, rng) == (1, 4, 7)


@pytest.mark.parametrize("swaps", [0, 1, 2, 3])
def test_mutation_swaps_exactly_that_many_genes(swaps):
    rng = np.random.default_rng(swaps)
    for _ in range(100):
        sub = ga.random_subset(9, 3, 3, rng)
        new = ga.mutate(sub, 9, swaps, rng)
        assert len(new) == len(sub) and len(set(sub) - set(new)) == swaps and len(set(new) - set(sub)) == swaps
    assert ga.mutate((0, 1, 2), 4, 2, rng) in {(0, 1, 3), (0, 2, 3), (1, 2, 3)}  # only one gene outside: one swap


def test_tournament_is_seeded_and_a_full_tournament_picks_the_best():
    ranks = [3, 0, 2, 1, 4]
    draws = [ga.tournament(ranks, 2, np.random.default_rng(7)) for _ in range(3)]
    assert draws[0] == draws[1] == draws[2]
    rng = np.random.default_rng(7)
    assert [ga.tournament(ranks, 2, rng) for _ in range(20)] == [ga.tournament(ranks, 2, r) for r in
                                                                  [np.random.default_rng(7)] for _ in range(20)]
    assert all(ga.tournament(ranks, 200, np.random.default_rng(s)) == 1 for s in range(5))


def test_next_population_keeps_the_elite_and_breeds_new_subsets():
    pop = [(0, 1), (2, 3), (4, 5), (6, 7)]
    fitness = [0.1, 0.3, -0.2, 0.0]
    s = ga.SearchSettings(population=4, min_size=2, max_size=2, elite=1)
    new = ga.next_population(pop, fitness, s, 10, set(pop), np.random.default_rng(0))
    assert new[0] == (2, 3) and len(new) == 4 and all(len(c) == 2 for c in new)
    assert len(set(new)) == 4 and not set(new[1:]) & set(pop)
    assert new == ga.next_population(pop, fitness, s, 10, set(pop), np.random.default_rng(0))


def test_fitness_credits_only_what_beats_logistic_regression_and_the_chance_gate():
    y = np.array([0, 1] * 500)
    chance, gate = pair_screen.chance_threshold(y, 2.0)
    assert chance == 0.5 and gate == pytest.approx(0.5 + 2 * np.sqrt(0.25 / 1000))
    # logistic regression below chance by noise: the capsule near chance gets no credit from it
    assert sf.fitness_of(0.50, 0.45, gate, 2, 2, 0.0) == pytest.approx(0.50 - gate) and 0.50 - gate < 0
    assert sf.fitness_of(0.70, 0.65, gate, 2, 2, 0.0) == pytest.approx(0.05)  # above both: the gain over LR
    assert sf.fitness_of(0.70, 0.65, gate, 4, 2, 0.01) == pytest.approx(0.03)  # two genes beyond the smallest size


def test_repeats_are_different_stratified_splits_and_seeded():
    y = np.array([0] * 40 + [1] * 20)
    splits = make_splits(y, ["a", "b"], 3, 3, seed=5)
    again = make_splits(y, ["a", "b"], 3, 3, seed=5)
    assert all(np.array_equal(a.fold_of, b.fold_of) for a, b in zip(splits, again))
    assert not np.array_equal(splits[0].fold_of, splits[1].fold_of)
    for s in splits:
        assert len(s.train) == 60 and not len(s.test)
        for k in range(3):
            _, ev = s.fold(k)
            assert 6 <= (y[ev] == 1).sum() <= 7
    seeds = {sf.repeat_fold_seed(5, 3, r, k) for r in range(3) for k in range(3)}
    assert len(seeds) == 9


def xor_problem(n=600, seed=0):
    """Five genes of 2 PCs each; the phenotype is the XOR of the signs of gene 1's and gene 3's first PC."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 10))
    y = ((x[:, 2] > 0) ^ (x[:, 6] > 0)).astype(np.int64)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)  # 10 % label noise
    columns = [f"1:G{g}:pc{k}" for g in range(5) for k in (1, 2)]
    splits = make_splits(y, ["a", "b"], 3, 1, 1)
    return sf.Problem(x, y, [np.array([2 * g, 2 * g + 1]) for g in range(5)], columns, splits,
                      CapsuleSettings(folds=3, test_fraction=0.0), {}, 2.0, 0.0, 2)


def test_the_pair_screen_puts_an_xor_pair_first_and_is_deterministic():
    problem = xor_problem()
    screened = sf.screen_pairs(problem)
    assert len(screened) == 10 and screened[0][0] == (1, 3)
    pair, score, products, additive = screened[0]
    assert products > 0.7 and additive < 0.6 and score > 0.15  # the products see what the additive model cannot
    assert all(r[1] < 0.05 for r in screened[1:])
    assert screened == sf.screen_pairs(problem)


def test_the_first_generation_starts_from_the_screen():
    screened = [((1, 3), 0.3, 0.9, 0.5), ((0, 2), 0.01, 0.5, 0.5), ((0, 1), 0.0, 0.5, 0.5)]
    s = ga.SearchSettings(population=5, min_size=2, max_size=3)
    pop = ga.first_generation(6, s, np.random.default_rng(0), screened)
    assert len(pop) == 5 and len(set(pop)) == 5 and all(2 <= len(p) <= 3 for p in pop)
    assert {1, 3} <= set(pop[0]) and {0, 2} <= set(pop[1]) and {0, 1} <= set(pop[2])
    assert pop == ga.first_generation(6, s, np.random.default_rng(0), screened)


# ---- the command ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """gene-pca on the fixture VCF (60 samples) and a phenotype: carrier status of one SNP."""

    d = tmp_path_factory.mktemp("search")
    res = run_cli("gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "-g",
                  str(DATA / "genes_chr21_22.bed"), "--keep-dosages", "-o", str(d / "pcs"))
    assert res.exit_code == 0, res.output
    dosages = np.load(d / "pcs" / "dosages.npy")
    samples = json.loads((d / "pcs" / "features.json").read_text())["samples"]
    carriers = (dosages > 0).mean(axis=0) + (dosages == -1).any(axis=0)
    case = dosages[:, int(np.argmin(np.abs(carriers - 0.5)))] > 0
    (d / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if c else 'control'}\n" for s, c in zip(samples, case)))
    return d


def without_seconds(path):
    return [line.rsplit("\t", 1)[0] for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def searched(cohort):
    res = run_cli("capsule-search", str(cohort / "pcs"), "-p", str(cohort / "pheno.tsv"),
                  "-o", str(cohort / "a"), *TINY)
    assert res.exit_code == 0, res.output
    return cohort, res


def test_search_writes_best_history_plot_and_settings(searched):
    d, res = searched
    out = d / "a"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".genointerp", "best.tsv", "screen.tsv", "history.tsv", "history.png", "search.json"])
    screen = read_tsv(out / "screen.tsv")
    genes = json.loads((out / "search.json").read_text())["inputs"]["genes"]
    assert list(screen[0]) == list(pair_screen.SCREEN_COLUMNS) and len(screen) == min(100, genes * (genes - 1) // 2)
    assert [float(r["score"]) for r in screen] == sorted((float(r["score"]) for r in screen), reverse=True)
    assert not (d / "a.checkpoint").exists()
    best = read_tsv(out / "best.tsv")
    assert list(best[0]) == list(cs.BEST_COLUMNS) and best[0]["rank"] == "1"
    assert all(r["n_genes"] == "2" and len(r["genes"].split(",")) == 2 for r in best)
    info = json.loads((out / "search.json").read_text())
    assert info["chance"] == pytest.approx(0.5, abs=0.1) and info["chance_threshold"] > info["chance"]
    for r in best:  # credit only above both logistic regression and the chance gate
        floor = max(float(r["cv_accuracy_logistic"]), info["chance_threshold"])
        assert float(r["fitness"]) == pytest.approx(float(r["cv_accuracy_capsule"]) - floor, abs=2e-4)
        for k in ("cv_accuracy_capsule", "cv_accuracy_logistic", "train_accuracy_capsule", "train_accuracy_logistic"):
            assert 0 <= float(r[k]) <= 1
        assert float(r["cv_difference_sd"]) >= 0
    assert [float(r["fitness"]) for r in best] == sorted((float(r["fitness"]) for r in best), reverse=True)
    history = read_tsv(out / "history.tsv")
    assert list(history[0]) == list(cs.HISTORY_COLUMNS) and [h["generation"] for h in history] == ["1", "2"]
    assert history[0]["evaluated"] == "4"
    assert max(float(h["best_fitness"]) for h in history) == float(best[0]["fitness"])
    assert (out / "history.png").read_bytes()[:4] == b"\x89PNG"
    assert info["settings"]["population"] == 4 and info["settings"]["seed"] == 3 and info["generations_run"] == 2
    assert info["inputs"]["phenotype"] == "status" and info["inputs"]["n_samples"] == 60
    assert info["best"]["genes"] == best[0]["genes"].split(",")
    lines = [line for line in res.stderr.splitlines() if "generation" in line]
    assert len(lines) == 2 and lines[0].startswith("[genointerp] generation 1/2: best fitness")


def test_same_seed_and_threads_give_identical_results(searched, cli):
    d, _ = searched
    args = ["capsule-search", d / "pcs", "-p", d / "pheno.tsv", *TINY]
    assert cli(*args, "-o", d / "b").exit_code == 0
    assert cli(*args, "-t", "2", "-o", d / "t2").exit_code == 0
    for other in ("b", "t2"):
        assert (d / other / "best.tsv").read_bytes() == (d / "a" / "best.tsv").read_bytes()
        assert without_seconds(d / other / "history.tsv") == without_seconds(d / "a" / "history.tsv")


def interrupted_search(d, name, cli, monkeypatch) -> list:
    """Run the TINY search into d/name, interrupted at its 6th fitness evaluation (in generation 2:
    generation 1 evaluates 4); returns its arguments."""
    args = ["capsule-search", d / "pcs", "-p", d / "pheno.tsv", *TINY, "-o", d / name]
    restore = interrupt_at_call(monkeypatch, sf, "evaluate", 6)
    assert cli(*args).exit_code != 0
    restore()
    return args


def test_resume_after_an_interruption_equals_the_uninterrupted_run(searched, cli, monkeypatch):
    d, _ = searched
    args = interrupted_search(d, "r", cli, monkeypatch)
    assert not (d / "r").exists() and (d / "r.checkpoint").exists()
    res = cli(*args)  # without --resume an old checkpoint is refused, not overwritten
    assert res.exit_code == 1 and not (d / "r").exists()
    assert_one_error_line(res, "an interrupted search's checkpoint: --resume it")
    res = cli(*args, "--resume")
    assert res.exit_code == 0 and "resuming" in res.stderr and "1 of 2 generations done" in res.stderr
    assert (d / "r" / "best.tsv").read_bytes() == (d / "a" / "best.tsv").read_bytes()
    assert without_seconds(d / "r" / "history.tsv") == without_seconds(d / "a" / "history.tsv")
    assert not (d / "r.checkpoint").exists()


def test_a_checkpoint_of_other_settings_is_refused(searched, cli, monkeypatch):
    d, _ = searched
    args = interrupted_search(d, "o", cli, monkeypatch)
    res = cli(*args, "--resume", "--epochs", "4")
    assert res.exit_code == 1 and not (d / "o").exists()
    assert_one_error_line(res, "the checkpoint is of a search with other inputs or settings")


def test_time_budget_stops_after_the_generation_that_crosses_it(searched, cli):
    d, _ = searched
    res = cli("capsule-search", d / "pcs", "-p", d / "pheno.tsv", *TINY, "--generations", "5",
              "--time-budget", "0", "-o", d / "tb")
    assert res.exit_code == 0 and "time budget reached" in res.stderr
    assert len(read_tsv(d / "tb" / "history.tsv")) == 1
    assert json.loads((d / "tb" / "search.json").read_text())["stopped_by_time_budget"] is True


def test_bad_options_are_one_error_line_and_leave_nothing(searched, cli):
    d, _ = searched
    genes = json.loads((d / "a" / "search.json").read_text())["inputs"]["genes"]
    base = ["capsule-search", d / "pcs", "-p", d / "pheno.tsv", "-o", d / "bad"]
    res = cli(*base, "--subset-size", genes + 1)
    assert res.exit_code == 1
    assert_one_error_line(res, f"--subset-size {genes + 1}: {d / 'pcs'} has only {genes} genes")
    res = cli(*base, "--population", "1")
    assert res.exit_code == 2 and "--population" in res.stderr
    res = cli(*base, "--subset-size", "3-2")
    assert res.exit_code == 2 and "expected 1 <= MIN <= MAX" in res.stderr
    assert not (d / "bad").exists() and not (d / "bad.checkpoint").exists()


def test_conv_primary_capsules_search_too(searched, cli):
    d, _ = searched
    res = cli("capsule-search", d / "pcs", "-p", d / "pheno.tsv", *TINY, "--generations", "1", "--primary", "conv",
              "-o", d / "conv")
    assert res.exit_code == 0, res.output
    info = json.loads((d / "conv" / "search.json").read_text())
    assert info["capsule"]["primary"] == "conv" and len(read_tsv(d / "conv" / "best.tsv")) == 4
    res = cli("capsule-search", d / "pcs", "-p", d / "pheno.tsv", *TINY, "--primary", "conv", "--hidden", "4",
              "-o", d / "conv2")
    assert res.exit_code == 2 and "--kernel-size/--hidden" in res.stderr and not (d / "conv2").exists()
