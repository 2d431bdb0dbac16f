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

Two request kinds (``--workload rag|agent|both``, default both), each variant measured on each:

- ``rag``: a realistic RAG trace (root CHAIN, RETRIEVER with 5-20 chunks, LLM span, the demo
  app's attribute shapes; 3 spans), ``--requests`` of them per variant per round;
- ``agent``: an OpenInference-shaped agent turn with ``--tool-calls`` (10) tool calls (root
  AGENT, an LLM span asking for each tool, the TOOL span, a RETRIEVER under the ``search_docs``
  tools, a final LLM span whose input messages carry every tool result; ~26 spans, ~100 KB of
  attribute text, see ``benchmarks._common.agent_request``), ``--agent-requests`` of them
  (default ``--requests`` / 4) per variant per round.

Every round runs each (variant, workload) pair once, in a shuffled order. Measured on the app
thread: the duration of every ``span.end()`` (that is where ``on_end`` runs) and of the whole
request. Between rounds each processor is flushed (untimed) so one variant's background work
does not bleed into the next variant's round.

Second figure: the whole-request p99 with Kafka unreachable (bootstrap to a
closed port) vs reachable, same interleaving; target: no growth.

    python -m benchmarks.app_overhead [--rounds 60] [--requests 200] [--workload rag|agent|both]

Third figure: redaction cost per record on the collector's background thread (the builtin rules, and the
Presidio backend with its one-time load when the ``pii`` extra is installed).

Last lines: ``agent traces: on_end ratio claimwatch/bsp (median span end): X ...`` (agent
workload), then ``on_end ratio claimwatch/bsp (median span end): X ...`` (RAG workload); each
ends with the whole-request and span-end p99 ratios, ``processor/BSP p99: request X, span end Y
(target <= 1.0)``.
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

from benchmarks._common import (
    OtlpSink,
    agent_request,
    closed_port,
    fmt_us,
    machine,
    median,
    percentile,
    rag_request,
)
from claimwatch.embedded import EmbeddedBroker
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.logs import configure_logging

WORKLOADS = ("rag", "agent")
VARIANTS = ("none", "bsp", "bsp_otlp", "claimwatch", "claimwatch_no_yield", "claimwatch_kafka_down")
#: how each workload is described in the printed table
DESCRIPTION = {
    "rag": "RAG traces (root CHAIN > RETRIEVER with 5-20 chunks, LLM)",
    "agent": "agent traces (root AGENT > {n} x (LLM asking for a tool, TOOL [> RETRIEVER]), final LLM)",
}


