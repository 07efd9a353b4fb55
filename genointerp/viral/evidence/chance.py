"""How unlikely a read's matches to a viral index are by chance: evidence in log10 units ("bits").

A stretch of matching sequence (a cluster of overlapping matched windows) is evidence to the
degree that chance would rarely produce it: if the read tests W windows against an index of I
entries, and the stretch fixes bases (or residues) b1 .. bm, chance yields such a match about
W * I * f(b1) * ... * f(bm) times, f being each letter's frequency in the read. Its evidence is
-log10 of that, floored at 0; a read's evidence is the sum over its stretches, so independent
stretches add up and one stretch counts once, however many windows overlap it.

Frequencies come from the read itself, raised to at least a floor (1/4 for bases, 1/20 for amino
acids): a read's own skew (AT-rich sequence, a poly-G tail) makes its letters more likely, never
less, so low-complexity matches earn little.
"""

from __future__ import annotations

import numpy as np

from genointerp.seq.scan import letter_counts, stretch_letters, stretch_sums


def owner_of(positions: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """int64 (h,): the read of each of positions int (h,) of reads joined by one separator
    (lengths int64 (n,)); a separator counts to the read before it."""
    return np.searchsorted(np.cumsum(lengths + 1), positions, side="right").astype(np.int64)


def owner_of_ascending(positions: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """owner_of for positions in ascending order (a scan's matched windows): each read's first
    position found among them (n look-ups, where owner_of makes one for each position) and the
    reads repeated that many times."""
    bounds = np.searchsorted(positions, np.cumsum(lengths + 1), side="left")
    return np.repeat(np.arange(lengths.size + 1, dtype=np.int64), np.diff(bounds, prepend=0, append=positions.size))


def owned_positions(reads: np.ndarray, lengths: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions int64 (P,), their read int64 (P,)): every position of m codes of reads joined by
    one separator (a separator counting to the read before it, as in owner_of) that belong to one of
    `reads` (int (r,)), each read's own in order.
    Nearly every read of a batch has no match, so the letters counted are those of the few that do."""
    ends = np.cumsum(lengths + 1)  # one past each read's separator
    first = (ends - lengths - 1)[reads]
    size = np.minimum(ends[reads], m) - first
    owner = np.repeat(reads, size)
    return np.arange(owner.size) - np.repeat(np.cumsum(size) - size, size) + np.repeat(first, size), owner


def composition(symbols: np.ndarray, owner: np.ndarray, n: int, n_symbols: int, floor: float) -> np.ndarray:
    """float64 (n, n_symbols): each read's letter frequencies (+1 pseudocount each), at least
    `floor`, from letters `symbols` (P,) (values >= n_symbols are not letters) of reads `owner` (P,)
    (a read none of them belongs to holds 1 / n_symbols)."""
    letter = symbols < n_symbols
    counts = np.bincount(owner[letter] * n_symbols + symbols[letter], minlength=n * n_symbols).reshape(n, n_symbols)
    return frequencies(counts, floor)


def frequencies(counts: np.ndarray, floor: float) -> np.ndarray:
    """float64 (n, s): `composition`'s frequencies of letter counts int64 (n, s)."""
    freq = (counts + 1) / (counts.sum(1, keepdims=True) + counts.shape[1])
    return np.maximum(freq, floor)


def read_composition(codes: np.ndarray, lengths: np.ndarray, reads: np.ndarray, n_symbols: int,
                     floor: float) -> np.ndarray:
    """composition(codes[pos], owner, n, n_symbols, floor) with (pos, owner) =
    owned_positions(sorted_unique(reads), lengths, codes.size), `reads` ascending (repeats allowed),
    counted in one compiled pass (genointerp.seq.scan.letter_counts): the same numbers."""
    return frequencies(letter_counts(codes, lengths, reads, n_symbols), floor)


def stretches(read: np.ndarray, at: np.ndarray, gap: int, frame: np.ndarray | None = None) -> np.ndarray:
    """bool (h,): where a stretch opens among matched windows starting at `at` (h,) of reads `read`
    (h,), sorted by read (and frame) then start: at a new read, a new frame, or `gap` or more after
    the window before."""
    if at.size == 0:
        return np.zeros(0, bool)
    new = (read[1:] != read[:-1]) | (at[1:] - at[:-1] >= gap)
    if frame is not None:
        new |= frame[1:] != frame[:-1]
    return np.r_[True, new]


def fixed_letters(at: np.ndarray, read: np.ndarray, opens: np.ndarray, offsets: np.ndarray,
                  pattern: np.ndarray | None = None):
    """The positions the matched windows fix, each once: (positions (P,), the stretch of each (P,,
    numbered from 0 in `opens`' order), the read of each (P,)), stretch by stretch, each stretch's
    ascending (genointerp.seq.scan.stretch_letters). Window i (at (h,), of read read[i]) fixes
    at[i] + offsets[pattern[i]] (offsets (R, w), or (w,) for every window; pattern (h,) or None).

    A stretch's windows come in ascending order of at, and each position is fixed by one stretch
    alone: a stretch opens at a new read, or a window's width or more after the window before
    (stretches), and a window's offsets lie within its width. So these are np.unique's positions
    over all windows, each stretch's in the same order, and a stretch's sum over its letters
    (chance_bits) adds the same numbers in the same order."""
    marks, stretch = stretch_letters(at, opens, offsets, pattern)
    return marks, stretch, read[opens][stretch]


def chance_bits(log_freq: np.ndarray, mark_cluster: np.ndarray, cluster_read: np.ndarray, tested: np.ndarray,
                index_size: int, n: int, draws: np.ndarray | None = None) -> np.ndarray:
    """float64 (n,): per read, the sum over its clusters of -log10(chance count), each at least 0.

    log_freq (P,): log10 frequency of each letter a match fixes (each letter once); mark_cluster
    (P,): its cluster; cluster_read (C,): each cluster's read; tested (n,): windows each read
    tested; index_size: entries of the index; draws (C,): how many entries of the index each
    cluster's windows match apart (1, the default, where they are one entry's windows: one
    match). Windows that match unrelated entries are as many chance draws from the index, and
    each costs its size: W * I**d * f(b1) ... f(bm).
    """
    if cluster_read.size == 0:
        return np.zeros(n)
    log_p = np.bincount(mark_cluster, weights=log_freq, minlength=cluster_read.size)
    return stretch_bits(log_p, cluster_read, tested, index_size, n, draws)


def stretch_bits(log_p: np.ndarray, cluster_read: np.ndarray, tested: np.ndarray, index_size: int, n: int,
                 draws: np.ndarray | None = None) -> np.ndarray:
    """chance_bits from each cluster's summed log10 frequencies log_p float64 (C,) (its bincount
    over the letters, or genointerp.seq.scan.stretch_sums', which adds them in the same order)."""
    if cluster_read.size == 0:
        return np.zeros(n)
    entries = np.log10(max(index_size, 1)) * (1 if draws is None else draws)
    surprise = -(np.log10(np.maximum(tested[cluster_read], 1)) + entries + log_p)
    return np.bincount(cluster_read, weights=np.maximum(surprise, 0.0), minlength=n)
