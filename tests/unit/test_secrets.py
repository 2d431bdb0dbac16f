"""Data protection without a broker: secrets never logged or printed, PII never in logs or metrics, TLS/SASL passed through.

The Kafka-topic side of redaction (consume the real topic) is in
tests/integration/test_faults.py.
"""

from __future__ import annotations

import io
import json

import structlog
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest

from collector.config import CollectorSettings
from collector.metrics import get_metrics
from collector.processor import RagTraceProcessor
from collector.sink import KafkaSink, producer_config
from contract.logs import configure_logging, redact_secrets
from contract.record import RagTrace
from evaluator_worker.config import WorkerSettings
from tests.fakes.kafka import MemoryProducer

API_KEY = "sk-ant-api03-Zq9xUNIQUEKEYxx_1234567890abcdef"
SASL_PASSWORD = "hunter2-UNIQUE-sasl-pw"
EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
EMPLOYEE = "EMP-884422"
SECRET_NAME = "Project Nightingale"


def render(**event) -> str:
    """One log line through the production processors (secret masking + JSON)."""
    buf = io.StringIO()
    log = structlog.wrap_logger(
        structlog.PrintLogger(buf),
        processors=[structlog.processors.add_log_level, redact_secrets, structlog.processors.JSONRenderer()],
    )
    log.warning(event.pop("event", "test event"), **event)
    return buf.getvalue()


def test_api_keys_and_passwords_masked_in_rendered_log_lines():
    """Key-named fields, nested dicts, sk-ant strings and key=value pairs inside free text are all masked."""
    line = render(
        event=f"calling judge with {API_KEY}",
        api_key=API_KEY,
        sasl_plain_password=SASL_PASSWORD,
        config={"kafka": {"sasl_plain_password": SASL_PASSWORD, "bootstrap": "b:9092"}, "headers": ["x", API_KEY]},
        detail=f"KafkaConfigurationError: {{'sasl_plain_password': '{SASL_PASSWORD}'}} api_key={API_KEY[:12]}zz "
        f"Authorization: Bearer {SASL_PASSWORD}",
        input_tokens=120,
    )
    assert API_KEY not in line and API_KEY[:12] + "zz" not in line and SASL_PASSWORD not in line
    data = json.loads(line)
    assert data["api_key"] == "***" and data["sasl_plain_password"] == "***"
    assert data["config"]["kafka"]["bootstrap"] == "b:9092"  # only secrets are masked
    assert data["input_tokens"] == 120  # token *counts* are not secrets


def test_configure_logging_chain_masks_secrets(capsys):
    """The chain installed by configure_logging (JSON mode) masks an API key passed to any logger."""
    saved = structlog.get_config()
    try:
        configure_logging("INFO", json_logs=True)
        structlog.get_logger("t").warning("judge_config", api_key=API_KEY, note=f"key is {API_KEY}")
        err = capsys.readouterr().err
    finally:
        structlog.configure(**saved)
    assert "judge_config" in err and API_KEY not in err


def test_configure_logging_writes_to_the_current_stderr_not_a_closed_one(monkeypatch):
    """After configure_logging, logs go to the sys.stderr of the moment: a stream swapped in then closed breaks nothing."""
    saved = structlog.get_config()
    then, now = io.StringIO(), io.StringIO()
    try:
        monkeypatch.setattr("sys.stderr", then)  # e.g. a CLI run inside redirect_stderr, or a test's capsys
        configure_logging("INFO", json_logs=True)
        monkeypatch.setattr("sys.stderr", now)
        then.close()
        structlog.get_logger("t").info("worker_partitions_revoked", partitions=[0])  # raised ValueError before
    finally:
        structlog.configure(**saved)
    assert "worker_partitions_revoked" in now.getvalue()


def test_worker_settings_never_print_secrets(monkeypatch):
    """repr/str/model_dump_json of WorkerSettings hide the API key and SASL password (SecretStr)."""
    monkeypatch.setenv("CLAIMWATCH_ANTHROPIC__API_KEY", API_KEY)
    monkeypatch.setenv("CLAIMWATCH_KAFKA__SASL_PLAIN_PASSWORD", SASL_PASSWORD)
    s = WorkerSettings()
    assert s.anthropic.api_key.get_secret_value() == API_KEY
    for text in (repr(s), str(s), s.model_dump_json(), json.dumps(s.model_dump(mode="json")), repr(s.kafka)):
        assert API_KEY not in text and SASL_PASSWORD not in text
    assert render(settings=s.model_dump(mode="json")).count(SASL_PASSWORD) == 0


