# syntax=docker/dockerfile:1
# genointerp container: a slim CPU image by default; the CUDA runtime build of PyTorch with
#   docker build --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 -t genointerp:0.1.0-cuda .
# (PyTorch's CUDA wheels bring their own CUDA runtime libraries: the host needs only the NVIDIA driver,
# `docker run --gpus all` or `apptainer exec --nv`.)
#
# Usable from Docker, Podman and Apptainer/Singularity, which runs as the calling user: the package
# and its built-in models are installed system-wide and world-readable, caches point at /tmp, and
# nothing needs a home directory, so any uid works (`docker run -u "$(id -u):$(id -g)"` too).
# No ENTRYPOINT: workflow engines (Snakemake, Nextflow) run their own command line.
#   docker build -t genointerp:0.1.0 .
#   docker run --rm genointerp:0.1.0 genointerp --version
#   docker run --rm -u "$(id -u):$(id -g)" -v "$PWD:/data" genointerp:0.1.0 genointerp classify-reads reads.fq.gz -o calls.tsv
#   apptainer build genointerp.sif docker-daemon://genointerp:0.1.0
# scripts/check_dockerfile.py runs the RUN steps of this file in a fresh virtual environment (CI has
# no Docker engine): keep them plain shell that works in a venv, paths under /src, /wheels, /data.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- build: a wheel from the project's own files (pyproject.toml decides the package data,
# so what the image gets is exactly what `pip install genointerp` would get). This stage is
# never shipped, so it carries no labels (DL3049). ----
# hadolint ignore=DL3049
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A C compiler for genointerp's extensions (genointerp/_scan.c, the viral index look-ups; _fused.c,
# the folded model's element-wise passes; _fastq.c, plain FASTQ records); only
# this stage has it, the runtime image gets the compiled wheel. DL3008: as for procps below.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY genointerp ./genointerp
RUN pip wheel --no-deps --wheel-dir /wheels .

# ---- runtime ----
FROM ${PYTHON_IMAGE}

ARG PYTHON_IMAGE
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# The version is written out (hadolint checks it is semver); scripts/check_dockerfile.py checks it
# equals genointerp.__version__.
LABEL org.opencontainers.image.title="genointerp" \
      org.opencontainers.image.description="Interpretable deep learning for sequencing pipelines: XVir viral read detection, Genomic Interpreter tracks, DiseaseCapsule" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}" \
      io.genointerp.torch.version="${TORCH_VERSION}" \
      io.genointerp.torch.index="${TORCH_INDEX}"

# Caches and config go to /tmp (writable for any uid, also under Apptainer's read-only image);
# XDG_CACHE_HOME covers libraries that would otherwise write to ~/.cache of a uid without a home.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MPLCONFIGDIR=/tmp/matplotlib \
    TORCH_HOME=/tmp/torch \
    XDG_CACHE_HOME=/tmp/.cache

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# procps gives `ps` to Nextflow's task metrics. DL3008 (pin apt versions) is ignored on purpose:
# the Debian release is pinned by the base image tag, and an exact procps version disappears from
# the archive at the next point release, which would break later builds without making this one
# more reproducible.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends procps \
    && rm -rf /var/lib/apt/lists/*

# PyTorch first, from its own index (a bare `torch` from PyPI would pull the multi-GB CUDA build).
RUN pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"

# genointerp from the wheel built above (its dependencies resolve from PyPI, torch already there);
# the built-in model's viral indexes prebuilt, so every run starts at once (genointerp
# index-model); then make sure every installed file is world-readable for Apptainer, changing
# only files that are not (a blanket `chmod -R` would copy all of torch into this layer).
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install /wheels/genointerp-*.whl \
    && site="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    && genointerp -q index-model \
    && find "${site}" \( -type d ! -perm -0555 -o -type f ! -perm -0444 \) -print0 \
       | xargs -0 --no-run-if-empty chmod a+rX

# A non-root default user; /data is the conventional mount point and writable for any uid.
RUN useradd --uid 1000 --user-group --create-home --shell /bin/bash genointerp \
    && mkdir -p /data \
    && chmod 1777 /data

USER 1000:1000
WORKDIR /data

# Smoke test as the non-root user: the version, and the built-in HPV model on one read.
RUN genointerp --version \
    && printf '>smoke\n%s\n' "$(printf 'ACGTTGCAAC%.0s' {1..15})" > /tmp/smoke.fa \
    && genointerp -q classify-reads /tmp/smoke.fa -o /tmp/smoke.tsv \
    && test "$(wc -l < /tmp/smoke.tsv)" -eq 2 \
    && rm -rf /tmp/smoke.fa /tmp/smoke.tsv /tmp/matplotlib /tmp/torch /tmp/.cache
