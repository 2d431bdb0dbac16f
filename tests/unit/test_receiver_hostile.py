"""OTLP receiver with hostile or odd input: invalid UTF-8, multi-member gzip, malformed HTTP framing, gRPC errors.

Every test runs a real receiver on a loopback port with a ``MemorySink`` (no Kafka), so the file takes seconds.
"""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import socket
import time
from typing import Any

import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from collector.sink import MemorySink

PROTOBUF = "application/x-protobuf"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
#: span text that must never reach a log line (an SSN-like number inside a body)
SECRET = b"alice.smith@example.com SSN 078-05-1120 "


#: each test receiver's metrics registry, by receiver
REGISTRIES: dict[int, CollectorRegistry] = {}


def start(**kw: Any) -> OtlpReceiver:
    """A started receiver on 127.0.0.1:<free port> with a MemorySink and the given ReceiverSettings overrides."""
    rs = ReceiverSettings(host="127.0.0.1", port=0, **kw)
    registry = CollectorRegistry()
    receiver = OtlpReceiver(rs, CollectorSettings(late_span_wait_s=0.05), sink=MemorySink(), registry=registry)
    REGISTRIES[id(receiver)] = registry
    return receiver.start()


def rag_request(first_trace: int = 1, traces: int = 1) -> ExportTraceServiceRequest:
    """``traces`` RAG traces (CHAIN root, RETRIEVER and LLM children), 3 spans each."""
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for t in range(first_trace, first_trace + traces):
        for sid, parent, attrs in (
            (
                2,
                1,
                {
                    "openinference.span.kind": "RETRIEVER",
                    "input.value": "what is x?",
                    "retrieval.documents.0.document.content": "x is 5",
                },
            ),
            (3, 1, {"openinference.span.kind": "LLM", "output.value": "x is 5"}),
            (1, 0, {"openinference.span.kind": "CHAIN", "input.value": "what is x?", "output.value": "x is 5"}),
        ):
            s = ss.spans.add()
            s.trace_id, s.span_id = t.to_bytes(16, "big"), sid.to_bytes(8, "big")
            if parent:
                s.parent_span_id = parent.to_bytes(8, "big")
            s.name, s.start_time_unix_nano, s.end_time_unix_nano = f"s{sid}", sid, sid + 10
            for k, v in attrs.items():
                kv = s.attributes.add()
                kv.key, kv.value.string_value = k, v
    return req


def with_bad_utf8_span(req: ExportTraceServiceRequest) -> bytes:
    """``req`` serialized plus one span whose name is ``trun`` + a lone surrogate as protobufjs writes it (ED A0 BD)."""
    bad = req.resource_spans[0].scope_spans[0].spans.add()
    bad.trace_id, bad.span_id, bad.name = (99).to_bytes(16, "big"), (7).to_bytes(8, "big"), "MARKERX"
    body = req.SerializeToString()
    assert body.count(b"MARKERX") == 1
    return body.replace(b"MARKERX", b"trun\xed\xa0\xbd")  # same length: the wire format stays valid


def post(receiver: OtlpReceiver, body: bytes, ctype: str = PROTOBUF, **headers: str) -> tuple[int, bytes]:
    """POST with http.client; returns (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    try:
        conn.request("POST", receiver.settings.path, body=body, headers={"Content-Type": ctype, **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def raw(receiver: OtlpReceiver, data: bytes) -> bytes:
    """Send raw bytes on a new connection; everything the receiver answers until it closes."""
    sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
    try:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out
    finally:
        sock.close()


def sample(receiver: OtlpReceiver, name: str, **labels: str) -> float:
    """A sample of the receiver's registry (0 when absent)."""
    return REGISTRIES[id(receiver)].get_sample_value(name, labels) or 0.0


def requests_count(receiver: OtlpReceiver, code: int | str, source: str = "http") -> float:
    """claimwatch_collector_otlp_requests_total{source,code}."""
    return sample(receiver, "claimwatch_collector_otlp_requests_total", source=source, code=str(code))


def accepted(receiver: OtlpReceiver, source: str = "http") -> float:
    """claimwatch_collector_otlp_spans_total{source,outcome="accepted"}."""
    return sample(receiver, "claimwatch_collector_otlp_spans_total", source=source, outcome="accepted")


def repaired(receiver: OtlpReceiver, source: str = "http") -> float:
    """claimwatch_collector_otlp_repaired_strings_total{source}."""
    return sample(receiver, "claimwatch_collector_otlp_repaired_strings_total", source=source)


