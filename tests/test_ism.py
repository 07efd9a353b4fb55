"""ism (in-silico mutagenesis) end to end on the synthetic genome in test-data/tracks, with a tiny
track model trained for one epoch: shapes, the definitions recomputed by hand, the bigWig against
the TSV, determinism under hostile arithmetic, and the refusals. A one-epoch model is too weak for
a biological claim (that the planted AP-1 sites matter): the benchmark makes that one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyBigWig
import pytest

from conftest import DATA, assert_one_error_line, train_into

TRACKS = DATA / "tracks"
FASTA, TARGETS = TRACKS / "ref.fa.gz", TRACKS / "targets.tsv"
TRACK_IDS = ["motif_a", "motif_b", "cellX.TF1.conservative", "cellX.TF2.conservative"]
# 1,024 bp windows, 16 target bins of 32 bp: a 512 bp target span, 256 bp of flank on each side
TINY = ["--seq-len", 1024, "--bin-size", 32, "--target-bins", 16, "--width", 16, "--batch-size", 8, "--lr", 3e-3,
        "--seed", 2, "--device", "cpu", "--epochs", 1]
AP1 = "chr1\t860\t880\tap1\n"  # 20 bp around the AP-1 site TGACTCA at chr1:868-875 (0-based 868)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_into(tmp_path_factory, "tiny", "train-tracks", "-R", FASTA, "--targets", TARGETS, *TINY)


def ism(cli, model, bed_text: str, out: Path, *extra):
    bed = out.parent / f"{out.name}.bed"
    bed.write_text(bed_text)
    return cli("ism", "-m", model, "-R", FASTA, "--regions", bed, "-o", out, "--device", "cpu", *extra)


def rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    return [line.split("\t") for line in lines]


def test_tables_hold_three_mutations_per_base_and_track(model, cli, tmp_path):
    from genointerp.io.reference import Reference

    res = ism(cli, model, AP1 + "chr2\t1000\t1010\n", tmp_path / "o")
    assert res.exit_code == 0, res.stderr
    table = rows(tmp_path / "o" / "ism.tsv")
    assert table[0] == ["chrom", "pos", "ref", "alt", "track", "effect"]
    assert len(table) - 1 == 30 * 3 * 4  # 30 bases x 3 alternatives x 4 tracks
    ref = Reference(str(FASTA))
    for chrom, pos, r, alt, track, effect in table[1:]:
        assert r == "ACGT"[ref.codes(chrom, int(pos) - 1, int(pos))[0]]  # 1-based pos
        assert alt in "ACGT" and alt != r and track in TRACK_IDS
        float(effect)
    positions = [(c, int(p)) for c, p, *_ in table[1:]]
    assert sorted(set(positions)) == [("chr1", p) for p in range(861, 881)] + [("chr2", p) for p in range(1001, 1011)]
    # base, then alternative (A, C, G, T order), then track
    first = table[1:13]
    assert [t[4] for t in first] == TRACK_IDS * 3
    assert [t[3] for t in first[::4]] == sorted({"A", "C", "G", "T"} - {first[0][2]})
    bases = rows(tmp_path / "o" / "ism.bases.tsv")
    assert bases[0] == ["chrom", "pos", "ref", "track", "importance", "max_drop"] and len(bases) - 1 == 30 * 4
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert {k: summary[k] for k in ("regions", "bases", "bases_scored", "mutations", "tracks", "windows")} == \
        {"regions": 2, "bases": 30, "bases_scored": 30, "mutations": 90, "tracks": 4, "windows": 2}
    assert sorted(p.name for p in (tmp_path / "o").iterdir() if p.suffix == ".bw") == \
        sorted(f"{t}.ism.bw" for t in TRACK_IDS)


def test_effect_is_mutated_minus_reference_summed_over_the_regions_bins(model, tmp_path):
    """Through the Python API. chr1:860-880 lies in bins 26-27 (32 bp), so its window is centred on
    them: targets from bin 26 - (16 - 2) // 2 = 19, DNA from 19 * 32 - 256 = 352 to 1,376, effects
    summed over target bins 7 and 8. The model's first pass holds the reference and the first
    five bases' mutations, so rebuilding that pass by hand gives the same float32 rates."""
    import torch

    from genointerp.io.reference import Reference
    from genointerp.job import execute
    from genointerp.model_folder import load_model_dir
    from genointerp.seq.onehot import one_hot
    from genointerp.tracks.ism import IsmRequest, run

    (tmp_path / "r.bed").write_text(AP1)
    summary = execute(run, IsmRequest(regions=str(tmp_path / "r.bed"), fasta=str(FASTA), output=str(tmp_path / "o"),
                                      model=str(model), device="cpu"))
    assert summary["bases_scored"] == 20 and summary["model_passes"] == -(-(1 + 60) // 16)
    codes = Reference(str(FASTA)).codes("chr1", 352, 1376)
    x = [one_hot(codes)]
    muts = []
    for off in range(860 - 352, 865 - 352):  # the first five bases: 15 mutations fill the pass
        for alt in [a for a in range(4) if a != codes[off]]:
            mutated = codes.copy()
            mutated[off] = alt
            x.append(one_hot(mutated))
            muts.append((352 + off + 1, "ACGT"[alt]))
    net, _ = load_model_dir(model)
    with torch.no_grad():
        pred = net(torch.from_numpy(np.stack(x))).numpy().astype(np.float64)
    expect = (pred[1:, 7:9] - pred[0, 7:9]).sum(axis=1)  # (15, tracks)
    got = {(int(p), alt, t): float(e) for _, p, _, alt, t, e in rows(tmp_path / "o" / "ism.tsv")[1:]}
    for i, (pos, alt) in enumerate(muts):
        for t, tid in enumerate(TRACK_IDS):
            assert got[(pos, alt, tid)] == pytest.approx(expect[i, t], rel=1e-5, abs=1e-12)


def test_bigwig_holds_minus_the_mean_effect_and_bases_table_the_max_drop(model, cli, tmp_path):
    assert ism(cli, model, AP1, tmp_path / "o").exit_code == 0
    effects: dict[tuple[int, str], list[float]] = {}
    for _, pos, _, _, track, e in rows(tmp_path / "o" / "ism.tsv")[1:]:
        effects.setdefault((int(pos), track), []).append(float(e))
    bases = {(int(p), t): (float(i), float(d)) for _, p, _, t, i, d in rows(tmp_path / "o" / "ism.bases.tsv")[1:]}
    assert set(bases) == set(effects) and all(len(v) == 3 for v in effects.values())
    for tid in TRACK_IDS:
        with pyBigWig.open(str(tmp_path / "o" / f"{tid}.ism.bw")) as bw:
            assert bw.chroms() == {"chr1": 40_000, "chr2": 20_000}
            values = bw.values("chr1", 860, 880)
            assert np.isnan(bw.values("chr1", 859, 860)[0]) and np.isnan(bw.values("chr1", 880, 881)[0])
        for i, v in enumerate(values):
            three = effects[(861 + i, tid)]
            tol = 1e-5 * max(abs(e) for e in three) + 1e-12  # the TSV holds 6 significant digits
            assert v == pytest.approx(-np.mean(three), abs=tol)
            importance, max_drop = bases[(861 + i, tid)]
            assert importance == pytest.approx(v, rel=1e-5, abs=1e-12)
            assert max_drop == pytest.approx(max(-e for e in three), abs=tol)


def test_tracks_picks_the_scored_tracks_and_unknown_ids_are_refused(model, cli, tmp_path):
    res = ism(cli, model, AP1, tmp_path / "o", "--tracks", "motif_b,motif_a")
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "o").glob("*.bw")) == ["motif_a.ism.bw", "motif_b.ism.bw"]
    assert [r[4] for r in rows(tmp_path / "o" / "ism.tsv")[1:5]] == ["motif_b", "motif_a"] * 2
    res = ism(cli, model, AP1, tmp_path / "p", "--tracks", "motif_a,CTCF")
    assert_one_error_line(res, "--tracks: CTCF not among the model's tracks (motif_a, motif_b,")
    assert res.exit_code == 2 and not (tmp_path / "p").exists()
    res = ism(cli, model, AP1, tmp_path / "p", "--tracks", "motif_a,motif_a")
    assert_one_error_line(res, "--tracks: motif_a is given twice")
    assert res.exit_code == 2 and not (tmp_path / "p").exists()


