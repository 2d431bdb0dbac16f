"""One worker against an LLM judge with realistic latency: answers/s, p95 latency, RSS, calls per answer vs max_in_flight.

Set-up: an ``EmbeddedBroker``; the fake Messages API (``tests/fakes/messages_server.py``)
in its own process with lognormal latency (median ``--median`` s per call, sigma 0.5),
so it does not share the worker's GIL; the real ``AnthropicJudge`` (two calls per
answer: extract, verify) through the real ``anthropic`` SDK. For each ``max_in_flight``
a fresh topic (4 partitions) holds a backlog of demo answers and ONE worker process
(spawn) runs the real ``Worker`` on it until every answer has a durable result.

Measured in the worker process: answers/s from the first result to the last (the
group join excluded), p50/p95 record latency (poll -> result acknowledged, from the
``evaluation_duration`` observations), peak RSS (VmHWM), LLM requests per answer (the
fake server's request count). A burst run (unless ``--no-burst``) at the default ``max_in_flight``
has the API answer 40 calls with HTTP 429 (retry-after 1 s) after the 50th result
(``--burst-seconds S``: every call for S seconds instead), each beside a run of the same
length without the burst; ``--repeat N`` repeats both, interleaved, and prints the medians
(one 200-answer run spends ~8 s draining its last answers, so single runs vary by +-15%).

    python -m benchmarks.llm_latency [--median 2.0] [--in-flight 1 8 32 64 128] [--burst-answers 200] [--repeat 5]

Last line: ``default max_in_flight=64: X.X answers/s (target >= 10), RSS Y MB (target <= 300)``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from benchmarks._common import bench_worker_settings, create_topic, demo_traces, machine, percentile, produce_records
from claimwatch.embedded import EmbeddedBroker
from contract.logs import configure_logging

ROOT = Path(__file__).resolve().parents[1]


class Observations:
    """Stands in for a Histogram child: keeps every observed value."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def observe(self, v: float) -> None:
        self.values.append(v)


def _hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def worker_process(
    bootstrap: str,
    topic: str,
    base_url: str,
    in_flight: int,
    expect: int,
    burst_url: str | None,
    out: Any,
    burst_cmd: dict[str, Any] | None = None,
) -> None:
    """Child process: one real Worker with the real AnthropicJudge; reports timings on ``out``."""
    configure_logging("ERROR")
    import anthropic

    from evaluator_worker.assembly import build_worker
    from evaluator_worker.config import AnthropicSettings
    from evaluator_worker.flow import RetryPolicy
    from evaluator_worker.judges.anthropic import AnthropicJudge
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator

    s = bench_worker_settings(bootstrap, topic, "bench-llm", fast_group=True)
    s.flow.max_in_flight = in_flight
    client = anthropic.Anthropic(api_key="bench", base_url=base_url, max_retries=0, timeout=60.0)
    judge = AnthropicJudge(AnthropicSettings(), client=client)
    metrics = WorkerMetrics()
    latencies = Observations()
    metrics.evaluation_duration = latencies  # type: ignore[assignment]
    worker = build_worker(
        s,
        evaluator=Evaluator(judge, metrics, retry=RetryPolicy(), consistency=None),
        seed_dedupe=lambda parts: [],
        exporter=None,
        shadow=None,
    )
    done: list[float] = []
    fired = [False]
    timeline: list[tuple[float, int, int]] = []  # (seconds since the burst, concurrency limit, answers done)

    def on_result(_r: Any) -> None:
        done.append(time.monotonic())
        if burst_url and not fired[0] and len(done) >= 50:
            fired[0] = True
            cmd = burst_cmd or {"fail": 429, "times": 40, "retry_after": "1"}
            req = urllib.request.Request(burst_url, data=json.dumps(cmd).encode(), method="POST")
            urllib.request.urlopen(req, timeout=5).read()
            threading.Thread(target=watch_limit, args=(time.monotonic(),), daemon=True).start()

    def watch_limit(since: float) -> None:
        limiter = worker.evaluator.caller.limiter
        while limiter is not None and len(done) < expect and time.monotonic() - since < 120:
            timeline.append((round(time.monotonic() - since, 1), limiter.limit, len(done)))
            time.sleep(0.5)

    worker.on_result = on_result
    started = time.monotonic()
    worker.run(max_records=expect)
    failed = sum(
        s.value
        for fam in metrics.registry.collect()
        for s in fam.samples
        if s.name == "claimwatch_answers_total" and s.labels.get("outcome") == "failed"
    )
    throttled = sum(
        s.value
        for fam in metrics.registry.collect()
        for s in fam.samples
        if s.name == "claimwatch_judge_throttled_total"
    )
    out.put(
        {
            "processed": worker.processed,
            "done": done,
            "started": started,
            "latencies": latencies.values,
            "hwm_mb": _hwm_mb(),
            "failed": failed,
            "throttled": throttled,
            "timeline": timeline,
        }
    )


def start_fake(median: float, seed: int = 11) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.messages_server", "--latency-median", str(median), "--seed", str(seed)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    port = proc.stdout.readline().strip()  # type: ignore[union-attr]
    return proc, f"http://127.0.0.1:{port}"


def stats(base_url: str) -> dict:
    return json.loads(urllib.request.urlopen(base_url + "/_stats", timeout=5).read())