def test_kafka_tls_and_sasl_settings_pass_through_from_env(monkeypatch):
    """CLAIMWATCH_KAFKA__* env vars reach kafka-python kwargs for both the collector and the worker."""
    env = {
        "CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS": "k1:9093, k2:9093",
        "CLAIMWATCH_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
        "CLAIMWATCH_KAFKA__SASL_MECHANISM": "SCRAM-SHA-512",
        "CLAIMWATCH_KAFKA__SASL_PLAIN_USERNAME": "claimwatch",
        "CLAIMWATCH_KAFKA__SASL_PLAIN_PASSWORD": SASL_PASSWORD,
        "CLAIMWATCH_KAFKA__SSL_CAFILE": "/etc/kafka/ca.pem",
        "CLAIMWATCH_KAFKA__SSL_CERTFILE": "/etc/kafka/client.pem",
        "CLAIMWATCH_KAFKA__SSL_KEYFILE": "/etc/kafka/client.key",
        "CLAIMWATCH_KAFKA__SSL_CHECK_HOSTNAME": "false",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    want = {
        "bootstrap_servers": ["k1:9093", "k2:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "claimwatch",
        "sasl_plain_password": SASL_PASSWORD,
        "ssl_cafile": "/etc/kafka/ca.pem",
        "ssl_certfile": "/etc/kafka/client.pem",
        "ssl_keyfile": "/etc/kafka/client.key",
        "ssl_check_hostname": False,
    }
    for kwargs in (
        WorkerSettings().kafka.client_kwargs(),
        CollectorSettings().kafka.client_kwargs(),
        producer_config(CollectorSettings()),
    ):
        assert {k: kwargs.get(k) for k in want} == want


def _pii_trace(tp: TracerProvider) -> None:
    tracer = tp.get_tracer("t")
    text = f"Mail {EMAIL}, call {PHONE}, card {CARD}, id {EMPLOYEE}, about {SECRET_NAME}."
    with tracer.start_as_current_span("RunnableSequence") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", text)
        root.set_attribute("output.value", text)
        root.set_attribute("claimwatch.route", "support")
        with tracer.start_as_current_span("retriever") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("input.value", text)
            r.set_attribute("retrieval.documents.0.document.content", text)
            r.set_attribute("retrieval.documents.0.document.id", EMAIL)


def test_redacted_text_never_reaches_the_producer_logs_or_metrics(capsys):
    """Emails, phones, cards, a custom regex and a callable: masked in the produced value; absent from logs and /metrics."""
    producer = MemoryProducer()
    registry = CollectorRegistry()
    s = CollectorSettings(
        late_span_wait_s=0.0, redact_emails=True, redact_phones=True, redact_cards=True, redact_patterns=[r"EMP-\d+"]
    )
    sink = KafkaSink(s, producer_factory=lambda **kw: producer, metrics=get_metrics(registry))
    saved = structlog.get_config()
    try:
        configure_logging("DEBUG", json_logs=True)
        proc = RagTraceProcessor(s, sink=sink, registry=registry, redact=lambda t: t.replace(SECRET_NAME, "[NAME]"))
        tp = TracerProvider()
        tp.add_span_processor(proc)
        _pii_trace(tp)
        assert proc.force_flush(5_000)
        proc.shutdown()
        logs = capsys.readouterr()
    finally:
        structlog.configure(**saved)
    (value,) = producer.values
    rec = RagTrace.from_json_bytes(value)
    assert "[EMAIL_1]" in rec.answer and "[PHONE_1]" in rec.answer and "[CARD_1]" in rec.answer
    assert "[REDACTED]" in rec.answer and "[NAME]" in rec.answer
    exposition = generate_latest(registry).decode()
    for secret in (EMAIL, PHONE, CARD, EMPLOYEE, SECRET_NAME, "4111"):
        for where, text in (("kafka", value.decode()), ("logs", logs.out + logs.err), ("metrics", exposition)):
            assert secret not in text, f"{secret!r} leaked into {where}"
