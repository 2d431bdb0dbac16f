"""Shared pieces of the conformance suite: the known RAG data, a traced capture, record assertions.

Every row drives a REAL instrumentation package on a tiny RAG flow over the three
documents below, into a ``TracerProvider`` (``SpanLimits(max_span_attributes=1024)``)
that has our ``RagTraceProcessor`` (``MemorySink``, ``late_span_wait_s=0``) and, for
the findings dumps, an ``InMemorySpanExporter``; a ``LoggerProvider`` with an
in-memory exporter catches what instrumentations emit through the logs API.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Iterable, Sequence

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from collector.sink import MemorySink
from contract.record import RagTrace

# ----------------------------------------------------------------------------- the known RAG data


@dataclass(frozen=True)
class Doc:
    id: str
    source: str
    content: str


QUESTION = "How many days do customers have to request a refund?"
ANSWER = "Customers can request a refund within 30 days of delivery."
DOCS: tuple[Doc, ...] = (
    Doc(
        id="doc-refunds",
        source="policies/refunds.md",
        content="Refund policy: customers may request a refund within 30 days of delivery.",
    ),
    Doc(
        id="doc-shipping",
        source="policies/shipping.md",
        content="Shipping policy: orders ship within 2 business days from our Leeds warehouse.",
    ),
    Doc(
        id="doc-warranty",
        source="policies/warranty.md",
        content="Warranty policy: hardware carries a 2-year limited warranty against defects.",
    ),
)
#: scores the util-genai retrieval flow reports (it takes the documents as given)
SCORES = (0.91, 0.42, 0.17)
DOC_BY_CONTENT = {d.content: d for d in DOCS}
DOC_BY_ID = {d.id: d for d in DOCS}
MODEL = "gpt-4o-mini"


def context_block(docs: Iterable[Doc] = DOCS) -> str:
    """The context text an app would paste into its prompt."""
    return "\n\n".join(f"[{d.id}] {d.content}" for d in docs)


# ----------------------------------------------------------------------------- packages


def need(module: str, *, reason: str | None = None) -> ModuleType:
    """Import ``module``; skip the test when it is missing, except under CI (env ``CI`` set): then fail."""
    if os.environ.get("CI"):
        try:
            return importlib.import_module(module)
        except ImportError as exc:  # pragma: no cover - CI must have the conformance extra
            pytest.fail(f"CI is set and {module!r} is not importable ({exc}): install the conformance extra")
    return pytest.importorskip(module, reason=reason)


# ----------------------------------------------------------------------------- capture


@dataclass
class Capture:
    """One traced run: the provider, our processor and sink, and raw copies of spans and log records."""

    tp: TracerProvider
    processor: RagTraceProcessor
    sink: MemorySink
    spans: InMemorySpanExporter
    registry: CollectorRegistry
    lp: Any = None  # opentelemetry.sdk._logs.LoggerProvider
    logs: Any = None  # InMemoryLogRecordExporter
    _closed: bool = field(default=False, repr=False)
    #: the OpenTelemetry context this capture started from (restored at close)
    _context_token: Any = field(default=None, repr=False)

    def records(self) -> list[RagTrace]:
        """Flush the processor (no late-span wait) and return every record built so far."""
        assert self.processor.force_flush(10_000), "collector flush timed out"
        return list(self.sink.records)

    def finished_spans(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def log_records(self) -> list[Any]:
        if self.lp is None:
            return []
        self.lp.force_flush()
        return list(self.logs.get_finished_logs())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._context_token is not None:
            # an instrumentation that left a span attached as the current context (Traceloop's LangChain handler
            # does, on uninstrument) would otherwise parent the next capture's spans to a span it never sees
            otel_context.detach(self._context_token)
        self.tp.shutdown()  # shuts the processor down too
        if self.lp is not None:
            self.lp.shutdown()


def make_capture(*, logs: bool = False, settings: CollectorSettings | None = None) -> Capture:
    """A TracerProvider (1024 attributes per span) with RagTraceProcessor -> MemorySink, plus raw exporters."""
    settings = settings or CollectorSettings(late_span_wait_s=0.0)
    registry = CollectorRegistry()
    sink = MemorySink()
    processor = RagTraceProcessor(settings, sink=sink, registry=registry)
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=1024))
    spans = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    tp.add_span_processor(processor)
    cap = Capture(tp=tp, processor=processor, sink=sink, spans=spans, registry=registry)
    cap._context_token = otel_context.attach(otel_context.Context())
    if logs:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

        cap.logs = InMemoryLogRecordExporter()
        cap.lp = LoggerProvider()
        cap.lp.add_log_record_processor(SimpleLogRecordProcessor(cap.logs))
        # GenAI event_only content comes as log records: the collector's companion
        # LogRecordProcessor, where this version of the collector has one.
        log_side = getattr(processor, "log_processor", None)
        if callable(log_side):
            cap.lp.add_log_record_processor(log_side())
    return cap


# ----------------------------------------------------------------------------- assertions


def one_record(cap: Capture) -> RagTrace:
    """Exactly one record, for the one traced request."""
    records = cap.records()
    trace_ids = {format(s.context.trace_id, "032x") for s in cap.finished_spans()}
    assert len(records) == 1, f"expected one record, got {len(records)} (spans in {len(trace_ids)} trace(s))"
    rec = records[0]
    assert rec.trace_id in trace_ids
    return rec


def assert_question_answer(rec: RagTrace, question: str = QUESTION, answer: str = ANSWER) -> None:
    assert rec.question == question, f"question: {rec.question!r}"
    assert rec.answer == answer, f"answer: {rec.answer!r}"


def assert_contexts(
    rec: RagTrace,
    expected: Sequence[Doc],
    *,
    ids: Sequence[str | None] | None = None,
    scores: Sequence[float] | None = None,
    sources: bool = True,
    score_tol: float = 1e-6,
) -> None:
    """Contexts are exactly ``expected`` in order: content, and source / id / score when given."""
    got = [c.content for c in rec.contexts]
    assert got == [d.content for d in expected], f"contexts (content, in order): {json.dumps(got, indent=1)}"
    if sources:
        assert [c.source for c in rec.contexts] == [d.source for d in expected], "context sources"
    if ids is not None:
        assert [c.id for c in rec.contexts] == list(ids), "context ids"
    if scores is not None:
        got_scores = [c.score for c in rec.contexts]
        assert all(s is not None for s in got_scores), f"context scores missing: {got_scores}"
        assert all(abs(a - b) <= score_tol for a, b in zip(got_scores, scores)), (
            f"scores {got_scores} != {list(scores)}"
        )


# ----------------------------------------------------------------------------- dumps (findings doc, subprocess rows)


def _short(value: Any, limit: int) -> Any:
    if isinstance(value, (tuple, list)):
        value = list(value)
        text = json.dumps(value, default=str)
    elif isinstance(value, str):
        text = value
    else:
        return value
    return text if len(text) <= limit else text[:limit] + f"…(+{len(text) - limit})"


def span_summary(span: Any, limit: int = 200) -> dict[str, Any]:
    """Name, ids, parent, kind, every attribute (values cut to ``limit`` chars), events with attributes."""
    parent = span.parent
    return {
        "name": span.name,
        "span_id": format(span.context.span_id, "016x"),
        "parent_id": format(parent.span_id, "016x") if parent is not None else None,
        "kind": span.kind.name,
        "scope": getattr(getattr(span, "instrumentation_scope", None), "name", None),
        "attributes": {k: _short(v, limit) for k, v in (span.attributes or {}).items()},
        "events": [
            {"name": e.name, "attributes": {k: _short(v, limit) for k, v in (e.attributes or {}).items()}}
            for e in (span.events or ())
        ],
    }


def log_summary(item: Any, limit: int = 300) -> dict[str, Any]:
    """One exported log record (``ReadableLogRecord``): event name, body, attributes, trace/span linkage."""
    rec = getattr(item, "log_record", item)
    attrs = {}
    for k, v in (rec.attributes or {}).items():
        attrs[k] = _short(json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else v, limit)
    return {
        "event_name": getattr(rec, "event_name", None),
        "body": _short(json.dumps(rec.body, default=str), limit) if rec.body is not None else None,
        "trace_id": format(rec.trace_id, "032x") if rec.trace_id else None,
        "span_id": format(rec.span_id, "016x") if rec.span_id else None,
        "attributes": attrs,
    }


# ----------------------------------------------------------------------------- agent turns (issue 42)


@dataclass(frozen=True)
class Evidence:
    """One piece of grounding the answering model was given in a turn, as the app saw it.

    ``content`` is exactly the retrieved document's text or the tool's returned text; ``tool`` the tool that
    produced it (None for a retriever outside any tool); ``id`` / ``score`` where the framework gives them.
    """

    content: str
    tool: str | None = None
    id: str | None = None
    score: float | None = None


@dataclass
class Turn:
    """One agent turn as the app saw it: the user's message, the final answer, the grounding in call order."""

    question: str
    answer: str
    contexts: list[Evidence] = field(default_factory=list)


