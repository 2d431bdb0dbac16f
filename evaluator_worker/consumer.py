"""The consumer-group loop: poll, judge many answers at once, write, commit what is durable.

One thread (the *poll loop*) owns the Kafka consumer and producer bookkeeping; judging
runs on a pool of daemon threads. The loop never waits on a judge, so group membership
does not depend on judge latency::

    poll loop (one thread)
      ├─ poll(max_records = free slots); partitions paused while max_in_flight answers are
      │  being judged or max_unacked_writes writes await acknowledgement
      ├─ decode + validate; a bad value -> dead-letter write (reason in headers)
      ├─ duplicate of a durable result (dedupe window) -> finished, no write;
      │  duplicate of an answer in flight -> waits for it
      ├─ hand the answer to the judge pool  ──▶  Evaluator.evaluate (JudgeCaller: retries,
      │                                          adaptive concurrency, rate ceilings)
      ├─ judged -> result write (shrunk to fit the request limit); every send's future is
      │  checked: a failed write is re-sent with backoff (retriable errors for
      │  write_retry_deadline_s, others write_max_attempts times), then the worker stops
      ├─ acknowledged -> metrics, dedupe window, trace export, ``on_result``
      └─ commit, per partition, the contiguous prefix of finished offsets (OffsetLedger)

Why threads for judging (not asyncio): the ``Judge`` protocol is synchronous and shared
by the batch CLI, the cascade and user judges; the SDK's sync client is thread-safe over
one pooled httpx client; a thread blocked on a socket releases the GIL and costs a few
hundred KB. Network judges (``judge.io_bound``) get ``flow.max_in_flight`` threads;
CPU-bound judges (heuristic, hybrid, nli) get ``flow.cpu_threads`` (1): more threads
would only contend for the GIL; the loop keeps a short queue (32 answers per thread) in
front of them and is woken only when it runs low, so it works in batches.

Guarantees:

- an offset is committed only when the result or dead letter of every record up to it
  was acknowledged by the broker (``acks=all``), so a committed record is never lost;
- a rebalance never kills the worker: on revoke, the revoked partitions' answers get
  ``flow.drain_timeout_s`` to finish and be committed; the rest is abandoned
  uncommitted (the next owner replays it; the dedupe window, seeded from the results
  topic on assignment, skips what already has a durable result);
- no single record ends the worker: oversized results are shrunk, oversized keys
  hashed, a judge crash dead-letters its record; a broker stall only grows the lag;
- the worker stops (non-zero exit, nothing committed past the record) only for what
  retrying cannot fix: the judge rejecting its credentials (401/403), a
  ``ConfigError``, or a write the broker keeps refusing.

SIGTERM (``stop()``): no new records; in-flight answers get ``drain_timeout_s`` to
finish; durable offsets are committed; the worker leaves the group.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import Any, Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.errors import KafkaError, KafkaTimeoutError
from kafka.net.selector import KernelEvent
from kafka.structs import OffsetAndMetadata

from contract.errors import ClaimwatchError, ConfigError, RecordDecodeError
from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.config import WorkerSettings
from evaluator_worker.errors import EvaluationAbandoned, JudgeError, WorkerFatal
from evaluator_worker.flow import AdaptiveLimiter
from evaluator_worker.metrics import trace_exemplar
from evaluator_worker.offsets import OffsetLedger
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import DedupeWindow, encode_result, fit_key, fit_value, record_budget
from evaluator_worker.scoring import AnswerResult

log = get_logger(__name__)

MAX_DLQ_ERROR_CHARS = 500
#: how long the loop blocks in poll() while answers are in flight (completions are collected between polls)
BUSY_POLL_MS = 50
#: while every slot is taken: wait this long for a completion between checks, and still poll
#: (partitions paused) at least this often to stay in the group
FULL_WAIT_S = 0.05
POLL_KEEPALIVE_S = 1.0
#: commit timeout (a stalled broker must not hold the loop for long)
COMMIT_TIMEOUT_MS = 5_000
WRITE_BACKOFF_BASE_S = 0.5
WRITE_BACKOFF_MAX_S = 30.0
WRITE_WARN_EVERY_S = 5.0
#: an unacknowledged result/dead-letter write older than this is a stall worth a log line: the
#: producer retries some broker errors (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER...) on its own until
#: delivery_timeout_ms, so without this check a stall shows only as lag
WRITE_STALL_WARN_S = 5.0
#: answers queued per thread for CPU-bound judges (their max_in_flight)
CPU_QUEUE_PER_THREAD = 32
#: lag lookups must not hold the loop when the broker stalls
LAG_TIMEOUT_MS = 1_000


def make_consumer(settings: WorkerSettings) -> KafkaConsumer:
    c = settings.consumer
    return KafkaConsumer(
        group_id=c.group_id,
        enable_auto_commit=False,
        auto_offset_reset=c.auto_offset_reset,
        session_timeout_ms=c.session_timeout_ms,
        heartbeat_interval_ms=c.heartbeat_interval_ms,
        max_poll_interval_ms=c.max_poll_interval_ms,
        max_poll_records=c.max_poll_records,
        **settings.kafka.client_kwargs(),
    )


def make_producer(settings: WorkerSettings) -> KafkaProducer:
    """Results and dead letters: ``acks=all``; the worker checks every send's future before committing.

    Idempotence is off on purpose: kafka-python's idempotent producer (its default) turns
    unusable for good after one non-retriable error (TOPIC_AUTHORIZATION_FAILED, a
    one-record MESSAGE_TOO_LARGE), after retries run out (a sequence gap the broker answers
    with OUT_OF_ORDER_SEQUENCE), or after a batch expires in a long stall (it drops its
    producer id and never asks for a new one): measured against a real broker through
    ``tests/fakes/kafka_proxy.py``. Results are keyed by trace id and the dedupe window
    absorbs a rare duplicate write; a producer that silently stops sending is worse.
    """
    f = settings.flow
    return KafkaProducer(
        acks="all",
        enable_idempotence=False,
        linger_ms=f.producer_linger_ms,
        batch_size=256 * 1024,
        compression_type="gzip",
        max_request_size=f.producer_max_request_bytes,
        max_block_ms=f.producer_max_block_ms,
        **settings.kafka.client_kwargs(),
    )


def read_result_keys(
    settings: WorkerSettings,
    partitions: list[int] | None,
    limit: int,
    timeout_s: float = 5.0,
    source_partitions: int | None = None,
) -> list[str]:
    """Trace ids of the last ``limit`` results.

    Results are keyed by trace id like the traces, so when both topics have the
    same partition count a trace's result lives on the same partition number and
    only the assigned ``partitions`` are read; otherwise every partition is.
    """
    topic = settings.results_topic
    if not topic or limit <= 0:
        return []
    reader = KafkaConsumer(enable_auto_commit=False, **settings.kafka.client_kwargs())
    try:
        available = reader.partitions_for_topic(topic)
        if not available:
            return []
        if source_partitions is not None and source_partitions != len(available):
            partitions = None
        parts = [TopicPartition(topic, p) for p in sorted(available) if partitions is None or p in partitions]
        if not parts:
            return []
        reader.assign(parts)
        ends = reader.end_offsets(parts)
        begins = reader.beginning_offsets(parts)
        per = max(1, limit // len(parts))
        todo = {}
        for tp in parts:
            start = max(begins[tp], ends[tp] - per)
            if ends[tp] > start:
                reader.seek(tp, start)
                todo[tp] = ends[tp]
        keys: list[str] = []
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            batch = reader.poll(timeout_ms=200)
            for tp, msgs in batch.items():
                for m in msgs:
                    if m.key:
                        keys.append(m.key.decode("utf-8", "replace"))
                    if m.offset + 1 >= todo.get(tp, 0):
                        todo.pop(tp, None)
        return keys
    finally:
        reader.close()


# --------------------------------------------------------------------------- one record in flight


class _Job:
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

    def __init__(self, tp: TopicPartition, msg: Any, admitted: float) -> None:
        self.tp = tp
        self.offset: int = msg.offset
        self.msg = msg
        self.trace: RagTrace | None = None
        self.kind = "result"  # result | dead_letter | duplicate
        self.state = "new"  # new | judging | writing | done
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
        self.followers: list[_Job] = []


class _ProducerErrorTap(logging.Handler):
    """Keeps the last warning kafka-python's sender logged (the broker error it retries on its own).

    Those retries never reach a send's future, so this is where the stalled-writes line finds
    the broker's word (``Got error produce response ... UnknownTopicOrPartitionError``).
    """

    LOGGER = "kafka.producer.sender"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()[:300]
        except Exception:  # a logging handler never raises into the producer's thread
            pass


class _JudgePool:
    """Daemon threads running ``fn(job)`` for queued jobs; finished jobs go to ``done``.

    Daemon threads (not ``ThreadPoolExecutor``, whose threads are joined at exit): a
    process stopping with a judge call in flight does not wait for it.
    """

    def __init__(
        self, threads: int, fn: Callable[[_Job], None], on_done: Callable[[], None] = lambda: None, wake_below: int = 0
    ) -> None:
        self.done: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._todo: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._fn = fn
        self._on_done = on_done
        self._wake_below = wake_below
        self._threads = [
            threading.Thread(target=self._run, name=f"claimwatch-judge-{i}", daemon=True) for i in range(threads)
        ]
        for t in self._threads:
            t.start()

    def submit(self, job: _Job) -> None:
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


async def _loop_sleep(seconds: float) -> None:
    """Suspend a rebalance listener on kafka-python's IO loop without blocking it (heartbeats go on).

    kafka-python 3 runs listeners on its IO thread and forbids blocking consumer calls there;
    its loop has no public sleep, so this awaits the kernel event its own ``sleep`` returns.
    """
    await KernelEvent("_sleep", seconds)


class _Rebalance(AsyncConsumerRebalanceListener):
    """Rebalance hooks, awaited on kafka-python's IO loop (see ``Worker._revoke``)."""

    def __init__(self, worker: "Worker") -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked):
        await self.worker._revoke(list(revoked), lost=False)

    async def on_partitions_lost(self, lost):
        await self.worker._revoke(list(lost), lost=True)

    async def on_partitions_assigned(self, assigned):
        log.info("worker_partitions_assigned", partitions=sorted(tp.partition for tp in assigned))
        await self.worker._assigned([tp.partition for tp in assigned])


