"""Does redaction on the collector's background thread slow the app's requests? (GIL contention)

Redaction runs off the app thread, but in the same process: a backend that spends milliseconds of
Python per record (Presidio + spaCy: ~10-25 ms) competes with the app's request threads for the GIL.
This measures it the way an app feels it: an open-loop paced load (requests start on a fixed
schedule, whatever the previous ones did) where each request is a realistic RAG trace
(``rag_request``: 5-20 chunks, three spans) plus ``--work-ms`` of the app's own Python work;
the latency is the request's wall time on the app thread. Variants, interleaved in rounds:

- ``off``: ``RagTraceProcessor`` with no redaction;
- ``builtin``: e-mails, cards and phones (US, GB) on;
- ``presidio``: ``redaction_backend=presidio`` (default entities) plus the same builtin rules,
  when the ``pii`` extra is installed.

Records go to a ``MemorySink`` (no Kafka), so the difference between variants is redaction.

    python -m benchmarks.redaction_app_latency [--rate 20] [--seconds 6] [--rounds 3] [--work-ms 2]

Last line: ``request p99 presidio/off at R req/s: X``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from benchmarks._common import machine, median, percentile, rag_request
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from collector.sink import MemorySink
from contract.errors import ConfigError
from contract.logs import configure_logging


def busy(ms: float) -> None:
    """The app's own CPU work (pure Python: it needs the GIL like the app's real code)."""
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        x += 1


def build(name: str) -> tuple[RagTraceProcessor, TracerProvider] | None:
    settings = CollectorSettings(late_span_wait_s=0.05)
    if name in ("builtin", "presidio"):
        settings = settings.model_copy(
            update={
                "redact_emails": True,
                "redact_cards": True,
                "redact_phones": True,
                "redact_phone_regions": ["US", "GB"],
            }
        )
    if name == "presidio":
        settings = settings.model_copy(update={"redaction_backend": "presidio"})
    try:
        proc = RagTraceProcessor(settings, sink=MemorySink(), registry=CollectorRegistry())
    except ConfigError:
        return None  # the pii extra is not installed
    provider = TracerProvider()
    provider.add_span_processor(proc)
    return proc, provider


def paced(provider: TracerProvider, rate: float, seconds: float, work_ms: float, seed: int) -> list[float]:
    """Request latencies (ms) of an open-loop load at ``rate`` requests/s."""
    tracer = provider.get_tracer("bench")
    rng = random.Random(seed)
    n = int(rate * seconds)
    start = time.perf_counter()
    out = []
    for i in range(n):
        due = start + i / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        t0 = time.perf_counter()
        rag_request(tracer, rng)
        busy(work_ms)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=20.0, help="requests per second (open loop)")
    ap.add_argument("--seconds", type=float, default=6.0, help="per variant per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work-ms", type=float, default=2.0, help="the app's own Python work per request")
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    variants = {}
    for name in ("off", "builtin", "presidio"):
        built = build(name)
        if built is not None:
            variants[name] = built
    lat: dict[str, list[float]] = {k: [] for k in variants}
    order_rng = random.Random(5)
    for r in range(args.rounds):
        order = list(variants)
        order_rng.shuffle(order)
        for name in order:
            proc, provider = variants[name]
            lat[name] += paced(provider, args.rate, args.seconds, args.work_ms, seed=r)
            proc.force_flush(30_000)
    print(
        f"machine: {machine()}; {args.rate:g} req/s open loop, {args.work_ms:g} ms app work per request, "
        f"{args.rounds} x {args.seconds:g} s per variant"
    )
    out: dict = {}
    for name, values in lat.items():
        proc, _ = variants[name]
        records = len(proc.sink.records) if isinstance(proc.sink, MemorySink) else None
        out[name] = {
            "p50_ms": median(values),
            "p99_ms": percentile(values, 99),
            "requests": len(values),
            "records": records,
        }
        print(
            f"{name:9} requests {len(values):5}  p50 {out[name]['p50_ms']:7.2f} ms  p99 {out[name]['p99_ms']:7.2f} ms  "
            f"records out {records}"
        )
    for _, provider in variants.values():
        provider.shutdown()
    if "presidio" in out:
        ratio = out["presidio"]["p99_ms"] / out["off"]["p99_ms"]
        print(f"request p99 presidio/off at {args.rate:g} req/s: {ratio:.2f}")
        out["p99_ratio_presidio_off"] = ratio
    sys.stdout.flush()
    return out


if __name__ == "__main__":
    main()
