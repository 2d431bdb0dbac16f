"""Decode OTLP trace exports (protobuf or JSON) into spans the extractor reads.

An ``ExportTraceServiceRequest`` (OTLP/HTTP body, or the value of a Kafka
message written by the OpenTelemetry Collector's ``kafkaexporter`` with
``encoding: otlp_proto`` / ``otlp_json``) becomes a list of :class:`OtlpSpan`:
small read-only objects exposing the ``ReadableSpan`` attributes
:meth:`collector.conventions.SpanExtractor.extract` uses (``context``,
``parent``, ``name``, ``attributes``, ``events``, ``status``, ``resource``,
``start_time``, ``end_time``, ``dropped_attributes``).

Value mapping (OTLP ``AnyValue`` -> Python, as the SDK would hold it):
string/bool/int/double as is; bytes as hex; arrays of scalars as tuples;
structured values (``kvlist_value``, arrays of arrays/maps, which GenAI
instrumentations use for ``gen_ai.input.messages``) as a JSON string, the
form the extractor already parses.

Root detection: a span is a local root when it has no parent or when the
exporter flagged its parent as remote (``SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK``,
set by the OTel SDKs since OTLP 1.1) — the same rule the in-app processor uses.

OTLP/JSON differs from the protobuf JSON mapping in one way that matters:
trace and span ids are hex strings, not base64. :func:`decode_json` converts
them before handing the document to ``google.protobuf.json_format``.

Invalid UTF-8: protobuf and ``json_format`` refuse a string that is not valid
Unicode, which would refuse every span of the request. Given a :class:`Repairs`,
the decoders replace the bad sequences with U+FFFD instead and count the strings
changed (the receiver passes one; the default stays strict).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from contract.errors import ClaimwatchError

#: span flag bits (opentelemetry/proto/trace/v1/trace.proto, SpanFlags)
FLAG_HAS_IS_REMOTE = 0x100
FLAG_IS_REMOTE = 0x200

_STATUS_NAMES = {0: "UNSET", 1: "OK", 2: "ERROR"}
#: rejection reason of the spans past ``max_spans`` in :func:`spans_from_request`
TOO_MANY = "too_many_spans"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class OtlpDecodeError(ClaimwatchError):
    """A body or message that is not a decodable ``ExportTraceServiceRequest``."""


# -- span adapter -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpanRef:
    """``SpanContext``-like: the ids the extractor reads (``trace_id``, ``span_id``, ``is_remote``)."""

    trace_id: int
    span_id: int
    is_remote: bool = False


@dataclass(frozen=True, slots=True)
class _StatusCode:
    name: str


@dataclass(frozen=True, slots=True)
class SpanStatus:
    """``Status``-like: ``status_code.name`` is UNSET, OK or ERROR."""

    status_code: _StatusCode
    description: str = ""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """``Event``-like: a name and attributes."""

    name: str
    attributes: Mapping[str, Any]
    timestamp: int = 0


@dataclass(frozen=True, slots=True)
class SpanResource:
    """``Resource``-like: attributes."""

    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class OtlpSpan:
    """One decoded OTLP span, shaped like the ``ReadableSpan`` attributes the extractor reads."""

    context: SpanRef
    parent: SpanRef | None
    name: str
    attributes: Mapping[str, Any]
    events: tuple[SpanEvent, ...]
    status: SpanStatus
    resource: SpanResource
    start_time: int
    end_time: int
    dropped_attributes: int = 0
    scope: str = ""
    links: tuple[SpanRef, ...] = field(default=())


# -- values -------------------------------------------------------------------


def _json_value(value: AnyValue) -> Any:
    """AnyValue -> plain JSON-able Python (used inside structured values)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_json_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _json_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attribute_value(value: AnyValue) -> Any:
    """AnyValue -> the value an SDK span would hold (structured values become JSON strings)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        items = value.array_value.values
        if all(v.WhichOneof("value") in ("string_value", "bool_value", "int_value", "double_value") for v in items):
            return tuple(getattr(v, v.WhichOneof("value")) for v in items)
        return json.dumps([_json_value(v) for v in items], ensure_ascii=False)
    if kind == "kvlist_value":
        return json.dumps(_json_value(value), ensure_ascii=False)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(kvs: Iterable[Any]) -> dict[str, Any]:
    """Repeated ``KeyValue`` -> dict (values without a value are skipped)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        v = attribute_value(kv.value)
        if v is not None:
            out[kv.key] = v
    return out


