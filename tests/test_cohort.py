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
