"""Agent-turn flows (issue 42) against the local scripted fake OpenAI server: one user message per run.

(A) OpenAI Agents SDK (``openai-agents``) traced by ``openinference-instrumentation-openai-agents``: an ``Agent``
    with function tools ``search_policies`` (text built from ``harness.DOCS``) and ``calculator``, over
    ``OpenAIChatCompletionsModel`` or ``OpenAIResponsesModel`` on ``AsyncOpenAI(base_url=<fake server>)``,
    driven by ``Runner.run_sync``.
(B) An OTel GenAI-convention agent written by hand: util-genai 1.1b0's ``TelemetryHandler.invoke_local_agent()``
    (``invoke_agent`` span) around the turn, ``TelemetryHandler.tool()`` (``execute_tool`` span) around each tool
    the app runs, and ``openai`` chat completions traced by ``opentelemetry-instrumentation-openai-v2``
    (content capture ``span_only``).

Each ``run_*`` returns an :class:`AgentSeen`: the question, ``final_output`` / the final message text, and the
tool results in call order as the tools returned them (ground truth for the records); ``extra`` keeps the tool
calls (name, call id, arguments, result), the routes and request bodies the fake server got. The flows check
themselves (every scripted reply consumed, the answer is the scripted final text), so a failing test fails on
the records, not on the flow. Third-party imports happen inside the functions (callers check them with ``need``).
"""

from __future__ import annotations

import ast
import contextlib
import json
import operator
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

from tests.conformance.fake_openai import ChatCompletionsServer, Reply, ToolCall
from tests.conformance.flows import capture_mode
from tests.conformance.harness import (
    ANSWER,
    DOCS,
    MODEL,
    QUESTION,
    SCORES,
    AgentSeen,
    Capture,
    Evidence,
    Turn,
    context_block,
    dedupe_evidence,
)

AGENT_NAME = "policy_assistant"
INSTRUCTIONS = (
    "You answer customer questions about the store's policies. Look policies up with search_policies "
    "and do arithmetic with calculator; answer only from what the tools return."
)
SEARCH = "search_policies"
CALCULATOR = "calculator"

# ----------------------------------------------------------------------------- the tools (plain functions)


def search_policies(query: str) -> str:
    """The policies whose topic (refund, shipping, warranty) the query mentions, as ``[id] content`` blocks."""
    topics = {d: d.id.removeprefix("doc-").rstrip("s") for d in DOCS}
    hits = [d for d, topic in topics.items() if topic in query.lower()]
    return context_block(hits) if hits else "No matching policy found."


def search_policy_documents(query: str) -> list[dict[str, Any]]:
    """The same search as :func:`search_policies`, returned as documents: ``[{"id", "content", "score"}]`` (the
    shape OpenInference openai-agents writes as ``retrieval.documents`` for a tool mapped to ``RETRIEVER``);
    the score is ``harness.SCORES`` by rank."""
    topics = {d: d.id.removeprefix("doc-").rstrip("s") for d in DOCS}
    hits = [d for d, topic in topics.items() if topic in query.lower()]
    return [{"id": d.id, "content": d.content, "score": score} for d, score in zip(hits, SCORES)]


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def calculator(expression: str) -> str:
    """Evaluate + - * / over numbers (no names, no calls); integral results without a decimal point."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"unsupported expression: {expression!r}")

    value = ev(ast.parse(expression, mode="eval"))
    return str(int(value)) if float(value).is_integer() else str(value)


TOOLS: dict[str, Callable[..., str]] = {SEARCH: search_policies, CALCULATOR: calculator}
TOOL_DESCRIPTIONS = {
    SEARCH: "Search the store's policy documents; returns the matching policies as text.",
    CALCULATOR: "Evaluate an arithmetic expression such as '12 + 30'.",
}
TOOL_PARAMS = {SEARCH: "query", CALCULATOR: "expression"}

# ----------------------------------------------------------------------------- the scripted turns


def call(name: str, arg: str, call_id: str) -> ToolCall:
    """A scripted tool call with its one string argument."""
    return ToolCall(name=name, arguments=json.dumps({TOOL_PARAMS[name]: arg}), id=call_id)


@dataclass(frozen=True)
class Script:
    """One turn: the user's message and what the fake model replies, call by call (the last reply is the answer)."""

    question: str
    replies: tuple[Reply, ...]

    @property
    def answer(self) -> str:
        assert isinstance(self.replies[-1], str), "a script ends with the final text"
        return self.replies[-1]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for r in self.replies if not isinstance(r, str) for c in r]


