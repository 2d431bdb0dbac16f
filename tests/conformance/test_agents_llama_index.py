"""LlamaIndex agent turns (issue 42): OpenInference on FunctionAgent / ReActAgent with QueryEngineTool / FunctionTool."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conformance.harness import assert_turns, need

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("llama_index.core")
    need("llama_index.core.agent.workflow")
    need("openinference.instrumentation.llama_index")


def _run(capture, row: str):
    """Run the row; check the flow itself went as scripted (so a failure below is about the records)."""
    from tests.conformance.agent_flows_llama_index import ROWS, SCRIPTED

    seen = ROWS[row](capture)
    answer, calls = SCRIPTED[row]
    print("ground truth:", json.dumps([dataclasses.asdict(t) for t in seen.turns], indent=1))
    assert len(seen.turns) == 1 and seen.turns[0].contexts, "the flow saw no grounded turn"
    assert seen.turns[0].answer == answer, f"the agent answered {seen.turns[0].answer!r}"
    assert len(seen.extra["tool_calls"]) == calls, f"the agent made {len(seen.extra['tool_calls'])} tool call(s)"
    return seen


def test_function_agent_query_engine_one_call(capture):
    """FunctionAgent, one QueryEngineTool call: one record, the call's retrieved nodes as contexts (tool, node id)."""
    seen = _run(capture, "function_agent_query_engine_one")
    assert_turns(capture.records(), seen.turns)


def test_function_agent_query_engine_two_calls(capture):
    """FunctionAgent, two QueryEngineTool calls: one record, both calls' nodes in call order, deduplicated."""
    seen = _run(capture, "function_agent_query_engine_two")
    assert_turns(capture.records(), seen.turns)


def test_function_agent_function_tool(capture):
    """FunctionAgent, one FunctionTool call: one record, the tool's returned text as the context."""
    seen = _run(capture, "function_agent_function_tool")
    assert_turns(capture.records(), seen.turns)


def test_function_agent_function_tool_two_calls(capture):
    """FunctionAgent, one FunctionTool called twice (different args): one record, both returned texts in call order."""
    seen = _run(capture, "function_agent_function_tool_two")
    assert_turns(capture.records(), seen.turns)


def test_react_agent_query_engine_one_call(capture):
    """ReActAgent, one QueryEngineTool action: one record, answer after "Answer:", the call's nodes as contexts."""
    seen = _run(capture, "react_agent_query_engine_one")
    assert_turns(capture.records(), seen.turns)


def test_react_agent_query_engine_two_calls(capture):
    """ReActAgent, two QueryEngineTool actions: one record, both calls' nodes in call order, deduplicated."""
    seen = _run(capture, "react_agent_query_engine_two")
    assert_turns(capture.records(), seen.turns)


def test_react_agent_function_tool(capture):
    """ReActAgent, one FunctionTool action: one record, the tool's returned text as the context."""
    seen = _run(capture, "react_agent_function_tool")
    assert_turns(capture.records(), seen.turns)


def test_react_agent_function_tool_two_calls(capture):
    """ReActAgent, one FunctionTool called twice (different args): one record, both returned texts in call order."""
    seen = _run(capture, "react_agent_function_tool_two")
    assert_turns(capture.records(), seen.turns)
