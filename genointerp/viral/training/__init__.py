"""The train-xvir job (job.py): token datasets, fresh reads simulated every epoch."""
