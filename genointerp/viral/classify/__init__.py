"""The classify-reads job and its parts, and the merge-calls job that gathers its chunks.

job.py runs classify-reads (its docstring tells the method) on request.py's options: classifier.py
loads the model folder and calls a batch of reads from their evidence (batch_work.py, in worker
processes) and the calling rule (calling.py), the model scoring their windows (windows.py, in the
fixed passes of blocks.py) in a process of its own (model_process.py); scatter.py cuts the read
stream into --chunk's chunks and joins their outputs for merge_calls.py; sample_tally.py tallies
the typed viral reads into the sample's typing, what the per-sample report is built from."""
