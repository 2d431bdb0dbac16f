"""Extraction of question, answer, contexts and slices from OpenInference, GenAI and Traceloop spans."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from collector.config import CollectorSettings
from collector.conventions import SpanExtractor, unwrap_text


def make_provider(**resource: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create(resource or {}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp, exporter


def build(exporter: InMemorySpanExporter, settings: CollectorSettings | None = None):
    spans = exporter.get_finished_spans()
    ex = SpanExtractor(settings or CollectorSettings())
    trace_ids = {s.context.trace_id for s in spans}
    assert len(trace_ids) == 1
    [result] = ex.build(trace_ids.pop(), [ex.extract(s) for s in spans])  # one RAG call per trace in these tests
    return result


def run_langchain(tp: TracerProvider, question: str, answer: str) -> None:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation.langchain import LangChainInstrumentor

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents([Document(page_content=f"Fact number {i} about the refund policy.") for i in range(6)])
    retriever = store.as_retriever(search_kwargs={"k": 4})
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=[answer])
        | StrOutputParser()
    )
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tp)
    try:
        chain.invoke(question)
    finally:
        instrumentor.uninstrument()


def test_langchain_trace_picks_root_question_answer_and_all_chunks():
    """A real OpenInference LangChain trace yields the root's question/answer, not a nested chain's, and every chunk."""
    tp, exporter = make_provider()
    run_langchain(tp, "How long do refunds take?", "Refunds take 5 days.")
    result = build(exporter)
    rec = result.record
    assert result.reason == "ok"
    assert rec.question == "How long do refunds take?"
    assert rec.answer == "Refunds take 5 days."
    assert len(rec.contexts) == 4
    assert all(c.content.startswith("Fact number") for c in rec.contexts)
    assert rec.convention == "openinference"
    assert rec.attributes["question.source"] == "root"


def test_openinference_json_input_gaps_and_dedupe():
    """JSON input.value is unwrapped; documents are read across index gaps, in order, deduped across retrievers."""
    tp, exporter = make_provider(**{"service.version": "1.4.2"})
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("app") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", json.dumps({"question": "What is the SLA?"}))
        root.set_attribute("output.value", json.dumps({"answer": "99.9%", "context": ["x"]}))
        root.set_attribute("claimwatch.route", "billing")
        for docs in ([("a", "SLA is 99.9%"), ("b", "Support 24/7")], [("b", "Support 24/7"), ("c", "Credits apply")]):
            with tracer.start_as_current_span("retrieve") as r:
                r.set_attribute("openinference.span.kind", "RETRIEVER")
                r.set_attribute("input.value", "sla")
                for i, (doc_id, text) in enumerate(docs):
                    idx = i * 2  # gaps, as left by attribute limits
                    r.set_attribute(f"retrieval.documents.{idx}.document.id", doc_id)
                    r.set_attribute(f"retrieval.documents.{idx}.document.content", text)
                    r.set_attribute(f"retrieval.documents.{idx}.document.score", 0.5)
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", "claude-x")
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", "raw llm text")
    rec = build(exporter).record
    assert rec.question == "What is the SLA?"
    assert rec.answer == "99.9%"
    assert [c.id for c in rec.contexts] == ["a", "b", "c"]
    assert rec.contexts[0].score == 0.5
    assert rec.slices == {"release": "1.4.2", "route": "billing", "model": "claude-x"}


def test_fallback_to_retriever_query_and_last_llm_output():
    """Without a CHAIN span the retriever query is the question and the last LLM output the answer."""
    tp, exporter = make_provider()
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("http"):
        with tracer.start_as_current_span("retrieve") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("input.value", "where is my parcel")
            r.set_attribute("retrieval.documents.0.document.content", "Parcels ship in 2 days.")
        for text in ("draft answer", "final answer"):
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.output_messages.0.message.content", text)
    rec = build(exporter).record
    assert (rec.question, rec.answer) == ("where is my parcel", "final answer")
    assert rec.attributes["question.source"] == "retriever"


def test_genai_messages_and_retrieval_documents_missing_content():
    """GenAI chat JSON messages and retrieval documents are read; a document without content is skipped and counted."""
    tp, exporter = make_provider(**{"deployment.environment": "prod"})
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("rag"):
        with tracer.start_as_current_span("retrieval kb") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.query.text", "Can I pay by card?")
            docs = [
                {"id": "k1", "score": 0.9, "content": "Cards are accepted."},
                {"id": "k2", "score": 0.7},
                {"id": "k3", "score": 0.5, "content": "Cash is not accepted."},
            ]
            r.set_attribute("gen_ai.retrieval.documents", json.dumps(docs))
        with tracer.start_as_current_span("chat m") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.request.model", "m-req")
            c.set_attribute("gen_ai.response.model", "m-resp")
            c.set_attribute(
                "gen_ai.input.messages",
                json.dumps(
                    [
                        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                        {"role": "user", "parts": [{"type": "text", "content": "ctx + Can I pay by card?"}]},
                    ]
                ),
            )
            c.set_attribute(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "Yes, cards work."}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            )
    result = build(exporter)
    rec = result.record
    assert rec.question == "Can I pay by card?"
    assert rec.answer == "Yes, cards work."
    assert [c.id for c in rec.contexts] == ["k1", "k3"]
    assert result.missing_content == 1
    assert rec.slices["model"] == "m-resp" and rec.slices["environment"] == "prod"
    assert rec.convention == "gen_ai"


def test_genai_legacy_prompt_completion_attributes():
    """Legacy gen_ai.prompt/completion indexed attributes give the answer."""
    tp, exporter = make_provider()
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("rag"):
        with tracer.start_as_current_span("retrieval") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.query.text", "q?")
            r.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": "1", "text": "chunk"}]))
        with tracer.start_as_current_span("openai.chat") as c:
            c.set_attribute("gen_ai.prompt.0.role", "user")
            c.set_attribute("gen_ai.prompt.0.content", "q?")
            c.set_attribute("gen_ai.completion.0.role", "assistant")
            c.set_attribute("gen_ai.completion.0.content", "legacy answer")
    rec = build(exporter).record
    assert rec.answer == "legacy answer" and rec.contexts[0].content == "chunk"


def test_traceloop_workflow_and_vector_db_events():
    """Traceloop entity input/output JSON and db.query.result events give question, answer and chunks."""
    tp, exporter = make_provider()
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("rag.workflow") as wf:
        wf.set_attribute("traceloop.span.kind", "workflow")
        wf.set_attribute("traceloop.entity.input", json.dumps({"args": ["What is covered?"], "kwargs": {}}))
        wf.set_attribute("traceloop.entity.output", json.dumps("Water damage is covered."))
        with tracer.start_as_current_span("chroma.query") as q:
            q.set_attribute("db.system", "chroma")
            q.add_event(
                "db.query.result",
                {
                    "db.query.result.id": "p1",
                    "db.query.result.score": 0.2,
                    "db.query.result.document": "Policy covers water damage.",
                },
            )
            q.add_event("db.query.result", {"db.query.result.id": "p2", "db.query.result.score": 0.4})
            q.add_event(
                "db.query.result",
                {
                    "db.query.result.id": "p3",
                    "db.query.result.score": 0.6,
                    "db.query.result.document": "Fire is covered.",
                },
            )
    result = build(exporter)
    rec = result.record
    assert rec.question == "What is covered?"
    assert rec.answer == "Water damage is covered."
    assert [c.id for c in rec.contexts] == ["p1", "p3"]
    assert result.missing_content == 1
    assert rec.convention == "traceloop"


def test_not_rag_without_context_or_answer():
    """An answer with nothing to ground it, or documents without an answer, are not records, each with its reason."""
    tp, exporter = make_provider()
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("llm") as llm:
        llm.set_attribute("openinference.span.kind", "LLM")
        llm.set_attribute("llm.output_messages.0.message.content", "hi")
    assert build(exporter).reason == "ungrounded_turn"
    exporter.clear()
    with tracer.start_as_current_span("retrieve") as r:
        r.set_attribute("openinference.span.kind", "RETRIEVER")
        r.set_attribute("retrieval.documents.0.document.content", "c")
    assert build(exporter).reason == "no_answer"


def test_error_status_and_feedback_signals_and_static_slices():
    """ERROR status anywhere and feedback attributes are surfaced; static slices and release settings override."""
    tp, exporter = make_provider(**{"service.version": "from-resource"})
    tracer = tp.get_tracer("t")
    settings = CollectorSettings(release="canary-7", static_slices={"region": "eu"})
    with tracer.start_as_current_span("root") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "q")
        root.set_attribute("output.value", "a")
        root.set_attribute("user.feedback", "thumbs_down")
        with tracer.start_as_current_span("retrieve") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("retrieval.documents.0.document.content", "c")
            r.set_status(Status(StatusCode.ERROR))
    result = build(exporter, settings)
    assert result.error is True
    assert result.signals["user.feedback"] == "thumbs_down"
    assert result.record.slices["release"] == "canary-7"
    assert result.record.slices["region"] == "eu"


@pytest.mark.parametrize(
    "value, question, expected",
    [
        ("plain", True, "plain"),
        ('{"input": "from input"}', True, "from input"),
        ('{"messages": [{"type": "human", "content": "hi there"}]}', True, "hi there"),
        ('{"output": "done"}', False, "done"),
        ('{"generations": [[{"text": "gen text"}]]}', False, "gen text"),
        ("__REDACTED__", True, None),
        ('{"a": 1, "b": 2}', False, None),
    ],
)
def test_unwrap_text_shapes(value, question, expected):
    """Obvious JSON shapes are unwrapped to text; hidden or unknown shapes give None."""
    assert unwrap_text(value, question=question) == expected


def test_remote_parent_counts_as_local_root():
    """A span whose parent is remote (came over the wire) is this process's root."""
    tp, exporter = make_provider()
    tracer = tp.get_tracer("t")
    remote = trace.SpanContext(
        trace_id=0xABC, span_id=0xDEF, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)
    )
    ctx = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    with tracer.start_as_current_span("server", context=ctx):
        pass
    span = exporter.get_finished_spans()[0]
    assert SpanExtractor().extract(span).is_root is True
