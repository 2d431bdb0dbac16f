"""Freshness: span end -> the worker's Prometheus counter shows the answer, at a steady load.

Set-up: an ``EmbeddedBroker`` with a 1-partition topic (FIFO, so the k-th
answer counted is the k-th answer sent); the instrumented demo app with the
real ``RagTraceProcessor`` in this process; one real ``Worker`` with the
heuristic judge in a separate process, serving ``/metrics``. The demo app
sends ``--rate`` traces/s for ``--duration`` s; a scraper thread reads
``claimwatch_answers_total`` from ``/metrics`` in a tight loop (every ~5 ms)
and notes when the counter passes k. Latency of trace k = that moment minus
the end of trace k's root span.

Two configurations, one run each:

- ``defaults``: collector ``late_span_wait_s=0.5``, producer ``linger_ms=50``;
  worker consumer defaults (kafka-python ``fetch_max_wait_ms=500``, poll 500 ms);
- ``tuned``: ``late_span_wait_s=0.05``, ``linger_ms=5``, ``fetch_max_wait_ms=50``, poll 100 ms.

Prometheus itself adds up to one scrape interval on top (1 s in the demo, often 15-30 s in production).

    python -m benchmarks.freshness [--rate 20] [--duration 30]

Last line: ``freshness p95 (defaults): X.XX s``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry

from benchmarks._common import bench_worker_settings, create_topic, machine, median, percentile, scrape_sum
from claimwatch.demo.app import DemoRagApp, make_provider
from claimwatch.embedded import EmbeddedBroker, free_port
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.logs import configure_logging

COUNTER = "claimwatch_answers_total"
CONFIGS = {
    "defaults": {"late_span_wait_s": 0.5, "linger_ms": 50, "fetch_max_wait_ms": None, "poll_timeout_ms": 500},
    "tuned": {"late_span_wait_s": 0.05, "linger_ms": 5, "fetch_max_wait_ms": 50, "poll_timeout_ms": 100},
}


def worker_process(
    bootstrap: str, topic: str, port: int, fetch_max_wait_ms: int | None, poll_timeout_ms: int, stop: Any
) -> None:
    """Child process: one real Worker (heuristic judge) with /metrics on ``port``; runs until ``stop`` is set."""
    configure_logging("ERROR")
    from prometheus_client import start_http_server

    from evaluator_worker.assembly import build_worker
    from evaluator_worker.judges.heuristic import HeuristicJudge
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator

    s = bench_worker_settings(bootstrap, topic, "bench-fresh")
    s.consumer.poll_timeout_ms = poll_timeout_ms
    metrics = WorkerMetrics()
    start_http_server(port, addr="127.0.0.1", registry=metrics.registry)
    consumer = None
    if fetch_max_wait_ms is not None:  # the Worker takes any consumer: this one waits less for a fetch
        from contract.group import make_group_consumer

        consumer = make_group_consumer(s.consumer, s.kafka, fetch_max_wait_ms=fetch_max_wait_ms)
        consumer.subscribe([topic])
    worker = build_worker(
        s,
        evaluator=Evaluator(HeuristicJudge(), metrics),
        consumer=consumer,
        seed_dedupe=lambda parts: [],
        exporter=None,
        shadow=None,
    )
    threading.Thread(target=lambda: (stop.wait(), worker.stop()), daemon=True).start()
    worker.run()


class Scraper(threading.Thread):
    """Reads the counter in a tight loop; ``visible[k]`` = when it first showed >= base + k + 1."""

    def __init__(self, url: str, base: float, interval_s: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.url, self.base, self.interval_s = url, base, interval_s
        self.visible: list[float] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                v = scrape_sum(self.url, COUNTER)
            except OSError:
                time.sleep(0.05)
                continue
            now = time.monotonic()
            while v - self.base >= len(self.visible) + 1:
                self.visible.append(now)
            time.sleep(self.interval_s)


def _wait_counter(url: str, at_least: float, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            v = scrape_sum(url, COUNTER)
            if v >= at_least:
                return v
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{COUNTER} did not reach {at_least} within {timeout_s} s")


def run_config(broker: EmbeddedBroker, name: str, rate: float, duration: float) -> dict:
    """One configuration: fresh topic, worker process, collector, paced load; latencies in seconds."""
    cfg = CONFIGS[name]
    topic = f"bench.fresh.{name}.{uuid.uuid4().hex[:4]}"
    create_topic(broker.bootstrap, topic, partitions=1)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    proc = ctx.Process(
        target=worker_process,
        daemon=True,
        args=(broker.bootstrap, topic, port, cfg["fetch_max_wait_ms"], cfg["poll_timeout_ms"], stop),
    )
    proc.start()
    settings = CollectorSettings()
    settings.kafka.bootstrap_servers = broker.bootstrap
    settings.topic = topic
    settings.late_span_wait_s = cfg["late_span_wait_s"]
    settings.linger_ms = cfg["linger_ms"]
    processor = RagTraceProcessor(settings, registry=CollectorRegistry())
    provider = make_provider("v-bench")
    provider.add_span_processor(processor)
    app = DemoRagApp(provider.get_tracer("demo-rag-app"), "v-bench", "demo-llm", fault_rate=0.3)
    try:
        app.ask(app.questions(1)[0])  # warm-up: the worker has joined and judged one answer
        base = _wait_counter(url, 1, 60)
        scraper = Scraper(url, base)
        scraper.start()
        n = int(rate * duration)
        ended: list[float] = []
        t0 = time.monotonic()
        for i, q in enumerate(app.questions(n)):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            app.ask(q)
            ended.append(time.monotonic())
        deadline = time.monotonic() + 20
        while len(scraper.visible) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        scraper.halt.set()
        scraper.join(2)
        lat = [v - e for v, e in zip(scraper.visible, ended)]
        return {
            "sent": n,
            "seen": len(scraper.visible),
            "p50": median(lat),
            "p95": percentile(lat, 95),
            "max": max(lat) if lat else float("nan"),
            **cfg,
        }
    finally:
        provider.shutdown()
        stop.set()
        proc.join(15)
        if proc.is_alive():
            proc.terminate()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=20.0, help="traces per second")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of load per configuration")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    started = time.monotonic()
    out: dict = {}
    with EmbeddedBroker() as broker:
        for name in args.configs:
            out[name] = run_config(broker, name, args.rate, args.duration)
    print(
        f"machine: {machine()}; {args.rate:g} traces/s for {args.duration:g} s per configuration, "
        f"{time.monotonic() - started:.0f} s"
    )
    for name in args.configs:
        r = out[name]
        print(
            f"{name:9} late_span_wait {r['late_span_wait_s']} s, linger {r['linger_ms']} ms, fetch wait "
            f"{r['fetch_max_wait_ms'] or 500} ms: p50 {r['p50']:.3f} s, p95 {r['p95']:.3f} s, max {r['max']:.3f} s "
            f"({r['seen']}/{r['sent']} seen)"
        )
    head = args.configs[0]
    tail = " ".join(f"{n} p95 {out[n]['p95']:.2f} s;" for n in args.configs[1:])
    print(f"freshness p95 ({head}): {out[head]['p95']:.2f} s (target < 2 s); {tail}".rstrip(" ;"))
    sys.stdout.flush()
    return out


if __name__ == "__main__":
    main()
