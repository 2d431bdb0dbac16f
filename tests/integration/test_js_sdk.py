"""The official OpenTelemetry JS SDK (Node.js, OTLP/HTTP protobuf and JSON, chunked bodies) into the receiver."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from tests.integration import otlp_clients
from tests.integration.kafka_helpers import drain
from tests.integration.otlp_clients import TOKEN, js_answer, js_chunks, js_question, make_certs, run_js_app

pytestmark = pytest.mark.integration


def start(bootstrap: str, topic: str, **kw) -> OtlpReceiver:
    """A receiver on a free loopback port producing to ``topic``."""
    cs = CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap), topic=topic, late_span_wait_s=0.05, linger_ms=5
    )
    return OtlpReceiver(ReceiverSettings(host="127.0.0.1", port=0, **kw), cs, registry=CollectorRegistry()).start()


def assert_exact(records: list[RagTrace], n: int) -> None:
    """``n`` records, one per request, with the app's question, answer and documents byte for byte."""
    assert sorted(r.question for r in records) == sorted(js_question(i) for i in range(n))
    by_q = {r.question: r for r in records}
    for i in range(n):
        r = by_q[js_question(i)]
        assert r.answer == js_answer(i)
        assert [c.content for c in r.contexts] == js_chunks(i)
        assert r.slices["release"] == "js-1" and r.attributes["service.name"] == "js-rag"


@pytest.mark.parametrize("protocol,gzip", [("proto", False), ("json", False), ("proto", True), ("json", True)])
def test_js_sdk_delivers_10_of_10_records(kafka_bootstrap, topic_name, protocol, gzip):
    """The JS SDK's OTLP/HTTP exporter (chunked body, no Content-Length; plain or gzip) delivers 10 of 10 records, exact."""
    receiver = start(kafka_bootstrap, topic_name)
    try:
        summary = run_js_app(receiver.url, protocol, gzip=gzip)
        assert summary["export_failed"] == 0 and summary["export_ok"] >= 1, summary
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, 10, 20)]
    finally:
        receiver.shutdown(5.0)
    assert_exact(records, 10)
    assert receiver.otlp_metrics.spans.labels(source="http", outcome="accepted")._value.get() == 30


@pytest.mark.parametrize("protocol", ["proto", "json"])
def test_js_sdk_over_tls_with_token_and_401_without(kafka_bootstrap, topic_name, protocol, tmp_path):
    """Over TLS with the bearer token the JS app delivers 10/10; without it every export gets 401, counted."""
    certs = make_certs(tmp_path)
    receiver = start(
        kafka_bootstrap, topic_name, auth_token=TOKEN, tls_cert_file=certs["cert"], tls_key_file=certs["key"]
    )
    try:
        assert receiver.url.startswith("https://")
        denied = run_js_app(receiver.url, protocol, n=3, ca=certs["ca"])
        assert denied["export_ok"] == 0 and denied["export_failed"] >= 1, denied
        assert any("401" in e or "Unauthorized" in e for e in denied["errors"]), denied
        unauthenticated = receiver.otlp_metrics.requests.labels(source="http", code="401")._value.get()
        assert unauthenticated == denied["export_failed"]
        summary = run_js_app(receiver.url, protocol, token=TOKEN, ca=certs["ca"])
        assert summary["export_failed"] == 0, summary
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, 10, 20)]
    finally:
        receiver.shutdown(5.0)
    assert_exact(records, 10)


def test_js_sdk_documents_past_the_attribute_limit_give_records_flagged_incomplete(kafka_bootstrap, topic_name):
    """64 documents per retriever span (JS SDK drops the newest attributes past 128): 3 records, flagged incomplete."""
    receiver = start(kafka_bootstrap, topic_name)
    try:
        summary = run_js_app(receiver.url, "proto", n=3, docs=64)
        assert summary["export_failed"] == 0, summary
        assert receiver.force_flush(10.0)
        records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, topic_name, 3, 20)]
    finally:
        receiver.shutdown(5.0)
    assert sorted(r.question for r in records) == sorted(js_question(i) for i in range(3))
    for r in records:
        assert r.attributes["incomplete"] == "attribute_limit" and r.attributes["dropped_attributes"] > 0
        assert 30 <= len(r.contexts) < 64  # the first (best-ranked) documents kept, the newest dropped
        assert r.contexts[0].content.startswith("Refunds are paid")
    incomplete = receiver.metrics.traces.labels(outcome="incomplete")._value.get()
    assert incomplete == 3


@pytest.mark.parametrize("ci,outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_missing_node_fails_under_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    """Without node/npm the JS SDK rows fail when CI is set (never a silent skip in CI) and skip otherwise."""
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(otlp_clients.shutil, "which", lambda name: None)
    with pytest.raises(outcome):
        otlp_clients.js_app_ready()
