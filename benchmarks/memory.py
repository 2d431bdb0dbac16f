"""Memory under a 10x burst: the collector with Kafka unreachable, and a worker working off a backlog.

Part 1, collector (this process): ``RagTraceProcessor`` with default bounds
(``queue_size`` records in the sink queue, ``max_buffered_traces`` traces in
assembly, a span queue of ``2 * queue_size``) and bootstrap pointing at a
closed port, so nothing ever leaves. Realistic RAG traces (5-20 chunks) at
``--rate`` traces/s for a few seconds, then ``--bursts`` bursts in a row at 10x
that rate. RSS (``/proc/self/status`` VmRSS, sampled every 50 ms) must level
off once the queues are full: the last burst should add (almost) nothing.

Part 2, worker (separate process): a real ``Worker`` with the heuristic judge
consumes a pre-produced backlog of ``--backlog`` demo records from an
``EmbeddedBroker``; the child samples its own VmRSS every 250 records.

    python -m benchmarks.memory [--rate 100] [--burst-seconds 10] [--backlog 3000]

Last line: ``collector peak RSS ... (last burst +X MB); worker peak RSS ...``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import threading
import time
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from benchmarks._common import (
    bench_worker_settings,
    closed_port,
    create_topic,
    demo_traces,
    hwm_mb,
    machine,
    produce_records,
    rag_request,
    rss_mb,
)
from claimwatch.embedded import EmbeddedBroker
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.logs import configure_logging


class RssSampler(threading.Thread):
    """Samples VmRSS of ``pid`` every ``interval_s``; keeps the peak and the series."""

    def __init__(self, pid: int | str = "self", interval_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval_s = pid, interval_s
        self.peak = 0.0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(self.interval_s)

    def take_peak(self) -> float:
        """Peak since the last call (then reset to the current value)."""
        peak, self.peak = max(self.peak, rss_mb(self.pid)), rss_mb(self.pid)
        return peak


def paced(tracer: Any, rng: random.Random, rate: float, seconds: float) -> int:
    """Send RAG traces at ``rate``/s for ``seconds`` (as fast as possible if the rate cannot be met)."""
    n = int(rate * seconds)
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        rag_request(tracer, rng)
    return n


def collector_part(rate: float, normal_s: float, burst_s: float, factor: float, bursts: int = 3) -> dict:
    settings = CollectorSettings()
    settings.kafka.bootstrap_servers = f"127.0.0.1:{closed_port()}"
    settings.flush_timeout_s = 0.5
    registry = CollectorRegistry()
    proc = RagTraceProcessor(settings, registry=registry)
    provider = TracerProvider()
    provider.add_span_processor(proc)
    tracer = provider.get_tracer("bench")
    rng = random.Random(5)
    sampler = RssSampler()
    start_rss = rss_mb()
    sampler.start()
    phases = []
    plan = [("normal", rate, normal_s)] + [(f"burst {i}", rate * factor, burst_s) for i in range(1, bursts + 1)]
    for name, r, secs in plan:
        t = time.monotonic()
        sent = paced(tracer, rng, r, secs)
        elapsed = time.monotonic() - t
        time.sleep(0.6)  # let the background thread catch up and the gauges refresh
        phases.append(
            {
                "phase": name,
                "sent": sent,
                "achieved_rate": sent / elapsed,
                "peak_rss_mb": sampler.take_peak(),
                "sink_queue": registry.get_sample_value("claimwatch_collector_queue_depth", {"queue": "sink"}) or 0,
                "buffered_traces": registry.get_sample_value("claimwatch_collector_buffered_traces") or 0,
                "dropped_queue_full": registry.get_sample_value(
                    "claimwatch_collector_dropped_total", {"reason": "queue_full"}
                )
                or 0,
                "dropped_span_queue": registry.get_sample_value(
                    "claimwatch_collector_dropped_total", {"reason": "span_queue_full"}
                )
                or 0,
            }
        )
    sampler.halt.set()
    provider.shutdown()
    return {
        "start_rss_mb": start_rss,
        "phases": phases,
        "hwm_mb": hwm_mb(),
        "bounds": {
            "queue_size": settings.queue_size,
            "max_buffered_traces": settings.max_buffered_traces,
            "span_queue": settings.queue_size * 2,
            "max_record_bytes": settings.max_record_bytes,
        },
    }


def worker_process(bootstrap: str, topic: str, expect: int, out: Any) -> None:
    """Child: a real Worker (heuristic judge) on the backlog; samples its own RSS every 250 records."""
    configure_logging("ERROR")
    from evaluator_worker.assembly import build_worker
    from evaluator_worker.judges.heuristic import HeuristicJudge
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator

    s = bench_worker_settings(bootstrap, topic, "bench-mem")
    samples = [(0, rss_mb())]
    worker = build_worker(
        s,
        evaluator=Evaluator(HeuristicJudge(), WorkerMetrics()),
        seed_dedupe=lambda parts: [],
        exporter=None,
        shadow=None,
    )

    def on_result(_r: Any) -> None:
        if worker.processed % 250 == 0:
            samples.append((worker.processed, rss_mb()))

    worker.on_result = on_result
    worker.run(max_records=expect, idle_timeout_s=60)
    out.put(
        {
            "processed": worker.processed,
            "samples": samples,
            "hwm_mb": hwm_mb(),
            "end_rss_mb": rss_mb(),
            "max_poll_records": s.consumer.max_poll_records,
            "dedupe_window": s.dedupe_window,
        }
    )


def worker_part(backlog: int) -> dict:
    records = demo_traces(backlog, fault_rate=0.3)
    with EmbeddedBroker() as broker:
        topic = "bench.memory"
        create_topic(broker.bootstrap, topic, partitions=2)
        produce_records(broker.bootstrap, topic, records)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=worker_process, args=(broker.bootstrap, topic, len(records), q), daemon=True)
        p.start()
        report = q.get(timeout=170)
        p.join(10)
    return report


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=100.0, help="normal traffic, traces/s")
    ap.add_argument("--factor", type=float, default=10.0, help="burst = factor x normal")
    ap.add_argument("--normal-seconds", type=float, default=3.0)
    ap.add_argument("--burst-seconds", type=float, default=10.0)
    ap.add_argument("--bursts", type=int, default=3, help="bursts in a row (the last must add ~nothing)")
    ap.add_argument("--backlog", type=int, default=3000, help="worker backlog records (0: skip the worker part)")
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    started = time.monotonic()
    col = collector_part(args.rate, args.normal_seconds, args.burst_seconds, args.factor, max(2, args.bursts))
    wrk = (
        worker_part(args.backlog)
        if args.backlog > 0
        else {"processed": 0, "samples": [], "hwm_mb": 0.0, "max_poll_records": 0, "dedupe_window": 0}
    )
    b = col["bounds"]
    print(f"machine: {machine()}; {time.monotonic() - started:.0f} s")
    print(
        f"collector bounds: sink queue_size {b['queue_size']} records, max_buffered_traces {b['max_buffered_traces']}, "
        f"span queue {b['span_queue']} spans, record <= {b['max_record_bytes']} bytes; Kafka unreachable"
    )
    print(f"collector RSS at start {col['start_rss_mb']:.0f} MB")
    for ph in col["phases"]:
        print(
            f"  {ph['phase']:13} sent {ph['sent']:6} ({ph['achieved_rate']:.0f}/s): peak RSS {ph['peak_rss_mb']:.0f} MB, "
            f"sink queue {ph['sink_queue']:.0f}, assembling {ph['buffered_traces']:.0f}, dropped queue_full "
            f"{ph['dropped_queue_full']:.0f}, span_queue_full {ph['dropped_span_queue']:.0f}"
        )
    growth2 = col["phases"][-1]["peak_rss_mb"] - col["phases"][-2]["peak_rss_mb"]
    samples = ", ".join(f"{n}: {mb:.0f}" for n, mb in wrk["samples"])
    print(
        f"worker (max_poll_records {wrk['max_poll_records']}, dedupe window {wrk['dedupe_window']} ids): processed "
        f"{wrk['processed']}, RSS MB by records processed [{samples}], peak (VmHWM) {wrk['hwm_mb']:.0f} MB"
    )
    print(
        f"collector peak RSS {col['hwm_mb']:.0f} MB under a {args.factor:g}x burst with Kafka down "
        f"(last burst {growth2:+.0f} MB vs the one before); worker peak RSS {wrk['hwm_mb']:.0f} MB on a "
        f"{wrk['processed']}-record backlog"
    )
    sys.stdout.flush()
    return {"collector": col, "worker": wrk, "last_burst_growth_mb": growth2}


if __name__ == "__main__":
    main()
