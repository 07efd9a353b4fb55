"""The index-model job: a model folder's viral indexes stored prebuilt in `<folder>/index/`.

classify-reads and find-integrations then memory-map them and start at once, instead of building
them (about five seconds for the built-in model) or reading them from the user's cache
(genointerp.viral.evidence.prebuilt). train-xvir writes them with every folder it makes; this is for older
folders and the built-in model (`make install` and the Docker image run it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from genointerp.errors import InputError
from genointerp.io.atomic import AtomicOutputs
from genointerp.model_folder import read_model_config
from genointerp.report import Reporter
from genointerp.resources import builtin_model_dir
from genointerp.viral.evidence.prebuilt import current, write_folder_index
from genointerp.viral.model_files import INDEX_DIR


@dataclass
class IndexModelRequest:
    """index-model: the fields are its options."""

    model: str | None = None  # model folder from train-xvir; None: the built-in model
    check_only: bool = False  # say whether the folder's prebuilt index is current, write nothing

    def check(self) -> None:
        pass

    def model_folder(self) -> str:
        return self.model or str(builtin_model_dir())

    def inputs(self) -> list[str]:
        return [self.model_folder()]


def run(req: IndexModelRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write (or with check_only, check) the folder's prebuilt index; returns {"folder", "index":
    its path, "state": "current" | "written" | "stale" | "missing"}. The index is written beside
    and renamed into place (genointerp.viral.evidence.prebuilt.save), so no AtomicOutputs is needed."""
    folder = Path(req.model_folder())
    config = read_model_config(folder, expect="xvir")
    state = current(folder, config)
    if state is None:
        raise InputError(f"{folder}: this model has no viral index (config.json 'kmer_index'); nothing to prebuild")
    result = {"folder": str(folder), "index": str(folder / INDEX_DIR), "state": "current" if state else
              ("stale" if (folder / INDEX_DIR).exists() else "missing")}
    if state or req.check_only:
        return result
    began = time.perf_counter()
    try:
        write_folder_index(folder, config)
    except PermissionError as exc:
        raise InputError(f"{folder}: cannot write its prebuilt index there ({exc.strerror}); runs still work, "
                         "building the index or reading it from the user's cache") from None
    report.log(f"{folder / INDEX_DIR}: written in {time.perf_counter() - began:.1f} s")
    return {**result, "state": "written"}
