"""The answers in flight: one ``Job`` per consumed record, from admission to a durable outcome.

:class:`InFlight` owns everything a record passes through between the poll and the commit: the table of jobs
(per partition, with the offset ledger the commits read), the judging threads, the dedupe window and the
:class:`~evaluator_worker.writer.ResultWriter`. The worker's loop calls it and acts on what it returns; it
never calls back into the loop:

- :meth:`InFlight.admit`: decode + validate (a bad value -> dead-letter write, reason in headers); a
  duplicate of a durable result -> finished, no write; a duplicate of an answer in flight -> a *follower*,
  finished when its *leader*'s result is durable; else -> the judging threads;
- :meth:`InFlight.collect`: judged answers -> result writes (shrunk to fit the request limit); a judge crash
  -> dead letter; acknowledged writes -> offsets finished; returns a :class:`Durable` event per result the
  broker acknowledged (the loop counts it, exports it, offers it to the shadow judge);
- :meth:`InFlight.forget` / :meth:`InFlight.abandon_all`: give records up uncommitted (revoke, stop, fatal):
  the next owner of the partition replays them.

A job walks ``NEW -> JUDGING -> JUDGED -> WRITING -> DONE`` (a duplicate of a durable result goes straight to
``DONE``). A job given up is marked ``abandoned`` in whatever state it was: its offset is never finished. No
single record ends the worker: oversized results are shrunk, oversized keys hashed, a judge crash
dead-letters its record; only a fatal judge error (401/403), a ``ConfigError`` or a write the broker keeps
refusing stops it (:attr:`InFlight.halt`), without committing past the record and without dead-lettering the
backlog.

Threads: everything here runs on the poll loop (or the rebalance listener) under the worker's lock, except
the judging threads, which touch only a job's ``result``/``error`` and read ``abandoned``. Why threads for
judging (not asyncio): the ``Judge`` protocol is synchronous and shared by the batch CLI, the cascade and
user judges; the SDK's sync client is thread-safe over one pooled httpx client; a thread blocked on a socket
releases the GIL and costs a few hundred KB. Network judges (``judge.io_bound``) get ``flow.max_in_flight``
threads; CPU-bound judges get one (more would only contend for the GIL) and a short queue (32 answers per
thread), and wake the loop only when it runs low, so the loop works in batches.
"""

from __future__ import annotations

import enum
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterator

from contract.errors import ConfigError, RecordDecodeError
from contract.logs import get_logger
from contract.offsets import OffsetLedger
from contract.record import RagTrace
from evaluator_worker.config import WorkerSettings
from evaluator_worker.errors import EvaluationAbandoned, JudgeError
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import DedupeWindow, encode_result, fit_key, fit_value, record_budget
from evaluator_worker.scoring import AnswerResult
from evaluator_worker.writer import ResultWriter

log = get_logger(__name__)

MAX_DLQ_ERROR_CHARS = 500


class JobState(enum.Enum):
    NEW = "new"
    JUDGING = "judging"  # on the judging threads (or, for a follower, waiting for its leader)
    JUDGED = "judged"  # back from the threads, not yet written
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


@dataclass(frozen=True, slots=True)
class Durable:
    """Event: a result the broker acknowledged (or one that needed no write); its offset may be committed."""

    result: AnswerResult
    trace: RagTrace
    #: when its record was admitted (``clock``), for the evaluation-duration histogram
    admitted: float


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


