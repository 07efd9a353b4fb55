"""genointerp.pools.OrderedPool: answers in input order, with the parent working on batches no
worker has started while the answer it needs next is not ready."""

import fcntl
import os
import time

import pytest

from genointerp.pools import PIPE_BYTES, WAITING, OrderedPool, this_process_only


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


def test_a_log_for_this_process_only_is_silent_in_the_processes_it_forks(tmp_path):
    """classify-reads' typer logs through it: a worker that builds its aligner at its first read
    to type had repeated the job's "viral panel" line."""
    said = tmp_path / "said"

    def log(message):
        with open(said, "a") as fh:
            fh.write(message + "\n")

    quiet = this_process_only(log)
    quiet("parent")
    child = os.fork()
    if child == 0:
        quiet("worker")
        os._exit(0)
    os.waitpid(child, 0)
    log("direct")  # the file is shared: the child's line would be here
    assert said.read_text().split() == ["parent", "direct"]


def _slower_in_the_parent(batch: int) -> tuple[int, int]:
    """(batch, pid): 0.3 s in the parent, 0.2 s in a worker but 1 s for batch 1 (so that the
    worker still has it long after the parent's first batch)."""
    time.sleep(0.3 if os.getpid() == PARENT else 1.0 if batch == 1 else 0.2)
    return batch, os.getpid()


def test_at_the_input_end_the_parent_keeps_its_share_of_the_last_batches():
    """Four batches, one worker: the worker is handed the first two (one running, one waiting) as
    they are read, and the parent works on the last one read while the first is not ready. When
    it is done, the first is (the worker is faster). Handed out as during the input, the third
    then went to the worker behind the second: 3 batches to 1. Once the input has ended, a batch
    goes to a worker only if one has none waiting, so the parent works on the third: 2 to 2
    (were the first not ready yet, the parent would take the third anyway; the second keeps the
    worker busy until long after)."""
    with OrderedPool(_slower_in_the_parent, 1) as pool:
        got = list(pool.map((i, i) for i in range(4)))
    assert [answer[0] for _, answer in got] == [0, 1, 2, 3]
    assert [answer[1] for _, answer in got].count(PARENT) == 2


def _wait_for_the_worker(flag, done, batch: int) -> tuple[int, int]:
    """(pid, batches the worker has finished): in a worker, once the parent has started a batch
    of its own; in the parent, once the worker has finished 1 + WAITING batches (or 10 s)."""
    if os.getpid() != PARENT:
        _wait(flag.exists)
        with open(done, "a") as fh:
            fh.write(f"{batch}\n")
    else:
        flag.touch()
        _wait(lambda: done.exists() and len(done.read_text().split()) >= 1 + WAITING)
    return os.getpid(), len(done.read_text().split()) if done.exists() else 0


def _wait(ready) -> None:
    deadline = time.monotonic() + 10
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_while_the_parent_works_on_a_batch_the_worker_has_more_than_one_waiting(tmp_path):
    """The worker holds its batches until the parent starts one of its own (the last read, once
    the read-ahead is full), and the parent then waits for the worker: it finishes every batch it
    has without the parent's help, 1 + WAITING, topped up as the parent began. With one waiting it
    had run out whenever the parent's batch took longer than the worker's next one."""
    from functools import partial

    work = partial(_wait_for_the_worker, tmp_path / "parent_started", tmp_path / "worker_done")
    with OrderedPool(work, 1) as pool:
        got = [answer for _, answer in pool.map((i, i) for i in range(8))]
    parent = [seen for pid, seen in got if pid == PARENT]
    assert parent and parent[0] == 1 + WAITING
    assert parent[0] >= 3  # one running, more than one waiting


def _pipe_room_allowed() -> bool:
    """Whether this system lets this process give a pipe PIPE_BYTES of room."""
    read, write = os.pipe()
    try:
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        return True
    except OSError:
        return False
    finally:
        os.close(read)
        os.close(write)


def test_the_pipes_to_and_from_the_workers_hold_a_batch_and_its_answer():
    """A 1.3 MB batch and a 200 KB answer had gone through 64 KiB pipes in round trips, each
    waiting for the other side's process to be scheduled."""
    if not _pipe_room_allowed():
        pytest.skip(f"this system does not allow pipes of {PIPE_BYTES} bytes")
    with OrderedPool(_slow_in_workers, 1) as pool:
        queues = pool._pool._call_queue, pool._pool._result_queue
        assert [fcntl.fcntl(q._writer.fileno(), fcntl.F_GETPIPE_SZ) for q in queues] == [PIPE_BYTES] * 2
        assert [answer[0] for _, answer in pool.map((i, i) for i in range(3))] == [0, 1, 4]
