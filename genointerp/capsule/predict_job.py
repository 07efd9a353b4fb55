"""The capsule-predict job: a capsule-train model directory + Gene-PCs in, per-sample class
probabilities and calls out (a TSV, or stdout for `-`).

    from genointerp.job import execute
    from genointerp.capsule.predict_job import CapsulePredictRequest, run
    execute(run, CapsulePredictRequest(model_dir="model", features="new_gene_pcs", output="calls.tsv"))
"""

from __future__ import annotations

from dataclasses import dataclass

from genointerp.capsule.predict import burden_features, capsule_lengths, check_transform, class_probabilities, model_fields, \
    model_matrix, predictions_table
from genointerp.capsule.scaler import Scaler
from genointerp.io.atomic import STDOUT, AtomicOutputs
from genointerp.io.features import read_features
from genointerp import options
from genointerp.options import arg, opt
from genointerp.model_folder import load_model_dir
from genointerp.report import Reporter
from genointerp.runtime import Precision, device_for, use_threads


@dataclass
class CapsulePredictRequest:
    """capsule-predict: the fields are its options."""

    model_dir: str = arg(metavar="MODEL_DIR", help='Model directory from capsule-train.')
    features: str = arg(
        metavar="FEATURES",
        help=("gene-pca output folder or TSV with the model's feature columns (extra columns are ignored); for a "
              "new cohort, gene-pca --apply the training cohort's folder."))
    output: str = opt(
        STDOUT, "-o", "--output",
        help='TSV: sample, p_<class> (capsule lengths normalised to sum 1), call; - is stdout.')
    device: str = options.device()
    threads: int = options.threads()

    def check(self) -> None:
        pass

    def inputs(self) -> list[str | None]:
        return [self.model_dir, self.features]


def run(req: CapsulePredictRequest, outputs: AtomicOutputs, report: Reporter) -> dict:
    """Write the predictions table; return the summary (samples scored)."""
    # the table is written as is whatever the name (a .gz name is not compressed), as it always was
    with outputs.streams(req.output, plain=[req.output]) as streams:
        use_threads(req.threads)
        dev = device_for(req.device, Precision.fp32, report.warn)
        model, config = load_model_dir(req.model_dir, expect="capsule")
        columns, scaler, classes = model_fields(config, req.model_dir, model.config)
        features = read_features(req.features)
        check_transform(config, features, req.features)
        features = burden_features(config, features, req.features)
        x = model_matrix(features, columns, req.features, report.warn)
        lengths = capsule_lengths(model.to(dev), Scaler.from_dict(scaler)(x), dev)
        streams[req.output].write(predictions_table(features.samples, class_probabilities(lengths), classes).encode())
    return {"samples": len(features.samples)}
