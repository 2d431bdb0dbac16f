"""The worker under production conditions: a slow, rate-limited LLM judge and a broker that stalls and refuses writes.

Every test runs the real worker loop against the real Kafka-protocol broker; judge
calls go through the real ``anthropic`` SDK to the local Messages API fake with
seconds of latency; broker faults come from ``tests/fakes/kafka_proxy.py`` in front
of a dedicated broker (real Kafka traffic, real error responses).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import anthropic
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from structlog.testing import capture_logs

from claimwatch.embedded import free_port
from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import AnthropicSettings
from evaluator_worker.errors import WorkerFatal
from evaluator_worker.flow import RetryPolicy
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.worker import Worker
from tests.fakes.judges import TagJudge
from tests.fakes.kafka_proxy import ProxiedBroker
from tests.fakes.messages_server import MessagesServer, lognormal_latency, oracle_responder
from tests.integration.kafka_helpers import (
    create_topic,
    drain,
    metric_sum,
    produce,
    spawn_worker,
    wait_until,
    worker_settings,
)

pytestmark = pytest.mark.integration

CONTEXT = "Refunds are accepted within 30 days. Shipping is free on orders over 50 euros."


def _trace(
    i: int,
    answer: str = "Refunds are accepted within 30 days.",
    question: str = "What is the refund window?",
    trace_id: str | None = None,
) -> tuple[bytes, bytes]:
    t = RagTrace(
        trace_id=trace_id or f"{i:032x}",
        question=question,
        answer=answer,
        contexts=[{"content": CONTEXT}],
        slices={"release": "v1"},
    )
    return t.key, t.to_json_bytes()


def _get(m: WorkerMetrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


_sum = metric_sum


def _anthropic_worker(settings, srv: MessagesServer, **retry: Any) -> tuple[Worker, WorkerMetrics]:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=60.0)
    judge = AnthropicJudge(AnthropicSettings(), client=client)
    metrics = WorkerMetrics()
    policy = RetryPolicy(**{"base_s": 0.2, "max_s": 5.0, **retry})
    return build_worker(
        settings, evaluator=Evaluator(judge, metrics, retry=policy, consistency=None), exporter=None, shadow=None
    ), metrics


class Running:
    """A worker on a thread; ``error`` holds what ``run()`` raised."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            self.error = exc

    def stop(self, timeout_s: float = 60.0) -> None:
        self.worker.stop()
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "worker did not stop"


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group).get(group, {})
        return {tp.partition: om.offset for tp, om in offsets.items() if om.offset >= 0}
    finally:
        admin.close()


def _slow_on(token: str, seconds: float):
    """A responder that takes ``seconds`` for requests about an answer containing ``token``."""

    def respond(req: dict) -> dict:
        if token in json.dumps(req.get("messages", [])):
            time.sleep(seconds)
        return oracle_responder(req)

    return respond


# ---------------------------------------------------------------- a slow judge


def test_judge_slower_than_max_poll_interval_keeps_the_group_and_judges_concurrently(kafka_bootstrap, topic_name):
    """~2 s per call, one answer taking 12 s (> max_poll_interval 10 s): no rebalance, no commit failure, every result once."""
    create_topic(kafka_bootstrap, topic_name, partitions=4)
    n = 60
    items = [_trace(i) for i in range(n - 1)] + [_trace(n - 1, answer="Refunds SLOWTOKEN are accepted within 30 days.")]
    settings = worker_settings(kafka_bootstrap, topic_name)  # max_poll_interval_ms=10_000
    with MessagesServer(_slow_on("SLOWTOKEN", 12.0), latency=lognormal_latency(2.0, 0.25, seed=1)) as srv:
        worker, m = _anthropic_worker(settings, srv)
        run = Running(worker)
        try:
            produce(kafka_bootstrap, topic_name, items)
            assert wait_until(lambda: worker.processed >= n, 90), f"processed {worker.processed}/{n}"
            # committed while running (not only by the stop): the periodic commit reaches every offset
            assert wait_until(lambda: sum(_committed(kafka_bootstrap, settings.consumer.group_id).values()) == n, 30)
        finally:
            run.stop()
        print(f"slow judge: {n} answers, max concurrent calls {srv.max_concurrent}, requests {len(srv.requests)}")
        assert srv.max_concurrent >= 20, "answers were not judged concurrently"
    assert run.error is None
    assert _get(m, "claimwatch_rebalance_drain_seconds_count") == 0, "the worker lost its partitions"
    assert _get(m, "claimwatch_commit_failures_total") == 0
    assert _get(m, "claimwatch_records_total", outcome="processed") == n
    assert _get(m, "claimwatch_records_total", outcome="duplicate") == 0
    assert _sum(m, "claimwatch_answers_total", outcome="failed") == 0
    results = drain(kafka_bootstrap, settings.results_topic, n, timeout_s=10)
    assert len(results) == n and len({r.key for r in results}) == n
    assert sum(_committed(kafka_bootstrap, settings.consumer.group_id).values()) == n


