"""Issue 30, part 2, items 3-5: --resume refuses other inputs, denormals are flushed while models
run, and bad seeds, non-finite weights and Ctrl-C to capsule-search end in one line."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from conftest import DATA, assert_one_error_line, interrupt_at_call, run_cli

TRACKS = DATA / "tracks"
FASTA = TRACKS / "ref.fa.gz"
XVIR = ["-k", "4", "--length", "50", "--d-model", "16", "--heads", "2", "--batch-size", "64", "--seed", "3",
        "--epochs", "2", "--patience", "5"]
TRACK = ["-R", FASTA, "--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--width", "16",
         "--batch-size", "8", "--arch", "maxpool-cnn", "--epochs", "2", "--patience", "5", "--seed", "2",
         "--device", "cpu"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Two read files with other human reads (train-xvir needs both classes in each split), their
    kmerize datasets, and a targets table with absolute track paths."""

    d = tmp_path_factory.mktemp("sweep")
    lines = gzip.decompress((DATA / "tumor_small.fq.gz").read_bytes()).decode().splitlines(keepends=True)
    records = ["".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]
    human = [r for r in records if r.startswith("@human|")]
    other = [r for r in records if not r.startswith("@human|")]
    for name, part in (("a", human[:60]), ("b", human[60:120])):
        (d / f"{name}.fq").write_text("".join(part + other))
        res = run_cli("-q", "kmerize", str(d / f"{name}.fq"), "--label-field", "0", "-k", "4",
                      "--length", "50", "-o", str(d / f"{name}.kmers"))
        assert res.exit_code == 0, res.output
    rows = (TRACKS / "targets.tsv").read_text().splitlines()
    (d / "tracks").mkdir()
    for row in rows[1:]:
        shutil.copy(TRACKS / row.split("\t")[1], d / "tracks")
    (d / "tA.tsv").write_text("\n".join([rows[0]] + [
        "\t".join(c if i != 1 else str(d / "tracks" / c) for i, c in enumerate(r.split("\t"))) for r in rows[1:]]) + "\n")
    return d


def _cut(cli, monkeypatch, owner, name: str, args: list) -> None:
    """Run `args`, stopped at the second call of owner.name (the second validation): epoch 1 is kept."""
    restore = interrupt_at_call(monkeypatch, owner, name, 2)
    assert cli(*args).exit_code != 0
    restore()


# --- 3. --resume with other inputs ---------------------------------------------------------------

def _refused(res, message: str) -> None:
    """Exit 1 with one error line naming what differs (beside the warning that the finished epochs
    are kept), and no model directory."""
    errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error:")]
    assert res.exit_code == 1 and len(errors) == 1 and message in errors[0], res.stderr
    assert "Traceback" not in res.output


def test_train_xvir_resume_with_another_dataset_is_refused(inputs, cli, monkeypatch, tmp_path):
    import genointerp.runtime as runtime

    out = tmp_path / "m"
    _cut(cli, monkeypatch, runtime, "predict_proba", ["train-xvir", inputs / "a.kmers", *XVIR, "-o", out])
    ckpt = tmp_path / "m.checkpoint"
    before = (ckpt / "last.pt").read_bytes()
    _refused(cli("train-xvir", inputs / "b.kmers", *XVIR, "-o", out, "--resume"),
             "the interrupted run was started with other inputs or options: DATASET")
    _refused(cli("train-xvir", inputs / "a.kmers", *XVIR, "--positive", "human", "-o", out, "--resume"),
             "other inputs or options: positive")
    assert not out.exists()
    assert (ckpt / "last.pt").read_bytes() == before  # untouched: still there to resume properly
    moved = tmp_path / "moved.kmers"  # the same data elsewhere is the same run
    shutil.copytree(inputs / "a.kmers", moved)
    res = cli("train-xvir", moved, *XVIR, "-o", out, "--resume")
    assert res.exit_code == 0, res.output


