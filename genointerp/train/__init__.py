"""Training: data from kmerize datasets, metrics, the loop (device, AMP, DDP, checkpoint/resume)."""
