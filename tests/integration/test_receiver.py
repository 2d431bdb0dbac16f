"""OTLP/HTTP receiver with real peers: the OTel SDK's OTLP exporter in, the real broker out."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request

import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client import CollectorRegistry

from collector import otlp
from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from collector.sink import KafkaSink
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from tests.integration.kafka_helpers import drain

pytestmark = pytest.mark.integration

QUESTIONS = {
    "How long do refunds take?": ("Refunds take 5 days.", ["Refunds are paid within 5 days.", "Fees are 3 euros."]),
    "Can I appeal?": ("You can appeal within 30 days.", ["Appeals are open for 30 days.", "Appeals go by mail."]),
    "Is there a fee?": ("There is a 3 euro fee.", ["A 3 euro fee applies.", "Fees are waived for members."]),
}


def csettings(bootstrap: str = "127.0.0.1:1", topic: str = "unused", **kw) -> CollectorSettings:
    return CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap),
        topic=topic,
        late_span_wait_s=kw.pop("late_span_wait_s", 0.05),
        linger_ms=5,
        **kw,
    )


def start(cs: CollectorSettings, **kw) -> OtlpReceiver:
    rs = ReceiverSettings(
        host="127.0.0.1", port=0, **{k: kw.pop(k) for k in list(kw) if k in ReceiverSettings.model_fields}
    )
    return OtlpReceiver(rs, cs, registry=CollectorRegistry(), **kw).start()


def emit_rag(tracer, question: str, answer: str, chunks: list[str]) -> None:
    """One OpenInference RAG request: root CHAIN, RETRIEVER with documents, LLM."""
    with tracer.start_as_current_span(
        "rag", attributes={"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer}
    ):
        attrs = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i, chunk in enumerate(chunks):
            attrs[f"retrieval.documents.{i}.document.id"] = f"doc-{i}"
            attrs[f"retrieval.documents.{i}.document.content"] = chunk
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
            },
        ):
            pass


def post(url: str, body: bytes, ctype: str, **headers: str):
    """POST and return (status, headers, body) without raising on HTTP errors."""
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype, **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def request_bytes(question: str = "Can I appeal?") -> bytes:
    """An ExportTraceServiceRequest (protobuf) of one RAG trace built by the SDK."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exp = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exp))
    answer, chunks = QUESTIONS[question]
    emit_rag(tp.get_tracer("t"), question, answer, chunks)
    return encode_spans(exp.get_finished_spans()).SerializeToString()


def test_sdk_otlp_exporter_to_receiver_to_kafka(kafka_bootstrap, topic_name):
    """The OTel SDK's own OTLP/HTTP exporter (gzip) feeds the receiver; RagTrace records land on the broker."""
    receiver = start(csettings(kafka_bootstrap, topic_name))
    tp = TracerProvider(
        resource=Resource.create({"service.name": "py-rag", "service.version": "r2"}),
        span_limits=SpanLimits(max_span_attributes=512),
    )
    tp.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=receiver.url, compression=Compression.Gzip), schedule_delay_millis=50
        )
    )
    tracer = tp.get_tracer("app")
    try:
        for q, (a, chunks) in QUESTIONS.items():
            emit_rag(tracer, q, a, chunks)
        assert tp.force_flush(10_000)
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, len(QUESTIONS), 20)]
    finally:
        tp.shutdown()
        receiver.shutdown(5.0)
    assert sorted(r.question for r in records) == sorted(QUESTIONS)
    for r in records:
        answer, chunks = QUESTIONS[r.question]
        assert r.answer == answer
        assert [c.content for c in r.contexts] == chunks
        assert r.slices["release"] == "r2" and r.attributes["service.name"] == "py-rag"
        assert r.root_span_id and len(r.trace_id) == 32
    accepted = receiver.otlp_metrics.spans.labels(source="http", outcome="accepted")._value.get()
    assert accepted == 3 * len(QUESTIONS)


def test_otlp_json_gzip_request_with_a_bad_span_gets_partial_success(kafka_bootstrap, topic_name):
    """OTLP/JSON + gzip via urllib: 200 JSON response with partial_success for the bad span, record on Kafka."""
    receiver = start(csettings(kafka_bootstrap, topic_name))
    try:
        request = otlp.decode_protobuf(request_bytes("Is there a fee?"))
        bad = request.resource_spans[0].scope_spans[0].spans.add()
        bad.trace_id, bad.span_id, bad.name = b"\x00" * 16, b"\x01" * 8, "bad"
        body = gzip.compress(otlp.to_otlp_json(request))
        status, headers, payload = post(receiver.url, body, "application/json", **{"Content-Encoding": "gzip"})
        assert status == 200 and headers["Content-Type"] == "application/json"
        assert json.loads(payload) == {"partialSuccess": {"rejectedSpans": "1", "errorMessage": "1 invalid_trace_id"}}
        assert receiver.force_flush(10.0)
        [msg] = drain(kafka_bootstrap, topic_name, 1, 20)
    finally:
        receiver.shutdown(5.0)
    record = RagTrace.from_json_bytes(msg.value)
    assert record.question == "Is there a fee?" and record.answer == "There is a 3 euro fee."
    assert receiver.otlp_metrics.rejected.labels(source="http", reason="invalid_trace_id")._value.get() == 1