# -- ids ----------------------------------------------------------------------


def _int_id(raw: bytes, size: int) -> int | None:
    if len(raw) != size:
        return None
    value = int.from_bytes(raw, "big")
    return value or None


def span_problem(span: trace_pb2.Span) -> str | None:
    """Why a span cannot be used (``invalid_trace_id`` / ``invalid_span_id`` / ``invalid_parent_id``), or None."""
    if _int_id(span.trace_id, 16) is None:
        return "invalid_trace_id"
    if _int_id(span.span_id, 8) is None:
        return "invalid_span_id"
    if _has_parent(span) and _int_id(span.parent_span_id, 8) is None:
        return "invalid_parent_id"
    return None


def _has_parent(span: trace_pb2.Span) -> bool:
    """Whether the span names a parent: an empty id is a root, and so is the all-zero (invalid) span id that some
    exporters write for "none" (as the OpenTelemetry Collector's pdata reads it)."""
    return any(span.parent_span_id)


def to_span(span: trace_pb2.Span, resource: SpanResource, scope: str = "") -> OtlpSpan:
    """One valid protobuf span -> :class:`OtlpSpan` (check :func:`span_problem` first)."""
    trace_id = int.from_bytes(span.trace_id, "big")
    parent = None
    if _has_parent(span):
        remote = bool(span.flags & FLAG_HAS_IS_REMOTE) and bool(span.flags & FLAG_IS_REMOTE)
        parent = SpanRef(trace_id, int.from_bytes(span.parent_span_id, "big"), remote)
    events = tuple(SpanEvent(e.name, attributes(e.attributes), e.time_unix_nano) for e in span.events)
    links = tuple(
        SpanRef(int.from_bytes(link.trace_id, "big"), int.from_bytes(link.span_id, "big"))
        for link in span.links
        if len(link.trace_id) == 16 and len(link.span_id) == 8
    )
    return OtlpSpan(
        context=SpanRef(trace_id, int.from_bytes(span.span_id, "big")),
        parent=parent,
        name=span.name,
        attributes=attributes(span.attributes),
        events=events,
        status=SpanStatus(_StatusCode(_STATUS_NAMES.get(span.status.code, "UNSET")), span.status.message),
        resource=resource,
        start_time=span.start_time_unix_nano,
        end_time=span.end_time_unix_nano,
        dropped_attributes=span.dropped_attributes_count,
        scope=scope,
        links=links,
    )


@dataclass(slots=True)
class Decoded:
    """Spans decoded from one request, plus the ones rejected and why."""

    spans: list[OtlpSpan] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)

    @property
    def rejected_count(self) -> int:
        return sum(self.rejected.values())

    @property
    def total(self) -> int:
        return len(self.spans) + self.rejected_count


def count_spans(request: ExportTraceServiceRequest) -> int:
    """Number of spans in a request (cheap: no conversion)."""
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def spans_from_request(request: ExportTraceServiceRequest, max_spans: int | None = None) -> Decoded:
    """The spans of a request as :class:`OtlpSpan`; spans with invalid ids are rejected, not raised.

    With ``max_spans``, conversion stops once that many spans are accepted: the rest are counted as
    ``too_many_spans`` without being converted (no :class:`OtlpSpan`, no attribute values built), so the
    work and memory of one request stay bounded whatever its size.
    """
    out = Decoded()
    rejected = out.rejected
    for rs in request.resource_spans:
        resource: SpanResource | None = None
        for ss in rs.scope_spans:
            spans = ss.spans
            if max_spans is not None and len(out.spans) >= max_spans:
                if spans:
                    rejected[TOO_MANY] = rejected.get(TOO_MANY, 0) + len(spans)
                continue
            if resource is None:
                resource = SpanResource(attributes(rs.resource.attributes))
            scope = ss.scope.name
            for i, span in enumerate(spans):
                if max_spans is not None and len(out.spans) >= max_spans:
                    rejected[TOO_MANY] = rejected.get(TOO_MANY, 0) + len(spans) - i
                    break
                problem = span_problem(span)
                if problem is not None:
                    rejected[problem] = rejected.get(problem, 0) + 1
                    continue
                out.spans.append(to_span(span, resource, scope))
    return out


# -- wire formats -------------------------------------------------------------


@dataclass(slots=True)
class Repairs:
    """What lenient decoding changed: ``strings`` with invalid UTF-8 (or lone surrogates) whose bad parts became U+FFFD.

    Passing one to :func:`decode_protobuf` / :func:`decode_json` / :func:`decode` turns lenient decoding on.
    """

    strings: int = 0


