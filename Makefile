# genointerp: `make test` and `make run` set everything up from a clean clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# A bare `torch` requirement would pull a multi-GB CUDA build; pin the CPU wheel (the Dockerfile
# installs the CUDA runtime build when asked to).
TORCH_VERSION ?= 2.13.0
STAMP  := $(VENV)/.installed
RUN    := run-output
SHARED ?= ../shared/data

.PHONY: install test run bench bench-deps test-data profiles clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

test: install
	$(BIN)/python -m pytest

# The main job on bundled data (until classify-reads lands: simulate a balanced viral/human
# read set from the bundled HPV and chr20 sequence, then tokenise it for train-xvir).
run: install
	rm -rf $(RUN) && mkdir -p $(RUN)
	$(BIN)/genointerp simulate-reads -s viral=test-data/hpv4.fa -s human=test-data/chr20_slice.fa.gz \
	    --circular viral -n 20000 --balance --seed 1 -o $(RUN)/reads.fq.gz --truth $(RUN)/truth.tsv
	$(BIN)/genointerp kmerize $(RUN)/reads.fq.gz --label-field 0 -o $(RUN)/reads.kmers \
	    --counts $(RUN)/kmer6_counts.tsv
	@echo "outputs in $(RUN)/: reads.fq.gz truth.tsv reads.kmers/ kmer6_counts.tsv"

# Peers for the benchmarks (Debian): ART, wgsim (samtools), jellyfish.
bench-deps:
	command -v art_illumina >/dev/null && command -v wgsim >/dev/null && command -v jellyfish >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    art-nextgen-simulation-tools art-nextgen-simulation-tools-profiles samtools jellyfish; }

bench: install bench-deps
	$(BIN)/python benchmarks/simulate_reads.py --shared $(SHARED)
	$(BIN)/python benchmarks/kmerize.py --shared $(SHARED)

test-data: install
	$(BIN)/python test-data/make_test_data.py $(SHARED)

profiles: install
	$(BIN)/python scripts/make_default_profile.py

clean:
	rm -rf $(VENV) $(RUN) bench-output .pytest_cache
