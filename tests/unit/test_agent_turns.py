"""Agent turns: one record per turn, its question, final answer and grounding (with provenance), or why there is none.

Spans are made with the real SDK in the shapes the instrumentations emit (OpenInference, OTel GenAI); the
frameworks themselves are driven in tests/conformance/test_agents_*.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from collector.config import CollectorSettings
from collector.conventions import SpanExtractor, react
from collector.conventions import messages as msgs
from collector.metrics import get_metrics
from collector.pipeline import TracePipeline
from collector.sink import MemorySink

QUESTION = "How long is the refund window, and what is 30 minus 12?"
ANSWER = "You have 30 days to ask for a refund; 30 minus 12 is 18."
DOC = "Refund policy: customers may request a refund within 30 days of delivery."


@pytest.fixture
def tp():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.exporter = exporter  # type: ignore[attr-defined]
    return provider


def build_all(tp: TracerProvider, settings: CollectorSettings | None = None):
    spans = tp.exporter.get_finished_spans()  # type: ignore[attr-defined]
    ex = SpanExtractor(settings or CollectorSettings())
    out = []
    for trace_id in sorted({s.context.trace_id for s in spans}):
        facts = [ex.extract(s) for s in spans if s.context.trace_id == trace_id]
        out.extend(ex.build(trace_id, facts))
    return out


def oi_messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference ``llm.*_messages.{i}.message.*`` attributes of ``messages``."""
    attrs: dict[str, Any] = {}
    for i, m in enumerate(messages):
        base = f"{prefix}.{i}.message."
        for key in ("role", "content", "tool_call_id", "name"):
            if m.get(key) is not None:
                attrs[base + key] = m[key]
        for j, call in enumerate(m.get("tool_calls", ())):
            attrs[f"{base}tool_calls.{j}.tool_call.id"] = call["id"]
            attrs[f"{base}tool_calls.{j}.tool_call.function.name"] = call["name"]
            attrs[f"{base}tool_calls.{j}.tool_call.function.arguments"] = json.dumps(call.get("args", {}))
    return attrs


def llm(tracer, inputs: list[dict[str, Any]], output: dict[str, Any], name: str = "ChatModel") -> None:
    with tracer.start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", "LLM")
        s.set_attribute("llm.model_name", "agent-model-1")
        for k, v in {
            **oi_messages("llm.input_messages", inputs),
            **oi_messages("llm.output_messages", [output]),
        }.items():
            s.set_attribute(k, v)


def tool(tracer, name: str, result: str, docs: tuple[str, ...] = (), call_id: str | None = None) -> None:
    with tracer.start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", "TOOL")
        s.set_attribute("tool.name", name)
        s.set_attribute("input.value", "{}")
        s.set_attribute("output.value", result)
        if call_id:
            s.set_attribute("tool_call.id", call_id)
        if docs:
            with tracer.start_as_current_span("retriever") as r:
                r.set_attribute("openinference.span.kind", "RETRIEVER")
                for i, d in enumerate(docs):
                    r.set_attribute(f"retrieval.documents.{i}.document.content", d)
                    r.set_attribute(f"retrieval.documents.{i}.document.id", f"d{i}")


def call(cid: str, name: str) -> dict[str, Any]:
    return {"id": cid, "name": name}


def agent_turn(tracer, question: str = QUESTION, answer: str = ANSWER, *, search_docs: tuple[str, ...] = ()) -> None:
    """system, user -> [search, calculator] (parallel) -> tool results -> answer, under one AGENT span."""
    system = {"role": "system", "content": "You answer from tool results."}
    user = {"role": "user", "content": question}
    asked = {"role": "assistant", "tool_calls": [call("c1", "search"), call("c2", "calculator")]}
    with tracer.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(tracer, [system, user], asked)
        tool(tracer, "search", DOC if not search_docs else "\n\n".join(search_docs), search_docs)
        tool(tracer, "calculator", "30 - 12 = 18")
        results = [
            {"role": "tool", "content": DOC if not search_docs else "\n\n".join(search_docs), "tool_call_id": "c1"},
            {"role": "tool", "content": "30 - 12 = 18", "tool_call_id": "c2"},
        ]
        llm(tracer, [system, user, asked, *results], {"role": "assistant", "content": answer})


