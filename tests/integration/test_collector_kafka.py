"""End to end on a real Kafka-protocol broker: instrumented RAG apps -> RagTraceProcessor -> topic -> consumer."""

from __future__ import annotations

import json
import time

import pytest
from kafka import KafkaConsumer
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from prometheus_client import CollectorRegistry

from collector import RagTraceProcessor
from collector.config import CollectorSettings
from contract.kafka import KafkaConnection
from contract.record import RagTrace

pytestmark = pytest.mark.integration


def settings_for(bootstrap: str, topic: str) -> CollectorSettings:
    return CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap), topic=topic, late_span_wait_s=0.05, linger_ms=5
    )


def consume(bootstrap: str, topic: str, expected: int, timeout_s: float = 20.0) -> list[RagTrace]:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=10000,
        consumer_timeout_ms=1000,
    )
    out: list[RagTrace] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                for msg in batch:
                    rec = RagTrace.from_json_bytes(msg.value)
                    assert msg.key == rec.key
                    out.append(rec)
    finally:
        consumer.close()
    return out


def test_langchain_openinference_traces_reach_kafka_with_question_answer_and_chunks(kafka_bootstrap, topic_name):
    """A real LangChain LCEL RAG chain instrumented by OpenInference lands on Kafka with the right text."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation.langchain import LangChainInstrumentor

    proc = RagTraceProcessor(settings_for(kafka_bootstrap, topic_name), registry=CollectorRegistry())
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=1024))
    tp.add_span_processor(proc)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [Document(page_content=f"Policy clause {i}: claims close in {i + 1} days.", id=f"c{i}") for i in range(8)]
    )
    retriever = store.as_retriever(search_kwargs={"k": 5})
    answers = ["Claims close in 3 days.", "You can appeal within 30 days."]
    questions = ["How fast are claims closed?", "Can I appeal a decision?"]
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
        | FakeListChatModel(responses=answers)
        | StrOutputParser()
    )
    expected_chunks = {q: [d.page_content for d in retriever.invoke(q)] for q in questions}
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tp)
    try:
        for q in questions:
            chain.invoke(q)
    finally:
        instrumentor.uninstrument()
    assert proc.force_flush(10_000)
    records = {r.question: r for r in consume(kafka_bootstrap, topic_name, expected=2)}
    proc.shutdown()
    assert set(records) == set(questions)
    for q, a in zip(questions, answers):
        assert records[q].answer == a
        assert [c.content for c in records[q].contexts] == expected_chunks[q]
        assert records[q].convention == "openinference"


def test_genai_convention_spans_reach_kafka(kafka_bootstrap, topic_name):
    """Hand-made OTel GenAI retrieval + chat spans become a record on Kafka with all retrieved chunks."""
    proc = RagTraceProcessor(settings_for(kafka_bootstrap, topic_name), registry=CollectorRegistry())
    tp = TracerProvider()
    tp.add_span_processor(proc)
    tracer = tp.get_tracer("genai-app")
    docs = [{"id": f"d{i}", "score": 1 - i / 10, "content": f"Chunk {i} about deductibles."} for i in range(4)]
    with tracer.start_as_current_span("rag.request") as root:
        root.set_attribute("claimwatch.route", "claims")
        with tracer.start_as_current_span("retrieval policies") as r:
            r.set_attribute("gen_ai.operation.name", "retrieval")
            r.set_attribute("gen_ai.retrieval.query.text", "What is my deductible?")
            r.set_attribute("gen_ai.retrieval.documents", json.dumps(docs))
        with tracer.start_as_current_span("chat claude") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.request.model", "claude-test")
            c.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Your deductible is $500."}]}]),
            )
    assert proc.force_flush(10_000)
    (rec,) = consume(kafka_bootstrap, topic_name, expected=1)
    proc.shutdown()
    assert rec.question == "What is my deductible?"
    assert rec.answer == "Your deductible is $500."
    assert [c.content for c in rec.contexts] == [d["content"] for d in docs]
    assert rec.slices["route"] == "claims" and rec.slices["model"] == "claude-test"
    assert rec.convention == "gen_ai"
