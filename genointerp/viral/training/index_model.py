"""The index-model job: a model folder's viral indexes stored prebuilt in `<folder>/index/`, and its
folded model tables beside its weights.

classify-reads and find-integrations then memory-map the indexes and start at once, instead of
building them (about eight seconds for the built-in model) or reading them from the user's cache
(genointerp.viral.evidence.prebuilt), and classify-reads runs the model on CPU without importing
torch (genointerp.viral.folded_model). train-xvir writes both with every folder it makes; this is
for older folders and the built-in model (`make install` and the Docker image run it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from genointerp.errors import InputError
from genointerp.io.atomic import AtomicOutputs
from genointerp.model_folder import read_model_config
from genointerp.options import arg, opt
from genointerp.report import Reporter
from genointerp.resources import builtin_model_dir
from genointerp.models.xvir_folded import foldable
from genointerp.viral.evidence.prebuilt import current, load_indexes, write_folder_index
from genointerp.viral.folded_model import folded_problem, write_folded
from genointerp.viral.model_files import INDEX_DIR
from genointerp.viral.typing.placement import PANEL_INDEX, PANEL_REFS, store_panel_index


@dataclass
class IndexModelRequest:
    """index-model: the fields are its options."""

    model: str | None = arg(None, metavar="[MODEL]", help="Model folder from train-xvir (default: the built-in model).")
    check_only: bool = opt(False, "--check", help="Only say whether the folder's prebuilt index and folded model are "
                           "current (exit 1 if not); write nothing.")

    def check(self) -> None:
        pass

    def model_folder(self) -> str:
        return self.model or str(builtin_model_dir())

    def inputs(self) -> list[str]:
        return [self.model_folder()]


def _state(problem: str | None) -> str:
    return "current" if problem is None else "missing" if problem == "missing" else "stale"


def run(req: IndexModelRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write (or with check_only, check) the folder's prebuilt index (with minimap2's index of the
    references in it) and folded model tables; returns {"folder", "index": the index's path,
    "state": "current" | "written" | "stale" | "missing"} (stale or missing: whichever part is
    not current). Each is written beside and renamed into place, so no AtomicOutputs is needed."""
    folder = Path(req.model_folder())
    config = read_model_config(folder, expect="xvir")
    index = current(folder, config)
    folded = folded_problem(folder, config)
    if index is None and not foldable(config.get("model", {})):
        raise InputError(f"{folder}: this model has no viral index (config.json 'kmer_index') and does not fold; "
                         "nothing to prebuild")
    # minimap2's index and the references' list beside it (an index folder written before the list
    # was stored still works: its runs read the references; this stores the list)
    panel = index is not None and all((folder / INDEX_DIR / name).is_file()
                                      for name in (PANEL_INDEX, PANEL_REFS))
    states = [_state(folded)]
    if index is not None:
        states.append("current" if index and panel else "stale" if (folder / INDEX_DIR).exists() else "missing")
    state = "current" if set(states) == {"current"} else "stale" if "stale" in states else "missing"
    result = {"folder": str(folder), "index": str(folder / INDEX_DIR), "state": state}
    if state == "current" or req.check_only:
        return result
    try:
        if index is False or (index and not panel):
            began = time.perf_counter()
            if index is False:
                write_folder_index(folder, config)
            store_panel_index(folder, load_indexes(folder, config, report.log)[0])
            report.log(f"{folder / INDEX_DIR}: written in {time.perf_counter() - began:.1f} s")
        if folded is not None:
            began = time.perf_counter()
            written = write_folded(folder)
            report.log(f"{written}: written in {time.perf_counter() - began:.1f} s")
    except PermissionError as exc:
        raise InputError(f"{folder}: cannot write its prebuilt index there ({exc.strerror}); runs still work, "
                         "building the index or reading it from the user's cache") from None
    return {**result, "state": "written"}