def decode_protobuf(body: bytes | bytearray, repairs: Repairs | None = None) -> ExportTraceServiceRequest:
    """Parse a binary ``ExportTraceServiceRequest``; raises :class:`OtlpDecodeError` (also for too deep nesting).

    Protobuf refuses a ``string`` field that is not valid UTF-8 (a JavaScript string sliced mid-emoji leaves a lone
    surrogate, which protobufjs writes as ``ED A0 BD``), which would refuse every span of the request. With
    ``repairs``, such a message is parsed again as its twin with ``bytes`` in place of ``string`` fields (the wire
    format is the same), the invalid sequences of those fields are replaced by U+FFFD (counted in
    ``repairs.strings``), and the repaired message is parsed for real. Only a failed parse takes that path.
    """
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, TypeError, RecursionError) as exc:
        repaired = _repair_protobuf(body, repairs) if repairs is not None else None
        if repaired is None:
            raise OtlpDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from exc
        return repaired
    return request


class _BytesTwin:
    """``ExportTraceServiceRequest`` with every ``string`` field declared ``bytes`` (built once, on first use)."""

    _lock = threading.Lock()
    _built: "tuple[Any, frozenset[str]] | None" = None

    @classmethod
    def get(cls) -> "tuple[Any, frozenset[str]]":
        """(the twin message class, full names of its fields that are ``string`` in OTLP)."""
        with cls._lock:
            if cls._built is None:
                cls._built = cls._build()
            return cls._built

    @staticmethod
    def _build() -> "tuple[Any, frozenset[str]]":
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        pool = descriptor_pool.DescriptorPool()
        strings: set[str] = set()
        added: set[str] = set()

        def retype(msg: Any, scope: str) -> None:
            name = f"{scope}.{msg.name}"
            if msg.options.map_entry:
                return  # a map key cannot be bytes (OTLP traces have no maps)
            for f in msg.field:
                if f.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
                    f.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                    strings.add(f"{name}.{f.name}")
            for nested in msg.nested_type:
                retype(nested, name)

        def add(file: Any) -> None:
            if file.name in added:
                return
            for dep in file.dependencies:
                add(dep)
            proto = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(proto)
            for msg in proto.message_type:
                retype(msg, proto.package)
            pool.Add(proto)
            added.add(file.name)

        add(ExportTraceServiceRequest.DESCRIPTOR.file)
        twin = pool.FindMessageTypeByName(ExportTraceServiceRequest.DESCRIPTOR.full_name)
        return message_factory.GetMessageClass(twin), frozenset(strings)


def _repair_protobuf(body: bytes | bytearray, repairs: Repairs) -> ExportTraceServiceRequest | None:
    """The request with its invalid UTF-8 strings repaired, or None when that was not why it failed to parse."""
    twin_class, strings = _BytesTwin.get()
    twin = twin_class()
    try:
        twin.ParseFromString(body)
        count = _repair_fields(twin, strings)
    except (DecodeError, ValueError, TypeError, RecursionError):
        return None
    if not count:
        return None
    fixed = twin.SerializeToString()
    del twin
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(fixed)
    except (DecodeError, ValueError, TypeError, RecursionError):
        return None
    repairs.strings += count
    return request


#: messages checked whole by protobuf's (C) parser before being walked field by field in Python: a valid span or
#: resource (nearly all of them) costs one serialize + parse, not a Python visit of each attribute
_CHECKED: dict[str, Any] = {m.DESCRIPTOR.full_name: m for m in (trace_pb2.Span, resource_pb2.Resource)}


def _valid_utf8(raw: bytes) -> bool:
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parses(real: Any, twin: Any) -> bool:
    """Whether the twin message ``twin`` parses as the real OTLP message class ``real`` (all strings valid)."""
    try:
        real.FromString(twin.SerializeToString())
    except (DecodeError, ValueError, TypeError, RecursionError):
        return False
    return True


