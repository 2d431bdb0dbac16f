"""The tiny RAG flows, one per instrumentation row, shared by the tests and the findings dump.

Each ``run_*`` instruments with the real package, runs one request over ``harness.DOCS``,
un-instruments, and returns what the app itself saw (ground truth for order, ids, scores).
Imports of third-party packages happen inside the functions (callers check them with ``need``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from tests.conformance.harness import ANSWER, DOC_BY_CONTENT, DOCS, MODEL, QUESTION, SCORES, Capture, Doc, context_block


@dataclass
class Seen:
    """What the app saw: the retrieved documents in order (with ids/scores when the framework gives them)."""

    docs: list[Doc] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)
    answer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- LangChain (rows 1 and 4)

LANGCHAIN_MODEL = "fake-chat-1"


def langchain_chain(answer: str = ANSWER):
    """LCEL: {context: retriever | join, question: passthrough} | prompt | FakeListChatModel | StrOutputParser."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [Document(id=d.id, page_content=d.content, metadata={"source": d.source}) for d in DOCS],
        ids=[d.id for d in DOCS],
    )
    retriever = store.as_retriever(search_kwargs={"k": len(DOCS)})

    class NamedFakeChatModel(FakeListChatModel):
        """FakeListChatModel with a model name, like every real chat model (LangChain reports it as ls_model_name)."""

        model_name: str = LANGCHAIN_MODEL

    prompt = ChatPromptTemplate.from_template(
        "Answer from the context only.\n\nContext:\n{context}\n\nQuestion: {question}"
    )
    chain = (
        {
            "context": retriever | (lambda docs: "\n\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | NamedFakeChatModel(responses=[answer])
        | StrOutputParser()
    )
    # ground truth: the same retriever, untraced (DeterministicFakeEmbedding is deterministic)
    hits = retriever.invoke(QUESTION)
    seen = Seen(docs=[DOC_BY_CONTENT[h.page_content] for h in hits], ids=[h.id for h in hits])
    return chain, seen


def run_openinference_langchain(cap: Capture) -> Seen:
    """Row 1: openinference-instrumentation-langchain on the LCEL chain."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    chain, seen = langchain_chain()
    inst = LangChainInstrumentor()
    inst.instrument(tracer_provider=cap.tp)
    try:
        seen.answer = chain.invoke(QUESTION)
    finally:
        inst.uninstrument()
    return seen


def run_traceloop_langchain(cap: Capture) -> Seen:
    """Row 4: Traceloop opentelemetry-instrumentation-langchain on the same LCEL chain."""
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    chain, seen = langchain_chain()
    inst = LangchainInstrumentor()
    inst.instrument(tracer_provider=cap.tp, logger_provider=cap.lp)
    try:
        seen.answer = chain.invoke(QUESTION)
    finally:
        inst.uninstrument()
        unwrap_traceloop_callback_manager()
    return seen


def _from_traceloop(wrapper: Any) -> bool:
    """A wrapper (function or callable object) defined by Traceloop's LangChain instrumentation."""
    module = getattr(wrapper, "__module__", None) or type(wrapper).__module__
    return str(module).startswith("opentelemetry.instrumentation.langchain")


def unwrap_traceloop_callback_manager() -> int:
    """Undo what ``LangchainInstrumentor.uninstrument()`` (0.62.4) leaves behind; returns how many layers.

    Its ``unwrap("langchain_core.callbacks", "BaseCallbackManager.__init__")`` (and likewise
    ``"langgraph.pregel", "Pregel.stream"``, ``Command.__init__``, the agent factories and middleware
    hooks) resolves to nothing (the dotted path is split at the wrong dot), so the wrappers stay: the
    TraceloopCallbackHandler of the old provider keeps winning, and ``Pregel.stream`` keeps opening a
    workflow span in the old provider, which then parents every later LangGraph run's spans (their
    trace's root is a span no later capture ever sees).
    """
    import importlib

    targets = [
        ("langchain_core.callbacks.base", "BaseCallbackManager", "__init__"),
        ("langgraph.pregel", "Pregel", "stream"),
        ("langgraph.pregel", "Pregel", "astream"),
        ("langgraph.types", "Command", "__init__"),
        ("langgraph.prebuilt.chat_agent_executor", None, "create_react_agent"),
        ("langgraph.prebuilt", None, "create_react_agent"),
        ("langchain.agents.factory", None, "create_agent"),
        ("langchain.agents", None, "create_agent"),
    ]
    hooks = ("before_model", "after_model", "before_agent", "after_agent")
    targets += [
        ("langchain.agents.middleware.types", "AgentMiddleware", h) for h in (*hooks, *(f"a{h}" for h in hooks))
    ]
    peeled = 0
    for module_name, owner_name, attr in targets:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner = getattr(module, owner_name) if owner_name else module
        fn = vars(owner).get(attr)
        while hasattr(fn, "__wrapped__") and _from_traceloop(getattr(fn, "_self_wrapper", None)):
            setattr(owner, attr, fn.__wrapped__)
            fn = vars(owner).get(attr)
            peeled += 1
    return peeled


# ----------------------------------------------------------------------------- LlamaIndex (row 2)


def llama_index_objects(answer: str = ANSWER):
    """A VectorStoreIndex over the three Documents (MockEmbedding) and a CustomLLM that returns ``answer``."""
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class FixedAnswerLLM(CustomLLM):
        """A local LLM: always answers ``answer`` (records the prompts it got)."""

        answer_text: str = ANSWER
        model_name: str = "fixed-answer-llm"
        prompts: list = []

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name=self.model_name, context_window=4096, num_output=256)

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            self.prompts.append(prompt)
            return CompletionResponse(text=self.answer_text)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
            yield CompletionResponse(text=self.answer_text, delta=self.answer_text)

    embed = MockEmbedding(embed_dim=8)
    llm = FixedAnswerLLM(answer_text=answer, prompts=[])
    Settings.embed_model = embed
    Settings.llm = llm
    documents = [Document(id_=d.id, text=d.content, metadata={"source": d.source}) for d in DOCS]
    return documents, embed, llm, VectorStoreIndex


@contextlib.contextmanager
def llama_index_instrumented(cap: Capture) -> Iterator[None]:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    inst = LlamaIndexInstrumentor()
    inst.instrument(tracer_provider=cap.tp)
    try:
        yield
    finally:
        inst.uninstrument()


def run_llama_index_query(cap: Capture) -> Seen:
    """Row 2: index built untraced, then one traced ``query_engine.query``."""
    documents, embed, llm, VectorStoreIndex = llama_index_objects()
    index = VectorStoreIndex.from_documents(documents, embed_model=embed)
    engine = index.as_query_engine(llm=llm, similarity_top_k=len(DOCS))
    with llama_index_instrumented(cap):
        response = engine.query(QUESTION)
    nodes = response.source_nodes
    return Seen(
        docs=[DOC_BY_CONTENT[n.node.get_content()] for n in nodes],
        ids=[n.node.node_id for n in nodes],
        scores=[n.score for n in nodes],
        answer=str(response),
        extra={"ref_doc_ids": [n.node.ref_doc_id for n in nodes], "prompts": list(llm.prompts)},
    )


def run_llama_index_build(cap: Capture) -> None:
    """Row 2 (negative): only the index build is traced (embeddings, parsing), no query."""
    documents, embed, _llm, VectorStoreIndex = llama_index_objects()
    with llama_index_instrumented(cap):
        VectorStoreIndex.from_documents(documents, embed_model=embed)


# ----------------------------------------------------------------------------- OTel GenAI openai-v2 + util-genai (row 3)

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@contextlib.contextmanager
def capture_mode(mode: str | None) -> Iterator[None]:
    """Set (or unset) the util-genai content-capture env var for the duration (restored afterwards).

    util-genai 1.1b0 reads it twice: once when ``TelemetryHandler`` is built (inside
    ``OpenAIInstrumentor().instrument()``: decides whether openai-v2 collects content at all)
    and again on every span/event finish (decides where content goes). So it must be set
    before ``instrument()`` and stay set until the calls end; it can change between
    instrument/uninstrument cycles in one process.
    """
    old = os.environ.get(CAPTURE_ENV)
    if mode is None:
        os.environ.pop(CAPTURE_ENV, None)
    else:
        os.environ[CAPTURE_ENV] = mode
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(CAPTURE_ENV, None)
        else:
            os.environ[CAPTURE_ENV] = old


def genai_documents(*, with_content: bool = True) -> list[dict[str, Any]]:
    """``gen_ai.retrieval.documents`` entries. util-genai 1.1b0 takes plain mappings (no typed class);
    the semconv schema requires only ``id`` and ``score`` (what the typed ``RetrievalDocument`` of
    later util-genai versions carries), so ``with_content=False`` is that shape."""
    docs = []
    for d, score in zip(DOCS, SCORES):
        doc: dict[str, Any] = {"id": d.id, "score": score}
        if with_content:
            doc["content"] = d.content
            doc["metadata"] = {"source": d.source}
        docs.append(doc)
    return docs


def run_openai_v2(cap: Capture, mode: str | None, *, with_content: bool = True, root_name: str = "rag.answer") -> Seen:
    """Row 3: app root span -> util-genai retrieval span -> openai chat (openai-v2) against a local server."""
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler

    from tests.conformance.fake_openai import ChatCompletionsServer

    with capture_mode(mode), ChatCompletionsServer(answer=ANSWER) as srv:
        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=cap.tp, logger_provider=cap.lp)
        try:
            handler = TelemetryHandler(tracer_provider=cap.tp, logger_provider=cap.lp)
            client = openai.OpenAI(api_key="test-key", base_url=srv.base_url, max_retries=0)
            tracer = cap.tp.get_tracer("claimwatch.conformance.app")
            with tracer.start_as_current_span(root_name):
                with handler.retrieval(data_source_id="policies", provider="in_memory") as retrieval:
                    retrieval.query_text = QUESTION
                    retrieval.top_k = len(DOCS)
                    retrieval.documents = genai_documents(with_content=with_content)
                resp = client.chat.completions.create(
                    model=MODEL,
                    messages=[
                        {"role": "system", "content": "Answer from the context only.\n\nContext:\n" + context_block()},
                        {"role": "user", "content": QUESTION},
                    ],
                    temperature=0,
                )
        finally:
            inst.uninstrument()
        requests = list(srv.requests)
    return Seen(
        docs=list(DOCS),
        ids=[d.id for d in DOCS],
        scores=list(SCORES),
        answer=resp.choices[0].message.content,
        extra={"requests": requests, "response_model": resp.model},
    )
