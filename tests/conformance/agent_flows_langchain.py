"""Agent-turn flows (issue 42) on LangChain / LangGraph, traced by OpenInference LangChain.

Each ``run_*`` builds a tool-calling agent, with LangGraph's ``langgraph.prebuilt.create_react_agent`` or LangChain
1.x's ``langchain.agents.create_agent`` (``builder``), over a local scripted chat model and tools over
``harness.DOCS``; instruments with ``LangChainInstrumentor`` into ``cap.tp``, invokes, un-instruments, and returns
:class:`~tests.conformance.harness.AgentSeen`: what the app itself saw, one :class:`Turn` per user message. The
ground truth is read from the run, not restated: the final state's messages (the question, each ``ToolMessage``
the tools returned, in call order, and the final ``AIMessage``) and, for a retriever tool, the documents its
retriever returned (a callback handler in the app's own config records them, with their ids, under the tool
call that ran them). Each flow checks its own run (model calls, the messages the answering call was given) and
raises :class:`FlowError` when the app did not do what the row describes, so a failing test is about records.

Imports of third-party packages happen inside the functions (callers check them with ``need``).
"""

from __future__ import annotations

import ast
import contextlib
import operator
import threading
import uuid
from dataclasses import asdict
from typing import Any, Callable, Iterator, Sequence

from tests.conformance.harness import ANSWER, DOCS, QUESTION, AgentSeen, Capture, Evidence, Turn, dedupe_evidence

#: the scripted chat model's name (LangChain reports it as ``ls_model_name``; OpenInference as ``llm.model_name``)
AGENT_MODEL = "fake-agent-chat-1"
SEARCH_TOOL = "search_policies"
CALC_TOOL = "calculator"
SYSTEM_PROMPT = (
    "You are the customer-support assistant of an online hardware shop. Answer from the shop's policies: "
    f"look them up with {SEARCH_TOOL}, and use {CALC_TOOL} for any arithmetic."
)
#: documents per search call: two of three, so two different queries overlap in one document
SEARCH_K = 2
#: ``builder`` values: LangGraph's prebuilt ReAct agent and LangChain 1.x's ``create_agent``
BUILDERS = ("langgraph", "langchain")
#: the module each builder needs (for ``need``)
BUILDER_MODULES = {"langgraph": "langgraph.prebuilt", "langchain": "langchain.agents"}

# queries the scripted model sends; with DeterministicFakeEmbedding(size=64) and k=2 each one's top two hold the
# document its answer needs, and "refund window" / "warranty period" share one (the warranty policy)
REFUND_QUERY = "refund window"
WARRANTY_QUERY = "warranty period"
SHIPPING_QUERY = "shipping"


class FlowError(RuntimeError):
    """The app run did not do what the row describes (a bug in the flow, not in the collector)."""


# ----------------------------------------------------------------------------- the app's pieces


def scripted_chat_model(script: Sequence[Any]):
    """A local chat model that returns ``script``'s ``AIMessage`` s in turn and records the messages of each call.

    ``bind_tools`` returns the model itself (the tool calls are scripted), as a real provider's model would
    return a bound copy. ``calls[i]`` are the messages the i-th call was given.
    """
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        """Answers from a script: tool-call ``AIMessage`` s, then the final answer."""

        model_name: str = AGENT_MODEL
        script: list = []
        calls: list = []

        @property
        def _llm_type(self) -> str:
            return "scripted-fake-chat"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            n = len(self.calls)
            self.calls.append(list(messages))
            if n >= len(self.script):
                raise FlowError(f"the scripted model was called {n + 1} times; its script has {len(self.script)}")
            return ChatResult(generations=[ChatGeneration(message=self.script[n].model_copy(deep=True))])

    return ScriptedChatModel(script=list(script), calls=[])


def tool_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call as a provider returns it (OpenAI-style ``call_...`` id)."""
    return {"name": name, "args": args, "id": "call_" + uuid.uuid4().hex[:24], "type": "tool_call"}


def calls_message(*calls: dict[str, Any]):
    """The model's tool-calling turn: empty content, one or more tool calls (several = parallel calls)."""
    from langchain_core.messages import AIMessage

    return AIMessage(content="", tool_calls=list(calls))


def answer_message(text: str):
    from langchain_core.messages import AIMessage

    return AIMessage(content=text)