def _repair_fields(msg: Any, strings: frozenset[str]) -> int:
    """Replace the invalid UTF-8 of the twin's string fields by U+FFFD, in place; the number of fields changed.

    Recursion is bounded by protobuf's own nesting limit (the message was parsed).
    """
    count = 0
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            real = _CHECKED.get(fd.message_type.full_name)
            for sub in value if fd.is_repeated else (value,):
                if real is None or not _parses(real, sub):
                    count += _repair_fields(sub, strings)
        elif fd.full_name in strings:
            if fd.is_repeated:
                for i, raw in enumerate(value):
                    if not _valid_utf8(raw):
                        value[i] = raw.decode("utf-8", "replace").encode("utf-8")
                        count += 1
            elif not _valid_utf8(value):
                setattr(msg, fd.name, value.decode("utf-8", "replace").encode("utf-8"))
                count += 1
    return count


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""  # an invalid id: the span is rejected (invalid_*_id), not the whole request
    return base64.b64encode(raw).decode("ascii")


def _fix_ids(doc: Any) -> None:
    """OTLP/JSON hex ids -> protobuf-JSON base64, in place (spans and their links)."""
    for rs in _list(doc, "resourceSpans", "resource_spans"):
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            for span in _list(ss, "spans"):
                if not isinstance(span, dict):
                    continue
                for key in _ID_FIELDS:
                    if key in span:
                        span[key] = _hex_to_b64(span[key])
                for link in _list(span, "links"):
                    if isinstance(link, dict):
                        for key in _ID_FIELDS:
                            if key in link:
                                link[key] = _hex_to_b64(link[key])


def _list(doc: Any, *keys: str) -> list[Any]:
    if not isinstance(doc, dict):
        return []
    for key in keys:
        value = doc.get(key)
        if isinstance(value, list):
            return value
    return []


_PARSE_ERRORS = (json_format.ParseError, ValueError, TypeError, AttributeError, KeyError, RecursionError)
#: a UTF-16 surrogate code point: in a str from ``json.loads``, always a lone one (pairs are combined)
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_json(body: bytes | bytearray | str, repairs: Repairs | None = None) -> ExportTraceServiceRequest:
    """Parse an OTLP/JSON ``ExportTraceServiceRequest`` (hex ids); raises :class:`OtlpDecodeError`.

    Any malformed document is an :class:`OtlpDecodeError`, including nesting too deep for the
    parsers (``RecursionError`` from ``json`` or ``json_format``) and wrong value types anywhere.

    With ``repairs``, strings that are not valid Unicode (a lone surrogate escape such as ``"\\ud83d"``, which
    ``JSON.stringify`` writes for a string sliced mid-emoji, or bytes of a UTF-8 body that are not UTF-8) get
    U+FFFD in place of the bad parts, counted in ``repairs.strings``, instead of refusing the whole request.
    """
    raw_invalid = False
    try:
        try:
            doc = json.loads(body)
        except UnicodeDecodeError:
            # bytes that are not UTF-8 (encoded surrogates already decode, as lone surrogates): with repairs, each
            # bad byte becomes a lone surrogate (surrogateescape), replaced below like the escaped ones
            if repairs is None or isinstance(body, str) or json.detect_encoding(body) != "utf-8":
                raise
            doc = json.loads(bytes(body).decode("utf-8", "surrogateescape"))
            raw_invalid = True
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise OtlpDecodeError(f"not JSON: {str(exc)[:300]}") from exc
    if not isinstance(doc, dict):
        raise OtlpDecodeError("OTLP/JSON body must be an object")
    count = _repair_json(doc) if raw_invalid else 0
    _fix_ids(doc)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except _PARSE_ERRORS as exc:
        # a lone surrogate fails the parse: repair the document's strings and parse again (only then)
        extra = _repair_json(doc) if repairs is not None and not raw_invalid else 0
        if not extra:
            raise OtlpDecodeError(f"not an OTLP/JSON ExportTraceServiceRequest: {str(exc)[:300]}") from exc
        count += extra
        request = ExportTraceServiceRequest()
        try:
            json_format.ParseDict(doc, request, ignore_unknown_fields=True)
        except _PARSE_ERRORS as again:
            raise OtlpDecodeError(f"not an OTLP/JSON ExportTraceServiceRequest: {str(again)[:300]}") from again
    if repairs is not None:
        repairs.strings += count
    return request


