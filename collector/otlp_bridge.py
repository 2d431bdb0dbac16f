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
produced records to Kafka. A record the output cluster lost to a retriable
error (down past the producer's retries) holds the commit back and rewinds
every partition to its last commit, so its message is read and its trace
produced again (logged ``bridge_rewound_after_produce_failure``; the records
produced since the commit come twice and the worker's dedupe window drops
them). A record Kafka refuses for good (too large) stays a counted
``produce_error`` drop. A message holding a span of a trace whose root has
not arrived yet keeps its partition's committed offset from moving past it, so
after a crash or a rebalance the next owner re-reads it and re-assembles the
trace. The price is an occasional duplicate record (the worker's dedupe window
drops it). While the sink's queue is full (the output cluster is slow or
down) the bridge pauses its partitions instead of dropping records. On a
rebalance the bridge emits what is complete, flushes, commits and forgets its
open traces, which the new owner rebuilds from the uncommitted messages.

The consumer-group loop is :class:`contract.group.GroupMember`, the one the
evaluator worker runs: the bridge supplies its work (decode and add spans per
message, emit complete traces, pause while the sink is full), its rebalance
hooks and the producer flush that must succeed before a commit.

Metrics (registry of the process): the collector's ``claimwatch_collector_*``
pipeline metrics plus ``claimwatch_collector_otlp_requests_total{source="kafka",code}``
(``ok`` / ``decode_error`` per message) and ``claimwatch_collector_otlp_spans_total{source="kafka",...}``.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable

from kafka import TopicPartition
from prometheus_client import CollectorRegistry
from pydantic_settings import BaseSettings, SettingsConfigDict

from collector import otlp
from collector.config import CollectorSettings
from collector.pipeline import OtlpIngest
from collector.sink import ProducerFactory
from contract.group import GroupMember
from contract.logs import get_logger
from contract.offsets import OffsetLedger

