"""OTLP receiver under hostile load: admission limits, spans cap while converting, deadlines, bursts, bad bodies.

Every test runs a real receiver on a loopback port with a ``MemorySink`` (no Kafka)
and small limits/timeouts, so the whole file takes seconds.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from google.rpc import status_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from collector import otlp
from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from collector.sink import MemorySink

PROTOBUF = "application/x-protobuf"


def start(**kw: Any) -> OtlpReceiver:
    """A receiver on 127.0.0.1:<free port> with a MemorySink and the given ReceiverSettings overrides."""
    rs = ReceiverSettings(host="127.0.0.1", port=0, **kw)
    cs = CollectorSettings(late_span_wait_s=0.05)
    return OtlpReceiver(rs, cs, sink=MemorySink(), registry=CollectorRegistry()).start()


def request_bytes(n_spans: int = 3, traces: int = 1) -> bytes:
    """An ExportTraceServiceRequest (protobuf) with ``n_spans`` valid spans spread over ``traces`` traces."""
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i in range(n_spans):
        s = ss.spans.add()
        s.trace_id = (i % traces + 1).to_bytes(16, "big")
        s.span_id = (i + 1).to_bytes(8, "big")
        s.name = f"s{i}"
        s.start_time_unix_nano, s.end_time_unix_nano = 1, 2
    return req.SerializeToString()


def post(
    receiver: OtlpReceiver, body: bytes, ctype: str = PROTOBUF, timeout: float = 10.0, **headers: str
) -> tuple[int, Any, bytes]:
    """POST with http.client (no retries); returns (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=timeout)
    try:
        conn.request("POST", receiver.settings.path, body=body, headers={"Content-Type": ctype, **headers})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def requests_count(receiver: OtlpReceiver, code: int) -> float:
    """claimwatch_collector_otlp_requests_total{source="http",code} of the receiver."""
    return receiver.otlp_metrics.requests.labels(source="http", code=str(code))._value.get()


def half_sent(receiver: OtlpReceiver, content_length: int, body_part: bytes = b"") -> socket.socket:
    """A connection that sent headers (and part of a body) of a protobuf POST and then stalls."""
    sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
    sock.sendall(
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {content_length}\r\n\r\n".encode()
        + body_part
    )
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str]]:
    """Status code and headers of the HTTP response on a raw socket."""
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    resp.read()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}


def wait_until(cond: Any, timeout: float) -> bool:
    """Poll ``cond`` until true or ``timeout`` seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


def test_concurrency_limit_refuses_with_503_retry_after_and_counts_it():
    """With one request slot taken, the next request waits admission_wait_s, then gets 503 + Retry-After (counted)."""
    receiver = start(max_concurrent_requests=1, admission_wait_s=0.2, retry_after_s=4, body_timeout_s=5.0)
    try:
        holder = half_sent(receiver, 1000, b"\x0a")  # admitted, reading its body
        assert wait_until(lambda: receiver.budget.requests == 1, 2.0)
        t0 = time.monotonic()
        status, headers, payload = post(receiver, request_bytes())
        assert status == 503 and headers["Retry-After"] == "4" and time.monotonic() - t0 < 2.0
        assert status_pb2.Status.FromString(payload).code == 14  # UNAVAILABLE
        assert requests_count(receiver, 503) == 1
        holder.close()
        assert wait_until(lambda: receiver.budget.requests == 0, 2.0)
        assert post(receiver, request_bytes())[0] == 200
    finally:
        receiver.shutdown(0.2)


def test_sdk_exporter_retries_after_503_and_succeeds():
    """The OTel SDK's OTLP/HTTP exporter treats the busy 503 as retryable, honours Retry-After and then succeeds."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    with tp.get_tracer("t").start_as_current_span("root"):
        pass
    receiver = start(max_concurrent_requests=1, admission_wait_s=0.1, retry_after_s=2, body_timeout_s=5.0)
    exporter = OTLPSpanExporter(endpoint=receiver.url, timeout=10)
    try:
        holder = half_sent(receiver, 1000, b"\x0a")
        assert wait_until(lambda: receiver.budget.requests == 1, 2.0)
        threading.Timer(0.5, holder.close).start()
        t0 = time.monotonic()
        assert exporter.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
        assert 1.9 < time.monotonic() - t0 < 6.0  # waited Retry-After (2 s), not the SDK backoff (~1 s)
        assert requests_count(receiver, 503) >= 1 and requests_count(receiver, 200) == 1
    finally:
        exporter.shutdown()
        receiver.shutdown(0.2)


