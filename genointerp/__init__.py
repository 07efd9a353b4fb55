"""genointerp: interpretable deep learning for sequencing pipelines.

Only the version lives here so that `genointerp --version` and `--help` stay fast
(no numpy, pysam or torch import).
"""

__version__ = "0.1.0"