def policy_store():
    """InMemoryVectorStore(DeterministicFakeEmbedding(64)) over ``DOCS``: Document ids = doc ids, metadata source."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(
        [Document(id=d.id, page_content=d.content, metadata={"source": d.source}) for d in DOCS],
        ids=[d.id for d in DOCS],
    )
    return store


def retriever_search_tool(store: Any):
    """``create_retriever_tool`` on the store's (Runnable) retriever: returns the documents' texts joined by a blank line."""
    from langchain_core.tools import create_retriever_tool

    return create_retriever_tool(
        store.as_retriever(search_kwargs={"k": SEARCH_K}),
        SEARCH_TOOL,
        "Search the shop's policies (refunds, shipping, warranty). Returns the matching policy texts.",
    )


def plain_search_tool(store: Any):
    """A plain ``@tool`` that calls ``store.similarity_search`` itself (no retriever run) and returns one text."""
    from langchain_core.tools import tool

    @tool(SEARCH_TOOL)
    def search_policies(query: str) -> str:
        """Search the shop's policies (refunds, shipping, warranty). Returns the matching policy texts."""
        hits = store.similarity_search(query, k=SEARCH_K)
        return "\n".join(f"{d.metadata['source']}: {d.page_content}" for d in hits)

    return search_policies


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
}


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.left), _arith(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.operand))
    raise ValueError("only + - * / on numbers")


