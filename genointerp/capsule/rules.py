"""Rules the capsule commands' requests share: option ranges, the primary-capsule kind and the
network shape the settings describe. Each raises UsageError with one line naming the option."""

from __future__ import annotations

from genointerp.errors import UsageError
from genointerp.models.capsule import CapsuleConfig

# --seed's range (cli.options.SEED_MAX): scikit-learn's random_state takes no more
SEED_MAX = 2**32 - 1


def within(*ranges: tuple[str, float | None, float | None, float | None]) -> None:
    """(option, value, lowest, highest) each: UsageError for a value outside lowest..highest (NaN
    included); a None value (an option left to its default) or bound is not checked."""
    for name, value, lo, hi in ranges:
        if value is None:
            continue
        if lo is not None and not value >= lo and hi is None:
            raise UsageError(f"{name}: {value} is below {lo}")
        if not ((lo is None or value >= lo) and (hi is None or value <= hi)):
            raise UsageError(f"{name}: {value} is outside {'' if lo is None else lo}..{'' if hi is None else hi}")


def primary_kind(primary: str) -> None:
    if primary not in CapsuleConfig.PRIMARY_KINDS:
        raise UsageError(f"--primary: expected one of {', '.join(CapsuleConfig.PRIMARY_KINDS)}, got {primary!r}")


def network(primary: str, **fields) -> CapsuleConfig:
    """The network the settings describe (CapsuleConfig `fields` besides n_features and gene_index)
    on a stand-in input of one gene with one PC: the shape rules (a conv kernel that fits the dense
    layer) and the primary capsule count of conv capsules do not depend on the input."""
    config = CapsuleConfig(n_features=1, primary=primary, gene_index=(0,) if primary == "gene" else (), **fields)
    try:
        config.validate()
    except ValueError as exc:
        raise UsageError(f"--kernel-size/--hidden: {exc}") from None
    return config
