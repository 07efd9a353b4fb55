"""genointerp.runtime (device, precision, threads, batched inference) and the training driver
(genointerp.train.driver): what each promises, on a toy model, without the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from genointerp import runtime
from genointerp.errors import InputError, UsageError
from genointerp.report import SILENT

DATA = Path(__file__).resolve().parent.parent / "test-data"


# --- runtime -------------------------------------------------------------------------------------

def test_importing_runtime_loads_neither_torch_nor_numpy():
    code = ("import sys, genointerp.runtime\n"
            "print([m for m in ('torch', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_classify_reads_loads_numpy_with_one_openblas_thread_unless_the_user_set_it(tmp_path):
    """The program as a user runs it: numpy is first imported by the command's job, after the
    command set OPENBLAS_NUM_THREADS (OpenBLAS reads it as it loads); a user's own value stands."""
    probe = ("import os, sys; from genointerp.cli import app\n"
             "try:\n    app(['classify-reads', 'missing.fq'], prog_name='genointerp')\nexcept BaseException:\n    pass\n"
             "from threadpoolctl import threadpool_info\n"
             "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules,"
             " [i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    got = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert got.stdout.split(None, 2)[:2] == ["1", "True"] and got.stdout.split(None, 2)[2].strip() in ("[1]", "[]")
    env["OPENBLAS_NUM_THREADS"] = "3"
    got = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert got.stdout.split()[0] == "3"


_MAPPED_PROBE = """
import ctypes, sys
from genointerp.runtime import reuse_freed_memory
libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):
    print("no mallinfo2"); sys.exit()
class Info(ctypes.Structure):  # glibc's struct mallinfo2: hblkhd, the bytes of blocks mapped apart
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                  "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
set_up = reuse_freed_memory() if sys.argv[1] == "on" else None
block = libc.malloc(10 << 20)
print(set_up, libc.mallinfo2().hblkhd >= 10 << 20)
libc.free(block)
"""


@pytest.mark.parametrize("setting, expected", [("off", "None True"), ("on", "True False")])
def test_reuse_freed_memory_serves_a_batchs_large_arrays_from_the_heap(setting, expected):
    """A 10 MB block (a batch's arrays are about that) is mapped apart from the kernel by default,
    and comes from malloc's heap after reuse_freed_memory, where a freed block is reused."""
    got = subprocess.run([sys.executable, "-c", _MAPPED_PROBE, setting], capture_output=True, text=True,
                         check=True).stdout.strip()
    if got == "no mallinfo2":
        pytest.skip("not glibc 2.33 or later")
    assert got == expected


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
    model = torch.nn.Sequential(torch.nn.Embedding(16, 4), torch.nn.Flatten(), torch.nn.Linear(12, 1),
                                torch.nn.Flatten(0))
    # weights in eighths of at most 1: each product is a multiple of 1/64 below 1 and a logit a sum
    # of 12 of them and the bias (|logit| < 14, 10 bits), exact in float32 in any order, so no
    # CPU's kernels can make a logit depend on how many rows share its pass
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randint(-8, 9, p.shape) / 8)
    return model


