"""Fresh simulated reads for train-xvir: references in, new labelled reads for every epoch.

A dataset of reads simulated once is seen again every epoch, and XVir memorises it within two or
three epochs. Drawing new reads from the references for each epoch (simulate-reads' engine,
genointerp.seq.simulate: HiSeq 2500-like errors) means the model never sees a read twice. Every
draw is seeded by (seed, what it is for, epoch), so a resumed run, another DDP rank or a rerun
draws the same reads; validation, test and calibration reads come from draws of their own.

Reads holding an N are dropped (as kmerize's default --n-policy drop), so a model trained here
has the same 4^k vocabulary as one trained on a default kmerize dataset, and can fine-tune it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from genointerp.errors import InputError
from genointerp.reads.kmerize import TOKEN_CONVENTION
from genointerp.reads.simulate import load_sources
from genointerp.report import SILENT, Reporter
from genointerp.seq.error_profile import builtin_profile
from genointerp.seq.kmers import pad_token, tokenize, unknown_token
from genointerp.seq.simulate import ErrorModel, Layout, allocate, simulate
from genointerp.viral.training.task import ReadClassificationTask

POSITIVE = "viral"
_PURPOSE = {"train": 1, "valid": 2, "test": 3, "calibration": 4}


@dataclass
class FreshReads:
    viral: list[str]  # viral reference paths
    negatives: list[tuple[str, str]]  # (label, reference path); a label may repeat
    circular: bool = False  # the viral references are circular genomes
    reads_per_epoch: int = 200_000
    mix: dict[str, float] = field(default_factory=dict)  # label -> weight ("viral" too); default: half viral, the rest even
    viral_sub_rate: float = 0.0  # half the viral reads come from copies mutated anew for each draw at this rate
    k: int = 6
    length: int = 150

    def weights(self) -> dict[str, float]:
        """Label -> share of the reads (sums to 1), viral first, then negatives in the order given."""
        labels = [POSITIVE] + list(dict.fromkeys(label for label, _ in self.negatives))
        for label in self.mix:
            if label not in labels:
                raise InputError(f"--mix names label {label!r}, which no reference has (labels: {', '.join(labels)})")
        if self.mix:
            missing = [label for label in labels if label not in self.mix]
            if missing:
                raise InputError(f"--mix gives weights for some labels but not for {', '.join(missing)}")
            raw = {label: self.mix[label] for label in labels}
        else:
            raw = {POSITIVE: 0.5, **{label: 0.5 / (len(labels) - 1) for label in labels[1:]}}
        if any(w < 0 for w in raw.values()) or raw[POSITIVE] <= 0 or sum(raw.values()) - raw[POSITIVE] <= 0:
            raise InputError("--mix: weights must be >= 0, with some viral and some negative reads")
        total = sum(raw.values())
        return {label: w / total for label, w in raw.items()}


class ReadSimulator:
    """Labelled reads drawn from the references, as token rows for XVir."""

    def __init__(self, spec: FreshReads, seed: int, report: Reporter) -> None:
        if POSITIVE in {label for label, _ in spec.negatives}:
            raise InputError(f"--negative: {POSITIVE!r} is the viral label; name negatives otherwise (e.g. human=REF)")
        self.spec, self.seed, self.report = spec, seed, report
        self.shares = spec.weights()
        self.layout = Layout(read_length=spec.length)
        self.errors = ErrorModel(tuple(builtin_profile(mate).sampler(spec.length) for mate in (1, 2)))
        self._viral = [(POSITIVE, p) for p in spec.viral]
        self._circular = {POSITIVE} if spec.circular else set()
        self.sources = load_sources(self._viral + list(spec.negatives), self.layout, self._circular, seed, report.log)

    def labels(self) -> list[str]:
        return list(self.shares)

    def _viral_mutated(self, key: list[int]):
        """The viral source with new substitutions at viral_sub_rate (seeded by key)."""
        seed = int(np.random.default_rng(key).integers(2**31))
        return load_sources(self._viral, self.layout, self._circular, seed, SILENT.log, self.spec.viral_sub_rate)[POSITIVE]

    def draw(self, n: int, purpose: str, epoch: int = 0,
             shares: dict[str, float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """About n reads (fewer by those holding an N): codes uint8 (m, length), tokens uint16
        (m, length - k + 1) and label index int64 (m,) into labels(), in a seeded random order."""
        key = [self.seed, _PURPOSE[purpose], epoch]
        rng = np.random.default_rng(key)
        counts = allocate(n, shares or self.shares)
        codes, label_of = [], []
        for i, label in enumerate(self.labels()):
            parts = [(self.sources[label], counts[label])]
            if label == POSITIVE and self.spec.viral_sub_rate > 0:
                half = counts[label] // 2
                parts = [(self.sources[label], counts[label] - half), (self._viral_mutated(key), half)]
            for source, m in parts:
                if m:
                    codes.append(simulate(source, m, self.layout, self.errors, rng).mates[0].codes)
                    label_of.append(np.full(m, i, np.int64))
        if not codes:
            raise InputError(f"no reads to draw for {purpose}: the read count is 0")
        codes, label_of = np.concatenate(codes), np.concatenate(label_of)
        order = rng.permutation(len(label_of))
        codes, label_of = codes[order], label_of[order]
        clean = (codes < 4).all(axis=1)
        codes, label_of = codes[clean], label_of[clean]
        return codes, tokenize(codes, self.spec.k), label_of

    def header(self) -> dict:
        """What a kmerize dataset header says about tokens, for the model config."""
        k = self.spec.k
        return {"k": k, "length": self.spec.length, "n_tokens": self.spec.length - k + 1, "token_convention": TOKEN_CONVENTION,
                "vocab_size": 4**k, "special_tokens": {"unknown": unknown_token(k), "pad": pad_token(k)},
                "labels": self.labels()}



class FreshReadTask(ReadClassificationTask):
    """A ReadClassificationTask whose training reads are drawn anew at the start of every epoch."""

    def __init__(self, sim: ReadSimulator, n: int, valid: tuple[np.ndarray, np.ndarray], rc_table: np.ndarray,
                 rc_augment: bool, device: str, precision: str) -> None:
        empty = (np.zeros((0, sim.spec.length - sim.spec.k + 1), np.uint16), np.zeros(0, np.float32))
        super().__init__(empty, valid, rc_table, rc_augment, device, precision)
        self.sim, self.n = sim, n

    def begin_epoch(self, epoch: int) -> None:
        _, self.tokens, label = self.sim.draw(self.n, "train", epoch)
        self.y = (label == 0).astype(np.float32)
