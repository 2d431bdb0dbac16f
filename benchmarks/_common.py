"""Shared pieces of the benchmarks: statistics, demo traffic, loopback Kafka helpers, RSS.

Nothing here is production code; the benchmarks import the real collector and
worker and only add measurement around them.
"""

from __future__ import annotations

import json
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


#: the agent's tools: name -> (description, JSON-schema properties); ``search_docs`` has a RETRIEVER child
AGENT_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_docs": (
        "Search the documentation; returns the best matching passages, each with its document id.",
        {"query": {"type": "string"}, "top_k": {"type": "integer"}},
    ),
    "get_document": (
        "Fetch one documentation page by its id; returns the page text.",
        {"doc_id": {"type": "string"}},
    ),
    "lookup_order": (
        "Look a customer order up by its number; returns status, items and dates as JSON.",
        {"order_id": {"type": "string"}},
    ),
    "calculator": (
        "Evaluate an arithmetic expression; returns the steps and the result.",
        {"expression": {"type": "string"}},
    ),
}
_AGENT_TOOL_WEIGHTS = (4, 3, 2, 1)  # search_docs, get_document, lookup_order, calculator
_AGENT_SYSTEM = (
    "You are the support assistant of a documentation site and an online shop. Answer only from what the "
    "tools return: look passages up with search_docs, read whole pages with get_document, check orders with "
    "lookup_order and do arithmetic with calculator. Cite the document ids you used; say so when the tools "
    "do not answer the question."
)
#: OpenInference ``llm.tools.{i}.tool.json_schema`` (the OpenAI instrumentation sets them on every LLM span)
_AGENT_TOOL_SCHEMAS = tuple(
    json.dumps(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": desc,
                "parameters": {"type": "object", "properties": props, "required": [next(iter(props))]},
            },
        }
    )
    for name, (desc, props) in AGENT_TOOLS.items()
)
_DOC_SENTENCES: dict[str, list[str]] = {}
for _cid, _text in CHUNKS:
    _DOC_SENTENCES.setdefault(_cid.split("#")[0], []).append(_text)


def _agent_tool_step(rng: random.Random, step: int) -> dict[str, Any]:
    """One tool call of the agent: name, arguments JSON, result text (a few hundred chars), retrieved docs."""
    name = rng.choices(list(AGENT_TOOLS), weights=_AGENT_TOOL_WEIGHTS)[0]
    doc_id = rng.choice(list(_DOC_SENTENCES))
    sentences = _DOC_SENTENCES[doc_id]
    docs: list[tuple[str, str, float]] = []
    if name == "search_docs":
        k = rng.randint(3, 5)
        start = rng.randrange(len(CHUNKS))
        hits = [CHUNKS[(start + j) % len(CHUNKS)] for j in range(k)]
        docs = [(cid, text, round(0.92 - 0.04 * j - rng.random() * 0.02, 3)) for j, (cid, text) in enumerate(hits)]
        args = {"query": f"{hits[0][1].split(',')[0].rstrip('.').lower()}", "top_k": k}
        result = "\n\n".join(f"[{cid}] (score {score}) {text}" for cid, text, score in docs)
    elif name == "get_document":
        args = {"doc_id": doc_id}
        result = f"# {doc_id}\n\n" + "\n".join(sentences) + f"\n\n(source: docs/{doc_id}.md, revision {step + 3})"
    elif name == "lookup_order":
        order = f"A-{rng.randrange(100000, 999999)}"
        args = {"order_id": order}
        result = json.dumps(
            {
                "order_id": order,
                "status": rng.choice(["delivered", "shipped", "processing"]),
                "placed_on": f"2026-11-{rng.randint(1, 20):02d}",
                "items": [
                    {"sku": f"SKU-{rng.randrange(1000, 9999)}", "qty": rng.randint(1, 3), "title": t}
                    for t in (s.split(",")[0][:40] for s in sentences[:2])
                ],
                "notes": sentences[2],
            }
        )
    else:
        a, b, c = rng.randint(2, 400), rng.randint(2, 60), rng.randint(2, 9)
        args = {"expression": f"({a} + {b}) * {c}"}
        result = (
            f"Expression: ({a} + {b}) * {c}\nStep 1: {a} + {b} = {a + b}\nStep 2: {a + b} * {c} = {(a + b) * c}\n"
            f"Result: {(a + b) * c}\nContext used: {sentences[0]} {sentences[1]}"
        )
    call_id = f"call_{rng.getrandbits(96):024x}"
    return {"name": name, "id": call_id, "args": json.dumps(args), "result": result, "docs": docs}