class Variant:
    """One TracerProvider set-up and the timings collected for it, per workload."""

    def __init__(self, name: str, provider: TracerProvider, flush, clear=None) -> None:
        self.name = name
        self.provider = provider
        self.tracer = provider.get_tracer("bench")
        self.flush = flush
        self.clear = clear
        self.span_end_ns: dict[str, list[int]] = {w: [] for w in WORKLOADS}
        self.request_ns: dict[str, list[int]] = {w: [] for w in WORKLOADS}
        self.tool_calls = 10

    def round(self, rng: random.Random, requests: int, workload: str = "rag") -> None:
        ends, durations = self.span_end_ns[workload], self.request_ns[workload]
        if workload == "agent":
            for _ in range(requests):
                durations.append(agent_request(self.tracer, rng, tool_calls=self.tool_calls, timings=ends))
        else:
            for _ in range(requests):
                durations.append(rag_request(self.tracer, rng, timings=ends))
        self.flush()
        if self.clear is not None:
            self.clear()

    def reset(self) -> None:
        for w in WORKLOADS:
            self.span_end_ns[w].clear()
            self.request_ns[w].clear()

    def summary(self, workload: str = "rag") -> dict:
        ends, durations = self.span_end_ns[workload], self.request_ns[workload]
        return {
            "span_end_median_ns": median(ends),
            "span_end_p99_ns": percentile(ends, 99),
            "request_median_ns": median(durations),
            "request_p99_ns": percentile(durations, 99),
            "spans": len(ends),
            "requests": len(durations),
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


def run_rounds(variants: list[Variant], rounds: int, requests: dict[str, int], seed: int) -> None:
    """``rounds`` rounds; each runs every (variant, workload) pair once, shuffled; ``requests``: per workload."""
    order_rng = random.Random(seed)
    for r in range(rounds):
        order = [(v, w) for v in variants for w in requests]
        order_rng.shuffle(order)
        for v, w in order:
            gc.collect()
            # the same requests for every variant (the RAG ones as before the agent workload was added)
            rng = random.Random(seed * 1000 + r) if w == "rag" else random.Random(f"{w}:{seed}:{r}")
            v.round(rng, requests[w], w)


def ratios(s: dict[str, dict]) -> dict:
    """The claimwatch-vs-comparator ratios of one workload's variant summaries."""
    n, b, c, d = (s[k] for k in ("none", "bsp", "claimwatch", "claimwatch_kafka_down"))
    bo, ny = s["bsp_otlp"], s["claimwatch_no_yield"]
    return {
        "ratio_request_p99_vs_otlp": c["request_p99_ns"] / bo["request_p99_ns"],
        "ratio_request_median_vs_otlp": c["request_median_ns"] / bo["request_median_ns"],
        "ratio_span_end_median_vs_otlp": c["span_end_median_ns"] / bo["span_end_median_ns"],
        "yield_vs_no_yield_request_p99": c["request_p99_ns"] / ny["request_p99_ns"],
        "net_span_end_claimwatch_ns": c["span_end_median_ns"] - n["span_end_median_ns"],
        "net_span_end_bsp_ns": b["span_end_median_ns"] - n["span_end_median_ns"],
        "ratio_span_end_median": c["span_end_median_ns"] / b["span_end_median_ns"],
        "ratio_span_end_p99": c["span_end_p99_ns"] / b["span_end_p99_ns"],
        "ratio_request_median": c["request_median_ns"] / b["request_median_ns"],
        "ratio_request_p99": c["request_p99_ns"] / b["request_p99_ns"],
        "kafka_down_vs_up_request_p99": d["request_p99_ns"] / c["request_p99_ns"],
        "kafka_down_vs_up_span_end_p99": d["span_end_p99_ns"] / c["span_end_p99_ns"],
    }


def print_workload(title: str, res: dict, dropped: dict) -> None:
    """The table and ratio lines of one workload (``res``: its summaries and ratios)."""
    c, ny = res["claimwatch"], res["claimwatch_no_yield"]
    spans_per_request = c["spans"] / max(1, c["requests"])
    print(f"{title}: {c['requests']} requests, {spans_per_request:.1f} spans per request, per variant")
    print(f"{'variant':24} {'span end med':>13} {'span end p99':>13} {'request med':>12} {'request p99':>12}")
    for name in VARIANTS:
        s = res[name]
        print(
            f"{name:24} {fmt_us(s['span_end_median_ns']):>13} {fmt_us(s['span_end_p99_ns']):>13} "
            f"{fmt_us(s['request_median_ns']):>12} {fmt_us(s['request_p99_ns']):>12}"
        )
    print(
        f"net added per span end over no processor: claimwatch {fmt_us(res['net_span_end_claimwatch_ns'])}, "
        f"bsp {fmt_us(res['net_span_end_bsp_ns'])}"
    )
    print(
        f"ratios claimwatch/bsp: span end median {res['ratio_span_end_median']:.2f}, p99 {res['ratio_span_end_p99']:.2f}; "
        f"request median {res['ratio_request_median']:.2f}, p99 {res['ratio_request_p99']:.2f}"
    )
    print(
        f"ratios claimwatch/bsp_otlp (real OTLP/HTTP exporter): span end median "
        f"{res['ratio_span_end_median_vs_otlp']:.2f}; request median {res['ratio_request_median_vs_otlp']:.2f}, "
        f"p99 {res['ratio_request_p99_vs_otlp']:.2f}"
    )
    print(
        f"cooperative GIL yield: request p99 with / without x{res['yield_vs_no_yield_request_p99']:.2f} "
        f"({fmt_us(c['request_p99_ns'])} vs {fmt_us(ny['request_p99_ns'])})"
    )
    print(
        f"Kafka unreachable vs reachable: request p99 x{res['kafka_down_vs_up_request_p99']:.2f}, "
        f"span end p99 x{res['kafka_down_vs_up_span_end_p99']:.2f} (collector drops while down: "
        f"{dropped or 'none yet'})"
    )


def headline(res: dict) -> str:
    """The figure line of one workload (after its prefix)."""
    return (
        f"on_end ratio claimwatch/bsp (median span end): {res['ratio_span_end_median']:.2f} (target <= 1.0); "
        f"kafka-down p99 growth x{res['kafka_down_vs_up_request_p99']:.2f} (target ~1.0); "
        f"processor/BSP p99: request {res['ratio_request_p99']:.2f}, span end {res['ratio_span_end_p99']:.2f} "
        "(target <= 1.0)"
    )


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--requests", type=int, default=200, help="RAG requests per variant per round")
    ap.add_argument(
        "--agent-requests", type=int, default=None, help="agent requests per variant per round (default: requests / 4)"
    )
    ap.add_argument("--tool-calls", type=int, default=10, help="tool calls per agent request")
    ap.add_argument("--workload", choices=("rag", "agent", "both"), default="both")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument(
        "--redaction-records", type=int, default=None, help="dev records the redaction costs run on (default: all)"
    )
    args = ap.parse_args(argv)
    workloads = list(WORKLOADS) if args.workload == "both" else [args.workload]
    agent_requests = args.agent_requests if args.agent_requests is not None else max(2, args.requests // 4)
    requests = {w: {"rag": args.requests, "agent": agent_requests}[w] for w in workloads}
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
        for v in variants:
            v.tool_calls = args.tool_calls
        warm_up = {w: max(2, n // 5) for w, n in requests.items()}
        run_rounds(variants, 2, warm_up, args.seed + 99)  # warm-up, discarded
        for v in variants:
            v.reset()
        run_rounds(variants, args.rounds, requests, args.seed)
        for w in workloads:
            out[w] = {v.name: v.summary(w) for v in variants}
        for v in variants:
            v.provider.shutdown()
        out["kafka_down_dropped"] = {k[1]: v for k, v in _dropped(down_proc).items()}
    for w in workloads:
        out[w].update(ratios(out[w]))
    if "rag" in out:  # the RAG figures also at the top level, as before the agent workload was added
        out.update(out["rag"])
    kinds = " + ".join(f"{requests[w]} {w.upper() if w == 'rag' else w} requests" for w in workloads)
    print(f"machine: {machine()}; {args.rounds} rounds x ({kinds}) per variant, {time.monotonic() - started:.0f} s")
    for w in workloads:
        print()
        print_workload(DESCRIPTION[w].format(n=args.tool_calls), out[w], out["kafka_down_dropped"])
    print()
    out["redaction_us_per_record"] = redaction_cost(records=args.redaction_records)
    print(
        "redaction per record on the collector's background thread (dev claims as records, ~450 chars): "
        + ", ".join(f"{k} {v:.0f} us" for k, v in out["redaction_us_per_record"].items())
    )
    presidio = presidio_cost(records=args.redaction_records)
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
    if "agent" in out:
        print("agent traces: " + headline(out["agent"]))
    if "rag" in out:  # last: the line the docs and the smoke test read
        print(headline(out["rag"]))
    sys.stdout.flush()
    return out


def redaction_cost(repeat: int = 3, records: int | None = None) -> dict[str, float]:
    """Microseconds per record of each redaction configuration (the builtin backend)."""
    from collector.redaction import Redactor

    recs = _dev_records()[:records]
    configs = {
        "emails+cards": Redactor(emails=True, cards=True),
        "emails+cards+phones(US,GB)": Redactor(emails=True, cards=True, phones=True, phone_regions=["US", "GB"]),
    }
    out = {}
    for name, redactor in configs.items():
        start = time.perf_counter()
        for _ in range(repeat):
            for rec in recs:
                redactor.record(rec)
        out[name] = (time.perf_counter() - start) / (repeat * len(recs)) * 1e6
    return out


def _dev_records() -> list:
    from claimwatch.calibration import DATA_DIR, load_labeled_claims
    from contract.record import Context, RagTrace

    return [
        RagTrace(trace_id="t", question="q?", answer=c.claim, contexts=[Context(content=x) for x in c.context])
        for c in load_labeled_claims(DATA_DIR / "claims_dev.jsonl")
    ]


def presidio_cost(repeat: int = 1, records: int | None = None) -> dict | None:
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
    recs = _dev_records()[:records]
    for rec in recs[:5]:  # warm-up: first calls allocate spaCy's buffers
        redactor.record(rec)
    chars = sum(len(r.question or "") + len(r.answer) + sum(len(c.content) for c in r.contexts) for r in recs)
    start = time.perf_counter()
    for _ in range(repeat):
        for rec in recs:
            redactor.record(rec)
    elapsed = time.perf_counter() - start
    return {
        "us_per_record": elapsed / (repeat * len(recs)) * 1e6,
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