def wait_records(receiver: OtlpReceiver, n: int, timeout: float = 3.0) -> int:
    """The number of records in the sink once it reaches ``n`` or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and len(receiver.sink.records) < n:
        time.sleep(0.02)
    return len(receiver.sink.records)


@pytest.fixture
def receiver():
    """A started receiver (HTTP and gRPC), shut down after the test."""
    r = start(grpc_port=0, linger_s=0.2)
    yield r
    r.shutdown(0.5)


# -- invalid UTF-8 -------------------------------------------------------------------------------------------------


def test_protobuf_span_with_invalid_utf8_is_repaired_and_the_batch_kept(receiver):
    """A lone surrogate in one span name: 200, all 10 spans accepted, U+FFFD in its place, the repair counted."""
    status, payload = post(receiver, with_bad_utf8_span(rag_request(1, traces=3)))
    assert status == 200 and not ExportTraceServiceResponse.FromString(payload).HasField("partial_success")
    assert accepted(receiver) == 10 and repaired(receiver) == 1
    assert wait_records(receiver, 3) >= 3  # the 3 RAG traces of the batch


def test_otlp_json_lone_surrogate_escape_is_repaired_and_the_other_span_kept(receiver):
    """OTLP/JSON ``"\\ud83d"`` (JSON.stringify of a string sliced mid-emoji): 200, both spans accepted, counted."""
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "%032x" % 5, "spanId": "%016x" % 1, "name": "ok"},
                            {"traceId": "%032x" % 6, "spanId": "%016x" % 1, "name": "\ud83d"},
                        ]
                    }
                ]
            }
        ]
    }
    status, payload = post(receiver, json.dumps(doc).encode(), "application/json")
    assert status == 200 and json.loads(payload) == {}
    assert accepted(receiver) == 2 and repaired(receiver) == 1


def test_grpc_message_with_invalid_utf8_is_repaired_and_accepted(receiver):
    """Over gRPC the same message is OK (not INTERNAL), its spans accepted and the repair counted."""
    call = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}").stream_unary(EXPORT)
    answer = call(iter([with_bad_utf8_span(rag_request(1, traces=3))]), timeout=5)
    assert ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans == 0
    assert accepted(receiver, "grpc") == 10 and repaired(receiver, "grpc") == 1
    assert requests_count(receiver, "OK", "grpc") == 1


def test_grpc_undecodable_message_is_invalid_argument_for_the_client_and_counted(receiver):
    """A message that is not an ExportTraceServiceRequest: the client gets INVALID_ARGUMENT, as counted."""
    call = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}").stream_unary(EXPORT)
    with pytest.raises(grpc.RpcError) as err:
        call(iter([b"\xff\xff\xff\xff"]), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert requests_count(receiver, "INVALID_ARGUMENT", "grpc") == 1


# -- gzip ----------------------------------------------------------------------------------------------------------


def test_multi_member_gzip_body_is_inflated_whole(receiver):
    """Two gzip members (RFC 1952): both are inflated, 6 of 6 spans accepted, 2 records."""
    body = gzip.compress(rag_request(1).SerializeToString()) + gzip.compress(rag_request(2).SerializeToString())
    status, payload = post(receiver, body, **{"Content-Encoding": "gzip"})
    assert status == 200 and ExportTraceServiceResponse.FromString(payload).partial_success.rejected_spans == 0
    assert accepted(receiver) == 6
    assert wait_records(receiver, 2) == 2


def test_many_small_gzip_members_are_all_inflated(receiver):
    """A body of 2,000 gzip members (a streaming writer flushing often) decodes to every span, wherever they are."""
    empty = gzip.compress(b"")
    body = empty * 1000 + gzip.compress(rag_request(1).SerializeToString()) + empty * 999
    status, _ = post(receiver, body, **{"Content-Encoding": "gzip"})
    assert status == 200 and accepted(receiver) == 3


@pytest.mark.parametrize("trailing", [b"GARBAGE", b"\x00\x00\x00\x00", b"\x1f"])
def test_bytes_after_the_gzip_data_are_400_with_a_clear_message(receiver, trailing):
    """Trailing bytes that are not another gzip member: 400 INVALID_ARGUMENT naming them, nothing accepted."""
    body = gzip.compress(rag_request(5).SerializeToString()) + trailing
    status, payload = post(receiver, body, **{"Content-Encoding": "gzip"})
    assert status == 400 and accepted(receiver) == 0
    message = status_pb2.Status.FromString(payload).message
    assert "after the gzip data" in message or "truncated" in message


def test_decompressed_limit_applies_across_gzip_members():
    """Members that each fit but together inflate past max_body_bytes: 413, nothing accepted."""
    r = start(max_body_bytes=64 * 1024)
    try:
        member = gzip.compress(b"\x00" * 40_000)  # inflates to 40 kB: under the limit alone, not twice
        status, _ = post(r, member + member, **{"Content-Encoding": "gzip"})
        assert status == 413 and accepted(r) == 0 and requests_count(r, 413) == 1
    finally:
        r.shutdown(0.5)


# -- malformed HTTP framing and other methods --------------------------------------------------------------------

_HEAD = f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
FRAMING = {
    "content_length_shorter_than_body": (_HEAD + "Content-Length: 1\r\nConnection: close\r\n\r\n").encode()
    + SECRET * 50,
    "bad_chunk_size": (_HEAD + "Transfer-Encoding: chunked\r\n\r\n").encode() + b"zz\r\n" + SECRET + b"\r\n0\r\n\r\n",
    "content_length_and_transfer_encoding": (
        _HEAD + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode()
    + b"%x\r\n" % len(SECRET)
    + SECRET
    + b"\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(FRAMING))
def test_malformed_framing_is_a_counted_400_and_its_bytes_are_never_logged(receiver, case, capfd, caplog):
    """aiohttp's parse errors: 400, counted in requests_total, logged without the request's bytes, rate-limited."""
    caplog.set_level(logging.DEBUG)
    answers = [raw(receiver, FRAMING[case]) for _ in range(5)]
    time.sleep(0.2)
    assert all(a.startswith(b"HTTP/1.") and a.split(b" ", 2)[1] == b"400" for a in answers)
    assert requests_count(receiver, 400) == 5
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    assert "078-05-1120" not in logged and "alice.smith" not in logged and "Traceback" not in logged
    assert logged.count("receiver_bad_http") == 1  # five requests, one line a minute


def test_other_methods_get_a_counted_405(receiver):
    """GET on the traces path: 405 with Allow: POST, counted in requests_total."""
    answer = raw(receiver, b"GET /v1/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 405") and b"Allow: POST" in answer
    assert requests_count(receiver, 405) == 1
