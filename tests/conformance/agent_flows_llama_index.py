"""LlamaIndex agent turns under OpenInference: the agent flows, one per conformance row (issue 42).

Each ``run_*`` builds a tiny agent over ``harness.DOCS``, instruments with the real
``openinference-instrumentation-llama-index`` (:func:`flows.llama_index_instrumented`), runs ONE
user turn through the workflow API (``await agent.run(user_msg=...)`` under ``asyncio.run``),
un-instruments, and returns :class:`harness.AgentSeen`: what the app itself saw (ground truth).

* Agents: ``FunctionAgent`` with :class:`ScriptedToolCallingLLM` (a ``FunctionCallingLLM`` that
  replays tool calls, then a final text), ``ReActAgent`` with :class:`ScriptedChatLLM` (replays
  ``Thought/Action/Action Input`` texts, then ``Thought/Answer``). Both stream (the agents' default).
* Tools: ``QueryEngineTool`` ``policy_search`` over a ``VectorStoreIndex`` query engine
  (:class:`KeywordEmbedding`, top 2, its own synthesis LLM whose text differs from the agent's
  answer), ``FunctionTool`` ``order_lookup`` (a plain function returning text).
* Ground truth contexts come from the ``ToolCallResult`` events the run streamed, in order: a query
  engine call contributes the nodes its ``Response.source_nodes`` hold (id = node id), any other tool
  its returned text; then :func:`harness.dedupe_evidence`.

Imports llama_index at module level: import this module only after ``need("llama_index.core")``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any, AsyncIterator, Callable, Iterator, Sequence

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent, ToolCallResult
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import LLM, ToolSelection
from llama_index.core.tools import FunctionTool, QueryEngineTool

from tests.conformance.flows import llama_index_instrumented
from tests.conformance.harness import DOCS, QUESTION, AgentSeen, Capture, Evidence, Turn, dedupe_evidence

AGENT_MODEL = "scripted-agent-llm"
REACT_MODEL = "scripted-react-llm"
SYNTH_MODEL = "synthesis-llm"
TOP_K = 2
QE_TOOL = "policy_search"
FN_TOOL = "order_lookup"

# ----------------------------------------------------------------------------- fake models


class ScriptedChatLLM(LLM):
    """A local chat model that replays ``script``, one entry per chat call (a text reply).

    Streams a text reply in three chunks (cumulative ``message``, piecewise ``delta``), as real clients
    do. ``calls`` keeps what each call was given (role, text, tool_call_id), for the dumps.
    """

    model_name: str = REACT_MODEL
    script: list[Any] = Field(default_factory=list)
    calls: list[list[dict[str, Any]]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model_name,
            context_window=8192,
            num_output=256,
            is_chat_model=True,
            is_function_calling_model=False,
        )

    # -- the script

    def _next(self, messages: Sequence[ChatMessage]) -> ChatMessage:
        self.calls.append([_message_json(m) for m in messages])
        n = len(self.calls)
        if n > len(self.script):
            raise AssertionError(f"{type(self).__name__}: call {n} but the script has {len(self.script)} step(s)")
        return self._to_message(self.script[n - 1])

    def _to_message(self, step: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content=str(step))

    def _chunks(self, message: ChatMessage) -> list[ChatResponse]:
        text = message.content or ""
        if not text:
            return [ChatResponse(message=message, delta="")]
        cut = sorted({len(text) // 3, 2 * len(text) // 3, len(text)})
        out, start = [], 0
        for end in cut:
            if end <= start:
                continue
            out.append(ChatResponse(message=ChatMessage(role="assistant", content=text[:end]), delta=text[start:end]))
            start = end
        return out

    # -- chat

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=self._next(messages))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=self._next(messages))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        chunks = self._chunks(self._next(messages))

        def gen() -> ChatResponseGen:
            yield from chunks

        return gen()

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        chunks = self._chunks(self._next(messages))

        async def gen() -> AsyncIterator[ChatResponse]:
            for c in chunks:
                yield c

        return gen()

    # -- completion: the agents never use it

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("scripted chat model: chat only")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError("scripted chat model: chat only")

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("scripted chat model: chat only")

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        raise NotImplementedError("scripted chat model: chat only")


class ScriptedToolCallingLLM(ScriptedChatLLM, FunctionCallingLLM):
    """A local function-calling model: a script step is either a list of ``ToolSelection`` (one
    assistant message whose blocks are ``ToolCallBlock``s, as llama-index-llms-openai 0.8 builds them)
    or a text (the final reply). ``tools_offered`` keeps the tool names each call was offered."""

    model_name: str = AGENT_MODEL
    tools_offered: list[list[str]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model_name,
            context_window=8192,
            num_output=256,
            is_chat_model=True,
            is_function_calling_model=True,
        )

    def _to_message(self, step: Any) -> ChatMessage:
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=s.tool_id, tool_name=s.tool_name, tool_kwargs=s.tool_kwargs) for s in step
            ],
        )

    def _chunks(self, message: ChatMessage) -> list[ChatResponse]:
        if any(isinstance(b, ToolCallBlock) for b in message.blocks):
            return [ChatResponse(message=message, delta="")]
        return super()._chunks(message)

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(ChatMessage(role="user", content=user_msg) if isinstance(user_msg, str) else user_msg)
        self.tools_offered.append([t.metadata.get_name() for t in tools])
        return {"messages": messages, "tools": [t.metadata.to_openai_tool() for t in tools]}

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        calls = [
            ToolSelection(tool_id=b.tool_call_id or "", tool_name=b.tool_name, tool_kwargs=b.tool_kwargs)
            for b in response.message.blocks
            if isinstance(b, ToolCallBlock)
        ]
        if not calls and error_on_no_tool_call:
            raise ValueError("expected at least one tool call")
        return calls


class ScriptedSynthesisLLM(CustomLLM):
    """The query engine's own model: answers ``answers[i]`` on its i-th completion (prompts kept)."""

    model_name: str = SYNTH_MODEL
    answers: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model_name, context_window=4096, num_output=256)

    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers[min(len(self.prompts), len(self.answers)) - 1]

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._answer(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()


#: the keywords :class:`KeywordEmbedding` counts (stems, case-insensitive), one dimension each, plus a bias
KEYWORDS = ("refund", "ship", "warrant", "deliver", "order", "warehouse")


class KeywordEmbedding(BaseEmbedding):
    """A deterministic local embedding: keyword counts (plus a small bias), so different queries
    retrieve different documents (``MockEmbedding`` gives every text the same vector)."""

    model_name: str = "keyword-embedding"

    @staticmethod
    def vector(text: str) -> list[float]:
        low = text.lower()
        return [float(len(re.findall(k, low))) for k in KEYWORDS] + [0.05]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.vector(text)


# ----------------------------------------------------------------------------- tools


ORDERS = {
    "A-1042": "Order A-1042: shipped 2024-05-02 from the Leeds warehouse, delivered 2024-05-04.",
    "B-7781": "Order B-7781: awaiting pick-up at the Leeds warehouse, not shipped yet.",
}


def order_lookup(order_id: str) -> str:
    """Look up an order's shipping and delivery status by order id (e.g. A-1042)."""
    return ORDERS.get(order_id, f"No order {order_id}.")


def policy_tool(synthesis: Sequence[str]) -> tuple[QueryEngineTool, ScriptedSynthesisLLM]:
    """``policy_search``: a QueryEngineTool over a VectorStoreIndex of DOCS (top 2), with its own synthesis LLM."""
    documents = [Document(id_=d.id, text=d.content, metadata={"source": d.source}) for d in DOCS]
    embed = KeywordEmbedding()
    index = VectorStoreIndex.from_documents(documents, embed_model=embed)
    synth = ScriptedSynthesisLLM(answers=list(synthesis))
    engine = index.as_query_engine(llm=synth, similarity_top_k=TOP_K)
    tool = QueryEngineTool.from_defaults(
        engine, name=QE_TOOL, description="Search the store's policies (refunds, shipping, warranty)."
    )
    return tool, synth


def lookup_tool() -> FunctionTool:
    return FunctionTool.from_defaults(fn=order_lookup, name=FN_TOOL)


# ----------------------------------------------------------------------------- running a turn


@contextlib.contextmanager
def _llama_index_settings() -> Iterator[None]:
    """Leave the ``Settings.llm`` / ``Settings.embed_model`` globals as they were (other rows set them)."""
    llm, embed = Settings._llm, Settings._embed_model
    try:
        yield
    finally:
        Settings._llm, Settings._embed_model = llm, embed


def _message_json(m: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    calls = [b for b in m.blocks if isinstance(b, ToolCallBlock)]
    if calls:
        out["tool_calls"] = [{"id": b.tool_call_id, "name": b.tool_name, "kwargs": b.tool_kwargs} for b in calls]
    if m.additional_kwargs.get("tool_call_id"):
        out["tool_call_id"] = m.additional_kwargs["tool_call_id"]
    return out


async def _run_turn(agent: Any, question: str) -> tuple[Any, list[ToolCallResult]]:
    handler = agent.run(user_msg=question)
    results: list[ToolCallResult] = []
    async for ev in handler.stream_events():
        if isinstance(ev, ToolCallResult):
            results.append(ev)
    return await handler, results


def _evidence(results: Sequence[ToolCallResult]) -> list[Evidence]:
    """What the tool calls gave the model, in call order: a query engine's nodes, else the tool's text."""
    items: list[Evidence] = []
    for r in results:
        nodes = getattr(r.tool_output.raw_output, "source_nodes", None)
        if nodes is not None:
            items.extend(
                Evidence(content=n.node.get_content(), tool=r.tool_name, id=n.node.node_id, score=n.score)
                for n in nodes
            )
        else:
            items.append(Evidence(content=str(r.tool_output.content), tool=r.tool_name))
    return dedupe_evidence(items)


def _final_text(output: Any) -> str:
    return "".join(b.text for b in output.response.blocks if isinstance(b, TextBlock))


def run_agent_turn(
    cap: Capture,
    *,
    kind: str,
    question: str,
    script: list[Any],
    tools: list[Any],
    synth: ScriptedSynthesisLLM | None = None,
) -> AgentSeen:
    """Build the ``kind`` agent ("function" or "react") with ``tools``, run one traced turn, return ground truth."""
    if kind == "function":
        llm: ScriptedChatLLM = ScriptedToolCallingLLM(script=script)
        agent: Any = FunctionAgent(
            name="support_agent", tools=tools, llm=llm, system_prompt="You are a store's support agent."
        )
    else:
        llm = ScriptedChatLLM(script=script)
        agent = ReActAgent(name="support_agent", tools=tools, llm=llm, system_prompt="You are a store's support agent.")
    with llama_index_instrumented(cap):
        output, results = asyncio.run(_run_turn(agent, question))
    answer = _final_text(output)
    assert len(llm.calls) == len(script), f"the agent made {len(llm.calls)} model call(s), the script has {len(script)}"
    return AgentSeen(
        turns=[Turn(question=question, answer=answer, contexts=_evidence(results))],
        extra={
            "agent": type(agent).__name__,
            "tool_calls": [
                {
                    "id": r.tool_id,
                    "name": r.tool_name,
                    "kwargs": r.tool_kwargs,
                    "output": str(r.tool_output.content),
                    "nodes": [
                        {"id": n.node.node_id, "ref_doc_id": n.node.ref_doc_id, "score": n.score}
                        for n in getattr(r.tool_output.raw_output, "source_nodes", None) or []
                    ],
                }
                for r in results
            ],
            "model_calls": llm.calls,
            "synthesis_prompts": list(synth.prompts) if synth is not None else [],
            "raw_final_text": script[-1],
        },
    )


# ----------------------------------------------------------------------------- the rows

FA_QE_ANSWER = "You have 30 days from delivery to ask for a refund."
FA_QE_SYNTH = "The refund policy allows refund requests within 30 days of delivery."

TWO_QUESTION = "How long do I have to get a refund, and where do orders ship from?"
TWO_ANSWER = "You can ask for a refund within 30 days of delivery; orders ship from our Leeds warehouse."
TWO_QUERIES = ("refund window after delivery", "which warehouse do orders ship from")
TWO_SYNTH = (
    "Refunds may be requested up to 30 days after delivery.",
    "Orders ship from the Leeds warehouse within 2 business days.",
)

FN_QUESTION = "When was my order A-1042 delivered?"
FN_ANSWER = "Your order A-1042 was delivered on 4 May 2024."

FN_TWO_QUESTION = "Where are my orders A-1042 and B-7781?"
FN_TWO_ANSWER = (
    "Order A-1042 was delivered on 4 May 2024; order B-7781 is still at the Leeds warehouse, not shipped yet."
)
FN_TWO_ORDERS = ("A-1042", "B-7781")


def _react_action(tool: str, kwargs: dict[str, Any], thought: str) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(kwargs)}"


def _react_answer(answer: str) -> str:
    return f"Thought: I can answer without using any more tools.\nAnswer: {answer}"


def run_function_agent_query_engine_one(cap: Capture) -> AgentSeen:
    """FunctionAgent, one ``policy_search`` (QueryEngineTool) call, then the answer."""
    with _llama_index_settings():
        tool, synth = policy_tool([FA_QE_SYNTH])
        script = [
            [ToolSelection(tool_id="call_policy_1", tool_name=QE_TOOL, tool_kwargs={"input": "refund window"})],
            FA_QE_ANSWER,
        ]
        return run_agent_turn(cap, kind="function", question=QUESTION, script=script, tools=[tool], synth=synth)


def run_function_agent_query_engine_two(cap: Capture) -> AgentSeen:
    """FunctionAgent, two sequential ``policy_search`` calls (different queries), then the answer."""
    with _llama_index_settings():
        tool, synth = policy_tool(TWO_SYNTH)
        script = [
            [ToolSelection(tool_id="call_policy_1", tool_name=QE_TOOL, tool_kwargs={"input": TWO_QUERIES[0]})],
            [ToolSelection(tool_id="call_policy_2", tool_name=QE_TOOL, tool_kwargs={"input": TWO_QUERIES[1]})],
            TWO_ANSWER,
        ]
        return run_agent_turn(cap, kind="function", question=TWO_QUESTION, script=script, tools=[tool], synth=synth)


def run_function_agent_function_tool(cap: Capture) -> AgentSeen:
    """FunctionAgent, one ``order_lookup`` (FunctionTool returning text) call, then the answer."""
    with _llama_index_settings():
        script = [
            [ToolSelection(tool_id="call_order_1", tool_name=FN_TOOL, tool_kwargs={"order_id": "A-1042"})],
            FN_ANSWER,
        ]
        return run_agent_turn(cap, kind="function", question=FN_QUESTION, script=script, tools=[lookup_tool()])


def run_function_agent_function_tool_two(cap: Capture) -> AgentSeen:
    """FunctionAgent, two sequential ``order_lookup`` (FunctionTool) calls (different order ids), then the answer."""
    with _llama_index_settings():
        script = [
            [ToolSelection(tool_id="call_order_1", tool_name=FN_TOOL, tool_kwargs={"order_id": FN_TWO_ORDERS[0]})],
            [ToolSelection(tool_id="call_order_2", tool_name=FN_TOOL, tool_kwargs={"order_id": FN_TWO_ORDERS[1]})],
            FN_TWO_ANSWER,
        ]
        seen = run_agent_turn(cap, kind="function", question=FN_TWO_QUESTION, script=script, tools=[lookup_tool()])
        _check_order_calls(seen)
        return seen


def _check_order_calls(seen: AgentSeen) -> None:
    """The two ``order_lookup`` calls ran with the two scripted order ids, in order, and returned different texts."""
    calls = seen.extra["tool_calls"]
    got = [(c["name"], c["kwargs"].get("order_id")) for c in calls]
    if got != [(FN_TOOL, o) for o in FN_TWO_ORDERS]:
        raise AssertionError(f"the agent's tool calls were {got}, not order_lookup on {FN_TWO_ORDERS}")
    if len({c["output"] for c in calls}) != len(calls):
        raise AssertionError("the two order_lookup calls returned the same text")


def run_react_agent_query_engine_one(cap: Capture) -> AgentSeen:
    """ReActAgent, one ``policy_search`` (QueryEngineTool) action, then ``Answer:``."""
    with _llama_index_settings():
        tool, synth = policy_tool([FA_QE_SYNTH])
        script = [
            _react_action(QE_TOOL, {"input": "refund window"}, "I need the refund policy."),
            _react_answer(FA_QE_ANSWER),
        ]
        return run_agent_turn(cap, kind="react", question=QUESTION, script=script, tools=[tool], synth=synth)


def run_react_agent_query_engine_two(cap: Capture) -> AgentSeen:
    """ReActAgent, two ``policy_search`` actions (different queries), then ``Answer:``."""
    with _llama_index_settings():
        tool, synth = policy_tool(TWO_SYNTH)
        script = [
            _react_action(QE_TOOL, {"input": TWO_QUERIES[0]}, "I need the refund policy."),
            _react_action(QE_TOOL, {"input": TWO_QUERIES[1]}, "Now I need where orders ship from."),
            _react_answer(TWO_ANSWER),
        ]
        return run_agent_turn(cap, kind="react", question=TWO_QUESTION, script=script, tools=[tool], synth=synth)


def run_react_agent_function_tool(cap: Capture) -> AgentSeen:
    """ReActAgent, one ``order_lookup`` (FunctionTool) action, then ``Answer:``."""
    with _llama_index_settings():
        script = [
            _react_action(FN_TOOL, {"order_id": "A-1042"}, "I need to look the order up."),
            _react_answer(FN_ANSWER),
        ]
        return run_agent_turn(cap, kind="react", question=FN_QUESTION, script=script, tools=[lookup_tool()])


def run_react_agent_function_tool_two(cap: Capture) -> AgentSeen:
    """ReActAgent, two ``order_lookup`` (FunctionTool) actions (different order ids), then ``Answer:``."""
    with _llama_index_settings():
        script = [
            _react_action(FN_TOOL, {"order_id": FN_TWO_ORDERS[0]}, "I need to look the first order up."),
            _react_action(FN_TOOL, {"order_id": FN_TWO_ORDERS[1]}, "Now I need the second order."),
            _react_answer(FN_TWO_ANSWER),
        ]
        seen = run_agent_turn(cap, kind="react", question=FN_TWO_QUESTION, script=script, tools=[lookup_tool()])
        _check_order_calls(seen)
        return seen


ROWS: dict[str, Callable[[Capture], AgentSeen]] = {
    "function_agent_query_engine_one": run_function_agent_query_engine_one,
    "function_agent_query_engine_two": run_function_agent_query_engine_two,
    "function_agent_function_tool": run_function_agent_function_tool,
    "function_agent_function_tool_two": run_function_agent_function_tool_two,
    "react_agent_query_engine_one": run_react_agent_query_engine_one,
    "react_agent_query_engine_two": run_react_agent_query_engine_two,
    "react_agent_function_tool": run_react_agent_function_tool,
    "react_agent_function_tool_two": run_react_agent_function_tool_two,
}

#: per row, what the script makes the agent do: (final answer, number of tool calls)
SCRIPTED: dict[str, tuple[str, int]] = {
    "function_agent_query_engine_one": (FA_QE_ANSWER, 1),
    "function_agent_query_engine_two": (TWO_ANSWER, 2),
    "function_agent_function_tool": (FN_ANSWER, 1),
    "function_agent_function_tool_two": (FN_TWO_ANSWER, 2),
    "react_agent_query_engine_one": (FA_QE_ANSWER, 1),
    "react_agent_query_engine_two": (TWO_ANSWER, 2),
    "react_agent_function_tool": (FN_ANSWER, 1),
    "react_agent_function_tool_two": (FN_TWO_ANSWER, 2),
}