def test_memory_budget_refuses_a_request_that_does_not_fit():
    """A request whose estimated memory does not fit beside the ones in flight gets 503 + Retry-After."""
    body = request_bytes(20)
    # the holder reserves 10_000 * 7 bytes (body + protobuf estimate); the budget leaves less than `body` needs
    receiver = start(max_inflight_bytes=70_000 + len(body) * 3, admission_wait_s=0.2, body_timeout_s=5.0)
    try:
        holder = half_sent(receiver, 10_000, b"\x0a")
        assert wait_until(lambda: receiver.budget.requests == 1, 2.0)
        status, headers, _ = post(receiver, body)
        assert status == 503 and headers["Retry-After"] == "5"
        assert requests_count(receiver, 503) == 1
        holder.close()
        assert wait_until(lambda: receiver.budget.bytes == 0, 2.0)
        assert post(receiver, body)[0] == 200
    finally:
        receiver.shutdown(0.2)


def test_gzip_body_growing_past_the_budget_is_refused_with_503():
    """A gzip body inflating far past its admitted estimate while another request holds budget gets 503 + Retry-After."""
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "a" * 2_000_000  # gzip ratio ~1000
    big = gzip.compress(req.SerializeToString())
    receiver = start(max_inflight_bytes=1_000_000, admission_wait_s=0.2, body_timeout_s=5.0)
    try:
        holder = half_sent(receiver, 1000, b"\x0a")
        assert wait_until(lambda: receiver.budget.requests == 1, 2.0)
        status, headers, _ = post(receiver, big, **{"Content-Encoding": "gzip"})
        assert status == 503 and headers["Retry-After"] == "5"
        holder.close()
        assert wait_until(lambda: receiver.budget.requests == 0 and receiver.budget.bytes == 0, 2.0)
        status, _, payload = post(receiver, big, **{"Content-Encoding": "gzip"})  # alone it is admitted
        assert status == 200
        assert receiver.budget.peak_bytes > receiver.settings.max_inflight_bytes
    finally:
        receiver.shutdown(0.2)


def test_spans_cap_stops_conversion_and_counts_the_rest(monkeypatch):
    """spans_from_request(max_spans=10) builds 10 OtlpSpans and counts the other 40 as too_many_spans."""
    built = []
    real = otlp.to_span
    monkeypatch.setattr(otlp, "to_span", lambda *a, **k: built.append(1) or real(*a, **k))
    req = otlp.decode_protobuf(request_bytes(30))
    extra = req.resource_spans.add().scope_spans.add()  # a second resource past the cap: never converted
    extra.spans.extend(req.resource_spans[0].scope_spans[0].spans[:20])
    decoded = otlp.spans_from_request(req, max_spans=10)
    assert len(built) == 10 and len(decoded.spans) == 10
    assert decoded.rejected == {"too_many_spans": 40} and decoded.total == 50
    assert otlp.spans_from_request(req).rejected == {}  # no cap: everything converted


def test_receiver_applies_the_spans_cap_while_converting(monkeypatch):
    """Through HTTP, a 5,000-span request with max_spans_per_request=100 converts 100 spans, rejects 4,900."""
    built = []
    real = otlp.to_span
    monkeypatch.setattr(otlp, "to_span", lambda *a, **k: built.append(1) or real(*a, **k))
    receiver = start(max_spans_per_request=100)
    try:
        status, _, payload = post(receiver, request_bytes(5_000, traces=50))
        resp = ExportTraceServiceResponse.FromString(payload)
        assert status == 200 and resp.partial_success.rejected_spans == 4_900
        assert resp.partial_success.error_message == "4900 too_many_spans"
        assert len(built) == 100
    finally:
        receiver.shutdown(0.2)


@pytest.mark.parametrize("first", [b"POST /v1/traces HTTP/1.1\r\n", b"POST /v1/traces?q="])
def test_slow_headers_get_408_within_the_deadline_and_the_connection_ends(first):
    """A client trickling header (or request-line) bytes gets 408 after header_timeout_s in total; it is closed."""
    receiver = start(header_timeout_s=0.6, linger_s=0.2)
    try:
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        sock.sendall(first)
        assert wait_until(lambda: receiver.open_connections == 1, 2.0)
        t0 = time.monotonic()
        got = b""
        while time.monotonic() - t0 < 3.0 and not got:
            try:
                sock.sendall(b"X")  # one byte every 50 ms: a per-recv timeout would never fire
            except OSError:
                break
            sock.settimeout(0.05)
            try:
                got = sock.recv(4096)
            except TimeoutError:
                pass
        elapsed = time.monotonic() - t0
        assert got.startswith(b"HTTP/1.1 408") and elapsed < 1.5
        assert wait_until(lambda: receiver.open_connections == 0, 2.0)
        assert wait_until(lambda: not [t for t in threading.enumerate() if t.name == "claimwatch-otlp-conn"], 3.0)
        assert requests_count(receiver, 408) == 1
        sock.close()
    finally:
        receiver.shutdown(0.2)


