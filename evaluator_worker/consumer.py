"""The consumer-group loop: poll, evaluate, record, commit.

Per poll batch, for each record, in order:

1. decode + validate the ``RagTrace`` (undecodable -> dead-letter topic with the
   reason in headers; the worker goes on);
2. skip it if its trace id is in the dedupe window (a replay);
3. evaluate with the judge, add to metrics, write the result to the results topic;

then flush the producer (results and dead letters acknowledged) and commit the
batch's offsets. So offsets are committed only after results are recorded
(at-least-once). A replay after a crash is recognised by the dedupe window,
which on every partition assignment is seeded from the tail of the results
topic: a record whose result is durable is not counted again by the worker
that takes over.

SIGTERM (``stop()``) lets the current record finish, flushes, commits and
leaves the group, so the partitions move to the other workers at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from collector.errors import ConfigError, RecordDecodeError
from collector.logs import get_logger
from collector.record import RagTrace
from evaluator_worker.config import WorkerSettings
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import DedupeWindow, KafkaResults

log = get_logger(__name__)

MAX_DLQ_ERROR_CHARS = 500
#: dead-letter values above this (Kafka's default 1 MB request limit) are replaced by b"" + an original_bytes header
MAX_DLQ_VALUE_BYTES = 900_000


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
    # results and dead letters: durable (acks=all) before offsets are committed. The worker flushes at
    # the end of every poll batch, so a long linger only batches sends (fewer sender wake-ups), it
    # adds no latency.
    return KafkaProducer(
        acks="all", linger_ms=200, batch_size=256 * 1024, retries=5, compression_type="gzip",
        **settings.kafka.client_kwargs(),
    )


def read_result_keys(
    settings: WorkerSettings, partitions: list[int] | None, limit: int, timeout_s: float = 5.0, source_partitions: int | None = None
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


class _Rebalance(ConsumerRebalanceListener):
    def __init__(self, worker: "Worker") -> None:
        self.worker = worker

    def on_partitions_revoked(self, revoked):
        log.info("partitions revoked", partitions=sorted(tp.partition for tp in revoked))

    def on_partitions_assigned(self, assigned):
        log.info("partitions assigned", partitions=sorted(tp.partition for tp in assigned))
        self.worker._seed_dedupe([tp.partition for tp in assigned])


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

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish the current record, commit and leave (SIGTERM handler)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _ensure_clients(self) -> None:
        if self._producer is None:
            self._producer = make_producer(self.settings)
        if self._consumer is None:
            self._consumer = make_consumer(self.settings)
            self._consumer.subscribe([self.settings.topic], listener=_Rebalance(self))
        self._results = KafkaResults(self._producer, self.settings.results_topic) if self.settings.results_topic else None

    def _seed_dedupe(self, partitions: list[int]) -> None:
        try:
            if self._seed is not None:
                keys = self._seed(partitions)
            else:
                source = self._consumer.partitions_for_topic(self.settings.topic) if self._consumer is not None else None
                keys = read_result_keys(
                    self.settings, partitions, self.settings.dedupe_seed_records, source_partitions=len(source or ()) or None
                )
            self.dedupe.update(keys)
            log.info("dedupe window seeded from results topic", ids=len(keys))
        except Exception as exc:  # never block the assignment on this
            log.warning("could not seed dedupe window", error=str(exc)[:300])

    def run(self, *, max_records: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()`` (or ``max_records`` processed, or idle for ``idle_timeout_s``)."""
        self._ensure_clients()
        if self.metrics:
            self.metrics.up.set(1)
        idle_since = self._clock()
        try:
            while not self._stop.is_set():
                batch = self._consumer.poll(
                    timeout_ms=self.settings.consumer.poll_timeout_ms,
                    max_records=self.settings.consumer.max_poll_records,
                )
                if batch:
                    self._handle_batch(batch)
                    idle_since = self._clock()
                elif idle_timeout_s is not None and self._clock() - idle_since > idle_timeout_s:
                    break
                self._update_lag()
                if max_records is not None and self.processed >= max_records:
                    break
        finally:
            self.close()
        return self.processed

    def close(self) -> None:
        if self.metrics:
            self.metrics.up.set(0)
        try:
            if self._producer is not None:
                self._producer.flush(timeout=10)
        except Exception as exc:
            log.warning("flush on close failed", error=str(exc)[:300])
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception as exc:
                log.warning("consumer close failed", error=str(exc)[:300])
            self._consumer = None
        if self._producer is not None:
            try:
                self._producer.close(timeout=5)
            except Exception:
                pass
            self._producer = None

    # -- records -------------------------------------------------------------
    def _handle_batch(self, batch: dict) -> None:
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        stopped_early = False
        for tp, messages in batch.items():
            for msg in messages:
                if self._stop.is_set() and offsets:
                    # hand the rest back: not committed, the next owner takes it
                    stopped_early = True
                    break
                self._handle(msg)
                offsets[tp] = OffsetAndMetadata(msg.offset + 1, None, -1)
            if stopped_early:
                break
        self._producer.flush(timeout=30)
        if offsets:
            self._consumer.commit(offsets)
        if stopped_early:
            # rewind the partitions whose records we handed back, in case we keep the assignment
            for tp, messages in batch.items():
                if tp in offsets:
                    self._consumer.seek(tp, offsets[tp].offset)
                elif messages:
                    self._consumer.seek(tp, messages[0].offset)

    def _handle(self, msg) -> None:
        start = time.perf_counter()
        m = self.metrics
        try:
            if msg.value is None:
                raise RecordDecodeError("record has no value", reason="empty")
            if len(msg.value) > self.settings.max_record_bytes:
                raise RecordDecodeError(
                    f"record of {len(msg.value)} bytes is over max_record_bytes={self.settings.max_record_bytes}",
                    reason="oversized",
                )
            trace = RagTrace.from_json_bytes(msg.value)
        except RecordDecodeError as exc:
            self._dead_letter(msg, exc.reason, str(exc))
            return
        if trace.trace_id in self.dedupe:
            if m:
                m.records.labels("duplicate").inc()
            log.info("duplicate record skipped", trace_id=trace.trace_id)
            return
        try:
            result = self.evaluator.evaluate(trace)
        except ConfigError:
            raise  # misconfiguration (no key, no model): stop without committing, don't dead-letter everything
        except Exception as exc:  # a judge bug must not kill the worker or lose the record
            log.exception("evaluation crashed; record dead-lettered", trace_id=trace.trace_id)
            self._dead_letter(msg, "evaluation_error", repr(exc))
            return
        self.evaluator.record(result)
        if self._results is not None:
            self._results.write(result)
        if self.exporter is not None:
            self.exporter.export(result, trace)
        self.dedupe.add(trace.trace_id)
        self.processed += 1
        if m:
            m.records.labels("processed").inc()
            m.evaluation_duration.observe(time.perf_counter() - start)
        if self.on_result is not None:
            self.on_result(result)

    def _dead_letter(self, msg, reason: str, error: str) -> None:
        log.warning("record dead-lettered", reason=reason, topic=msg.topic, partition=msg.partition, offset=msg.offset,
                    error=error[:MAX_DLQ_ERROR_CHARS])
        headers = [
            ("claimwatch.reason", reason.encode()),
            ("claimwatch.error", error[:MAX_DLQ_ERROR_CHARS].encode("utf-8", "replace")),
            ("claimwatch.source", f"{msg.topic}/{msg.partition}/{msg.offset}".encode()),
        ]
        value = msg.value or b""
        if len(value) > MAX_DLQ_VALUE_BYTES:  # would not fit a default produce request: keep the headers only
            headers.append(("claimwatch.original_bytes", str(len(value)).encode()))
            value = b""
        self._producer.send(self.settings.dead_letter_topic, key=msg.key, value=value, headers=headers)
        if self.metrics:
            self.metrics.records.labels("dead_lettered").inc()
            self.metrics.dead_letters.labels(reason).inc()

    def _update_lag(self) -> None:
        if self.metrics is None:
            return
        now = self._clock()
        if now - self._last_lag < self._lag_interval_s:
            return
        self._last_lag = now
        try:
            assigned = list(self._consumer.assignment())
            if not assigned:
                self.metrics.consumer_lag.labels(self.settings.topic).set(0)
                return
            ends = self._consumer.end_offsets(assigned)
            lag = 0
            for tp in assigned:
                pos = self._consumer.position(tp)
                lag += max(0, ends.get(tp, pos) - pos)
            self.metrics.consumer_lag.labels(self.settings.topic).set(lag)
        except Exception as exc:
            log.debug("lag update failed", error=str(exc)[:200])
