"""gene-pca: the per-gene PCA pieces, and the command on the 1000 Genomes fixture (60 x 350 SNPs)."""

import gzip
import json

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line, read_tsv, run_cli
from test_vcf import pipe_of
from genointerp.genotypes.pca import PcsRule, fit_gene, fit_means
from genointerp.io.vcf import MISSING

VCF = DATA / "eur_chr21_22_small.vcf.gz"
BED = DATA / "genes_chr21_22.bed"
BINARY = bytes(range(128, 256)) * 8  # not UTF-8 text
RULE = PcsRule.parse("4:1,20:4,inf:8")


def read_vcf_text(path=VCF):
    """An independent reader: (chrom, pos, ref, alt, dosages with NaN for missing) per line."""
    out = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            f = line.rstrip("\n").split("\t")
            d = [np.nan if "." in g else g.count("1") for g in f[9:]]
            out.append((f[0], int(f[1]), f[3], f[4], np.array(d, dtype=float)))
    return out


def features(folder):
    meta = json.loads((folder / "features.json").read_text())
    return meta, np.load(folder / "features.npy")


# ---- pieces -------------------------------------------------------------------------------------

def test_pcs_rule_steps_and_bad_rules():
    assert [RULE.n_pcs(m) for m in (1, 4, 5, 20, 21, 10_000)] == [1, 1, 4, 4, 8, 8]
    assert str(PcsRule.parse("2:1, inf:3")) == "2:1,inf:3"
    for bad in ("4:1,20:4", "4-1,inf:8", "20:1,4:2,inf:3", "4:0,inf:8", "x:1,inf:2"):
        with pytest.raises(ValueError):
            PcsRule.parse(bad)


def test_pcs_rule_variance_target_cuts_the_count():
    rule = PcsRule.parse("inf:8,var:0.9")
    assert str(rule) == "inf:8,var:0.9" and str(PcsRule.parse(str(rule))) == str(rule)
    # 0.5 + 0.3 = 0.8 < 0.9, one more reaches 0.95: 3 PCs; the steps stay a cap; without ratios, the steps
    assert rule.n_pcs(30, np.array([0.5, 0.3, 0.15, 0.05])) == 3
    assert rule.n_pcs(30, np.array([0.95, 0.05])) == 1 and rule.n_pcs(30) == 8
    assert PcsRule.parse("inf:2,var:0.99").n_pcs(30, np.array([0.5, 0.3, 0.2])) == 2
    # a target of 1 is met by all the PCs even where their ratios sum to a hair below it
    assert PcsRule.parse("inf:8,var:1").n_pcs(3, np.array([0.5, 0.3, 0.2 - 1e-12])) == 3
    for bad in ("inf:8,var:0", "inf:8,var:1.5", "var:0.9", "inf:8,var:x"):
        with pytest.raises(ValueError):
            PcsRule.parse(bad)


def test_pcs_rule_variance_target_through_the_cli(cli, tmp_path):
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--pcs-rule", "inf:64,var:0.8", "-o", tmp_path / "o")
    assert res.exit_code == 0, res.output
    rows = [r for r in read_tsv(tmp_path / "o" / "genes.tsv") if int(r["n_pcs"])]  # genes with kept SNPs
    for r in rows:
        # the fewest PCs that explain 80 % of the gene's variance: with one PC fewer it would not
        per_pc = [float(v) for v in r["explained_per_pc"].split(",")]
        assert sum(per_pc) >= 0.8 - 1e-6 and sum(per_pc[:-1]) < 0.8, r
    assert max(int(r["n_pcs"]) for r in rows) > 8  # more than the default rule's 8 for some gene
    assert json.loads((tmp_path / "o" / "features.json").read_text())["pcs_rule"] == "inf:64,var:0.8"


def test_pca_matches_sklearn_up_to_sign():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(1)
    x = rng.binomial(2, rng.uniform(0.1, 0.5, 30), size=(80, 30)).astype(np.int8)
    fit = fit_gene(x, np.arange(80), RULE)
    ref = PCA(n_components=8, svd_solver="full").fit(x.astype(float))
    assert fit.components.shape == (30, 8)
    signs = np.sign((fit.components * ref.components_.T).sum(axis=0))
    assert np.allclose(fit.components, ref.components_.T * signs, atol=1e-8)
    assert np.allclose(fit.explained, ref.explained_variance_ratio_, atol=1e-10)
    assert np.allclose(fit.scores, ref.transform(x.astype(float)) * signs, atol=1e-4)
    # sign convention: the largest-|loading| SNP of each PC loads positively
    assert (fit.components[np.abs(fit.components).argmax(axis=0), np.arange(8)] > 0).all()