# -- the turn ---------------------------------------------------------------------------------------------------


def test_agent_turn_is_one_record_with_every_tool_result_in_call_order(tp):
    """A turn with two tool calls is one record: the user's question, the final answer, both results with their tool."""
    agent_turn(tp.get_tracer("t"))
    [result] = build_all(tp)
    rec = result.record
    assert rec is not None and rec.question == QUESTION and rec.answer == ANSWER
    assert [(c.content, c.tool, c.origin) for c in rec.contexts] == [
        (DOC, "search", "tool"),
        ("30 - 12 = 18", "calculator", "tool"),
    ]
    assert rec.call_id is None
    assert rec.attributes["unit"] == "turn" and rec.attributes["context_source"] == "tool"
    assert rec.attributes["turn.tool_calls"] == 2 and rec.attributes["question.source"] == "llm"


def test_a_tools_retrieved_documents_stand_for_its_joined_output(tp):
    """A retriever under a tool span gives the documents (ids, provenance), not the tool's joined text."""
    agent_turn(tp.get_tracer("t"), search_docs=(DOC, "Shipping policy: orders ship in 2 days."))
    rec = build_all(tp)[0].record
    assert rec is not None
    assert [(c.content, c.id, c.tool, c.origin) for c in rec.contexts] == [
        (DOC, "d0", "search", "retriever"),
        ("Shipping policy: orders ship in 2 days.", "d1", "search", "retriever"),
        ("30 - 12 = 18", None, "calculator", "tool"),
    ]
    assert rec.attributes["context_source"] == "retriever+tool"


def test_tool_results_come_in_message_order_when_parallel_tools_end_out_of_order(tp):
    """Parallel tool calls may end in any order: contexts follow the order the model was given the results."""
    t = tp.get_tracer("t")
    user = {"role": "user", "content": QUESTION}
    asked = {"role": "assistant", "tool_calls": [call("c1", "search"), call("c2", "calculator")]}
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [user], asked)
        tool(t, "calculator", "30 - 12 = 18")  # ended first
        tool(t, "search", DOC)
        results = [
            {"role": "tool", "content": DOC, "tool_call_id": "c1", "name": "search"},
            {"role": "tool", "content": "30 - 12 = 18", "tool_call_id": "c2", "name": "calculator"},
        ]
        llm(t, [user, asked, *results], {"role": "assistant", "content": ANSWER})
    rec = build_all(tp)[0].record
    assert rec is not None and [c.tool for c in rec.contexts] == ["search", "calculator"]


def test_tool_results_in_messages_alone_ground_the_turn(tp):
    """Model calls traced, tools not: the role-tool messages are the grounding, named from the assistant's calls."""
    t = tp.get_tracer("t")
    user = {"role": "user", "content": QUESTION}
    asked = {"role": "assistant", "tool_calls": [call("c1", "search")]}
    with t.start_as_current_span("request"):
        llm(t, [user], asked)
        llm(
            t,
            [user, asked, {"role": "tool", "content": DOC, "tool_call_id": "c1"}],
            {"role": "assistant", "content": ANSWER},
        )
    rec = build_all(tp)[0].record
    assert rec is not None and rec.answer == ANSWER and rec.question == QUESTION
    assert [(c.content, c.tool, c.tool_call_id) for c in rec.contexts] == [(DOC, "search", "c1")]


def test_second_turn_of_a_conversation_has_its_own_question_and_tool_results_only(tp):
    """Turn 2's model input holds turn 1's history: its record has turn 2's question and only turn 2's results."""
    t = tp.get_tracer("t")
    first = [
        {"role": "user", "content": "What is the refund window?"},
        {"role": "assistant", "tool_calls": [call("c1", "search")]},
        {"role": "tool", "content": DOC, "tool_call_id": "c1"},
        {"role": "assistant", "content": "30 days."},
    ]
    user2 = {"role": "user", "content": "And the warranty?"}
    asked = {"role": "assistant", "tool_calls": [call("c2", "search")]}
    warranty = "Warranty policy: hardware carries a 2-year limited warranty."
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [*first, user2], asked)
        tool(t, "search", warranty)
        llm(
            t,
            [*first, user2, asked, {"role": "tool", "content": warranty, "tool_call_id": "c2"}],
            {"role": "assistant", "content": "Two years."},
        )
    rec = build_all(tp)[0].record
    assert rec is not None and rec.question == "And the warranty?" and rec.answer == "Two years."
    assert [c.content for c in rec.contexts] == [warranty]


