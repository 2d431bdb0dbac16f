"""No silent loss: attribute-limit victims give a flagged record or a counted, logged reason; drops are logged."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from collector import pipeline as pipeline_mod
from collector.assembler import CompletedTrace
from collector.config import CollectorSettings
from collector.conventions import SpanExtractor
from collector.otlp import OtlpSpan, SpanRef, SpanResource, SpanStatus, _StatusCode
from collector.pipeline import TracePipeline
from collector.processor import RagTraceProcessor
from collector.sink import MemorySink


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def run_rag(tp: TracerProvider, n_docs: int) -> None:
    """One OpenInference request whose retriever span holds ``n_docs`` documents x 4 attributes."""
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": "What is the refund window?",
            "output.value": "30 days.",
        },
    ):
        attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "What is the refund window?"}
        for i in range(n_docs):
            attrs |= {
                f"retrieval.documents.{i}.document.id": f"d{i}",
                f"retrieval.documents.{i}.document.content": f"Document {i}: refunds take 30 days.",
                f"retrieval.documents.{i}.document.score": 1.0 - i / 100,
                f"retrieval.documents.{i}.document.metadata": "{}",
            }
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "30 days."}
        ):
            pass


def test_evicted_span_kind_still_gives_a_record_flagged_incomplete_counted_and_logged():
    """40 docs x 4 attributes past the SDK's 128 (kind and query evicted): a record flagged incomplete, counted, logged."""
    registry = CollectorRegistry()
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.01), sink=sink, registry=registry)
    tp = TracerProvider()  # default limit: 128 attributes
    tp.add_span_processor(proc)
    with capture_logs() as logs:
        run_rag(tp, 40)
        assert proc.force_flush(5_000)
    tp.shutdown()
    [record] = sink.records
    assert record.question == "What is the refund window?" and record.answer == "30 days."
    assert record.attributes["incomplete"] == "attribute_limit" and record.attributes["dropped_attributes"] == 34
    assert len(record.contexts) == 32 and record.contexts[0].content.startswith("Document 8:")  # docs 0-7 evicted
    assert metric(registry, "claimwatch_collector_traces_total", outcome="incomplete") == 1
    assert any(e.get("warning") == "attribute_limit_incomplete" for e in logs)


def test_processor_checks_the_provider_limits_itself_on_the_first_span():
    """Without check_provider(), the processor warns once that 64 attributes cannot hold max_contexts documents."""
    pipeline_mod._warned.discard("attribute_limit")
    proc = RagTraceProcessor.from_env(sink=MemorySink(), registry=CollectorRegistry())
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=64))
    tp.add_span_processor(proc)
    with capture_logs() as logs:
        run_rag(tp, 2)
        run_rag(tp, 2)
    tp.shutdown()
    warned = [e for e in logs if e.get("warning") == "attribute_limit"]
    assert len(warned) == 1 and warned[0]["limit"] == 64


def _span(trace_id: int, span_id: int, parent: int | None, attrs: dict, dropped: int = 0) -> OtlpSpan:
    return OtlpSpan(
        context=SpanRef(trace_id, span_id),
        parent=SpanRef(trace_id, parent) if parent else None,
        name=f"s{span_id}",
        attributes=attrs,
        events=(),
        status=SpanStatus(_StatusCode("UNSET")),
        resource=SpanResource({}),
        start_time=span_id,
        end_time=span_id + 1,
        dropped_attributes=dropped,
    )


def test_trace_unusable_after_attribute_loss_is_counted_and_logged():
    """A RAG-looking trace left without documents by the limit is counted dropped{attribute_limit} and logged."""
    registry = CollectorRegistry()
    from collector.metrics import get_metrics

    pipe = TracePipeline(CollectorSettings(late_span_wait_s=0.0), sink=MemorySink(), metrics=get_metrics(registry))
    pipe.add_span(
        _span(7, 2, 1, {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "a"}, dropped=90)
    )
    pipe.add_span(_span(7, 1, None, {"openinference.span.kind": "CHAIN", "input.value": "q", "output.value": "a"}))
    with capture_logs() as logs:
        pipe.pop_complete(flush=True)
    assert metric(registry, "claimwatch_collector_dropped_total", reason="attribute_limit") == 1
    assert any(e.get("warning") == "attribute_limit_lost" and e["reason"] == "ungrounded_turn" for e in logs)


