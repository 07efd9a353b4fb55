"""Viral reads (XVir), by stage: the evidence beside the model (evidence/), typing a read called viral
(typing/), the per-sample report (report/), the classify-reads and merge-calls jobs (classify/), the
train-xvir job (training/); panel.py names viral references and model_files.py a viral model folder's
files and config.json keys, for all of them."""
