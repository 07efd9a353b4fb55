"""DiseaseCapsule: the capsule-train, capsule-predict and capsule-search jobs and what they are made of.

Jobs (a request with check()/inputs() and run(req, outputs, report), genointerp.job's contract):
train_job, predict_job, search_job. Beneath them, each module imports only those below it:
settings, splits, scaler (the fitting primitives); pair_screen (the gene-pair screen, on splits and
scaler); fit (the training loop, sparing the screened pair); predict (scoring a network); metrics,
baselines, prs (the peers scored alongside); protocol (capsule-train's cross-validation), tables
and model_dir (its outputs); search (capsule-search's GA and fitness); cohort (features x
phenotype); interpret and enrichment (the read-outs); rules (the option rules the requests share).
"""