ONE_TOOL = Script(QUESTION, ([call(SEARCH, "refund window", "call_search_1")], ANSWER))
TWO_SEARCHES = Script(
    "How long do I have to request a refund, and how fast do orders ship?",
    (
        [call(SEARCH, "refund window", "call_search_1")],
        [call(SEARCH, "shipping time", "call_search_2")],
        "You can request a refund within 30 days of delivery, and orders ship within 2 business days.",
    ),
)
SEARCH_AND_CALCULATOR = Script(
    "My order was delivered on day 12 of the month. Until which day can I request a refund?",
    (
        [call(SEARCH, "refund window", "call_search_1"), call(CALCULATOR, "12 + 30", "call_calc_1")],
        "Refunds can be requested within 30 days of delivery, so until day 42 of the month.",
    ),
)
#: the ``search_policies`` query of :data:`RETRIEVER_KIND` retrieves two documents (refunds, warranty)
RETRIEVER_KIND = Script(
    "How long do I have to request a refund, and how long is the hardware warranty?",
    (
        [call(SEARCH, "refund and warranty policies", "call_search_1")],
        "You can request a refund within 30 days of delivery, and hardware carries a 2-year limited warranty.",
    ),
)


def _seen(script: Script, answer: str | None, calls: list[dict[str, Any]], srv: ChatCompletionsServer) -> AgentSeen:
    """Check the flow did what the script says, then the ground truth: contexts = the tool results, in call order."""
    assert len(srv.requests) == len(script.replies), f"fake server got {len(srv.requests)} of {len(script.replies)}"
    assert answer == script.answer, f"final answer {answer!r}"
    assert [(c["name"], c["id"]) for c in calls] == [(c.name, c.id) for c in script.tool_calls], calls
    contexts = dedupe_evidence(e for c in calls for e in _call_evidence(c))
    turn = Turn(question=script.question, answer=answer, contexts=contexts)
    return AgentSeen(turns=[turn], extra={"tool_calls": calls, "routes": list(srv.routes), "requests": srv.requests})


def _call_evidence(c: dict[str, Any]) -> list[Evidence]:
    """One tool call's grounding: each returned document (content, id, score) when the tool returned documents,
    else its returned text."""
    result = c["result"]
    if isinstance(result, list):
        return [Evidence(content=d["content"], tool=c["name"], id=d["id"], score=d["score"]) for d in result]
    return [Evidence(content=result, tool=c["name"])]


# ----------------------------------------------------------------------------- (A) OpenAI Agents SDK + OpenInference


@contextlib.contextmanager
def agents_sdk_offline_tracing() -> Iterator[None]:
    """SDK tracing on, with none of the SDK's own trace processors (nothing exports to api.openai.com).

    OpenInference listens through the SDK's trace processors, so ``set_tracing_disabled(True)`` would silence it
    too. Its ``instrument()`` (``exclusive_processor=True``, the default) displaces the registered processors, but
    ``uninstrument()`` puts them back, so the SDK's default ``BatchTraceProcessor`` (OpenAI backend exporter) is
    dropped here first, and stays dropped afterwards: nothing in a test process should export agent traces.
    """
    from agents import set_trace_processors, set_tracing_disabled

    set_trace_processors([])
    set_tracing_disabled(False)
    try:
        yield
    finally:
        set_trace_processors([])