def test_train_xvir_resume_with_other_read_files_is_refused(inputs, cli, monkeypatch, tmp_path):
    """Read files are tokenised into OUTPUT.checkpoint/ once: a resumed run with other files must
    not train on the first run's tokens."""
    import genointerp.runtime as runtime

    out = tmp_path / "m"
    _cut(cli, monkeypatch, runtime, "predict_proba", ["train-xvir", inputs / "a.fq", *XVIR, "-o", out])
    _refused(cli("train-xvir", inputs / "b.fq", *XVIR, "-o", out, "--resume"), "other inputs or options: DATASET")
    _refused(cli("train-xvir", inputs / "a.fq", *XVIR, "--label-field", "1", "-o", out, "--resume"),
             "other inputs or options: label_field")
    assert cli("train-xvir", inputs / "a.fq", *XVIR, "-o", out, "--resume").exit_code == 0


def test_train_tracks_resume_with_other_targets_is_refused(inputs, cli, monkeypatch, tmp_path):
    import genointerp.tracks.task as tracks

    rows = (inputs / "tA.tsv").read_text().splitlines()
    first = rows[1].split("\t")  # motif_a and its file
    cols = [r.split("\t") for r in rows]
    cols[1][1], cols[2][1] = cols[2][1], cols[1][1]  # two tracks' files swapped
    (tmp_path / "tB.tsv").write_text("\n".join("\t".join(c) for c in cols) + "\n")
    out = tmp_path / "m"
    full = tmp_path / "full"
    assert cli("train-tracks", *TRACK, "--targets", inputs / "tA.tsv", "-o", full).exit_code == 0
    _cut(cli, monkeypatch, tracks, "evaluate", ["train-tracks", *TRACK, "--targets", inputs / "tA.tsv", "-o", out])
    _refused(cli("train-tracks", *TRACK, "--targets", tmp_path / "tB.tsv", "-o", out, "--resume"),
             "the interrupted run was started with other inputs or options: --targets")
    _refused(cli("train-tracks", *TRACK, "--targets", inputs / "tA.tsv", "--stat", "max", "-o", out, "--resume"),
             "other inputs or options: stat")
    track = Path(first[1])  # a file the table names, changed in place (same table, same path)
    kept = track.read_bytes()
    shutil.copy(TRACKS / "other_assembly.bw", track)
    try:
        res = cli("train-tracks", *TRACK, "--targets", inputs / "tA.tsv", "-o", out, "--resume")
    finally:
        track.write_bytes(kept)
    _refused(res, f"other inputs or options: --targets track {first[0]};")
    res = cli("train-tracks", *TRACK, "--targets", inputs / "tA.tsv", "-o", out, "--resume")
    assert res.exit_code == 0, res.output
    a, b = load_file(full / "model.safetensors"), load_file(out / "model.safetensors")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


# --- 4. denormals --------------------------------------------------------------------------------

def _denormal_probe(monkeypatch, owner, name: str) -> list:
    """Wrap owner.name so that each call records what a denormal float32 (1e-39) becomes in
    arithmetic at that point: 0.0 when denormals are flushed."""
    import torch

    real, seen = getattr(owner, name), []

    def probing(*a, **k):
        seen.append(float((torch.tensor([1e-39], dtype=torch.float32) * 1.0)[0]))
        return real(*a, **k)

    monkeypatch.setattr(owner, name, probing)
    return seen


@pytest.fixture
def denormals_kept():
    """The test process starts with denormals kept (torch's default) and gets them back after."""
    import torch

    torch.set_flush_denormal(False)
    assert float(torch.tensor([1e-39], dtype=torch.float32) * 1.0) != 0.0
    yield
    torch.set_flush_denormal(False)


def test_training_runs_with_denormals_flushed(inputs, cli, monkeypatch, tmp_path, denormals_kept):
    import genointerp.train.loop as loop

    seen = _denormal_probe(monkeypatch, loop, "autocast")  # entered once per training step
    res = cli("train-xvir", inputs / "a.kmers", *XVIR, "--epochs", "1", "-o", tmp_path / "m")
    assert res.exit_code == 0, res.output
    assert seen and set(seen) == {0.0}


