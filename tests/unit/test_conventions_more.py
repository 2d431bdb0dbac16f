"""Shapes the real instrumentations emit: Traceloop entity JSON, GenAI log events, prompt context, not-RAG warnings."""

from __future__ import annotations

import json

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from structlog.testing import capture_logs

from collector.config import CollectorSettings
from collector.pipeline import _warned
from collector.processor import RagTraceProcessor
from collector.sink import MemorySink
from tests.unit.test_conventions import build, make_provider

DOCS = [
    {"page_content": "Refunds are accepted within 30 days.", "metadata": {"source": "policy.md", "id": "d1"}},
    {"page_content": "Shipping is free over 50 euros.", "metadata": {"source": "shipping.md"}},
]


def _traceloop_chain(tp: TracerProvider, *, model: str = "unknown") -> None:
    """A LangChain run as Traceloop's instrumentation records it (shapes from opentelemetry-instrumentation-langchain 0.62)."""
    t = tp.get_tracer("traceloop")
    with t.start_as_current_span("RunnableSequence.workflow") as root:
        root.set_attribute("traceloop.span.kind", "workflow")
        root.set_attribute("gen_ai.operation.name", "invoke_workflow")
        root.set_attribute(
            "traceloop.entity.input",
            json.dumps(
                {
                    "inputs": "What is the refund window?",
                    "tags": [],
                    "metadata": {},
                    "kwargs": {"name": "RunnableSequence"},
                }
            ),
        )
        with t.start_as_current_span("VectorStoreRetriever.task") as r:
            r.set_attribute("traceloop.span.kind", "task")
            r.set_attribute("gen_ai.operation.name", "vector_db_retrieve")
            r.set_attribute("traceloop.entity.input", json.dumps({"inputs": "What is the refund window?"}))
            r.set_attribute("traceloop.entity.output", json.dumps({"documents": DOCS}))
        with t.start_as_current_span("FakeListChatModel.chat") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.request.model", model)
            c.set_attribute("traceloop.association.properties.ls_model_name", "claude-sonnet-4-5")
            c.set_attribute("gen_ai.prompt.0.role", "user")
            c.set_attribute("gen_ai.prompt.0.content", "Context: ... Question: What is the refund window?")
            c.set_attribute("gen_ai.completion.0.role", "assistant")
            c.set_attribute("gen_ai.completion.0.content", "Within 30 days.")
        root.set_attribute(
            "traceloop.entity.output", json.dumps({"outputs": "Within 30 days.", "kwargs": {"tags": []}})
        )


def test_traceloop_workflow_retriever_documents_and_association_model():
    """Traceloop: question from workflow inputs, documents from the retriever task's entity output, model from ls_model_name."""
    tp, exp = make_provider()
    _traceloop_chain(tp)
    result = build(exp)
    r = result.record
    assert r is not None, result.reason
    assert r.question == "What is the refund window?" and r.answer == "Within 30 days."
    assert [c.content for c in r.contexts] == [d["page_content"] for d in DOCS]
    assert [c.source for c in r.contexts] == ["policy.md", "shipping.md"] and r.contexts[0].id == "d1"
    assert r.slices["model"] == "claude-sonnet-4-5" and r.convention == "traceloop"


def test_genai_content_in_log_events_joins_its_trace():
    """event_only mode: the chat span has no content; the log event carries it and the processor joins them."""
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.0), sink=sink)
    tp = TracerProvider()
    tp.add_span_processor(proc)
    lp = LoggerProvider()
    lp.add_log_record_processor(proc.log_processor())
    logger = lp.get_logger("opentelemetry.util.genai")
    t = tp.get_tracer("app")
    from opentelemetry._logs import LogRecord

    with t.start_as_current_span("rag-request"):
        with t.start_as_current_span("retrieval") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.query.text", "When can I get a refund?")
            r.set_attribute(
                "gen_ai.retrieval.documents",
                json.dumps([{"id": "d1", "score": 0.9, "content": DOCS[0]["page_content"]}]),
            )
        with t.start_as_current_span("chat gpt-4o-mini") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            logger.emit(
                LogRecord(
                    event_name="gen_ai.client.inference.operation.details",
                    attributes={
                        "gen_ai.input.messages": (
                            {"role": "user", "parts": ({"type": "text", "content": "When can I get a refund?"},)},
                        ),
                        "gen_ai.output.messages": (
                            {
                                "role": "assistant",
                                "parts": ({"type": "text", "content": "Within 30 days."},),
                                "finish_reason": "stop",
                            },
                        ),
                    },
                )
            )
    assert proc.force_flush(5_000)
    proc.shutdown(1.0)
    (record,) = sink.records
    assert record.answer == "Within 30 days." and record.question == "When can I get a refund?"
    assert [c.id for c in record.contexts] == ["d1"] and record.slices["model"] == "gpt-4o-mini"