def _repair_json(doc: Any) -> int:
    """Replace lone surrogates in every string (keys too) of a JSON document by U+FFFD, in place; strings changed.

    Iterative: the document may be as deep as ``json`` allows.
    """
    count = 0
    stack: list[Any] = [doc]

    def clean(value: Any) -> Any:
        """``value`` repaired if it is a string with a lone surrogate (counted); containers are walked later."""
        nonlocal count
        if isinstance(value, str) and _SURROGATE.search(value):
            count += 1
            return _SURROGATE.sub("\ufffd", value)
        if isinstance(value, (dict, list)):
            stack.append(value)
        return value

    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in list(node):
                value = node.pop(key)
                node[clean(key)] = clean(value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = clean(value)
    return count


def decode(body: bytes, encoding: str, repairs: Repairs | None = None) -> ExportTraceServiceRequest:
    """Decode by encoding name: ``otlp_proto`` / ``protobuf`` or ``otlp_json`` / ``json`` (``repairs``: lenient)."""
    if encoding in ("otlp_proto", "protobuf", "proto"):
        return decode_protobuf(body, repairs)
    if encoding in ("otlp_json", "json"):
        return decode_json(body, repairs)
    raise OtlpDecodeError(f"unknown OTLP encoding {encoding!r}")


def export_response(rejected: int = 0, message: str = "") -> ExportTraceServiceResponse:
    """An ``ExportTraceServiceResponse``; ``partial_success`` set only when something was rejected."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.CopyFrom(ExportTracePartialSuccess(rejected_spans=rejected, error_message=message))
    return response


def to_otlp_json(message: Any) -> bytes:
    """Serialise a protobuf message as OTLP/JSON (camelCase keys; ids in hex for trace messages)."""
    doc = json_format.MessageToDict(message)
    _ids_to_hex(doc)
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def _ids_to_hex(doc: Any) -> None:
    for rs in _list(doc, "resourceSpans"):
        for ss in _list(rs, "scopeSpans"):
            for span in _list(ss, "spans"):
                for holder in [span, *_list(span, "links")]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if isinstance(holder.get(key), str):
                            try:
                                holder[key] = base64.b64decode(holder[key]).hex()
                            except (binascii.Error, ValueError):
                                pass


# -- metrics ------------------------------------------------------------------

#: bounded reasons for rejected spans (receiver and bridge)
REJECT_REASONS = frozenset(
    {
        "invalid_trace_id",
        "invalid_span_id",
        "invalid_parent_id",
        "too_many_spans",
        "sink_full",
        "buffer_full",
        "too_large",
        "decode_error",
        "unsupported_media_type",
        "internal",
    }
)


@dataclass(frozen=True)
class OtlpMetrics:
    """Metrics of the OTLP entry points (``source`` = ``http`` receiver or ``kafka`` bridge)."""

    requests: Any
    spans: Any
    rejected: Any
    repaired: Any

    def reject(self, source: str, reason: str, amount: int = 1) -> None:
        """Count ``amount`` rejected spans with a bounded reason."""
        if amount <= 0:
            return
        reason = reason if reason in REJECT_REASONS else "internal"
        self.rejected.labels(source=source, reason=reason).inc(amount)
        self.spans.labels(source=source, outcome="rejected").inc(amount)

    def accept(self, source: str, amount: int) -> None:
        if amount > 0:
            self.spans.labels(source=source, outcome="accepted").inc(amount)


_METRICS_CACHE: dict[int, tuple[Any, OtlpMetrics]] = {}
_METRICS_LOCK = threading.Lock()


def get_otlp_metrics(registry: Any = None) -> OtlpMetrics:
    """OTLP metrics on ``registry`` (default: the global REGISTRY), registered once per registry."""
    from prometheus_client import REGISTRY, Counter

    reg = REGISTRY if registry is None else registry
    with _METRICS_LOCK:
        cached = _METRICS_CACHE.get(id(reg))
        if cached is not None and cached[0] is reg:
            return cached[1]
        metrics = _register(reg, Counter)
        _METRICS_CACHE[id(reg)] = (reg, metrics)
        return metrics


def _register(reg: Any, Counter: Any) -> OtlpMetrics:
    return OtlpMetrics(
        requests=Counter(
            "claimwatch_collector_otlp_requests_total",
            "OTLP export requests (HTTP) or Kafka messages (bridge) by result code",
            ["source", "code"],
            registry=reg,
        ),
        spans=Counter(
            "claimwatch_collector_otlp_spans_total",
            "OTLP spans received, by outcome (accepted, rejected)",
            ["source", "outcome"],
            registry=reg,
        ),
        rejected=Counter(
            "claimwatch_collector_otlp_rejected_spans_total",
            "OTLP spans rejected, by reason",
            ["source", "reason"],
            registry=reg,
        ),
        repaired=Counter(
            "claimwatch_collector_otlp_repaired_strings_total",
            "OTLP strings accepted with invalid UTF-8 (e.g. a lone surrogate) replaced by U+FFFD",
            ["source"],
            registry=reg,
        ),
    )