def calculator_tool():
    """A ``@tool`` calculator (+ - * / on numbers): returns ``"<expression> = <result>"``."""
    from langchain_core.tools import tool

    @tool(CALC_TOOL)
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression (+, -, *, / and parentheses) and return the result."""
        value = _arith(ast.parse(expression, mode="eval"))
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return f"{expression} = {value:g}" if isinstance(value, float) else f"{expression} = {value}"

    return calculator


def build_agent(builder: str, model: Any, tools: Sequence[Any], *, checkpointer: Any = None):
    """The agent graph: ``create_react_agent`` (``"langgraph"``) or ``create_agent`` (``"langchain"``); a
    ``":traceloop"`` suffix only changes the instrumentation (:func:`instrumented`)."""
    import warnings

    builder = builder.partition(":")[0]
    if builder == "langgraph":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():  # deprecated in LangGraph 1.x in favour of langchain.agents.create_agent
            warnings.simplefilter("ignore")
            return create_react_agent(model, list(tools), prompt=SYSTEM_PROMPT, checkpointer=checkpointer)
    if builder == "langchain":
        from langchain.agents import create_agent

        return create_agent(model, list(tools), system_prompt=SYSTEM_PROMPT, checkpointer=checkpointer)
    raise ValueError(f"unknown builder {builder!r} (one of {BUILDERS})")


def app_recorder():
    """A callback handler in the app's own config: which tool call ran which retriever, and what it returned."""
    from langchain_core.callbacks import BaseCallbackHandler

    class AppRecorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.tool_call_of_run: dict[Any, str | None] = {}
            self.docs_of_run: dict[Any, list[Any]] = {}

        def on_tool_start(self, serialized: Any, input_str: str, *, run_id: Any, **kwargs: Any) -> None:
            with self.lock:
                self.tool_call_of_run[run_id] = kwargs.get("tool_call_id")

        def on_retriever_end(self, documents: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
            with self.lock:
                self.docs_of_run.setdefault(parent_run_id, []).extend(documents)

        def docs_by_tool_call(self) -> dict[str, list[Any]]:
            out: dict[str, list[Any]] = {}
            for run, docs in self.docs_of_run.items():
                call = self.tool_call_of_run.get(run)
                if call is None:
                    raise FlowError("a retriever ran outside any tool call")
                out.setdefault(call, []).extend(docs)
            return out

    return AppRecorder()


@contextlib.contextmanager
def instrumented(cap: Capture, builder: str = "") -> Iterator[None]:
    """OpenInference's LangChain instrumentation, or Traceloop's (``opentelemetry-instrumentation-langchain``) for a
    builder ending in ``":traceloop"``."""
    if builder.endswith(":traceloop"):
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        from tests.conformance.flows import unwrap_traceloop_callback_manager

        tl = LangchainInstrumentor()
        tl.instrument(tracer_provider=cap.tp)
        try:
            yield
        finally:
            tl.uninstrument()
            unwrap_traceloop_callback_manager()
        return
    from openinference.instrumentation.langchain import LangChainInstrumentor

    inst = LangChainInstrumentor()
    inst.instrument(tracer_provider=cap.tp)
    try:
        yield
    finally:
        inst.uninstrument()


# ----------------------------------------------------------------------------- ground truth from the run


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def turn_seen(messages: Sequence[Any], question: str, docs_by_call: dict[str, list[Any]]) -> tuple[Turn, dict]:
    """The last turn in ``messages`` (from the last user message on): the Turn, and a description of its calls.

    Contexts: each ``ToolMessage`` in order (the order the answering model was given them = call order); a retriever
    tool's documents (each with its id), any other tool's returned text. Deduplicated by content.
    """
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if not starts or _text(messages[starts[-1]].content) != question:
        raise FlowError(f"the last user message is not the turn's question {question!r}")
    turn = list(messages[starts[-1] :])
    final = turn[-1]
    if not isinstance(final, AIMessage) or final.tool_calls:
        raise FlowError(f"the turn does not end with a final answer: {type(final).__name__}")
    evidence: list[Evidence] = []
    calls: list[dict[str, Any]] = []
    for m in turn:
        if isinstance(m, AIMessage):
            calls.extend({"name": c["name"], "args": c["args"], "id": c["id"]} for c in m.tool_calls)
        if not isinstance(m, ToolMessage):
            continue
        returned = _text(m.content)
        docs = docs_by_call.get(m.tool_call_id)
        if docs is not None:
            if returned != "\n\n".join(d.page_content for d in docs):
                raise FlowError(f"retriever tool {m.name!r} returned text that is not its documents")
            evidence.extend(Evidence(content=d.page_content, tool=m.name, id=d.id) for d in docs)
        else:
            evidence.append(Evidence(content=returned, tool=m.name))
    tool_messages = [
        {"name": m.name, "tool_call_id": m.tool_call_id, "content": _text(m.content)}
        for m in turn
        if isinstance(m, ToolMessage)
    ]
    if [t["tool_call_id"] for t in tool_messages] != [c["id"] for c in calls]:
        raise FlowError("tool results do not answer the tool calls one by one, in order")
    described = {"tool_calls": calls, "tool_messages": tool_messages}
    return Turn(question=question, answer=_text(final.content), contexts=dedupe_evidence(evidence)), described


def _roles(messages: Sequence[Any]) -> list[str]:
    return [getattr(m, "type", type(m).__name__) for m in messages]


def run_turns(
    cap: Capture,
    builder: str,
    tools: Sequence[Any],
    turns: Sequence[tuple[str, list[Any]]],
    *,
    thread: bool = False,
    app_span: str | None = None,
) -> AgentSeen:
    """Run one ``invoke`` per ``(question, script)`` turn (one thread, MemorySaver, when ``thread``), traced; with
    ``app_span``, every invoke runs inside one app span of that name (so all the turns are in one trace)."""
    model = scripted_chat_model([m for _, script in turns for m in script])
    checkpointer = None
    if thread:
        from langgraph.checkpoint.memory import MemorySaver

        checkpointer = MemorySaver()
    agent = build_agent(builder, model, tools, checkpointer=checkpointer)
    thread_id = "thread-" + uuid.uuid4().hex[:8]
    seen = AgentSeen(extra={"builder": builder, "model": AGENT_MODEL, "turns": []})
    scripted = 0
    with instrumented(cap, builder), _app_span(cap, app_span) as span:
        for question, script in turns:
            recorder = app_recorder()
            config: dict[str, Any] = {"callbacks": [recorder]}
            if thread:
                config["configurable"] = {"thread_id": thread_id}
            before = len(model.calls)
            result = agent.invoke({"messages": [{"role": "user", "content": question}]}, config=config)
            scripted += len(script)
            if len(model.calls) != scripted:
                raise FlowError(f"turn {question!r}: model called {len(model.calls) - before}x, scripted {len(script)}")
            turn, described = turn_seen(result["messages"], question, recorder.docs_by_tool_call())
            if turn.answer != _text(script[-1].content):
                raise FlowError(f"final answer {turn.answer!r} is not the scripted one")
            answering = model.calls[-1]  # what the answering call was given: every tool result of the turn
            given = {_text(m.content) for m in answering if getattr(m, "type", None) == "tool"}
            if any(t["content"] not in given for t in described["tool_messages"]):
                raise FlowError("the answering model call was not given every tool result of its turn")
            described["answering_call_roles"] = _roles(answering)
            described["model_calls"] = len(model.calls) - before
            described["result_messages"] = len(result["messages"])
            seen.turns.append(turn)
            seen.extra["turns"].append(described)
    seen.extra["thread_id"] = thread_id if thread else None
    if span is not None:
        seen.extra["app_trace_id"] = format(span.get_span_context().trace_id, "032x")
    return seen


@contextlib.contextmanager
def _app_span(cap: Capture, name: str | None) -> Iterator[Any]:
    """The app's own span around the whole run (``None``: no span, each invoke is its own trace)."""
    if name is None:
        yield None
        return
    with cap.tp.get_tracer("app").start_as_current_span(name) as span:
        yield span


# ----------------------------------------------------------------------------- the rows

TWO_CALLS_QUESTION = "How long do I have to return a laptop for a refund, and how long is its warranty?"
TWO_CALLS_ANSWER = (
    "You can request a refund within 30 days of delivery, and the laptop carries a 2-year limited warranty "
    "against defects."
)
CALC_QUESTION = "My order was delivered 12 days ago. How many days do I still have to request a refund?"
CALC_ANSWER = "Refunds can be requested within 30 days of delivery, so you have 18 days left to request one."
THREAD_QUESTIONS = ("How long is the warranty on hardware?", "And how quickly do orders ship?")
THREAD_ANSWERS = (
    "Hardware carries a 2-year limited warranty against defects.",
    "Orders ship within 2 business days from our Leeds warehouse.",
)
CALC_ONLY_QUESTION = "I'm paying for a monitor in 3 instalments of 41.50. What will I pay in total?"
CALC_ONLY_ANSWER = "Three instalments of 41.50 come to 124.50 in total."
NO_TOOL_QUESTION = "Hi! Can you help me with a question about my order?"
NO_TOOL_ANSWER = "Of course! What would you like to know about your order?"


def run_retriever_tool_one_call(cap: Capture, builder: str) -> AgentSeen:
    """Row a1: a retriever tool (``create_retriever_tool``), called once; contexts = its documents, with ids."""
    tools = [retriever_search_tool(policy_store())]
    script = [calls_message(tool_call(SEARCH_TOOL, {"query": REFUND_QUERY})), answer_message(ANSWER)]
    return run_turns(cap, builder, tools, [(QUESTION, script)])


def run_retriever_tool_two_calls(cap: Capture, builder: str) -> AgentSeen:
    """Row a2: the retriever tool called twice, one call after the other (refund, then warranty); contexts = call
    1's documents then call 2's, deduplicated by content (the two share the warranty policy)."""
    tools = [retriever_search_tool(policy_store())]
    script = [
        calls_message(tool_call(SEARCH_TOOL, {"query": REFUND_QUERY})),
        calls_message(tool_call(SEARCH_TOOL, {"query": WARRANTY_QUERY})),
        answer_message(TWO_CALLS_ANSWER),
    ]
    return run_turns(cap, builder, tools, [(TWO_CALLS_QUESTION, script)])


def run_search_tool(cap: Capture, builder: str) -> AgentSeen:
    """Row b: a plain ``@tool`` that searches the store itself; contexts = exactly its returned text (no id)."""
    tools = [plain_search_tool(policy_store())]
    script = [calls_message(tool_call(SEARCH_TOOL, {"query": REFUND_QUERY})), answer_message(ANSWER)]
    return run_turns(cap, builder, tools, [(QUESTION, script)])


def run_search_and_calculator(cap: Capture, builder: str) -> AgentSeen:
    """Row c: the search tool and a calculator, called in one turn (one model message, two parallel tool calls);
    contexts = the search text, then the calculator's text (the order of the calls)."""
    tools = [plain_search_tool(policy_store()), calculator_tool()]
    script = [
        calls_message(
            tool_call(SEARCH_TOOL, {"query": REFUND_QUERY}),
            tool_call(CALC_TOOL, {"expression": "30 - 12"}),
        ),
        answer_message(CALC_ANSWER),
    ]
    return run_turns(cap, builder, tools, [(CALC_QUESTION, script)])


def run_multi_turn(cap: Capture, builder: str) -> AgentSeen:
    """Row d: two ``invoke`` s on one thread (MemorySaver), each calling the search tool once with its own query;
    two turns, each with only its own turn's tool result (turn 2's model also gets turn 1's history)."""
    tools = [plain_search_tool(policy_store())]
    turns = [
        (
            THREAD_QUESTIONS[0],
            [calls_message(tool_call(SEARCH_TOOL, {"query": WARRANTY_QUERY})), answer_message(THREAD_ANSWERS[0])],
        ),
        (
            THREAD_QUESTIONS[1],
            [calls_message(tool_call(SEARCH_TOOL, {"query": SHIPPING_QUERY})), answer_message(THREAD_ANSWERS[1])],
        ),
    ]
    seen = run_turns(cap, builder, tools, turns, thread=True)
    second = seen.extra["turns"][1]
    if second["answering_call_roles"].count("human") != 2:
        raise FlowError(f"turn 2's model call does not carry turn 1's history: {second['answering_call_roles']}")
    return seen


def run_multi_turn_one_trace(cap: Capture, builder: str) -> AgentSeen:
    """Row d2: row d's two turns (one thread, MemorySaver), both ``invoke`` s inside one app span ("chat-session"),
    so both turns are in ONE trace; two turns, each with only its own turn's tool result."""
    tools = [plain_search_tool(policy_store())]
    turns = [
        (
            THREAD_QUESTIONS[0],
            [calls_message(tool_call(SEARCH_TOOL, {"query": WARRANTY_QUERY})), answer_message(THREAD_ANSWERS[0])],
        ),
        (
            THREAD_QUESTIONS[1],
            [calls_message(tool_call(SEARCH_TOOL, {"query": SHIPPING_QUERY})), answer_message(THREAD_ANSWERS[1])],
        ),
    ]
    seen = run_turns(cap, builder, tools, turns, thread=True, app_span="chat-session")
    second = seen.extra["turns"][1]
    if second["answering_call_roles"].count("human") != 2:
        raise FlowError(f"turn 2's model call does not carry turn 1's history: {second['answering_call_roles']}")
    trace_ids = {format(s.context.trace_id, "032x") for s in cap.finished_spans()}
    if trace_ids != {seen.extra["app_trace_id"]}:
        raise FlowError(f"the turns' spans are not all in the app span's trace: {len(trace_ids)} trace(s)")
    return seen


def run_calculator_only(cap: Capture, builder: str) -> AgentSeen:
    """Row e: only the calculator is called (no retrieval); contexts = its returned text."""
    tools = [plain_search_tool(policy_store()), calculator_tool()]
    script = [calls_message(tool_call(CALC_TOOL, {"expression": "3 * 41.50"})), answer_message(CALC_ONLY_ANSWER)]
    return run_turns(cap, builder, tools, [(CALC_ONLY_QUESTION, script)])


def run_no_tool(cap: Capture, builder: str) -> AgentSeen:
    """Row f: the model answers directly, no tool call: nothing to judge, so no turn (the Q/A are in ``extra``)."""
    tools = [plain_search_tool(policy_store()), calculator_tool()]
    seen = run_turns(cap, builder, tools, [(NO_TOOL_QUESTION, [answer_message(NO_TOOL_ANSWER)])])
    (turn,) = seen.turns
    if turn.contexts:
        raise FlowError("a tool ran in the no-tool row")
    seen.extra["question"], seen.extra["answer"] = turn.question, turn.answer
    seen.turns = []
    return seen


#: row name -> flow(cap, builder)
ROWS: dict[str, Callable[[Capture, str], AgentSeen]] = {
    "retriever_tool_one_call": run_retriever_tool_one_call,
    "retriever_tool_two_calls": run_retriever_tool_two_calls,
    "search_tool": run_search_tool,
    "search_and_calculator": run_search_and_calculator,
    "multi_turn": run_multi_turn,
    "multi_turn_one_trace": run_multi_turn_one_trace,
    "calculator_only": run_calculator_only,
    "no_tool": run_no_tool,
}


def seen_json(seen: AgentSeen) -> dict[str, Any]:
    """``AgentSeen`` as plain JSON-able data."""
    return asdict(seen)
