"""OTel GenAI content sent as log events, joined to its trace: :class:`RagLogProcessor`.

OTel GenAI instrumentations in ``event_only`` content mode
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only``, util-genai) put the
prompt and the completion on a log record (event ``gen_ai.client.inference.operation.details``,
older versions one event per message: ``gen_ai.user.message``, ``gen_ai.choice``, ...),
not on the chat span. A span processor never sees those, so such traces had no answer.

Add the companion processor to the app's ``LoggerProvider`` (one line, like the span
processor)::

    rag = RagTraceProcessor.from_env()
    tracer_provider.add_span_processor(rag)
    logger_provider.add_log_record_processor(rag.log_processor())

``on_emit`` is O(1) and never raises, like ``on_end``: a GenAI event with a trace and
span id is wrapped as a small span-shaped object (a child of the span it was logged in)
and queued to the same background thread, where the GenAI reader extracts question and
answer from its attributes or body. Other log records are ignored.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

#: log events that carry GenAI message content
GENAI_CONTENT_EVENTS = frozenset(
    {
        "gen_ai.client.inference.operation.details",
        "gen_ai.content.prompt",
        "gen_ai.content.completion",
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.choice",
    }
)
_MASK64 = (1 << 64) - 1


class _Ctx:
    __slots__ = ("trace_id", "span_id", "is_remote")

    def __init__(self, trace_id: int, span_id: int) -> None:
        self.trace_id, self.span_id, self.is_remote = trace_id, span_id, False


def _jsonable(value: Any) -> Any:
    """Log attribute values may be nested (tuples, mappings): plain JSON-able structures."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def event_attributes(event_name: str, attributes: Mapping[str, Any] | None, body: Any) -> dict[str, Any]:
    """The attributes the GenAI reader understands, from a content event's attributes and body."""
    attrs = {k: v for k, v in (attributes or {}).items()}
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"):
        if key in attrs and not isinstance(attrs[key], str):
            attrs[key] = json.dumps(_jsonable(attrs[key]))
    if isinstance(body, Mapping):  # older per-message events: the message is the body
        b = _jsonable(body)
        if event_name == "gen_ai.choice":
            msg = b.get("message") if isinstance(b.get("message"), Mapping) else b
            attrs.setdefault("gen_ai.output.messages", json.dumps([{"role": "assistant", **msg}]))
        elif event_name in ("gen_ai.user.message", "gen_ai.content.prompt"):
            attrs.setdefault("gen_ai.input.messages", json.dumps([{"role": "user", **b}]))
        elif event_name == "gen_ai.system.message":
            attrs.setdefault("gen_ai.system_instructions", json.dumps([b]))
        else:
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                if key in b:
                    attrs.setdefault(key, json.dumps(b[key]))
    attrs.setdefault("gen_ai.operation.name", "chat")
    return attrs


class EventSpan:
    """A GenAI content event in the shape the span extractor reads (a child of the span it was logged in)."""

    __slots__ = (
        "context",
        "parent",
        "name",
        "start_time",
        "end_time",
        "status",
        "attributes",
        "events",
        "resource",
        "dropped_attributes",
    )

    def __init__(
        self,
        trace_id: int,
        span_id: int,
        name: str,
        timestamp: int,
        attributes: dict[str, Any],
        resource: Any = None,
        seq: int = 0,
    ) -> None:
        synthetic = hash((span_id, timestamp, name, seq)) & _MASK64 or 1
        self.context = _Ctx(trace_id, synthetic)
        self.parent = _Ctx(trace_id, span_id)
        self.name = name
        self.start_time = self.end_time = timestamp
        self.status = None
        self.attributes = attributes
        self.events = ()
        self.resource = resource
        self.dropped_attributes = 0


try:  # the SDK's logs API is still underscored; without it the processor is unavailable, nothing else breaks
    from opentelemetry.sdk._logs import LogRecordProcessor as _Base
except ImportError:  # pragma: no cover - very old SDKs
    _Base = object  # type: ignore[assignment,misc]  # a stand-in base class when the SDK lacks the logs API


class RagLogProcessor(_Base):
    """Feeds GenAI content log events to a :class:`~collector.processor.RagTraceProcessor`."""

    def __init__(self, span_processor: Any) -> None:
        self._spans = span_processor
        self._seq = 0

    def on_emit(self, log_record: Any) -> None:
        """O(1): wrap a GenAI content event and queue it with the spans; never raises."""
        try:
            rec = getattr(log_record, "log_record", log_record)  # ReadWriteLogRecord or a bare LogRecord
            name = getattr(rec, "event_name", None) or (rec.attributes or {}).get("event.name")
            if name not in GENAI_CONTENT_EVENTS:
                return
            trace_id, span_id = rec.trace_id or 0, rec.span_id or 0
            if not trace_id or not span_id:
                return
            self._seq += 1
            attrs = event_attributes(name, rec.attributes, rec.body)
            ts = rec.timestamp or rec.observed_timestamp or 0
            self._spans.on_end(
                EventSpan(trace_id, span_id, name, ts, attrs, getattr(log_record, "resource", None), self._seq)
            )
        except Exception:  # pragma: no cover - must never reach the app
            try:
                self._spans.metrics.drop("internal")
            except Exception:
                pass

    def emit(self, log_record: Any) -> None:  # older SDK name
        self.on_emit(log_record)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        pass
