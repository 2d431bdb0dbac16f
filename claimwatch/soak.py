"""``claimwatch soak``: a bounded, loopback-only soak run that proves records in == records out.

Starts an embedded Kafka-protocol broker on 127.0.0.1, ``--workers`` evaluator
workers (threads, one consumer group) and the collector inside the demo RAG app
(:mod:`claimwatch.demo.app`), drives the app at a steady ``--rate``
requests/s for ``--seconds``, then waits for the pipeline to drain and
reconciles every count::

    sent traces = results + dead letters + traces the collector dropped (by reason)

and, separately, produced records (broker acks) = results + dead letters.

The workers measure the product: they are built by :func:`evaluator_worker.assembly.build_worker`,
as ``claimwatch worker`` builds them, with the retry policy, parity scores, consistency tracker
and trace exporter that the settings (``CLAIMWATCH_*``, ``CLAIMWATCH_TRACE_EXPORT_*``) describe.
The soak changes only where the workers connect (the loopback broker, group ``claimwatch-soak``,
short group timeouts) and the judge; nothing is turned off for speed.

It stops by itself, stops everything it started (Ctrl-C included) and exits 0
only when the books balance. The report is printed as text (stderr) and JSON
(stdout, or ``--json FILE``).

Register it on the ``claimwatch`` CLI with :func:`add_cli`; also runnable as
``python -m claimwatch.soak``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from prometheus_client import CollectorRegistry

if TYPE_CHECKING:
    from evaluator_worker.config import WorkerSettings

MAX_SECONDS = 3_600.0
MAX_RATE = 500.0
#: drop reasons counted in spans (not traces); any of them unbalances the books
_SPAN_DROP_REASONS = ("span_queue_full", "shutdown", "late_span", "too_many_spans")


@dataclass
class SoakReport:
    """What went in and what came out of one soak run."""

    seconds: float
    rate: float
    workers: int
    judge: str
    sent: int = 0
    produced: int = 0
    results: int = 0
    dead_letters: int = 0
    duplicates: int = 0
    not_rag: int = 0
    sampled_out: int = 0
    collector_drops: dict[str, int] = field(default_factory=dict)
    span_drops: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    unexpected: int = 0
    max_request_ms: float = 0.0
    elapsed_s: float = 0.0
    balanced: bool = False

    @property
    def accounted(self) -> int:
        """Traces that ended somewhere we can name."""
        return self.results + self.dead_letters + self.not_rag + self.sampled_out + sum(self.collector_drops.values())

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["accounted"] = self.accounted
        return d

    def to_text(self) -> str:
        lines = [
            f"claimwatch soak: {self.seconds:.0f} s at {self.rate:g} req/s, {self.workers} worker(s), judge {self.judge}",
            f"  sent traces        {self.sent}",
            f"  produced records   {self.produced}",
            f"  results            {self.results}",
            f"  dead letters       {self.dead_letters}",
            f"  duplicates skipped {self.duplicates}",
            f"  not RAG / sampled  {self.not_rag} / {self.sampled_out}",
            f"  collector drops    {self.collector_drops or 'none'}",
            f"  span drops         {self.span_drops or 'none'}",
            f"  missing / unknown  {self.missing} / {self.unexpected}",
            f"  worst app request  {self.max_request_ms:.2f} ms",
            f"  in == out          {'YES' if self.balanced else 'NO'} (sent {self.sent} = accounted {self.accounted})",
            f"  elapsed            {self.elapsed_s:.1f} s",
        ]
        return "\n".join(lines)


def _sample(registry: Any, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def run_soak(
    seconds: float,
    rate: float,
    *,
    workers: int = 1,
    judge: str = "heuristic",
    partitions: int = 2,
    drain_timeout_s: float = 60.0,
    settings: WorkerSettings | None = None,
) -> SoakReport:
    """Run the soak and return the reconciled report (never raises for pipeline faults: they show in the books).

    ``settings``: the ``WorkerSettings`` the workers run with (default: read from the environment); the soak
    sets only the broker, the group, the group timeouts and ``judge`` on a copy.
    """
    from claimwatch.demo.app import DemoRagApp, make_provider
    from claimwatch.embedded import EmbeddedBroker
    from collector.config import CollectorSettings
    from collector.processor import RagTraceProcessor
    from contract.kafka import KafkaConnection
    from evaluator_worker import assembly
    from evaluator_worker.config import WorkerSettings
    from evaluator_worker.judges.registry import get_judge

    seconds = max(1.0, min(float(seconds), MAX_SECONDS))
    rate = max(0.1, min(float(rate), MAX_RATE))
    workers = max(1, min(int(workers), 8))
    report = SoakReport(seconds=seconds, rate=rate, workers=workers, judge=judge)
    started = time.monotonic()
    lock = threading.Lock()
    seen: dict[str, int] = {}

    def on_result(result: Any) -> None:
        with lock:
            seen[result.trace_id] = seen.get(result.trace_id, 0) + 1

    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker())
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic("claimwatch.traces", max(partitions, workers), 1)])
        finally:
            admin.close()
        ws = settings.model_copy(deep=True) if settings is not None else WorkerSettings()
        ws.kafka.bootstrap_servers = broker.bootstrap
        ws.consumer.group_id = "claimwatch-soak"
        ws.consumer.session_timeout_ms, ws.consumer.heartbeat_interval_ms = 6_000, 1_000
        ws.consumer.max_poll_interval_ms = 30_000
        ws.judge = judge
        metrics = assembly.build_metrics(ws)
        the_judge = get_judge(judge, ws)  # one instance shared by the workers
        exporter = assembly.build_exporter()
        if exporter is not None:
            stack.callback(exporter.shutdown)
        running = []
        for _ in range(workers):
            w = assembly.build_worker(ws, judge=the_judge, metrics=metrics, exporter=exporter)
            w.on_result = on_result
            th = threading.Thread(target=w.run, name="claimwatch-soak-worker", daemon=True)
            th.start()
            running.append((w, th))

        def stop_workers() -> None:
            for w, _ in running:
                w.stop()
            for _, th in running:
                th.join(20)

        stack.callback(stop_workers)
        registry = CollectorRegistry()
        cs = CollectorSettings(
            kafka=KafkaConnection(bootstrap_servers=broker.bootstrap), late_span_wait_s=0.05, linger_ms=5
        )
        proc = RagTraceProcessor(cs, registry=registry)
        provider = make_provider("soak-1")
        provider.add_span_processor(proc)
        app = DemoRagApp(provider.get_tracer("soak"), "soak-1", "soak-model", fault_rate=0.2)
        sent_ids: set[str] = set()
        interval = 1.0 / rate
        questions = app.questions(max(1, int(seconds * rate) + 1))
        t0 = time.monotonic()
        next_at = t0
        i = 0
        worst = 0.0
        while time.monotonic() - t0 < seconds:
            q = questions[i % len(questions)]
            r0 = time.perf_counter()
            sent_ids.add(app.ask(q).trace_id)
            worst = max(worst, time.perf_counter() - r0)
            i += 1
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        proc.force_flush(30_000)
        provider.shutdown()
        report.sent = len(sent_ids)
        report.max_request_ms = round(worst * 1000, 3)
        report.produced = int(_sample(registry, "claimwatch_collector_produce_latency_seconds_count"))
        dead = lambda: int(_sample(metrics.registry, "claimwatch_records_total", outcome="dead_lettered"))  # noqa: E731
        deadline = time.monotonic() + drain_timeout_s
        while time.monotonic() < deadline:
            with lock:
                done = len(seen)
            if done + dead() >= report.produced:
                break
            time.sleep(0.1)
        time.sleep(0.5)  # a late duplicate would show up here
        stop_workers()
        with lock:
            report.results = len(seen)
            duplicated = sum(n - 1 for n in seen.values())
            got = set(seen)
        report.dead_letters = dead()
        report.duplicates = int(_sample(metrics.registry, "claimwatch_records_total", outcome="duplicate")) + duplicated
        report.not_rag = int(_sample(registry, "claimwatch_collector_traces_total", outcome="not_rag"))
        report.sampled_out = int(_sample(registry, "claimwatch_collector_traces_total", outcome="sampled_out"))
        for fam in registry.collect():
            for s in fam.samples:
                if (
                    s.name == "claimwatch_collector_dropped_total"
                    and s.value
                    and s.labels["reason"] != "missing_content"
                ):
                    # (missing_content counts documents without text, not traces)
                    bucket = report.span_drops if s.labels["reason"] in _SPAN_DROP_REASONS else report.collector_drops
                    bucket[s.labels["reason"]] = int(s.value)
        report.missing = len(sent_ids - got)
        report.unexpected = len(got - sent_ids)
    report.elapsed_s = round(time.monotonic() - started, 2)
    report.balanced = (
        report.sent == report.accounted
        and report.produced == report.results + report.dead_letters
        and report.unexpected == 0
        and not report.span_drops
        and duplicated == 0
    )
    return report


def cmd_soak(args: argparse.Namespace) -> int:
    """Run the soak, print text (stderr) and JSON (stdout or --json FILE); 0 only when in == out."""
    from contract.logs import configure_logging

    configure_logging("WARNING")
    from evaluator_worker.config import WorkerSettings

    report = run_soak(
        args.seconds, args.rate, workers=args.workers, judge=args.judge or "heuristic", settings=WorkerSettings()
    )
    print(report.to_text(), file=sys.stderr)
    data = json.dumps(report.to_json(), indent=2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(data + "\n")
    else:
        print(data)
    return 0 if report.balanced else 1


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``soak`` on the ``claimwatch`` sub-command parsers."""
    p = subparsers.add_parser(
        "soak", help="bounded loopback soak: demo app -> collector -> Kafka -> workers; in == out"
    )
    p.add_argument("--seconds", type=float, default=60.0, help=f"how long to drive the app (max {MAX_SECONDS:.0f})")
    p.add_argument("--rate", type=float, default=20.0, help=f"requests per second (max {MAX_RATE:.0f})")
    p.add_argument("--workers", type=int, default=1, help="worker threads in the consumer group (max 8)")
    p.add_argument("--judge", default=None, help="heuristic (default) or module:factory")
    p.add_argument("--json", default=None, help="write the JSON report here instead of stdout")
    p.set_defaults(func=cmd_soak)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="claimwatch")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["soak", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
