"""Mosaic cohorts from phased haplotypes: alleles come from the panel, tiles, VCF writer."""

import numpy as np

from genointerp.genotypes.cohort import TILES_PER_CHROM, mosaic_cohort, read_panel, tile_genes, tile_layout, write_mosaic_vcf
from genointerp.io.genes import Gene
from genointerp.io.vcf import VcfGenotypes


def make_panel(tmp_path, n_sites=50, n_ref=30):
    rng = np.random.default_rng(0)
    haps = (rng.random((n_sites, 2 * n_ref)) < rng.uniform(0.05, 0.6, (n_sites, 1))).astype(int)
    lines = ["##fileformat=VCFv4.2", "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t"
             + "\t".join(f"R{i}" for i in range(n_ref))]
    for i in range(n_sites):
        gts = "\t".join(f"{haps[i, 2 * j]}|{haps[i, 2 * j + 1]}" for j in range(n_ref))
        lines.append(f"21\t{1000 + 100 * i}\t.\tA\tG\t.\t.\t.\tGT\t{gts}")
    (tmp_path / "p.vcf").write_text("\n".join(lines) + "\n")
    # a map on another chromosome (as the bundled excerpt): used by position; 1 cM per 1,000 bp
    (tmp_path / "map.txt").write_text("chr position rate cM\n22 0 1 0\n22 100000 1 100\n")
    return str(tmp_path / "p.vcf"), str(tmp_path / "map.txt"), haps


def test_mosaic_haplotypes_copy_panel_alleles_and_switch_templates(tmp_path):
    vcf, gmap, haps = make_panel(tmp_path)
    panel = read_panel(vcf, gmap)
    assert np.allclose(panel.cm, (panel.pos) / 1000)  # interpolated from the other chromosome's map
    cohort = mosaic_cohort(vcf, gmap, n_samples=400, seed=1, switches_per_morgan=50)
    assert cohort.dosage.shape == (400, 50) and set(np.unique(cohort.dosage)) <= {0, 1, 2}
    # allele frequencies follow the panel's (800 mosaic haplotypes drawn from 60 real ones)
    assert np.abs(cohort.dosage.mean(axis=0) / 2 - haps.mean(axis=1)).max() < 0.1
    # 0.05 switches per 100 bp site interval: long identical runs but not whole copies of one template
    again = mosaic_cohort(vcf, gmap, n_samples=400, seed=1, switches_per_morgan=50)
    assert np.array_equal(again.dosage, cohort.dosage)
    assert not np.array_equal(mosaic_cohort(vcf, gmap, n_samples=400, seed=2).dosage, cohort.dosage)


def test_tiles_reach_any_snp_count_and_the_vcf_holds_the_same_cohort(tmp_path):
    vcf, gmap, _ = make_panel(tmp_path)
    panel = read_panel(vcf, gmap)
    layout = tile_layout(panel, 50 * (TILES_PER_CHROM + 1) + 7)
    assert len(layout) == TILES_PER_CHROM + 2 and layout[-1][2] == 7
    assert [c for c, _, _ in layout[TILES_PER_CHROM - 1: TILES_PER_CHROM + 1]] == ["1", "2"]
    genes = tile_genes(panel, [Gene("G", "chr21", 1050, 1250), Gene("H", "chr21", 5000, 5100)], layout[:2])
    assert [(g.name, g.chrom, g.end - g.start) for g in genes] == [("G.t0", "1", 200), ("H.t0", "1", 100),
                                                                    ("G.t1", "1", 200), ("H.t1", "1", 100)]
    cohort = mosaic_cohort(vcf, gmap, n_samples=20, seed=3, n_snps=120)
    write_mosaic_vcf(tmp_path / "c.vcf.gz", vcf, gmap, n_samples=20, n_snps=120, seed=3)
    reader = VcfGenotypes(str(tmp_path / "c.vcf.gz"))
    sites = list(reader)
    assert reader.samples == cohort.samples
    assert [s.pos for s in sites] == cohort.pos.tolist() and sorted(set(cohort.pos.tolist())) == cohort.pos.tolist()
    assert np.array_equal(np.array([s.dosage for s in sites]).T, cohort.dosage)


def test_planted_genes_follow_their_architecture():
    from genointerp.genotypes.cohort import plant_gene, planted_parts, planted_score

    rng = np.random.default_rng(0)
    # ALT frequencies of 12 SNPs: two common at 0.3 / 0.7 (minor allele REF), five at 0.1, four
    # low-frequency at 0.02, one at 0.5
    af = np.array([0.3, 0.7, 0.1, 0.1, 0.1, 0.1, 0.1, 0.02, 0.02, 0.02, 0.02, 0.5])
    dose = rng.binomial(2, af, size=(4000, 12)).astype(np.int8)
    cols = np.arange(12) + 100  # the gene's own columns in a larger matrix
    single = plant_gene("single", "A", cols, af, rng)
    assert single.columns.tolist() in ([100], [101])  # MAF 0.22-0.36 only
    several = plant_gene("several", "B", cols, af, rng)
    assert len(several.columns) == 5 and set(several.columns) <= set(range(100, 107)) | {111}
    dense = plant_gene("dense", "C", cols, af, rng)
    assert dense.columns.tolist() == cols.tolist() and len(set(dense.weights)) == 12
    burden = plant_gene("burden", "D", cols, af, rng)
    assert burden.columns.tolist() == [107, 108, 109, 110] and (burden.weights == 1).all()
    assert plant_gene("burden", "E", cols[:9], af[:9], rng) is None  # 2 low-frequency SNPs: too few
    wide = np.zeros((4000, 112), dtype=np.int8)
    wide[:, 100:] = dose
    # minor-allele copies: SNP 101's minor allele is REF, so 2 - d counts it
    a = plant_gene("single", "A", cols[1:2], af[1:2], rng)
    assert np.array_equal(a.score(wide), 2.0 - dose[:, 1]) and np.array_equal(a.high(wide), dose[:, 1] < 2)
    assert np.array_equal(burden.high(wide), dose[:, 7:11].sum(1) > 0)
    additive, pair = planted_parts("xor", wide, [dense, several], (a, burden))
    want = a.high(wide) ^ burden.high(wide)
    assert np.allclose(pair, (want - want.mean()) / want.std()) and abs(additive.std() - 1) < 1e-12
    assert planted_parts("none", wide, [dense], None)[1] is None
    g = planted_score(additive, pair)
    assert abs(g.mean()) < 1e-12 and abs(g.std() - 1) < 1e-12