def test_revoke_with_answers_in_flight_drains_commits_and_hands_over(kafka_bootstrap, topic_name):
    """A second worker joins while 40 answers are in flight: the first finishes and commits them; nothing is judged twice."""
    create_topic(kafka_bootstrap, topic_name, partitions=4)
    n = 40
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    with MessagesServer(latency=1.5) as srv:
        a, ma = _anthropic_worker(settings, srv)
        b, mb = _anthropic_worker(settings, srv)
        run_a = Running(a)
        try:
            assert wait_until(lambda: a.consumer is not None and bool(a.consumer.assignment()), 30)
            produce(kafka_bootstrap, topic_name, [_trace(i) for i in range(n)])
            assert wait_until(lambda: a.in_flight >= 30, 30), f"only {a.in_flight} in flight"
            run_b = Running(b)
            try:
                assert wait_until(lambda: a.processed + b.processed >= n, 90), (a.processed, b.processed)
                produce(kafka_bootstrap, topic_name, [_trace(100 + i) for i in range(20)])  # after the handover
                assert wait_until(lambda: a.processed + b.processed >= n + 20, 60), (a.processed, b.processed)
                assert wait_until(
                    lambda: sum(_committed(kafka_bootstrap, settings.consumer.group_id).values()) == n + 20, 30
                )
            finally:
                run_b.stop()
        finally:
            run_a.stop()
    drained = _get(ma, "claimwatch_rebalance_drain_seconds_count")
    print(
        f"revoke: A processed {a.processed}, B {b.processed}, A drains {drained:.0f} "
        f"({_get(ma, 'claimwatch_rebalance_drain_seconds_sum'):.2f} s), abandoned "
        f"{_get(ma, 'claimwatch_records_total', outcome='abandoned'):.0f}"
    )
    assert run_a.error is None and run_b.error is None
    assert drained >= 1
    assert b.processed > 0, "the second worker got no partition"
    assert a.processed + b.processed == n + 20
    dup = _get(ma, "claimwatch_records_total", outcome="duplicate") + _get(
        mb, "claimwatch_records_total", outcome="duplicate"
    )
    assert dup == 0
    results = drain(kafka_bootstrap, settings.results_topic, n + 20, timeout_s=10)
    assert len(results) == n + 20 and len({r.key for r in results}) == n + 20


def test_429_burst_mid_run_costs_lag_not_evaluations(kafka_bootstrap, topic_name):
    """200 answers, 40 HTTP 429s (retry-after 1 s) mid-run: 200 results, 0 failed, 0 duplicates, no exit, no commit failure."""
    create_topic(kafka_bootstrap, topic_name, partitions=4)
    n = 200
    settings = worker_settings(kafka_bootstrap, topic_name)
    with MessagesServer(latency=lognormal_latency(0.5, 0.4, seed=2)) as srv:
        worker, m = _anthropic_worker(settings, srv)
        run = Running(worker)
        try:
            produce(kafka_bootstrap, topic_name, [_trace(i) for i in range(n)])
            assert wait_until(lambda: worker.processed >= 30, 60)
            srv.fail(429, times=40, retry_after="1")
            assert wait_until(lambda: worker.processed >= n, 120), f"processed {worker.processed}/{n}"
            assert wait_until(lambda: sum(_committed(kafka_bootstrap, settings.consumer.group_id).values()) == n, 30)
        finally:
            run.stop()
    limiter = worker.evaluator.caller.limiter
    print(
        f"429 burst: throttled {_get(m, 'claimwatch_judge_throttled_total', judge='anthropic'):.0f}, "
        f"limit now {limiter.limit if limiter else None}, max concurrent {srv.max_concurrent}"
    )
    assert run.error is None
    assert _get(m, "claimwatch_judge_throttled_total", judge="anthropic") == 40
    assert _get(m, "claimwatch_records_total", outcome="processed") == n
    assert _get(m, "claimwatch_records_total", outcome="duplicate") == 0
    assert _sum(m, "claimwatch_answers_total", outcome="failed") == 0
    assert _sum(m, "claimwatch_claims_total", verdict="error") == 0
    assert _get(m, "claimwatch_commit_failures_total") == 0
    results = drain(kafka_bootstrap, settings.results_topic, n, timeout_s=10)
    assert len(results) == n and all(json.loads(r.value)["outcome"] == "evaluated" for r in results)