def test_more_snps_than_samples_uses_the_sample_gram_matrix_and_caps_pcs_at_the_rank():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(2)
    x = rng.binomial(2, 0.3, size=(6, 40)).astype(np.int8)
    fit = fit_gene(x, np.arange(6), RULE)
    assert fit.components.shape == (40, 5)  # 8 asked, n_fit - 1 = 5 possible
    ref = PCA(n_components=5, svd_solver="full").fit(x.astype(float))
    assert np.allclose(np.abs(fit.components.T @ ref.components_.T), np.eye(5), atol=1e-8)
    twins = np.repeat(rng.binomial(2, 0.4, size=(50, 3)), 3, axis=1).astype(np.int8)  # 9 SNPs, rank 3
    assert fit_gene(twins, np.arange(50), RULE).components.shape == (9, 3)


def test_imputation_and_axes_use_the_fit_rows_only():
    rng = np.random.default_rng(3)
    x = rng.binomial(2, 0.3, size=(40, 6)).astype(np.int8)
    x[5, 2] = MISSING  # a fit row
    x[35, 2] = MISSING  # a held-out row
    fit_rows = np.arange(30)
    fit = fit_gene(x, fit_rows, PcsRule.parse("inf:2"))
    called = x[:30, 2][x[:30, 2] != MISSING]
    assert fit.means[2] == pytest.approx(called.mean())
    assert np.array_equal(fit_means(x[:30]), fit.means)
    changed = x.copy()
    changed[30:] = 2  # held-out genotypes cannot move the transform
    again = fit_gene(changed, fit_rows, PcsRule.parse("inf:2"))
    assert np.array_equal(again.components, fit.components) and np.array_equal(again.means, fit.means)
    filled = x[35].astype(float)
    filled[2] = fit.means[2]  # the held-out missing call takes the fit-sample mean
    assert np.allclose(fit.scores[35], (filled - fit.means) @ fit.components, atol=1e-5)


# ---- the command ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpca")
    samples = [line.split("\t") for line in gzip.open(VCF, "rt") if line.startswith("#CHROM")][0][9:]
    samples[-1] = samples[-1].strip()
    (d / "fit.txt").write_text("\n".join(samples[:45]) + "\n")
    res = run_cli("gene-pca", str(VCF), "-g", str(BED), "--fit-samples", str(d / "fit.txt"),
                  "-o", str(d / "out"))
    assert res.exit_code == 0, res.output
    return d, samples, res


def test_gene_table_counts_match_an_independent_count(fitted):
    from genointerp.io.genes import read_genes

    d, samples, res = fitted
    sites = read_vcf_text()
    expected = {}
    for g in read_genes(str(BED)):
        inside = [s for s in sites if "chr" + s[0] == g.chrom and g.start <= s[1] - 1 < g.end]
        kept = 0
        for *_, dos in inside:
            fit = dos[:45]
            called = fit[~np.isnan(fit)]
            af = called.sum() / (2 * len(called))
            kept += np.isnan(fit).mean() <= 0.1 and min(af, 1 - af) >= 0.01
        if inside:
            expected[g.name] = (len(inside), kept)
    rows = read_tsv(d / "out" / "genes.tsv")
    assert {r["gene"]: (int(r["n_sites"]), int(r["n_snps"])) for r in rows} == expected
    for r in rows:
        m = int(r["n_snps"])
        assert int(r["n_pcs"]) == (0 if m == 0 else min(RULE.n_pcs(m), m))
    assert "warning: VCF chromosome 21 is chr21" in res.stderr


def _expected_genes(fit_rows, maf, max_missing, rule):
    """{gene: (n_sites, n_snps, n_pcs)} from the independent VCF reader: SNPs kept when missing in at
    most max_missing of the fit rows and with minor allele frequency >= maf there."""
    from genointerp.io.genes import read_genes

    sites, out = read_vcf_text(), {}
    for g in read_genes(str(BED)):
        inside = [s[4][fit_rows] for s in sites if "chr" + s[0] == g.chrom and g.start <= s[1] - 1 < g.end]
        kept = 0
        for fit in inside:
            called = fit[~np.isnan(fit)]
            af = called.sum() / (2 * len(called))
            kept += np.isnan(fit).mean() <= max_missing and min(af, 1 - af) >= maf
        if inside:
            out[g.name] = (len(inside), kept, 0 if kept == 0 else min(rule.n_pcs(kept), kept))
    return out


