"""Agent turns (issue 42), OpenAI: one record per user turn, contexts = the tool results the answering model got.

(A) OpenAI Agents SDK 0.24 traced by openinference-instrumentation-openai-agents 2.6 (Chat Completions and
Responses models); (B) an OTel GenAI-convention agent: util-genai 1.1b0 ``invoke_agent`` / ``execute_tool``
spans around openai-v2-traced chat completions (``span_only``). Both against the scripted local fake OpenAI
server (tests/conformance/fake_openai.py); flows in agent_flows_openai.py, span dumps via
``python -m tests.conformance.dump_agents_openai OUTDIR``.

Written before the collector supports agent turns: these fail on the record assertions until it does.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from tests.conformance.harness import AgentSeen, assert_turns, need

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("openai")


@pytest.fixture
def agents_sdk():
    need("agents")
    need("openinference.instrumentation.openai_agents")


@pytest.fixture
def genai():
    need("opentelemetry.util.genai.handler")
    need("opentelemetry.instrumentation.openai_v2")


def _run(capture, row: str) -> AgentSeen:
    from tests.conformance.agent_flows_openai import ROWS

    seen = ROWS[row](capture)
    print("ground truth:", json.dumps([asdict(t) for t in seen.turns], indent=1))
    print("tool calls:", json.dumps(seen.extra["tool_calls"], indent=1))
    return seen


@pytest.mark.usefixtures("agents_sdk")
def test_agents_sdk_chat_completions_one_tool(capture):
    """Agents SDK, OpenAIChatCompletionsModel, one search_policies call: one record, the tool's text as context."""
    seen = _run(capture, "agents_chat_one_tool")
    assert_turns(capture.records(), seen.turns)


@pytest.mark.usefixtures("agents_sdk")
def test_agents_sdk_responses_one_tool(capture):
    """Agents SDK, OpenAIResponsesModel, one search_policies call: one record, the tool's text as context."""
    seen = _run(capture, "agents_responses_one_tool")
    assert_turns(capture.records(), seen.turns)


@pytest.mark.usefixtures("agents_sdk")
def test_agents_sdk_two_tool_calls_in_one_turn(capture):
    """Agents SDK, Responses model, two searches in sequence (three model calls): one record, both results in order."""
    seen = _run(capture, "agents_responses_two_searches")
    assert_turns(capture.records(), seen.turns)


@pytest.mark.usefixtures("agents_sdk")
def test_agents_sdk_calculator_beside_search(capture):
    """Agents SDK, Chat Completions model, search and calculator called together: both results, each with its tool."""
    seen = _run(capture, "agents_chat_search_and_calculator")
    assert_turns(capture.records(), seen.turns)


@pytest.mark.usefixtures("agents_sdk")
def test_agents_sdk_retriever_kind_tool(capture):
    """Agents SDK, search_policies mapped to RETRIEVER (tool_span_kinds), returning documents: one record, the
    documents' contents in order as contexts, each with the tool name, document id and score."""
    seen = _run(capture, "agents_chat_retriever_kind_tool")
    records = capture.records()
    assert_turns(records, seen.turns)
    (rec,), (turn,) = records, seen.turns
    scores = [c.score for c in rec.contexts]
    want = [e.score for e in turn.contexts]
    assert all(g is not None and abs(g - w) <= 1e-6 for g, w in zip(scores, want)), f"scores {scores} != {want}"


@pytest.mark.usefixtures("genai")
def test_genai_agent_one_tool(capture):
    """GenAI conventions: invoke_agent > chat (tool call) > execute_tool > chat (answer): one record, the tool result."""
    seen = _run(capture, "genai_agent_one_tool")
    assert_turns(capture.records(), seen.turns)


@pytest.mark.usefixtures("genai")
def test_genai_agent_calculator_beside_search(capture):
    """GenAI conventions, two execute_tool spans from one chat reply: both results in call order, each with its tool."""
    seen = _run(capture, "genai_agent_search_and_calculator")
    assert_turns(capture.records(), seen.turns)
