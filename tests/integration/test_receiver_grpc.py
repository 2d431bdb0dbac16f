"""OTLP/gRPC into the receiver with the OTel Python SDK's own gRPC exporter: records, TLS, tokens, backpressure."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from prometheus_client import CollectorRegistry

from collector import otlp
from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from tests.integration.kafka_helpers import drain
from tests.integration.otlp_clients import TOKEN, make_certs
from tests.integration.test_receiver import emit_rag, request_bytes

pytestmark = pytest.mark.integration


def start(bootstrap: str = "127.0.0.1:1", topic: str = "unused", cs_kw: dict | None = None, **kw) -> OtlpReceiver:
    """A receiver with gRPC on a free port (HTTP on another)."""
    cs = CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap),
        topic=topic,
        **{"late_span_wait_s": 0.05, "linger_ms": 5, **(cs_kw or {})},
    )
    rs = ReceiverSettings(host="127.0.0.1", port=0, grpc_port=0, **kw)
    return OtlpReceiver(rs, cs, registry=CollectorRegistry()).start()


def questions(n: int) -> dict[str, tuple[str, list[str]]]:
    """``n`` questions with their answers and documents (German, Chinese, euro signs)."""
    return {
        f"Frage {i}: wie lange dauert die Erstattung? (退款 €{i})": (
            f"{i + 2} Tage, Grüße €{i}.",
            [f"Erstattung in {i + 2} Tagen. 退款", "Gebühr €3."],
        )
        for i in range(n)
    }


def send_with_sdk(receiver: OtlpReceiver, qs: dict, **exporter_kw) -> list[SpanExportResult]:
    """10 RAG requests through a TracerProvider + BatchSpanProcessor + the SDK's OTLP/gRPC exporter."""
    results: list[SpanExportResult] = []
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{receiver.grpc_port}", timeout=10, **exporter_kw)
    real_export = exporter.export
    exporter.export = lambda spans: results.append(real_export(spans)) or results[-1]  # type: ignore[method-assign]
    tp = TracerProvider(resource=Resource.create({"service.name": "py-grpc", "service.version": "g1"}))
    tp.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    tracer = tp.get_tracer("app")
    for q, (a, chunks) in qs.items():
        emit_rag(tracer, q, a, chunks)
    tp.force_flush(15_000)
    tp.shutdown()
    return results


def assert_exact(records: list[RagTrace], qs: dict) -> None:
    """One record per question with its answer and documents byte for byte."""
    assert sorted(r.question for r in records) == sorted(qs)
    for r in records:
        answer, chunks = qs[r.question]
        assert r.answer == answer and [c.content for c in r.contexts] == chunks
        assert r.slices["release"] == "g1"


def test_python_grpc_exporter_delivers_10_of_10(kafka_bootstrap, topic_name):
    """The OTel Python SDK's OTLP/gRPC exporter (plaintext) delivers 10 of 10 RAG records, exact."""
    receiver = start(kafka_bootstrap, topic_name)
    qs = questions(10)
    try:
        results = send_with_sdk(receiver, qs, insecure=True)
        assert results and all(r == SpanExportResult.SUCCESS for r in results)
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, 10, 20)]
    finally:
        receiver.shutdown(5.0)
    assert_exact(records, qs)
    assert receiver.otlp_metrics.spans.labels(source="grpc", outcome="accepted")._value.get() == 30


def test_python_grpc_exporter_over_tls_with_token_and_unauthenticated_without(kafka_bootstrap, topic_name, tmp_path):
    """Over TLS with the bearer token: 10 of 10 records; without it every export fails UNAUTHENTICATED, counted."""
    certs = make_certs(tmp_path)
    receiver = start(
        kafka_bootstrap, topic_name, auth_token=TOKEN, tls_cert_file=certs["cert"], tls_key_file=certs["key"]
    )
    creds = grpc.ssl_channel_credentials(root_certificates=open(certs["ca"], "rb").read())
    qs = questions(10)
    try:
        denied = send_with_sdk(receiver, questions(2), credentials=creds)
        assert denied and all(r == SpanExportResult.FAILURE for r in denied)
        assert receiver.otlp_metrics.requests.labels(source="grpc", code="UNAUTHENTICATED")._value.get() == len(denied)
        results = send_with_sdk(receiver, qs, credentials=creds, headers={"authorization": f"Bearer {TOKEN}"})
        assert results and all(r == SpanExportResult.SUCCESS for r in results)
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, 10, 20)]
    finally:
        receiver.shutdown(5.0)
    assert_exact(records, qs)