def test_late_spans_are_logged_with_reason_and_hint_rate_limited():
    """Every late span is counted; the log line names late_span and the setting, once per interval (suppressed n)."""
    now = [0.0]
    registry = CollectorRegistry()
    from collector.metrics import get_metrics

    pipe = TracePipeline(
        CollectorSettings(late_span_wait_s=0.5), sink=MemorySink(), metrics=get_metrics(registry), clock=lambda: now[0]
    )
    pipe.add_span(_span(9, 1, None, {"openinference.span.kind": "CHAIN", "input.value": "q", "output.value": "a"}))
    now[0] = 1.0
    pipe.pop_complete()
    with capture_logs() as logs:
        for i in range(3):
            pipe.add_span(_span(9, 10 + i, 1, {}))
    assert metric(registry, "claimwatch_collector_dropped_total", reason="late_span") == 3
    lines = [e for e in logs if e.get("reason") == "late_span"]
    assert len(lines) == 1 and "CLAIMWATCH_LATE_SPAN_WAIT_S" in lines[0]["hint"]
    now[0] = 100.0
    with capture_logs() as logs:
        pipe.add_span(_span(9, 20, 1, {}))
    assert [e["suppressed"] for e in logs if e.get("reason") == "late_span"] == [2]


def test_traceloop_llamaindex_json_encoded_node_strings_are_read():
    """traceloop.entity.output as a JSON list of JSON-encoded NodeWithScore strings gives the documents."""
    nodes = [
        json.dumps({"node": {"id_": f"n{i}", "text": f"Refund text {i}", "metadata": {}}, "score": 0.9 - i / 10})
        for i in range(3)
    ]
    span = _span(
        5,
        2,
        1,
        {
            "traceloop.span.kind": "task",
            "traceloop.entity.name": "VectorIndexRetriever.task",
            "traceloop.entity.input": json.dumps({"args": ["What about refunds?"]}),
            "traceloop.entity.output": json.dumps(nodes),
        },
    )
    facts = SpanExtractor(CollectorSettings()).extract(span)
    assert facts.kind == "retriever"
    assert [c.content for c in facts.contexts] == ["Refund text 0", "Refund text 1", "Refund text 2"]
    assert [c.id for c in facts.contexts] == ["n0", "n1", "n2"]


def test_empty_env_values_mean_unset(monkeypatch):
    """CLAIMWATCH_CONTEXT_FROM_PROMPT= (empty) leaves the default instead of failing validation."""
    monkeypatch.setenv("CLAIMWATCH_CONTEXT_FROM_PROMPT", "")
    monkeypatch.setenv("CLAIMWATCH_LATE_SPAN_WAIT_S", "")
    settings = CollectorSettings()
    assert settings.context_from_prompt is False and settings.late_span_wait_s == 0.5


def test_completed_trace_type_is_what_emit_takes():
    """emit() reads the facts of a CompletedTrace (guards the dropped-attribute sum against a shape change)."""
    pipe = TracePipeline(CollectorSettings(), sink=MemorySink())
    assert pipe.emit(CompletedTrace(1, [])) is False