def test_slow_body_gets_408_and_releases_its_admission():
    """A client that stops sending its body gets 408 after body_timeout_s; its slot and budget are released."""
    receiver = start(body_timeout_s=0.5, linger_s=0.2)
    try:
        sock = half_sent(receiver, 500, b"\x0a\x01")
        t0 = time.monotonic()
        status, headers = read_response(sock)
        assert status == 408 and 0.4 < time.monotonic() - t0 < 2.0 and headers["connection"] == "close"
        assert wait_until(lambda: receiver.open_connections == 0 and receiver.budget.requests == 0, 2.0)
        sock.close()
    finally:
        receiver.shutdown(0.2)


def test_oversized_headers_get_431_and_bounded_memory():
    """Request line + headers past max_header_bytes get 431 (counted) without being buffered further."""
    receiver = start(max_header_bytes=4096)
    try:
        status, _, _ = post(receiver, request_bytes(), **{f"X-Junk-{i}": "j" * 1000 for i in range(8)})
        assert status == 431 and requests_count(receiver, 431) == 1
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        sock.sendall(b"POST /v1/traces?" + b"q" * 100_000)  # an endless request line
        status, _ = read_response(sock)
        assert status == 431
        sock.close()
        assert post(receiver, request_bytes(), **{"X-Ok": "o" * 1000})[0] == 200
    finally:
        receiver.shutdown(0.2)


def test_idle_keepalive_connection_is_closed_after_the_timeout():
    """A keep-alive connection idle for keepalive_timeout_s is closed quietly and its thread ends."""
    receiver = start(keepalive_timeout_s=0.3)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
        conn.request("POST", "/v1/traces", body=request_bytes(), headers={"Content-Type": PROTOBUF})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Connection") != "close"
        resp.read()
        assert receiver.open_connections == 1
        assert wait_until(lambda: receiver.open_connections == 0, 2.0)
        assert conn.sock is not None and conn.sock.recv(10) == b""  # closed by the server, no answer
        conn.close()
    finally:
        receiver.shutdown(0.2)


def test_connections_past_the_bound_get_a_fast_503_not_a_reset():
    """With max_connections=2 taken by stalled clients, a third connection gets 503 + Retry-After at once."""
    receiver = start(max_connections=2, header_timeout_s=5.0)
    try:
        stalled = [socket.create_connection(("127.0.0.1", receiver.port)) for _ in range(2)]
        for s in stalled:
            s.sendall(b"POST /v1/traces HTTP/1.1\r\n")
        assert wait_until(lambda: receiver.open_connections == 2, 2.0)
        t0 = time.monotonic()
        status, headers, payload = post(receiver, request_bytes(2_000))
        assert status == 503 and headers["Retry-After"] == "5" and time.monotonic() - t0 < 1.0
        assert status_pb2.Status.FromString(payload).code == 14
        assert receiver.open_connections == 2 and requests_count(receiver, 503) == 1
        for s in stalled:
            s.close()
    finally:
        receiver.shutdown(0.2)


def test_burst_of_100_connections_gets_no_reset():
    """100 clients connecting and posting at once all get an answer (200, or 503 + Retry-After), none a reset."""
    receiver = start()
    body = request_bytes(3)
    barrier = threading.Barrier(100)

    def one(_i: int) -> tuple[int, str | None]:
        barrier.wait(10)
        status, headers, _ = post(receiver, body)
        return status, headers.get("Retry-After")

    try:
        with ThreadPoolExecutor(100) as pool:
            results = list(pool.map(one, range(100)))  # a reset would raise here
        assert all(s == 200 or (s == 503 and ra) for s, ra in results)
        assert sum(s == 200 for s, _ in results) >= 90
    finally:
        receiver.shutdown(0.2)


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"resourceSpans":' * 100_000])
def test_json_nested_100k_deep_gets_400(body):
    """JSON nested 100,000 deep is a 400 decode error (INVALID_ARGUMENT), not a 500."""
    receiver = start()
    try:
        status, _, payload = post(receiver, body, "application/json")
        assert status == 400 and json.loads(payload)["code"] == 3
        assert requests_count(receiver, 400) == 1 and requests_count(receiver, 500) == 0
    finally:
        receiver.shutdown(0.2)


