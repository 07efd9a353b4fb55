"""classify-reads' classifier: a model folder loaded with its threshold, calling rule, indexes and
model process; and the calls of a batch of reads, from its evidence and, where the model can change
a call, the model's scores of the reads' windows."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from genointerp.errors import InputError
from genointerp.model_folder import check_calling, read_model_config
from genointerp.runtime import job_device
from genointerp.seq.joined import encode_text
from genointerp.viral.classify.batch_work import BatchEvidence
from genointerp.viral.classify.blocks import BLOCK
from genointerp.viral.classify.calling import CallingRule, rule_of
from genointerp.viral.classify.model_process import ModelProcess
from genointerp.viral.classify.request import ClassifyRequest
from genointerp.viral.classify.windows import model_windows, window_scores
from genointerp.viral.evidence.prebuilt import load_indexes
from genointerp.viral.evidence.protein import ProteinIndex
from genointerp.viral.evidence.seeds import KmerIndex
from genointerp.viral.folded_model import folded_problem

MIN_LENGTH = 50  # shorter reads get no call: too few seeds and codons to be evidence


def default_threshold(config: dict, where: str = "model config.json") -> float:
    """The model's calibrated calling threshold (config.json "calling"), else the paper's 0.5.
    A damaged one (not a number from 0 to 1) is an InputError naming `where`."""
    threshold = check_calling(config, where)
    return 0.5 if threshold is None else threshold


@dataclass
class Classifier:
    path: str  # the model folder
    model: ModelProcess  # the XVir module, in a process of its own started when first needed
    config: dict
    threshold: float  # the model alone calls on p_viral >= this
    index: KmerIndex | None  # the folder's seed index, None without one
    protein: ProteinIndex | None  # the folder's protein index, None without one
    rule: CallingRule  # how evidence and model make one call
    evidence: str  # both, model or kmer


def log_nothing(message: str) -> None:
    pass


def load_classifier(req: ClassifyRequest, log: Callable[[str], None], warn: Callable[[str], None] = log_nothing) -> Classifier:
    """The request's model folder (or the built-in one), with its threshold, calling rule and
    evidence indexes (bits and kmer_hits are reported in every mode that has them; prebuilt
    where the folder or the cache has them, genointerp.viral.evidence.prebuilt)."""
    path = req.model_folder()
    where = f"{path}/config.json"
    config = read_model_config(path, expect="xvir")
    threshold = req.threshold if req.threshold is not None else default_threshold(config, where)
    index, protein = load_indexes(path, config, log)
    rule = rule_of(config, where)
    if req.min_bits is not None:
        rule = replace(rule, min_bits=req.min_bits)
    evidence = req.evidence or ("both" if index is not None else "model")
    if index is None and evidence != "model":
        raise InputError(f"{path}: this model has no viral index (config.json 'kmer_index'), so only --evidence model "
                         "works; train-xvir --viral REF builds one")
    if index is None and req.min_bits is not None:
        raise InputError(f"{path}: --min-bits needs a model with a viral index")
    device = model_device(req, evidence, warn)
    note = folded_note(path, config, device, req.precision)
    if note:
        log(note)
    return Classifier(path, ModelProcess(path, device, req.precision, req.threads), config, threshold, index,
                      protein, rule, evidence)


def model_device(req: ClassifyRequest, evidence: str, warn: Callable[[str], None] = log_nothing) -> str:
    """The device the model runs on. `auto` is a GPU only where the model scores every read
    (--model-all, --evidence model) or needs autocast: at the default the evidence decides all but
    a handful of reads, and a GPU costs its start for them (importing torch and opening CUDA, 3.5 s
    on an H200 machine, where a million tumour-like reads took 8.4 s on the GPU and 5.5 s on the
    CPU at 16 threads, with the same calls). Otherwise --device is resolved with --precision
    (genointerp.runtime.job_device: fp16 needs CUDA; bf16 emulated on this CPU is `warn`ed)."""
    every_read = evidence == "model" or (req.model_all and evidence == "both")
    if req.device == "auto" and not every_read and req.precision == "32":
        return "cpu"
    return job_device(req.device, req.precision, warn)


def folded_note(path: str, config: dict, device: str, precision: str) -> str | None:
    """A line for a folder whose model would run from stored folded tables but has none current
    (genointerp.viral.classify.model_process): the model's process then imports torch."""
    if device != "cpu" or precision != "32":
        return None
    problem = folded_problem(path, config)
    if problem is None:
        return None
    return (f"{path}: folded model tables {problem}, so the model (where a read needs it) loads through torch, "
            f"2-3 s more; `genointerp index-model {path}` stores them")


@dataclass
class BatchCalls:
    """classify-reads' answer for a batch of n reads, (n,) each: p_viral (NaN: not scored by the
    model), status, seed hits and evidence bits (None without an index), call, evidence label;
    and how many reads the model scored."""

    p: np.ndarray
    status: np.ndarray
    hits: np.ndarray | None
    bits: np.ndarray | None
    call: np.ndarray
    evidence: np.ndarray
    model_reads: int
    typed: dict = field(default_factory=dict)  # the typing of reads done by the batch's worker (batch_work)