class InFlight:
    """The in-flight table, the judging threads and the writer: records in, :class:`Durable` events out.

    ``threads`` judging threads start on :meth:`open`; ``max_in_flight`` answers may be judged at once (the loop
    pauses fetching past it); ``wake`` is set for every judged answer, or only when fewer than ``wake_below`` are
    queued (CPU-bound judges: the loop then works in batches).
    """

    def __init__(
        self,
        *,
        settings: WorkerSettings,
        evaluator: Evaluator,
        writer: ResultWriter,
        dedupe: DedupeWindow,
        threads: int,
        max_in_flight: int,
        wake_below: int = 0,
        wake: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self.metrics = evaluator.metrics
        self.dedupe = dedupe
        self.writer = writer
        self.table = JobTable()
        self.halt = Halt()
        #: set on stop: a follower of an abandoned leader is then abandoned too, not judged
        self.stopping = threading.Event()
        self.max_in_flight = max_in_flight
        self._threads = threads
        self._wake_below = wake_below
        self._wake = wake or threading.Event()
        self._clock = clock
        self._pool: JudgePool | None = None
        self._budget = record_budget(settings.flow.producer_max_request_bytes)

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        """Start the judging threads and the producer (idempotent)."""
        self.writer.open()
        if self._pool is None:
            self._pool = JudgePool(self._threads, self._judge, self._wake.set, wake_below=self._wake_below)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self.writer.close()

    # -- what the loop reads -----------------------------------------------------------------
    @property
    def judging(self) -> int:
        """Answers being judged (not abandoned)."""
        return self.table.judging

    @property
    def ledger(self) -> OffsetLedger:
        return self.table.ledger

    def full(self) -> bool:
        """``max_in_flight`` answers are being judged or ``max_unacked_writes`` writes await the broker."""
        return self.table.judging >= self.max_in_flight or self.writer.unacked >= self.settings.flow.max_unacked_writes

    def busy(self) -> bool:
        return bool(self.table.judging or self.writer.busy())

    def room(self) -> int:
        return self.max_in_flight - self.table.judging

    def count(self, parts: Collection[Any]) -> int:
        return self.table.count(parts)

    def pending(self, parts: Collection[Any] | None = None) -> bool:
        return self.table.pending(parts)

    # -- in ----------------------------------------------------------------------------------
    def admit(self, tp: Any, msg: Any) -> None:
        """A fetched record of partition ``tp`` (in offset order)."""
        job = Job(tp, msg, self._clock())
        try:
            self.table.track(job)
        except ValueError:  # a re-delivered offset after a seek we did not see: start the partition over
            self.forget(tp)
            self.table.track(job)
        try:
            if msg.value is None:
                raise RecordDecodeError("record has no value", reason="empty")
            if len(msg.value) > self.settings.max_record_bytes:
                raise RecordDecodeError(
                    f"record of {len(msg.value)} bytes is over max_record_bytes={self.settings.max_record_bytes}",
                    reason="oversized",
                )
            job.trace = RagTrace.from_json_bytes(msg.value)
        except RecordDecodeError as exc:
            self._dead_letter(job, exc.reason, str(exc))
            return
        key = job.trace.record_key  # the trace id, or trace/call for one of several RAG calls in a trace
        if key in self.dedupe:
            self._duplicate(job)
            return
        leader = self.table.leader(key)
        if leader is not None and not leader.abandoned:
            leader.followers.append(job)  # finished when the leader's result is durable
            job.kind, job.state = JobKind.DUPLICATE, JobState.JUDGING
            return
        self._dispatch(job)

    def _dispatch(self, job: Job) -> None:
        assert job.trace is not None and self._pool is not None
        self.table.lead(job)
        job.kind, job.state = JobKind.RESULT, JobState.JUDGING
        self.table.judging += 1
        self._pool.submit(job)

    def _judge(self, job: Job) -> None:
        """On a judging thread: evaluate; :meth:`collect` picks the job up."""
        assert job.trace is not None
        job.result = self.evaluator.evaluate(job.trace, cancelled=lambda: job.abandoned)

    # -- judged, written, durable ------------------------------------------------------------
    def collect(self) -> list[Durable]:
        """Judged answers to their writes, acknowledged writes to durable offsets, due re-sends sent; returns the
        results that became durable."""
        out: list[Durable] = []
        while self._pool is not None:
            try:
                job = self._pool.done.get_nowait()
            except queue.Empty:
                break
            if job.abandoned or job.state is not JobState.JUDGING:
                continue  # abandoned: already accounted for
            self.table.judging -= 1
            job.state = JobState.JUDGED
            self._judged(job, out)
        for write in self.writer.collect():
            assert isinstance(write, Job)
            self._durable(write, out)
        self.writer.resend_due()
        self.writer.watch_stall()
        if self.writer.fatal is not None:  # a write the broker keeps refusing (in a send, an ack or a re-send)
            self.halt.set(self.writer.fatal)
        return out

    def _judged(self, job: Job, out: list[Durable]) -> None:
        exc = job.error
        if exc is not None:
            if isinstance(exc, EvaluationAbandoned):
                self.abandon(job)
                return
            if isinstance(exc, ConfigError) or (isinstance(exc, JudgeError) and exc.fatal):
                # misconfiguration (no key, bad key, no model): stop without committing past this record,
                # don't dead-letter the backlog
                if self.halt.set(exc):
                    log.error("judge_fatal_stopping", error=str(exc)[:300])
                self.abandon(job)
                return
            # a judge bug must not kill the worker or lose the record
            log.error(
                "worker_evaluation_crashed", trace_id=job.trace.trace_id if job.trace else None, error=repr(exc)[:300]
            )
            self._dead_letter(job, "evaluation_error", repr(exc))
            return
        assert job.result is not None
        if not self.settings.results_topic:
            self._durable(job, out)
            return
        key, value, headers, dropped = encode_result(job.result, self._budget)
        if dropped:
            log.warning(
                "worker_result_shrunk",
                trace_id=job.result.trace_id[:64],
                dropped=dropped,
                limit=self.settings.flow.producer_max_request_bytes,
            )
            self.metrics.results_shrunk.inc()
        job.topic, job.key, job.value, job.headers = self.settings.results_topic, key, value, headers
        self._send(job)

    def _send(self, job: Job) -> None:
        job.state = JobState.WRITING
        self.writer.send(job)

    def _duplicate(self, job: Job) -> None:
        job.kind = JobKind.DUPLICATE
        self.metrics.records.labels("duplicate").inc()
        log.info("worker_duplicate_skipped", trace_id=job.trace.trace_id if job.trace else None)
        self.table.finish(job)

    def _dead_letter(self, job: Job, reason: str, error: str) -> None:
        msg = job.msg
        log.warning(
            "worker_record_dead_lettered",
            reason=reason,
            topic=msg.topic,
            partition=msg.partition,
            offset=msg.offset,
            error=error[:MAX_DLQ_ERROR_CHARS],
        )
        key, key_headers = fit_key(msg.key)
        headers = [
            ("claimwatch.reason", reason.encode()),
            ("claimwatch.error", error[:MAX_DLQ_ERROR_CHARS].encode("utf-8", "replace")),
            ("claimwatch.source", f"{msg.topic}/{msg.partition}/{msg.offset}".encode()),
            *key_headers,
        ]
        value, value_headers = fit_value(msg.value, self._budget - len(key or b"") - 1_024)
        job.kind, job.topic, job.key = JobKind.DEAD_LETTER, self.settings.dead_letter_topic, key
        job.value, job.headers = value, headers + value_headers
        job.result = job.error = None
        self.metrics.dead_letters.labels(reason).inc()
        self._send(job)

    def _durable(self, job: Job, out: list[Durable]) -> None:
        """The job's write was acknowledged (or it needed none): report a result, free its offset.

        A result acknowledged after its partition was given up is reported too (it is on the results topic, so the
        next owner's dedupe window skips its replay); only its offset is left to the next owner.
        """
        if job.kind is JobKind.RESULT and job.result is not None and job.trace is not None:
            self.dedupe.add(job.result.record_key)
            out.append(Durable(job.result, job.trace, job.admitted))
        elif job.kind is JobKind.DEAD_LETTER:
            self.metrics.records.labels("dead_lettered").inc()
        if job.abandoned:
            job.state = JobState.DONE
            return
        self.table.finish(job)
        for f in self.table.unlead(job) or ():
            if not f.abandoned:
                self._duplicate(f)

    # -- given up ----------------------------------------------------------------------------
    def abandon(self, job: Job) -> None:
        """Give the record up uncommitted (stop, revoke, fatal): the next owner replays it."""
        if job.abandoned or job.state is JobState.DONE:
            return
        job.abandoned = True
        if job.state is JobState.JUDGING and job.kind is JobKind.RESULT:
            self.table.judging -= 1
        self.metrics.records.labels("abandoned").inc()
        self.table.discard(job)
        for f in self.table.unlead(job) or ():  # a follower on a partition we still own becomes the leader
            if not f.abandoned and self.table.owns(f.tp) and self.halt.error is None and not self.stopping.is_set():
                self._dispatch(f)
            else:
                self.abandon(f)

    def forget(self, tp: Any) -> None:
        """Give up partition ``tp``'s records and offsets (revoked, or re-delivered from an offset we passed)."""
        for job in self.table.jobs(tp):
            self.abandon(job)
        self.table.drop(tp)

    def abandon_all(self) -> None:
        for job in self.table.all_jobs():
            self.abandon(job)
        self.table.clear()