def test_deep_attribute_values_are_400_or_accepted_never_500():
    """AnyValue kvlists nested 30/150/300 deep (JSON and protobuf) are accepted or refused with 400."""
    receiver = start()
    try:
        for depth in (30, 150, 300):
            value = "{}"
            for _ in range(depth):
                value = '{"kvlistValue":{"values":[{"key":"k","value":%s}]}}' % value
            doc = (
                '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","name":"d",'
                '"attributes":[{"key":"k","value":%s}]}]}]}]}' % ("01" * 16, "02" * 8, value)
            )
            status, _, _ = post(receiver, doc.encode(), "application/json")
            assert status in (200, 400), depth
            if status == 200:
                pb = otlp.decode_json(doc).SerializeToString()
                assert post(receiver, pb)[0] in (200, 400)
        assert requests_count(receiver, 500) == 0
    finally:
        receiver.shutdown(0.2)


def test_expect_100_continue_refusal_needs_no_body():
    """A refused request with Expect: 100-continue gets its final answer without sending the body."""
    receiver = start(max_body_bytes=1000)
    try:
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        sock.sendall(
            f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
            "Content-Length: 5000\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        status, _ = read_response(sock)
        assert status == 413
        sock.close()
        status, _, _ = post(receiver, request_bytes(), **{"Expect": "100-continue"})
        assert status == 200
    finally:
        receiver.shutdown(0.2)


# -- property: no malformed body gets a 5xx other than documented backpressure -----------------------------

_VALID = request_bytes(6, traces=2)
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "name",
                    "attributes",
                    "key",
                    "value",
                    "kvlistValue",
                    "arrayValue",
                    "values",
                    "stringValue",
                    "intValue",
                    "resource",
                    "startTimeUnixNano",
                    "status",
                    "code",
                    "events",
                    "links",
                    "flags",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=25,
)


def _deep(depth: int, opener: bytes, closer: bytes) -> bytes:
    return opener * depth + closer * depth


_BODIES = st.one_of(
    st.binary(max_size=300),
    _JSON.map(lambda d: json.dumps(d).encode()),
    st.builds(lambda d: json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [d]}]}]}).encode(), _JSON),
    st.integers(1, 200_000).map(lambda n: _deep(n, b"[", b"]")),
    st.integers(1, 200_000).map(lambda n: _deep(n, b'{"a":', b"}")),
    st.integers(0, len(_VALID)).map(lambda n: _VALID[:n]),
    st.builds(
        lambda b, i, x: b[:i] + bytes([x]) + b[i + 1 :],
        st.just(_VALID),
        st.integers(0, len(_VALID) - 1),
        st.integers(0, 255),
    ),
    st.binary(max_size=200).map(gzip.compress),
)
_CTYPES = st.sampled_from(
    [
        "application/x-protobuf",
        "application/json",
        "application/json; charset=utf-16",
        "APPLICATION/X-PROTOBUF",
        "text/plain",
        "",
        "application/grpc",
        "multipart/form-data",
    ]
)
_ENCODINGS = st.sampled_from([None, "gzip", "identity", "br", "deflate", "GZIP", ""])


@pytest.fixture(scope="module")
def fuzz_receiver():
    """One receiver for the property test (small limits so refusals are exercised too)."""
    receiver = start(max_body_bytes=300_000, max_spans_per_request=50, admission_wait_s=0.5)
    yield receiver
    receiver.shutdown(0.2)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(body=_BODIES, ctype=_CTYPES, encoding=_ENCODINGS, gzip_it=st.booleans(), chunked=st.booleans())
def test_random_bodies_never_get_a_5xx_except_backpressure(fuzz_receiver, body, ctype, encoding, gzip_it, chunked):
    """Random bytes, random/deep JSON, truncated/flipped protobuf, odd types and encodings, fixed or chunked: 2xx/4xx or 503+Retry-After."""
    if gzip_it and encoding in ("gzip", "GZIP"):
        body = gzip.compress(body)
    headers = {"Content-Encoding": encoding} if encoding is not None else {}
    if chunked and body:
        status, resp_headers, _ = post_chunked(fuzz_receiver, body, 97, ctype, **headers)
    else:
        status, resp_headers, _ = post(fuzz_receiver, body, ctype, **headers)
    assert status < 500 or (status == 503 and resp_headers["Retry-After"]), status
    assert requests_count(fuzz_receiver, 500) == 0


