"""Worker throughput with the heuristic judge on demo traffic: per worker, share outside the judge, 1 vs 2 processes.

Set-up: an ``EmbeddedBroker``; ``--records`` RagTrace records made by the
instrumented demo app through the real collector (unique trace ids) are
pre-produced to a 2-partition topic. Then, for 1 and for 2 workers, each
worker is a separate PROCESS (spawn) running the real
``evaluator_worker.worker.Worker`` in a fresh consumer group (short
timeouts: session 6 s, heartbeat 1 s), writing results to a results topic and
Prometheus metrics to its own registry, exactly as ``claimwatch worker`` does.

Measured in each worker: a timing proxy around the judge (``extract_claims`` +
``verify``) and the completion time of every record (``Worker.on_result``).
The throughput window runs from the first record processed to the last, so
the group join is excluded; with 2 workers it is the window where both are
consuming (a worker that joined first and ran alone is not counted as scaling).

    python -m benchmarks.worker_throughput [--records 3000]

Last line: ``2-worker scaling: X.XXx``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import time
import uuid
from typing import Any, Sequence

from benchmarks._common import bench_worker_settings, create_topic, demo_traces, machine, produce_records
from claimwatch.embedded import EmbeddedBroker
from contract.logs import configure_logging
from evaluator_worker.judges.base import JudgeBase


class TimedJudge(JudgeBase):
    """A judge proxy that adds up the wall time spent inside the wrapped judge."""

    def __init__(self, inner: Any, clock=time.perf_counter) -> None:
        self.inner = inner
        self.name = inner.name
        self.clock = clock
        self.judge_s = 0.0
        self.judge_cpu_s = 0.0
        self.first_call: float | None = None
        self.first_cpu: float | None = None

    @property
    def io_bound(self) -> bool:
        return self.inner.io_bound

    def extract_claims(self, answer: str, question: str | None = None):
        t, c = self.clock(), time.thread_time()
        if self.first_call is None:
            self.first_call, self.first_cpu = time.monotonic(), time.process_time()
        try:
            return self.inner.extract_claims(answer, question)
        finally:
            self.judge_s += self.clock() - t
            self.judge_cpu_s += time.thread_time() - c

    def verify(self, claims: Sequence, contexts: Sequence[str], question: str | None = None):
        t, c = self.clock(), time.thread_time()
        try:
            return self.inner.verify(claims, contexts, question)
        finally:
            self.judge_s += self.clock() - t
            self.judge_cpu_s += time.thread_time() - c


def worker_process(bootstrap: str, topic: str, group: str, idle_s: float, expect: int, out: Any) -> None:
    """Child process: one real Worker with the heuristic judge; reports timings on ``out``."""
    configure_logging("ERROR")
    from evaluator_worker.assembly import build_worker
    from evaluator_worker.judges.heuristic import HeuristicJudge
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator

    s = bench_worker_settings(bootstrap, topic, group, fast_group=True)
    s.consumer.group_id = group  # every worker process of a run joins the same group
    judge = TimedJudge(HeuristicJudge())
    worker = build_worker(
        s, evaluator=Evaluator(judge, WorkerMetrics()), seed_dedupe=lambda parts: [], exporter=None, shadow=None
    )
    done: list[float] = []
    cpu_at_last: list[float] = [0.0]

    def on_result(_r: Any) -> None:
        done.append(time.monotonic())
        cpu_at_last[0] = time.process_time()

    worker.on_result = on_result
    threading.Thread(target=_stop_when_idle, args=(worker, done, idle_s), daemon=True).start()
    worker.run(max_records=expect)
    out.put(
        {
            "processed": worker.processed,
            "done": done,
            "judge_s": judge.judge_s,
            "first_call": judge.first_call,
            "judge_cpu_s": judge.judge_cpu_s,
            "cpu_s": cpu_at_last[0] - (judge.first_cpu or 0.0),
        }
    )


def _stop_when_idle(worker: Any, done: list[float], idle_s: float, give_up_s: float = 90.0) -> None:
    """Stop the worker once it has processed something and then seen nothing for ``idle_s`` (join time excluded)."""
    started = time.monotonic()
    while not worker.stopping:
        time.sleep(0.1)
        now = time.monotonic()
        if (done and now - done[-1] > idle_s) or (not done and now - started > give_up_s):
            worker.stop()


def run_group(bootstrap: str, topic: str, n_workers: int, expect: int, idle_s: float) -> list[dict]:
    """Start ``n_workers`` worker processes in a new group; wait for them; return their reports."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    group = f"bench-{n_workers}w-{uuid.uuid4().hex[:6]}"
    procs = [
        ctx.Process(target=worker_process, args=(bootstrap, topic, group, idle_s, expect, q), daemon=True)
        for _ in range(n_workers)
    ]
    for p in procs:
        p.start()
    reports = [q.get(timeout=170) for _ in procs]
    for p in procs:
        p.join(10)
    return reports


