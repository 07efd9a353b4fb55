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


def _stuck_in_the_worker(done, batch: int) -> tuple[int, int]:
    """(pid, batches the parent had finished when this one was): a worker's first batch waits
    until the parent has finished `done`'s count of batches, and the parent's batches wait until
    a worker has started one (or 10 s)."""
    count, finished = done
    started = count.parent / "worker_started"
    if os.getpid() != PARENT:
        if not started.exists():
            started.touch()
            _wait(lambda: count.exists() and len(count.read_text().split()) >= finished)
    else:
        _wait(started.exists)
    seen = len(count.read_text().split()) if count.exists() else 0
    if os.getpid() == PARENT:
        with open(count, "a") as fh:
            fh.write(f"{batch}\n")
    return os.getpid(), seen


def test_at_the_input_end_the_parent_takes_back_every_batch_no_worker_has_started(tmp_path):
    """Four batches, one worker stuck on the first it starts until the parent has finished three:
    the parent takes back the batch waiting behind it and any handed out after, where it had
    worked on two and then waited for the stuck worker (10 s here). Which batch the worker starts
    depends on when it starts, not how many."""
    from functools import partial

    with OrderedPool(partial(_stuck_in_the_worker, (tmp_path / "parent_done", 3)), 1) as pool:
        got = [answer for _, answer in pool.map((i, i) for i in range(4))]
    assert [pid for pid, _ in got].count(PARENT) == 3
    worker = [seen for pid, seen in got if pid != PARENT]
    assert worker == [3]


def _parent_order(log, batch: int) -> int:
    """The pid that worked on a batch: slow in a worker; the parent notes its batches in order."""
    if os.getpid() != PARENT:
        time.sleep(0.05)
    else:
        with open(log, "a") as fh:
            fh.write(f"{batch}\n")
    return os.getpid()


def test_at_the_input_end_the_worker_works_from_the_front_and_the_parent_from_the_back(tmp_path):
    """Six batches, the input's end known at the first: the worker is handed every batch but the
    last and the parent works on the last, then takes back the others from the end. Where the
    worker held one waiting batch at most and the parent took the first no one had started, the
    worker ran dry while the parent worked on a large batch (classify-reads' last full one)."""
    from functools import partial

    log = tmp_path / "parent_batches"
    with OrderedPool(partial(_parent_order, log), 1) as pool:
        pids = [answer for _, answer in pool.map(((i, i) for i in range(6)), lambda: True)]
    parent = [int(b) for b in log.read_text().split()]
    assert parent[0] == 5 and parent == sorted(parent, reverse=True)
    by = "".join("p" if pid == PARENT else "w" for pid in pids)
    assert by == "w" * by.count("w") + "p" * by.count("p")  # the worker's from the front, the parent's after


def _dies_in_the_worker(started, batch: int) -> int:
    """Ends a worker process (as the OOM killer would) a moment into its first batch; the parent's
    batches wait until a worker has started one (or 10 s)."""
    if os.getpid() != PARENT:
        started.touch()
        time.sleep(0.2)
        os._exit(9)
    _wait(started.exists)
    return batch


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_that_dies_while_the_parent_took_batches_back_ends_the_map_cleanly(tmp_path):
    """The input's end known at once: the worker holds every batch but the last and the parent
    takes them back from the end while the worker's first batch runs, then the worker dies. The
    map ends with WorkerDied and the process pool's own thread raises nothing: a batch taken back
    by cancelling its future had made that thread fail as it told the futures the pool was broken
    (Python 3.11), leaving those after it untold."""
    from functools import partial

    from genointerp.pools import WorkerDied

    with pytest.raises(WorkerDied):
        with OrderedPool(partial(_dies_in_the_worker, tmp_path / "started"), 1) as pool:
            list(pool.map(((i, i) for i in range(8)), lambda: True))


def test_an_input_of_one_batch_is_worked_on_in_the_parent():
    """With workers, a lone batch had gone to one while the parent waited for it (and classify-reads
    then built again, for its report, what the worker had built for the batch)."""
    with OrderedPool(_slow_in_workers, 1) as pool:
        assert [answer for _, answer in pool.map([(0, 3)])] == [(9, PARENT)]


def test_while_a_worker_is_stuck_the_parent_works_on_every_batch_it_may_hold(tmp_path):
    """Twenty batches, one worker stuck on the first it starts until the parent has finished
    the others it may hold at once: (1 + WAITING) + 2 read ahead, AHEAD more read rather than
    wait, the worker's waiting ones taken back; all of them but the stuck one. Before AHEAD and
    the taking back, the parent finished 3 and then waited (for 10 s here)."""
    from functools import partial

    from genointerp.pools import AHEAD

    most = (1 + WAITING) + 2 + AHEAD
    with OrderedPool(partial(_stuck_in_the_worker, (tmp_path / "parent_done", most - 1)), 1) as pool:
        got = [answer for _, answer in pool.map((i, i) for i in range(20))]
    # one more where the parent had taken the first batch before the worker started: its answer
    # then went out, and the parent could read one more
    assert [seen for pid, seen in got if pid != PARENT][0] in (most - 1, most)


def test_once_a_stuck_worker_is_done_it_gets_a_batch_before_the_parents_answers_go_out(tmp_path):
    """The worker stuck on its first batch while the parent finishes every other batch it may
    hold: once the worker's is done, the parent reads one more and hands it out before it hands
    on the answers then ready, where the worker had waited for them all to be written (a
    classify-reads batch's rows: some 6 ms each). Seen from the caller: a batch is handed out
    between the first answer and the second."""
    from functools import partial

    from genointerp.pools import AHEAD

    most = (1 + WAITING) + 2 + AHEAD
    handed = []
    with OrderedPool(partial(_stuck_in_the_worker, (tmp_path / "parent_done", most - 1)), 1) as pool:
        for _ in pool.map((i, i) for i in range(20)):
            handed.append(pool._handed)
    assert handed[1] > handed[0]


def _wait_for_the_worker(flag, done, batch: int) -> tuple[int, int, float]:
    """(pid, batches the worker has finished, when): in a worker, once the parent has started a
    batch of its own; in the parent, once the worker has finished 1 + WAITING batches (or 10 s)."""
    if os.getpid() != PARENT:
        _wait(flag.exists)
        with open(done, "a") as fh:
            fh.write(f"{batch}\n")
    else:
        flag.touch()
        _wait(lambda: done.exists() and len(done.read_text().split()) >= 1 + WAITING)
    return os.getpid(), len(done.read_text().split()) if done.exists() else 0, time.monotonic()


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
    # the parent's first batch in time (it may work on earlier ones later: OrderedPool._take_back)
    parent = [seen for pid, seen, _ in sorted(got, key=lambda answer: answer[2]) if pid == PARENT]
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