def test_maf_max_missing_and_pcs_rule_decide_the_kept_snps_and_pcs(cli, tmp_path):
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--maf", 0.2, "--max-missing", 0, "--pcs-rule", "2:1,inf:2",
              "-o", tmp_path / "o")
    assert res.exit_code == 0, res.output
    got = {r["gene"]: (int(r["n_sites"]), int(r["n_snps"]), int(r["n_pcs"])) for r in read_tsv(tmp_path / "o" / "genes.tsv")}
    every = slice(None)
    assert got == _expected_genes(every, 0.2, 0.0, PcsRule.parse("2:1,inf:2"))
    # each option on its own changes the table, so none of them can be ignored unnoticed
    for other in ((0.01, 0.0, "2:1,inf:2"), (0.2, 0.1, "2:1,inf:2"), (0.2, 0.0, "4:1,20:4,inf:8")):
        assert got != _expected_genes(every, other[0], other[1], PcsRule.parse(other[2])), other


def test_phenotype_column_selects_the_samples_with_a_value_there(fitted, cli, tmp_path):
    _, samples, _ = fitted
    # binary column a has values for the first 40 samples, b for the last 40 (NA, -9 and empty are missing)
    (tmp_path / "p.tsv").write_text("IID\ta\tb\n" + "".join(
        f"{s}\t{1 + i % 2 if i < 40 else 'NA'}\t{1 + i % 2 if i >= 20 else ('-9' if i % 2 else '')}\n"
        for i, s in enumerate(samples)))
    for column, want in ((None, samples[:40]), ("b", samples[20:])):
        extra = ["--phenotype-column", column] if column else []
        out = tmp_path / f"o{column}"
        res = cli("-q", "gene-pca", VCF, "-g", BED, "--phenotypes", tmp_path / "p.tsv", *extra, "-o", out)
        assert res.exit_code == 0, res.output
        assert features(out)[0]["samples"] == want

def test_features_equal_a_direct_pca_of_the_fit_samples(fitted):
    d, samples, _ = fitted
    meta, matrix = features(d / "out")
    assert meta["samples"] == samples and matrix.dtype == np.float32
    rows = {r["gene"]: r for r in read_tsv(d / "out" / "genes.tsv")}
    assert meta["columns"] == [f"{r['chrom']}:{g}:pc{j + 1}" for g, r in rows.items() for j in range(int(r["n_pcs"]))]
    sites = read_vcf_text()
    for gene in ("DSCAM", "KCNJ6"):
        r = rows[gene]
        dos = [s[4] for s in sites if int(r["start"]) <= s[1] - 1 < int(r["end"]) and s[0] == r["chrom"]]
        x = np.array(dos).T  # samples x SNPs, NaN missing
        fit = x[:45]
        af = np.nanmean(fit, axis=0) / 2
        keep = (np.minimum(af, 1 - af) >= 0.01) & (np.isnan(fit).mean(axis=0) <= 0.1)
        x, mean = x[:, keep], np.nanmean(fit[:, keep], axis=0)
        x = np.where(np.isnan(x), mean, x) - mean
        _, s, vt = np.linalg.svd(x[:45], full_matrices=False)
        k = int(r["n_pcs"])
        scores = x @ vt[:k].T
        cols = [i for i, c in enumerate(meta["columns"]) if c.split(":")[1] == gene]
        signs = np.sign((scores * matrix[:, cols]).sum(axis=0))
        assert np.allclose(matrix[:, cols], scores * signs, atol=1e-4)
        evr = (s ** 2 / (s ** 2).sum())[:k]
        assert [float(v) for v in r["explained_per_pc"].split(",")] == pytest.approx(evr, rel=1e-5)


