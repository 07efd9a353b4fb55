"""Sample x feature matrices (Gene-PCA output, capsule input) and phenotype tables.

A feature folder (written by `gene-pca`, read by `capsule-train`/`capsule-predict`) holds:

- `features.npy`  float32 (n_samples, n_features), C order, memory-mappable;
- `features.json` {"samples": [...], "columns": [...], ...provenance}; columns are `chrom:gene:pcN`;
- `features.tsv`  the same matrix for people and pipelines: a `sample` column, then one column per
  feature, values written with 7 significant digits (optional: gene-pca --no-tsv).

`read_features` also takes a plain TSV (first column = sample ids, header = column names), so
matrices made elsewhere can be fed to the capsule network. Every feature value must be a finite
number: the missing-value spellings of phenotype tables (MISSING, below; `-9` is a number here)
and NaN/inf are refused naming the sample and column, since the capsule network cannot take a
missing value (gene-pca imputes before it writes).

A phenotype table is a TSV with a header: a sample column (`sample`, `IID` or the first column) and
one or more phenotype columns. Missing values (MISSING: `NA`, `nan`, `.`, empty, `-9`) drop that
sample, with a count. Text inputs are read through `io.inputs` (gzip, `-`, pipes; one error line for
a binary file).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genointerp.errors import InputError
from genointerp.io.inputs import STDIN, first_duplicate, open_text, read_lines
from genointerp.io.jsonfile import is_name_list, read_json_object

MATRIX, INDEX, TABLE = "features.npy", "features.json", "features.tsv"
MISSING = {"", "NA", "na", "NaN", "nan", "-9", "."}
SAMPLE_COLUMNS = ("sample", "IID", "sample_id")


@dataclass
class Features:
    """matrix: float32 (n_samples, n_features); samples/columns label its rows/columns."""

    samples: list[str]
    columns: list[str]
    matrix: np.ndarray
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.matrix.shape != (len(self.samples), len(self.columns)):
            raise InputError(f"feature matrix is {self.matrix.shape}, but names {len(self.samples)} samples "
                             f"and {len(self.columns)} columns")

    def subset(self, samples: list[str]) -> "Features":
        """Rows for `samples`, in that order (all must be present)."""
        where = {s: i for i, s in enumerate(self.samples)}
        missing = [s for s in samples if s not in where]
        if missing:
            raise InputError(f"{len(missing)} sample(s) not in the feature matrix, e.g. {missing[0]!r}")
        rows = np.fromiter((where[s] for s in samples), dtype=np.int64, count=len(samples))
        return Features(list(samples), self.columns, np.ascontiguousarray(self.matrix[rows]), self.info)


def write_features(folder: Path, features: Features, table: bool = True) -> None:
    """Write the files into `folder` (normally an AtomicOutputs temporary); features.tsv only with
    `table` (at 10,000 samples x 100,000 Gene-PCs it is 10 GB and most of the run time)."""
    folder = Path(folder)
    np.save(folder / MATRIX, np.ascontiguousarray(features.matrix, dtype=np.float32))
    index = {"samples": features.samples, "columns": features.columns, **features.info}
    (folder / INDEX).write_text(json.dumps(index, indent=1) + "\n")
    if not table:
        return
    # one %-format per row is ~1.8x faster than formatting value by value, with the same bytes
    row_format = "%s\t" + "\t".join(["%.7g"] * len(features.columns)) + "\n"
    with open(folder / TABLE, "w") as fh:
        fh.write("\t".join(["sample", *features.columns]) + "\n")
        for name, row in zip(features.samples, features.matrix):
            fh.write(row_format % (name, *row.tolist()))


def read_features(path: str | Path) -> Features:
    """A feature folder (features.npy + features.json) or a TSV with a sample column first (a file,
    gzip or not, or `-`). Every value must be a finite number: a NaN, an empty cell or `NA` is
    refused naming the sample and column (the capsule network has no missing-value handling;
    gene-pca imputes before it writes)."""
    if str(path) != STDIN and Path(path).is_dir():
        features = _read_folder(Path(path))
        where = f"{path}/{MATRIX}"
    else:
        if str(path) != STDIN and not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder")
        features = _read_tsv(str(path))
        where = str(path)
    _check_names(features, path)
    _check_finite(features, where)
    return features


def _read_folder(path: Path) -> Features:
    if not (path / INDEX).exists() or not (path / MATRIX).exists():
        raise InputError(f"{path}: not a feature folder (needs {MATRIX} and {INDEX}; made by gene-pca)")
    index = read_json_object(path / INDEX, f"{path}/{INDEX}: no such file", "a feature index (a JSON object)")
    try:
        matrix = np.load(path / MATRIX, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{path}: damaged feature folder ({exc})") from None
    samples, columns = index.pop("samples", None), index.pop("columns", None)
    if not is_name_list(samples) or not is_name_list(columns):
        raise InputError(f"{path}/{INDEX}: no 'samples'/'columns' lists of names")
    if matrix.dtype != np.float32 or matrix.ndim != 2:
        raise InputError(f"{path}/{MATRIX}: expected a 2-D float32 array, found {matrix.ndim}-D {matrix.dtype}")
    if matrix.shape != (len(samples), len(columns)):
        raise InputError(f"{path}: {MATRIX} is {matrix.shape[0]} x {matrix.shape[1]}, but {INDEX} names "
                         f"{len(samples)} samples and {len(columns)} columns")
    return Features(samples, columns, matrix, index)


def _read_tsv(path: str) -> Features:
    with open_text(path) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if len(header) < 2:
            raise InputError(f"{path}: line 1: expected a header with a sample column and feature columns")
        samples, rows = [], []
        for lineno, line in enumerate(fh, start=2):
            if "\x00" in line:
                raise InputError(f"{path}: not a text file (it holds NUL bytes)")
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(header):
                raise InputError(f"{path}: line {lineno}: {len(parts)} fields, header has {len(header)}")
            try:
                rows.append([float(v) for v in parts[1:]])
            except ValueError:
                j, value = next((j, v) for j, v in enumerate(parts[1:], start=1) if not _is_number(v))
                what = "a missing value" if value.strip() in MISSING else "not a number"
                raise InputError(f"{path}: line {lineno}: sample {parts[0]!r}, column {header[j]!r}: {value[:20]!r} is "
                                 f"{what} (feature values must be finite numbers)") from None
            samples.append(parts[0])
    if not samples:
        raise InputError(f"{path}: no samples")
    return Features(samples, header[1:], np.asarray(rows, dtype=np.float32), {"source": str(path)})


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _check_names(features: Features, path) -> None:
    if not features.samples:
        raise InputError(f"{path}: no samples")
    if not features.columns:
        raise InputError(f"{path}: no feature columns")
    _check_unique(features.samples, path)
    if (dup := first_duplicate(features.columns)) is not None:
        raise InputError(f"{path}: feature column {dup!r} appears more than once")


def _check_finite(features: Features, where: str) -> None:
    """Refuse NaN/inf naming the first such cell. Rows are summed in float64 (a finite float32
    row cannot overflow it), so no matrix-sized temporary is made."""
    bad_rows = np.flatnonzero(~np.isfinite(features.matrix.sum(axis=1, dtype=np.float64)))
    if not len(bad_rows):
        return
    i = int(bad_rows[0])
    j = int(np.flatnonzero(~np.isfinite(features.matrix[i]))[0])
    value = float(features.matrix[i, j])
    what = "NaN (a missing value)" if np.isnan(value) else f"{value} (infinite)"
    raise InputError(f"{where}: sample {features.samples[i]!r}, column {features.columns[j]!r}: {what}; "
                     f"feature values must be finite numbers ({len(bad_rows)} sample(s) affected)")


@dataclass
class Phenotypes:
    """labels: int64 (n,) indices into `classes` (sorted class names), for `samples`."""

    samples: list[str]
    labels: np.ndarray
    classes: list[str]
    column: str
    dropped: int = 0


def read_phenotypes(path: str | Path, column: str | None = None) -> Phenotypes:
    """Samples with a non-missing value in `column` (default: the first non-sample column)."""
    lines = [line for line in read_lines(path) if line.strip() and not line.startswith("##")]
    if len(lines) < 2:
        raise InputError(f"{path}: expected a header line and at least one sample")
    header = lines[0].lstrip("#").split("\t")
    id_col = next((header.index(c) for c in SAMPLE_COLUMNS if c in header), 0)
    others = [c for i, c in enumerate(header) if i != id_col and c not in ("FID", "PAT", "MAT", "SEX")]
    if column is None:
        if not others:
            raise InputError(f"{path}: no phenotype column besides the sample column")
        column = others[0]
    if column not in header:
        raise InputError(f"{path}: no column {column!r} (columns: {', '.join(header)})")
    col = header.index(column)
    samples, values, dropped = [], [], 0
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != len(header):
            raise InputError(f"{path}: line {lineno}: {len(parts)} fields, header has {len(header)}")
        if parts[col].strip() in MISSING:
            dropped += 1
            continue
        samples.append(parts[id_col])
        values.append(parts[col].strip())
    if not samples:
        raise InputError(f"{path}: every value of {column!r} is missing")
    _check_unique(samples, path)
    classes = sorted(set(values), key=_class_order)
    if len(classes) < 2:
        raise InputError(f"{path}: {column!r} has a single class ({classes[0]!r}); need cases and controls")
    lookup = {c: i for i, c in enumerate(classes)}
    labels = np.array([lookup[v] for v in values], dtype=np.int64)
    return Phenotypes(samples, labels, classes, column, dropped)


def _class_order(value: str):
    """Numeric classes in numeric order (PLINK: 1 control, 2 case), then names alphabetically."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _check_unique(samples: list[str], path: Path) -> None:
    if (dup := first_duplicate(samples)) is not None:
        raise InputError(f"{path}: sample {dup!r} appears more than once")