class PendingCalls:
    """A batch's BatchCalls once its model scores (if any) are in, as a future: `done()` says
    whether they are, `result()` waits for them."""

    def __init__(self, finish: Callable[[np.ndarray | None], BatchCalls], scores=None) -> None:
        self.finish, self.scores = finish, scores  # scores: the model process's pending answer, or None

    def done(self) -> bool:
        return self.scores is None or self.scores.done()

    def result(self) -> BatchCalls:
        return self.finish(self.scores.result() if self.scores is not None else None)


def labels(conditions: list[np.ndarray], names: list[str], default: str) -> np.ndarray:
    """Object array (n,): the name of each read's first true condition (bool (n,) each), else
    `default`. Every read shares the names' str objects, where np.where(...).astype(object) would
    make one per read."""
    return np.select(conditions, [np.array(x, dtype=object) for x in names], np.array(default, dtype=object))


def batch_classifier(clf: Classifier, req: ClassifyRequest,
                     first_read: int = 0) -> Callable[[tuple[str, np.ndarray], BatchEvidence | None], PendingCalls]:
    """A function from a batch of n reads as genointerp.seq.joined.join gives them (the reads joined
    by N, their lengths int64 (n,)), starting on a block boundary of the input stream, and its
    evidence (None without an index; genointerp.viral.classify.batch_work), to its PendingCalls:
    the windows the model must score are handed to the model process at once. Batches come in
    input order, the first one at read `first_read` of the input (a chunk's start), so that each
    pass's key (genointerp.viral.classify.blocks.pass_keys) counts blocks from the input's start."""
    L, k = clf.config["model"]["read_length"], clf.config["model"]["k"]
    has_unknown = clf.config["model"]["vocab_size"] > 4**k
    runs_model = clf.evidence != "kmer"
    assert first_read % BLOCK == 0, "chunks start on a block boundary"
    next_read = first_read  # the input's index of the next batch's first read

    def scored(reads: tuple[str, np.ndarray], first_block: int, which: np.ndarray | None,
               then: Callable[[np.ndarray, np.ndarray], BatchCalls]) -> PendingCalls:
        """The model's p_viral and statuses of reads `which` (None: all) of a batch starting at
        block `first_block` of the input, handed to `then`."""
        windows = model_windows(*encode_text(*reads), L, k, has_unknown, which)
        if not windows.where.size:
            return PendingCalls(lambda _: then(*window_scores(windows, np.zeros(0))))
        return PendingCalls(lambda rows: then(*window_scores(windows, rows)),
                            clf.model.submit(windows.tokens, windows.keys + first_block, windows.real))

    def model_alone(reads: tuple[str, np.ndarray], first_block: int, hits, bits, typed: dict) -> PendingCalls:
        def then(p: np.ndarray, status: np.ndarray) -> BatchCalls:
            with np.errstate(invalid="ignore"):
                viral = p >= clf.threshold
            scored_ = status == "scored"
            call = labels([viral, scored_], ["viral", "not_viral"], "NA")
            return BatchCalls(p, status, hits, bits, call, labels([viral], ["model"], "none"), int(scored_.sum()), typed)

        return scored(reads, first_block, None, then)

    def classify(reads: tuple[str, np.ndarray], seeds: BatchEvidence | None) -> PendingCalls:
        nonlocal next_read
        lengths = reads[1]
        first_block = next_read // BLOCK
        next_read += lengths.size
        if seeds is None:
            return model_alone(reads, first_block, None, None, {})
        bits = seeds.bits
        if clf.evidence == "model":
            return model_alone(reads, first_block, seeds.hits, bits, seeds.typed)
        long_enough = lengths >= MIN_LENGTH
        callable_ = long_enough & (seeds.clean > 0)  # scored, before any turns model_abstained: those are called too
        status = labels([~long_enough, callable_], ["too_short", "scored"], "ambiguous")
        undecided = callable_ & clf.rule.undecided(bits)
        which = np.flatnonzero(callable_ if req.model_all else undecided) if runs_model else np.zeros(0, np.int64)

        def then(p_which: np.ndarray | None, model_status: np.ndarray | None) -> BatchCalls:
            p = np.full(lengths.size, np.nan)
            model_reads = 0
            if which.size:
                p[which] = p_which
                model_reads = int((model_status == "scored").sum())
                status[which[(model_status != "scored") & undecided[which]]] = "model_abstained"
            viral = callable_ & (clf.rule.score(bits, p) >= clf.rule.min_bits)
            call = labels([viral, callable_], ["viral", "not_viral"], "NA")
            evidence = labels([viral & (bits >= clf.rule.min_bits), viral], ["kmer", "both"], "none")
            return BatchCalls(p, status, seeds.hits, bits, call, evidence, model_reads, seeds.typed)

        if not which.size:
            return PendingCalls(lambda _: then(None, None))
        return scored(reads, first_block, which, then)

    return classify