def run_one(
    bootstrap: str,
    base_url: str,
    in_flight: int,
    n: int,
    records: list,
    burst: bool = False,
    burst_cmd: dict[str, Any] | None = None,
) -> dict:
    topic = f"bench.llm.{in_flight}.{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, partitions=4)
    produce_records(bootstrap, topic, records[:n])
    before = stats(base_url)["requests"]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(
        target=worker_process,
        args=(bootstrap, topic, base_url, in_flight, n, base_url + "/_control" if burst else None, q, burst_cmd),
        daemon=True,
    )
    p.start()
    r = q.get(timeout=900)
    p.join(30)
    after = stats(base_url)
    window = r["done"][-1] - r["done"][0] if len(r["done"]) > 1 else float("nan")
    return {
        "in_flight": in_flight,
        "answers": r["processed"],
        "rate": (len(r["done"]) - 1) / window if window and window > 0 else float("nan"),
        "p50_s": percentile(r["latencies"], 50),
        "p95_s": percentile(r["latencies"], 95),
        "rss_mb": r["hwm_mb"],
        "requests_per_answer": (after["requests"] - before) / max(1, r["processed"]),
        "max_concurrent": after["max_concurrent"],
        "failed": r["failed"],
        "throttled": r["throttled"],
        "timeline": r["timeline"],
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--median", type=float, default=2.0, help="median seconds per LLM call")
    ap.add_argument("--in-flight", type=int, nargs="+", default=[1, 8, 32, 64, 128])
    ap.add_argument("--per-slot", type=int, default=5, help="answers per max_in_flight slot (min 12)")
    ap.add_argument("--no-burst", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="burst runs (each beside a no-burst run of the same length)")
    ap.add_argument("--burst-answers", type=int, default=None, help="answers in the burst run (default 64 x per-slot)")
    ap.add_argument(
        "--burst-seconds",
        type=float,
        default=None,
        help="a time-based burst: every call of the next S seconds gets 429",
    )
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    t0 = time.monotonic()
    most = max(12, max(args.in_flight) * args.per_slot)
    burst_n = args.burst_answers or 64 * args.per_slot
    records = demo_traces(max(most, 64 * args.per_slot, burst_n), fault_rate=0.3)
    rows: list[dict] = []
    fake, base_url = start_fake(args.median)
    try:
        with EmbeddedBroker() as broker:
            for m in args.in_flight:
                rows.append(run_one(broker.bootstrap, base_url, m, max(12, m * args.per_slot), records))
                r = rows[-1]
                print(
                    f"max_in_flight={m:4d}: {r['answers']:4d} answers, {r['rate']:6.2f} answers/s, "
                    f"p50 {r['p50_s']:5.1f} s, p95 {r['p95_s']:5.1f} s, RSS {r['rss_mb']:4.0f} MB, "
                    f"{r['requests_per_answer']:.2f} LLM requests/answer",
                    flush=True,
                )
            burst = None
            if not args.no_burst:
                cmd = (
                    {"fail": 429, "seconds": args.burst_seconds, "retry_after": "1"}
                    if args.burst_seconds
                    else {"fail": 429, "times": 40, "retry_after": "1"}
                )
                kind = f"every call for {args.burst_seconds:g} s" if args.burst_seconds else "40 x 429"
                plain_rates, burst_rates = [], []
                for _ in range(args.repeat):  # interleaved, so drift on the machine hits both alike
                    plain_rates.append(run_one(broker.bootstrap, base_url, 64, burst_n, records)["rate"])
                    burst = run_one(broker.bootstrap, base_url, 64, burst_n, records, burst=True, burst_cmd=cmd)
                    burst_rates.append(burst["rate"])
                    print(
                        f"429 burst ({kind}, retry-after 1 s, at max_in_flight=64): {burst['answers']} answers, "
                        f"{burst['rate']:.2f} answers/s (same run length without the burst: {plain_rates[-1]:.2f}), "
                        f"p95 {burst['p95_s']:.1f} s, failed answers {burst['failed']:.0f}, "
                        f"throttled calls {burst['throttled']:.0f}, {burst['requests_per_answer']:.2f} requests/answer",
                        flush=True,
                    )
                    steps = [
                        (t, lim)
                        for i, (t, lim, _) in enumerate(burst["timeline"])
                        if i == 0 or lim != burst["timeline"][i - 1][1]
                    ]
                    print(
                        "  concurrency limit after the burst (s: limit): " + ", ".join(f"{t}: {lm}" for t, lm in steps)
                    )
                b_med, p_med = statistics.median(burst_rates), statistics.median(plain_rates)
                print(
                    f"429 burst, median of {args.repeat}: {b_med:.2f} answers/s over {burst_n} answers (target >= 10); "
                    f"without the burst {p_med:.2f}; ratio {b_med / p_med:.2f}; "
                    f"runs >= 10: {sum(r >= 10 for r in burst_rates)} of {args.repeat}"
                )
    finally:
        fake.kill()
    print(f"machine: {machine()}; median {args.median} s per call; {time.monotonic() - t0:.0f} s")
    base = next((r for r in rows if r["in_flight"] == 1), None)
    if base and base["rate"] > 0:
        print(
            "scaling vs max_in_flight=1: "
            + ", ".join(f"{r['in_flight']}: {r['rate'] / base['rate']:.1f}x" for r in rows)
        )
    default = next((r for r in rows if r["in_flight"] == 64), rows[-1])
    print(
        f"default max_in_flight={default['in_flight']}: {default['rate']:.1f} answers/s (target >= 10), "
        f"RSS {default['rss_mb']:.0f} MB (target <= 300)"
    )
    return {"rows": rows, "burst": burst}


if __name__ == "__main__":
    main()