def test_two_turns_under_one_session_span_are_two_records(tp):
    """Two agent turns in one trace (a session span around both) are two records, each with its own call id."""
    t = tp.get_tracer("t")
    with t.start_as_current_span("session"):
        agent_turn(t, "First question?", "First answer.")
        agent_turn(t, "Second question?", "Second answer.")
    results = build_all(tp)
    assert [(r.record.question, r.record.answer) for r in results] == [
        ("First question?", "First answer."),
        ("Second question?", "Second answer."),
    ]
    assert len({r.record.call_id for r in results}) == 2 and all(r.calls == 2 for r in results)


def test_query_engine_synthesis_inside_a_tool_is_neither_answer_nor_evidence(tp):
    """A tool that retrieves and synthesises: its documents ground the turn; its synthesis is not a record."""
    t = tp.get_tracer("t")
    user = {"role": "user", "content": QUESTION}
    asked = {"role": "assistant", "tool_calls": [call("c1", "policy_search")]}
    synthesis = "The refund window is thirty days (synthesised)."
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        llm(t, [user], asked)
        with t.start_as_current_span("QueryEngineTool") as s:
            s.set_attribute("openinference.span.kind", "TOOL")
            s.set_attribute("tool.name", "policy_search")
            s.set_attribute("output.value", synthesis)
            with t.start_as_current_span("query") as q:
                q.set_attribute("openinference.span.kind", "CHAIN")
                q.set_attribute("input.value", "refund window")
                q.set_attribute("output.value", synthesis)
                with t.start_as_current_span("retrieve") as r:
                    r.set_attribute("openinference.span.kind", "RETRIEVER")
                    r.set_attribute("retrieval.documents.0.document.content", DOC)
                llm(
                    t,
                    [{"role": "user", "content": "Context: ... Query: refund window"}],
                    {"role": "assistant", "content": synthesis},
                )
        llm(
            t,
            [user, asked, {"role": "tool", "content": synthesis, "tool_call_id": "c1"}],
            {"role": "assistant", "content": ANSWER},
        )
    [result] = build_all(tp)
    rec = result.record
    assert rec is not None and rec.answer == ANSWER and rec.question == QUESTION
    assert [(c.content, c.tool) for c in rec.contexts] == [(DOC, "policy_search")]


def test_react_answer_step_and_observations(tp):
    """ReAct text: the action step is not an answer, the observation is a tool result, the answer is read after its marker."""
    t = tp.get_tracer("t")
    system = {"role": "system", "content": "You have tools: search."}
    user = {"role": "user", "content": QUESTION}
    step = {
        "role": "assistant",
        "content": 'Thought: I need the policy.\nAction: search\nAction Input: {"input": "refunds"}',
    }
    with t.start_as_current_span("ReActAgent.run") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("output.value", "StopEvent(result=AgentOutput(response=ChatMessage(... cut")
        llm(t, [system, user], step)
        tool(t, "search", DOC)
        llm(
            t,
            [system, user, step, {"role": "user", "content": f"Observation: {DOC}"}],
            {"role": "assistant", "content": f"Thought: I can answer.\nAnswer: {ANSWER}"},
        )
    rec = build_all(tp)[0].record
    assert rec is not None and rec.question == QUESTION and rec.answer == ANSWER
    assert [(c.content, c.tool) for c in rec.contexts] == [(DOC, "search")]


