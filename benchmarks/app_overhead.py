"""App-thread overhead of ``RagTraceProcessor`` vs OpenTelemetry's ``BatchSpanProcessor``.

What runs, in one process, interleaved (every round runs each variant once, in
a shuffled order, so machine drift hits all variants alike):

- ``none``: a TracerProvider with no span processor (the SDK's own cost);
- ``bsp``: ``BatchSpanProcessor(InMemorySpanExporter())`` (what every OTel app already pays);
- ``bsp_otlp``: ``BatchSpanProcessor(OTLPSpanExporter())`` (HTTP/protobuf) sending to a local
  OTLP/HTTP endpoint in a child process that answers 200: the like-for-like comparator, since a
  real exporter encodes and sends in its background thread as the collector does;
- ``claimwatch``: ``RagTraceProcessor`` producing to a real Kafka-protocol broker (``EmbeddedBroker``);
- ``claimwatch_no_yield``: the same with the background thread's cooperative GIL yield turned off
  (``yield_after_s = 0``), i.e. the collector before that change, in the same run.

Each request is a realistic RAG trace (root CHAIN, RETRIEVER with 5-20 chunks,
LLM span, the demo app's attribute shapes). Measured on the app thread: the
duration of every ``span.end()`` (that is where ``on_end`` runs) and of the
whole request. Between rounds each processor is flushed (untimed) so one
variant's background work does not bleed into the next variant's round.

Second figure: the whole-request p99 with Kafka unreachable (bootstrap to a
closed port) vs reachable, same interleaving; target: no growth.

    python -m benchmarks.app_overhead [--rounds 60] [--requests 200]

Third figure: redaction cost per record on the collector's background thread (the builtin rules, and the
Presidio backend with its one-time load when the ``pii`` extra is installed).

Last line: ``on_end ratio claimwatch/bsp (median span end): X``.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from contextlib import ExitStack

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from benchmarks._common import OtlpSink, closed_port, fmt_us, machine, median, percentile, rag_request
from claimwatch.embedded import EmbeddedBroker
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.logs import configure_logging


class Variant:
    """One TracerProvider set-up and the timings collected for it."""

    def __init__(self, name: str, provider: TracerProvider, flush, clear=None) -> None:
        self.name = name
        self.provider = provider
        self.tracer = provider.get_tracer("bench")
        self.flush = flush
        self.clear = clear
        self.span_end_ns: list[int] = []
        self.request_ns: list[int] = []

    def round(self, rng: random.Random, requests: int) -> None:
        for _ in range(requests):
            self.request_ns.append(rag_request(self.tracer, rng, timings=self.span_end_ns))
        self.flush()
        if self.clear is not None:
            self.clear()

    def summary(self) -> dict:
        return {
            "span_end_median_ns": median(self.span_end_ns),
            "span_end_p99_ns": percentile(self.span_end_ns, 99),
            "request_median_ns": median(self.request_ns),
            "request_p99_ns": percentile(self.request_ns, 99),
            "spans": len(self.span_end_ns),
        }


def claimwatch_variant(
    name: str, bootstrap: str, flush_ms: int, *, yield_gil: bool = True
) -> tuple[Variant, RagTraceProcessor]:
    settings = CollectorSettings()
    settings.kafka.bootstrap_servers = bootstrap
    settings.topic = "bench.overhead"
    settings.late_span_wait_s = 0.05
    settings.flush_timeout_s = min(5.0, flush_ms / 1000.0)
    proc = RagTraceProcessor(settings, registry=CollectorRegistry())
    if not yield_gil:
        proc.yield_after_s = 0.0
    provider = TracerProvider()
    provider.add_span_processor(proc)
    return Variant(name, provider, lambda: proc.force_flush(flush_ms)), proc


def bsp_variant() -> Variant:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    bsp = BatchSpanProcessor(exporter)
    provider.add_span_processor(bsp)
    return Variant("bsp", provider, lambda: bsp.force_flush(10_000), exporter.clear)


def bsp_otlp_variant(endpoint: str) -> Variant:
    provider = TracerProvider()
    bsp = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10))
    provider.add_span_processor(bsp)
    return Variant("bsp_otlp", provider, lambda: bsp.force_flush(10_000))


def run_rounds(variants: list[Variant], rounds: int, requests: int, seed: int) -> None:
    order_rng = random.Random(seed)
    for r in range(rounds):
        order = list(variants)
        order_rng.shuffle(order)
        for v in order:
            gc.collect()
            v.round(random.Random(seed * 1000 + r), requests)  # same requests for every variant


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--requests", type=int, default=200, help="requests per variant per round")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    started = time.monotonic()
    out: dict = {}
    with ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker())
        otlp = stack.enter_context(OtlpSink())
        none = Variant("none", TracerProvider(), lambda: None)
        bsp = bsp_variant()
        bsp_otlp = bsp_otlp_variant(otlp.endpoint)
        cw, cw_proc = claimwatch_variant("claimwatch", broker.bootstrap, 10_000)
        cw_ny, _ = claimwatch_variant("claimwatch_no_yield", broker.bootstrap, 10_000, yield_gil=False)
        down, down_proc = claimwatch_variant("claimwatch_kafka_down", f"127.0.0.1:{closed_port()}", 300)
        variants = [none, bsp, bsp_otlp, cw, cw_ny, down]
        run_rounds(variants, 2, max(5, args.requests // 5), args.seed + 99)  # warm-up, discarded
        for v in variants:
            v.span_end_ns.clear()
            v.request_ns.clear()
        run_rounds(variants, args.rounds, args.requests, args.seed)
        for v in variants:
            out[v.name] = v.summary()
            v.provider.shutdown()
        out["kafka_down_dropped"] = {k[1]: v for k, v in _dropped(down_proc).items()}
    n, b, c, d = (out[k] for k in ("none", "bsp", "claimwatch", "claimwatch_kafka_down"))
    bo, ny = out["bsp_otlp"], out["claimwatch_no_yield"]
    out["ratio_request_p99_vs_otlp"] = c["request_p99_ns"] / bo["request_p99_ns"]
    out["ratio_request_median_vs_otlp"] = c["request_median_ns"] / bo["request_median_ns"]
    out["ratio_span_end_median_vs_otlp"] = c["span_end_median_ns"] / bo["span_end_median_ns"]
    out["yield_vs_no_yield_request_p99"] = c["request_p99_ns"] / ny["request_p99_ns"]
    ratio = c["span_end_median_ns"] / b["span_end_median_ns"]
    net_c = c["span_end_median_ns"] - n["span_end_median_ns"]
    net_b = b["span_end_median_ns"] - n["span_end_median_ns"]
    out["ratio_span_end_median"] = ratio
    out["ratio_span_end_p99"] = c["span_end_p99_ns"] / b["span_end_p99_ns"]
    out["ratio_request_median"] = c["request_median_ns"] / b["request_median_ns"]
    out["ratio_request_p99"] = c["request_p99_ns"] / b["request_p99_ns"]
    out["kafka_down_vs_up_request_p99"] = d["request_p99_ns"] / c["request_p99_ns"]
    out["kafka_down_vs_up_span_end_p99"] = d["span_end_p99_ns"] / c["span_end_p99_ns"]
    print(
        f"machine: {machine()}; {args.rounds} rounds x {args.requests} requests x 3 spans per variant, "
        f"{time.monotonic() - started:.0f} s"
    )
    print(f"{'variant':24} {'span end med':>13} {'span end p99':>13} {'request med':>12} {'request p99':>12}")
    for name in ("none", "bsp", "bsp_otlp", "claimwatch", "claimwatch_no_yield", "claimwatch_kafka_down"):
        s = out[name]
        print(
            f"{name:24} {fmt_us(s['span_end_median_ns']):>13} {fmt_us(s['span_end_p99_ns']):>13} "
            f"{fmt_us(s['request_median_ns']):>12} {fmt_us(s['request_p99_ns']):>12}"
        )
    print(f"net added per span end over no processor: claimwatch {fmt_us(net_c)}, bsp {fmt_us(net_b)}")
    print(
        f"ratios claimwatch/bsp: span end median {ratio:.2f}, p99 {out['ratio_span_end_p99']:.2f}; "
        f"request median {out['ratio_request_median']:.2f}, p99 {out['ratio_request_p99']:.2f}"
    )
    print(
        f"ratios claimwatch/bsp_otlp (real OTLP/HTTP exporter): span end median "
        f"{out['ratio_span_end_median_vs_otlp']:.2f}; request median {out['ratio_request_median_vs_otlp']:.2f}, "
        f"p99 {out['ratio_request_p99_vs_otlp']:.2f}"
    )
    print(
        f"cooperative GIL yield: request p99 with / without x{out['yield_vs_no_yield_request_p99']:.2f} "
        f"({fmt_us(c['request_p99_ns'])} vs {fmt_us(ny['request_p99_ns'])})"
    )
    print(
        f"Kafka unreachable vs reachable: request p99 x{out['kafka_down_vs_up_request_p99']:.2f}, "
        f"span end p99 x{out['kafka_down_vs_up_span_end_p99']:.2f} (collector drops while down: "
        f"{out['kafka_down_dropped'] or 'none yet'})"
    )
    out["redaction_us_per_record"] = redaction_cost()
    print(
        "redaction per record on the collector's background thread (dev claims as records, ~450 chars): "
        + ", ".join(f"{k} {v:.0f} us" for k, v in out["redaction_us_per_record"].items())
    )
    presidio = presidio_cost()
    if presidio is not None:
        out["redaction_us_per_record"]["presidio(default entities)"] = presidio["us_per_record"]
        out["presidio"] = presidio
        print(
            f"presidio backend (redaction_backend=presidio, default entities): {presidio['us_per_record']:.0f} us "
            f"per record ({presidio['us_per_1k_chars']:.0f} us per 1,000 chars), one-time load "
            f"{presidio['load_s']:.2f} s (import Presidio + spaCy, load {presidio['model']}, build the analyzer)"
        )
    else:
        print("presidio backend: not installed (pip install 'claimwatch[pii]'), not measured")
    print(
        f"on_end ratio claimwatch/bsp (median span end): {ratio:.2f} (target <= 1.0); "
        f"kafka-down p99 growth x{out['kafka_down_vs_up_request_p99']:.2f} (target ~1.0)"
    )
    sys.stdout.flush()
    return out


def redaction_cost(repeat: int = 3) -> dict[str, float]:
    """Microseconds per record of each redaction configuration (the builtin backend)."""
    from collector.redaction import Redactor

    records = _dev_records()
    configs = {
        "emails+cards": Redactor(emails=True, cards=True),
        "emails+cards+phones(US,GB)": Redactor(emails=True, cards=True, phones=True, phone_regions=["US", "GB"]),
    }
    out = {}
    for name, redactor in configs.items():
        start = time.perf_counter()
        for _ in range(repeat):
            for rec in records:
                redactor.record(rec)
        out[name] = (time.perf_counter() - start) / (repeat * len(records)) * 1e6
    return out


def _dev_records() -> list:
    from claimwatch.calibration import DATA_DIR, load_labeled_claims
    from contract.record import Context, RagTrace

    return [
        RagTrace(trace_id="t", question="q?", answer=c.claim, contexts=[Context(content=x) for x in c.context])
        for c in load_labeled_claims(DATA_DIR / "claims_dev.jsonl")
    ]


def presidio_cost(repeat: int = 1) -> dict | None:
    """The Presidio backend (default entities) on the same records: us per record and the one-time load; None if absent.

    The load is the first build in this process (imports, spaCy model, analyzer); a process that built it before
    reports that first build's time (the analyzer is cached per process).
    """
    from collector.redaction import Redactor
    from contract.errors import ConfigError

    try:
        from collector.redaction_presidio import MODEL_PACKAGE, PresidioDetector

        detector = PresidioDetector()
    except ConfigError:
        return None
    redactor = Redactor(detector=detector)
    records = _dev_records()
    for rec in records[:5]:  # warm-up: first calls allocate spaCy's buffers
        redactor.record(rec)
    chars = sum(len(r.question or "") + len(r.answer) + sum(len(c.content) for c in r.contexts) for r in records)
    start = time.perf_counter()
    for _ in range(repeat):
        for rec in records:
            redactor.record(rec)
    elapsed = time.perf_counter() - start
    return {
        "us_per_record": elapsed / (repeat * len(records)) * 1e6,
        "us_per_1k_chars": elapsed / (repeat * chars) * 1e9,
        "load_s": detector.load_seconds,
        "model": MODEL_PACKAGE,
    }


def _dropped(proc: RagTraceProcessor) -> dict:
    found = {}
    for metric in proc.metrics.dropped.collect():
        for s in metric.samples:
            if s.name.endswith("_total") and s.value:
                found[("reason", s.labels.get("reason"))] = s.value
    return found


if __name__ == "__main__":
    main()