# --------------------------------------------------------------------------- the worker


class Worker:
    """One member of the evaluator consumer group."""

    def __init__(
        self,
        settings: WorkerSettings,
        evaluator: Evaluator,
        *,
        consumer: Any = None,
        producer: Any = None,
        dedupe: DedupeWindow | None = None,
        seed_dedupe: Callable[[list[int]], list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        lag_interval_s: float = 2.0,
        exporter: Any = None,
    ) -> None:
        self.settings = settings
        self.flow = settings.flow
        self.evaluator = evaluator
        self.metrics = evaluator.metrics
        self._consumer = consumer
        self._producer = producer
        self.dedupe = dedupe or DedupeWindow(settings.dedupe_window)
        self._seed = seed_dedupe
        self._clock = clock
        self._lag_interval_s = lag_interval_s
        self._last_lag = 0.0
        self._stop = threading.Event()
        self.processed = 0
        self.on_result: Callable[[Any], None] | None = None
        #: optional evaluations-back-into-traces exporter (``export(result, trace)``, never raises)
        self.exporter = exporter
        self._budget = record_budget(self.flow.producer_max_request_bytes)
        if evaluator.io_bound and evaluator.caller.limiter is None:
            evaluator.caller.limiter = AdaptiveLimiter(
                self.flow.max_in_flight,
                min_limit=self.flow.min_concurrency,
                requests_per_minute=self.flow.requests_per_minute,
                input_tokens_per_minute=self.flow.input_tokens_per_minute,
            )
        if evaluator.io_bound:
            self._threads = self._max_in_flight = self.flow.max_in_flight
        else:  # a short queue per thread keeps the judge busy; more only lengthens drains on stop/revoke
            self._threads = self.flow.cpu_threads
            self._max_in_flight = min(self.flow.max_in_flight, self.flow.cpu_threads * CPU_QUEUE_PER_THREAD)
        self._pool: _JudgePool | None = None
        self._ledger = OffsetLedger()
        self._jobs: dict[TopicPartition, set[_Job]] = {}
        self._leaders: dict[str, _Job] = {}
        self._acks: queue.SimpleQueue[tuple[_Job, BaseException | None]] = queue.SimpleQueue()
        self._retries: deque[_Job] = deque()
        self._judging = 0
        #: writes sent and not yet acknowledged, oldest first, with when each was first sent
        self._writing: dict[_Job, float] = {}
        self._last_write_error = ""
        self._producer_errors = _ProducerErrorTap()
        self._stall_warned_at = -1e18
        self._fatal: BaseException | None = None
        self._last_commit = 0.0
        self._write_warned_at = -1e18
        self._write_failures_unlogged = 0
        self._wake = threading.Event()
        self._paused = False
        self._last_poll = 0.0
        #: guards the loop's state: the poll thread and the rebalance listener (IO thread) both use it
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Stop taking records, finish in-flight answers (``drain_timeout_s``), commit and leave (SIGTERM)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def in_flight(self) -> int:
        """Answers being judged (not abandoned)."""
        return self._judging

    def _ensure_clients(self) -> None:
        logging.getLogger(_ProducerErrorTap.LOGGER).addHandler(self._producer_errors)
        if self._producer is None:
            self._producer = make_producer(self.settings)
        if self._consumer is None:
            self._consumer = make_consumer(self.settings)
            self._consumer.subscribe([self.settings.topic], listener=_Rebalance(self))
        if self._pool is None:
            # network judges: wake the loop for every judged answer (threads mostly wait on sockets);
            # CPU-bound judges: only when their queue runs low, so the loop works in batches and the
            # judging thread is not interrupted for the GIL after every answer (measured: 20% faster)
            low = 0 if self.evaluator.io_bound else max(1, self._max_in_flight // 4)
            self._pool = _JudgePool(self._threads, self._judge, self._wake.set, wake_below=low)

    def _seed_dedupe(self, partitions: list[int]) -> None:
        try:
            if self._seed is not None:
                keys = self._seed(partitions)
            else:
                source = (
                    self._consumer.partitions_for_topic(self.settings.topic) if self._consumer is not None else None
                )
                keys = read_result_keys(
                    self.settings,
                    partitions,
                    self.settings.dedupe_seed_records,
                    source_partitions=len(source or ()) or None,
                )
            self.dedupe.update(keys)
            log.info("worker_dedupe_seeded", ids=len(keys))
        except Exception as exc:  # never block the assignment on this
            log.warning("worker_dedupe_seed_failed", error=str(exc)[:300])

    def run(self, *, max_records: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()`` (or ``max_records`` processed, or idle for ``idle_timeout_s``).

        Raises the fatal error (``JudgeError`` with ``fatal``, ``ConfigError``, ``WorkerFatal``)
        after committing what is durable and leaving the group.

        Threading: the loop's state is guarded by ``self._lock``, taken for each step and
        never held across a blocking consumer call (poll, commit, offsets), because the
        rebalance listener runs on kafka-python's IO thread and takes the same lock.
        """
        self._ensure_clients()
        self.metrics.up.set(1)
        self.metrics.set_judge(self.evaluator.judge.name)  # which judge the gate's counts come from
        lim = self.evaluator.caller.limiter
        self.metrics.watch_queues(
            lambda: self._judging,
            lambda: len(self._writing),
            (lambda: lim.limit) if lim is not None else None,
            self.oldest_unacked_write_age,
        )
        idle_since = self._clock()
        c = self.settings.consumer
        try:
            while not self._stop.is_set() and self._fatal is None:
                self._wake.clear()  # set by judged answers (see _ensure_clients) and failed writes from here on
                self._pump()
                if self._fatal is not None:
                    break
                with self._lock:
                    self._flow_control()
                    busy = self._busy()
                    free = self._max_in_flight - self._judging
                    full = self._paused
                if full and self._clock() - self._last_poll < POLL_KEEPALIVE_S:
                    # nothing to fetch for: wait for judged answers instead of blocking in poll()
                    self._wake.wait(FULL_WAIT_S)
                    continue
                if full:
                    timeout_ms = 0
                else:
                    timeout_ms = min(BUSY_POLL_MS, c.poll_timeout_ms) if busy else c.poll_timeout_ms
                batch = self._consumer.poll(timeout_ms=timeout_ms, max_records=max(1, min(c.max_poll_records, free)))
                self._last_poll = self._clock()
                now = self._clock()
                if batch:
                    with self._lock:
                        for tp, messages in batch.items():
                            for msg in messages:
                                self._admit(tp, msg, now)
                    idle_since = now
                elif busy:
                    idle_since = now
                elif idle_timeout_s is not None and now - idle_since > idle_timeout_s:
                    break
                self._update_lag()
                if max_records is not None and self.processed >= max_records:
                    break
            if self._fatal is None:
                self._drain(self.flow.drain_timeout_s)
        finally:
            self._finish_run()
        if self._fatal is not None:
            raise self._fatal
        return self.processed

    def _finish_run(self) -> None:
        """Commit what is durable, give up the rest, leave the group, close the clients."""
        try:
            self._pump(commit=False)
            self._commit()
        except Exception as exc:
            log.warning("worker_final_commit_failed", error=str(exc)[:300])
        with self._lock:
            for jobs in list(self._jobs.values()):
                for job in list(jobs):
                    self._abandon(job)
            self._jobs.clear()
        self.close()

    def close(self) -> None:
        logging.getLogger(_ProducerErrorTap.LOGGER).removeHandler(self._producer_errors)
        self.metrics.up.set(0)
        self.metrics.unwatch_queues()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            except TypeError:  # test doubles without the keyword
                self._consumer.close()
            except Exception as exc:
                log.warning("worker_consumer_close_failed", error=str(exc)[:300])
            self._consumer = None
        if self._producer is not None:
            try:
                self._producer.close(timeout=5)
            except Exception:
                pass
            self._producer = None

    # -- the loop's steps ----------------------------------------------------------
    def _busy(self) -> bool:
        return bool(self._judging or self._writing or self._retries)

    def _pump(self, commit: bool = True) -> None:
        """Collect judged answers and acknowledgements, re-send due writes, commit when it is time."""
        with self._lock:
            self._collect_judged()
            self._collect_acks()
            self._resend_due()
            self._watch_write_stall()
        if commit and self._clock() - self._last_commit >= self.flow.commit_interval_s:
            self._commit()

    def _flow_control(self) -> None:
        """Pause every assigned partition while judging or unacknowledged writes are at their bound.

        Paused partitions keep what was already fetched; while paused, the loop waits for
        completions and polls only every ``POLL_KEEPALIVE_S`` to stay in the group.
        """
        full = self._judging >= self._max_in_flight or len(self._writing) >= self.flow.max_unacked_writes
        try:
            if full:
                assigned = self._consumer.assignment()
                if assigned:
                    self._consumer.pause(*assigned)
            elif self._paused:
                paused = self._consumer.paused()
                if paused:
                    self._consumer.resume(*paused)
            self._paused = full
        except Exception as exc:  # a consumer mid-rebalance: try again next round
            log.debug("worker_pause_resume_failed", error=str(exc)[:200])

    def _drain(self, timeout_s: float) -> None:
        """On stop: run the loop's steps until every job is done or time is up.

        Keeps polling with every partition paused, so the group membership outlives a drain
        longer than ``max_poll_interval_ms``; records such a poll returns (a partition assigned
        meanwhile) are left uncommitted for the next owner.
        """
        deadline = self._clock() + timeout_s

        def pending() -> bool:
            with self._lock:
                return any(self._jobs.values())

        while pending() and self._fatal is None and self._clock() < deadline:
            self._pump()
            if not pending():
                break
            try:
                with self._lock:
                    assigned = self._consumer.assignment()
                    if assigned:
                        self._consumer.pause(*assigned)
                self._consumer.poll(timeout_ms=20, max_records=1)
            except Exception as exc:
                log.debug("worker_drain_poll_failed", error=str(exc)[:200])
                time.sleep(0.02)

    # -- records in ------------------------------------------------------------------
    def _admit(self, tp: TopicPartition, msg: Any, now: float) -> None:
        job = _Job(tp, msg, now)
        try:
            self._ledger.track(tp, msg.offset)
        except ValueError:  # a re-delivered offset after a seek we did not see: start the partition over
            self._forget_partition(tp)
            self._ledger.track(tp, msg.offset)
        self._jobs.setdefault(tp, set()).add(job)
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
        leader = self._leaders.get(key)
        if leader is not None and not leader.abandoned:
            leader.followers.append(job)  # finished when the leader's result is durable
            job.kind, job.state = "duplicate", "judging"
            return
        self._dispatch(job)

    def _dispatch(self, job: _Job) -> None:
        assert job.trace is not None and self._pool is not None
        self._leaders[job.trace.record_key] = job
        job.kind, job.state = "result", "judging"
        self._judging += 1
        self._pool.submit(job)

    def _judge(self, job: _Job) -> None:
        """On a pool thread: evaluate; the poll loop picks the job up from ``done``."""
        assert job.trace is not None
        job.result = self.evaluator.evaluate(job.trace, cancelled=lambda: job.abandoned)

    def _collect_judged(self) -> None:
        if self._pool is None:
            return
        while True:
            try:
                job = self._pool.done.get_nowait()
            except queue.Empty:
                return
            if job.abandoned or job.state != "judging":
                continue  # abandoned: already accounted for
            self._judging -= 1
            job.state = "judged"
            self._judged(job)

    def _judged(self, job: _Job) -> None:
        exc = job.error
        if exc is not None:
            if isinstance(exc, EvaluationAbandoned):
                self._abandon(job)
                return
            if isinstance(exc, ConfigError) or (isinstance(exc, JudgeError) and exc.fatal):
                # misconfiguration (no key, bad key, no model): stop without committing past this record,
                # don't dead-letter the backlog
                if self._fatal is None:
                    log.error("judge_fatal_stopping", error=str(exc)[:300])
                    self._fatal = exc
                self._abandon(job)
                return
            # a judge bug must not kill the worker or lose the record
            log.error(
                "worker_evaluation_crashed", trace_id=job.trace.trace_id if job.trace else None, error=repr(exc)[:300]
            )
            self._dead_letter(job, "evaluation_error", repr(exc))
            return
        assert job.result is not None
        if not self.settings.results_topic:
            self._durable(job)
            return
        key, value, headers, dropped = encode_result(job.result, self._budget)
        if dropped:
            log.warning(
                "worker_result_shrunk",
                trace_id=job.result.trace_id[:64],
                dropped=dropped,
                limit=self.flow.producer_max_request_bytes,
            )
            self.metrics.results_shrunk.inc()
        job.topic, job.key, job.value, job.headers = self.settings.results_topic, key, value, headers
        self._send(job)

    def _duplicate(self, job: _Job) -> None:
        job.kind = "duplicate"
        self.metrics.records.labels("duplicate").inc()
        log.info("worker_duplicate_skipped", trace_id=job.trace.trace_id if job.trace else None)
        self._done(job)

    def _dead_letter(self, job: _Job, reason: str, error: str) -> None:
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
        job.kind, job.topic, job.key = "dead_letter", self.settings.dead_letter_topic, key
        job.value, job.headers = value, headers + value_headers
        job.result = job.error = None
        self._send(job, reason=reason)

    # -- writes ----------------------------------------------------------------------
    def _send(self, job: _Job, reason: str | None = None) -> None:
        if job.kind == "dead_letter" and reason is not None:
            self.metrics.dead_letters.labels(reason).inc()
        if job.state != "writing":
            job.state = "writing"
            self._writing[job] = self._clock()
        try:
            future = self._producer.send(job.topic, key=job.key, value=job.value, headers=job.headers or None)
        except Exception as exc:  # send() itself: metadata wait past max_block_ms, buffer full, size
            self._write_failed(job, exc)
            return
        acks, wake = self._acks, self._wake

        def acked(_md: Any, j: _Job = job) -> None:
            acks.put((j, None))  # no wake-up: acknowledgements only move commits, collected every round

        def failed(e: Any, j: _Job = job) -> None:
            acks.put((j, e if isinstance(e, BaseException) else KafkaError(str(e))))
            wake.set()

        future.add_callback(acked)
        future.add_errback(failed)

    def _collect_acks(self) -> None:
        while True:
            try:
                job, exc = self._acks.get_nowait()
            except queue.Empty:
                return
            if exc is None:
                self._writing.pop(job, None)
                self._durable(job)
            else:
                self._write_failed(job, exc)

    def _write_failed(self, job: _Job, exc: BaseException) -> None:
        now = self._clock()
        name = type(exc).__name__
        retriable = isinstance(exc, KafkaTimeoutError) or bool(getattr(exc, "retriable", False))
        self.metrics.write_errors.labels("retriable" if retriable else "non_retriable").inc()
        self._last_write_error = f"{name}: {str(exc)[:200]}"
        if job.abandoned:  # its partition is gone: the next owner replays the record
            self._writing.pop(job, None)
            job.state = "done"
            return
        job.attempts += 1
        if job.first_failure is None:
            job.first_failure = now
        exhausted = (
            (now - job.first_failure > self.flow.write_retry_deadline_s)
            if retriable
            else (job.attempts >= self.flow.write_max_attempts)
        )
        where = f"{job.tp.topic}/{job.tp.partition}@{job.offset}"
        if exhausted:
            if self._fatal is not None:
                return
            self._fatal = WorkerFatal(
                f"the broker keeps refusing writes to {job.topic!r} ({name}: {str(exc)[:200]}) after {job.attempts} "
                f"attempts; stopping without committing past {where} (fix the topic's ACLs/replicas, then restart)"
            )
            log.error(
                "worker_result_write_failed_stopping",
                topic=job.topic,
                source=where,
                error=repr(exc)[:300],
                attempts=job.attempts,
            )
            return
        delay = min(WRITE_BACKOFF_MAX_S, WRITE_BACKOFF_BASE_S * 2 ** (job.attempts - 1))
        job.retry_at = now + delay
        self._retries.append(job)
        self._write_failures_unlogged += 1
        if now - self._write_warned_at >= WRITE_WARN_EVERY_S:  # one line per interval, not one per record
            log.warning(
                "worker_result_write_retrying",
                topic=job.topic,
                source=where,
                error=repr(exc)[:200],
                attempt=job.attempts,
                retry_in_s=delay,
                retriable=retriable,
                failures_since_last_warning=self._write_failures_unlogged,
            )
            self._write_warned_at = now
            self._write_failures_unlogged = 0

    def _resend_due(self) -> None:
        if not self._retries:
            return
        now = self._clock()
        due = [j for j in self._retries if j.retry_at <= now]
        if not due:
            return
        self._retries = deque(j for j in self._retries if j.retry_at > now)
        for job in due:
            if job.abandoned:
                self._writing.pop(job, None)
                job.state = "done"
                continue
            self._send(job)

    def oldest_unacked_write_age(self) -> float:
        """Seconds the oldest write still awaiting the broker's acknowledgement has waited (0: none)."""
        for sent in self._writing.values():  # insertion order: the first is the oldest
            return max(0.0, self._clock() - sent)
        return 0.0

    def _watch_write_stall(self) -> None:
        """A rate-limited warning while writes go unacknowledged, with the last error the broker gave."""
        age = self.oldest_unacked_write_age()
        now = self._clock()
        if age < WRITE_STALL_WARN_S or now - self._stall_warned_at < WRITE_WARN_EVERY_S:
            return
        self._stall_warned_at = now
        job = next(iter(self._writing))
        log.warning(
            "worker_result_writes_stalled",
            oldest_age_s=round(age, 1),
            unacked=len(self._writing),
            topic=job.topic,
            source=f"{job.tp.topic}/{job.tp.partition}@{job.offset}",
            last_error=self._last_write_error or "none the worker saw",
            producer_last_warning=self._producer_errors.last or "none",
            retrying=len(self._retries),
        )

    # -- outcomes ------------------------------------------------------------------
    def _durable(self, job: _Job) -> None:
        """The job's write was acknowledged (or it needed none): count it and free its offset."""
        if job.kind == "result" and job.result is not None:
            result = job.result
            trace = job.trace
            self.metrics.observe(result, trace_exemplar(result.trace_id, trace.root_span_id if trace else None))
            self.dedupe.add(result.record_key)
            self.processed += 1
            self.metrics.records.labels("processed").inc()
            self.metrics.evaluation_duration.observe(max(0.0, self._clock() - job.admitted))
            if self.exporter is not None and job.trace is not None:
                self.exporter.export(result, job.trace)
            if self.on_result is not None:
                try:
                    self.on_result(result)
                except Exception as exc:
                    log.warning("worker_on_result_failed", error=str(exc)[:200])
        elif job.kind == "dead_letter":
            self.metrics.records.labels("dead_lettered").inc()
        if job.abandoned:
            job.state = "done"
            return
        self._done(job)
        if job.trace is not None and self._leaders.get(job.trace.record_key) is job:
            del self._leaders[job.trace.record_key]
            for f in job.followers:
                if not f.abandoned:
                    self._duplicate(f)
            job.followers = []

    def _done(self, job: _Job) -> None:
        job.state = "done"
        self._ledger.finish(job.tp, job.offset)
        jobs = self._jobs.get(job.tp)
        if jobs is not None:
            jobs.discard(job)

    def _abandon(self, job: _Job) -> None:
        """Give the record up uncommitted (stop, revoke, fatal): the next owner replays it."""
        if job.abandoned or job.state == "done":
            return
        job.abandoned = True
        if job.state == "judging" and job.kind == "result":
            self._judging -= 1
        self.metrics.records.labels("abandoned").inc()
        jobs = self._jobs.get(job.tp)
        if jobs is not None:
            jobs.discard(job)
        if job.trace is not None and self._leaders.get(job.trace.record_key) is job:
            del self._leaders[job.trace.record_key]
            followers, job.followers = job.followers, []
            for f in followers:  # a follower on a partition we still own becomes the leader
                if not f.abandoned and f.tp in self._jobs and self._fatal is None and not self._stop.is_set():
                    self._dispatch(f)
                else:
                    self._abandon(f)

    def _forget_partition(self, tp: TopicPartition) -> None:
        for job in list(self._jobs.get(tp, ())):
            self._abandon(job)
        self._jobs.pop(tp, None)
        self._ledger.forget(tp)

    # -- commits and rebalances ---------------------------------------------------------
    def _commit(self) -> bool:
        """Commit the durable prefixes (poll thread; never under the lock: commit() blocks on the IO loop)."""
        self._last_commit = self._clock()
        with self._lock:
            offsets = self._ledger.to_commit()
        if not offsets or self._consumer is None:
            return True
        try:
            self._consumer.commit(
                {tp: OffsetAndMetadata(o, None, -1) for tp, o in offsets.items()}, timeout_ms=COMMIT_TIMEOUT_MS
            )
        except (KafkaError, ClaimwatchError, AssertionError) as exc:
            # CommitFailedError (the group moved on: the rebalance listener takes it from here),
            # KafkaTimeoutError (stalled broker): nothing is lost, the next commit carries the same offsets
            self._commit_failed(exc)
            return False
        except TypeError:  # test doubles without timeout_ms
            self._consumer.commit({tp: OffsetAndMetadata(o, None, -1) for tp, o in offsets.items()})
        with self._lock:
            self._ledger.committed(offsets)
        return True

    def _commit_failed(self, exc: BaseException) -> None:
        log.warning("worker_commit_failed", error=repr(exc)[:300])
        self.metrics.commit_failures.inc()

    async def _revoke(self, revoked: list[TopicPartition], *, lost: bool) -> None:
        """Finish (or give up) the revoked partitions' answers, on kafka-python's IO loop.

        Revoked: the answers of those partitions get ``drain_timeout_s`` (at most half of
        ``max_poll_interval_ms``, the time the group waits for this member) to be judged and
        written; their durable prefix is committed; the rest is abandoned uncommitted and
        replayed by the next owner. Lost (the session expired): nothing can be committed, all
        is abandoned at once.
        """
        parts = set(revoked)
        started = self._clock()
        with self._lock:
            busy = sum(len(self._jobs.get(tp, ())) for tp in parts)
        if not lost and busy:
            deadline = started + min(self.flow.drain_timeout_s, self.settings.consumer.max_poll_interval_ms / 2000.0)
            while True:
                self._pump(commit=False)
                with self._lock:
                    pending = any(self._jobs.get(tp) for tp in parts)
                if not pending or self._fatal is not None or self._clock() >= deadline:
                    break
                await _loop_sleep(0.02)
        if not lost and self._consumer is not None:
            with self._lock:
                offsets = {tp: o for tp, o in self._ledger.to_commit().items() if tp in parts}
            if offsets:
                try:
                    await self._consumer.commit_async({tp: OffsetAndMetadata(o, None, -1) for tp, o in offsets.items()})
                    with self._lock:
                        self._ledger.committed(offsets)
                except Exception as exc:
                    self._commit_failed(exc)
        with self._lock:
            left = sum(len(self._jobs.get(tp, ())) for tp in parts)
            for tp in parts:
                self._forget_partition(tp)
        took = self._clock() - started
        if busy:
            self.metrics.rebalance_drain.observe(took)
        log.info(
            "worker_partitions_lost" if lost else "worker_partitions_revoked",
            partitions=sorted(tp.partition for tp in parts),
            in_flight=busy,
            abandoned=left,
            drain_s=round(took, 3),
        )

    async def _assigned(self, partitions: list[int]) -> None:
        """Seed the dedupe window from the results topic on a helper thread (this runs on the IO loop)."""
        done = threading.Event()

        def seed() -> None:
            try:
                self._seed_dedupe(partitions)
            finally:
                done.set()

        threading.Thread(target=seed, name="claimwatch-dedupe-seed", daemon=True).start()
        deadline = self._clock() + 10.0
        while not done.is_set() and self._clock() < deadline:
            await _loop_sleep(0.02)

    # -- lag -------------------------------------------------------------------------
    def _update_lag(self) -> None:
        """Lag is computed here, on the poll thread, because the consumer is not thread-safe (not at scrape time)."""
        now = self._clock()
        if now - self._last_lag < self._lag_interval_s:
            return
        self._last_lag = now
        try:
            assigned = list(self._consumer.assignment())
            if not assigned:
                self.metrics.consumer_lag.labels(self.settings.topic).set(0)
                return
            ends = self._consumer.end_offsets(assigned, timeout_ms=LAG_TIMEOUT_MS)
            lag = 0
            for tp in assigned:
                # fetch position plus the records handed out and not finished (added below)
                pos = self._consumer.position(tp, timeout_ms=LAG_TIMEOUT_MS)
                lag += max(0, ends.get(tp, pos) - pos)
            with self._lock:
                lag += self._ledger.unfinished()
            self.metrics.consumer_lag.labels(self.settings.topic).set(lag)
        except Exception as exc:
            log.debug("worker_lag_update_failed", error=str(exc)[:200])

    # -- one record, synchronously (tests, tools) ------------------------------------------
    def handle_now(self, msg: Any) -> None:
        """Take one record through the whole path on this thread (decode, judge, write, ack).

        For unit tests and tools that feed records without a consumer group; raises the fatal
        error if the record hit one.
        """
        if self._pool is None:
            self._pool = _JudgePool(1, self._judge)
        tp = TopicPartition(msg.topic, msg.partition)
        self._ledger.forget(tp)
        self._admit(tp, msg, self._clock())
        while self._busy() and self._fatal is None:
            self._collect_judged()
            self._collect_acks()
            self._resend_due()
            if self._busy():
                time.sleep(0.0005)
        self._jobs.pop(tp, None)
        if self._fatal is not None:
            fatal, self._fatal = self._fatal, None
            raise fatal