def test_genai_agent_spans_and_tool_call_response_parts(tp):
    """OTel GenAI: invoke_agent / chat / execute_tool spans; results as tool_call_response parts, ids matched."""
    t = tp.get_tracer("t")
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    asked = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "search", "arguments": {"q": "refund"}}],
    }
    with t.start_as_current_span("invoke_agent helper") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with t.start_as_current_span("chat m") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.input.messages", json.dumps([user]))
            c.set_attribute("gen_ai.output.messages", json.dumps([asked]))
        with t.start_as_current_span("execute_tool search") as s:
            s.set_attribute("gen_ai.operation.name", "execute_tool")
            s.set_attribute("gen_ai.tool.name", "search")
            s.set_attribute("gen_ai.tool.call.id", "call_1")
            s.set_attribute("gen_ai.tool.call.result", DOC)
        with t.start_as_current_span("chat m") as c:
            c.set_attribute("gen_ai.operation.name", "chat")
            c.set_attribute("gen_ai.request.model", "m-1")
            response = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": DOC}]}
            c.set_attribute("gen_ai.input.messages", json.dumps([user, asked, response]))
            c.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]),
            )
    rec = build_all(tp)[0].record
    assert rec is not None and (rec.question, rec.answer) == (QUESTION, ANSWER)
    assert [(c.content, c.tool, c.tool_call_id) for c in rec.contexts] == [(DOC, "search", "call_1")]
    assert rec.convention == "gen_ai" and rec.slices.get("model") == "m-1"


def test_tool_traced_as_a_retriever_gives_its_documents_once(tp):
    """A tool traced as a RETRIEVER span: its documents (ids, tool name), not also the JSON message holding them."""
    t = tp.get_tracer("t")
    user = {"role": "user", "content": QUESTION}
    asked = {"role": "assistant", "tool_calls": [call("c1", "search_policies")]}
    docs = [
        {"id": "doc-1", "content": DOC, "score": 0.9},
        {"id": "doc-2", "content": 'Say "hi"\nto staff.', "score": 0.4},
    ]
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [user], asked)
        with t.start_as_current_span("search_policies") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            for i, d in enumerate(docs):
                r.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
                r.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
        result = {"role": "tool", "content": json.dumps(docs), "tool_call_id": "c1"}
        llm(t, [user, asked, result], {"role": "assistant", "content": ANSWER})
    rec = build_all(tp)[0].record
    assert rec is not None and rec.question == QUESTION
    assert [(c.content, c.id, c.tool) for c in rec.contexts] == [
        (DOC, "doc-1", "search_policies"),
        ('Say "hi"\nto staff.', "doc-2", "search_policies"),
    ]


# -- no record, and why ----------------------------------------------------------------------------------------


def test_turn_without_tool_or_retrieval_is_ungrounded(tp):
    """An agent that answers without calling any tool is no record: reason ungrounded_turn."""
    t = tp.get_tracer("t")
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [{"role": "user", "content": "Hi"}], {"role": "assistant", "content": "Hello!"})
    [result] = build_all(tp)
    assert result.record is None and result.reason == "ungrounded_turn" and result.had_answer


def test_turn_ending_on_a_tool_call_has_no_answer(tp):
    """A turn whose last model step asks for a tool (an error cut it short) is no record: reason no_answer."""
    t = tp.get_tracer("t")
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [{"role": "user", "content": QUESTION}], {"role": "assistant", "tool_calls": [call("c1", "search")]})
        tool(t, "search", DOC)
    [result] = build_all(tp)
    assert result.record is None and result.reason == "no_answer"


def test_trace_without_any_known_span_is_not_llm(tp):
    """A trace with no model call, retriever or tool span (a health check) is counted not_llm."""
    with tp.get_tracer("t").start_as_current_span("GET /health"):
        pass
    [result] = build_all(tp)
    assert result.record is None and result.reason == "not_llm"


def test_prompt_opt_in_still_prefers_tool_results(tp):
    """With CONTEXT_FROM_PROMPT the tool results are the context; the system prompt only when nothing else grounds."""
    agent_turn(tp.get_tracer("t"))
    rec = build_all(tp, CollectorSettings(context_from_prompt=True))[0].record
    assert rec is not None and [c.origin for c in rec.contexts] == ["tool", "tool"]