log = get_logger(__name__)

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
    longer open in the assembler (checked, oldest first, by ``settle`` before a commit). The bridge's
    ``GroupMember`` commits through ``ledger``.
    """

    def __init__(self, is_open: Callable[[int], bool], lock: threading.RLock | None = None) -> None:
        self._is_open = is_open
        self.ledger = OffsetLedger()
        self._open: dict[TopicPartition, collections.deque[tuple[int, tuple[int, ...]]]] = {}
        #: the poll thread adds, the rebalance hooks (kafka-python's IO thread) commit and forget
        self._lock = lock or threading.RLock()

    def add(self, tp: TopicPartition, offset: int, trace_ids: tuple[int, ...]) -> None:
        """Record one consumed message and the trace ids it fed."""
        with self._lock:
            try:
                self.ledger.track(tp, offset)
            except ValueError:  # the consumer went back (a seek or an offset reset): start the partition over
                self.forget([tp])
                self.ledger.track(tp, offset)
            if trace_ids:
                self._open.setdefault(tp, collections.deque()).append((offset, trace_ids))
            else:
                self.ledger.finish(tp, offset)

    def settle(self) -> None:
        """Finish the messages (oldest first, per partition) whose traces all left the assembler."""
        with self._lock:
            for tp, queue in self._open.items():
                while queue and not any(self._is_open(t) for t in queue[0][1]):
                    self.ledger.finish(tp, queue.popleft()[0])

    def forget(self, partitions: list[TopicPartition] | None = None) -> None:
        """Drop state for ``partitions`` (all when None): they were revoked."""
        with self._lock:
            for tp in list(self.ledger.tracked()) if partitions is None else partitions:
                self._open.pop(tp, None)
                self.ledger.forget(tp)


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
        #: guards the offsets and the assembler between the poll thread and the rebalance hooks (IO thread)
        self._lock = threading.RLock()
        self.offsets = OffsetTracker(self.pipeline.is_buffered, self._lock)
        self._stop = threading.Event()
        self._sink_full = False
        self.messages = 0
        #: records lost to retriable produce errors, as the sink counted them at the last rewind (or the start)
        self._failures_seen = self._sink_failures()
        self._rewind_due = False
        self.rewinds = 0
        timeout_s = self.collector_settings.flush_timeout_s
        self._member = GroupMember(
            self.settings,
            self.settings.source_topic,
            self.collector_settings.kafka,
            ledger=self.offsets.ledger,
            lock=self._lock,
            revoked=self._revoked,
            assigned=self._assigned,
            commit_interval_s=self.settings.commit_interval_s,
            name="bridge",
            consumer=consumer,
            clock=clock,
            settle=self.offsets.settle,
            flush=lambda: self._delivered(timeout_s),
            flush_timeout_s=timeout_s,
        )

    # -- lifecycle -------------------------------------------------------------
    def stop(self) -> None:
        """Finish the current batch, emit, flush, commit and leave (SIGTERM handler)."""
        self._stop.set()

    def run(self, *, max_messages: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()``, ``max_messages``, or idle for ``idle_timeout_s`` (counted from the
        later of the start and the first assignment); returns the messages handled."""
        try:
            self._member.run(self, self._stop.is_set, max_items=max_messages, idle_timeout_s=idle_timeout_s)
        finally:
            self.close()
        return self.messages

    def step(self) -> int:
        """One round of the group loop: emit complete traces, commit when due, pause or resume, poll, decode
        and add spans; returns messages handled."""
        return self._member.round(self)

    # -- the group loop's work (contract.group.GroupWork) -------------------------
    def tick(self) -> None:
        """Read again what a failed produce lost (if one did), then emit the traces that are complete."""
        if self._rewind_due:
            self._rewind()
        with self._lock:
            self.pipeline.pop_complete()

    # -- produce failures: read the source again ------------------------------------
    def _sink_failures(self) -> int:
        return int(getattr(self.sink, "retriable_failures", 0))

    def _delivered(self, timeout_s: float) -> bool:
        """The flush every commit waits for: True when every record produced so far is acknowledged.

        A record lost to a retriable produce error (the output cluster down past the producer's retries) since
        the last rewind means its source message must be read again: no commit, and the next round rewinds.
        Records Kafka refuses for good (too large) are counted drops and do not hold the commit (re-reading
        would fail the same way forever).
        """
        flushed = bool(self.sink.force_flush(timeout_s))
        if self._sink_failures() != self._failures_seen:
            self._rewind_due = True
            return False
        return flushed

    def _rewind(self) -> None:
        """Seek every partition back to its last commit and forget the open traces: the messages after it are
        read and their traces produced again (at-least-once; the worker's dedupe window drops the duplicates)."""
        with self._lock:
            self._rewind_due = False
            failures, self._failures_seen = self._sink_failures() - self._failures_seen, self._sink_failures()
            points = self.offsets.ledger.rewind_points()
            dropped = self.pipeline.forget_all()
            self.offsets.forget(None)
        consumer = self._member.consumer
        for tp, offset in points.items():
            try:
                consumer.seek(tp, offset)
            except Exception as exc:  # no longer assigned: its next owner reads from the last commit anyway
                log.info("bridge_rewind_seek_skipped", partition=getattr(tp, "partition", tp), error=str(exc)[:200])
        self.rewinds += 1
        self.pipeline.ratelog.warn(  # an output cluster down for long rewinds at every commit: once a minute
            "bridge_rewind",
            "bridge_rewound_after_produce_failure",
            rewinds=self.rewinds,
            lost_records=failures,
            partitions={getattr(tp, "partition", str(tp)): offset for tp, offset in points.items()},
            open_traces_rebuilt=dropped,
        )

    def full(self) -> bool:
        """Pause fetching while the sink's queue is full (output Kafka slow or down); resume when it drains.

        Only ``sink_full`` pauses: pausing on a full assembler could wait for roots
        that sit behind the pause; those traces are evicted by the TTL instead.
        """
        full = self.pipeline.saturation() == "sink_full"
        if full != self._sink_full:
            if full:
                log.warning("bridge_paused_sink_full")
            else:
                log.info("bridge_resumed")
            self._sink_full = full
        return full

    def busy(self) -> bool:
        return False

    def room(self) -> int | None:
        return None

    def take(self, tp: Any, records: list[Any]) -> int:
        """Decode each message, add its spans, track its offset (under the lock, from the member's loop)."""
        for msg in records:
            self.offsets.add(tp, msg.offset, self._handle(msg.value))
        self.messages += len(records)
        return len(records)

    def _handle(self, value: bytes | None) -> tuple[int, ...]:
        repairs = otlp.Repairs()  # lenient: one string of invalid UTF-8 must not lose the message's other spans
        try:
            request = otlp.decode(value or b"", self.settings.encoding, repairs)
        except otlp.OtlpDecodeError as exc:
            self.otlp_metrics.requests.labels(source=SOURCE, code="decode_error").inc()
            log.warning("bridge_undecodable_message", error=str(exc)[:200])
            return ()
        if repairs.strings:
            self.otlp_metrics.repaired.labels(source=SOURCE).inc(repairs.strings)
            self.pipeline.ratelog.warn(
                "invalid_utf8_kafka", "bridge_invalid_utf8_repaired", strings=repairs.strings, source=SOURCE
            )
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
        return self._member.commits.commit()

    async def _assigned(self, assigned: list[TopicPartition]) -> None:
        log.info("bridge_partitions_assigned", partitions=sorted(tp.partition for tp in assigned))

    async def _revoked(self, revoked: list[TopicPartition], lost: bool) -> None:
        """Rebalance, on kafka-python's IO loop: emit what is complete, flush, commit; forget open traces.

        The next owner rebuilds the open traces from the uncommitted messages. Lost partitions (the
        session expired) cannot be committed: only forgotten.
        """
        if not lost:
            try:
                with self._lock:
                    self.pipeline.pop_complete(flush=True)
            except Exception as exc:
                log.warning("bridge_emit_on_revoke_failed", error=type(exc).__name__, detail=str(exc)[:200])
            await self._member.commits.commit_on_loop()  # logs and counts its own failure
        with self._lock:
            dropped = self.pipeline.drop_incomplete()
            self.offsets.forget(None)
        log.info(
            "bridge_partitions_lost" if lost else "bridge_partitions_revoked",
            partitions=sorted(tp.partition for tp in revoked),
            open_traces_left_to_next_owner=dropped,
        )

    def close(self) -> None:
        """Emit complete traces, flush, commit, close the consumer and the sink."""
        try:
            with self._lock:
                self.pipeline.pop_complete(flush=True)
            self.commit()
        except Exception as exc:
            log.warning("bridge_final_commit_failed", error=type(exc).__name__, detail=str(exc)[:200])
        with self._lock:
            left = self.pipeline.drop_incomplete()
            # their messages stay uncommitted: the revoke hook that closing the consumer runs must not read the
            # dropped traces as finished
            self.offsets.forget(None)
        if left:
            log.info("bridge_open_traces_left_uncommitted", traces=left)
        self._member.close()
        self.sink.shutdown(self.collector_settings.flush_timeout_s)