def test_inference_runs_with_denormals_flushed(inputs, cli, monkeypatch, tmp_path, denormals_kept):
    """The folded numpy model (what classify-reads runs on CPU) flushes denormals itself, in the
    job's thread and in its pool's threads: numpy, unlike torch, leaves the CPU's flags alone."""
    import numpy as np

    import genointerp.viral.classify.model_process as model_process
    from genointerp.models.xvir_folded import FoldedXVir

    seen, micro = [], FoldedXVir._micro

    def probing(self, tokens):
        seen.append(float(np.array([1e-39], np.float32)[0] * np.float32(1.0)))
        return micro(self, tokens)

    monkeypatch.setattr(FoldedXVir, "_micro", probing)
    monkeypatch.setattr(model_process.ModelProcess, "HERE", True)  # in this process, where the probe is
    for threads in ("1", "2"):
        res = cli("-q", "classify-reads", inputs / "a.fq", "--model-all", "-t", threads, "--device", "cpu",
                  "-o", tmp_path / f"c{threads}.tsv", "--force")  # the built-in model, on every read (where a GPU is too)
        assert res.exit_code == 0, res.output
    assert seen and set(seen) == {0.0}


# --- 5. tracebacks -------------------------------------------------------------------------------

def _seed_commands(d: Path, out: Path) -> dict[str, list]:
    return {
        "simulate-reads": ["simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-n", "10", "-o", out / "r.fq"],
        "train-xvir": ["train-xvir", d / "a.kmers", "-o", out / "m"],
        "train-tracks": ["train-tracks", *TRACK[:2], "--targets", d / "tA.tsv", "-o", out / "t"],
        "capsule-train": ["capsule-train", d / "a.kmers", "-p", d / "a.fq", "-o", out / "c"],
        "capsule-search": ["capsule-search", d / "a.kmers", "-p", d / "a.fq", "-o", out / "s"],
    }


@pytest.mark.parametrize("command", ["simulate-reads", "train-xvir", "train-tracks", "capsule-train", "capsule-search"])
@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_a_seed_out_of_range_is_a_usage_error(command, seed, inputs, cli, tmp_path):
    res = cli(*_seed_commands(inputs, tmp_path)[command], f"--seed={seed}")
    assert res.exit_code == 2
    assert_one_error_line(res, "--seed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_non_finite_fraction_is_a_usage_error(value, cli, tmp_path):
    res = cli("simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-s", f"human={DATA / 'chr20_slice.fa.gz'}",
              "-n", "10", "--fraction", f"viral={value}", "-o", tmp_path / "r.fq")
    assert res.exit_code == 2
    assert_one_error_line(res, f"{value!r} is not a finite number")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_mix_weight_is_a_usage_error(value, cli, tmp_path):
    res = cli("train-xvir", "--viral", DATA / "hpv4.fa", "--negative", f"human={DATA / 'chr20_slice.fa.gz'}",
              "--mix", f"viral={value}", "--mix", "human=1", "-o", tmp_path / "m")
    assert res.exit_code == 2
    assert_one_error_line(res, f"{value!r} is not a finite number")
    assert list(tmp_path.iterdir()) == []


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker processes")
def test_ctrl_c_to_capsule_search_with_workers_is_one_line(tmp_path):
    """Ctrl-C reaches every process of the terminal's process group: the workers too."""

    res = run_cli("-q", "gene-pca", str(DATA / "eur_chr21_22_small.vcf.gz"), "-g",
                  str(DATA / "genes_chr21_22.bed"), "-o", str(tmp_path / "pcs"))
    assert res.exit_code == 0, res.output
    samples = __import__("json").loads((tmp_path / "pcs" / "features.json").read_text())["samples"]
    (tmp_path / "pheno.tsv").write_text("sample\tstatus\n" + "".join(
        f"{s}\t{'case' if i % 2 else 'control'}\n" for i, s in enumerate(samples)))
    # the program as `python -m genointerp`, not the console script: a venv carried to another machine
    # (the GPU machine's) may not have it, and the test then failed before any signal was sent
    cmd = [sys.executable, "-m", "genointerp", "capsule-search", "pcs", "-p", "pheno.tsv", "--population", "8", "--generations", "50",
           "--epochs", "50", "--patience", "50", "--subset-size", "2", "-t", "2", "-o", "out"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_children(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None and len(_children(proc.pid)) >= 2, "no worker processes started"
        time.sleep(1.0)  # the workers are starting or evaluating
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = [line for line in err.splitlines() if not line.startswith("[genointerp]")]
    assert proc.returncode == 130, err
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert not (tmp_path / "out").exists()
