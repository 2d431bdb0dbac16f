"""Agent turns (issue 42): LangGraph ``create_react_agent`` and LangChain ``create_agent``, traced by OpenInference.

One record per agent turn: the user's message, the final answer, and every tool / retrieval result the answering
model was given in that turn (call order, deduplicated by content, with the tool name and document ids). Each row
runs on both builders; the ground truth is what the app saw (``tests.conformance.agent_flows_langchain``).
"""

from __future__ import annotations

import pytest

from tests.conformance.harness import assert_turns, need

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("langchain_core")
    need("numpy")  # DeterministicFakeEmbedding
    need("openinference.instrumentation.langchain")


@pytest.fixture(params=["langgraph", "langchain"])
def builder(request) -> str:
    """The agent builder: LangGraph's prebuilt ReAct agent, or LangChain 1.x's ``create_agent``."""
    from tests.conformance.agent_flows_langchain import BUILDER_MODULES

    need(BUILDER_MODULES[request.param])
    return request.param


def test_agent_retriever_tool_one_call(capture, builder):
    """A retriever tool called once: one record, the tool's documents as contexts with tool name and document ids."""
    from tests.conformance.agent_flows_langchain import run_retriever_tool_one_call

    seen = run_retriever_tool_one_call(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_retriever_tool_two_calls(capture, builder):
    """A retriever tool called twice in one turn: one record, call 1's then call 2's documents, each content once."""
    from tests.conformance.agent_flows_langchain import run_retriever_tool_two_calls

    seen = run_retriever_tool_two_calls(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_search_tool_text(capture, builder):
    """A plain @tool that searches the store itself: one record whose one context is exactly the tool's text."""
    from tests.conformance.agent_flows_langchain import run_search_tool

    seen = run_search_tool(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_search_and_calculator(capture, builder):
    """Search and calculator called in one turn: one record, the search text then the calculator text (call order)."""
    from tests.conformance.agent_flows_langchain import run_search_and_calculator

    seen = run_search_and_calculator(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_multi_turn_thread(capture, builder):
    """Two turns on one checkpointed thread: two records, each with only its own turn's tool result."""
    from tests.conformance.agent_flows_langchain import run_multi_turn

    seen = run_multi_turn(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_multi_turn_one_trace(capture, builder):
    """Two turns on one thread inside one app span (one trace): two records, one per turn, distinct call ids."""
    from tests.conformance.agent_flows_langchain import run_multi_turn_one_trace

    seen = run_multi_turn_one_trace(capture, builder)
    records = capture.records()
    assert_turns(records, seen.turns)
    assert {r.trace_id for r in records} == {seen.extra["app_trace_id"]}, "the records are not in the app's one trace"
    call_ids = [r.call_id for r in records]
    assert None not in call_ids and len(set(call_ids)) == len(call_ids), f"call ids: {call_ids}"


def test_agent_calculator_only(capture, builder):
    """Only a calculator called (no retrieval): one record whose context is the calculator's returned text."""
    from tests.conformance.agent_flows_langchain import run_calculator_only

    seen = run_calculator_only(capture, builder)
    assert_turns(capture.records(), seen.turns)


def test_agent_no_tool_no_record(capture, builder):
    """The model answers directly, no tool call: no record (nothing grounds the answer)."""
    from tests.conformance.agent_flows_langchain import run_no_tool

    seen = run_no_tool(capture, builder)
    assert seen.turns == []
    records = capture.records()
    assert records == [], f"expected no record, got {[(r.question, r.answer) for r in records]}"
