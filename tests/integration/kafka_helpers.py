"""Helpers for integration tests on the real broker: topics, producing, draining."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from evaluator_worker.config import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]

FAST = dict(session_timeout_ms=6000, heartbeat_interval_ms=1000, max_poll_interval_ms=10000)


def wait_until(pred, timeout_s: float = 60.0, every: float = 0.1) -> bool:
    """Poll ``pred`` until it is true (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(every)
    return False


def create_topic(bootstrap: str, name: str, partitions: int = 4) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def produce(
    bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes]], partitions: list[int] | None = None
) -> None:
    """Write ``items`` (key, value); ``partitions`` pins each to a partition instead of the key's hash."""
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i, (key, value) in enumerate(items):
        p.send(topic, key=key, value=value, partition=None if partitions is None else partitions[i])
    p.flush(30)
    p.close()


def drain(bootstrap: str, topic: str, expect: int, timeout_s: float = 30.0) -> list:
    """Read ``topic`` from the beginning until ``expect`` messages or timeout."""
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=1000,
    )
    out = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expect and time.monotonic() < deadline:
            batch = c.poll(timeout_ms=500)
            for msgs in batch.values():
                out.extend(msgs)
    finally:
        c.close()
    return out


def worker_settings(bootstrap: str, topic: str, **kw) -> WorkerSettings:
    s = WorkerSettings()
    s.judge = "heuristic"  # the tests choose the offline judge on purpose (the worker has no default judge)
    s.kafka.bootstrap_servers = bootstrap
    s.topic = topic
    s.results_topic = kw.pop("results_topic", topic + ".results")
    s.dead_letter_topic = kw.pop("dead_letter_topic", topic + ".dlq")
    s.consumer.group_id = kw.pop("group", topic + "-g")
    s.consumer.session_timeout_ms = 6000
    s.consumer.heartbeat_interval_ms = 1000
    s.consumer.max_poll_interval_ms = 10000
    s.consumer.max_poll_records = kw.pop("max_poll_records", 20)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def scrape(url: str) -> dict[tuple, float]:
    """Parse a /metrics page into {(name, frozenset(labels)): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    body = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def total(samples: dict, name: str, **labels) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def metric_sum(metrics, name: str, **labels: str) -> float:
    """The sum of a ``WorkerMetrics``' samples named ``name`` whose labels include ``labels``."""
    return sum(
        s.value
        for fam in metrics.registry.collect()
        for s in fam.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def worker_env(settings: WorkerSettings, metrics_port: int, **extra: str) -> dict[str, str]:
    """Environment for a `claimwatch worker` subprocess with ``settings`` (fast group timings)."""
    env = dict(os.environ)
    env.update(
        {
            "CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
            "CLAIMWATCH_TOPIC": settings.topic,
            "CLAIMWATCH_RESULTS_TOPIC": settings.results_topic or "null",  # empty would mean the default
            "CLAIMWATCH_DEAD_LETTER_TOPIC": settings.dead_letter_topic,
            "CLAIMWATCH_CONSUMER__GROUP_ID": settings.consumer.group_id,
            "CLAIMWATCH_CONSUMER__SESSION_TIMEOUT_MS": "6000",
            "CLAIMWATCH_CONSUMER__HEARTBEAT_INTERVAL_MS": "1000",
            "CLAIMWATCH_CONSUMER__MAX_POLL_INTERVAL_MS": "10000",
            "CLAIMWATCH_CONSUMER__MAX_POLL_RECORDS": "5",
            "CLAIMWATCH_METRICS_PORT": str(metrics_port),
            "CLAIMWATCH_METRICS_HOST": "127.0.0.1",
            "PYTHONPATH": str(ROOT),
            # the tests choose the offline judge on purpose (a worker without a chosen judge refuses to start)
            "CLAIMWATCH_JUDGE": settings.judge or "heuristic",
        }
    )
    env.update(extra)
    return env


def spawn_worker(settings: WorkerSettings, metrics_port: int, **extra: str) -> subprocess.Popen:
    """Start `claimwatch worker` as a real process (so it can be SIGTERMed / SIGKILLed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "claimwatch.cli", "--log-level", "WARNING", "worker"],
        env=worker_env(settings, metrics_port, **extra),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
