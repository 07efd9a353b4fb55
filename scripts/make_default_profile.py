"""Rebuild genointerp's built-in HiSeq 2500 150 bp quality profiles from ART's empirical ones.

Source: Debian package art-nextgen-simulation-tools-profiles, HiSeq2500L150R1filter.txt and
R2filter.txt: the filtered profiles that `art_illumina -ss HS25` behaves like (its reads have no
Q2/Q3 bases and about 0.17 % substitutions on read 1; the unfiltered HiSeq2500L150R1.txt implies
1.7 %, ten times more, mostly from Q3 bases at the 3' end; benchmarks/simulate_reads.py measures
both). Only the per-cycle quality distribution over all bases is kept. Usage: python scripts/make_default_profile.py [PROFILE_DIR]
"""

import sys
from pathlib import Path

from genointerp.seq.error_profile import load_art_profile, save_profile_tsv

src = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/art-nextgen-simulation-tools/Illumina_profiles")
out = Path(__file__).resolve().parent.parent / "genointerp" / "resources"
for mate in (1, 2):
    profile = load_art_profile(src / f"HiSeq2500L150R{mate}filter.txt")
    save_profile_tsv(profile, out / f"hiseq2500_150_r{mate}.tsv")
    print(f"R{mate}: {profile.cycles} cycles, mean error {profile.mean_error_rate().mean():.5f}")
