"""The evaluator worker on the real broker: group scaling, metrics over HTTP, DLQ, failover."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import uuid

import pytest
from prometheus_client import start_http_server
from structlog.testing import capture_logs

from claimwatch.embedded import free_port
from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import TagJudge
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


def _record(i: int, release: str, answer: str) -> tuple[bytes, bytes]:
    t = RagTrace(
        trace_id=f"{i:032x}",
        question=f"q{i}",
        answer=answer,
        contexts=[{"content": "ctx"}],
        slices={"release": release, "route": "faq"},
    )
    return t.key, t.to_json_bytes()


def _start_worker(settings, judge=None):
    metrics = WorkerMetrics()
    port = free_port()
    server, _ = start_http_server(port, addr="127.0.0.1", registry=metrics.registry)
    worker = build_worker(settings, evaluator=Evaluator(judge or TagJudge(), metrics), exporter=None, shadow=None)
    th = threading.Thread(target=worker.run, daemon=True)
    th.start()
    return worker, th, server, f"http://127.0.0.1:{port}/metrics"


def test_two_workers_share_the_stream_and_metrics_add_up(kafka_bootstrap, topic_name):
    """Two workers in one group split 60 records; scraped counts per verdict and slice are exact."""
    create_topic(kafka_bootstrap, topic_name, partitions=4)
    items = []
    for i in range(60):
        release = "v1" if i % 2 == 0 else "v2"
        answer = "Good claim. Bad claim [C]." if release == "v2" else "Good claim. Other claim [U]."
        items.append(_record(i, release, answer))
    items.append((b"poison", b"\x00not json at all"))
    items.append((b"future", json.dumps({"schema_version": 42, "trace_id": "f" * 32, "answer": "x"}).encode()))
    settings = worker_settings(kafka_bootstrap, topic_name)
    w1 = _start_worker(settings)
    w2 = _start_worker(settings)
    produce(kafka_bootstrap, topic_name, items)
    urls = [w1[3], w2[3]]

    def processed():
        return sum(total(scrape(u), "claimwatch_records_total") for u in urls)

    assert wait_until(lambda: processed() >= 62), f"only {processed()} records handled"
    s1, s2 = scrape(urls[0]), scrape(urls[1])
    assert total(s1, "claimwatch_records_total", outcome="processed") > 0
    assert total(s2, "claimwatch_records_total", outcome="processed") > 0, "second worker got no partition"
    both = {**{}, **s1}
    for k, v in s2.items():
        both[k] = both.get(k, 0) + v if k in s1 else v
    assert total(both, "claimwatch_records_total", outcome="processed") == 60
    assert total(both, "claimwatch_claims_total", verdict="supported", release="v1") == 30
    assert total(both, "claimwatch_claims_total", verdict="unsupported", release="v1") == 30
    assert total(both, "claimwatch_claims_total", verdict="contradicted", release="v2") == 30
    assert total(both, "claimwatch_claims_total", verdict="contradicted", release="v1") == 0
    assert total(both, "claimwatch_dead_letters_total", reason="not_json") == 1
    assert total(both, "claimwatch_dead_letters_total", reason="schema_version") == 1
    dlq = drain(kafka_bootstrap, settings.dead_letter_topic, 2)
    reasons = sorted(dict(m.headers)["claimwatch.reason"].decode() for m in dlq)
    assert reasons == ["not_json", "schema_version"]
    results = drain(kafka_bootstrap, settings.results_topic, 60)
    assert len({m.key for m in results}) == 60
    for w, th, server, _ in (w1, w2):
        w.stop()
        th.join(20)
        server.shutdown()
        assert not th.is_alive()


def test_replayed_record_is_not_counted_twice(kafka_bootstrap, topic_name):
    """The same trace produced twice is evaluated once; the replay is counted as duplicate."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    rec = _record(7, "v1", "Good claim.")
    produce(kafka_bootstrap, topic_name, [rec, rec])
    settings = worker_settings(kafka_bootstrap, topic_name)
    metrics = WorkerMetrics()
    worker = build_worker(settings, evaluator=Evaluator(TagJudge(), metrics), exporter=None, shadow=None)
    worker.run(idle_timeout_s=10.0, max_records=1)
    # a fresh worker (new process memory) seeds its window from the results topic
    metrics2 = WorkerMetrics()
    produce(kafka_bootstrap, topic_name, [rec])
    worker2 = build_worker(settings, evaluator=Evaluator(TagJudge(), metrics2), exporter=None, shadow=None)
    worker2.run(idle_timeout_s=8.0)
    got = metrics.registry.get_sample_value
    got2 = metrics2.registry.get_sample_value
    assert (got("claimwatch_records_total", {"outcome": "processed"}) or 0) + (
        got2("claimwatch_records_total", {"outcome": "processed"}) or 0
    ) == 1
    assert (got("claimwatch_records_total", {"outcome": "duplicate"}) or 0) + (
        got2("claimwatch_records_total", {"outcome": "duplicate"}) or 0
    ) == 2