def test_predict_proba_is_the_sigmoid_of_the_logits_in_passes_of_any_size():
    import torch

    model = _toy_classifier()
    tokens = np.random.default_rng(1).integers(0, 16, (10, 3))
    with torch.no_grad():
        expected = torch.sigmoid(model(torch.from_numpy(tokens))).double().numpy()
    for batch_size in (1, 3, 1024):
        p = runtime.predict_proba(model, tokens, "cpu", batch_size=batch_size)
        assert p.dtype == np.float64 and p.shape == (10,)
        # the logits are exact (above); only the sigmoid may differ, as a vectorised loop computes
        # the elements past its last whole vector by another path: each path is within ~2 float32
        # ulps (2^-23 = 1.2e-7 relative each), so rtol 1e-6 (8.4 ulps) holds on any CPU, while
        # a row out of place or a logit not passed through the sigmoid misses by far more
        np.testing.assert_allclose(p, expected, rtol=1e-6)
    assert np.abs(np.diff(np.sort(expected))).min() > 1e-3  # rows apart by > 1000x the tolerance
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
    ["predict-tracks", "-R", "{DATA / 'chr20_slice.fa.gz'}", "--chroms", "20", "--device", "cpu",
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


# --- the training driver -------------------------------------------------------------------------

@dataclass
class ToyConfig:
    n: int = 3

    def to_dict(self) -> dict:
        return {"architecture": "toy", "n": self.n}


def _toy_model(config: ToyConfig):
    import torch

    class Toy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = config
            self.linear = torch.nn.Linear(config.n, 1)

        def forward(self, x):  # (B, n) -> (B,)
            return self.linear(x).squeeze(-1)

    return Toy()


class ToyTask:
    score_name = "neg_mse"

    def __init__(self, x, y):
        self.x, self.y = x, y

    def n_train(self):
        return len(self.y)

    def augmentation(self, gen):
        return None

    def batch(self, idx, aug, device):
        import torch

        return torch.from_numpy(self.x[idx]), torch.from_numpy(self.y[idx])

    def loss(self, output, target):
        return ((output - target) ** 2).mean()

    def validate(self, model):
        import torch

        with torch.no_grad():
            mse = float(self.loss(model(torch.from_numpy(self.x)), torch.from_numpy(self.y)))
        return {"loss": mse, "neg_mse": -mse}


def _toy_job(bad_config: bool = False):
    from genointerp.train.driver import TrainingJob

    calls = []

    class ToyJob(TrainingJob):
        metric_columns = ["epoch", "train_loss", "valid_loss", "valid_neg_mse", "seconds"]

        def load(self, dist, cache, report):
            calls.append("load")
            rng = np.random.default_rng(0)
            self.x = rng.normal(size=(64, 3)).astype(np.float32)
            self.y = (self.x @ np.array([1.0, -2.0, 0.5], dtype=np.float32)).astype(np.float32)

        def model_config(self):
            calls.append("model_config")
            if bad_config:
                raise ValueError("n must be positive")
            return ToyConfig()

        def build(self, config):
            calls.append("build")
            return _toy_model(config)

        def describe(self, model):
            calls.append("describe")
            return "toy model"

        def task(self, settings):
            calls.append("task")
            return ToyTask(self.x, self.y)

        def test(self, model, settings):
            calls.append("test")
            return {"n": len(self.y)}

        def model_info(self, settings, history, best_row, test_metrics):
            calls.append("model_info")
            return {"task": "toy", "best_epoch": best_row["epoch"], "epochs_run": len(history)}

        def write_extra(self, folder):
            calls.append("write_extra")
            (folder / "extra.txt").write_text("x\n")

    return ToyJob(), calls


def test_the_driver_runs_a_job_in_order_and_fills_the_model_directory(tmp_path):
    from genointerp.train.driver import run_training
    from genointerp.train.loop import TrainSettings
    from genointerp.train.run_folder import checkpoint_dir, finish

    job, calls = _toy_job()
    folder, output = tmp_path / "model", str(tmp_path / "model")
    folder.mkdir()
    logged = []
    settings = TrainSettings(epochs=3, batch_size=16, lr=0.05, patience=5)
    metrics = run_training(job, settings, folder, output, False, replace(SILENT, log=logged.append))
    assert calls == ["load", "model_config", "build", "describe", "task", "test", "model_info", "write_extra"]
    assert metrics == {"n": 64} and json.loads((folder / "test_metrics.json").read_text()) == metrics
    assert logged[0] == "toy model (1 process, cpu)"
    rows = (folder / "metrics.tsv").read_text().splitlines()
    assert rows[0].split("\t") == job.metric_columns and len(rows) == 4
    config = json.loads((folder / "config.json").read_text())
    assert config["model"] == {"architecture": "toy", "n": 3} and config["epochs_run"] == 3
    assert (folder / "model.safetensors").exists() and (folder / "extra.txt").exists()
    assert (checkpoint_dir(output) / "last.pt").exists()
    finish(output)
    assert not checkpoint_dir(output).exists()


def test_a_config_that_does_not_fit_is_one_model_settings_error(tmp_path):
    from genointerp.train.driver import run_training
    from genointerp.train.loop import TrainSettings

    job, calls = _toy_job(bad_config=True)
    with pytest.raises(InputError, match="^model settings: n must be positive$"):
        run_training(job, TrainSettings(epochs=1), tmp_path, str(tmp_path / "m"), False, SILENT)
    assert calls == ["load", "model_config"]


def test_deterministic_kernels_are_switched_on_for_cuda_only_and_back_off_after(monkeypatch):
    import os

    import torch

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert not torch.are_deterministic_algorithms_enabled()
    with runtime.deterministic_kernels("cpu"):
        assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    # the flags themselves need no GPU: only what they select does
    with runtime.deterministic_kernels("cuda:0"):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()  # a kernel without a twin warns, not fails
        assert not torch.backends.cuda.mem_efficient_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()


def test_a_resumed_run_draws_its_dropout_as_the_uninterrupted_one_did(tmp_path, device):
    """On a GPU, dropout draws from the device's generator: the checkpoint must carry its state."""
    import torch

    from genointerp.train.loop import Distributed, TrainSettings, fit

    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 8)).astype(np.float32)
    y = (x @ rng.normal(size=8)).astype(np.float32)

    class OnDevice(ToyTask):
        def batch(self, idx, aug, dev):
            return torch.from_numpy(self.x[idx]).to(dev), torch.from_numpy(self.y[idx]).to(dev)

        def validate(self, model):
            with torch.no_grad():
                mse = float(self.loss(model(torch.from_numpy(self.x).to(device)), torch.from_numpy(self.y).to(device)))
            return {"loss": mse, "neg_mse": -mse}

    def model():
        torch.manual_seed(5)
        return torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(8, 1), torch.nn.Flatten(0))

    settings = TrainSettings(epochs=4, batch_size=16, lr=0.01, patience=10, device=device)

    def run(folder, resume, task):
        folder.mkdir(exist_ok=True)
        net = model()
        fit(net, task, settings, folder, resume, Distributed(), lambda row: None, SILENT)
        return {k: v.cpu() for k, v in net.state_dict().items()}

    whole = run(tmp_path / "whole", False, OnDevice(x, y))

    class StopsAtTheSecondValidation(OnDevice):
        calls = 0

        def validate(self, model):
            self.calls += 1
            if self.calls == 2:  # after epoch 1's checkpoint, in epoch 2
                raise KeyboardInterrupt
            return super().validate(model)

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", False, StopsAtTheSecondValidation(x, y))
    resumed = run(tmp_path / "cut", True, OnDevice(x, y))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
    fresh = run(tmp_path / "other", False, OnDevice(x, y))
    assert all(torch.equal(whole[k], fresh[k]) for k in whole)  # and the same seed gives the same run


@pytest.mark.parametrize("given, expected", [(None, ":4096:8"), (":16:8", ":16:8")])
def test_cublas_gets_its_fixed_workspace_when_genointerp_loads(given, expected):
    """torch reads CUBLAS_WORKSPACE_CONFIG once per process, at its first matrix product on a GPU:
    it is set when genointerp.runtime is imported (every job, every CLI command), so a training run
    that follows other GPU work in one process (a test suite, a notebook) still gets the fixed
    workspace its byte-identity needs (issue 61's GPU failures); a user's own value stands."""
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    if given is not None:
        env["CUBLAS_WORKSPACE_CONFIG"] = given
    code = "import os, genointerp.runtime; print(os.environ.get('CUBLAS_WORKSPACE_CONFIG'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == expected
