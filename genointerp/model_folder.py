"""Model directories: model.safetensors (weights) + config.json (architecture, data, provenance).

Never pickled modules: loading rebuilds the model from its config and checks that every weight
the file holds fits it, so a model from another architecture or a damaged file is refused with a
clear message instead of a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from genointerp import __version__
from genointerp.errors import InputError
from genointerp.io.atomic import make_readable
from genointerp.io.jsonfile import read_json_object

WEIGHTS, CONFIG = "model.safetensors", "config.json"


def _registry():
    # here, not at the top: the models import torch (about 1.5 s), and reading or checking a
    # folder's config.json (check_calling, read_config) must not pay for it
    from genointerp.models.capsule import CapsuleConfig, CapsuleNet
    from genointerp.models.swin1d import GenomicInterpreter, Swin1DConfig
    from genointerp.models.track_baselines import (AttPoolCNN, AttPoolCNNConfig, AttPoolDilated, AttPoolDilatedConfig,
                                                   EnformerLike, EnformerLikeConfig, MaxPoolCNN, MaxPoolCNNConfig)
    from genointerp.models.xvir import XVir, XVirConfig

    return {"xvir": (XVirConfig, XVir), "capsule": (CapsuleConfig, CapsuleNet),
            "swin1d": (Swin1DConfig, GenomicInterpreter), "maxpool-cnn": (MaxPoolCNNConfig, MaxPoolCNN),
            "attpool-cnn": (AttPoolCNNConfig, AttPoolCNN), "attpool-dilated": (AttPoolDilatedConfig, AttPoolDilated),
            "enformer-like": (EnformerLikeConfig, EnformerLike)}


def check_calling(config: dict, where: str) -> float | None:
    """The calibrated calling threshold of config.json's optional "calling" section, checked: a
    number from 0 to 1 (None when the model has none)."""
    calling = config.get("calling")
    if calling is None:
        return None
    if not isinstance(calling, dict):
        raise InputError(f"{where}: 'calling' is not an object; damaged model configuration")
    value = calling.get("threshold")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InputError(f"{where}: calling.threshold {value!r} is not a number from 0 to 1; damaged model configuration")
    return float(value)


def build_model(arch_config: dict):
    """Instantiate the model an architecture dict (config.json["model"]) describes."""
    name = arch_config.get("architecture")
    registry = _registry()
    if name not in registry:
        raise InputError(f"unknown model architecture {name!r} (known: {', '.join(registry)})")
    config_cls, model_cls = registry[name]
    try:
        return model_cls(config_cls.from_dict(arch_config))
    except (TypeError, ValueError) as exc:
        raise InputError(f"model configuration: {exc}") from None


def save_model_dir(folder: Path, model, info: dict) -> None:
    """Write weights and config.json into `folder` (normally an AtomicOutputs temporary)."""
    from safetensors.torch import save_file

    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / WEIGHTS), metadata={"genointerp_version": __version__})
    make_readable(folder / WEIGHTS)
    config = {"model": model.config.to_dict(), "genointerp_version": __version__, **info}
    (folder / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=False) + "\n")


def read_model_config(folder: str | Path, expect: str | None = None) -> dict:
    """The config.json of a model directory, checked as far as it can be without torch: an object
    with a 'model' object of the `expect`ed architecture and a valid 'calling' section, beside a
    weights file whose safetensors header reads (the weights' names and shapes are checked
    against the architecture when the model is built, by load_model_dir)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: model directory not found")
    config = read_json_object(folder / CONFIG, f"{folder}: no {CONFIG}; not a genointerp model directory",
                              "a model configuration")
    arch = config.get("model", {})
    if not isinstance(arch, dict):
        raise InputError(f"{folder}/{CONFIG}: 'model' is not an object; damaged model configuration")
    check_calling(config, f"{folder}/{CONFIG}")
    if expect and arch.get("architecture") != expect:
        raise InputError(f"{folder}: a {arch.get('architecture')!r} model, but this command needs {expect!r}")
    _check_header(folder / WEIGHTS)
    return config


def _check_header(path: Path) -> None:
    """An InputError unless `path` starts like a safetensors file: an 8-byte little-endian header
    length, that many bytes of a JSON object, all within the file."""
    try:
        with open(path, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            total = os.fstat(fh.fileno()).st_size
            ok = 2 <= size <= min(total - 8, 100_000_000)
            header = json.loads(fh.read(size)) if ok else None
    except FileNotFoundError:
        raise InputError(f"{path.parent}: no {WEIGHTS}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: damaged or not a safetensors file ({exc})") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: damaged or not a safetensors file (no valid header)")


def load_model_dir(folder: str | Path, expect: str | None = None):
    """Return (model in eval mode, config dict) from a model directory."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    config = read_model_config(folder, expect)
    model = build_model(config["model"])
    try:
        state = load_file(str(folder / WEIGHTS))
    except FileNotFoundError:
        raise InputError(f"{folder}: no {WEIGHTS}") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(f"{folder}/{WEIGHTS}: damaged or not a safetensors file ({exc})") from None
    own = model.state_dict()
    missing, unexpected = set(own) - set(state), set(state) - set(own)
    wrong = [k for k in set(own) & set(state) if own[k].shape != state[k].shape]
    if missing or unexpected or wrong:
        detail = (f"missing {sorted(missing)[:3]}" if missing else f"unexpected {sorted(unexpected)[:3]}" if unexpected
                  else f"shape of {wrong[0]} is {tuple(state[wrong[0]].shape)}, config expects {tuple(own[wrong[0]].shape)}")
        raise InputError(f"{folder}: weights do not match config.json ({detail})")
    model.load_state_dict(state)
    return model.eval(), config
