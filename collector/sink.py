"""Kafka sink: a bounded queue drained by one background thread into kafka-python.

- ``submit(record)`` never blocks: it serialises the record (key = trace id,
  value = ``RagTrace`` JSON) and puts it on the queue, or drops it
  (``queue_full``) and returns False.
- The ``KafkaProducer`` is created lazily *in the background thread* through
  ``producer_factory``. A broker that is down at start therefore never blocks
  or crashes the app: creation is retried with exponential backoff (0.2 s to
  10 s) while the queue fills and further records are dropped and counted.
- ``send()`` timing out on topic metadata (``KafkaTimeoutError``: the record
  never reached the producer's buffer) is retried for the same record, up to
  ``send_attempts`` offers with backoff; the queue behind it waits (and fills,
  counted) meanwhile. Other produce failures, and the last timeout, are counted
  by error class (``produce_errors_total``) and as
  ``dropped_total{reason="produce_error"}`` with a rate-limited log line;
  ``send -> ack`` latency goes to ``produce_latency_seconds``.
- ``force_flush(timeout_s)`` / ``shutdown(timeout_s)`` deliver what is queued
  within the timeout; ``shutdown`` counts what is left as ``sink_shutdown``.
- ``reset_after_fork()`` gives a forked child its own queue, thread and producer.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Protocol

from collector.background import BackgroundLoop
from collector.config import CollectorSettings
from collector.metrics import CollectorMetrics, get_metrics
from contract.backoff import Backoff
from contract.logs import get_logger
from contract.ratelog import RateLimitedLog
from contract.record import RagTrace

log = get_logger(__name__)

ProducerFactory = Callable[..., Any]
#: producers inherited from a parent process: never closed in the child (their
#: sockets belong to the parent), only kept referenced so ``__del__`` never runs.
_FORK_ORPHANS: list[Any] = []
#: producer creation and metadata waits: 0.2 s doubling to 10 s (no jitter: one process, one thread)
_BACKOFF = Backoff(0.2, 10.0, jitter=False)


class Sink(Protocol):
    """What the processor needs from a sink."""

    def submit(self, record: RagTrace) -> bool: ...

    def force_flush(self, timeout_s: float) -> bool: ...

    def shutdown(self, timeout_s: float) -> bool: ...


def kafka_producer_factory(**config: Any) -> Any:
    """The default factory: a real ``kafka.KafkaProducer``."""
    from kafka import KafkaProducer

    return KafkaProducer(**config)


def producer_config(settings: CollectorSettings) -> dict[str, Any]:
    """kafka-python producer keyword arguments from settings (TLS/SASL passed through)."""
    acks: Any = settings.acks if settings.acks == "all" else int(settings.acks)
    cfg = settings.kafka.client_kwargs()
    cfg.update(
        acks=acks,
        compression_type=settings.compression_type or None,
        linger_ms=settings.linger_ms,
        retries=settings.retries,
        max_block_ms=settings.max_block_ms,
        max_request_size=max(1_048_576, settings.max_record_bytes + 64_000),
        # kafka-python's idempotent producer (its default) stops sending for good after one
        # non-retriable reply (e.g. TOPIC_AUTHORIZATION_FAILED while an ACL is being fixed), a
        # sequence gap after retries run out, or a batch expiring in a long broker stall: the
        # collector must recover once the broker does (tests/integration/test_faults.py)
        enable_idempotence=False,
    )
    return cfg


class MemorySink:
    """A sink that keeps records in memory (tests, benchmarks, dry runs): the ``Sink`` protocol."""

    def __init__(self) -> None:
        self.records: list[RagTrace] = []

    def submit(self, record: RagTrace) -> bool:
        self.records.append(record)
        return True

    def force_flush(self, timeout_s: float | None = None) -> bool:
        return True

    def shutdown(self, timeout_s: float | None = None) -> bool:
        return True


class KafkaSink:
    """Bounded queue + producer thread. Thread-safe ``submit``; never raises into the caller."""

    def __init__(
        self,
        settings: CollectorSettings | None = None,
        *,
        producer_factory: ProducerFactory | None = None,
        metrics: CollectorMetrics | None = None,
        start: bool = True,
    ) -> None:
        self.settings = settings or CollectorSettings()
        self.topic = self.settings.topic
        self._factory = producer_factory or kafka_producer_factory
        self.metrics = metrics or get_metrics()
        self._ratelog = RateLimitedLog(logger=__name__)
        self._init_state()
        if start:
            self.start()

    def _init_state(self) -> None:
        self._queue: "queue.Queue[tuple[bytes, bytes]]" = queue.Queue(maxsize=max(1, self.settings.queue_size))
        self._cond = threading.Condition()
        self._submitted = 0
        self._done = 0
        self._queued_bytes = 0
        self._closed = False
        self._producer: Any = None
        self._producer_ready = threading.Event()
        self._loop = BackgroundLoop(
            "claimwatch-kafka-sink", self._step, interval_s=0.0, on_error=self._internal_error, error_pause_s=0.1
        )
        #: records lost to an error Kafka calls retriable (a broker down, a timeout): a reader of the source can
        #: produce them again (the bridge re-reads its uncommitted messages); records lost for good are not counted
        self.retriable_failures = 0
        self._create_failures = 0
        self._connect_attempt = 0  # failed producer creations in a row (the backoff's attempt)

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        """Start the background thread (idempotent)."""
        self._loop.start()

    def reset_after_fork(self) -> None:
        """In a forked child: forget the parent's queue and producer, start a fresh thread."""
        if self._producer is not None:
            _FORK_ORPHANS.append(self._producer)
        was_started = self._loop.thread is not None
        self._producer = None
        self._loop.stop(timeout_s=1.0)  # only matters when called without a real fork (tests)
        self._init_state()
        if was_started:
            self.start()

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def connected(self) -> bool:
        """Whether a producer has been created."""
        return self._producer_ready.is_set()

    # -- producer side -----------------------------------------------------
    def submit(self, record: RagTrace) -> bool:
        """Queue one record for Kafka; False (counted, logged once a minute) when full or shut down. Never blocks."""
        if self._closed:
            self._drop("sink_shutdown")
            return False
        try:
            item = (record.key, record.to_json_bytes())
        except Exception:  # pragma: no cover - pydantic models serialise
            self._drop("serialise_error")
            return False
        size = len(item[0]) + len(item[1])
        with self._cond:
            if self._queued_bytes + size > self.settings.queue_max_bytes and self._queued_bytes > 0:
                full: str | None = "queue_bytes_full"
            else:
                try:
                    self._queue.put_nowait(item)
                    full = None
                except queue.Full:
                    full = "queue_full"
            if full is None:
                self._submitted += 1
                self._queued_bytes += size
        if full is not None:
            self._drop(full)
            return False
        self.metrics.queue_depth.labels(queue="sink").set(self._queue.qsize())
        return True

    def _drop(self, reason: str) -> None:
        """A record not queued: counted by reason, logged at most once a minute per reason with what to do."""
        self.metrics.drop(reason)
        self._ratelog.warn(
            f"dropped_{reason}", "collector_dropped", reason=reason, hint=_DROP_HINTS[reason], topic=self.topic
        )

    def force_flush(self, timeout_s: float | None = None) -> bool:
        """Send everything submitted so far and wait for acks, within ``timeout_s``."""
        timeout_s = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            target = self._submitted
            if target == self._done and self._producer is None:
                return True
            if not self._loop.alive:
                return target == self._done
            drained = self._cond.wait_for(lambda: self._done >= target, timeout=max(0.0, deadline - time.monotonic()))
        if not drained or self._producer is None:
            return False
        try:
            self._producer.flush(timeout=max(0.0, deadline - time.monotonic()))
            return True
        except Exception as exc:
            log.warning("collector_flush_timeout", error=type(exc).__name__)
            return False

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Flush within ``timeout_s``, stop the thread, close the producer; count what is left."""
        timeout_s = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + max(0.0, timeout_s)
        ok = self.force_flush(timeout_s)
        self._closed = True
        self._loop.stop(timeout_s=max(0.05, min(2.0, deadline - time.monotonic())))
        left = 0
        while True:
            try:
                self._queue.get_nowait()
                left += 1
            except queue.Empty:
                break
        self.metrics.drop("sink_shutdown", left)
        self.metrics.queue_depth.labels(queue="sink").set(0)
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=max(0.0, min(2.0, deadline - time.monotonic())))
            except Exception as exc:  # pragma: no cover - closing is best effort
                log.warning("collector_producer_close_failed", error=type(exc).__name__)
        return ok and left == 0

    # -- background thread -------------------------------------------------
    def _ensure_producer(self) -> bool:
        if self._producer is not None:
            return True
        if self._closed:  # shut down: a step still running after shutdown() must not build a producer nobody closes
            return False
        try:
            self._producer = self._factory(**producer_config(self.settings))
        except Exception as exc:
            self._create_failures += 1
            if self._create_failures == 1:
                log.warning(
                    "collector_kafka_unavailable",
                    error=type(exc).__name__,
                    detail=str(exc)[:200],
                    bootstrap=self.settings.kafka.bootstrap_servers,
                )
            return False
        self._producer_ready.set()
        if self._create_failures:
            log.info("collector_kafka_connected", after_failures=self._create_failures)
        return True

    def _step(self) -> float:
        """Send one queued record (waiting up to 0.1 s for one); without a producer, the wait before trying again."""
        items = self._queue
        if not self._ensure_producer():
            self.metrics.queue_depth.labels(queue="sink").set(items.qsize())
            self._connect_attempt += 1
            return _BACKOFF.delay(self._connect_attempt - 1)
        self._connect_attempt = 0
        try:
            key, value = items.get(timeout=0.1)
        except queue.Empty:
            return 0.0
        try:
            self._send_with_retry(key, value)
        finally:
            with self._cond:
                self._done += 1
                self._queued_bytes -= len(key) + len(value)
                self._cond.notify_all()
            self.metrics.queue_depth.labels(queue="sink").set(items.qsize())
        return 0.0

    def _internal_error(self, exc: Exception) -> None:
        self.metrics.drop("internal")
        log.warning("collector_sink_error", error=type(exc).__name__, detail=str(exc)[:200])

    def _send_with_retry(self, key: bytes, value: bytes) -> None:
        """Offer one record to the producer, again after a backoff while ``send()`` times out on metadata."""
        for attempt in range(1, max(1, self.settings.send_attempts) + 1):
            last = attempt >= self.settings.send_attempts or self._loop.stopping
            if self._send(key, value, final=last) or last:
                return
            self._loop.wait(_BACKOFF.delay(attempt - 1))

    def _send(self, key: bytes, value: bytes, final: bool = True) -> bool:
        """Hand one record to the producer; False when a metadata timeout left it unsent and not ``final``."""
        started = time.perf_counter()
        try:
            future = self._producer.send(self.topic, key=key, value=value)
        except Exception as exc:
            if not final and _is_metadata_timeout(exc):
                self._ratelog.warn(
                    "send_metadata_timeout",
                    "collector_send_retrying",
                    error=type(exc).__name__,
                    detail=str(exc)[:200],
                    topic=self.topic,
                )
                return False
            self._failed(exc)
            return True
        latency = self.metrics.produce_latency

        def ok(_metadata: Any) -> None:
            latency.observe(time.perf_counter() - started)

        try:
            future.add_callback(ok)
            future.add_errback(self._failed)
        except AttributeError:  # a minimal fake producer returning None
            ok(None)
        return True

    def _failed(self, exc: BaseException) -> None:
        """A record lost to Kafka: counted by error class and as a produce_error drop, logged at most once a minute."""
        if _is_retriable(exc):
            with self._cond:
                self.retriable_failures += 1
        self.metrics.produce_error(type(exc).__name__)
        self._ratelog.warn(
            f"produce_failed_{type(exc).__name__}",
            "collector_produce_failed",
            error=type(exc).__name__,
            detail=str(exc)[:200],
            topic=self.topic,
        )


#: what each of the sink's drop reasons means, in its log line
_DROP_HINTS = {
    "sink_shutdown": "a record was emitted after the collector shut down",
    "serialise_error": "a record could not be serialised",
    "queue_full": "Kafka is slower than the traces come in (or down): more than CLAIMWATCH_QUEUE_SIZE records wait",
    "queue_bytes_full": "Kafka is slower than the traces come in (or down): the records waiting exceed "
    "CLAIMWATCH_QUEUE_MAX_BYTES",
}


def _is_retriable(exc: BaseException) -> bool:
    """kafka-python marks errors a later attempt may get through (``retriable``); the metadata timeout is one."""
    return bool(getattr(exc, "retriable", False)) or _is_metadata_timeout(exc)


def _is_metadata_timeout(exc: BaseException) -> bool:
    """kafka-python raises ``KafkaTimeoutError`` from ``send()`` when topic metadata did not come in max_block_ms."""
    return type(exc).__name__ == "KafkaTimeoutError"
