"""Result and dead-letter writes: send, collect acknowledgements, re-send failures, say when writes stall.

Every send's future is checked: an acknowledged write makes its record durable (its offset may
be committed); a failed write is re-sent with the project's backoff schedule (``contract.backoff``,
no jitter: 0.5 s doubling to 30 s), retriable errors for ``write_retry_deadline_s``, others
``write_max_attempts`` times, then the worker stops without committing past the record. Retry
episodes are logged at most every ``WRITE_WARN_EVERY_S``; a write unacknowledged for longer than
``WRITE_STALL_WARN_S`` (the producer retries some broker errors on its own, which never reach a
future) gets a ``worker_result_writes_stalled`` line with the last broker error the producer logged.

Owned by the poll loop (under the worker's lock); the future callbacks run on the producer's IO
thread and only put onto the acknowledgement queue. The writer knows writes, not records: what it
sends is any :class:`Write` (the in-flight table's ``Job``); :meth:`ResultWriter.collect` returns the
acknowledged ones and a write the broker keeps refusing is kept in :attr:`ResultWriter.fatal`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import Any, Callable, Protocol

from kafka import KafkaProducer
from kafka.errors import KafkaError, KafkaTimeoutError

from contract.backoff import Backoff
from contract.logs import get_logger
from evaluator_worker.config import FlowSettings, WorkerSettings
from evaluator_worker.errors import WorkerFatal
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.seams import Producer

log = get_logger(__name__)

WRITE_BACKOFF = Backoff(base_s=0.5, max_s=30.0, jitter=False)
WRITE_WARN_EVERY_S = 5.0
#: an unacknowledged result/dead-letter write older than this is a stall worth a log line: the
#: producer retries some broker errors (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER...) on its own until
#: delivery_timeout_ms, so without this check a stall shows only as lag
WRITE_STALL_WARN_S = 5.0


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


class Write(Protocol):
    """One result or dead-letter write: where it goes, what it carries, its retry bookkeeping (kept by the writer)."""

    topic: str
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]
    abandoned: bool
    attempts: int
    first_failure: float | None
    retry_at: float

    @property
    def where(self) -> str:
        """The source record, for log lines."""


class ProducerErrorTap(logging.Handler):
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

    def attach(self) -> None:
        logging.getLogger(self.LOGGER).addHandler(self)

    def detach(self) -> None:
        logging.getLogger(self.LOGGER).removeHandler(self)


class ResultWriter:
    """The producer's bookkeeping: writes in flight (oldest first), acknowledgements, re-sends, stall warnings."""

    def __init__(
        self,
        *,
        flow: FlowSettings,
        metrics: WorkerMetrics,
        make_producer: Callable[[], Producer],
        producer: Producer | None = None,
        clock: Callable[[], float] = time.monotonic,
        wake: threading.Event | None = None,
    ) -> None:
        self.producer = producer
        self.tap = ProducerErrorTap()
        #: the first write the broker kept refusing: the worker stops without committing past it
        self.fatal: WorkerFatal | None = None
        self._make_producer = make_producer
        self._flow = flow
        self._metrics = metrics
        self._clock = clock
        self._wake = wake or threading.Event()
        self._acks: queue.SimpleQueue[tuple[Write, BaseException | None]] = queue.SimpleQueue()
        self._retries: deque[Write] = deque()
        #: writes sent and not yet acknowledged, oldest first, with when each was first sent
        self._writing: dict[Write, float] = {}
        self._last_error = ""
        self._stall_warned_at = -1e18
        self._warned_at = -1e18
        self._failures_unlogged = 0

    def open(self) -> Producer:
        """The producer (built on first use), and the tap on its logger."""
        self.tap.attach()
        if self.producer is None:
            self.producer = self._make_producer()
        return self.producer

    @property
    def unacked(self) -> int:
        return len(self._writing)

    def busy(self) -> bool:
        return bool(self._writing or self._retries)

    def send(self, job: Write) -> None:
        assert self.producer is not None
        if job not in self._writing:
            self._writing[job] = self._clock()
        try:
            future = self.producer.send(job.topic, key=job.key, value=job.value, headers=job.headers or None)
        except Exception as exc:  # send() itself: metadata wait past max_block_ms, buffer full, size
            self._failed(job, exc)
            return
        acks, wake = self._acks, self._wake

        def acked(_md: Any, j: Write = job) -> None:
            acks.put((j, None))  # no wake-up: acknowledgements only move commits, collected every round

        def failed(e: Any, j: Write = job) -> None:
            acks.put((j, e if isinstance(e, BaseException) else KafkaError(str(e))))
            wake.set()

        future.add_callback(acked)
        future.add_errback(failed)

    def collect(self) -> list[Write]:
        """The writes the broker acknowledged since the last call; failed ones are scheduled for a re-send."""
        acked: list[Write] = []
        while True:
            try:
                job, exc = self._acks.get_nowait()
            except queue.Empty:
                return acked
            if exc is None:
                self._writing.pop(job, None)
                acked.append(job)
            else:
                self._failed(job, exc)

    def _give_up(self, job: Write) -> None:
        """Its partition is gone: the next owner replays the record."""
        self._writing.pop(job, None)

    def _failed(self, job: Write, exc: BaseException) -> None:
        now = self._clock()
        name = type(exc).__name__
        retriable = isinstance(exc, KafkaTimeoutError) or bool(getattr(exc, "retriable", False))
        self._metrics.write_errors.labels("retriable" if retriable else "non_retriable").inc()
        self._last_error = f"{name}: {str(exc)[:200]}"
        if job.abandoned:
            self._give_up(job)
            return
        job.attempts += 1
        if job.first_failure is None:
            job.first_failure = now
        exhausted = (
            (now - job.first_failure > self._flow.write_retry_deadline_s)
            if retriable
            else (job.attempts >= self._flow.write_max_attempts)
        )
        if exhausted:
            fatal = WorkerFatal(
                f"the broker keeps refusing writes to {job.topic!r} ({name}: {str(exc)[:200]}) after {job.attempts} "
                f"attempts; stopping without committing past {job.where} (fix the topic's ACLs/replicas, then restart)"
            )
            if self.fatal is None:
                self.fatal = fatal
                log.error(
                    "worker_result_write_failed_stopping",
                    topic=job.topic,
                    source=job.where,
                    error=repr(exc)[:300],
                    attempts=job.attempts,
                )
            return
        delay = WRITE_BACKOFF.delay(job.attempts - 1)
        job.retry_at = now + delay
        self._retries.append(job)
        self._failures_unlogged += 1
        if now - self._warned_at >= WRITE_WARN_EVERY_S:  # one line per interval, not one per record
            log.warning(
                "worker_result_write_retrying",
                topic=job.topic,
                source=job.where,
                error=repr(exc)[:200],
                attempt=job.attempts,
                retry_in_s=delay,
                retriable=retriable,
                failures_since_last_warning=self._failures_unlogged,
            )
            self._warned_at = now
            self._failures_unlogged = 0

    def resend_due(self) -> None:
        if not self._retries:
            return
        now = self._clock()
        due = [j for j in self._retries if j.retry_at <= now]
        if not due:
            return
        self._retries = deque(j for j in self._retries if j.retry_at > now)
        for job in due:
            if job.abandoned:
                self._give_up(job)
                continue
            self.send(job)

    def oldest_age(self) -> float:
        """Seconds the oldest write still awaiting the broker's acknowledgement has waited (0: none)."""
        for sent in self._writing.values():  # insertion order: the first is the oldest
            return max(0.0, self._clock() - sent)
        return 0.0

    def watch_stall(self) -> None:
        """A rate-limited warning while writes go unacknowledged, with the last error the broker gave."""
        age = self.oldest_age()
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
            source=job.where,
            last_error=self._last_error or "none the worker saw",
            producer_last_warning=self.tap.last or "none",
            retrying=len(self._retries),
        )

    def close(self) -> None:
        self.tap.detach()
        if self.producer is not None:
            try:
                self.producer.close(timeout=5)
            except Exception:
                pass
            self.producer = None