def test_apply_to_the_same_vcf_reproduces_the_features_exactly(fitted, cli):
    d, samples, _ = fitted
    res = cli("gene-pca", VCF, "--apply", d / "out", "-o", d / "applied")
    assert res.exit_code == 0, res.output
    assert np.array_equal(np.load(d / "applied/features.npy"), np.load(d / "out/features.npy"))
    assert (d / "applied/features.tsv").read_bytes() == (d / "out/features.tsv").read_bytes()
    # a held-out subset, given as a phenotype table, gets the same rows
    (d / "pheno.tsv").write_text("IID\tstatus\n" + "".join(f"{s}\t{i % 2 + 1}\n" for i, s in enumerate(samples[40:])))
    res = cli("gene-pca", VCF, "--apply", d / "out", "--phenotypes", d / "pheno.tsv", "-o", d / "held_out")
    assert res.exit_code == 0, res.output
    assert np.array_equal(np.load(d / "held_out/features.npy"), np.load(d / "out/features.npy")[40:])


def test_apply_imputes_absent_snps_and_flips_swapped_alleles(fitted, cli, tmp_path):
    d, _, _ = fitted
    transform = np.load(d / "out/transform.npz")
    drop, flip = int(transform["pos"][0]), int(transform["pos"][1])
    lines = []
    for line in gzip.open(VCF, "rt"):
        f = line.rstrip("\n").split("\t")
        if line.startswith("#") or int(f[1]) not in (drop, flip):
            lines.append(line)
        elif int(f[1]) == flip:
            f[3], f[4] = f[4], f[3]
            f[9:] = [{"0": "1", "1": "0"}.get(g[0], g[0]) + g[1] + {"0": "1", "1": "0"}.get(g[2], g[2]) for g in f[9:]]
            lines.append("\t".join(f) + "\n")
    (tmp_path / "new.vcf").write_text("".join(lines))
    res = cli("gene-pca", tmp_path / "new.vcf", "--apply", d / "out", "--keep-dosages", "-o", tmp_path / "o")
    assert res.exit_code == 0, res.output
    assert "1 SNP(s) of the transform are not in" in res.stderr and "1 SNP(s) have REF/ALT swapped" in res.stderr
    new, old = np.load(tmp_path / "o/features.npy"), np.load(d / "out/features.npy")
    first = read_tsv(d / "out" / "genes.tsv")[0]
    assert int(first["n_snps"]) == 1  # HLCS: its only SNP is the dropped one -> every sample at the mean
    assert np.array_equal(new[:, 0], np.zeros(len(new), dtype=np.float32)) and old[:, 0].std() > 0
    assert np.allclose(new[:, 1:], old[:, 1:], atol=1e-5)  # the flipped SNP gives the same scores
    # the dosages keep the fit's SNP columns: the dropped SNP missing for everyone, the swapped one
    # counted as the fit's ALT again (2 - d of the new file's ALT: the original genotypes)
    snps, dosages = read_tsv(tmp_path / "o/snps.tsv"), np.load(tmp_path / "o/dosages.npy")
    assert [int(r["pos"]) for r in snps[:2]] == [drop, flip]
    want = vcf_dosages(snps)
    assert (dosages[:, 0] == -1).all() and np.array_equal(dosages[:, 1:], want[:, 1:])


def vcf_dosages(snps) -> np.ndarray:
    """int8 (samples, SNPs) from the independent reader for snps.tsv rows, -1 where missing."""
    sites = {(c, p, r, a): dos for c, p, r, a, dos in read_vcf_text()}
    cols = [sites[(s["chrom"], int(s["pos"]), s["ref"], s["counted"])] for s in snps]
    return np.nan_to_num(np.array(cols).T, nan=-1).astype(np.int8)


