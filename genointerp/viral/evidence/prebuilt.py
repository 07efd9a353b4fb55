"""A model folder's viral indexes prebuilt: arrays memory-mapped at load, so a run starts at once.

Building the seed and protein indexes from a folder's references takes about eight seconds for the
built-in model (six-frame translation of every reference, sorting some ten million ids and places), where a
run on one read needs milliseconds. So the arrays are written once, as numpy `.npy` files that
load by memory-mapping: a run reads only the pages it touches, from disk or the page cache, and
the processes of one machine (classify-reads' workers, parallel pipeline jobs) share them.
A folder's own prebuilt index also holds minimap2's index of the references, which typing places
the reads called viral on (genointerp.viral.typing.placement.store_panel_index, written after
the arrays by index-model and train-xvir): each process that types reads loads it in about 0.05 s
instead of building it in about 0.45 s; and, beside it, the references' names, lengths and
descriptions (placement.PANEL_REFS), so that such a process reads no reference's sequence.

Where they are looked for, in order:
  1. `<model folder>/index/`: train-xvir writes it with the folder; `genointerp index-model
     FOLDER` writes it for an older folder or the built-in model (`make install` and the Docker
     image do so for the built-in one).
  2. the user's cache, `$GENOINTERP_CACHE` (default `$XDG_CACHE_HOME/genointerp`, else
     `~/.cache/genointerp`), under `indexes/<digest>/`; `GENOINTERP_CACHE=off` turns it off.
A run that finds neither builds the indexes in memory, says so in one line, and stores them in the
cache for the next run where the cache can be written (never in the model folder: that is an
input, and a run does not change its inputs).

A prebuilt index is used only where its manifest's digest is the folder's: SHA-256 over this
module's FORMAT, config.json's index entries and the bytes of the files they name (references,
excluded lists) and of the references' descriptions (they say which genomes are circular).
Anything else (an older format, references changed since) is stale: a stale or damaged index
is not used (a line says so, for a folder's own one naming `genointerp index-model`), and the
run goes on as without one.
The arrays' contents are not hashed at load: that would read every page, the cost this avoids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from genointerp.interrupts import on_abandon
from genointerp.seq.idset import build_lookup
from genointerp.viral.evidence.seeds import IndexSource, KmerIndex, build_from, index_source
from genointerp.viral.evidence.extension import ReferenceProteins
from genointerp.viral.evidence.places import ReferenceBases
from genointerp.viral.evidence.protein import ProteinIndex, build_protein_from, protein_source
from genointerp.viral.model_files import DESCRIPTIONS_FILE, INDEX_DIR, KMER_KEY, MANIFEST, PROTEIN_KEY

# raise when the arrays' layout or meaning changes: older prebuilt indexes become stale (2: smaller
# filters; 3: the digest covers the descriptions; 4: the codon seeds' places, int32 tables; 5: the
# seeds' lookup table; 6: with each seed's first place)
FORMAT = 6
CACHE_ENV = "GENOINTERP_CACHE"
_KMER = ("kmer_ids", "kmer_labels", "kmer_filter", "kmer_letters", "kmer_start", "kmer_places", "kmer_lookup")
_PROTEIN = ("protein_ids", "protein_labels", "protein_filter", "protein_residues", "protein_start", "protein_places")


def source_digest(source: IndexSource, protein: IndexSource | None, config: dict) -> str:
    """SHA-256 (hex) of what the indexes are built from: FORMAT, the config entries, the files' bytes."""
    h = hashlib.sha256()
    entries = {"format": FORMAT, KMER_KEY: config.get(KMER_KEY), PROTEIN_KEY: config.get(PROTEIN_KEY)}
    h.update(json.dumps(entries, sort_keys=True, default=str).encode())
    files = [source.references, source.excluded] + ([protein.excluded] if protein is not None else [])
    descriptions = source.references.parent / DESCRIPTIONS_FILE  # which genomes are circular: the panel's index
    for path in files + ([descriptions] if descriptions.is_file() else []):
        h.update(f"\n{path.name}\n".encode())
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def _sources(folder: Path, config: dict, min_hits: int | None = None):
    """(seed index source, protein index source or None, their digest) of the folder's config, or
    None without a "kmer_index" entry; a damaged entry or a missing file is an InputError."""
    source = index_source(folder, config, min_hits)
    if source is None:
        return None
    protein = protein_source(folder, config)
    return source, protein, source_digest(source, protein, config)


