"""The classify-reads job (job.py) and its parts: the calling rule, the batches' evidence in worker
processes, the model in a process of its own, fixed scoring blocks; --chunk's scatter and the
merge-calls job that gathers the chunks."""
