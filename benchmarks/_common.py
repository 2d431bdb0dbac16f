"""Shared pieces of the benchmarks: statistics, demo traffic, loopback Kafka helpers, RSS.

Nothing here is production code; the benchmarks import the real collector and
worker and only add measurement around them.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import time
import urllib.request
from typing import Any, Iterable, Sequence

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from claimwatch.demo.app import DemoRagApp, make_provider
from claimwatch.demo.corpus import ABSTAIN_QUESTION, DOCUMENTS
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from collector.sink import MemorySink
from contract.record import RagTrace

MODEL = "demo-llm-2024-06"


# --------------------------------------------------------------------------- worker settings


def bench_worker_settings(bootstrap: str, topic: str, group_prefix: str, *, fast_group: bool = False) -> Any:
    """``WorkerSettings`` of a benchmark worker: its topic, results/DLQ topics beside it, a fresh group.

    ``fast_group``: short session/heartbeat/poll timeouts, so a group join takes seconds.
    """
    import uuid

    from evaluator_worker.config import WorkerSettings

    s = WorkerSettings()
    s.kafka.bootstrap_servers = bootstrap
    s.topic = topic
    s.results_topic = topic + ".results"
    s.dead_letter_topic = topic + ".dlq"
    s.consumer.group_id = f"{group_prefix}-{uuid.uuid4().hex[:6]}"
    if fast_group:
        s.consumer.session_timeout_ms = 6000
        s.consumer.heartbeat_interval_ms = 1000
        s.consumer.max_poll_interval_ms = 10000
    return s


# --------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (k - lo))


def median(values: Sequence[float]) -> float:
    """Median; NaN for no values."""
    return float(statistics.median(values)) if values else float("nan")


def fmt_us(ns: float) -> str:
    """Nanoseconds as a microsecond string."""
    return f"{ns / 1000.0:.1f} us"


# --------------------------------------------------------------------------- a local OTLP/HTTP endpoint

_OTLP_SINK_SCRIPT = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


class OtlpSink:
    """A tiny OTLP/HTTP endpoint (every POST gets 200) in a child process, so it takes no GIL from ours.

    ``endpoint`` is the ``/v1/traces`` URL for ``OTLPSpanExporter(endpoint=...)``.
    """

    def __init__(self) -> None:
        import subprocess
        import sys

        self._proc = subprocess.Popen([sys.executable, "-c", _OTLP_SINK_SCRIPT], stdout=subprocess.PIPE, text=True)
        port = int(self._proc.stdout.readline().strip())
        self.endpoint = f"http://127.0.0.1:{port}/v1/traces"

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(5)
        except Exception:  # pragma: no cover
            self._proc.kill()

    def __enter__(self) -> "OtlpSink":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --------------------------------------------------------------------------- demo traffic


def demo_traces(n: int, *, fault_rate: float = 0.3, seed: int = 7, release: str = "v1.5.0-rc1") -> list[RagTrace]:
    """``n`` RagTrace records made by the instrumented demo app and turned into records by the real collector."""
    provider = make_provider(release)
    settings = CollectorSettings()
    settings.late_span_wait_s = 0.0
    sink = MemorySink()
    processor = RagTraceProcessor(settings, sink=sink, registry=CollectorRegistry())
    provider.add_span_processor(processor)
    app = DemoRagApp(provider.get_tracer("demo-rag-app"), release, MODEL, fault_rate=fault_rate, seed=seed)
    for i, q in enumerate(app.questions(n)):
        app.ask(ABSTAIN_QUESTION if i % 25 == 24 else q)
    processor.force_flush(30_000)
    provider.shutdown()
    by_id = {r.trace_id: r for r in sink.records}
    return list(by_id.values())


#: every demo document sentence, as retrievable chunks (40 of them)
CHUNKS: tuple[tuple[str, str], ...] = tuple((f"{d.id}#{i}", s) for d in DOCUMENTS for i, s in enumerate(d.sentences))


def rag_request(tracer: Tracer, rng: random.Random, *, timings: list[int] | None = None) -> int:
    """One RAG request with the demo app's attribute shapes, 5-20 retrieved chunks; returns its duration (ns).

    Spans: root CHAIN (``RunnableSequence``) > RETRIEVER (``VectorStoreRetriever``,
    ``retrieval.documents.{i}.document.{id,content,score}``) and LLM (``ChatModel``).
    When ``timings`` is given, the duration of each ``span.end()`` (the
    SpanProcessor ``on_end`` path on the app thread) is appended to it.
    """
    perf = time.perf_counter_ns
    k = rng.randint(5, 20)
    start = rng.randrange(len(CHUNKS))
    docs = [CHUNKS[(start + j) % len(CHUNKS)] for j in range(k)]
    question = f"What does the documentation say about {docs[0][0].split('#')[0]}?"
    answer = " ".join(s for _, s in docs[:2])
    t0 = perf()
    root = tracer.start_span("RunnableSequence")
    root.set_attribute("openinference.span.kind", "CHAIN")
    root.set_attribute("input.value", question)
    root.set_attribute("claimwatch.route", "bench")
    ctx = otel_trace.set_span_in_context(root)
    ret = tracer.start_span("VectorStoreRetriever", context=ctx)
    ret.set_attribute("openinference.span.kind", "RETRIEVER")
    ret.set_attribute("input.value", question)
    for i, (doc_id, text) in enumerate(docs):
        ret.set_attribute(f"retrieval.documents.{i}.document.id", doc_id)
        ret.set_attribute(f"retrieval.documents.{i}.document.content", text)
        ret.set_attribute(f"retrieval.documents.{i}.document.score", round(1.0 - 0.01 * i, 3))
    _end(ret, timings)
    llm = tracer.start_span("ChatModel", context=ctx)
    llm.set_attribute("openinference.span.kind", "LLM")
    llm.set_attribute("llm.model_name", MODEL)
    llm.set_attribute("llm.input_messages.0.message.role", "user")
    llm.set_attribute("llm.input_messages.0.message.content", question)
    llm.set_attribute("llm.output_messages.0.message.role", "assistant")
    llm.set_attribute("llm.output_messages.0.message.content", answer)
    _end(llm, timings)
    root.set_attribute("output.value", answer)
    _end(root, timings)
    return perf() - t0


def _end(span: Any, timings: list[int] | None) -> None:
    if timings is None:
        span.end()
        return
    t = time.perf_counter_ns()
    span.end()
    timings.append(time.perf_counter_ns() - t)


# --------------------------------------------------------------------------- Kafka (loopback)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Create ``name`` with ``partitions`` partitions on the broker."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def produce_records(bootstrap: str, topic: str, records: Iterable[RagTrace]) -> int:
    """Produce RagTrace records (key = trace id) and wait for the acks; returns how many."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, compression_type="gzip")
    n = 0
    for r in records:
        p.send(topic, key=r.key, value=r.to_json_bytes())
        n += 1
    p.flush(60)
    p.close()
    return n


def closed_port() -> int:
    """A local TCP port with nothing listening (bound, then released)."""
    from claimwatch.embedded import free_port

    return free_port()


# --------------------------------------------------------------------------- metrics and memory


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)", re.M)


def scrape_sum(url: str, name: str, timeout: float = 2.0) -> float:
    """Sum of every sample called ``name`` on a /metrics page (all label sets)."""
    body = urllib.request.urlopen(url, timeout=timeout).read().decode()
    return sum(float(m.group(3)) for m in _SAMPLE.finditer(body) if m.group(1) == name)


def proc_status_kb(field: str, pid: int | str = "self") -> int:
    """A ``kB`` field of /proc/<pid>/status (VmRSS, VmHWM); 0 when unavailable."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size in MiB."""
    return proc_status_kb("VmRSS", pid) / 1024.0


def hwm_mb(pid: int | str = "self") -> float:
    """Peak resident set size (high-water mark) in MiB."""
    return proc_status_kb("VmHWM", pid) / 1024.0


def machine() -> str:
    """A one-line description of this machine (cores, Python)."""
    import platform

    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load avg {load}, Python {platform.python_version()}, {platform.machine()}"
