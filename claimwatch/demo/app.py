"""The demo RAG app, instrumented the way users instrument theirs.

Spans follow the OpenInference conventions that LangChain/LlamaIndex
instrumentations emit: a root CHAIN span (``input.value`` = question,
``output.value`` = answer), a RETRIEVER span with
``retrieval.documents.{i}.document.{id,content,score}`` and an LLM span with
``llm.model_name`` and ``llm.output_messages``. The release is the resource's
``service.version``, as in a real deployment.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

from claimwatch.demo.corpus import QUESTIONS, Question, answer, retrieve
from claimwatch.demo.faults import inject


@dataclass
class Sent:
    """Ground truth for one request the demo app served."""

    trace_id: str
    release: str
    route: str
    question: str
    answer: str
    fault: str | None


def make_provider(release: str, environment: str = "demo") -> TracerProvider:
    return TracerProvider(
        resource=Resource.create(
            {"service.name": "demo-rag-app", "service.version": release, "deployment.environment": environment}
        )
    )


class DemoRagApp:
    """A deterministic RAG app: in-memory retrieval + an extractive answer generator."""

    def __init__(self, tracer: Tracer, release: str, model: str, *, fault_rate: float = 0.0, seed: int = 7) -> None:
        self.tracer = tracer
        self.release = release
        self.model = model
        self.fault_rate = fault_rate
        self.rng = random.Random(f"{seed}-{release}")
        self._used: dict[str, int] = {}

    def ask(self, q: Question) -> Sent:
        with self.tracer.start_as_current_span("RunnableSequence") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", q.text)
            root.set_attribute("claimwatch.route", retrieve(q)[0].route)
            with self.tracer.start_as_current_span("VectorStoreRetriever") as ret:
                ret.set_attribute("openinference.span.kind", "RETRIEVER")
                ret.set_attribute("input.value", q.text)
                for i, doc in enumerate(retrieve(q)):
                    ret.set_attribute(f"retrieval.documents.{i}.document.id", doc.id)
                    ret.set_attribute(f"retrieval.documents.{i}.document.content", doc.text)
                    ret.set_attribute(f"retrieval.documents.{i}.document.score", round(1.0 - 0.1 * i, 3))
            sentences = answer(q, self.rng)
            fault = None
            if q.facts and self.rng.random() < self.fault_rate:
                injected = inject(sentences, q, self.rng, self._used)
                if injected:
                    sentences, fault = injected
            text = " ".join(sentences)
            with self.tracer.start_as_current_span("ChatModel") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.model_name", self.model)
                llm.set_attribute("llm.input_messages.0.message.role", "user")
                llm.set_attribute("llm.input_messages.0.message.content", q.text)
                llm.set_attribute("llm.output_messages.0.message.role", "assistant")
                llm.set_attribute("llm.output_messages.0.message.content", text)
            root.set_attribute("output.value", text)
            trace_id = format(root.get_span_context().trace_id, "032x")
        return Sent(trace_id, self.release, retrieve(q)[0].route, q.text, text, fault)

    def questions(self, n: int) -> list[Question]:
        """``n`` questions cycling through the catalogue (deterministic order)."""
        order = list(QUESTIONS)
        self.rng.shuffle(order)
        return [order[i % len(order)] for i in range(n)]
