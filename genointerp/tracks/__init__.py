"""Genomic tracks (Genomic Interpreter): windows and targets, tiling and stitching, the train/predict/evaluate-tracks jobs, Pearson r, the track-regression task."""
