"""A viral model folder's folded model tables (FOLDED_FILE beside its weights): written, checked
and loaded here, so that classify-reads runs the model on CPU without importing torch.

genointerp.models.xvir_folded runs the tables; genointerp.models.xvir_fold makes them from the
module. `genointerp index-model` and train-xvir store them with the prebuilt indexes; they are
used only where their recorded digest is that of the folder's weights file and config.json model
entry (a folder whose weights or settings were changed, or an older genointerp's tables, is
stale, and the model loads through torch).
"""

from __future__ import annotations

from pathlib import Path

from genointerp.model_folder import read_model_config
from genointerp.models.xvir_folded import FoldedXVir, foldable, load_folded, save_folded, stale_folded
from genointerp.viral.model_files import FOLDED_FILE, WEIGHTS


def folded_problem(folder: str | Path, config: dict) -> str | None:
    """Why the folder's model cannot run from stored tables now (missing, stale, damaged), None when
    it can or when its model does not fold (it runs through the module anyway)."""
    if not foldable(config.get("model", {})):
        return None
    folder = Path(folder)
    return stale_folded(folder / FOLDED_FILE, folder / WEIGHTS, config["model"])


def stored_folded(folder: str | Path, threads: int = 1) -> FoldedXVir | str:
    """The folder's stored folded model, or why there is none to use (a damaged one whose header
    reads as current is an InputError)."""
    folder = Path(folder)
    config = read_model_config(folder, expect="xvir")
    return load_folded(folder / FOLDED_FILE, folder / WEIGHTS, config["model"], threads)


def write_folded(folder: str | Path, model=None) -> Path | None:
    """Fold the folder's XVir (loaded from it unless given; imports torch) and store the tables in
    the folder; returns their path, None for a model that does not fold."""
    from genointerp.model_folder import load_model_dir
    from genointerp.models.xvir_fold import fold, supports

    folder = Path(folder)
    config = read_model_config(folder, expect="xvir")
    if model is None:
        model, _ = load_model_dir(folder, expect="xvir")
    if not supports(model):
        return None
    save_folded(fold(model), folder / FOLDED_FILE, folder / WEIGHTS, config["model"])
    return folder / FOLDED_FILE
