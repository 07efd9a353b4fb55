"""Viral reads (XVir), by stage: the evidence beside the model (evidence/), typing a read called viral
(typing/), the per-sample report (report/), the classify-reads and merge-calls jobs (classify/), the
train-xvir and index-model jobs (training/); panel.py knows the viruses and model_files.py names a
viral model folder's files and config.json keys, for all of them."""