# -- chunked bodies (the OTel JS SDK streams every export: Transfer-Encoding: chunked, no Content-Length) --------


def post_chunked(
    receiver: OtlpReceiver, body: bytes, chunk: int = 4096, ctype: str = PROTOBUF, **headers: str
) -> tuple[int, Any, bytes]:
    """POST ``body`` with Transfer-Encoding: chunked (http.client's encode_chunked), no Content-Length."""
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    try:
        conn.request(
            "POST",
            receiver.settings.path,
            body=iter([body[i : i + chunk] for i in range(0, len(body), chunk)]),
            headers={"Content-Type": ctype, **headers},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def test_chunked_bodies_are_accepted_plain_and_gzip():
    """A chunked protobuf body, and a chunked gzip'd JSON body, are decoded and accepted (200, spans counted)."""
    receiver = start()
    try:
        status, _, payload = post_chunked(receiver, request_bytes(50, traces=5), chunk=100)
        assert status == 200 and ExportTraceServiceResponse.FromString(payload) == ExportTraceServiceResponse()
        doc = otlp.to_otlp_json(otlp.decode_protobuf(request_bytes(10)))
        status, _, payload = post_chunked(
            receiver, gzip.compress(doc), chunk=64, ctype="application/json", **{"Content-Encoding": "gzip"}
        )
        assert status == 200 and json.loads(payload) == {}
        accepted = receiver.otlp_metrics.spans.labels(source="http", outcome="accepted")._value.get()
        assert accepted == 60
    finally:
        receiver.shutdown(0.2)


def test_chunked_body_past_the_limit_gets_413_while_streaming():
    """A chunked body growing past max_body_bytes is refused with 413 (no Content-Length to check up front)."""
    receiver = start(max_body_bytes=10_000)
    try:
        status, _, _ = post_chunked(receiver, b"\x0a" * 50_000)
        assert status == 413 and requests_count(receiver, 413) == 1
        assert wait_until(lambda: receiver.budget.requests == 0 and receiver.budget.bytes == 0, 2.0)
    finally:
        receiver.shutdown(0.2)


def test_chunked_body_growing_past_the_budget_gets_503_retry_after():
    """With another request holding budget, a chunked body outgrowing its reservation gets 503 + Retry-After."""
    receiver = start(max_inflight_bytes=400_000, chunked_reserve_bytes=1_000, admission_wait_s=0.2, body_timeout_s=5.0)
    try:
        holder = half_sent(receiver, 10_000, b"\x0a")  # reserves 70,000 of the 400,000
        assert wait_until(lambda: receiver.budget.requests == 1, 2.0)
        status, headers, _ = post_chunked(receiver, b"\x0a" * 200_000, chunk=10_000)
        assert status == 503 and headers["Retry-After"] == "5"
        holder.close()
        assert wait_until(lambda: receiver.budget.requests == 0 and receiver.budget.bytes == 0, 2.0)
    finally:
        receiver.shutdown(0.2)


def test_broken_chunked_encoding_is_400_and_a_stalled_chunked_body_408():
    """A chunk size that is not hex is a 4xx; a chunked body that stops arriving gets 408 after body_timeout_s."""
    receiver = start(body_timeout_s=0.5, linger_s=0.2)
    try:
        head = (
            f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        sock.sendall(head + b"zz\r\nabc\r\n0\r\n\r\n")
        status, _ = read_response(sock)
        assert status == 400
        sock.close()
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        sock.sendall(head + b"5\r\n\x0a\x01")  # a chunk started, never finished
        t0 = time.monotonic()
        status, headers = read_response(sock)
        assert status == 408 and time.monotonic() - t0 < 2.0 and headers["connection"] == "close"
        sock.close()
        assert requests_count(receiver, 500) == 0
    finally:
        receiver.shutdown(0.2)


def test_budget_lets_the_oldest_request_grow_and_refuses_the_others():
    """Two requests growing past the budget: the younger one's growth is refused, the oldest's always granted."""
    from collector.admission import Budget

    budget = Budget(max_requests=4, max_bytes=100)
    old, young = budget.try_admit(40), budget.try_admit(40)
    assert old is not None and young is not None
    assert not budget.grow(young, 50) and budget.grow(old, 50) and budget.bytes == 130
    budget.release(old)
    assert budget.grow(young, 50)  # now the oldest
    budget.release(young)
    budget.release(young)  # a second release is a no-op
    assert budget.requests == 0 and budget.bytes == 0
