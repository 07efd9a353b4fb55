"""Batches worked on N forked worker processes, answers taken in input order.

What a worker needs (indexes, settings, a model folder's path) is bound into the work function
before the workers are forked, so it is inherited, not sent: read-only arrays, memory-mapped ones
above all, stay shared between the parent and every worker. A batch travels to a worker pickled,
and its answer back. The parent keeps up to (1 + WAITING) N batches with the workers (one running
and up to WAITING waiting each) and a few more read ahead, and takes the answers in input order,
so a job writes its output as it is made and its memory stays flat in the number of batches;
while the answer it needs next is not ready, the parent works on a batch it has read ahead, reads
one more to work on (up to AHEAD more), or takes back a batch a worker has not started
(OrderedPool.map). A worker that dies (the kernel's OOM killer, a crash in a library) ends the job
with one error line, never a job that waits for ever (concurrent.futures' pool knows its workers
died; multiprocessing.Pool would fork a new one and lose the batch).

Workers are forked (Linux; macOS's default spawn would re-import and re-load everything), so
they hold copies of every descriptor the parent has open: the pool forks them all when it is made,
and callers make it before opening the inputs (a stream is fed to htslib through a pipe whose
reader sees its end only when every copy of its write end is closed) and before any model runs (a
torch thread pool does not survive a fork). Ctrl-C reaches the whole process group, so workers
ignore SIGINT and leave the decision to the parent, which ends them when the job ends or fails.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.sharedctypes import RawArray
from typing import Callable, Iterable, Iterator

from genointerp.errors import GenointerpError

_WORK: Callable | None = None  # the work function of the pool being forked: workers inherit it
# The pool's claims, shared with its workers (made before they fork): slot seq % len holds seq + 1
# once the batch handed out as `seq` is started, by a worker or by the parent taking it back.
_CLAIMS = None
# Batches each worker has waiting behind its running one while this process works on a batch of
# its own, as long as the input lasts (one as batches are read). With one, a worker ran out
# whenever that batch took longer than the worker's waiting one (batches vary with the reads, and
# this process also reads and writes): in an 8 s run of -t 2 on 1.6 M tumour-like reads, 0.3-0.4 s
# in stretches over 10 ms, 0.01-0.05 s with two (and PIPE_BYTES). Each costs a batch's text (1.3 MB
# at 150 bp) per worker. Only then, not as batches are read: four batches of costly reads would go
# three to the worker, one here.
WAITING = 2
# The kernel's room for batches on their way to the workers and answers on their way back. At the
# default 64 KiB a worker's answer (200 KB) waited for this process to read it, and a batch came
# over in twenty round trips: a worker spent 3.3 ms (median) between batches of 65 ms, 1.7 ms with
# 1 MiB, the most an unprivileged process may ask for by default (/proc/sys/fs/pipe-max-size).
PIPE_BYTES = 1 << 20
# Batches that the parent may read beyond its read-ahead when it has none of its own to work on
# and the answer it needs next is not ready: it works on the one it reads rather than wait.
# Batches vary (8,192 all-viral reads took 0.09 to 0.6 s, reads of one genome after another), and
# the parent had waited whenever the worker's were the slow ones: at -t 2 on 108,181 HPV reads,
# 0.17 s in mid-run. Each costs a batch's reads held (about 6 MB for 8,192 reads of 150 bp, far
# more for long reads), so they do not grow with the workers: one process works on them.
AHEAD = 2
# Slots of _CLAIMS: far more than the batches ever handed out and not yet answered at once
CLAIM_SLOTS = 4096


class WorkerDied(GenointerpError):
    """A worker process ended before its batch was done (killed, out of memory, crashed)."""


def _worker_start() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # the parent's handlers raise; a worker just ends
        signal.signal(sig, signal.SIG_DFL)


def _claimed(seq: int) -> bool:
    """Whether someone (the parent or a worker) has started the batch handed out as `seq`."""
    return _CLAIMS[seq % len(_CLAIMS)] == seq + 1


def _claim(seq: int) -> bool:
    """Start the batch handed out as `seq` here, unless someone has: the parent (taking it back
    from the workers) or a worker. Not atomic: were both to check at once, both would work on it,
    which costs time, never an answer (the parent keeps its own, the same: callers' work depends on
    the payload alone)."""
    if _claimed(seq):
        return False
    _CLAIMS[seq % len(_CLAIMS)] = seq + 1
    return True


def _run(seq: int, batch):
    """A worker's answer to the batch handed out as `seq`; None where the parent took it back
    (the parent then has its own answer and never asks for this one)."""
    return _WORK(batch) if _claim(seq) else None


class Done:
    """An answer already computed, with a future's .done() and .result()."""

    def __init__(self, value) -> None:
        self.value = value

    def done(self) -> bool:
        return True

    def result(self):
        return self.value


def _ready(item: list) -> bool:
    """Whether a queued batch's answer is in."""
    return item[2] is not None and item[2].done()


def _nothing() -> None:
    """A task that does nothing."""