def test_grpc_backpressure_is_resource_exhausted_with_retry_info_and_oversize_is_refused():
    """A full assembler answers RESOURCE_EXHAUSTED with RetryInfo (retry_after_s); a message past max_body_bytes is refused."""
    receiver = start(
        cs_kw={"max_buffered_traces": 1, "late_span_wait_s": 60.0}, retry_after_s=3, max_body_bytes=200_000
    )
    channel = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    try:
        big = otlp.decode_protobuf(request_bytes("Can I appeal?"))
        big.resource_spans[0].scope_spans[0].spans[0].name = "x" * 300_000
        with pytest.raises(grpc.RpcError) as err:
            stub.Export(big, timeout=5)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert receiver.budget.requests == 0  # its admission slot was given back
        request = otlp.decode_protobuf(request_bytes("Can I appeal?"))
        spans = request.resource_spans[0].scope_spans[0].spans
        kept = [s for s in spans if s.parent_span_id]  # children only: the trace stays open
        del spans[:]
        spans.extend(kept)
        stub.Export(request, timeout=5)
        with pytest.raises(grpc.RpcError) as err:
            stub.Export(otlp.decode_protobuf(request_bytes("Is there a fee?")), timeout=5)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        trailers = dict(err.value.trailing_metadata())
        status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
        info = error_details_pb2.RetryInfo()
        assert status.details[0].Unpack(info) and info.retry_delay.seconds == 3
        counted = receiver.otlp_metrics.requests.labels(source="grpc", code="RESOURCE_EXHAUSTED")._value.get()
        assert counted == 1  # the oversize message was refused by grpcio as it was received, never decoded
    finally:
        channel.close()
        receiver.shutdown(0.2)


def test_python_grpc_exporter_waits_out_unavailable_with_retry_info_then_succeeds():
    """With the memory budget full the call gets UNAVAILABLE + RetryInfo(1 s); the SDK exporter waits it out and succeeds."""
    import threading
    import time

    receiver = start(retry_after_s=1, max_concurrent_requests=2, max_inflight_bytes=1_000)
    # hold the whole budget (a request alone is always admitted: take two tickets so a third does not fit)
    held = [receiver.budget.try_admit(1), receiver.budget.try_admit(1)]
    assert all(held)
    threading.Timer(1.5, lambda: [receiver.budget.release(t) for t in held]).start()
    try:
        t0 = time.monotonic()
        results = send_with_sdk(receiver, questions(2), insecure=True)
        elapsed = time.monotonic() - t0
        assert results and all(r == SpanExportResult.SUCCESS for r in results)
        assert elapsed >= 1.0  # it waited the RetryInfo delay at least once
        unavailable = receiver.otlp_metrics.requests.labels(source="grpc", code="UNAVAILABLE")._value.get()
        assert unavailable >= 1
        assert receiver.otlp_metrics.requests.labels(source="grpc", code="OK")._value.get() == len(results)
    finally:
        receiver.shutdown(0.2)


def test_grpc_calls_past_the_concurrency_bound_are_refused_at_once_with_retry_info_and_the_sdk_delivers_later():
    """Past max_concurrent_requests a call gets UNAVAILABLE + RetryInfo at once; the SDK exporter retries and delivers."""
    import threading
    import time

    receiver = start(max_concurrent_requests=1, retry_after_s=1)
    release = threading.Event()
    real_accept = receiver.accept
    blocked = threading.Event()

    def slow_accept(request, source):
        if not blocked.is_set():  # only the first call is held
            blocked.set()
            release.wait(10)
        return real_accept(request, source)

    receiver.accept = slow_accept  # type: ignore[method-assign]
    channel = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    try:
        first = stub.Export.future(otlp.decode_protobuf(request_bytes("Can I appeal?")), timeout=20)
        assert blocked.wait(5)  # the first call is in the servicer, holding the only slot
        t0 = time.monotonic()
        with pytest.raises(grpc.RpcError) as err:
            stub.Export(otlp.decode_protobuf(request_bytes("Is there a fee?")), timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE and time.monotonic() - t0 < 1.0
        trailers = dict(err.value.trailing_metadata())
        info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
        assert info.retry_delay.seconds == 1
        status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
        assert status.details[0].Unpack(error_details_pb2.RetryInfo())
        # the OTel Python gRPC exporter gets the same refusal, waits RetryInfo's delay and delivers once the slot frees
        threading.Timer(1.5, release.set).start()
        t0 = time.monotonic()
        results = send_with_sdk(receiver, questions(2), insecure=True)
        assert results and all(r == SpanExportResult.SUCCESS for r in results)
        assert time.monotonic() - t0 >= 1.0
        first.result(timeout=10)
        busy = receiver.otlp_metrics.requests.labels(source="grpc", code="UNAVAILABLE")._value.get()
        assert busy >= 2  # every refusal is ours: counted (grpcio's own limit would not be)
        assert receiver.otlp_metrics.requests.labels(source="grpc", code="RESOURCE_EXHAUSTED")._value.get() == 0
    finally:
        release.set()
        channel.close()
        receiver.shutdown(0.2)
