"""Records in flight: one ``Job`` per consumed record, the table of them, and the judging threads.

A job walks ``NEW -> JUDGING -> JUDGED -> WRITING -> DONE`` (a duplicate of a durable result goes
straight to ``DONE``; a duplicate of an answer in flight waits as a *follower* of its *leader*, the
job judging the same record key, and is finished when the leader's result is durable). A job given
up (stop, revoke, fatal) is marked ``abandoned`` in whatever state it was: its offset is never
finished, so the next owner of the partition replays it.

The table is owned by the poll loop and guarded by the worker's lock; judging threads touch only a
job's ``result``/``error`` and read ``abandoned``.

Why threads for judging (not asyncio): the ``Judge`` protocol is synchronous and shared
by the batch CLI, the cascade and user judges; the SDK's sync client is thread-safe over
one pooled httpx client; a thread blocked on a socket releases the GIL and costs a few
hundred KB. Network judges (``judge.io_bound``) get ``flow.max_in_flight`` threads;
CPU-bound judges (heuristic, hybrid, nli) get ``flow.cpu_threads`` (1): more threads
would only contend for the GIL; the loop keeps a short queue (32 answers per thread) in
front of them and is woken only when it runs low, so it works in batches.
"""

from __future__ import annotations

import enum
import queue
import threading
from typing import Any, Callable, Collection, Iterator

from contract.offsets import OffsetLedger
from contract.record import RagTrace
from evaluator_worker.scoring import AnswerResult


class JobState(enum.Enum):
    NEW = "new"
    JUDGING = "judging"  # on the judge pool (or, for a follower, waiting for its leader)
    JUDGED = "judged"  # back from the pool, not yet written
    WRITING = "writing"  # sent, awaiting the broker's acknowledgement (or a re-send)
    DONE = "done"


class JobKind(enum.Enum):
    RESULT = "result"
    DEAD_LETTER = "dead_letter"
    DUPLICATE = "duplicate"


class Job:
    """One consumed record from hand-out to durable outcome (owned by the poll loop, except ``result``/``error``)."""

    __slots__ = (
        "tp",
        "offset",
        "msg",
        "trace",
        "kind",
        "state",
        "result",
        "error",
        "abandoned",
        "topic",
        "key",
        "value",
        "headers",
        "attempts",
        "first_failure",
        "retry_at",
        "admitted",
        "followers",
    )

    def __init__(self, tp: Any, msg: Any, admitted: float) -> None:
        self.tp = tp
        self.offset: int = msg.offset
        self.msg = msg
        self.trace: RagTrace | None = None
        self.kind = JobKind.RESULT
        self.state = JobState.NEW
        self.result: AnswerResult | None = None
        self.error: BaseException | None = None
        self.abandoned = False
        self.topic = ""
        self.key: bytes | None = None
        self.value = b""
        self.headers: list[tuple[str, bytes]] = []
        self.attempts = 0
        self.first_failure: float | None = None
        self.retry_at = 0.0
        self.admitted = admitted
        self.followers: list[Job] = []

    @property
    def where(self) -> str:
        """``topic/partition@offset`` of the source record (for log lines)."""
        return f"{self.tp.topic}/{self.tp.partition}@{self.offset}"


class Halt:
    """The first error that stops the worker; later ones are dropped (the loop raises it after committing)."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def set(self, exc: BaseException) -> bool:
        """Keep ``exc`` unless an error is already kept; True when it was kept."""
        if self.error is not None:
            return False
        self.error = exc
        return True

    def take(self) -> BaseException | None:
        error, self.error = self.error, None
        return error


class JobTable:
    """Jobs per partition, the leader of each record key in flight, the judging count and the offset ledger."""

    def __init__(self) -> None:
        self.ledger = OffsetLedger()
        self.judging = 0
        self._by_partition: dict[Any, set[Job]] = {}
        self._leaders: dict[str, Job] = {}

    def track(self, job: Job) -> None:
        """Hand-out order per partition; raises ``ValueError`` for an offset at or below one tracked."""
        self.ledger.track(job.tp, job.offset)
        self._by_partition.setdefault(job.tp, set()).add(job)

    def finish(self, job: Job) -> None:
        """The job's outcome is durable: its offset may be committed."""
        job.state = JobState.DONE
        self.ledger.finish(job.tp, job.offset)
        self.discard(job)

    def discard(self, job: Job) -> None:
        jobs = self._by_partition.get(job.tp)
        if jobs is not None:
            jobs.discard(job)

    def owns(self, tp: Any) -> bool:
        return tp in self._by_partition

    def jobs(self, tp: Any) -> list[Job]:
        return list(self._by_partition.get(tp, ()))

    def all_jobs(self) -> Iterator[Job]:
        for jobs in list(self._by_partition.values()):
            yield from list(jobs)

    def count(self, parts: Collection[Any]) -> int:
        return sum(len(self._by_partition.get(tp, ())) for tp in parts)

    def pending(self, parts: Collection[Any] | None = None) -> bool:
        if parts is None:
            return any(self._by_partition.values())
        return any(self._by_partition.get(tp) for tp in parts)

    def drop(self, tp: Any) -> None:
        """Forget a partition's jobs and offsets (after they were abandoned)."""
        self._by_partition.pop(tp, None)
        self.ledger.forget(tp)

    def clear(self, tp: Any | None = None) -> None:
        """Drop the job sets (of one partition, or all), keeping the ledger."""
        if tp is None:
            self._by_partition.clear()
        else:
            self._by_partition.pop(tp, None)

    def leader(self, key: str) -> Job | None:
        return self._leaders.get(key)

    def lead(self, job: Job) -> None:
        assert job.trace is not None
        self._leaders[job.trace.record_key] = job

    def unlead(self, job: Job) -> list[Job] | None:
        """If ``job`` leads its record key: stop that and hand back its followers (else None)."""
        if job.trace is None or self._leaders.get(job.trace.record_key) is not job:
            return None
        del self._leaders[job.trace.record_key]
        followers, job.followers = job.followers, []
        return followers


class JudgePool:
    """Daemon threads running ``fn(job)`` for queued jobs; finished jobs go to ``done``.

    Daemon threads (not ``ThreadPoolExecutor``, whose threads are joined at exit): a
    process stopping with a judge call in flight does not wait for it.
    """

    def __init__(
        self, threads: int, fn: Callable[[Job], None], on_done: Callable[[], None] = lambda: None, wake_below: int = 0
    ) -> None:
        self.done: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._todo: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._fn = fn
        self._on_done = on_done
        self._wake_below = wake_below
        self._threads = [
            threading.Thread(target=self._run, name=f"claimwatch-judge-{i}", daemon=True) for i in range(threads)
        ]
        for t in self._threads:
            t.start()

    def submit(self, job: Job) -> None:
        self._todo.put(job)

    def _run(self) -> None:
        while True:
            job = self._todo.get()
            if job is None:
                return
            try:
                if not job.abandoned:
                    self._fn(job)
            except BaseException as exc:  # never lose a job: the loop decides what a crash means
                job.error = exc
            self.done.put(job)
            if self._todo.qsize() <= self._wake_below:
                self._on_done()

    def shutdown(self) -> None:
        for _ in self._threads:
            self._todo.put(None)
