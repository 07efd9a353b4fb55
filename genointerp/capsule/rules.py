"""Rules the capsule commands' requests share: option ranges, the primary-capsule kind and the
network shape the settings describe. Each raises UsageError with one line naming the option."""

from __future__ import annotations

from genointerp.errors import UsageError
from genointerp.models.capsule import CapsuleConfig

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
