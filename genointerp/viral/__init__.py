"""Viral reads (XVir): the train-xvir and classify-reads jobs, chunked runs and their merge, the read-classification task."""
