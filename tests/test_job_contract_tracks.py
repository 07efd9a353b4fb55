"""The job contract (genointerp.job) for train-tracks, predict-tracks, evaluate-tracks and attn-maps:
each job is a library call that applies the rules the CLI applies. A case builds a request that
breaks one rule without the CLI and expects the one-line UsageError the command line gets (exit 2,
the same words), and nothing written; a case without a command line covers a value the CLI's own
option parsing refuses first (a library caller has no such guard)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract_cases import check_case

from genointerp.job import execute

DATA = Path(__file__).resolve().parent.parent / "test-data"
FASTA, TARGETS = str(DATA / "tracks" / "ref.fa.gz"), str(DATA / "tracks" / "targets.tsv")
READS = str(DATA / "tumor_small.fq.gz")


def _train(output: str, **fields):
    from genointerp.tracks.train import TrainTracksRequest, run

    return run, TrainTracksRequest(output=output, **fields)


def _predict(output: str, **fields):
    from genointerp.tracks.predict import PredictTracksRequest, run

    return run, PredictTracksRequest(fasta=FASTA, output=output, **fields)


def _evaluate(output: str, **fields):
    from genointerp.tracks.evaluate import EvaluateTracksRequest, run

    return run, EvaluateTracksRequest(output=output, fasta=FASTA, targets=TARGETS, **fields)


def _attn(output: str, **fields):
    from genointerp.interpret.attn_maps import AttnMapsRequest, run

    return run, AttnMapsRequest(output=output, **fields)


TRAIN = ["train-tracks", "-R", FASTA, "--targets", TARGETS]
EVALUATE = ["evaluate-tracks", "-R", FASTA, "--targets", TARGETS, "--chroms", "chr2"]

# (id, job and request for an output path, the same command line or None, the message both give)
CASES = [
    ("train-tracks: mse loss with balanced weights",
     lambda o: _train(o, fasta=FASTA, targets=TARGETS, loss="mse", track_weights="balanced"),
     [*TRAIN, "--loss", "mse", "--track-weights", "balanced"], "--track-weights: --loss mse weighs each track"),
    ("train-tracks: --basenji with --fasta", lambda o: _train(o, fasta=FASTA, targets=TARGETS, basenji=o + "_set"),
     [*TRAIN, "--basenji", "{out}_set"], "--basenji: give either --basenji or -R/--reference and --targets"),
    ("train-tracks: --motif-freeze-epochs without --motif-init",
     lambda o: _train(o, fasta=FASTA, targets=TARGETS, motif_freeze_epochs=1),
     [*TRAIN, "--motif-freeze-epochs", "1"], "give --motif-init jaspar"),
    ("train-tracks: --resume with nothing to resume", lambda o: _train(o, fasta=FASTA, targets=TARGETS, resume=True),
     [*TRAIN, "--resume"], "--resume: no checkpoint to resume in"),
    ("train-tracks: a negative seed", lambda o: _train(o, fasta=FASTA, targets=TARGETS, seed=-1),
     None, "--seed: -1 is outside 0.."),
    ("predict-tracks: --regions and --chroms", lambda o: _predict(o, regions=TARGETS, chroms=["chr1"]),
     ["predict-tracks", "-R", FASTA, "--regions", TARGETS, "--chroms", "chr1"],
     "--regions: give --regions or --chroms, not both"),
    ("predict-tracks: nothing to predict", lambda o: _predict(o),
     ["predict-tracks", "-R", FASTA], "--regions: give --regions BED or --chroms"),
    ("predict-tracks: a quantile above 1", lambda o: _predict(o, chroms=["chr1"], peak_quantile=2.0),
     None, "--peak-quantile: 2.0 is outside 0..1"),
    ("predict-tracks: an unknown precision", lambda o: _predict(o, chroms=["chr1"], precision="fp32"),
     None, "--precision: 'fp32' is not one of"),
    ("evaluate-tracks: --scatter with one model", lambda o: _evaluate(o, chroms=["chr2"], scatter=o + ".png"),
     [*EVALUATE, "--scatter", "{out}.png"], "--scatter: --scatter compares two models"),
    ("evaluate-tracks: controls without training regions", lambda o: _evaluate(o, chroms=["chr2"], controls=True),
     [*EVALUATE, "--controls"], "--fit-regions: the cpg/gc controls are fitted per track on training data"),
    ("evaluate-tracks: --plot without --plot-region", lambda o: _evaluate(o, chroms=["chr2"], plot=o + ".png"),
     [*EVALUATE, "--plot", "{out}.png"], "--plot: give --plot-region and --plot together"),
    ("evaluate-tracks: three models", lambda o: _evaluate(o, chroms=["chr2"], models=["cpg", "gc", "cpg"]),
     [*EVALUATE, "-m", "cpg", "-m", "gc", "-m", "cpg"], "--model: give at most two models"),
    ("attn-maps: --read-id without reads",
     lambda o: _attn(o, read_ids=["r1"], fasta=FASTA, region=["chr1:0-100"]),
     ["attn-maps", "--read-id", "r1", "-R", FASTA, "--region", "chr1:0-100"], "--read-id: --read-id picks reads"),
    ("attn-maps: reads and regions", lambda o: _attn(o, reads=[READS], fasta=FASTA, region=["chr1:0-100"]),
     ["attn-maps", READS, "-R", FASTA, "--region", "chr1:0-100"], "READS: give READS (XVir) or -R/--reference"),
    ("attn-maps: a malformed --region", lambda o: _attn(o, fasta=FASTA, region=["chr1:100"]),
     ["attn-maps", "-R", FASTA, "--region", "chr1:100"], "--region 'chr1:100': expected chr:start-end"),
    ("attn-maps: no reads to take", lambda o: _attn(o, reads=[READS], max_reads=0), None, "--max-reads: 0 is below 1"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_request_gets_the_cli_error_without_the_cli(case, cli, tmp_path):
    check_case(case, cli, tmp_path)


def test_predict_tracks_runs_as_a_library_call(tmp_path):
    """predict-tracks through execute() (the built-in model): a bigWig and a peak BED per track."""
    run, req = _predict(str(tmp_path / "pred"), chroms=["20"], device="cpu")
    req.fasta = str(DATA / "chr20_slice.fa.gz")
    summary = execute(run, req)
    ids = list(summary["peaks"])
    assert summary["tracks"] == len(ids) > 0
    assert sorted(p.name for p in (tmp_path / "pred").glob("*.bw")) == sorted(f"{i}.bw" for i in ids)
    assert all((tmp_path / "pred" / f"{i}.peaks.bed").is_file() for i in ids)


def test_attn_maps_runs_as_a_library_call(tmp_path):
    """attn-maps through execute() (the built-in XVir model): the maps and their description."""
    run, req = _attn(str(tmp_path / "attn"), reads=[READS], max_reads=2, plot_items=0, device="cpu")
    summary = execute(run, req)
    assert summary["figures"] == 0 and "attention.npz" in summary["files"]
    doc = json.loads((tmp_path / "attn" / "attention.json").read_text())
    assert doc["n_items"] == 2 and doc["input"]["reads"] == [READS]