def test_two_rag_calls_of_one_trace_are_two_records_and_each_is_deduped_on_its_own(kafka_bootstrap, topic_name):
    """Calls a and b of one trace are both judged (not duplicates of each other); a replay of either is a duplicate,
    also for a fresh worker that seeds its window from the results topic (keyed trace/call)."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    calls = [
        RagTrace(
            trace_id=f"{9:032x}",
            call_id=call,
            question=f"q-{call}",
            answer="Good claim.",
            contexts=[{"content": "ctx"}],
            slices={"release": "v1", "route": "faq"},
        )
        for call in ("a" * 16, "b" * 16)
    ]
    a, b = ((t.key, t.to_json_bytes()) for t in calls)
    produce(kafka_bootstrap, topic_name, [a, b, a])
    settings = worker_settings(kafka_bootstrap, topic_name)
    metrics = WorkerMetrics()
    build_worker(settings, evaluator=Evaluator(TagJudge(), metrics), exporter=None, shadow=None).run(
        idle_timeout_s=10.0, max_records=3
    )
    got = metrics.registry.get_sample_value
    assert got("claimwatch_records_total", {"outcome": "processed"}) == 2
    assert got("claimwatch_records_total", {"outcome": "duplicate"}) == 1
    results = drain(kafka_bootstrap, settings.results_topic, 2, 20)
    assert sorted(m.key.decode() for m in results) == sorted(t.record_key for t in calls)
    assert sorted(json.loads(m.value)["call_id"] for m in results) == ["a" * 16, "b" * 16]
    produce(kafka_bootstrap, topic_name, [b])
    metrics2 = WorkerMetrics()
    build_worker(settings, evaluator=Evaluator(TagJudge(), metrics2), exporter=None, shadow=None).run(
        idle_timeout_s=8.0
    )
    assert metrics2.registry.get_sample_value("claimwatch_records_total", {"outcome": "duplicate"}) == 1
    assert not metrics2.registry.get_sample_value("claimwatch_records_total", {"outcome": "processed"})


def _spawn_worker(settings, port: int, env_extra: dict) -> subprocess.Popen:
    return spawn_worker(settings, port, CLAIMWATCH_JUDGE="tests.fakes.judges:slow_factory", **env_extra)


def test_sigkill_mid_record_loses_nothing_and_double_counts_nothing(kafka_bootstrap, topic_name, tmp_path):
    """Worker A is SIGKILLed inside the judge; B takes over; A's last scrape + B's counts == records, each once."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    n = 40
    slow_at = 12
    items = []
    for i in range(n):
        answer = f"Claim number {i}" + (" SLOWTOKEN" if i == slow_at else "") + "."
        items.append(_record(i, "v1", answer))
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    flag = tmp_path / "entered"
    port_a, port_b = free_port(), free_port()
    a = _spawn_worker(
        settings,
        port_a,
        {
            "CLAIMWATCH_TEST_SLOW_TOKEN": "SLOWTOKEN",
            "CLAIMWATCH_TEST_SLOW_FILE": str(flag),
            "CLAIMWATCH_TEST_SLOW_SECONDS": "120",
            "CLAIMWATCH_TEST_DELAY_SECONDS": "0.05",
        },
    )
    try:
        url_a = f"http://127.0.0.1:{port_a}/metrics"
        assert wait_until(lambda: _up(url_a), 30)
        # A alone owns both partitions; produce and wait until it is stuck inside the judge on the slow record
        produce(kafka_bootstrap, topic_name, items)
        assert wait_until(flag.exists, 60), "worker A never reached the slow record"
        time.sleep(0.5)
        last_a = scrape(url_a)
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        counted_a = total(last_a, "claimwatch_records_total", outcome="processed")
        b = _spawn_worker(settings, port_b, {"CLAIMWATCH_TEST_DELAY_SECONDS": "0.0"})
        try:
            url_b = f"http://127.0.0.1:{port_b}/metrics"
            assert wait_until(
                lambda: (
                    _up(url_b)
                    and counted_a + total(scrape(url_b), "claimwatch_records_total", outcome="processed") >= n
                ),
                90,
            ), f"A counted {counted_a}, B {total(scrape(url_b), 'claimwatch_records_total') if _up(url_b) else 'down'}"
            time.sleep(2)
            sb = scrape(url_b)
            counted_b = total(sb, "claimwatch_records_total", outcome="processed")
            assert counted_a + counted_b == n, (counted_a, counted_b)
            assert total(last_a, "claimwatch_claims_total") + total(sb, "claimwatch_claims_total") == n
            results = drain(kafka_bootstrap, settings.results_topic, n)
            assert {m.key for m in results} == {k for k, _ in items}
        finally:
            b.send_signal(signal.SIGTERM)
            assert b.wait(30) == 0
    finally:
        if a.poll() is None:
            a.kill()


def _up(url: str) -> bool:
    try:
        scrape(url)
        return True
    except OSError:
        return False


def test_a_slow_dedupe_seed_is_waited_for_a_third_of_the_poll_interval_then_the_worker_goes_on(
    kafka_bootstrap, topic_name
):
    """A dedupe seed that hangs holds the assignment a third of max_poll_interval only (logged as slow); the worker stays
    in its group (assigned and seeded once) and judges its records."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    produce(kafka_bootstrap, topic_name, [_record(i, "v1", "Good claim.") for i in range(3)])
    settings = worker_settings(kafka_bootstrap, topic_name)
    seeds: list[list[int]] = []

    def hanging_seed(partitions: list[int]) -> list[str]:
        seeds.append(partitions)
        time.sleep(30.0)  # past max_poll_interval_ms (10 s)
        return []

    metrics = WorkerMetrics()
    with capture_logs() as logs:
        build_worker(
            settings, evaluator=Evaluator(TagJudge(), metrics), seed_dedupe=hanging_seed, exporter=None, shadow=None
        ).run(idle_timeout_s=12.0, max_records=3)
    assert metrics.registry.get_sample_value("claimwatch_records_total", {"outcome": "processed"}) == 3
    assert seeds == [[0]], "assigned (and seeded) once: never sent out of the group and re-assigned"
    slow = [e for e in logs if e["event"] == "worker_dedupe_seed_slow"]
    assert len(slow) == 1 and slow[0]["waited_s"] == round(10.0 / 3, 2)