class DeadProducerFactory:
    """A producer factory for a broker that never answers: every creation fails."""

    def __call__(self, **config):
        raise ConnectionError("broker unreachable")


def test_full_sink_queue_answers_503_with_retry_after():
    """When the sink cannot deliver and its queue is full, the receiver answers 503 + Retry-After, not 200."""
    cs = csettings(queue_size=1)
    registry = CollectorRegistry()
    from collector.metrics import get_metrics

    sink = KafkaSink(cs, producer_factory=DeadProducerFactory(), metrics=get_metrics(registry))
    rs = ReceiverSettings(host="127.0.0.1", port=0, retry_after_s=7)
    receiver = OtlpReceiver(rs, cs, sink=sink, registry=registry).start()
    try:
        status, _, payload = post(receiver.url, request_bytes("Can I appeal?"), "application/x-protobuf")
        assert status == 200 and ExportTraceServiceResponse.FromString(payload) == ExportTraceServiceResponse()
        receiver.pipeline.pop_complete(flush=True)  # the trace goes to the sink queue, which cannot drain
        assert sink.queue_depth == 1
        status, headers, payload = post(receiver.url, request_bytes("Is there a fee?"), "application/x-protobuf")
        assert status == 503 and headers["Retry-After"] == "7"
        assert status_pb2.Status.FromString(payload).code == 14  # UNAVAILABLE
        assert receiver.otlp_metrics.requests.labels(source="http", code="503")._value.get() == 1
    finally:
        receiver.shutdown(0.2)


def test_full_trace_buffer_answers_429_with_retry_after():
    """When the assembler buffers max_buffered_traces open traces, a new request gets 429 + Retry-After."""
    from collector.otlp import decode_protobuf

    receiver = start(csettings(max_buffered_traces=1, late_span_wait_s=60.0), retry_after_s=3)
    try:
        request = decode_protobuf(request_bytes("Can I appeal?"))
        spans = request.resource_spans[0].scope_spans[0].spans
        kept = [s for s in spans if s.parent_span_id]  # children only: the trace stays open
        del spans[:]
        spans.extend(kept)
        status, _, _ = post(receiver.url, request.SerializeToString(), "application/x-protobuf")
        assert status == 200 and len(receiver.pipeline) == 1
        status, headers, _ = post(receiver.url, request_bytes("Is there a fee?"), "application/x-protobuf")
        assert status == 429 and headers["Retry-After"] == "3"
    finally:
        receiver.shutdown(0.2)


def test_body_limits_garbage_and_media_types():
    """413 past max_body_bytes (sent or gunzipped), 400 + Status for garbage, 415 for other types, 404 elsewhere."""
    receiver = start(csettings(), max_body_bytes=2_000)
    url = receiver.url
    try:
        status, _, _ = post(url, b"\x00" * 2_001, "application/x-protobuf")
        assert status == 413
        status, _, _ = post(
            url, gzip.compress(b"\x00" * 50_000), "application/x-protobuf", **{"Content-Encoding": "gzip"}
        )
        assert status == 413
        status, headers, payload = post(url, b"\xff\xff\xff\xff", "application/x-protobuf")
        assert status == 400 and headers["Content-Type"] == "application/x-protobuf"
        assert status_pb2.Status.FromString(payload).code == 3  # INVALID_ARGUMENT
        status, headers, payload = post(url, b"{nope", "application/json")
        assert status == 400 and json.loads(payload)["code"] == 3
        status, _, _ = post(url, b"not gzip", "application/x-protobuf", **{"Content-Encoding": "gzip"})
        assert status == 400
        status, _, _ = post(url, b"x", "text/plain")
        assert status == 415
        status, _, _ = post(url, b"x", "application/x-protobuf", **{"Content-Encoding": "br"})
        assert status == 415
        status, _, _ = post(url.replace("/v1/traces", "/v1/logs"), b"", "application/x-protobuf")
        assert status == 404
        codes = {
            c: receiver.otlp_metrics.requests.labels(source="http", code=c)._value.get() for c in ("400", "413", "415")
        }
        assert codes == {"400": 3, "413": 2, "415": 2}
    finally:
        receiver.shutdown(0.2)


def test_spans_past_the_per_request_limit_are_rejected_in_partial_success():
    """With max_spans_per_request=2 a 3-span request accepts 2 and reports 1 rejected."""
    receiver = start(csettings(), max_spans_per_request=2)
    try:
        status, _, payload = post(receiver.url, request_bytes(), "application/x-protobuf")
        resp = ExportTraceServiceResponse.FromString(payload)
        assert status == 200 and resp.partial_success.rejected_spans == 1
        assert "too_many_spans" in resp.partial_success.error_message
    finally:
        receiver.shutdown(0.2)


def test_cli_registers_the_receiver_subcommand():
    """claimwatch.ingest_cli registers `receiver` with host/port/bootstrap/topic flags and its handler."""
    import argparse

    from claimwatch.ingest_cli import add_receiver_cli, cmd_receiver

    parser = argparse.ArgumentParser()
    add_receiver_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["receiver", "--port", "4319", "--bootstrap", "k:9092", "--topic", "t"])
    assert (args.command, args.port, args.bootstrap, args.topic, args.func) == (
        "receiver",
        4319,
        "k:9092",
        "t",
        cmd_receiver,
    )
