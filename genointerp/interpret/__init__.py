"""Interpretation read-outs: attention capture, summaries (distance, rollout), figures, the attn-maps job.

capture    AttentionCapture: a context manager that records every attention module's weights during
           a forward pass, reshaped per layer to (B, heads, windows, query, key) with token coordinates
summaries  mean attention distance, attention rollout mapped back to input positions, a streaming mean
plots      matplotlib (Agg) figures: layers side by side, heads, windows, zoom-in, k-mer maps
attn_maps  the `genointerp attn-maps` job (reads for XVir, reference regions for track models)

Only capture and the job import torch; summaries and plots are numpy/matplotlib.
"""