def test_tiling_puts_every_base_in_the_central_half_of_its_windows_targets():
    from genointerp.tracks.ism import plan_region

    # 1,000 bp from 20,010: bins 625..656 (32 bins) -> 4 pieces of 8 bins, windows' targets 4 bins before each
    windows = plan_region(20_010, 21_010, 1024, 32, 16)
    assert [w.start for w in windows] == [(625 + 8 * i - 4) * 32 - 256 for i in range(4)]
    assert windows[0].lo == 20_010 and windows[-1].hi == 21_010
    assert all(a.hi == b.lo for a, b in zip(windows, windows[1:]))
    for w in windows:
        first = (w.start + 256) // 32
        assert 4 <= w.lo // 32 - first and (w.hi - 1) // 32 - first < 12  # central half: target bins 4..11
        assert (first + w.bins.start, first + w.bins.stop) == (max(first, 625), min(first + 16, 657))
    # a region within one target span: one window centred on its bins
    (w,) = plan_region(860, 880, 1024, 32, 16)
    assert (w.start, w.lo, w.hi, w.bins) == (352, 860, 880, slice(7, 9))


def test_n_bases_are_not_mutated(model, cli, tmp_path):
    res = ism(cli, model, "chr1\t14990\t15010\n", tmp_path / "o")  # chr1 has N at [15,000, 16,000)
    assert res.exit_code == 0, res.stderr
    assert {int(r[1]) for r in rows(tmp_path / "o" / "ism.tsv")[1:]} == set(range(14991, 15001))
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["bases_scored"] == 10
    with pyBigWig.open(str(tmp_path / "o" / "motif_a.ism.bw")) as bw:
        values = np.array(bw.values("chr1", 14990, 15010))
    assert not np.isnan(values[:10]).any() and np.isnan(values[10:]).all()