def summarise(reports: list[dict]) -> dict:
    """Throughput over the window where every worker is consuming; share of time outside the judge."""
    active = [r for r in reports if r["done"]]
    total = sum(r["processed"] for r in reports)
    if not active:
        return {"processed": total, "rate": 0.0, "per_worker": [], "outside_share": float("nan")}
    start = max(r["first_call"] for r in active)  # all workers consuming from here on
    end = min(r["done"][-1] for r in active)  # until the first one runs dry
    if len(active) == 1 or end <= start:
        start, end = active[0]["first_call"], active[0]["done"][-1]
    in_window = sum(sum(1 for t in r["done"] if start <= t <= end) for r in active)
    rate = in_window / (end - start) if end > start else float("nan")
    per_worker = []
    for r in active:
        wall = r["done"][-1] - r["first_call"]
        per_worker.append(
            {
                "processed": r["processed"],
                "rate": r["processed"] / wall if wall > 0 else float("nan"),
                "judge_share": r["judge_s"] / wall if wall > 0 else float("nan"),
            }
        )
    outside = 1.0 - sum(r["judge_s"] for r in active) / sum(r["done"][-1] - r["first_call"] for r in active)
    cpu = sum(r["cpu_s"] for r in active)
    outside_cpu = 1.0 - sum(r["judge_cpu_s"] for r in active) / cpu if cpu > 0 else float("nan")
    per_cpu_s = total / cpu if cpu > 0 else float("nan")
    return {
        "outside_cpu_share": outside_cpu,
        "records_per_cpu_s": per_cpu_s,
        "processed": total,
        "rate": rate,
        "window_s": end - start,
        "in_window": in_window,
        "per_worker": per_worker,
        "outside_share": outside,
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--idle", type=float, default=3.0, help="a worker stops after this many idle seconds")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    started = time.monotonic()
    records = demo_traces(args.records, fault_rate=0.3)
    out: dict = {"records": len(records)}
    with EmbeddedBroker() as broker:
        topic = "bench.throughput"
        create_topic(broker.bootstrap, topic, partitions=max(2, max(args.workers)))
        produce_records(broker.bootstrap, topic, records)
        for n in args.workers:
            out[n] = summarise(run_group(broker.bootstrap, topic, n, len(records), args.idle))
    print(f"machine: {machine()}; {len(records)} demo records (heuristic judge), {time.monotonic() - started:.0f} s")
    for n in args.workers:
        s = out[n]
        per = ", ".join(
            f"{p['processed']} rec @ {p['rate']:.0f}/s, judge {p['judge_share']:.0%}" for p in s["per_worker"]
        )
        print(
            f"{n} worker(s): {s['rate']:.0f} records/s over the common window; processed {s['processed']}; "
            f"outside the judge {s['outside_share']:.1%} of wall time, {s['outside_cpu_share']:.1%} of CPU time; "
            f"{s['records_per_cpu_s']:.0f} records per worker CPU-second [{per}]"
        )
    first = out[args.workers[0]]
    print(f"machine after: {machine()} (other processes on this machine compete for the 2 cores)")
    print(
        f"per worker: {first['rate']:.0f} records/s; time outside the judge (decode, Kafka, metrics): "
        f"{first['outside_share']:.1%} of wall time, {first['outside_cpu_share']:.1%} of CPU (target < 10%)"
    )
    if 1 in out and 2 in out and out[1]["rate"] > 0:
        out["scaling"] = out[2]["rate"] / out[1]["rate"]
        print(f"2-worker scaling: {out['scaling']:.2f}x (target >= 1.7x on 2 cores)")
    else:
        print(f"throughput: {first['rate']:.0f} records/s")
    sys.stdout.flush()
    return out


if __name__ == "__main__":
    main()
