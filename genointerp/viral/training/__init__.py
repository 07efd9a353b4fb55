"""The train-xvir job (job.py): token datasets, fresh reads simulated every epoch; and the
index-model job (index_model.py), which stores an existing model folder's indexes prebuilt, as
train-xvir does for every folder it makes."""