def sdk_tools(calls: list[dict[str, Any]], *, documents: bool = False) -> list[Any]:
    """``search_policies`` and ``calculator`` as plain SDK function tools that log each call (name, result);
    with ``documents``, ``search_policies`` returns :func:`search_policy_documents`' list instead of text."""
    from agents import function_tool

    if documents:

        @function_tool(name_override=SEARCH, description_override=TOOL_DESCRIPTIONS[SEARCH])
        def search(query: str) -> list[dict[str, Any]]:
            result = search_policy_documents(query)
            calls.append({"name": SEARCH, "result": result})
            return result

    else:

        @function_tool(name_override=SEARCH, description_override=TOOL_DESCRIPTIONS[SEARCH])
        def search(query: str) -> str:
            result = search_policies(query)
            calls.append({"name": SEARCH, "result": result})
            return result

    @function_tool(name_override=CALCULATOR, description_override=TOOL_DESCRIPTIONS[CALCULATOR])
    def calc(expression: str) -> str:
        result = calculator(expression)
        calls.append({"name": CALCULATOR, "result": result})
        return result

    return [search, calc]


def run_openai_agents(
    cap: Capture, script: Script, *, api: str, tool_span_kinds: dict[str, str] | None = None
) -> AgentSeen:
    """(A) ``Runner.run_sync`` of one Agent turn; ``api``: ``chat`` (OpenAIChatCompletionsModel) or ``responses``.

    ``tool_span_kinds`` goes to ``OpenAIAgentsInstrumentor().instrument`` (tool name -> span kind); a tool mapped to
    ``RETRIEVER`` returns documents (:func:`search_policy_documents`) instead of text.
    """
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner
    from agents.items import ToolCallItem, ToolCallOutputItem
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    calls: list[dict[str, Any]] = []
    with agents_sdk_offline_tracing(), ChatCompletionsServer(replies=script.replies) as srv:
        client = AsyncOpenAI(api_key="test-key", base_url=srv.base_url, max_retries=0)
        models = {"chat": OpenAIChatCompletionsModel, "responses": OpenAIResponsesModel}
        model = models[api](model=MODEL, openai_client=client)
        documents = SEARCH in (tool_span_kinds or {})
        tools = sdk_tools(calls, documents=documents)
        agent = Agent(name=AGENT_NAME, instructions=INSTRUCTIONS, tools=tools, model=model)
        inst = OpenAIAgentsInstrumentor()
        if tool_span_kinds is None:
            inst.instrument(tracer_provider=cap.tp)
        else:
            inst.instrument(tracer_provider=cap.tp, tool_span_kinds=tool_span_kinds)
        try:
            result = Runner.run_sync(agent, script.question)
        finally:
            inst.uninstrument()
    # call ids and arguments from the run's items; what the SDK fed back to the model is what the tools returned
    requested = {i.raw_item.call_id: i.raw_item for i in result.new_items if isinstance(i, ToolCallItem)}
    outputs = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert [o.output for o in outputs] == [c["result"] for c in calls], (outputs, calls)
    for c, o in zip(calls, outputs):
        c["id"] = o.raw_item["call_id"]
        c["arguments"] = requested[c["id"]].arguments
    seen = _seen(script, result.final_output, calls, srv)
    seen.extra["api"] = api
    if documents:
        # what the answering call was given for each documents-returning call (the SDK stringifies the list)
        given = {}
        for c in calls:
            if isinstance(c["result"], list):
                text = _tool_message_text(srv.requests[-1], c["id"])
                if text is None or not all(d["content"] in text for d in c["result"]):
                    raise AssertionError(f"the answering call was not given call {c['id']}'s documents: {text!r}")
                given[c["id"]] = text
        seen.extra["tool_messages"] = given
    return seen


def _tool_message_text(body: dict[str, Any], call_id: str) -> str | None:
    """The text of the tool result for ``call_id`` in one Chat Completions (``messages``) or Responses (``input``)
    request body."""
    for m in body.get("messages") or body.get("input") or []:
        if not isinstance(m, dict):
            continue
        if m.get("tool_call_id") == call_id or (
            m.get("type") == "function_call_output" and m.get("call_id") == call_id
        ):
            content = m.get("content", m.get("output"))
            return content if isinstance(content, str) else json.dumps(content)
    return None


# ----------------------------------------------------------------------------- (B) OTel GenAI-convention agent


