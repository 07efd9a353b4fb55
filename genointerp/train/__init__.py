"""Training, shared by every method: the loop (fit: early stopping, LR schedule, checkpoint/resume, DDP),
the driver that runs a training job around it, and classification metrics."""