def test_keep_dosages_writes_the_snps_behind_the_pcs_and_apply_the_same_columns(fitted, cli, tmp_path):
    d, samples, _ = fitted
    fit = ["-g", BED, "--fit-samples", d / "fit.txt", "--keep-dosages"]
    res = cli("gene-pca", VCF, *fit, "-o", tmp_path / "k")
    assert res.exit_code == 0, res.output
    for name in ("features.npy", "features.tsv", "genes.tsv", "transform.npz", "transform.json"):
        assert (tmp_path / "k" / name).read_bytes() == (d / "out" / name).read_bytes(), name  # nothing else changes
    # the columns: every distinct SNP of the transform (a SNP in two genes is one column), in VCF order
    t = np.load(d / "out/transform.npz")
    rows = list(zip(t["chrom"].tolist(), t["pos"].tolist(), t["ref"].tolist(), t["alt"].tolist()))
    snps = read_tsv(tmp_path / "k/snps.tsv")
    in_vcf = [(c, p, r, a) for c, p, r, a, _ in read_vcf_text() if (c, p, r, a) in set(rows)]
    assert [(s["chrom"], int(s["pos"]), s["ref"], s["counted"]) for s in snps] == in_vcf
    assert [s["snp"] for s in snps] == [f"{c}:{p}:{r}:{a}" for c, p, r, a in in_vcf]
    assert len(snps) < len(rows)  # some SNPs lie in two overlapping genes
    genes = [g for g in read_tsv(d / "out" / "genes.tsv") if int(g["n_pcs"])]
    for s in snps:
        inside = [g["gene"] for g in genes if g["chrom"] == s["chrom"] and int(g["start"]) < int(s["pos"]) <= int(g["end"])]
        assert s["genes"].split(",") == inside, s
    # the genotypes of every selected sample (fit or not), missing calls -1, not imputed
    dosages = np.load(tmp_path / "k/dosages.npy")
    assert dosages.dtype == np.int8 and np.array_equal(dosages, vcf_dosages(snps)) and (dosages == -1).sum() == 1
    meta = json.loads((tmp_path / "k/features.json").read_text())
    assert meta["samples"] == samples and meta["dosage_snps"] == len(snps)
    assert "dosage" not in " ".join(p.name for p in (d / "out").iterdir())  # only when asked
    # --apply: the fit's columns in the fit's order, rebuilt from the transform alone
    res = cli("gene-pca", VCF, "--apply", d / "out", "--keep-dosages", "-o", tmp_path / "a")
    assert res.exit_code == 0, res.output
    for name in ("dosages.npy", "snps.tsv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "k" / name).read_bytes(), name
    (tmp_path / "held_out.txt").write_text("\n".join(samples[45:]) + "\n")
    res = cli("gene-pca", VCF, "--apply", d / "out", "--samples", tmp_path / "held_out.txt", "--keep-dosages",
              "-o", tmp_path / "h")
    assert res.exit_code == 0, res.output
    assert np.array_equal(np.load(tmp_path / "h/dosages.npy"), dosages[45:])
    # without the flag --apply keeps dosages where the fitted folder holds them (a model trained with
    # burden columns or a PRS needs them), and only there; --no-keep-dosages leaves them out
    for fitted_folder, flag, out, kept in ((tmp_path / "k", [], "ka", True),
                                           (tmp_path / "k", ["--no-keep-dosages"], "kn", False),
                                           (d / "out", [], "na", False)):
        res = cli("gene-pca", VCF, "--apply", fitted_folder, *flag, "-o", tmp_path / out)
        assert res.exit_code == 0, res.output
        assert (tmp_path / out / "dosages.npy").exists() == kept and (tmp_path / out / "snps.tsv").exists() == kept
        assert (tmp_path / out / "features.npy").read_bytes() == (tmp_path / "a" / "features.npy").read_bytes()
    assert (tmp_path / "ka/dosages.npy").read_bytes() == (tmp_path / "a/dosages.npy").read_bytes()
    assert not [p for p in tmp_path.rglob("*scratch*")]


@pytest.mark.parametrize("threads", [2, 4])
def test_same_inputs_give_byte_identical_outputs_with_any_thread_count(fitted, cli, tmp_path, monkeypatch, threads):
    """-t N against the fixture's -t 1. --threads is capped at the usable CPUs, which would make this
    1 against 1 on a one-CPU runner: lift the cap, and check the per-gene fits really went to a pool
    of N threads (finishing out of order is what the gene-order bookkeeping must undo)."""
    import genointerp.genotypes.gene_pca

    pools = []

    class Recorded(genointerp.genotypes.gene_pca.ThreadPoolExecutor):
        def __init__(self, workers):
            super().__init__(workers)
            pools.append([workers, 0])

        def submit(self, *args):
            pools[-1][1] += 1
            return super().submit(*args)

    monkeypatch.setattr(genointerp.genotypes.gene_pca, "usable_threads", lambda n: n)
    monkeypatch.setattr(genointerp.genotypes.gene_pca, "ThreadPoolExecutor", Recorded)
    d, _, _ = fitted
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--fit-samples", d / "fit.txt", "-o", tmp_path / "again", "-t", threads)
    assert res.exit_code == 0, res.output
    n_fitted = sum(int(g["n_snps"]) > 0 for g in read_tsv(d / "out" / "genes.tsv"))
    assert pools == [[threads, n_fitted]] and n_fitted > 2 * threads  # more fits than the pool buffers
    for name in ("features.npy", "features.json", "features.tsv", "genes.tsv", "transform.json", "transform.npz"):
        assert (tmp_path / "again" / name).read_bytes() == (d / "out" / name).read_bytes(), name


def test_no_tsv_writes_the_same_matrix_without_the_table(fitted, cli, tmp_path):
    from genointerp.io.features import read_features

    d, _, _ = fitted
    res = cli("-q", "gene-pca", VCF, "-g", BED, "--fit-samples", d / "fit.txt", "-o", tmp_path / "bare", "--no-tsv")
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "bare" / "features.tsv").exists()
    assert (tmp_path / "bare" / "features.npy").read_bytes() == (d / "out" / "features.npy").read_bytes()
    # the table written by the other run holds the same numbers at 7 significant digits
    table, bare = read_features(d / "out" / "features.tsv"), read_features(tmp_path / "bare")
    assert table.samples == bare.samples and table.columns == bare.columns
    assert np.allclose(table.matrix, bare.matrix, rtol=1e-6, atol=1e-6)


