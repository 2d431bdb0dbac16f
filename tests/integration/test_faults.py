"""Faults on the real broker: broker down/killed, failing judge, SIGTERM under scrape, redaction on the wire.

Tests that kill or restart the broker start their own ``EmbeddedBroker`` (memory
storage: a restart loses what the broker held); the others use the shared
``kafka_bootstrap`` broker. Figures printed here are quoted in docs/reliability.md.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import urllib.error
import uuid

import anthropic
import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from claimwatch.embedded import EmbeddedBroker, free_port
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import AnthropicSettings
from evaluator_worker.flow import RetryPolicy
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.messages_server import MessagesServer
from tests.integration.kafka_helpers import (
    create_topic,
    drain,
    produce,
    scrape,
    spawn_worker,
    total,
    wait_until,
    worker_settings,
)

pytestmark = pytest.mark.integration


def _collector(bootstrap: str, topic: str, **kw) -> tuple[RagTraceProcessor, TracerProvider, CollectorRegistry]:
    registry = CollectorRegistry()
    settings = CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap, request_timeout_ms=3_000),
        topic=topic,
        late_span_wait_s=0.0,
        linger_ms=5,
        max_block_ms=500,
        **kw,
    )
    proc = RagTraceProcessor(
        settings, registry=registry, span_queue_size=10_000
    )  # the sink queue is the bound under test
    tp = TracerProvider()
    tp.add_span_processor(proc)
    return proc, tp, registry


def _request(tp: TracerProvider, answer: str, question: str = "What is the refund window?") -> float:
    """One instrumented RAG request; returns how long the app thread spent (seconds)."""
    tracer = tp.get_tracer("app")
    t0 = time.perf_counter()
    with tracer.start_as_current_span("RunnableSequence") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", question)
        root.set_attribute("output.value", answer)
        with tracer.start_as_current_span("retriever") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("input.value", question)
            r.set_attribute("retrieval.documents.0.document.content", "Refunds are accepted within 30 days.")
    return time.perf_counter() - t0


def _metric(registry: CollectorRegistry, name: str, **labels) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _drops(registry: CollectorRegistry) -> dict[str, float]:
    return {
        s.labels["reason"]: s.value
        for fam in registry.collect()
        for s in fam.samples
        if s.name == "claimwatch_collector_dropped_total"
    }


def _answers_on(bootstrap: str, topic: str, expect: int, timeout_s: float = 20.0) -> list[str]:
    return [RagTrace.from_json_bytes(m.value).answer for m in drain(bootstrap, topic, expect, timeout_s)]


# ---------------------------------------------------------------- collector vs broker faults


def test_broker_down_at_start_then_up_collector_resumes():
    """No broker: app never blocks, overflow counted queue_full; broker comes up: new traces are delivered."""
    port = free_port()
    topic = f"t-{uuid.uuid4().hex[:8]}"
    proc, tp, reg = _collector(f"127.0.0.1:{port}", topic, queue_size=20)
    worst = max(_request(tp, f"Outage answer {i}.") for i in range(200))
    assert wait_until(lambda: _metric(reg, "claimwatch_collector_traces_total", outcome="assembled") >= 200, 10)
    drops = _drops(reg)
    queued = _metric(reg, "claimwatch_collector_traces_total", outcome="queued")
    print(f"broker down: worst request {worst * 1000:.2f} ms, queued {queued:.0f}, drops {drops}")
    assert worst < 0.05
    assert drops.get("queue_full", 0) == 200 - queued > 0  # every trace is queued or counted
    assert not proc.sink.connected
    broker = EmbeddedBroker(port=port).start()
    try:
        assert wait_until(lambda: proc.sink.connected, 30), "collector never reconnected"
        assert wait_until(lambda: proc.sink.queue_depth == 0, 30), "the backlog never drained"
        for i in range(5):
            _request(tp, f"After recovery {i}.")
        assert proc.force_flush(20_000)
        answers = _answers_on(broker.bootstrap, topic, int(queued) + 5)
        assert {f"After recovery {i}." for i in range(5)} <= set(answers)
        assert len(answers) == queued + 5  # the buffered ones too, each once
    finally:
        proc.shutdown(2.0)
        broker.stop()


def test_broker_killed_and_restarted_mid_stream():
    """Kill -9 and restart the broker under steady load: app time stays small, every trace is accounted for."""
    broker = EmbeddedBroker().start()
    topic = f"t-{uuid.uuid4().hex[:8]}"
    proc, tp, reg = _collector(broker.bootstrap, topic, queue_size=200, retries=5)
    acks = lambda: _metric(reg, "claimwatch_collector_produce_latency_seconds_count")  # noqa: E731
    times: list[float] = []
    sent = 0
    try:

        def load(n: int, every: float = 0.01) -> None:
            nonlocal sent
            for _ in range(n):
                times.append(_request(tp, f"Answer number {sent}."))
                sent += 1
                time.sleep(every)

        load(100)
        assert proc.force_flush(10_000)
        broker.kill()
        acked_before_kill = acks()
        outage_started = len(times)
        load(150)  # ~2 s of traffic with no broker
        outage_worst = max(times[outage_started:])
        broker.start()  # same port, empty memory storage
        load(100)
        proc.force_flush(30_000)
        assert wait_until(lambda: proc.sink.queue_depth == 0, 30)
        proc.shutdown(10.0)
        drops = _drops(reg)
        queued = _metric(reg, "claimwatch_collector_traces_total", outcome="queued")
        # Tansu quirk: after a memory-storage restart, records from a pre-restart connection become visible to
        # readers only after another producer writes; one sentinel record makes them readable
        produce(broker.bootstrap, topic, [_trace(999_999, "sentinel")])
        on_topic = [
            a for a in _answers_on(broker.bootstrap, topic, int(acks() - acked_before_kill) + 1, 20) if a != "sentinel"
        ]
        print(
            f"broker kill/restart: sent {sent}, queued {queued:.0f}, acked {acks():.0f} "
            f"({acked_before_kill:.0f} before the kill, lost with the broker), on new topic {len(on_topic)}, "
            f"drops {drops}, worst request during outage {outage_worst * 1000:.2f} ms, overall {max(times) * 1000:.2f} ms"
        )
        assert max(times) < 0.05, "the app thread must never block on Kafka"
        assert queued + drops.get("queue_full", 0) == sent  # in == queued + counted drops
        assert (
            acks() + drops.get("produce_error", 0) + drops.get("sink_shutdown", 0) == queued
        )  # every queued record resolved
        # delivery resumed on the restarted broker (Tansu's memory engine does not make every acked record
        # readable after a restart, so the exact count is asserted on the collector's side, above)
        assert on_topic and all(int(a.split()[-1].rstrip(".")) >= 100 for a in on_topic)
        assert len(on_topic) <= acks() - acked_before_kill
    finally:
        proc.shutdown(1.0)
        broker.stop()


def test_collector_recovers_after_the_broker_refuses_writes():
    """TOPIC_AUTHORIZATION_FAILED on the traces topic for a while: those records are dropped and counted, later ones arrive."""
    from tests.fakes.kafka_proxy import ProxiedBroker

    with ProxiedBroker() as broker:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap, topic, partitions=1)
        proc, tp, reg = _collector(broker.bootstrap, topic)
        try:
            broker.proxy.reject_produce(topic, 29)
            for i in range(3):
                _request(tp, f"Refused answer {i}.")
            assert proc.force_flush(10_000)
            assert wait_until(lambda: _drops(reg).get("produce_error", 0) >= 3, 15), _drops(reg)
            broker.proxy.clear_faults()
            for i in range(5):
                _request(tp, f"After the fix {i}.")
            assert proc.force_flush(10_000)
            answers = _answers_on(broker.bootstrap, topic, 5, 15)
        finally:
            proc.shutdown(2.0)
    assert sorted(answers) == [f"After the fix {i}." for i in range(5)], answers


# ---------------------------------------------------------------- worker vs judge faults


def _trace(i: int, answer: str) -> tuple[bytes, bytes]:
    t = RagTrace(
        trace_id=f"{i:032x}",
        question="What is the refund window?",
        answer=answer,
        contexts=[{"content": "Refunds are accepted within 30 days. Shipping is free."}],
        slices={"release": "v1"},
    )
    return t.key, t.to_json_bytes()


def test_judge_outage_past_the_retry_budget_fails_answers_never_supports_them(kafka_bootstrap, topic_name):
    """429/529/500/timeouts past the retry budget: those answers end failed/ERROR, never SUPPORTED; recovery judges normally."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    settings = worker_settings(kafka_bootstrap, topic_name)
    settings.consumer.max_poll_interval_ms = 30_000
    settings.flow.max_in_flight = 1  # one answer at a time: each scripted fault hits a known call
    with MessagesServer() as srv:
        client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=0.3)
        judge = AnthropicJudge(AnthropicSettings(timeout_s=0.3), client=client)
        metrics = WorkerMetrics()
        evaluator = Evaluator(judge, metrics, retry=RetryPolicy(base_s=0.01, max_attempts=2), consistency=None)
        worker = build_worker(settings, evaluator=evaluator, exporter=None, shadow=None)
        results: dict[str, object] = {}
        worker.on_result = lambda r: results.__setitem__(r.trace_id, r)
        # each failing record: 2 attempts (the retry budget) on the extract call
        for status in (429, 529, 500):
            srv.fail(status, times=2 * 2)
        srv.delay(1.0, times=2)
        failing = [_trace(i, "Refunds are accepted within 30 days.") for i in range(7)]
        healthy = [_trace(100 + i, "Refunds are accepted within 30 days. Shipping is free.") for i in range(3)]
        produce(kafka_bootstrap, topic_name, failing)
        th = threading.Thread(target=worker.run, daemon=True)
        th.start()
        try:
            assert wait_until(lambda: len(results) >= 7, 60), f"judged {len(results)}/7 under faults"
            produce(kafka_bootstrap, topic_name, healthy)
            assert wait_until(lambda: len(results) >= 10, 30), f"judged {len(results)}/10 after recovery"
            assert th.is_alive()
        finally:
            worker.stop()
            th.join(20)
    for key, _ in failing:
        r = results[key.decode()]
        assert r.outcome == "failed" and r.claims and all(c.verdict.value == "ERROR" for c in r.claims)
    for key, _ in healthy:
        r = results[key.decode()]
        assert r.outcome == "evaluated" and [c.verdict.value for c in r.claims] == ["SUPPORTED", "SUPPORTED"]
    got = lambda name, **lb: metrics.registry.get_sample_value(name, lb) or 0.0  # noqa: E731
    for reason in ("rate_limited", "unavailable", "timeout"):
        assert got("claimwatch_judge_errors_total", judge="anthropic", reason=reason) > 0, reason
    claims = {
        v: sum(
            s.value
            for fam in metrics.registry.collect()
            for s in fam.samples
            if s.name == "claimwatch_claims_total" and s.labels["verdict"] == v
        )
        for v in ("supported", "contradicted", "error")
    }
    assert claims == {"supported": 6, "contradicted": 0, "error": 7}
    assert (
        got(
            "claimwatch_answers_total",
            outcome="failed",
            judge_id=evaluator.identity.judge_id,
            release="v1",
            model="unknown",
            route="unknown",
            environment="unknown",
        )
        == 7
    )