def _prompt_only(tp: TracerProvider) -> None:
    t = tp.get_tracer("app")
    with t.start_as_current_span("chat") as c:
        c.set_attribute("gen_ai.operation.name", "chat")
        c.set_attribute(
            "gen_ai.input.messages",
            json.dumps(
                [
                    {
                        "role": "system",
                        "parts": [
                            {"type": "text", "content": "Answer from this: Refunds are accepted within 30 days."}
                        ],
                    },
                    {"role": "user", "parts": [{"type": "text", "content": "Refund window?"}]},
                ]
            ),
        )
        c.set_attribute(
            "gen_ai.output.messages",
            json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "30 days."}]}]),
        )


def test_context_from_prompt_is_opt_in_and_marked():
    """Without a retriever: not RAG by default; with context_from_prompt the system prompt is the context, marked as such."""
    tp, exp = make_provider()
    _prompt_only(tp)
    assert build(exp).reason == "ungrounded_turn"
    r = build(exp, CollectorSettings(context_from_prompt=True)).record
    assert r is not None and r.attributes["context_source"] == "prompt"
    assert [c.content for c in r.contexts] == ["Answer from this: Refunds are accepted within 30 days."]
    assert r.question == "Refund window?" and r.answer == "30 days."


def test_documents_without_content_and_split_traces_are_warned_once():
    """Retrieved documents with ids only, and retrieval/chat in separate traces, each give one warning naming the fix."""
    _warned.discard("documents_without_content")
    _warned.discard("split_traces")
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.0), sink=sink)
    tp = TracerProvider()
    tp.add_span_processor(proc)
    t = tp.get_tracer("app")
    with capture_logs() as logs:
        with t.start_as_current_span("retrieval") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": "d1", "score": 0.5}]))
        assert proc.force_flush(5_000)
        for _ in range(3):
            with t.start_as_current_span("retrieval") as r:
                r.set_attribute("gen_ai.operation.name", "retrieval")
                r.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": "d1", "content": "Some text."}]))
            _prompt_only(tp)
        assert proc.force_flush(5_000)
    proc.shutdown(1.0)
    keys = [e.get("warning") for e in logs if e.get("log_level") == "warning"]
    assert keys.count("documents_without_content") == 1 and keys.count("split_traces") == 1
    assert sink.records == []


def test_genai_content_capture_setting_warnings():
    """Each content-capture value gets the fix that the installed util-genai generation accepts."""
    from collector.processor import _check_genai_content

    for key in ("genai_content_true", "genai_content_events", "genai_content_off"):
        _warned.discard(key)
    with_util = lambda m: m in ("opentelemetry.instrumentation.openai_v2", "opentelemetry.util.genai")  # noqa: E731
    older = lambda m: m == "opentelemetry.instrumentation.openai_v2"  # noqa: E731
    env = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    with capture_logs() as logs:
        assert _check_genai_content({env: "true"}, with_util) == ["genai_content_true"]
        assert _check_genai_content({env: "event_only"}, with_util) == ["genai_content_events"]
        assert _check_genai_content({}, with_util) == ["genai_content_off"]
        assert _check_genai_content({env: "span_only"}, with_util) == []
        assert _check_genai_content({env: "true"}, older) == []
        assert _check_genai_content({}, lambda m: False) == []
    text = " ".join(e["event"] for e in logs)
    assert "span_only" in text and "log_processor()" in text


def test_prompt_context_records_are_counted():
    """A record built from the prompt (opt-in) increments claimwatch_collector_prompt_context_total."""
    from prometheus_client import CollectorRegistry

    reg = CollectorRegistry()
    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.0, context_from_prompt=True), sink=sink, registry=reg)
    tp = TracerProvider()
    tp.add_span_processor(proc)
    _prompt_only(tp)
    assert proc.force_flush(5_000)
    proc.shutdown(1.0)
    assert len(sink.records) == 1
    assert reg.get_sample_value("claimwatch_collector_prompt_context_total") == 1


def test_traceloop_llama_index_nodes_with_scores():
    """A Traceloop retriever task whose output is LlamaIndex NodeWithScore JSON gives contexts with ids and scores."""
    tp, exp = make_provider()
    t = tp.get_tracer("traceloop")
    nodes = [
        {"node": {"id_": f"n{i}", "text": d["page_content"], "metadata": d["metadata"]}, "score": 0.9 - i / 10}
        for i, d in enumerate(DOCS)
    ]
    with t.start_as_current_span("query.workflow") as root:
        root.set_attribute("traceloop.span.kind", "workflow")
        root.set_attribute("traceloop.entity.input", json.dumps({"args": ["What is the refund window?"], "kwargs": {}}))
        with t.start_as_current_span("retrieve.task") as r:
            r.set_attribute("traceloop.span.kind", "task")
            r.set_attribute("traceloop.entity.output", json.dumps(nodes))
        root.set_attribute("traceloop.entity.output", json.dumps("Within 30 days."))
    r = build(exp).record
    assert r is not None and r.question == "What is the refund window?" and r.answer == "Within 30 days."
    assert [(c.id, round(c.score, 2), c.source) for c in r.contexts] == [
        ("n0", 0.9, "policy.md"),
        ("n1", 0.8, "shipping.md"),
    ]
