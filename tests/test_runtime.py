"""genointerp.runtime: device, precision, threads and batched inference, as promised, without the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genointerp import runtime
from genointerp.errors import InputError, UsageError

DATA = Path(__file__).resolve().parent.parent / "test-data"


def test_importing_runtime_loads_neither_torch_nor_numpy():
    code = ("import sys, genointerp.runtime\n"
            "print([m for m in ('torch', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_usable_threads_is_capped_by_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert [runtime.usable_threads(n) for n in (1, 3, 64)] == [1, 3, 3]
    assert runtime.usable_threads(0) == 1


def test_use_threads_sets_torch_and_returns_the_capped_number(monkeypatch):
    import torch

    before = torch.get_num_threads()
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    try:
        assert runtime.use_threads(8) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("requested", ["tpu", "gpu", "cuda:x", "CPU", "cuda:", ""])
def test_a_device_that_is_not_auto_cpu_or_cuda_is_a_usage_error(requested):
    with pytest.raises(UsageError, match="expected auto, cpu, cuda or cuda:N"):
        runtime.resolve_device(requested)


def test_devices_without_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.resolve_device("auto") == "cpu" and runtime.resolve_device("cpu") == "cpu"
    for requested in ("cuda", "cuda:1"):
        with pytest.raises(InputError, match="no CUDA device is available"):
            runtime.resolve_device(requested)


def test_cuda_under_torchrun_is_this_ranks_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert runtime.resolve_device("cuda") == "cuda:1" and runtime.resolve_device("cuda:0") == "cuda:0"
    with pytest.raises(InputError, match="only 2 CUDA device"):
        runtime.resolve_device("cuda:2")


@pytest.mark.parametrize("native", [True, False])
def test_device_for_refuses_fp16_on_cpu_and_warns_of_emulated_bf16(native, monkeypatch):
    monkeypatch.setattr(runtime, "cpu_has_bf16", lambda: native)
    warnings = []
    with pytest.raises(runtime.PrecisionUnsupported, match="16 needs a CUDA device"):
        runtime.device_for("cpu", runtime.Precision.fp16, warnings.append)
    assert runtime.device_for("cpu", "32", warnings.append) == "cpu" and warnings == []
    assert runtime.device_for("cpu", runtime.Precision.bf16, warnings.append) == "cpu"
    assert (len(warnings) == 1 and "no native bf16" in warnings[0]) is (not native)


def test_autocast_runs_bf16_only_when_asked():
    import torch

    a = torch.ones(4, 4)
    with runtime.autocast("cpu", "32"):
        assert (a @ a).dtype == torch.float32
    with runtime.autocast("cpu", "bf16"):
        assert (a @ a).dtype == torch.bfloat16


def _toy_classifier():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(16, 4), torch.nn.Flatten(), torch.nn.Linear(12, 1),
                               torch.nn.Flatten(0))


def test_predict_proba_is_the_sigmoid_of_the_logits_in_passes_of_any_size():
    import torch

    model = _toy_classifier()
    tokens = np.random.default_rng(1).integers(0, 16, (10, 3))
    with torch.no_grad():
        expected = torch.sigmoid(model(torch.from_numpy(tokens))).double().numpy()
    for batch_size in (1, 3, 1024):
        p = runtime.predict_proba(model, tokens, "cpu", batch_size=batch_size)
        assert p.dtype == np.float64 and p.shape == (10,)
        np.testing.assert_allclose(p, expected, rtol=1e-6)
    assert not model.training  # eval mode: dropout off
    assert runtime.predict_proba(model, tokens[:0], "cpu").shape == (0,)


def test_inference_commands_load_nothing_of_training(tmp_path):
    """classify-reads, predict-tracks and attn-maps run without importing genointerp.train."""
    code = f"""
import sys
from typer.testing import CliRunner
from genointerp.cli import app
runs = [
    ["classify-reads", "{DATA / 'tumor_small.fq.gz'}", "-o", "{tmp_path / 'calls.tsv'}"],
    ["predict-tracks", "--fasta", "{DATA / 'chr20_slice.fa.gz'}", "--chroms", "20", "--device", "cpu",
     "-o", "{tmp_path / 'pred'}"],
    ["attn-maps", "{DATA / 'tumor_small.fq.gz'}", "--max-reads", "1", "--plot-items", "0", "--device", "cpu",
     "-o", "{tmp_path / 'attn'}"],
]
for args in runs:
    res = CliRunner().invoke(app, ["-q", *args])
    assert res.exit_code == 0, res.output
print(sorted(m for m in sys.modules if m.startswith("genointerp.train")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