def cache_root() -> Path | None:
    """The user's index cache folder, None where GENOINTERP_CACHE is `off` (or empty)."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "none", "0") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "genointerp"


def load_indexes(folder: str | Path, config: dict, log: Callable[[str], None],
                 min_hits: int | None = None) -> tuple[KmerIndex | None, ProteinIndex | None]:
    """The folder's seed index and protein index ((None, None) without a "kmer_index" entry;
    the protein index None without a "protein_index" one), memory-mapped where prebuilt,
    else built and stored in the cache (see the module's docstring); `min_hits` replaces the
    recorded one when given. A damaged entry or file is an InputError."""
    folder = Path(folder)
    sources = _sources(folder, config, min_hits)
    if sources is None:
        return None, None
    source, protein, digest = sources
    own = folder / INDEX_DIR
    if (own / MANIFEST).is_file():
        found = _open(own, digest, source, protein)
        if not isinstance(found, str):
            return found
        log(f"{own}: not used, {found}; `genointerp index-model {folder}` rebuilds it")
    root = cache_root()
    cached = root / "indexes" / digest if root is not None else None
    if cached is not None and (cached / MANIFEST).is_file():
        found = _open(cached, digest, source, protein)
        if not isinstance(found, str):
            return found
        log(f"the cached index {cached} is unusable ({found}): building it again")
    began = time.perf_counter()
    kmer = build_from(source)
    prot = build_protein_from(protein) if protein is not None else None
    note = (f"{folder}: no prebuilt index, built it in {time.perf_counter() - began:.1f} s; "
            f"`genointerp index-model {folder}` stores one in the folder so runs start at once")
    if cached is not None:
        try:
            save(cached, digest, kmer, prot)
            note = f"{folder}: no prebuilt index, built it in {time.perf_counter() - began:.1f} s and cached it in {cached}"
        except OSError as exc:
            note += f" (the cache {root} cannot be written: {exc.strerror or exc})"
    log(note)
    return kmer, prot


def current(folder: str | Path, config: dict) -> bool | None:
    """Whether `<folder>/index/` holds the folder's indexes as they are now (None: the folder has no
    viral index to prebuild)."""
    folder = Path(folder)
    sources = _sources(folder, config)
    if sources is None:
        return None
    source, protein, digest = sources
    own = folder / INDEX_DIR
    return (own / MANIFEST).is_file() and not isinstance(_open(own, digest, source, protein), str)


def write_folder_index(folder: str | Path, config: dict) -> Path | None:
    """Build the folder's indexes from its references and store them in `<folder>/index/`
    (replacing a stale one); returns that path, None for a folder without a viral index."""
    folder = Path(folder)
    sources = _sources(folder, config)
    if sources is None:
        return None
    source, protein, digest = sources
    target = folder / INDEX_DIR
    save(target, digest, build_from(source), build_protein_from(protein) if protein is not None else None,
         replace=True)
    return target


def save(target: Path, digest: str, kmer: KmerIndex, protein: ProteinIndex | None, replace: bool = False) -> None:
    """Write the indexes' arrays and manifest into a new folder beside `target`, then rename it to
    `target`: readers see a whole index or none. Where another process got there first (a shared
    cache), its index is kept; with `replace`, an existing `target` is replaced."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    # removed however the run ends: here, or by the signal watchdog if it must end the run itself
    with on_abandon(lambda: shutil.rmtree(tmp, ignore_errors=True)):
        _write(tmp, target, digest, kmer, protein, replace)