@dataclass
class AgentSeen:
    """What an agent run saw, one :class:`Turn` per user message (ground truth for the records)."""

    turns: list[Turn] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def dedupe_evidence(items: Iterable[Evidence]) -> list[Evidence]:
    """Evidence in first-seen order, each content once (a document two calls both retrieved counts once)."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for e in items:
        if e.content in seen:
            continue
        seen.add(e.content)
        out.append(e)
    return out


def assert_turns(records: Sequence[RagTrace], turns: Sequence[Turn], *, tools: bool = True, ids: bool = True) -> None:
    """Exactly one record per turn, in turn order: question, answer and contexts exact (content, order), and each
    context's tool name (``tools``) and document id (``ids``, where the ground truth has one)."""
    assert len(records) == len(turns), (
        f"expected {len(turns)} record(s), one per turn, got {len(records)}: "
        + json.dumps([{"q": r.question, "a": r.answer} for r in records], indent=1)
    )
    ordered = sorted(records, key=lambda r: (r.start_time_unix_nano or 0, r.end_time_unix_nano or 0))
    for n, (rec, turn) in enumerate(zip(ordered, turns), start=1):
        assert rec.question == turn.question, f"turn {n} question: {rec.question!r}"
        assert rec.answer == turn.answer, f"turn {n} answer: {rec.answer!r}"
        got = [c.content for c in rec.contexts]
        want = [e.content for e in turn.contexts]
        assert got == want, f"turn {n} contexts: got {json.dumps(got, indent=1)}\nwant {json.dumps(want, indent=1)}"
        if tools:
            assert [c.tool for c in rec.contexts] == [e.tool for e in turn.contexts], f"turn {n} context tools"
        if ids:
            for c, e in zip(rec.contexts, turn.contexts):
                if e.id is not None:
                    assert c.id == e.id, f"turn {n} context id {c.id!r} != {e.id!r}"
