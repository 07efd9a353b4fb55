"""classify-reads' model on a CUDA GPU: windows/s of the scorer at several passes per call.

One 16-window pass per call (as on the CPU) leaves a GPU idle between launches; classify-reads
sends GPU_PASSES passes per call (genointerp.viral.classify.model_process.gpu_scorer). This
measures the model alone (no I/O) on 32,768 random windows at 1, 8, 64 and 256 passes per call,
in fp32 and bf16, after a warm-up call each. Needs torch with a CUDA device.

    python benchmarks/xvir_gpu_passes.py
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA device visible to torch")
    import genointerp.viral.classify.model_process as mp
    from genointerp.model_folder import load_model_dir
    from genointerp.resources import builtin_model_dir

    model, _ = load_model_dir(builtin_model_dir(), expect="xvir")
    model = model.to("cuda")
    tokens = np.random.default_rng(0).integers(0, 4**model.config.k, (32768, model.config.n_tokens)).astype(np.uint16)
    chosen = mp.GPU_PASSES
    for precision in ("32", "bf16"):
        for passes in (1, 8, 64, 256):
            mp.GPU_PASSES = passes
            score = mp.gpu_scorer(model, "cuda", precision)
            score(tokens[:4096])
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            score(tokens)
            secs = time.perf_counter() - t0
            print(f"precision {precision:4s} {passes:4d} passes per call: {len(tokens) / secs:10,.0f} windows/s"
                  f"{'  (the default)' if passes == chosen else ''}", flush=True)
    mp.GPU_PASSES = chosen


if __name__ == "__main__":
    main()
