"""genointerp.pools.OrderedPool: answers in input order, with the parent working on batches no
worker has started while the answer it needs next is not ready."""

import os
import time

from genointerp.pools import OrderedPool


def _slow_in_workers(batch: int) -> tuple[int, int]:
    """(batch squared, pid): slow in a worker, quick in the parent, so the parent takes batches."""
    if os.getpid() != PARENT:
        time.sleep(0.05)
    return batch * batch, os.getpid()


PARENT = os.getpid()


def test_answers_come_in_order_wherever_a_batch_was_worked_on():
    with OrderedPool(_slow_in_workers, 1) as pool:
        got = list(pool.map((i, i) for i in range(40)))
    assert [keep for keep, _ in got] == list(range(40))
    assert [answer[0] for _, answer in got] == [i * i for i in range(40)]
    # The parent took batches: with one worker, two batches are handed out and up to three more read
    # ahead, and batch 0 takes the worker 50 ms, so at the parent's first wait some are its to take.
    assert PARENT in [answer[1] for _, answer in got]


def test_without_workers_the_parent_works_on_every_batch():
    with OrderedPool(_slow_in_workers, 0) as pool:
        got = list(pool.map((i, i) for i in range(5)))
    assert [answer for _, answer in got] == [(i * i, PARENT) for i in range(5)]