def _roomy_pipes(executor: ProcessPoolExecutor) -> None:
    """PIPE_BYTES of room in the pipes that carry a process pool's batches and answers, where the
    system allows it (a smaller limit, another platform: the pipes stay as they are, only slower).
    Before its processes start: the room belongs to the pipe, which they then share."""
    for queue in (getattr(executor, "_call_queue", None), getattr(executor, "_result_queue", None)):
        writer = getattr(queue, "_writer", None)
        if writer is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            try:
                fcntl.fcntl(writer.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass


def start_processes(executor: ProcessPoolExecutor):
    """Make a process pool start its processes now (it starts them at its first task); returns
    that task's future."""
    return executor.submit(_nothing)


def in_order(items: Iterable[tuple[object, object]], depth: int) -> Iterator[tuple[object, object]]:
    """(keep, answer.result()) for each (keep, answer) of items, answers being futures (.done(),
    .result()), in input order: the first is taken once it is done or more than `depth` wait, so
    that no more than depth + 1 are held at once."""
    queue: deque = deque()
    for item in items:
        queue.append(item)
        while queue and (len(queue) > depth or queue[0][1].done()):
            keep, answer = queue.popleft()
            yield keep, answer.result()
    while queue:
        keep, answer = queue.popleft()
        yield keep, answer.result()


def end_now(executor: ProcessPoolExecutor) -> None:
    """Shut a process pool down without waiting for the batches its processes are working on."""
    _terminate(executor)
    executor.shutdown(wait=True, cancel_futures=True)


def _terminate(executor: ProcessPoolExecutor) -> None:
    """SIGTERM to a process pool's processes, not waiting for them to end."""
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        process.terminate()  # the pool's own map of its processes: it offers no public way to end them


def this_process_only(log: Callable[[str], None]) -> Callable[[str], None]:
    """`log`, silent in the workers forked after this call: a worker that builds something lazily
    (an aligner at its first read to type) would otherwise repeat the job's log lines."""
    parent = os.getpid()

    def quiet_in_workers(message: str) -> None:
        if os.getpid() == parent:
            log(message)

    return quiet_in_workers


class OrderedPool:
    """`work` on batches: in this process where workers is 0, else on that many forked workers."""

    def __init__(self, work: Callable, workers: int) -> None:
        global _WORK, _CLAIMS
        self.work, self.workers = work, workers
        self._pool = None
        self._handed = 0  # batches handed out so far: the next one's seq
        if workers > 0:
            if _WORK is not None:
                raise RuntimeError("one OrderedPool with workers at a time per process: its workers inherit _WORK")
            _WORK = work
            try:
                _CLAIMS = RawArray("q", CLAIM_SLOTS)  # shared memory, before the fork
                self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_worker_start)
                _roomy_pipes(self._pool)
                start_processes(self._pool)  # forked now (in submit, with fork), not at the first batch
            except BaseException:
                self.close()
                raise

    def map(self, items: Iterable[tuple[object, object]],
            ended: Callable[[], bool] | None = None) -> Iterator[tuple[object, object]]:
        """(keep, work(payload)) for each (keep, payload) of items, in order: only the payload
        goes to a worker. `ended`, where given, says once the items left are in memory (the input
        has ended: they are read at once and worked on as the last ones are, below); else that is
        known when they run out.

        This process works too: batches are handed to the workers 2 N at a time as they are read
        (one running and one waiting per worker), and a few more are read ahead; while the answer
        it must hand on next is not ready, this process works on the last batch read ahead itself,
        the workers first topped up to WAITING waiting each. Its own share of a job (reading,
        writing) is then no longer time the workers' cores wait for, nor time it waits for them:
        -t 2 on 2 cores keeps both busy. Where it has no batch of its own left, it reads one more
        (up to AHEAD beyond the read-ahead), and past that takes back the last batch
        handed out that no worker has started: it waits only for batches a worker is working on.
        Once the input has ended, the workers are handed every batch but the last, which this
        process works on, and then it takes back batches from the end that no worker has started:
        the workers work from the front and this process from the back until they meet (_settle).
        The answers are the same wherever a batch is worked on (callers' work depends on the
        payload alone)."""
        if self._pool is None:
            for keep, payload in items:
                yield keep, self.work(payload)
            return
        try:
            queue: deque = deque()  # [keep, payload, answer; None until handed out or worked on here, seq]
            depth, topped_up = 2 * self.workers, (1 + WAITING) * self.workers
            most = topped_up + 2 + AHEAD
            items = iter(items)
            for keep, payload in items:
                queue.append([keep, payload, None, -1])
                if ended is not None and ended():
                    queue.extend([k, p, None, -1] for k, p in items)
                    break
                self._hand_out(queue, depth, lone=ended is None)
                # read ahead: what the workers hold topped up, and two or three for this process
                while queue and (len(queue) > topped_up + 2 or _ready(queue[0])):
                    if not self._settle(queue, topped_up, read_more=len(queue) < most):
                        break  # one more batch to read, for this process to work on
                    if len(queue) < most and not self._waiting(queue):
                        break  # one more batch to read for the workers first, then the answers
                    yield self._take(queue, depth)
            while queue:
                self._settle(queue, len(queue), read_more=False, ended=True)
                yield self._take(queue, len(queue), ended=True)
        except BrokenProcessPool:
            raise WorkerDied("a worker process ended before its batch was done (killed, out of memory?); "
                             "nothing was written") from None

    def _hand_out(self, queue: deque, depth: int, ended: bool = False, lone: bool = False) -> None:
        """The oldest batches not yet handed out go to the workers while fewer than `depth` are
        there; once the input has `ended`, never the last (this process's own), and where it may
        have (`lone`: map was not told), the first only once a second is read. So an input of one
        batch is worked on here alone: at -t 2 the worker had worked on it while this process
        waited, then built again what the worker had built for it (classify-reads' aligner, for its
        report: 1,000 reads 0.46 s at -t 2, 0.37 s at -t 1)."""
        free = [item for item in queue if item[2] is None]
        if ended:
            free = free[:-1]
        elif lone and not self._handed and len(queue) < 2:
            return
        busy = sum(1 for item in queue if item[2] is not None and not item[2].done())
        for item in free[: max(0, depth - busy)]:
            item[3], self._handed = self._handed, self._handed + 1
            item[2] = self._pool.submit(_run, item[3], item[1])

    def _settle(self, queue: deque, topped_up: int, read_more: bool, ended: bool = False) -> bool:
        """Work here until the first batch's answer is ready or there is nothing left to work on but
        the workers' running batches: the last batch not handed out (the workers first given batches
        up to `topped_up`), else (where not `read_more`) the last one handed out that no worker has
        started. False where this process ran out of batches and may `read_more`.

        Once the input has `ended` (`topped_up` then covers every batch left), the workers hold
        every batch but the last and this process works from the back: a job's last batches are
        its smallest (genointerp.viral.classify.job.steps), so the two meet within one of them.
        While this process works on a batch it hands out none: at -t 2 on 108,181 HPV reads, where
        the worker held one waiting batch at most once the input had ended, this process took the
        first batch no one had started (8,192 reads) and the worker ran dry for 0.1-0.16 s behind
        it, or this process kept the last one while the worker had finished."""
        while not _ready(queue[0]):
            self._hand_out(queue, topped_up, ended)
            spare = next((item for item in reversed(queue) if item[2] is None), None)
            if spare is None:
                if read_more:
                    return False
                spare = self._take_back(queue)
                if spare is None:
                    break
            spare[2] = Done(None)  # this process's: the workers' batches topped up again without it
            self._hand_out(queue, topped_up, ended)
            spare[2] = Done(self.work(spare[1]))
        return True

    @staticmethod
    def _waiting(queue: deque) -> bool:
        """Whether a batch handed out waits for a worker (none has started it). Where none does,
        the answers ready go out once one more is read and handed out: at -t 2 on 108,181 HPV
        reads, where the worker's batch was slow and this process had worked on those read
        ahead, the worker finished with nothing waiting, and went on waiting while this process
        wrote the five answers then ready (0.03-0.04 s) before it read the next batch."""
        return any(item[2] is not None and not isinstance(item[2], Done) and not item[2].done()
                   and not _claimed(item[3]) for item in queue)

    @staticmethod
    def _take_back(queue: deque) -> list | None:
        """The last batch handed out that no worker has started, now this process's; None if every
        one has been. Claimed, not cancelled: a worker that gets it passes it by (_run). A
        cancelled future waiting in the process pool made the pool's own thread fail where a
        worker then died (Python 3.11's concurrent.futures sets the broken pool's error on every
        future it holds, a cancelled one raising), before it had told every future; once the
        input has ended the workers hold every batch left, so the parent takes back more."""
        for item in reversed(queue):
            if item[2] is not None and not item[2].done():
                # a worker takes its batches in order: one started, every one before it has been
                return item if _claim(item[3]) else None
        return None

    def _take(self, queue: deque, depth: int, ended: bool = False) -> tuple[object, object]:
        """The first batch's (keep, answer), waiting for it; then the workers get batches up to
        `depth` (_hand_out)."""
        keep, _, answer, _ = queue.popleft()
        self._hand_out(queue, depth, ended)
        return keep, answer.result()

    def release(self) -> None:
        """End the workers now, not waiting for them to end: for a caller whose batches are all
        answered and that has work of its own left (classify-reads' report), so that their ends
        (the kernel freeing a worker's memory) run on their own cores beside it. `close` then
        waits for them: 0.013 s of a -t 2 run of 108,181 all-HPV reads, on one core after the
        report where the worker was ended there."""
        if self._pool is not None:
            _terminate(self._pool)

    def close(self) -> None:
        """End the workers at once (nothing they hold needs finishing)."""
        global _WORK, _CLAIMS
        if self._pool is not None:
            end_now(self._pool)
            self._pool = None
        _WORK = _CLAIMS = None

    def __enter__(self) -> "OrderedPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