def test_gtf_bcf_and_nearest_gene(cli, tmp_path):
    import pysam

    bcf = tmp_path / "x.bcf"
    with pysam.VariantFile(str(VCF)) as src, pysam.VariantFile(str(bcf), "wb", header=src.header) as out:
        for rec in src:
            out.write(rec)
    assert cli("-q", "gene-pca", VCF, "-g", DATA / "genes_chr21_22.gtf", "-o", tmp_path / "v").exit_code == 0
    assert cli("-q", "gene-pca", bcf, "-g", DATA / "genes_chr21_22.gtf", "-o", tmp_path / "b").exit_code == 0
    assert (tmp_path / "v/features.tsv").read_bytes() == (tmp_path / "b/features.tsv").read_bytes()
    assert [r["gene"] for r in read_tsv(tmp_path / "v" / "genes.tsv")][:3] == ["HLCS", "TTC3", "DSCR3"]
    assert cli("-q", "gene-pca", VCF, "-g", BED, "--nearest-gene", "-o", tmp_path / "n").exit_code == 0
    assert cli("-q", "gene-pca", VCF, "-g", BED, "-o", tmp_path / "p").exit_code == 0
    from genointerp.io.genes import read_genes

    genes = read_genes(str(BED))
    outside = sum(not any("chr" + c == g.chrom and g.start <= p - 1 < g.end for g in genes) for c, p, *_ in read_vcf_text())
    near, plain = read_tsv(tmp_path / "n" / "genes.tsv"), {r["gene"]: int(r["n_sites"]) for r in read_tsv(tmp_path / "p" / "genes.tsv")}
    assert outside > 100 and sum(int(r["n_sites"]) for r in near) == sum(plain.values()) + outside
    assert all(int(r["n_sites"]) >= plain.get(r["gene"], 0) for r in near)
    assert cli("-q", "gene-pca", VCF, "-g", BED, "-o", tmp_path / "n").exit_code == 1  # exists, no --force
    assert cli("-q", "gene-pca", VCF, "-g", BED, "-o", tmp_path / "n", "--force").exit_code == 0


def test_plain_gzip_a_pipe_and_stdin_give_the_bgzip_files_features(fitted, cli, tmp_path):
    """Issue 14: htslib cannot seek in plain gzip, and a pipe or stdin can be read only once."""
    d, _, _ = fitted
    text = gzip.decompress(VCF.read_bytes())
    plain = tmp_path / "plain.vcf.gz"
    plain.write_bytes(gzip.compress(text))  # one plain gzip member, as `gzip` and many pipelines write
    args = ["-g", BED, "--fit-samples", d / "fit.txt"]
    runs = {"plain": cli("gene-pca", plain, *args, "-o", tmp_path / "plain")}
    with pipe_of(text) as fifo:  # <(zcat cohort.vcf.gz)
        runs["pipe"] = cli("gene-pca", fifo, *args, "-o", tmp_path / "pipe")
    runs["stdin"] = cli("gene-pca", "-", *args, "-o", tmp_path / "stdin", input=gzip.compress(text))
    for name, res in runs.items():
        assert res.exit_code == 0, (name, res.output)
        for f in ("features.npy", "features.tsv", "genes.tsv"):
            assert (tmp_path / name / f).read_bytes() == (d / "out" / f).read_bytes(), (name, f)
    res = cli("gene-pca", "-", "--apply", d / "out", "-o", tmp_path / "applied", input=text)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "applied/features.npy").read_bytes() == (d / "out/features.npy").read_bytes()


