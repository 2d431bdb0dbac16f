"""``TracePipeline``: the span -> ``RagTrace`` -> sink path shared by every entry point.

The in-app :class:`~collector.processor.RagTraceProcessor`, the OTLP/HTTP
receiver (:mod:`collector.receiver`) and the Collector-topic bridge
(:mod:`collector.otlp_bridge`) all run the same steps::

    span -> SpanExtractor.extract -> TraceAssembler (per trace) -> complete trace
         -> SpanExtractor.build (not RAG? count) -> Sampler -> Redactor
         -> record.enforce_limits -> sink.submit

A span is anything exposing the ``ReadableSpan`` attributes the extractor reads
(an SDK span, or a decoded OTLP span from :mod:`collector.otlp`).

Thread safety: the assembler is guarded by one lock, so several producer
threads (HTTP handler threads) may call :meth:`add_span` while one pump thread
calls :meth:`pop_complete`. Extraction runs outside the lock.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from collector.assembler import CompletedTrace, TraceAssembler
from collector.config import CollectorSettings
from collector.conventions import NOT_RECORDED, SpanExtractor
from collector.metrics import CollectorMetrics, get_metrics
from collector.redaction import Redactor
from collector.sampling import Sampler
from contract.logs import get_logger
from contract.ratelog import RateLimitedLog
from contract.record import enforce_limits

log = get_logger(__name__)

#: what to do about a drop, logged with it
_DROP_HINTS = {
    "late_span": "a span ended after its trace was emitted: raise CLAIMWATCH_LATE_SPAN_WAIT_S (seconds after the "
    "root ends that children are still taken)",
    "ttl_evicted": "no span of the trace arrived for CLAIMWATCH_TRACE_TTL_S and its root span never ended (raise it "
    "for agents whose model steps or tools take longer than that)",
    "buffer_full": "more open traces than CLAIMWATCH_MAX_BUFFERED_TRACES: the oldest was evicted",
    "too_many_spans": "a trace had more than CLAIMWATCH_MAX_SPANS_PER_TRACE spans",
    "serialise_error": "a record that cannot be written as UTF-8 JSON (a lone surrogate in its text), or whose "
    "fields that are never cut (ids, slices) alone exceed CLAIMWATCH_MAX_RECORD_BYTES",
}

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(key: str, message: str, **fields: Any) -> bool:
    """Log a structlog warning once per process for ``key``; True when it was logged now."""
    with _warned_lock:
        if key in _warned:
            return False
        _warned.add(key)
    log.warning(message, warning=key, **fields)
    return True


class TracePipeline:
    """Extractor + assembler + sampler + redactor + limits + sink, wired once."""

    def __init__(
        self,
        settings: CollectorSettings,
        *,
        sink: Any,
        metrics: CollectorMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.metrics = metrics or get_metrics()
        self._clock = clock
        self.extractor = SpanExtractor(settings)
        self.redactor = Redactor.from_settings(settings, func=redact)
        self.sampler = Sampler(settings.sampling, clock=clock)
        self._lock = threading.RLock()
        self.assembler = self._new_assembler()
        self._answer_only = 0
        self._retrieval_only = 0
        self.ratelog = RateLimitedLog(clock=clock, logger=__name__)

    @classmethod
    def to_kafka(
        cls,
        settings: CollectorSettings,
        *,
        sink: Any = None,
        registry: Any = None,
        producer_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] | None = None,
    ) -> "TracePipeline":
        """The pipeline with its own ``KafkaSink`` (unless ``sink`` is given), metrics on ``registry``."""
        from collector.sink import KafkaSink

        metrics = get_metrics(registry)
        if sink is None:
            sink = KafkaSink(settings, producer_factory=producer_factory, metrics=metrics)
        return cls(settings, sink=sink, metrics=metrics, clock=clock, redact=redact)

    def _new_assembler(self) -> TraceAssembler:
        s = self.settings
        return TraceAssembler(
            late_span_wait_s=s.late_span_wait_s,
            trace_ttl_s=s.trace_ttl_s,
            max_traces=s.max_buffered_traces,
            max_spans_per_trace=s.max_spans_per_trace,
            clock=self._clock,
            on_drop=self._dropped,
        )

    def _dropped(self, reason: str, amount: int = 1, **fields: Any) -> None:
        """Count a drop and log it (rate-limited per reason) with what to do about it."""
        self.metrics.drop(reason, amount)
        hint = _DROP_HINTS.get(reason)
        self.ratelog.warn(
            f"dropped_{reason}",
            "collector_dropped",
            reason=reason,
            amount=amount,
            **({"hint": hint} if hint else {}),
            **fields,
        )

    def reset(self) -> None:
        """Forget every buffered trace and take a fresh lock (a forked child starts empty)."""
        self._lock = threading.RLock()
        self.assembler = self._new_assembler()

    def __len__(self) -> int:
        return len(self.assembler)

    def is_buffered(self, trace_id: int) -> bool:
        """Whether ``trace_id`` is still being assembled (not emitted, not evicted)."""
        with self._lock:
            return trace_id in self.assembler

    # -- spans -------------------------------------------------------------
    def add_span(self, span: Any) -> bool:
        """Extract one finished span and add it to its trace; False (counted ``internal``) on failure."""
        try:
            facts = self.extractor.extract(span)
        except Exception as exc:  # a span no reader understands: counted, logged once a minute, the rest goes on
            self.metrics.drop("internal")
            self.ratelog.warn(
                f"extract_failed_{type(exc).__name__}",
                "collector_extract_failed",
                error=type(exc).__name__,
                detail=str(exc)[:200],
            )
            return False
        if facts.hidden:
            warn_once("hidden_io", "spans carry __REDACTED__ inputs/outputs (OPENINFERENCE_HIDE_* is set)")
        with self._lock:
            self.assembler.add(span.context.trace_id, facts)
        return True

    # -- traces ------------------------------------------------------------
    def pop_complete(
        self, *, flush: bool = False, pause: Callable[[], None] | None = None, pause_every: int = 8
    ) -> list[int]:
        """Emit every complete trace (all with an ended root when ``flush``); returns their trace ids.

        ``pause`` (if given) is called between slices of ``pause_every`` traces, outside the lock, and inside each
        trace's emit between its steps: the in-app processor uses it to hand the GIL to the app thread during a
        burst (its pause yields only once its time slice is used up).
        """
        with self._lock:
            completed = self.assembler.pop_complete(flush=flush)
        for n, item in enumerate(completed):
            if pause is not None and n and n % max(1, pause_every) == 0:
                pause()
            try:
                self.emit(item, pause=pause if pause_every == 1 else None)
            except Exception as exc:  # one bad trace must not take the rest of the batch with it
                self.metrics.drop("internal")
                log.warning("collector_emit_failed", error=type(exc).__name__, detail=str(exc)[:200])
        return [c.trace_id for c in completed]

    def drop_incomplete(self) -> int:
        """Forget traces whose root has not ended; returns how many (not counted here)."""
        with self._lock:
            return self.assembler.drop_incomplete()

    def forget_all(self) -> int:
        """Forget every trace, emitted ones included (their spans will be read again); returns the open ones."""
        with self._lock:
            return self.assembler.forget_all()

    def emit(self, completed: CompletedTrace, *, pause: Callable[[], None] | None = None) -> bool:
        """Build, sample, redact, limit and submit one complete trace (a record per RAG call or agent turn in it);
        True when the sink took every record. ``pause`` is called between the steps."""
        self.metrics.trace("assembled")
        results = self.extractor.build(completed.trace_id, completed.facts)
        if len(results) > 1:
            self.metrics.trace("multi_call")
        return all([self._emit_one(completed, result, pause) for result in results])

    def _emit_one(self, completed: CompletedTrace, result: Any, pause: Callable[[], None] | None = None) -> bool:
        """Sample, redact, limit and submit one call's record (or count why there is none)."""
        m = self.metrics
        if result.missing_content:
            m.drop("missing_content", result.missing_content)
        dropped = sum(f.dropped_attributes for f in completed.facts)
        if result.record is None:
            m.trace("not_rag")
            if dropped and any(f.convention for f in completed.facts):
                # a RAG-looking trace (spans of a known convention) that lost attributes to the SDK's limit
                m.drop("attribute_limit")
                self.ratelog.warn(
                    "attribute_limit_lost",
                    "a trace that lost span attributes to the SDK's attribute "
                    "count limit is not a usable RAG trace (" + result.reason + "): raise "
                    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT or SpanLimits(max_span_attributes=...)",
                    reason=result.reason,
                    dropped_attributes=dropped,
                )
            self._explain_not_rag(completed.trace_id, result)
            return False
        if dropped:
            m.trace("incomplete")
            self.ratelog.warn(
                "attribute_limit_incomplete",
                "spans lost attributes to the SDK's attribute count "
                "limit: the record is flagged incomplete (documents, question or span kind may be "
                "missing); raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT or SpanLimits(max_span_attributes=...)",
                dropped_attributes=dropped,
            )
        m.recorded(result.record)
        decision = self.sampler.decide(
            completed.trace_id, slices=result.record.slices, error=result.error, signals=result.signals
        )
        m.sampling.labels(decision="keep" if decision.keep else "drop", reason=decision.reason).inc()
        if not decision.keep:
            m.trace("sampled_out")
            return False
        m.trace("sampled_in")
        if pause is not None:
            pause()
        record = self.redactor.record(result.record)
        if pause is not None:
            pause()
        s = self.settings
        try:
            record = enforce_limits(
                record, max_contexts=s.max_contexts, max_text_chars=s.max_text_chars, max_bytes=s.max_record_bytes
            )
        except ValueError as exc:  # lone surrogates, or uncut fields alone over the limit (RecordTooLargeError)
            self._dropped("serialise_error", error=type(exc).__name__, detail=str(exc)[:200])
            return False
        if record.truncation is not None:
            m.truncated.inc()
        if self.sink.submit(record):
            m.trace("queued")
            return True
        return False

    def _explain_not_rag(self, trace_id: int, result: Any) -> None:
        """Count why a unit gave no record and log it (rate-limited per reason) with the trace id and what would
        change it; plus the one-time warnings for the shapes that make RAG traces look like something else."""
        self.metrics.not_recorded(result.reason)
        self.ratelog.warn(
            f"not_recorded_{result.reason}",
            "collector_not_recorded",
            reason=result.reason,
            trace_id=format(trace_id, "032x"),
            hint=NOT_RECORDED.get(result.reason, ""),
        )
        if result.reason == "no_content" and result.missing_content:
            warn_once(
                "documents_without_content",
                "retrieved documents carry no text (only ids/scores), so traces cannot be judged: make the "
                "instrumentation record document content (OTel GenAI: pass content in gen_ai.retrieval.documents; "
                "OpenInference: unset OPENINFERENCE_HIDE_*; Traceloop: TRACELOOP_TRACE_CONTENT=true)",
                documents=result.missing_content,
            )
            return
        if result.reason == "ungrounded_turn" and result.had_answer:
            self._answer_only += 1
        elif result.reason == "no_answer" and result.had_retriever:
            self._retrieval_only += 1
        if self._answer_only >= 3 and self._retrieval_only >= 3:
            warn_once(
                "split_traces",
                "retrieval and generation arrive in separate traces, so no trace has both documents and an answer: "
                "wrap each request in one span (with tracer.start_as_current_span('rag-request'): ...) so the "
                "retriever and LLM spans share a trace",
                answer_only=self._answer_only,
                retrieval_only=self._retrieval_only,
            )

    # -- backpressure --------------------------------------------------------
    def saturation(self) -> str | None:
        """Why new spans should be refused right now (``sink_full`` / ``buffer_full``), or None.

        ``sink_full``: the sink's queue is at capacity (Kafka is down or slower
        than the input), so a trace completed now would be dropped.
        ``buffer_full``: as many traces are being assembled as allowed, so a new
        one would evict the oldest.
        """
        depth = getattr(self.sink, "queue_depth", None)
        capacity = getattr(getattr(self.sink, "settings", None), "queue_size", None)
        if isinstance(depth, int) and isinstance(capacity, int) and capacity > 0 and depth >= capacity:
            return "sink_full"
        if len(self.assembler) >= self.settings.max_buffered_traces:
            return "buffer_full"
        return None


class OtlpIngest:
    """What an OTLP entry point (the receiver, the Kafka bridge) holds: a Kafka-bound pipeline and its metrics."""

    def __init__(
        self,
        collector_settings: CollectorSettings | None = None,
        *,
        sink: Any = None,
        registry: Any = None,
        producer_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        from collector.otlp import get_otlp_metrics

        self.collector_settings = collector_settings or CollectorSettings()
        self.pipeline = TracePipeline.to_kafka(
            self.collector_settings,
            sink=sink,
            registry=registry,
            producer_factory=producer_factory,
            clock=clock,
            redact=redact,
        )
        self.metrics = self.pipeline.metrics
        self.otlp_metrics = get_otlp_metrics(registry)
        self.sink: Any = self.pipeline.sink
