"""RagTraceProcessor: O(1) on_end, background assembly, sampling, redaction, limits, flush, fork reset."""

from __future__ import annotations

import socket
import statistics
import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings, SamplingSettings
from collector.processor import RagTraceProcessor, check_environment, check_provider
from collector.sink import KafkaSink
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from tests.fakes.kafka import MemoryProducer


class FakeSink:
    """Collects submitted records; remembers flush/shutdown/fork calls."""

    def __init__(self) -> None:
        self.records: list[RagTrace] = []
        self.calls: list[str] = []

    def submit(self, record: RagTrace) -> bool:
        self.records.append(record)
        return True

    def force_flush(self, timeout_s: float) -> bool:
        self.calls.append("flush")
        return True

    def shutdown(self, timeout_s: float) -> bool:
        self.calls.append("shutdown")
        return True

    def reset_after_fork(self) -> None:
        self.calls.append("fork")


def setup(settings: CollectorSettings | None = None, sink=None, **kw):
    registry = CollectorRegistry()
    sink = sink if sink is not None else FakeSink()
    proc = RagTraceProcessor(settings or CollectorSettings(late_span_wait_s=0.01), sink=sink, registry=registry, **kw)
    tp = TracerProvider()
    tp.add_span_processor(proc)
    return proc, tp, sink, registry


def metric(registry, name, **labels) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def rag_trace(
    tp: TracerProvider,
    question="What is the refund window?",
    answer="30 days.",
    docs=("Refunds: 30 days.",),
    end_root=True,
):
    tracer = tp.get_tracer("test")
    root = tracer.start_span("RunnableSequence")
    root.set_attribute("openinference.span.kind", "CHAIN")
    root.set_attribute("input.value", question)
    root.set_attribute("output.value", answer)
    from opentelemetry import trace

    ctx = trace.set_span_in_context(root)
    with tracer.start_as_current_span("retriever", context=ctx) as r:
        r.set_attribute("openinference.span.kind", "RETRIEVER")
        r.set_attribute("input.value", question)
        for i, doc in enumerate(docs):
            r.set_attribute(f"retrieval.documents.{i}.document.content", doc)
    if end_root:
        root.end()
    return root


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rag_trace_becomes_one_record_and_is_counted():
    """A finished RAG trace is assembled on the background thread, sampled in and submitted once."""
    proc, tp, sink, reg = setup()
    rag_trace(tp)
    assert proc.force_flush(2000)
    (rec,) = sink.records
    assert (rec.question, rec.answer, [c.content for c in rec.contexts]) == (
        "What is the refund window?",
        "30 days.",
        ["Refunds: 30 days."],
    )
    assert metric(reg, "claimwatch_collector_spans_total") == 2
    for outcome in ("assembled", "sampled_in", "queued"):
        assert metric(reg, "claimwatch_collector_traces_total", outcome=outcome) == 1
    proc.shutdown()
    assert sink.calls[-1] == "shutdown"


def test_not_rag_and_sampled_out_are_counted_not_produced():
    """A trace without context is not_rag; ratio 0 gives sampled_out; neither reaches the sink."""
    proc, tp, sink, reg = setup(CollectorSettings(late_span_wait_s=0.01, sampling=SamplingSettings(ratio=0.0)))
    with tp.get_tracer("t").start_as_current_span("plain"):
        pass
    rag_trace(tp)
    proc.force_flush(2000)
    assert sink.records == []
    assert metric(reg, "claimwatch_collector_traces_total", outcome="not_rag") == 1
    assert metric(reg, "claimwatch_collector_traces_total", outcome="sampled_out") == 1
    assert metric(reg, "claimwatch_collector_sampling_decisions_total", decision="drop", reason="ratio_out") == 1
    proc.shutdown()


def test_flush_skips_late_span_wait_and_shutdown_delivers_buffered():
    """With a long late-span wait, shutdown still delivers every trace whose root ended; open ones are counted."""
    proc, tp, sink, reg = setup(CollectorSettings(late_span_wait_s=60))
    for i in range(20):
        rag_trace(tp, answer=f"answer {i}")
    rag_trace(tp, end_root=False)
    time.sleep(0.1)
    assert sink.records == []
    proc.shutdown()
    assert sorted(r.answer for r in sink.records) == sorted(f"answer {i}" for i in range(20))
    assert metric(reg, "claimwatch_collector_dropped_total", reason="incomplete_at_shutdown") == 1


def test_kafka_unreachable_on_end_stays_fast_and_drops_are_counted():
    """With the broker down, on_end stays in microseconds and every overflow is counted, never blocking."""
    settings = CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=f"127.0.0.1:{closed_port()}", request_timeout_ms=500),
        late_span_wait_s=0.0,
        queue_size=5,
        max_block_ms=200,
    )
    registry = CollectorRegistry()
    proc = RagTraceProcessor(settings, registry=registry, span_queue_size=1_000)
    # pre-built finished spans, so only on_end itself is timed
    exporter = InMemorySpanExporter()
    tp_src = TracerProvider()
    tp_src.add_span_processor(SimpleSpanProcessor(exporter))
    for i in range(1_500):
        rag_trace(tp_src, answer=f"a{i}")
    spans = exporter.get_finished_spans()
    durations = []
    for span in spans:
        t0 = time.perf_counter_ns()
        proc.on_end(span)
        durations.append(time.perf_counter_ns() - t0)
    median_us = statistics.median(durations) / 1000
    print(f"on_end median {median_us:.2f} us, p99 {sorted(durations)[int(len(durations) * 0.99)] / 1000:.2f} us")
    assert median_us < 50
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline and metric(registry, "claimwatch_collector_dropped_total", reason="queue_full") == 0
    ):
        time.sleep(0.05)
    assert metric(registry, "claimwatch_collector_dropped_total", reason="queue_full") > 0
    assert metric(registry, "claimwatch_collector_dropped_total", reason="span_queue_full") > 0
    t0 = time.monotonic()
    proc.shutdown(timeout_s=0.5)
    assert time.monotonic() - t0 < 4.0


