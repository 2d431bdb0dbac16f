"""The collector's own Prometheus metrics (self-observability of the span processor).

Declared once per registry and cached, so several processors (or a re-created
one after a fork) share the same collectors instead of raising "Duplicated
timeseries". Labels are small fixed sets (outcome, reason, queue); never text,
ids or anything that comes from a span.

Units of ``claimwatch_collector_dropped_total{reason}``: span-level reasons
(``span_queue_full``, ``late_span``, ``too_many_spans``, ``shutdown``) count
spans; trace-level reasons (``ttl_evicted``, ``buffer_full``,
``incomplete_at_shutdown``) count traces; record-level reasons (``queue_full``,
``produce_error``, ``sink_shutdown``, ``serialise_error``, ``internal``) count records; ``attribute_limit``
counts RAG-looking traces that were not usable because spans lost attributes to the SDK's count limit.
``claimwatch_collector_traces_total{outcome="incomplete"}`` counts records built from a trace whose spans lost
attributes (the record carries ``attributes.incomplete = "attribute_limit"``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

#: Known drop reasons (documented in docs/collector.md); others are mapped to "other".
DROP_REASONS = frozenset(
    {
        "span_queue_full",
        "shutdown",
        "late_span",
        "too_many_spans",
        "ttl_evicted",
        "buffer_full",
        "incomplete_at_shutdown",
        "queue_full",
        "queue_bytes_full",
        "produce_error",
        "sink_shutdown",
        "serialise_error",
        "missing_content",
        "attribute_limit",
        "internal",
    }
)
#: multi_call: a trace holding several RAG calls (each becomes a record of its own)
TRACE_OUTCOMES = frozenset({"assembled", "not_rag", "incomplete", "multi_call", "sampled_in", "sampled_out", "queued"})

#: why a trace (or one RAG call / agent turn of it) gave no record (collector.conventions.NOT_RECORDED says what
#: would change each): an answer with nothing to ground it, grounding without an answer, grounding without text,
#: no span of a known convention
NOT_RECORDED_REASONS = frozenset({"ungrounded_turn", "no_answer", "no_content", "not_llm"})
#: what a record's contexts came from (contract.record.Context.origin values joined in a fixed order)
CONTEXT_SOURCES = frozenset({"retriever", "tool", "retriever+tool", "prompt"})
#: what a record stands for: a RAG call (retrieve, answer) or an agent turn (tool calls, model steps, one answer)
RECORD_UNITS = frozenset({"call", "turn"})

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class CollectorMetrics:
    """Handles on the collector's metric families (one instance per registry)."""

    spans: Counter
    traces: Counter
    dropped: Counter
    queue_depth: Gauge
    buffered_traces: Gauge
    produce_latency: Histogram
    produce_errors: Counter
    truncated: Counter
    sampling: Counter
    prompt_context: Counter
    not_recorded_traces: Counter
    records: Counter

    def drop(self, reason: str, amount: int = 1) -> None:
        """Count ``amount`` drops with a bounded ``reason``."""
        if amount <= 0:
            return
        self.dropped.labels(reason=reason if reason in DROP_REASONS else "other").inc(amount)

    def trace(self, outcome: str, amount: int = 1) -> None:
        """Count traces by outcome (assembled, not_rag, sampled_in, sampled_out, queued)."""
        self.traces.labels(outcome=outcome if outcome in TRACE_OUTCOMES else "other").inc(amount)

    def not_recorded(self, reason: str) -> None:
        """Count one trace (or unit of one) that gave no record, by a bounded ``reason``."""
        self.not_recorded_traces.labels(reason=reason if reason in NOT_RECORDED_REASONS else "other").inc()

    def recorded(self, record: Any) -> None:
        """Count one record sent on by what it stands for and where its contexts came from."""
        source = str(record.attributes.get("context_source", ""))
        unit = str(record.attributes.get("unit", "call"))
        self.records.labels(
            unit=unit if unit in RECORD_UNITS else "other",
            context_source=source if source in CONTEXT_SOURCES else "other",
        ).inc()
        if source == "prompt":
            self.prompt_context.inc()

    def produce_error(self, reason: str) -> None:
        """Count a failed produce (reason = Kafka error class name, a finite set)."""
        self.produce_errors.labels(reason=_bounded(reason)).inc()
        self.drop("produce_error")


def _bounded(label: str, limit: int = 48) -> str:
    clean = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in label)[:limit]
    return clean or "unknown"


_CACHE: dict[int, tuple[CollectorRegistry, CollectorMetrics]] = {}
_LOCK = threading.Lock()


def get_metrics(registry: CollectorRegistry | None = None) -> CollectorMetrics:
    """Return the collector metrics registered on ``registry`` (default: the global REGISTRY)."""
    reg = REGISTRY if registry is None else registry
    with _LOCK:
        cached = _CACHE.get(id(reg))
        if cached is not None and cached[0] is reg:
            return cached[1]
        metrics = CollectorMetrics(
            spans=Counter(
                "claimwatch_collector_spans_total", "Spans handled by the collector's background thread", registry=reg
            ),
            traces=Counter("claimwatch_collector_traces_total", "Traces by outcome", ["outcome"], registry=reg),
            dropped=Counter(
                "claimwatch_collector_dropped_total",
                "Spans, traces or records dropped by the collector, by reason",
                ["reason"],
                registry=reg,
            ),
            queue_depth=Gauge(
                "claimwatch_collector_queue_depth",
                "Items waiting in the collector's queues (queue=span|sink)",
                ["queue"],
                registry=reg,
            ),
            buffered_traces=Gauge(
                "claimwatch_collector_buffered_traces",
                "Traces being assembled (waiting for their root span)",
                registry=reg,
            ),
            produce_latency=Histogram(
                "claimwatch_collector_produce_latency_seconds",
                "Time from producer.send to broker acknowledgement",
                buckets=_LATENCY_BUCKETS,
                registry=reg,
            ),
            produce_errors=Counter(
                "claimwatch_collector_produce_errors_total",
                "Failed produce attempts by error class",
                ["reason"],
                registry=reg,
            ),
            truncated=Counter(
                "claimwatch_collector_truncated_total",
                "Records cut by enforce_limits to fit the size limits",
                registry=reg,
            ),
            sampling=Counter(
                "claimwatch_collector_sampling_decisions_total",
                "Sampling decisions by result and reason",
                ["decision", "reason"],
                registry=reg,
            ),
            prompt_context=Counter(
                "claimwatch_collector_prompt_context_total",
                "Records whose context was taken from the prompt (CLAIMWATCH_CONTEXT_FROM_PROMPT), not a retriever",
                registry=reg,
            ),
            not_recorded_traces=Counter(
                "claimwatch_collector_not_recorded_total",
                "Traces (or RAG calls / agent turns of one) that gave no record, by reason (ungrounded_turn, "
                "no_answer, no_content, not_llm)",
                ["reason"],
                registry=reg,
            ),
            records=Counter(
                "claimwatch_collector_records_total",
                "Records built (before sampling), by unit (call = a RAG call, turn = an agent turn) and where the "
                "contexts came from (retriever, tool, retriever+tool, prompt)",
                ["unit", "context_source"],
                registry=reg,
            ),
        )
        _CACHE[id(reg)] = (reg, metrics)
        return metrics
