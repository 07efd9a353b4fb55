"""How a capsule network is trained: capsule-train's protocol settings, which capsule-search's
fitness trainings take too (with no test set and no baselines)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from genointerp.options import arg, opt


@dataclass
class CapsuleSettings:
    folds: int = 5
    test_fraction: float = 0.2
    valid_fraction: float = 0.15
    epochs: int = 100
    patience: int = 10
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    lr_decay: float = 0.97  # exponential: lr * lr_decay ** epoch
    gene_penalty: float = 0.0  # group lasso weight at PENALTY_ROWS training rows (fit.penalty_weight); 0: none
    pair_screen: bool = False  # exempt the pair screen's best gene pair from the group penalty
    # give the screened pair a pair capsule of its PCs' products where it interacts beyond chance
    pair_capsule: bool = False
    # switch off the genes whose score test on the inner training rows (marginal, then beside the genes kept
    # before them) is not under this level
    # (fit.screened_out; gene capsules under the group penalty); 0: none
    gene_screen: float = 0.0
    # switch off the PCs of each gene with a burden column unless they add to it at this level on the inner
    # training rows (fit.pcs_screened_out; gene capsules under the group penalty); 0: none
    burden_view: float = 0.0
    # the last burden_columns columns of the features are per-gene burden columns (burden.py), which the
    # pair test leaves out: it tests products of PCs
    burden_columns: int = 0
    # after early stopping, train the network anew on every training row (the inner validation part too)
    # for the epochs it chose (fit.refit)
    refit: bool = False
    seed: int = 1
    device: str = "cpu"
    threads: int = 1
    baselines: bool = True
    train_fractions: list[float] = field(default_factory=list)


def settings_dict(s: CapsuleSettings) -> dict:
    d = asdict(s)
    d.pop("device"), d.pop("threads")  # where it ran does not describe the model
    return d


# the options capsule-train and capsule-search share, declared once (genointerp.options)
def features_arg():
    """FEATURES: a gene-pca output folder or a features TSV."""
    return arg(metavar="FEATURES",
               help="gene-pca output folder, or a TSV (sample column first, then chrom:gene:pcN columns).")


def phenotypes_option():
    """-p/--phenotypes, required."""
    return opt(..., "-p", "--phenotypes",
               help="Phenotype TSV (sample/IID column + phenotype columns; NA, -9, empty = missing).")


def phenotype_option():
    """--phenotype: which column of --phenotypes."""
    return opt(None, "--phenotype", help="Phenotype column (default: the first one); binary.")