def test_figure_draws_one_png_per_track(model, cli, tmp_path):
    assert ism(cli, model, AP1 + "chr2\t1000\t1300\n", tmp_path / "o", "--figure", "--tracks", "motif_a").exit_code == 0
    assert (tmp_path / "o" / "motif_a.ism.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "o" / "motif_b.ism.png").exists()


# chr2:5023-5505 (482 bp) covers bins 156-172, more than one target span: 3 windows; listed first, scored last
MANY = "chr2\t5023\t5505\tlong\n" + AP1 + "chr1\t20000\t20040\n"


def test_outputs_do_not_depend_on_batch_size_or_other_regions(model, cli, tmp_path, hostile):
    """Under arithmetic that moves with the batch shape: the same bytes for any --batch-size, and a
    region's rows and values are the same alone as beside others (chr1:20000-20040 is scored after
    chr1:860-880 in the run of three)."""
    names = ["ism.tsv", "ism.bases.tsv", *(f"{t}.ism.bw" for t in TRACK_IDS)]
    runs = {}
    for batch in (1, 200):  # passes of 16 windows, sent 16 or 208 at a time
        assert ism(cli, model, MANY, tmp_path / f"b{batch}", "--batch-size", batch).exit_code == 0
        runs[batch] = {n: (tmp_path / f"b{batch}" / n).read_bytes() for n in names}
    assert runs[1] == runs[200]
    for batch in (1, 200):  # with --shifts and --rc-average: six passes of each block, in the same order
        assert ism(cli, model, MANY, tmp_path / f"s{batch}", "--batch-size", batch, "--shifts", "-1,0,1",
                   "--rc-average").exit_code == 0
        runs[f"s{batch}"] = {n: (tmp_path / f"s{batch}" / n).read_bytes() for n in names}
    assert runs["s1"] == runs["s200"] and runs["s1"] != runs[1]
    assert json.loads((tmp_path / "b1" / "summary.json").read_text())["windows"] == 1 + 1 + 3
    assert ism(cli, model, "chr1\t20000\t20040\n", tmp_path / "one").exit_code == 0
    for table in ("ism.tsv", "ism.bases.tsv"):
        alone = (tmp_path / "one" / table).read_text().splitlines()
        beside = [line for line in (tmp_path / "b1" / table).read_text().splitlines()
                  if line.startswith("chr1\t200")]
        assert alone[1:] == beside and len(beside) == 40 * 4 * (3 if table == "ism.tsv" else 1)
    for tid in TRACK_IDS:
        with pyBigWig.open(str(tmp_path / "one" / f"{tid}.ism.bw")) as a, \
                pyBigWig.open(str(tmp_path / "b1" / f"{tid}.ism.bw")) as b:
            assert a.values("chr1", 20000, 20040) == b.values("chr1", 20000, 20040)


@pytest.mark.parametrize("bed, message", [
    ("chr1\t1000\t6001\n", "is 5,001 bp; ism scores regions of at most 5,000 bp"),
    ("chr1\t1000\t4000\nchr1\t3000\t6500\n", "overlapping regions merge into chr1:1000-6500 (5,500 bp)"),
    ("chr1\t39990\t40010\n", "off the end of chr1"),
    ("chr9\t0\t100\n", "chromosome chr9 is not in the reference"),
    ("", "no regions"),
    ("chr1\t100\n", "a BED line needs chrom, start, end"),
    ("chr1\tten\t100\n", "are not integers"),
])
def test_bad_regions_are_refused_with_one_line(model, cli, tmp_path, bed, message):
    res = ism(cli, model, bed, tmp_path / "o")
    assert_one_error_line(res, message)
    assert res.exit_code == 1 and not (tmp_path / "o").exists()


def test_a_fasta_without_index_and_a_non_track_model_are_refused(model, cli, tmp_path):
    from genointerp.resources import builtin_model_dir

    shutil.copy(FASTA, tmp_path / "ref.fa.gz")
    shutil.copy(str(FASTA) + ".gzi", tmp_path / "ref.fa.gz.gzi")
    (tmp_path / "r.bed").write_text(AP1)
    res = cli("ism", "-m", model, "-R", tmp_path / "ref.fa.gz", "--regions", tmp_path / "r.bed",
              "-o", tmp_path / "o")
    assert_one_error_line(res, "no index")
    assert res.exit_code == 1 and not (tmp_path / "o").exists()
    res = cli("ism", "-m", builtin_model_dir(), "-R", FASTA, "--regions", tmp_path / "r.bed", "-o", tmp_path / "o")
    assert_one_error_line(res, "not a track model")
    assert res.exit_code == 1 and not (tmp_path / "o").exists()


def test_chr_aliasing_in_the_bed_names_the_fasta_contig(model, cli, tmp_path):
    res = ism(cli, model, "1\t860\t870\n", tmp_path / "o")
    assert res.exit_code == 0, res.stderr
    assert "taken as chr1" in res.stderr
    assert {r[0] for r in rows(tmp_path / "o" / "ism.tsv")[1:]} == {"chr1"}


def test_help_states_the_region_limit():
    import typer.main

    from genointerp.cli import app
    from genointerp.tracks.ism import BLOCK, MAX_REGION

    command = typer.main.get_command(app).commands["ism"]
    helps = {p.name: p.help for p in command.params}
    assert f"at most {MAX_REGION:,} bp" in helps["regions"] and f"multiple of {BLOCK}" in helps["batch_size"]


def test_a_bad_request_gets_the_cli_error_without_the_cli(model, cli, tmp_path):
    from contract_cases import check_case
    from genointerp.tracks.ism import IsmRequest, run

    (tmp_path.parent / "r.bed").write_text(AP1)
    bed = str(tmp_path.parent / "r.bed")
    case = ("batch", lambda out: (run, IsmRequest(regions=bed, fasta=str(FASTA), output=out, model=str(model),
                                                   batch_size=0)),
            None, "--batch-size: 0 is below 1")
    check_case(case, cli, tmp_path)
    case = ("tracks", lambda out: (run, IsmRequest(regions=bed, fasta=str(FASTA), output=out, model=str(model),
                                                    tracks=["motif_a", "motif_a"])),
            ["ism", "-m", str(model), "-R", str(FASTA), "--regions", bed, "--tracks", "motif_a,motif_a"],
            "--tracks: motif_a is given twice")
    check_case(case, cli, tmp_path)


def test_an_all_n_region_scores_nothing_and_says_so(model, cli, tmp_path):
    res = ism(cli, model, "chr1\t15100\t15200\n", tmp_path / "o")
    assert res.exit_code == 0, res.stderr
    assert "nothing scored" in res.stderr and len(rows(tmp_path / "o" / "ism.tsv")) == 1
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["bases_scored"] == 0 and summary["model_passes"] == 0
