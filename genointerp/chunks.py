"""--chunk I/N, shared by the jobs that scatter over cluster tasks (classify-reads, score-variants):
parsing the option, and cutting a stream of items into N ranges of whole scoring blocks, so that
every item is scored beside the same items as in the unchunked run and the chunks' outputs,
concatenated, are the whole run's."""

from __future__ import annotations

from genointerp.errors import UsageError


def parse_chunk(text: str) -> tuple[int, int]:
    """'3/8' -> (3, 8); ValueError with a user-facing message for anything else."""
    i, sep, n = text.partition("/")
    if not (sep and i.strip().isdigit() and n.strip().isdigit()):
        raise ValueError(f"expected I/N such as 3/8 (chunk I of N, 1-based), got {text!r}")
    i, n = int(i), int(n)
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"{text!r}: need 1 <= I <= N")
    return i, n


def chunk_option(text: str | None) -> tuple[int, int] | None:
    """--chunk as (I, N), None without it; UsageError naming the option for a bad one."""
    if text is None:
        return None
    try:
        return parse_chunk(text)
    except ValueError as exc:
        raise UsageError(f"--chunk: {exc}") from None


def block_range(i: int, n: int, total: int, block: int) -> tuple[int, int]:
    """Items [start, stop) of chunk i (1-based) of n over `total` items in blocks of `block` (the
    last may be short). Consecutive chunks share their boundaries, so chunks 1..n tile [0, total)
    exactly once; they hold whole blocks that differ in number by at most one, and chunks past the
    last block (n > blocks) are empty."""
    blocks = -(-total // block)
    return min((i - 1) * blocks // n * block, total), min(i * blocks // n * block, total)