def test_not_recorded_turns_are_counted_by_reason_and_logged_with_the_trace(tp):
    """The pipeline counts a turn without a record by reason and logs it with the trace id and what would change it."""
    registry = CollectorRegistry()
    pipe = TracePipeline(CollectorSettings(late_span_wait_s=0.0), sink=MemorySink(), metrics=get_metrics(registry))
    t = tp.get_tracer("t")
    with t.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        llm(t, [{"role": "user", "content": "Hi"}], {"role": "assistant", "content": "Hello!"})
    for s in tp.exporter.get_finished_spans():  # type: ignore[attr-defined]
        pipe.add_span(s)
    with capture_logs() as logs:
        pipe.pop_complete(flush=True)
    value = registry.get_sample_value("claimwatch_collector_not_recorded_total", {"reason": "ungrounded_turn"})
    assert value == 1
    [line] = [e for e in logs if e.get("event") == "collector_not_recorded"]
    assert line["reason"] == "ungrounded_turn" and len(line["trace_id"]) == 32
    assert "CLAIMWATCH_CONTEXT_FROM_PROMPT" in line["hint"]


def test_records_are_counted_by_unit_and_grounding(tp):
    """Every record built is counted by unit (call / turn) and context source."""
    registry = CollectorRegistry()
    sink = MemorySink()
    pipe = TracePipeline(CollectorSettings(late_span_wait_s=0.0), sink=sink, metrics=get_metrics(registry))
    agent_turn(tp.get_tracer("t"), search_docs=(DOC,))
    for s in tp.exporter.get_finished_spans():  # type: ignore[attr-defined]
        pipe.add_span(s)
    pipe.pop_complete(flush=True)
    labels = {"unit": "turn", "context_source": "retriever+tool"}
    assert registry.get_sample_value("claimwatch_collector_records_total", labels) == 1
    assert len(sink.records) == 1


# -- the pieces ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Thought: need data.\nAction: search\nAction Input: {"q": "x"}', react.Step(action="search")),
        ("Thought: done.\nAnswer: Thirty days.", react.Step(answer="Thirty days.")),
        ("Thought: done.\nFinal Answer: Thirty days.\nMore.", react.Step(answer="Thirty days.\nMore.")),
        ("Answer: plain text that merely starts with a marker.", None),
        ("The answer is thirty days.", None),
        ("Thought: I think.\nAction: search", None),  # no Action Input: not a tool request
    ],
)
def test_react_parse(text, expected):
    """ReAct is read only with a Thought line and a marker; an action needs its input line."""
    assert react.parse(text) == expected


def test_turn_input_skips_observations_and_earlier_turns():
    """The turn starts at the last real user message; observations after an action are tool results."""
    messages = [
        msgs.Message("system", "tools: search"),
        msgs.Message("user", "old question"),
        msgs.Message("tool", "old result", tool_call_id="a"),
        msgs.Message("user", "new question"),
        msgs.Message("assistant", "Thought: t\nAction: search\nAction Input: {}"),
        msgs.Message("user", "Observation: fresh result"),
    ]
    turn = msgs.turn_input(messages)
    assert turn.user_text == "new question"
    assert turn.tool_results == (msgs.ToolResult(None, "search", "fresh result"),)
    assert turn.system == ("tools: search",)


def test_turn_output_tool_calls_are_not_answers():
    """An output with tool calls is a step, even with text beside the calls (Anthropic-style preambles)."""
    out = msgs.turn_output([msgs.Message("assistant", "Let me look.", tool_calls=(msgs.ToolCall("c", "search"),))])
    assert out.is_tool_step
    assert not msgs.turn_output([msgs.Message("assistant", "Done.")]).is_tool_step


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"type": "tool", "data": {"content": "30 - 12 = 18", "tool_call_id": "c1"}}', ("30 - 12 = 18", "c1")),
        (
            '{"output": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"], '
            '"kwargs": {"content": "18", "tool_call_id": "c2"}}, "kwargs": {"tags": []}}',
            ("18", "c2"),
        ),
        (
            '{"blocks": [{"text": "A-1042 shipped"}], "tool_name": "order_lookup", "raw_output": "x"}',
            ("A-1042 shipped", None),
        ),
        ('"a JSON-encoded string"', ("a JSON-encoded string", None)),
        ("plain text result", ("plain text result", None)),
        ('{"temperature": 21}', ('{"temperature": 21}', None)),  # a returned object: kept as the model got it
    ],
)
def test_tool_outputs_read_as_the_model_received_them(value, expected):
    """LangChain ToolMessage JSON (also Traceloop-wrapped), LlamaIndex ToolOutput, JSON strings and plain text."""
    from collector.conventions.text import tool_output

    assert tool_output(value) == expected
