# genointerp container: CPU by default; CUDA with --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124
# Usable from Docker and Apptainer/Singularity (which run as the calling user): everything is
# installed system-wide and world-readable, caches point at /tmp. No ENTRYPOINT: workflow engines
# run their own command. Smoke test: docker run --rm IMAGE genointerp --version
FROM python:3.11-slim-bookworm

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLCONFIGDIR=/tmp/matplotlib \
    TORCH_HOME=/tmp/torch

# procps gives `ps` to Nextflow's task metrics
RUN apt-get update \
    && apt-get install -y --no-install-recommends procps \
    && rm -rf /var/lib/apt/lists/*

RUN pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"

WORKDIR /opt/genointerp
COPY pyproject.toml README.md ./
COPY genointerp ./genointerp
RUN pip install . \
    && chmod -R a+rX /usr/local/lib/python3.11/site-packages \
    && genointerp --version

WORKDIR /data