def chat_tool_specs() -> list[dict[str, Any]]:
    """The two tools as Chat Completions ``tools`` entries."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": TOOL_DESCRIPTIONS[name],
                "parameters": {
                    "type": "object",
                    "properties": {TOOL_PARAMS[name]: {"type": "string"}},
                    "required": [TOOL_PARAMS[name]],
                },
            },
        }
        for name in TOOLS
    ]


def run_genai_agent(cap: Capture, script: Script, *, mode: str = "span_only", max_steps: int = 5) -> AgentSeen:
    """(B) invoke_agent span (util-genai) -> chat (openai-v2) -> execute_tool span(s) (util-genai) -> chat ... -> answer."""
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import FunctionToolDefinition, InputMessage, OutputMessage, Text

    calls: list[dict[str, Any]] = []
    specs = chat_tool_specs()
    with capture_mode(mode), ChatCompletionsServer(replies=script.replies) as srv:
        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=cap.tp, logger_provider=cap.lp)
        try:
            handler = TelemetryHandler(tracer_provider=cap.tp, logger_provider=cap.lp)
            client = openai.OpenAI(api_key="test-key", base_url=srv.base_url, max_retries=0)
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": script.question},
            ]
            with handler.invoke_local_agent(agent_name=AGENT_NAME, request_model=MODEL) as agent:
                agent.system_instruction = [Text(content=INSTRUCTIONS)]
                agent.input_messages = [InputMessage(role="user", parts=[Text(content=script.question)])]
                agent.tool_definitions = [
                    FunctionToolDefinition(
                        name=s["function"]["name"],
                        description=s["function"]["description"],
                        parameters=s["function"]["parameters"],
                    )
                    for s in specs
                ]
                for _ in range(max_steps):
                    resp = client.chat.completions.create(model=MODEL, messages=messages, tools=specs, temperature=0)
                    msg = resp.choices[0].message
                    if not msg.tool_calls:
                        break
                    messages.append(
                        {
                            "role": "assistant",
                            "content": msg.content,
                            "tool_calls": [tc.model_dump(exclude_none=True) for tc in msg.tool_calls],
                        }
                    )
                    for tc in msg.tool_calls:
                        name, arguments = tc.function.name, json.loads(tc.function.arguments)
                        with handler.tool(
                            name, tool_call_id=tc.id, tool_type="function", tool_description=TOOL_DESCRIPTIONS[name]
                        ) as tool:
                            result = TOOLS[name](**arguments)
                            if tool.should_capture_content_on_span:  # what util-genai asks of instrumentations
                                tool.arguments = arguments
                                tool.tool_result = result
                        calls.append({"name": name, "id": tc.id, "arguments": tc.function.arguments, "result": result})
                        messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
                answer = msg.content
                agent.output_messages = [
                    OutputMessage(role="assistant", parts=[Text(content=answer or "")], finish_reason="stop")
                ]
        finally:
            inst.uninstrument()
    seen = _seen(script, answer, calls, srv)
    seen.extra["mode"] = mode
    return seen


# ----------------------------------------------------------------------------- the rows

#: row name -> flow; the tests and ``dump_agents_openai`` share these
ROWS: dict[str, Callable[[Capture], AgentSeen]] = {
    "agents_chat_one_tool": lambda cap: run_openai_agents(cap, ONE_TOOL, api="chat"),
    "agents_responses_one_tool": lambda cap: run_openai_agents(cap, ONE_TOOL, api="responses"),
    "agents_responses_two_searches": lambda cap: run_openai_agents(cap, TWO_SEARCHES, api="responses"),
    "agents_chat_search_and_calculator": lambda cap: run_openai_agents(cap, SEARCH_AND_CALCULATOR, api="chat"),
    "agents_chat_retriever_kind_tool": lambda cap: run_openai_agents(
        cap, RETRIEVER_KIND, api="chat", tool_span_kinds={SEARCH: "RETRIEVER"}
    ),
    "genai_agent_one_tool": lambda cap: run_genai_agent(cap, ONE_TOOL),
    "genai_agent_search_and_calculator": lambda cap: run_genai_agent(cap, SEARCH_AND_CALCULATOR),
}


def seen_json(seen: AgentSeen) -> dict[str, Any]:
    """AgentSeen as plain JSON-able data."""
    return asdict(seen)