# ---------------------------------------------------------------- SIGTERM under scrape


def _spawn_worker(settings, port: int) -> subprocess.Popen:
    return spawn_worker(
        settings,
        port,
        CLAIMWATCH_JUDGE="tests.fakes.judges:slow_factory",
        CLAIMWATCH_TEST_DELAY_SECONDS="0.05",
        CLAIMWATCH_FLOW__MAX_IN_FLIGHT="8",
    )


def test_scrape_during_sigterm_exits_0_and_commits_offsets(kafka_bootstrap, topic_name):
    """Scraping /metrics in a loop while SIGTERM-ing a busy worker: no crash, exit 0, a new worker re-counts nothing."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    n = 60
    items = [_trace(i, f"Claim number {i}.") for i in range(n)]
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    proc = _spawn_worker(settings, port)
    outcomes = {"ok": 0, "refused": 0}
    errors: list[BaseException] = []
    stop = threading.Event()

    def scraper() -> None:
        while not stop.is_set():
            try:
                scrape(url)
                outcomes["ok"] += 1
            except (urllib.error.URLError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (ConnectionRefusedError, ConnectionResetError, ConnectionError)) or isinstance(
                    exc, ConnectionError
                ):
                    outcomes["refused"] += 1
                else:
                    errors.append(exc)
            except Exception as exc:  # a half-written page would fail to parse
                errors.append(exc)
            time.sleep(0.005)

    try:
        up = lambda: wait_until(lambda: _processed(url) is not None, 0.2)  # noqa: E731
        assert wait_until(up, 30), "worker never served /metrics"
        produce(kafka_bootstrap, topic_name, items)
        assert wait_until(lambda: (_processed(url) or 0) >= 15, 60), "worker is not consuming"
        th = threading.Thread(target=scraper, daemon=True)
        th.start()
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        time.sleep(0.3)
        stop.set()
        th.join(5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, proc.stderr.read().decode()[-2000:]
    assert not errors, errors[:3]
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0
    first = {m.key for m in drain(kafka_bootstrap, settings.results_topic, n, timeout_s=5)}
    assert 0 < len(first) < n, "SIGTERM should land mid-stream"
    # a new member of the group resumes from the committed offsets: nothing re-counted, nothing lost
    metrics = WorkerMetrics()
    from tests.fakes.judges import TagJudge

    build_worker(settings, evaluator=Evaluator(TagJudge(), metrics, consistency=None), exporter=None, shadow=None).run(
        idle_timeout_s=8.0
    )
    get = lambda outcome: metrics.registry.get_sample_value("claimwatch_records_total", {"outcome": outcome}) or 0  # noqa: E731
    print(
        f"SIGTERM under scrape: {outcomes['ok']} scrapes ok, {outcomes['refused']} refused; "
        f"first worker {len(first)} results, second {get('processed'):.0f} processed, {get('duplicate'):.0f} duplicates"
    )
    assert get("processed") == n - len(first) and get("duplicate") == 0
    results = drain(kafka_bootstrap, settings.results_topic, n, timeout_s=10)
    assert len(results) == n and {m.key for m in results} == {k for k, _ in items}


def _processed(url: str) -> float | None:
    try:
        return total(scrape(url), "claimwatch_records_total", outcome="processed")
    except OSError:
        return None


# ---------------------------------------------------------------- data protection on the wire


def test_redacted_text_never_reaches_the_kafka_topic(kafka_bootstrap, topic_name):
    """With redaction on, the bytes on the real topic hold the masks and none of the personal data."""
    secrets = ["jane.doe@example.com", "+44 20 7946 0958", "4111 1111 1111 1111", "EMP-884422", "Nightingale"]
    proc, tp, reg = _collector(
        kafka_bootstrap,
        topic_name,
        redact_emails=True,
        redact_phones=True,
        redact_cards=True,
        redact_patterns=[r"EMP-\d+"],
    )
    proc.pipeline.redactor.func = lambda t: t.replace("Nightingale", "[NAME]")
    text = "Contact " + ", ".join(secrets) + "."
    _request(tp, text, question=text)
    assert proc.force_flush(10_000)
    proc.shutdown(2.0)
    (msg,) = drain(kafka_bootstrap, topic_name, 1)
    raw = msg.value.decode()
    for s in secrets:
        assert s not in raw
    for mask in ("[EMAIL_1]", "[PHONE_1]", "[CARD_1]", "[REDACTED]", "[NAME]"):
        assert mask in RagTrace.from_json_bytes(msg.value).answer