def test_side_files_are_read_gzipped_from_stdin_or_a_pipe(fitted, cli, tmp_path):
    d, samples, _ = fitted
    ids = tmp_path / "fit_ids"  # gzip without .gz in the name: recognised by its bytes
    ids.write_bytes(gzip.compress(("\n".join(samples[:45]) + "\n").encode()))
    res = cli("-q", "gene-pca", VCF, "-g", "-", "--fit-samples", ids, "-o", tmp_path / "o",
              input=gzip.compress(BED.read_bytes()))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o/features.npy").read_bytes() == (d / "out/features.npy").read_bytes()
    gtf = DATA / "genes_chr21_22.gtf"
    assert cli("-q", "gene-pca", VCF, "-g", gtf, "-o", tmp_path / "named").exit_code == 0
    with pipe_of(gzip.compress(gtf.read_bytes())) as fifo:  # no name to go by: GTF from its columns
        res = cli("-q", "gene-pca", VCF, "-g", fifo, "-o", tmp_path / "piped")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "piped/genes.tsv").read_bytes() == (tmp_path / "named/genes.tsv").read_bytes()
    assert (tmp_path / "piped/features.npy").read_bytes() == (tmp_path / "named/features.npy").read_bytes()


def test_a_bcf_must_be_a_file_and_stdin_serves_one_input(cli, tmp_path):
    import pysam

    bcf = tmp_path / "x.bcf"
    with pysam.VariantFile(str(VCF)) as src, pysam.VariantFile(str(bcf), "wb", header=src.header) as out:
        for rec in src:
            out.write(rec)
    with pipe_of(bcf.read_bytes()) as fifo:
        res = cli("gene-pca", fifo, "-g", BED, "-o", tmp_path / "o")
    assert res.exit_code == 1 and not (tmp_path / "o").exists()
    assert_one_error_line(res, "a BCF cannot be read from a pipe or stdin")
    res = cli("gene-pca", "-", "-g", BED, "-o", tmp_path / "o", input=bcf.read_bytes())
    assert res.exit_code == 1 and not (tmp_path / "o").exists()
    assert_one_error_line(res, "-: a BCF cannot be read from a pipe or stdin")
    res = cli("gene-pca", "-", "-g", "-", "-o", tmp_path / "o", input=VCF.read_bytes())
    assert res.exit_code == 2 and "VCF and --genes are both - (stdin)" in res.stderr


# ---- bad input ------------------------------------------------------------------------------------

def vcf_text(edit=None, header_edit=None) -> str:
    out = []
    for line in gzip.open(VCF, "rt"):
        if line.startswith("#"):
            out.append(header_edit(line) if header_edit else line)
        else:
            out.append(edit(line) if edit else line)
    return "".join(l for l in out if l)


