"""The job contract (genointerp.job): every command's job is a library call that applies the rules
the CLI applies. Each case builds a request that breaks one rule without the CLI and expects the
one-line UsageError the command line gets (exit 2, the same words), and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_cases import check_case
from genointerp.job import execute

DATA = Path(__file__).resolve().parent.parent / "test-data"
VCF = str(DATA / "eur_chr21_22_small.vcf.gz")
GENES = str(DATA / "genes_chr21_22.bed")


def _gene_pca(output: str, **fields):
    from genointerp.genotypes.gene_pca import GenePcaRequest, run

    return run, GenePcaRequest(vcf=VCF, output=output, **fields)


# (id, job and request for an output path, the same command line, the message both give)
CASES = [
    ("gene-pca: neither genes nor a transform", lambda o: _gene_pca(o),
     ["gene-pca", VCF], "give a gene annotation (-g), or --apply a fitted transform"),
    ("gene-pca: --apply with --genes", lambda o: _gene_pca(o, genes=GENES, apply=o + "_fit"),
     ["gene-pca", VCF, "-g", GENES, "--apply", "{out}_fit"], "--genes is fixed by the fitted transform"),
    ("gene-pca: a bad --pcs-rule", lambda o: _gene_pca(o, genes=GENES, pcs_rule="4:x"),
     ["gene-pca", VCF, "-g", GENES, "--pcs-rule", "4:x"], "--pcs-rule:"),
    ("gene-pca: two inputs from stdin", lambda o: _gene_pca(o, genes="-", samples="-"),
     ["gene-pca", VCF, "-g", "-", "--samples", "-"], "--genes and --samples are both - (stdin)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_request_gets_the_cli_error_without_the_cli(case, cli, tmp_path):
    check_case(case, cli, tmp_path)


def test_a_good_request_runs_as_a_library_call(tmp_path):
    """gene-pca through execute() writes what the command writes."""
    run, req = _gene_pca(str(tmp_path / "pcs"), genes=GENES)
    summary = execute(run, req)
    assert summary["genes_with_pcs"] > 0
    assert (tmp_path / "pcs" / "features.npy").is_file() and (tmp_path / "pcs" / "transform.json").is_file()
