"""One finished span -> :class:`SpanFacts`, by the first declared reader whose predicate matches.

Readers, in order (a span carries one convention, but some carry two: Traceloop also sets
``gen_ai.operation.name``, and its chat spans are read as GenAI):

1. :class:`~collector.conventions.openinference.OpenInferenceReader`: ``openinference.span.kind`` (or
   retriever documents left after the SDK evicted the kind);
2. :class:`~collector.conventions.traceloop.TraceloopReader`: ``traceloop.span.kind`` on Traceloop's own
   workflow/task/agent/tool/retriever spans;
3. :class:`~collector.conventions.genai.GenAIReader`: ``gen_ai.operation.name`` or the legacy prompt attributes.

Then, on any span, vector DB hits recorded as ``db.query.result`` events.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from collector.config import CollectorSettings
from collector.conventions.facts import SpanFacts
from collector.conventions.genai import GenAIReader
from collector.conventions.openinference import OpenInferenceReader
from collector.conventions.text import HIDDEN_MARK
from collector.conventions.traceloop import TraceloopReader, VectorDbEventsReader

#: resource attributes kept (slices and the record's service name)
RESOURCE_KEYS = ("service.name", "service.version", "deployment.environment", "deployment.environment.name")


class Reader(Protocol):
    """A convention: which spans it reads (a predicate on the attributes) and how."""

    name: str

    def matches(self, attrs: Mapping[str, Any], facts: SpanFacts) -> bool: ...

    def read(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None: ...


READERS: tuple[Reader, ...] = (OpenInferenceReader(), TraceloopReader(), GenAIReader())
EVENTS = VectorDbEventsReader()


def extract(span: Any, keep_attrs: frozenset[str] = frozenset()) -> SpanFacts:
    """Read one finished ``ReadableSpan`` (or a decoded OTLP span) into :class:`SpanFacts`; never raises on odd
    attribute values (an unexpected type reads as absent)."""
    ctx = span.context
    parent = span.parent
    raw = span.attributes or {}
    # one copy into a plain dict: the SDK's BoundedAttributes reads each item through Python-level methods, and
    # the readers scan an agent's big LLM spans (the whole conversation) more than once
    attrs: Mapping[str, Any] = raw if type(raw) is dict else dict(raw)
    facts = SpanFacts(
        span_id=ctx.span_id,
        parent_id=parent.span_id if parent is not None else None,
        is_root=parent is None or bool(parent.is_remote),
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        error=span.status is not None and span.status.status_code.name == "ERROR",
        dropped_attributes=getattr(span, "dropped_attributes", 0) or 0,
    )
    facts.attrs = {k: attrs[k] for k in keep_attrs if k in attrs}
    resource = getattr(span, "resource", None)
    if resource is not None:
        rattrs = resource.attributes
        facts.resource = {k: str(rattrs[k]) for k in RESOURCE_KEYS if k in rattrs}
    reader = next((r for r in READERS if r.matches(attrs, facts)), None)
    if reader is not None:
        reader.read(facts, attrs)
    events = getattr(span, "events", None) or ()
    if events and EVENTS.matches_events(events):
        EVENTS.read_events(facts, events)
    facts.hidden = any(v == HIDDEN_MARK for v in (attrs.get("input.value"), attrs.get("output.value")))
    return facts


class SpanExtractor:
    """Turns spans into :class:`SpanFacts` and a trace's facts into records (the collector's one reading seam)."""

    def __init__(self, settings: CollectorSettings | None = None) -> None:
        from collector.conventions.build import RecordBuilder

        self.settings = settings or CollectorSettings()
        keep = set(self.settings.slice_attributes.values()) | set(self.settings.sampling.feedback_attributes)
        self._keep_attrs = frozenset(keep)
        self.builder = RecordBuilder(self.settings)

    def extract(self, span: Any) -> SpanFacts:
        """One span's facts (see :func:`extract`)."""
        return extract(span, self._keep_attrs)

    def build(self, trace_id: int, facts: list[SpanFacts]) -> list[Any]:
        """One trace's records, one :class:`~collector.conventions.build.BuildResult` per RAG call or agent turn."""
        return self.builder.build(trace_id, facts)

    def slices(self, head: list[SpanFacts], resource: Mapping[str, str], model: str | None) -> dict[str, str]:
        return self.builder.slices(head, resource, model)