def test_real_langchain_retriever_with_64_documents_gives_a_record_flagged_incomplete():
    """OpenInference LangChain, k=64 documents, default SDK limit: the best-ranked documents are evicted; flagged."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation.langchain import LangChainInstrumentor

    registry = CollectorRegistry()
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.01), sink=sink, registry=registry)
    tp = TracerProvider()  # default limit: 128 attributes
    tp.add_span_processor(proc)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [
            Document(page_content=f"Fact number {i} about the refund policy.", metadata={"source": f"policy.md#{i}"})
            for i in range(64)
        ]
    )
    retriever = store.as_retriever(search_kwargs={"k": 64})  # content + metadata: 2 attributes per document
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=["Thirty days."])
        | StrOutputParser()
    )
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tp)
    try:
        chain.invoke("What is the refund window?")
    finally:
        instrumentor.uninstrument()
    assert proc.force_flush(5_000)
    tp.shutdown()
    [record] = sink.records
    assert record.question == "What is the refund window?" and record.answer == "Thirty days."
    assert record.attributes["incomplete"] == "attribute_limit" and record.attributes["dropped_attributes"] > 0
    assert 0 < len(record.contexts) < 64  # the best-ranked document(s) evicted first by the Python SDK
    assert metric(registry, "claimwatch_collector_traces_total", outcome="incomplete") == 1


TWO_CALLS = [
    ("What is the refund window?", "30 days.", "Refunds: 30 days."),
    ("And for damaged goods?", "60 days.", "Damaged goods: 60 days."),
]


def rag_call(tracer, q: str, a: str, doc: str) -> None:
    """One OpenInference RAG call: a CHAIN span holding a retriever (one document) and an LLM answer."""
    with tracer.start_as_current_span(
        "call", attributes={"openinference.span.kind": "CHAIN", "input.value": q, "output.value": a}
    ):
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": q,
                "retrieval.documents.0.document.content": doc,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": a}
        ):
            pass


def test_two_rag_calls_in_one_trace_give_two_records_each_with_its_own_question_documents_and_answer():
    """An agent retrieving and answering twice under one root: one record per call, told apart by call_id."""
    registry = CollectorRegistry()
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.01), sink=sink, registry=registry)
    tp = TracerProvider()
    tp.add_span_processor(proc)
    tracer = tp.get_tracer("t")
    calls = TWO_CALLS
    with capture_logs():
        with tracer.start_as_current_span(
            "agent", attributes={"openinference.span.kind": "AGENT", "input.value": "refunds?", "output.value": "done"}
        ):
            for q, a, doc in calls:
                rag_call(tracer, q, a, doc)
        assert proc.force_flush(5_000)
    tp.shutdown()
    first, second = sink.records
    for record, (q, a, doc), i in ((first, calls[0], 1), (second, calls[1], 2)):
        assert (record.question, record.answer) == (q, a)
        assert [c.content for c in record.contexts] == [doc]
        assert record.attributes["rag_calls"] == 2 and record.attributes["rag_call"] == i
    assert first.trace_id == second.trace_id and first.call_id and second.call_id and first.call_id != second.call_id
    assert first.record_key == f"{first.trace_id}/{first.call_id}" != second.record_key
    assert metric(registry, "claimwatch_collector_traces_total", outcome="multi_call") == 1
    assert metric(registry, "claimwatch_collector_traces_total", outcome="queued") == 2
    assert not metric(registry, "claimwatch_collector_dropped_total", reason="multi_call")


def test_per_call_records_inherit_slice_attributes_from_a_plain_root_span_nearest_ancestor_first():
    """Two chain calls under a plain HTTP server root with route/release attributes: each record carries them."""
    sink = MemorySink()
    settings = CollectorSettings(late_span_wait_s=0.01)
    route_key, release_key = settings.slice_attributes["route"], settings.slice_attributes["release"]
    proc = RagTraceProcessor(settings, sink=sink, registry=CollectorRegistry())
    tp = TracerProvider()
    tp.add_span_processor(proc)
    tracer = tp.get_tracer("t")
    calls = TWO_CALLS

    with capture_logs():
        # a plain HTTP server span (no OpenInference kind) holds the slices; the second call sits under a plain
        # handler span of its own route: the nearest ancestor wins
        with tracer.start_as_current_span(
            "POST /ask", attributes={"http.request.method": "POST", route_key: "refunds", release_key: "v9"}
        ):
            rag_call(tracer, *calls[0])
            with tracer.start_as_current_span("handler", attributes={route_key: "damaged"}):
                rag_call(tracer, *calls[1])
        assert proc.force_flush(5_000)
    tp.shutdown()
    first, second = sink.records
    for record, (q, a, doc) in ((first, calls[0]), (second, calls[1])):
        assert (record.question, record.answer) == (q, a)
        assert [c.content for c in record.contexts] == [doc]
        assert record.slices["release"] == "v9"
    assert first.slices["route"] == "refunds" and second.slices["route"] == "damaged"
    assert first.call_id != second.call_id


_EMPTY_ENV_CASES = [
    # (settings class, empty variable, field path, default it keeps)
    ("collector.config.CollectorSettings", "CLAIMWATCH_LATE_SPAN_WAIT_S", "late_span_wait_s", 0.5),
    ("collector.config.CollectorSettings", "CLAIMWATCH_KAFKA__REQUEST_TIMEOUT_MS", "kafka.request_timeout_ms", 30_000),
    ("collector.receiver.ReceiverSettings", "CLAIMWATCH_RECEIVER_GRPC_PORT", "grpc_port", None),
    ("collector.receiver.ReceiverSettings", "CLAIMWATCH_RECEIVER_MAX_BODY_BYTES", "max_body_bytes", 16 * 1024 * 1024),
    (
        "collector.otlp_bridge.BridgeSettings",
        "CLAIMWATCH_BRIDGE_MAX_SPANS_PER_MESSAGE",
        "max_spans_per_message",
        10_000,
    ),
    ("evaluator_worker.judges.settings.JudgeSettings", "CLAIMWATCH_NLI_CHUNK_TOKENS", "nli_chunk_tokens", 400),
    ("evaluator_worker.judges.settings.JudgeSettings", "CLAIMWATCH_ANTHROPIC__TIMEOUT_S", "anthropic.timeout_s", 60.0),
    ("evaluator_worker.config.WorkerSettings", "CLAIMWATCH_METRICS_PORT", "metrics_port", 9464),
    ("evaluator_worker.config.WorkerSettings", "CLAIMWATCH_RESULTS_TOPIC", "results_topic", "claimwatch.results"),
    ("evaluator_worker.trace_export.TraceExportSettings", "CLAIMWATCH_TRACE_EXPORT_TIMEOUT_S", "timeout_s", 10.0),
    ("evaluator_worker.trace_export.TraceExportSettings", "CLAIMWATCH_TRACE_EXPORT_HEADERS", "headers", {}),
]


def _settings_class(dotted: str) -> type:
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("dotted,env,path,default", _EMPTY_ENV_CASES, ids=[c[1] for c in _EMPTY_ENV_CASES])
def test_an_empty_claimwatch_variable_means_unset_in_every_settings_class(monkeypatch, dotted, env, path, default):
    """An empty CLAIMWATCH_* variable of any settings class is treated as unset: the default, no validation error."""
    monkeypatch.setenv(env, "")
    value = _settings_class(dotted)()
    for part in path.split("."):
        value = getattr(value, part)
    assert value == default


def test_every_settings_class_is_covered_by_the_empty_variable_test():
    """Every BaseSettings subclass of the packages ignores empty variables and has a row in the test above."""
    from pydantic_settings import BaseSettings

    for dotted, *_ in _EMPTY_ENV_CASES:
        _settings_class(dotted)  # imports the modules that define them
    found, todo = set(), list(BaseSettings.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in ("collector", "evaluator_worker", "claimwatch", "contract"):
            found.add(f"{cls.__module__}.{cls.__qualname__}")
            assert cls.model_config.get("env_ignore_empty") is True, cls
    assert found == {c[0] for c in _EMPTY_ENV_CASES}


def test_results_topic_null_turns_the_results_topic_off(monkeypatch):
    """CLAIMWATCH_RESULTS_TOPIC=null (or none/off) disables results, since an empty value now means the default."""
    from evaluator_worker.config import WorkerSettings

    for off in ("null", "None", "off"):
        monkeypatch.setenv("CLAIMWATCH_RESULTS_TOPIC", off)
        assert WorkerSettings().results_topic is None