@pytest.mark.parametrize("case,message", [
    ("no_gt", "no GT field in the FORMAT"),
    ("truncated", "truncated"),
    ("cut_line", "line 100"),
    ("empty", "no variant records"),
    ("unsorted", "sort the VCF"),
    ("missing_vcf", "no such file"),
    ("missing_genes", "no such file"),
    ("other_chromosomes", "no chromosome of"),
    ("unknown_sample", "'nobody'"),
    ("bad_apply", "not a gene-pca transform"),
    ("damaged_apply", "damaged gene-pca transform"),
    ("apply_genes_disagree", "damaged gene-pca transform (gene table and arrays disagree)"),
    ("not_a_vcf", "not a VCF or BCF"),
    ("truncated_plain_gzip", "in.vcf.gz: truncated or damaged compressed data"),
    ("duplicate_vcf_sample", "sample '2_HG00097' appears more than once"),
    ("binary_samples", "not a text file"),
    ("binary_fit_samples", "not a text file"),
    ("binary_phenotypes", "not a text file"),
    ("binary_genes", "not a text file"),
    ("truncated_genes", "truncated or corrupt gzip data"),
    ("one_sample", "PCA needs at least 2 fit samples"),
])
def test_bad_input_is_one_error_line_and_leaves_no_output(case, message, cli, tmp_path, fitted):
    genes = tmp_path / "genes.bed"  # the VCF's chromosome naming: no alias warning beside the error
    genes.write_text(BED.read_text().replace("chr", ""))
    vcf, extra = tmp_path / "in.vcf", []
    if case == "no_gt":
        vcf.write_text(vcf_text(lambda l: l.replace("\tGT\t", "\tDS\t", 1),
                                lambda l: l.replace("ID=GT", "ID=DS").replace("String", "Float")))
    elif case == "truncated":
        raw = VCF.read_bytes()
        vcf = tmp_path / "in.vcf.gz"
        vcf.write_bytes(raw[: len(raw) // 2])
    elif case == "cut_line":
        lines = vcf_text().splitlines(keepends=True)
        n_header = sum(l.startswith("#") for l in lines)
        lines[99] = lines[99][:200] + "\n"
        vcf.write_text("".join(lines))
        message = f"line {100}"
        assert n_header < 100
    elif case == "empty":
        vcf.write_text(vcf_text(lambda l: ""))
    elif case == "unsorted":
        lines = vcf_text().splitlines(keepends=True)
        lines[-1], lines[-2] = lines[-2], lines[-1]
        vcf.write_text("".join(lines))
    elif case == "missing_vcf":
        vcf = tmp_path / "absent.vcf.gz"
    elif case == "missing_genes":
        vcf, genes = VCF, tmp_path / "absent.bed"
    elif case == "other_chromosomes":
        vcf, genes = VCF, tmp_path / "g.bed"
        genes.write_text("chr1\t100\t2000\tX\n")
    elif case == "unknown_sample":
        vcf = VCF
        (tmp_path / "s.txt").write_text("1_HG00096\nnobody\n")
        extra = ["--samples", tmp_path / "s.txt"]
    elif case == "bad_apply":
        vcf, genes, extra = VCF, None, ["--apply", tmp_path]
    elif case == "damaged_apply":
        import shutil

        shutil.copytree(fitted[0] / "out", tmp_path / "t")
        (tmp_path / "t/transform.npz").write_bytes(b"PK\x03\x04 not really")
        vcf, genes, extra = VCF, None, ["--apply", tmp_path / "t"]
    elif case == "apply_genes_disagree":
        import shutil

        shutil.copytree(fitted[0] / "out", tmp_path / "t")
        meta = json.loads((tmp_path / "t/transform.json").read_text())
        del meta["genes"][1]["first"]
        (tmp_path / "t/transform.json").write_text(json.dumps(meta))
        vcf, genes, extra = VCF, None, ["--apply", tmp_path / "t"]
    elif case == "not_a_vcf":
        vcf.write_bytes(BINARY)
    elif case == "truncated_plain_gzip":
        vcf = tmp_path / "in.vcf.gz"
        whole = gzip.compress(vcf_text().encode())
        vcf.write_bytes(whole[: len(whole) // 2])
    elif case == "duplicate_vcf_sample":
        vcf.write_text(vcf_text(header_edit=lambda l: l.replace("1_HG00096", "2_HG00097")))
    elif case in ("binary_samples", "binary_fit_samples", "binary_phenotypes"):
        vcf = VCF
        (tmp_path / "side").write_bytes(BINARY)
        extra = ["--" + case.split("_", 1)[1].replace("_", "-"), tmp_path / "side"]
    elif case == "binary_genes":
        vcf = VCF
        genes.write_bytes(gzip.compress(BINARY))
    elif case == "truncated_genes":
        vcf, genes = VCF, tmp_path / "genes.bed.gz"
        whole = gzip.compress(BED.read_text().replace("chr", "").encode())
        genes.write_bytes(whole[: len(whole) // 2])
    elif case == "one_sample":
        vcf = VCF
        (tmp_path / "s.txt").write_text("1_HG00096\n")
        extra = ["--samples", tmp_path / "s.txt"]
    args = ["gene-pca", vcf, *(["-g", genes] if genes else []), *extra, "-o", tmp_path / "out"]
    res = cli(*args)
    assert res.exit_code == 1, res.output
    assert_one_error_line(res, message)
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".genointerp-tmp")]


def test_usage_errors_exit_2(cli, tmp_path, fitted):
    assert cli("gene-pca", VCF, "-o", tmp_path / "o").exit_code == 2  # neither -g nor --apply
    assert cli("gene-pca", VCF, "-g", BED, "--pcs-rule", "4:1", "-o", tmp_path / "o").exit_code == 2
    assert cli("gene-pca", VCF, "-g", BED, "--apply", fitted[0] / "out", "-o", tmp_path / "o").exit_code == 2
    assert cli("gene-pca", VCF, "-g", BED, "--maf", "0.7", "-o", tmp_path / "o").exit_code == 2