def test_a_model_the_provider_no_longer_serves_stops_the_worker_at_start_up(kafka_bootstrap, topic_name):
    """The Models API answers 404 for the configured model: the worker exits at start-up with one line naming the
    setting, before any Messages call and without reading a record."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    produce(kafka_bootstrap, topic_name, [_trace(i) for i in range(5)])
    with MessagesServer() as srv:
        srv.served_models = {"claude-haiku-4-5"}
        proc = spawn_worker(
            settings,
            free_port(),
            CLAIMWATCH_JUDGE="anthropic",
            CLAIMWATCH_ANTHROPIC__API_KEY="sk-test",
            CLAIMWATCH_ANTHROPIC__BASE_URL=srv.base_url,
            CLAIMWATCH_ANTHROPIC__MODEL="claude-3-sonnet-20240229",
        )
        try:
            code = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
        requests = len(srv.requests)
        checks = list(srv.model_checks)
    err = proc.stderr.read().decode()
    assert code != 0
    last = err.strip().splitlines()[-1]
    assert last.startswith("claimwatch: error:") and "CLAIMWATCH_ANTHROPIC__MODEL" in last and "404" in last
    assert "Traceback" not in err
    assert checks == ["claude-3-sonnet-20240229"] and requests == 0
    assert drain(kafka_bootstrap, settings.results_topic, 1, timeout_s=3) == []


def test_401_stops_the_worker_with_the_setting_to_fix(kafka_bootstrap, topic_name):
    """A rejected API key: the worker process exits non-zero at once with one line naming the setting; nothing dead-lettered or committed."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    produce(kafka_bootstrap, topic_name, [_trace(i) for i in range(20)])
    with MessagesServer() as srv:
        srv.fail(401, times=10_000)
        started = time.monotonic()
        proc = spawn_worker(
            settings,
            free_port(),
            CLAIMWATCH_JUDGE="anthropic",
            CLAIMWATCH_ANTHROPIC__API_KEY="sk-bad",
            CLAIMWATCH_ANTHROPIC__BASE_URL=srv.base_url,
        )
        try:
            code = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
        took = time.monotonic() - started
        requests = len(srv.requests)
    err = proc.stderr.read().decode()
    print(f"401: exit {code} after {took:.1f} s, {requests} requests; stderr tail: {err.strip().splitlines()[-1:]}")
    assert code != 0
    last = err.strip().splitlines()[-1]
    assert last.startswith("claimwatch: error:") and "CLAIMWATCH_ANTHROPIC__API_KEY" in last and "401" in last
    assert "Traceback" not in err
    assert requests <= 20, "a 401 must not be retried"
    assert drain(kafka_bootstrap, settings.dead_letter_topic, 1, timeout_s=3) == []
    assert drain(kafka_bootstrap, settings.results_topic, 1, timeout_s=3) == []
    assert sum(_committed(kafka_bootstrap, settings.consumer.group_id).values()) <= 0


# ---------------------------------------------------------------- records that exceed limits