def _message_attrs(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference indexed attributes of chat messages: ``{prefix}.{i}.message.{role,content,tool_call_id}``
    and ``...message.tool_calls.{j}.tool_call.{id,function.name,function.arguments}``."""
    out: dict[str, Any] = {}
    for i, m in enumerate(messages):
        p = f"{prefix}.{i}.message."
        out[p + "role"] = m["role"]
        if m.get("content") is not None:
            out[p + "content"] = m["content"]
        if "tool_call_id" in m:
            out[p + "tool_call_id"] = m["tool_call_id"]
        for j, tc in enumerate(m.get("tool_calls", ())):
            q = f"{p}tool_calls.{j}.tool_call."
            out[q + "id"] = tc["id"]
            out[q + "function.name"] = tc["function"]["name"]
            out[q + "function.arguments"] = tc["function"]["arguments"]
    return out


def _llm_attrs(history: list[dict[str, Any]], output: dict[str, Any]) -> dict[str, Any]:
    """The attributes OpenInference's OpenAI instrumentation sets on one chat-completion span."""
    input_value = json.dumps(history)
    output_value = json.dumps([output])
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.system": "openai",
        "llm.provider": "openai",
        "llm.model_name": MODEL,
        "llm.invocation_parameters": '{"temperature": 0.0, "tool_choice": "auto", "parallel_tool_calls": false}',
        "input.value": input_value,
        "input.mime_type": "application/json",
    }
    for i, schema in enumerate(_AGENT_TOOL_SCHEMAS):
        attrs[f"llm.tools.{i}.tool.json_schema"] = schema
    attrs.update(_message_attrs("llm.input_messages", history))
    attrs["output.value"] = output_value
    attrs["output.mime_type"] = "application/json"
    attrs.update(_message_attrs("llm.output_messages", [output]))
    prompt, completion = len(input_value) // 4, len(output_value) // 4
    attrs["llm.token_count.prompt"] = prompt
    attrs["llm.token_count.completion"] = completion
    attrs["llm.token_count.total"] = prompt + completion
    return attrs


def agent_request(tracer: Tracer, rng: random.Random, *, tool_calls: int = 10, timings: list[int] | None = None) -> int:
    """One OpenInference-shaped agent turn with ``tool_calls`` tool calls; returns its duration (ns).

    Spans (as the OpenInference OpenAI / LangChain instrumentations emit them): root AGENT
    (``support_agent``, question in ``input.value``, answer in ``output.value``) > ``tool_calls``
    model steps, each an LLM span (``ChatCompletion``) whose ``llm.output_messages.0.message.tool_calls.0``
    asks for a tool, followed by the TOOL span (``tool.name``, arguments JSON in ``input.value``, a
    result of a few hundred characters in ``output.value``); ``search_docs`` tools (about 40%) have a
    RETRIEVER child with 3-5 ``retrieval.documents.{i}.document.{id,content,score}``; then a final LLM
    span whose ``llm.input_messages`` hold the system message, the question, every assistant tool-call
    message and every ``tool`` result (``tool_call_id``), and whose output message is the answer. Every
    LLM span carries the conversation so far (``llm.input_messages.*`` and ``input.value`` as JSON)
    and the four tool schemas, as real agents send them on every call. The attribute values are built
    before the clock starts; what is timed is span creation, attribute setting and ``span.end()``
    (each appended to ``timings`` when given, as in :func:`rag_request`).
    """
    perf = time.perf_counter_ns
    steps = [_agent_tool_step(rng, i) for i in range(tool_calls)]
    topic = rng.choice(list(_DOC_SENTENCES))
    question = (
        f"I'm working through the {topic} page and my order: what exactly does it say, does it match what "
        "I ordered, and can you check the numbers for me?"
    )
    history: list[dict[str, Any]] = [
        {"role": "system", "content": _AGENT_SYSTEM},
        {"role": "user", "content": question},
    ]
    llm_attrs: list[dict[str, Any]] = []
    tool_attrs: list[dict[str, Any]] = []
    for st in steps:
        call = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": st["id"], "type": "function", "function": {"name": st["name"], "arguments": st["args"]}}
            ],
        }
        llm_attrs.append(_llm_attrs(history, call))
        tool_attrs.append(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": st["name"],
                "tool.description": AGENT_TOOLS[st["name"]][0],
                "tool.parameters": json.dumps({"type": "object", "properties": AGENT_TOOLS[st["name"]][1]}),
                "input.value": st["args"],
                "input.mime_type": "application/json",
                "output.value": st["result"],
            }
        )
        history = [*history, call, {"role": "tool", "tool_call_id": st["id"], "content": st["result"]}]
    cited = [d for st in steps for d in st["docs"]][:3] or [(topic, s, 1.0) for s in _DOC_SENTENCES[topic][:3]]
    answer = (
        "Here is what the tools returned. "
        + " ".join(f"{text} [{cid}]" for cid, text, _ in cited)
        + " The order details and the arithmetic above match what you described."
    )
    final_attrs = _llm_attrs(history, {"role": "assistant", "content": answer})
    retr_attrs = [
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": json.loads(st["args"])["query"],
            **{
                f"retrieval.documents.{i}.document.{field}": value
                for i, (cid, text, score) in enumerate(st["docs"])
                for field, value in (("id", cid), ("content", text), ("score", score))
            },
        }
        if st["docs"]
        else None
        for st in steps
    ]
    t0 = perf()
    root = tracer.start_span("support_agent")
    root.set_attributes(
        {
            "openinference.span.kind": "AGENT",
            "agent.name": "support_agent",
            "input.value": question,
            "claimwatch.route": "bench",
        }
    )
    ctx = otel_trace.set_span_in_context(root)
    for st, la, ta, ra in zip(steps, llm_attrs, tool_attrs, retr_attrs):
        llm = tracer.start_span("ChatCompletion", context=ctx)
        llm.set_attributes(la)
        _end(llm, timings)
        tool = tracer.start_span(st["name"], context=ctx)
        if ra is not None:
            ret = tracer.start_span("VectorStoreRetriever", context=otel_trace.set_span_in_context(tool))
            ret.set_attributes(ra)
            _end(ret, timings)
        tool.set_attributes(ta)
        _end(tool, timings)
    llm = tracer.start_span("ChatCompletion", context=ctx)
    llm.set_attributes(final_attrs)
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