def test_email_never_reaches_the_producer():
    """With redact_emails on, no e-mail from question, answer or context is in the bytes sent to Kafka."""
    producers: list[MemoryProducer] = []
    settings = CollectorSettings(late_span_wait_s=0.01, redact_emails=True)
    registry = CollectorRegistry()
    from collector.metrics import get_metrics

    sink = KafkaSink(
        settings,
        metrics=get_metrics(registry),
        producer_factory=lambda **c: producers.append(MemoryProducer()) or producers[-1],
    )
    proc, tp, _, _ = setup(settings, sink=sink)
    rag_trace(
        tp, question="I am jane.doe@example.com", answer="Mail bob@corp.io", docs=("Owner: ops@example.org", "plain")
    )
    assert proc.force_flush(3000)
    sent = b"".join(producers[0].values)
    assert b"@" not in sent and b"[EMAIL_1]" in sent
    proc.shutdown()


def test_oversize_record_is_truncated_to_fit():
    """A trace larger than max_record_bytes is cut by enforce_limits, fits, and the cut is recorded and counted."""
    settings = CollectorSettings(late_span_wait_s=0.01, max_record_bytes=20_000, max_contexts=3)
    proc, tp, sink, reg = setup(settings)
    rag_trace(tp, docs=tuple(f"{i}" + "x" * 15_000 for i in range(5)))
    proc.force_flush(2000)
    (rec,) = sink.records
    assert len(rec.to_json_bytes()) <= 20_000
    assert rec.truncation is not None and rec.truncation.contexts_dropped == 2
    assert metric(reg, "claimwatch_collector_truncated_total") == 1
    proc.shutdown()


def test_fork_handler_resets_queue_buffers_thread_and_sink():
    """Calling the after-fork handler drops the parent's buffered state, restarts the thread and resets the sink."""
    proc, tp, sink, reg = setup(CollectorSettings(late_span_wait_s=60))
    rag_trace(tp, end_root=False)
    time.sleep(0.1)
    assert len(proc._assembler) == 1
    old_thread = proc._loop.thread
    proc._after_fork_in_child()
    assert len(proc._assembler) == 0 and len(proc._spans) == 0
    assert proc._loop.thread is not old_thread and proc._loop.alive and not old_thread.is_alive()
    assert "fork" in sink.calls
    rag_trace(tp, answer="after fork")
    proc.force_flush(2000)
    assert [r.answer for r in sink.records] == ["after fork"]
    proc.shutdown()


def test_on_end_never_raises_and_thread_survives_bad_input():
    """Garbage handed to on_end is counted as internal and the background thread keeps working."""
    proc, tp, sink, reg = setup()
    proc.on_end(object())  # type: ignore[arg-type]
    rag_trace(tp)
    proc.force_flush(2000)
    assert len(sink.records) == 1
    assert metric(reg, "claimwatch_collector_dropped_total", reason="internal") == 1
    proc.shutdown()
    proc.on_end(object())  # after shutdown: counted, not raised
    assert metric(reg, "claimwatch_collector_dropped_total", reason="shutdown") == 1


def test_check_provider_warns_about_attribute_limit_and_hidden_inputs(monkeypatch):
    """The default 128-attribute limit and OPENINFERENCE_HIDE_* flags are reported."""
    assert "attribute_limit" in check_provider(TracerProvider())
    from opentelemetry.sdk.trace import SpanLimits

    assert "attribute_limit" not in check_provider(TracerProvider(span_limits=SpanLimits(max_span_attributes=1000)))
    genai_on = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}  # GenAI packages may be installed
    assert check_environment({"OPENINFERENCE_HIDE_INPUTS": "true", **genai_on}) == ["hidden_inputs_env"]
    assert check_environment(genai_on) == []


def test_from_env_reads_settings(monkeypatch):
    """from_env builds the processor from CLAIMWATCH_* variables."""
    monkeypatch.setenv("CLAIMWATCH_TOPIC", "from-env")
    monkeypatch.setenv("CLAIMWATCH_SAMPLING__RATIO", "0.25")
    proc = RagTraceProcessor.from_env(sink=FakeSink(), registry=CollectorRegistry())
    assert proc.settings.topic == "from-env" and proc.settings.sampling.ratio == 0.25
    proc.shutdown()


def test_spans_dropped_on_app_threads_are_logged_by_the_background_thread():
    """on_end only counts a full-queue drop; the collector's thread logs it (once a minute), so no drop is silent."""
    from structlog.testing import capture_logs

    proc, tp, _sink, registry = setup()
    proc._span_queue_size = 0  # every span finds the queue full
    with capture_logs() as logs:
        for _ in range(3):
            rag_trace(tp)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(e["event"] == "collector_dropped" for e in logs):
            time.sleep(0.02)
        proc.shutdown(timeout_s=1.0)
        proc.on_end(tp.get_tracer("t").start_span("late"))  # after shutdown: counted and logged too
    assert metric(registry, "claimwatch_collector_dropped_total", reason="span_queue_full") == 6
    dropped = [e for e in logs if e["event"] == "collector_dropped"]
    assert [e["reason"] for e in dropped] == ["span_queue_full", "shutdown"]
    assert 1 <= dropped[0]["amount"] <= 6 and "CLAIMWATCH_QUEUE_SIZE" in dropped[0]["hint"]