def test_oversized_result_and_key_do_not_stop_the_worker(kafka_bootstrap, topic_name):
    """A 1.1 MB question (result shrunk) and 2 MB keys (valid and poison values): the worker goes on and the partition moves."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    big_key = b"k" * 2_000_000
    items = [
        _trace(1),
        _trace(2, question="Q" * 1_100_000 + "?"),
        (big_key, _trace(3)[1]),
        (big_key, b"\x00 not json"),
        _trace(5),
    ]
    p = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", max_request_size=8_000_000)
    for key, value in items:
        p.send(topic_name, key=key, value=value).get(30)
    p.close()
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    m = WorkerMetrics()
    worker = build_worker(settings, evaluator=Evaluator(TagJudge(), m, consistency=None), exporter=None, shadow=None)
    run = Running(worker)
    try:
        assert wait_until(
            lambda: (
                _get(m, "claimwatch_records_total", outcome="processed") >= 4
                and _get(m, "claimwatch_records_total", outcome="dead_lettered") >= 1
            ),
            60,
        )
        assert wait_until(lambda: _committed(kafka_bootstrap, settings.consumer.group_id).get(0) == 5, 15)
    finally:
        run.stop()
    assert run.error is None
    assert _get(m, "claimwatch_results_shrunk_total") == 1
    results = {r.key: json.loads(r.value) for r in drain(kafka_bootstrap, settings.results_topic, 4)}
    big = results[f"{2:032x}".encode()]
    assert big["question"] is None and "question" in big["truncated"] and big["counts"]["SUPPORTED"] == 1
    (dead,) = drain(kafka_bootstrap, settings.dead_letter_topic, 1)
    headers = dict(dead.headers)
    assert dead.key.startswith(b"sha256:") and headers["claimwatch.original_key_bytes"] == b"2000000"
    assert headers["claimwatch.reason"] == b"not_json"


# ---------------------------------------------------------------- a broker that refuses or stalls


@pytest.fixture
def proxied():
    with ProxiedBroker() as broker:
        yield broker


def _tag_worker(bootstrap: str, topic: str, **flow: Any) -> tuple[Worker, WorkerMetrics, Any]:
    settings = worker_settings(bootstrap, topic, group=f"g-{uuid.uuid4().hex[:6]}")
    for k, v in flow.items():
        setattr(settings.flow, k, v)
    m = WorkerMetrics()
    return (
        build_worker(
            settings, evaluator=Evaluator(TagJudge(delay_s=0.02), m, consistency=None), exporter=None, shadow=None
        ),
        m,
        settings,
    )


def test_rejected_result_writes_are_never_committed_and_land_after_recovery(proxied, topic_name):
    """NOT_ENOUGH_REPLICAS on every results write for 6 s: no offset is committed meanwhile; after recovery all 20 results land."""
    create_topic(proxied.bootstrap, topic_name, partitions=1)
    worker, m, settings = _tag_worker(proxied.bootstrap, topic_name)
    proxied.proxy.reject_produce(settings.results_topic, 19)
    produce(proxied.bootstrap, topic_name, [_trace(i) for i in range(20)])
    run = Running(worker)
    try:
        assert wait_until(lambda: proxied.proxy.rejected >= 3, 30), "no results write reached the broker"
        time.sleep(6)
        assert worker.processed == 0
        assert _committed(proxied.bootstrap, settings.consumer.group_id).get(0, -1) <= 0, "committed past a lost write"
        proxied.proxy.clear_faults()
        assert wait_until(lambda: worker.processed >= 20, 60), f"processed {worker.processed}"
        assert wait_until(lambda: _committed(proxied.bootstrap, settings.consumer.group_id).get(0) == 20, 15)
    finally:
        run.stop()
    print(f"rejected writes: {proxied.proxy.rejected} produce requests refused, then 20/20 durable")
    assert run.error is None
    results = drain(proxied.bootstrap, settings.results_topic, 20)
    assert len({r.key for r in results}) == 20


def test_writes_refused_for_good_stop_the_worker_without_committing(proxied, topic_name):
    """TOPIC_AUTHORIZATION_FAILED on results: the worker stops (WorkerFatal), commits nothing past it; a fixed restart loses nothing."""
    create_topic(proxied.bootstrap, topic_name, partitions=1)
    worker, m, settings = _tag_worker(proxied.bootstrap, topic_name, write_max_attempts=3)
    proxied.proxy.reject_produce(settings.results_topic, 29)
    produce(proxied.bootstrap, topic_name, [_trace(i) for i in range(20)])
    run = Running(worker)
    run.thread.join(60)
    assert not run.thread.is_alive(), "the worker kept going with a results topic it cannot write"
    assert isinstance(run.error, WorkerFatal) and "TopicAuthorizationFailed" in str(run.error)
    assert _committed(proxied.bootstrap, settings.consumer.group_id).get(0, -1) <= 0
    assert _sum(m, "claimwatch_result_write_errors_total") >= 3
    proxied.proxy.clear_faults()
    again, m2, _ = _tag_worker(proxied.bootstrap, topic_name)
    again.settings.consumer.group_id = settings.consumer.group_id
    run2 = Running(again)
    try:
        assert wait_until(lambda: again.processed >= 20, 60), f"processed {again.processed}"
    finally:
        run2.stop()
    results = drain(proxied.bootstrap, settings.results_topic, 20)
    assert len({r.key for r in results}) == 20


def test_a_result_write_fault_is_logged_within_10_s_and_shows_in_the_write_age_gauge(proxied, topic_name):
    """UNKNOWN_TOPIC_OR_PARTITION on results (retried inside the producer, no failed future): a stalled-writes line within 10 s, the age gauge grows, all land after."""
    create_topic(proxied.bootstrap, topic_name, partitions=1)
    worker, m, settings = _tag_worker(proxied.bootstrap, topic_name)
    proxied.proxy.reject_produce(settings.results_topic, 3)
    produce(proxied.bootstrap, topic_name, [_trace(i) for i in range(20)])
    with capture_logs() as logs:
        run = Running(worker)
        try:
            assert wait_until(lambda: proxied.proxy.rejected >= 1, 30), "no results write reached the broker"
            fault_seen = time.monotonic()

            def stalled() -> list[dict]:
                return [e for e in list(logs) if e.get("event") == "worker_result_writes_stalled"]

            assert wait_until(lambda: bool(stalled()), 10), "no log line within 10 s of the write fault"
            logged_after = time.monotonic() - fault_seen
            line = stalled()[0]
            assert line["topic"] == settings.results_topic and line["unacked"] >= 1, line
            assert "unknowntopicorpartition" in line["producer_last_warning"].lower().replace(" ", ""), line
            assert _get(m, "claimwatch_oldest_unacked_write_age_seconds") >= 5
            assert worker.processed == 0
            proxied.proxy.clear_faults()
            assert wait_until(lambda: worker.processed >= 20, 60), f"processed {worker.processed}"
            assert wait_until(lambda: _get(m, "claimwatch_oldest_unacked_write_age_seconds") == 0, 10)
        finally:
            run.stop()
    print(f"write fault: logged {logged_after:.1f} s after the first refused write; {line}")
    assert run.error is None


@pytest.mark.slow
def test_45_second_broker_stall_is_survived_without_loss(proxied, topic_name):
    """The broker stops answering for 45 s mid-stream: the worker stays up, and every trace ends with a durable result."""
    create_topic(proxied.bootstrap, topic_name, partitions=2)
    n = 60
    worker, m, settings = _tag_worker(proxied.bootstrap, topic_name)
    worker.evaluator.judge.delay_s = 0.1
    produce(proxied.bootstrap, topic_name, [_trace(i) for i in range(n)])
    run = Running(worker)
    try:
        assert wait_until(lambda: worker.processed >= 10, 60)
        proxied.proxy.stall(45)
        time.sleep(46)
        assert run.thread.is_alive(), f"worker died during the stall: {run.error!r}"
        assert wait_until(
            lambda: len({r.key for r in drain(proxied.bootstrap, settings.results_topic, n, 5)}) >= n, 120
        )
    finally:
        run.stop(90)
    results = drain(proxied.bootstrap, settings.results_topic, n, timeout_s=10)
    keys = [r.key for r in results]
    print(
        f"45 s stall: {len(set(keys))}/{n} traces with a result, {len(keys) - len(set(keys))} duplicate writes, "
        f"processed {worker.processed}, duplicates skipped {_get(m, 'claimwatch_records_total', outcome='duplicate'):.0f}, "
        f"commit failures {_get(m, 'claimwatch_commit_failures_total'):.0f}, "
        f"write errors {_sum(m, 'claimwatch_result_write_errors_total'):.0f}"
    )
    assert run.error is None
    assert set(keys) == {f"{i:032x}".encode() for i in range(n)}
