"""``claimwatch bridge``: OpenTelemetry Collector Kafka topic -> ``RagTrace`` records.

For teams that already run an OpenTelemetry Collector: its ``kafka`` exporter
writes each span batch as one Kafka message (``encoding: otlp_proto``: the
value is a serialized ``ExportTraceServiceRequest``; ``otlp_json`` also works)
to ``otlp_spans``. The bridge consumes that topic in a consumer group,
assembles traces that arrive batch by batch with the same
:class:`~collector.pipeline.TracePipeline` as the in-app processor (assembler,
sampler, redactor, limits) and produces ``RagTrace`` records to
``claimwatch.traces`` through the same ``KafkaSink``.

Set ``partition_traces_by_id: true`` on the exporter (see
``deploy/otel-collector/config.yaml``): every span of a trace then lands on one
partition, so one bridge instance sees the whole trace. Without it, spans of a
trace are spread over partitions and, with several bridge instances, a trace
may be assembled in pieces (each missing some spans).

Offsets (at-least-once, "commit after produce"): a message's offset is
committed only once every trace it carried has left the assembler (emitted,
sampled out, not RAG, or evicted by the TTL) *and* the sink has flushed the
produced records to Kafka. A message holding a span of a trace whose root has
not arrived yet keeps its partition's committed offset from moving past it, so
after a crash or a rebalance the next owner re-reads it and re-assembles the
trace. The price is an occasional duplicate record (the worker's dedupe window
drops it). While the sink's queue is full (the output cluster is slow or
down) the bridge pauses its partitions instead of dropping records. On a rebalance the bridge emits what is complete, flushes, commits
and forgets its open traces, which the new owner rebuilds from the uncommitted
messages.

Metrics (registry of the process): the collector's ``claimwatch_collector_*``
pipeline metrics plus ``claimwatch_collector_otlp_requests_total{source="kafka",code}``
(``ok`` / ``decode_error`` per message) and ``claimwatch_collector_otlp_spans_total{source="kafka",...}``.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable

from kafka import KafkaConsumer, TopicPartition
from prometheus_client import CollectorRegistry
from pydantic_settings import BaseSettings, SettingsConfigDict

from collector import otlp
from collector.config import CollectorSettings
from collector.pipeline import OtlpIngest
from collector.sink import ProducerFactory
from contract.group import GroupListener, commit_offsets, off_loop
from contract.logs import get_logger
from contract.offsets import OffsetLedger

log = get_logger("claimwatch.bridge")

SOURCE = "kafka"


class BridgeSettings(BaseSettings):
    """Bridge settings (env: ``CLAIMWATCH_BRIDGE_*``); Kafka, output topic, sampling from ``CollectorSettings``."""

    model_config = SettingsConfigDict(env_prefix="CLAIMWATCH_BRIDGE_", extra="ignore", env_ignore_empty=True)

    #: the Collector kafkaexporter's traces topic
    source_topic: str = "otlp_spans"
    #: kafkaexporter ``encoding``: otlp_proto (default) or otlp_json
    encoding: str = "otlp_proto"
    group_id: str = "claimwatch-otlp-bridge"
    auto_offset_reset: str = "earliest"
    session_timeout_ms: int = 6_000
    heartbeat_interval_ms: int = 1_000
    max_poll_interval_ms: int = 60_000
    max_poll_records: int = 500
    poll_timeout_ms: int = 200
    #: how often offsets are committed (each commit first flushes the producer)
    commit_interval_s: float = 1.0
    #: spans past this many in one message are rejected (counted as too_many_spans) without being converted,
    #: as the receiver does per request: one oversized export cannot balloon the bridge's memory
    max_spans_per_message: int = 10_000


class OffsetTracker:
    """Which offsets are safe to commit: those of messages whose traces all left the assembler.

    The commit rule is the worker's (:class:`contract.offsets.OffsetLedger`: one past the contiguous prefix
    of finished messages); a message is finished when it fed no trace, or when every trace it fed is no
    longer open in the assembler (checked, oldest first, when a commit is due).
    """

    def __init__(self, is_open: Callable[[int], bool]) -> None:
        self._is_open = is_open
        self._ledger = OffsetLedger()
        self._open: dict[TopicPartition, collections.deque[tuple[int, tuple[int, ...]]]] = {}
        #: the poll thread adds, the rebalance hooks (kafka-python's IO thread) commit and forget
        self._lock = threading.RLock()

    def add(self, tp: TopicPartition, offset: int, trace_ids: tuple[int, ...]) -> None:
        """Record one consumed message and the trace ids it fed."""
        with self._lock:
            try:
                self._ledger.track(tp, offset)
            except ValueError:  # the consumer went back (a seek or an offset reset): start the partition over
                self.forget([tp])
                self._ledger.track(tp, offset)
            if trace_ids:
                self._open.setdefault(tp, collections.deque()).append((offset, trace_ids))
            else:
                self._ledger.finish(tp, offset)

    def committable(self) -> dict[TopicPartition, int]:
        """Per partition, the offset to commit now (only those that moved since the last commit)."""
        with self._lock:
            for tp, queue in self._open.items():
                while queue and not any(self._is_open(t) for t in queue[0][1]):
                    self._ledger.finish(tp, queue.popleft()[0])
            return self._ledger.to_commit()

    def committed(self, offsets: dict[TopicPartition, int]) -> None:
        with self._lock:
            self._ledger.committed(dict(offsets))

    def forget(self, partitions: list[TopicPartition] | None = None) -> None:
        """Drop state for ``partitions`` (all when None): they were revoked."""
        with self._lock:
            for tp in list(self._ledger.tracked()) if partitions is None else partitions:
                self._open.pop(tp, None)
                self._ledger.forget(tp)


class OtlpBridge(OtlpIngest):
    """Consumes OTLP span batches from Kafka and produces ``RagTrace`` records."""

    def __init__(
        self,
        settings: BridgeSettings | None = None,
        collector_settings: CollectorSettings | None = None,
        *,
        consumer: Any = None,
        sink: Any = None,
        registry: CollectorRegistry | None = None,
        producer_factory: ProducerFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(
            collector_settings,
            sink=sink,
            registry=registry,
            producer_factory=producer_factory,
            clock=clock,
            redact=redact,
        )
        self.settings = settings or BridgeSettings()
        self.offsets = OffsetTracker(self.pipeline.is_buffered)
        self._consumer = consumer
        self._clock = clock
        self._stop = threading.Event()
        self._last_commit = clock()
        self.messages = 0

    # -- lifecycle -------------------------------------------------------------
    def stop(self) -> None:
        """Finish the current batch, emit, flush, commit and leave (SIGTERM handler)."""
        self._stop.set()

    def _ensure_consumer(self) -> Any:
        if self._consumer is None:
            s = self.settings
            self._consumer = KafkaConsumer(
                group_id=s.group_id,
                enable_auto_commit=False,
                auto_offset_reset=s.auto_offset_reset,
                session_timeout_ms=s.session_timeout_ms,
                heartbeat_interval_ms=s.heartbeat_interval_ms,
                max_poll_interval_ms=s.max_poll_interval_ms,
                max_poll_records=s.max_poll_records,
                **self.collector_settings.kafka.client_kwargs(),
            )
            self._consumer.subscribe([s.source_topic], listener=GroupListener(self._revoked, self._assigned))
        return self._consumer

    def run(self, *, max_messages: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()``, ``max_messages``, or idle (after assignment) for ``idle_timeout_s``."""
        consumer = self._ensure_consumer()
        idle_since: float | None = None
        try:
            while not self._stop.is_set():
                got = self.step()
                now = self._clock()
                if got or idle_since is None and consumer.assignment():
                    idle_since = now
                elif idle_timeout_s is not None and idle_since is not None and now - idle_since > idle_timeout_s:
                    break
                if max_messages is not None and self.messages >= max_messages:
                    break
        finally:
            self.close()
        return self.messages

    def step(self) -> int:
        """One poll: decode, add spans, emit complete traces, commit when due; returns messages handled."""
        consumer = self._ensure_consumer()
        self._backpressure(consumer)
        batch = consumer.poll(timeout_ms=self.settings.poll_timeout_ms, max_records=self.settings.max_poll_records)
        n = 0
        for tp, messages in batch.items():
            for msg in messages:
                self.offsets.add(tp, msg.offset, self._handle(msg.value))
                n += 1
        self.messages += n
        self.pipeline.pop_complete()
        if self._clock() - self._last_commit >= self.settings.commit_interval_s:
            self.commit()
        return n

    def _backpressure(self, consumer: Any) -> None:
        """Pause fetching while the sink's queue is full (output Kafka slow or down); resume when it drains.

        Only ``sink_full`` pauses: pausing on a full assembler could wait for roots
        that sit behind the pause; those traces are evicted by the TTL instead.
        """
        full = self.pipeline.saturation() == "sink_full"
        paused = consumer.paused()
        if full and not paused:
            assigned = list(consumer.assignment())
            if assigned:
                consumer.pause(*assigned)
                log.warning("bridge_paused_sink_full", partitions=len(assigned))
        elif not full and paused:
            consumer.resume(*paused)
            log.info("bridge_resumed")

    def _handle(self, value: bytes | None) -> tuple[int, ...]:
        try:
            request = otlp.decode(value or b"", self.settings.encoding)
        except otlp.OtlpDecodeError as exc:
            self.otlp_metrics.requests.labels(source=SOURCE, code="decode_error").inc()
            log.warning("bridge_undecodable_message", error=str(exc)[:200])
            return ()
        decoded = otlp.spans_from_request(request, max_spans=self.settings.max_spans_per_message)
        for reason, count in decoded.rejected.items():
            self.otlp_metrics.reject(SOURCE, reason, count)
        trace_ids = []
        added = 0
        for span in decoded.spans:
            if self.pipeline.add_span(span):
                added += 1
                trace_ids.append(span.context.trace_id)
        if added:
            self.metrics.spans.inc(added)
        self.otlp_metrics.accept(SOURCE, added)
        self.otlp_metrics.requests.labels(source=SOURCE, code="ok").inc()
        return tuple(dict.fromkeys(trace_ids))

    def commit(self) -> bool:
        """Flush produced records, then commit every offset whose traces are done; False if the flush failed."""
        self._last_commit = self._clock()
        offsets = self.offsets.committable()
        if not offsets or self._consumer is None:
            return True
        if not self.sink.force_flush(self.collector_settings.flush_timeout_s):
            log.warning("bridge_flush_failed_commit_skipped", partitions=len(offsets))
            return False
        self._consumer.commit(commit_offsets(offsets))
        self.offsets.committed(offsets)
        return True

    async def _assigned(self, assigned: list[TopicPartition]) -> None:
        log.info("bridge_partitions_assigned", partitions=sorted(tp.partition for tp in assigned))

    async def _revoked(self, revoked: list[TopicPartition], lost: bool) -> None:
        """Rebalance, on kafka-python's IO loop: emit what is complete, flush, commit; forget open traces.

        The next owner rebuilds the open traces from the uncommitted messages. Lost partitions (the
        session expired) cannot be committed: only forgotten.
        """
        if not lost:
            try:
                await self._commit_on_loop()
            except Exception as exc:  # the group may already have moved on
                log.warning("bridge_commit_on_revoke_failed", error=type(exc).__name__, detail=str(exc)[:200])
        dropped = self.pipeline.drop_incomplete()
        self.offsets.forget(None)
        log.info(
            "bridge_partitions_lost" if lost else "bridge_partitions_revoked",
            partitions=sorted(tp.partition for tp in revoked),
            open_traces_left_to_next_owner=dropped,
        )

    async def _commit_on_loop(self) -> bool:
        """``commit()`` for a rebalance hook: the producer flush on a helper thread, the commit awaited."""
        self.pipeline.pop_complete(flush=True)
        offsets = self.offsets.committable()
        if not offsets or self._consumer is None:
            return True
        timeout_s = self.collector_settings.flush_timeout_s
        flushed: list[bool] = []
        await off_loop(
            lambda: flushed.append(bool(self.sink.force_flush(timeout_s))), timeout_s + 1.0, "claimwatch-bridge-flush"
        )
        if not (flushed and flushed[0]):
            log.warning("bridge_flush_failed_commit_skipped", partitions=len(offsets))
            return False
        await self._consumer.commit_async(commit_offsets(offsets))
        self.offsets.committed(offsets)
        return True

    def close(self) -> None:
        """Emit complete traces, flush, commit, close the consumer and the sink."""
        try:
            self.pipeline.pop_complete(flush=True)
            self.commit()
        except Exception as exc:
            log.warning("bridge_final_commit_failed", error=type(exc).__name__, detail=str(exc)[:200])
        left = self.pipeline.drop_incomplete()
        # their messages stay uncommitted: the revoke hook that closing the consumer runs must not read the
        # dropped traces as finished
        self.offsets.forget(None)
        if left:
            log.info("bridge_open_traces_left_uncommitted", traces=left)
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception as exc:  # pragma: no cover
                log.warning("bridge_consumer_close_failed", error=type(exc).__name__)
            self._consumer = None
        self.sink.shutdown(self.collector_settings.flush_timeout_s)
