"""Agent turns traced by Traceloop's LangChain instrumentation (``opentelemetry-instrumentation-langchain``).

The same LangGraph and LangChain agents as ``test_agents_langchain.py`` (OpenInference), read from Traceloop's
spans: ``traceloop.span.kind`` workflow/task/tool, tool results in ``traceloop.entity.output`` (the ``ToolMessage``
wrapped in ``{"output": ..}``), chat spans read as OTel GenAI. One record per turn, exact (Traceloop writes no
document ids, so ids are not compared).
"""

from __future__ import annotations

import pytest

from tests.conformance.harness import assert_turns, need

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("langchain_core")
    need("numpy")
    need("opentelemetry.instrumentation.langchain")


@pytest.fixture(params=["langgraph:traceloop", "langchain:traceloop"])
def builder(request) -> str:
    """The agent builder, traced by Traceloop."""
    from tests.conformance.agent_flows_langchain import BUILDER_MODULES

    need(BUILDER_MODULES[request.param.partition(":")[0]])
    return request.param


@pytest.mark.parametrize("row", ["retriever_tool_two_calls", "search_tool", "search_and_calculator", "multi_turn"])
def test_traceloop_agent_turns(capture, builder, row):
    """Retriever tool (2 calls), a plain @tool, search + calculator, a 2-turn thread: each turn one exact record."""
    from tests.conformance.agent_flows_langchain import ROWS

    seen = ROWS[row](capture, builder)
    assert_turns(capture.records(), seen.turns, ids=False)  # Traceloop writes no document ids
