"""Fixed scoring blocks: why a read's p_viral has the same bits in every run on one machine.

A CPU's matrix kernels may sum a row's products in an order that depends on how many rows share
the call and where the row sits among them (seen on AVX-512 AMD, on Intel with AMX, and under the
avx2/default ATen kernels, each differently), so a window's logit can move in its 7th digit with
the windows it is scored beside. Scatter/gather (`--chunk`), pipes and thread counts must not
change which windows those are. So the batches are fixed by the reads' positions in the input,
not by how a run happens to read them:

- Reads are grouped into blocks of BLOCK by their index in the input stream (reads 0-15, 16-31,
  ...). Chunk boundaries fall on block boundaries (genointerp.viral.classify.scatter.chunk_range), and
  every batch a run reads starts on one, so a block is the same reads in every run.
- A block's model windows, in read order, are padded to a whole number of forward passes of
  PASS rows, and no pass holds windows of two blocks. A window is therefore scored in the same
  pass, at the same row, beside the same windows, whether the run is whole, chunked, piped or on
  another thread count.

A block whose windows are not a multiple of PASS is padded up to the next one, and the pass's
real windows are counted (pass_rows): the folded CPU model scores only those, as a forward pass
of that many rows (genointerp.models.xvir_folded), which is as fixed as the block itself. That
matters at the default, where the model scores only the reads its vote can change: on human
reads no index saw about one read in 2,500, nearly always alone in its block, and padding each
to a whole pass made the model score 16 windows for one. The GPU and the torch module still
score whole passes (a padded row costs them little).
"""

from __future__ import annotations

import numpy as np

BLOCK = 16  # reads per scoring block: chunks, and every batch a run reads, start on a multiple
PASS = 16  # windows per forward pass; the folded CPU model's micro-batch (genointerp.models.xvir_folded.MICRO)


def block_rows(window_read: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lay windows out in passes that never mix blocks.

    window_read: int (W,), the read (0-based within a batch that starts on a block boundary) of
    each window, non-decreasing. Returns (rows, where): rows int (R,), R a multiple of PASS, the
    window each pass row scores (padding rows repeat their block's first window); where int (W,),
    the row holding each window, so that scores[where] are the windows' scores in input order.
    """
    if window_read.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    block = window_read // BLOCK
    counts = np.bincount(block)  # windows per block, (n_blocks,)
    padded = counts + (-counts % PASS)
    first_window = np.cumsum(counts) - counts
    first_row = np.cumsum(padded) - padded
    where = first_row[block] + np.arange(window_read.size) - first_window[block]
    rows = np.repeat(first_window, padded)  # every row starts as its block's first window...
    rows[where] = np.arange(window_read.size)  # ...and the real windows take their places
    return rows, where


def _passes(window_read: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pass of block_rows' rows for the same window_read, int64 (R / PASS,) each: its block
    (within the batch), its rank among that block's passes, and the block's windows."""
    counts = np.bincount(window_read // BLOCK) if window_read.size else np.zeros(0, np.int64)
    passes = -(-counts // PASS)  # (n_blocks,)
    nth = np.arange(passes.sum()) - np.repeat(np.cumsum(passes) - passes, passes)
    return np.repeat(np.arange(counts.size), passes), nth, np.repeat(counts, passes)


def pass_keys(window_read: np.ndarray) -> np.ndarray:
    """Each pass's key, int64 (R / PASS,) for block_rows' rows of the same window_read: its block's
    index (within the batch) plus its rank among that block's passes. A pass's key, offset by the
    batch's first block in the input, is the same in every run (genointerp.viral.classify.model_process
    puts a pass in a fixed place of a GPU call by it)."""
    block, nth, _ = _passes(window_read)
    return block + nth


def pass_rows(window_read: np.ndarray) -> np.ndarray:
    """int64 (R / PASS,): the real windows (not padding) of each pass of block_rows' rows for the
    same window_read: PASS but in a block's last pass."""
    _, nth, windows = _passes(window_read)
    return np.minimum(windows - nth * PASS, PASS)
