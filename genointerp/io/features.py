"""Sample x feature matrices (Gene-PCA output, capsule input) and phenotype tables.

A feature folder (written by `gene-pca`, read by `capsule-train`/`capsule-predict`) holds:

- `features.npy`  float32 (n_samples, n_features), C order, memory-mappable;
- `features.json` {"samples": [...], "columns": [...], ...provenance}; columns are `chrom:gene:pcN`;
- `features.tsv`  the same matrix for people and pipelines: a `sample` column, then one column per
  feature, values written with 7 significant digits (optional: gene-pca --no-tsv).

With `gene-pca --keep-dosages` it also holds the SNP dosages behind the Gene-PCs (for the PRS
baseline of capsule-train):

- `dosages.npy`  int8 (n_samples, n_snps), rows in features.json's sample order: copies of each
  SNP's counted allele, 0/1/2, MISSING (-1) for no call (not imputed);
- `snps.tsv`     one line per column: snp (`chrom:pos:ref:alt`), chrom, pos, ref, counted (the
  ALT column: every ALT counts at a multi-allelic site), genes (comma-separated, as in genes.tsv).

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
from genointerp.io.vcf import MISSING as MISSING_CALL

MATRIX, INDEX, TABLE = "features.npy", "features.json", "features.tsv"
DOSAGES, SNPS = "dosages.npy", "snps.tsv"
SNP_COLUMNS = ("snp", "chrom", "pos", "ref", "counted", "genes")
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

    def rows(self, samples: list[str]) -> np.ndarray:
        """int64 (len(samples),): the matrix row of each of `samples` (all must be present)."""
        where = {s: i for i, s in enumerate(self.samples)}
        missing = [s for s in samples if s not in where]
        if missing:
            raise InputError(f"{len(missing)} sample(s) not in the feature matrix, e.g. {missing[0]!r}")
        return np.fromiter((where[s] for s in samples), dtype=np.int64, count=len(samples))

    def subset(self, samples: list[str]) -> "Features":
        """Rows for `samples`, in that order (all must be present)."""
        rows = self.rows(samples)
        return Features(list(samples), self.columns, np.ascontiguousarray(self.matrix[rows]), self.info)


@dataclass
class Dosages:
    """matrix: int8 (n_samples, n_snps) copies of each SNP's counted allele, MISSING_CALL (-1) for no
    call; snps (ids), chrom and pos int64 (n_snps,) label its columns."""

    matrix: np.ndarray
    snps: list[str]
    chrom: list[str]
    pos: np.ndarray

    def take(self, rows: np.ndarray) -> "Dosages":
        """The dosages of rows int64 (k,), in that order."""
        return Dosages(np.ascontiguousarray(self.matrix[rows]), self.snps, self.chrom, self.pos)


class DosageWriter:
    """Writes dosages.npy and snps.tsv into a feature folder (normally an AtomicOutputs temporary),
    filled one SNP's int8 (n_samples,) dosages at a time.

    The SNPs go to a SNP-major scratch file in the folder as the VCF streams past, so memory stays at
    one SNP whatever the cohort (10,000 samples x 1,000,000 SNPs is 10 GB); `finish` transposes it
    block by block into the sample-major dosages.npy (rows = samples, as in features.npy) and deletes
    it; a run that fails before leaves it in the temporary folder that AtomicOutputs removes. `append`
    adds the next scratch row; with `n_rows` the scratch is laid out up front, every call MISSING, and
    `put` fills any row.
    """

    SCRATCH = ".dosages.scratch"

    def __init__(self, folder: Path, n_samples: int, n_rows: int = 0) -> None:
        self.folder, self.n = Path(folder), n_samples
        self.path = self.folder / self.SCRATCH
        self.fh = open(self.path, "w+b")
        self.rows = n_rows
        missing = np.full(n_samples, MISSING_CALL, dtype=np.int8).tobytes()
        for _ in range(n_rows):
            self.fh.write(missing)

    def append(self, dosage: np.ndarray) -> int:
        """Store int8 (n,) dosages as the next scratch row; returns its number."""
        self.put(self.rows, dosage)
        self.rows += 1
        return self.rows - 1

    def put(self, row: int, dosage: np.ndarray) -> None:
        """Store int8 (n,) dosages as scratch row `row`."""
        self.fh.seek(row * self.n)
        self.fh.write(np.ascontiguousarray(dosage, dtype=np.int8).tobytes())

    def finish(self, order: np.ndarray, table: list[tuple[str, int, str, str, str]]) -> None:
        """Write dosages.npy int8 (n_samples, S) whose column j is scratch row order[j] (int64 (S,)),
        and snps.tsv from `table`: (chrom, pos, ref, counted, genes) per column."""
        self.fh.flush()
        out = np.lib.format.open_memmap(self.folder / DOSAGES, mode="w+", dtype=np.int8, shape=(self.n, len(order)))
        if len(order):
            scratch = np.memmap(self.path, dtype=np.int8, mode="r", shape=(self.rows, self.n))
            step = max(1, (1 << 24) // max(self.n, 1))  # 16 MB of SNPs per block
            for a in range(0, len(order), step):
                out[:, a:a + step] = scratch[order[a:a + step]].T
            del scratch
        out.flush()
        del out
        self.fh.close()
        self.path.unlink()
        with open(self.folder / SNPS, "w") as fh:
            fh.write("\t".join(SNP_COLUMNS) + "\n")
            fh.writelines(f"{c}:{p}:{r}:{a}\t{c}\t{p}\t{r}\t{a}\t{g}\n" for c, p, r, a, g in table)


def read_dosages(path: str | Path, n_samples: int) -> Dosages | None:
    """The SNP dosages of a feature folder (gene-pca --keep-dosages) with `n_samples` samples, or
    None when `path` is not a folder or has neither file. One file without the other, a matrix that
    is not int8 (n_samples, rows of snps.tsv) or holds a value outside -1..2 is an InputError."""
    folder = Path(path)
    if str(path) == STDIN or not folder.is_dir():
        return None
    have = [(folder / name).exists() for name in (DOSAGES, SNPS)]
    if not any(have):
        return None
    if not all(have):
        raise InputError(f"{folder}: {DOSAGES if have[0] else SNPS} without {SNPS if have[0] else DOSAGES} "
                         "(gene-pca --keep-dosages writes both)")
    snps, chrom, pos = _read_snps(folder / SNPS)
    try:
        matrix = np.load(folder / DOSAGES, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{folder}/{DOSAGES}: damaged ({exc})") from None
    if matrix.dtype != np.int8 or matrix.shape != (n_samples, len(snps)):
        raise InputError(f"{folder}/{DOSAGES}: expected int8 {n_samples} samples x {len(snps)} SNPs ({SNPS}), "
                         f"found {matrix.dtype} {' x '.join(map(str, matrix.shape))}")
    if matrix.size and (matrix.min() < MISSING_CALL or matrix.max() > 2):
        raise InputError(f"{folder}/{DOSAGES}: dosages must be 0, 1, 2 or {MISSING_CALL} (missing)")
    return Dosages(matrix, snps, chrom, pos)


def _read_snps(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """(snp ids, chrom, pos int64) of a snps.tsv."""
    lines = read_lines(path)
    if not lines or tuple(lines[0].split("\t")) != SNP_COLUMNS:
        raise InputError(f"{path}: line 1: expected the header {' '.join(SNP_COLUMNS)} (tab-separated)")
    snps, chrom, pos = [], [], []
    for lineno, line in enumerate(lines[1:], start=2):
        f = line.split("\t")
        if len(f) != len(SNP_COLUMNS) or not f[2].isdigit():
            raise InputError(f"{path}: line {lineno}: expected {len(SNP_COLUMNS)} fields with a position in the third")
        snps.append(f[0])
        chrom.append(f[1])
        pos.append(int(f[2]))
    return snps, chrom, np.array(pos, dtype=np.int64)


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
