#!/usr/bin/env bash
# The GPU machine check: on a lent machine with a CUDA GPU and many cores (no internet; its python3
# holds torch), install what it lacks, then the GPU's tests, the model's passes per call, start-up,
# classify-reads' scaling over threads and the GPU, and the whole suite in parallel. Results in $OUT.
#
# Prepare here, in the repository root (the machine's Python is 3.12; versions as in .venv):
#   echo /.whl/ >> .git/info/exclude; echo /.gpucheck/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
#       -d .whl pysam==0.24.1 pyBigWig==0.3.29 biopython==1.88
#   and mappy: a cp312 wheel if you have one, else its sdist in .whl/build/ (pip download --no-binary :all:
#   --no-deps -d .whl/build mappy==2.31; the machine builds it with its own compiler and Cython),
#   and a gzipped FASTQ of tumour-like reads in .gpucheck/reads.fq.gz (benchmarks/viral_engine.py
#   makes them; 200,000 reads are about 19 MB).
# Then run it there, carrying .whl and .gpucheck:  BUDGET=500 bash scripts/gpu_machine_check.sh
# Env: OUT (default /tmp/gpucheck), PY (default python3), BUDGET (seconds, default 500),
# READS_FILE (default .gpucheck/reads.fq.gz), COPIES (the reads are scaled up this many renamed
# times, default 5), SUITE_WORKERS (default 14), PASSES=1 (also the model's windows/s at 1-256 passes per
# CUDA call), SCALING=0 / SUITE=0 (skip the start-up and scaling runs / the suite). The GPU's own tests
# run within the suite, which --device auto sends to the GPU.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpucheck}
PY=${PY:-python3}
BUDGET=${BUDGET:-500}
READS_FILE=${READS_FILE:-.gpucheck/reads.fq.gz}
COPIES=${COPIES:-5}
SUITE_WORKERS=${SUITE_WORKERS:-14}
mkdir -p "$OUT"
LOG=$OUT/log.txt
T0=$(date +%s)

log() { echo "$*" | tee -a "$LOG"; }

# cap WANT [RESERVE]: WANT seconds, or fewer so that RESERVE seconds of the budget stay left
cap() {
    local want=$1 left=$(( T0 + BUDGET - ${2:-0} - $(date +%s) ))
    (( left < want )) && want=$left
    (( want < 5 )) && want=5
    echo "$want"
}

# step NAME SECONDS CMD...: CMD under a timeout, its output in the log, timed
step() {
    local name=$1 secs=$2 t rc
    shift 2
    t=$(date +%s)
    log "=== $name (timeout ${secs}s, at +$(( t - T0 ))s)"
    timeout -k 10 "$secs" "$@" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    log "=== $name: rc=$rc, $(( $(date +%s) - t ))s"
    return "$rc"
}

step "machine" 60 bash -c "nvidia-smi -L; nproc; $PY -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.cuda.is_available())'"
export PYTHONPATH=/tmp/site:$PWD
step "wheels" "$(cap 90)" "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
if ! "$PY" -c "import mappy" >/dev/null 2>&1 && ls .whl/build/mappy-*.tar.gz >/dev/null 2>&1; then
    step "mappy from its sdist" "$(cap 120)" "$PY" -m pip install -q --no-index --no-deps --no-build-isolation \
        --target /tmp/site .whl/build/mappy-*.tar.gz
fi
step "the C extensions" "$(cap 120)" "$PY" setup.py -q build_ext --inplace
step "imports" 60 "$PY" -c "
import importlib
for name in ('pysam', 'pyBigWig', 'Bio', 'mappy', 'genointerp._scan', 'genointerp._fused', 'xdist', 'pytest_timeout'):
    try:
        print(name, 'ok', getattr(importlib.import_module(name), '__version__', ''))
    except Exception as exc:
        print(name, 'MISSING:', type(exc).__name__, exc)"
step "index-model" "$(cap 150)" "$PY" -m genointerp -q index-model
if [ "${PASSES:-0}" = 1 ]; then
    step "passes per call" "$(cap 90 200)" "$PY" benchmarks/xvir_gpu_passes.py
fi
if [ "${SCALING:-1}" = 1 ]; then
    for args in "--device cpu" "--device cpu --model-all" "--device cuda" "--device cuda --model-all"; do
        step "one read, $args" 60 bash -c "time $PY -m genointerp -q classify-reads test-data/tumor_small.fq.gz \
            --chunk 1/125 $args -o /tmp/one.tsv --force"
    done
    t=$(date +%s)
    log "=== scaling (at +$(( t - T0 ))s)"
    timeout -k 10 "$(cap 240 100)" "$PY" benchmarks/viral_engine.py --scaling --fastq "$READS_FILE" --copies "$COPIES" \
        --threads-list 1,2,4,8,16 --devices cpu,cuda --model-all-on cuda --no-kraken --repeats 1 \
        --out /tmp/bench 2>&1 | tee "$OUT/scaling.txt" | tee -a "$LOG"
    log "=== scaling: rc=${PIPESTATUS[0]}, $(( $(date +%s) - t ))s"
fi
if [ "${SUITE:-1}" = 1 ]; then
    t=$(date +%s)
    log "=== suite (at +$(( t - T0 ))s)"
    OMP_NUM_THREADS=1 timeout -k 10 "$(cap 330 10)" "$PY" -m pytest -o addopts="" -q -n "$SUITE_WORKERS" \
        --timeout 240 -p no:cacheprovider -rf --durations 15 2>&1 | tee "$OUT/suite.txt" | tail -n 60 >> "$LOG"
    log "=== suite: rc=${PIPESTATUS[0]}, $(( $(date +%s) - t ))s"
fi
log "=== done in $(( $(date +%s) - T0 ))s"