def _keyed_by(table, ids: np.ndarray, seeds: str):
    """`table` (a SeedPlaces), refused unless its keys are `ids`: _open uses the stored ids as the
    stored table's keys."""
    if table is None or not np.array_equal(table.keys, ids):
        raise ValueError(f"every {seeds} of the index must have its places in the references")
    return table


def _write(tmp: Path, target: Path, digest: str, kmer: KmerIndex, protein: ProteinIndex | None, replace: bool) -> None:
    """save's work: the arrays and manifest into `tmp`, then `tmp` renamed to `target`."""
    try:
        places = _keyed_by(kmer.places, kmer.ids, "seed")
        arrays = {"kmer_ids": kmer.ids, "kmer_labels": kmer.labels, "kmer_filter": kmer.table,
                  "kmer_letters": places.letters, "kmer_start": places.start, "kmer_places": places.places,
                  "kmer_lookup": kmer.lookup if kmer.lookup is not None else
                  build_lookup(kmer.ids, places.places[places.start[:-1]].astype(np.int64))}
        if protein is not None:
            table = _keyed_by(protein.proteins, protein.ids, "amino-acid seed")
            arrays.update(protein_ids=protein.ids, protein_labels=protein.labels, protein_filter=protein.table,
                          protein_residues=table.residues, protein_start=table.start, protein_places=table.places)
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        manifest = {"format": FORMAT, "digest": digest, "kmer_viruses": list(kmer.viruses),
                    "protein_viruses": list(protein.viruses) if protein is not None else None,
                    "arrays": {name: [str(a.dtype), list(a.shape)] for name, a in arrays.items()}}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        os.chmod(tmp, 0o755)
        if replace and target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.rename(target, old / target.name)
            shutil.rmtree(old)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _mapped(path: Path) -> np.ndarray:
    """A stored array, memory-mapped (read-only); an empty one, which cannot be mapped, read."""
    try:  # the plain array over the map: numpy's memmap subclass adds a cost to every indexing
        return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
    except ValueError:
        array = np.load(path, allow_pickle=False)
        if array.size:
            raise
        return array


def _open(where: Path, digest: str, source: IndexSource, protein: IndexSource | None):
    """(KmerIndex, ProteinIndex | None) memory-mapped from a prebuilt folder, or a str saying why not."""
    try:
        manifest = json.loads((where / MANIFEST).read_text())
        if manifest.get("format") != FORMAT or manifest.get("digest") != digest:
            return "stale (built from other references, settings or an older genointerp)"
        arrays = {name: _mapped(where / f"{name}.npy") for name in _KMER + (_PROTEIN if protein is not None else ())}
        for name, array in arrays.items():
            dtype, shape = manifest["arrays"][name]
            if str(array.dtype) != dtype or list(array.shape) != shape:
                return f"damaged ({name}.npy is not what the manifest says)"
        if arrays["kmer_ids"].size != source.expected:
            return f"damaged (it holds {arrays['kmer_ids'].size:,} seeds, config.json says {source.expected:,})"
        kmer = KmerIndex(arrays["kmer_ids"], source.settings, arrays["kmer_labels"],
                         tuple(manifest["kmer_viruses"]), arrays["kmer_filter"], where,
                         ReferenceBases.prebuilt(arrays["kmer_letters"], arrays["kmer_ids"], arrays["kmer_start"],
                                                 arrays["kmer_places"]), arrays["kmer_lookup"])
        if protein is None:
            return kmer, None
        if arrays["protein_ids"].size != protein.expected:
            return (f"damaged (it holds {arrays['protein_ids'].size:,} amino-acid seeds, config.json says "
                    f"{protein.expected:,})")
        table = ReferenceProteins.prebuilt(arrays["protein_residues"], arrays["protein_ids"], arrays["protein_start"],
                                           arrays["protein_places"])
        return kmer, ProteinIndex(arrays["protein_ids"], protein.settings, arrays["protein_labels"],
                                  tuple(manifest["protein_viruses"]), table, arrays["protein_filter"])
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        return f"damaged ({exc})"
