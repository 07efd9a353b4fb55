"""Data shipped inside the package: read-error profiles and built-in models."""

from importlib import resources
from pathlib import Path

BUILTIN_XVIR = "xvir_hpv"
BUILTIN_TRACKS = "tracks_dream_chr20"


def builtin_model_dir(name: str = BUILTIN_XVIR) -> Path:
    """Folder of a built-in model (model.safetensors + config.json), installed with the package."""
    return Path(str(resources.files("genointerp.resources") / "models" / name))
