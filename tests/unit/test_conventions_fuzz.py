"""The span extractor reads any attribute values an instrumentation (or a hostile client) sends without raising.

A raise there loses the whole span (and so its RAG record): counted ``internal``, but lost. The
keys are the conventions' own (OpenInference, OTel GenAI, Traceloop), the values any type an
OTLP span can carry, including JSON text of any shape, huge integers and odd index keys.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.conventions import SpanExtractor
from collector.otlp import OtlpSpan, SpanEvent, SpanRef, SpanResource, SpanStatus, _StatusCode

#: the slow tier: fuzzing (scripts/test.sh --fast leaves it out)
pytestmark = pytest.mark.slow

KEYS = [
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.model_name",
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.retrieval.documents",
    "gen_ai.retrieval.query.text",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "traceloop.association.properties.model",
    "db.query.result.document",
    "db.query.result.score",
    "service.version",
    "deployment.environment",
    "tool.name",
    "tool_call.id",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.arguments",
]
INDEXED = ["retrieval.documents", "llm.input_messages", "llm.output_messages", "gen_ai.prompt", "gen_ai.completion"]
LEAVES = [
    "document.content",
    "document.score",
    "document.id",
    "document.metadata",
    "message.role",
    "message.content",
    "message.tool_call_id",
    "message.name",
    "message.tool_calls.0.tool_call.id",
    "message.tool_calls.1.tool_call.function.name",
    "tool_calls.0.name",
    "role",
    "content",
]
KINDS = [
    "RETRIEVER",
    "LLM",
    "CHAIN",
    "TOOL",
    "AGENT",
    "retrieval",
    "chat",
    "task",
    "workflow",
    "retriever",
    "llm",
    "tool",
    "agent",
    "execute_tool",
    "invoke_agent",
    "user",
    "tool_call",
    "tool_call_response",
    "Thought: t\nAction: search\nAction Input: {}",
    "Thought: t\nAnswer: a",
    "Observation: o",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()
    | st.text(max_size=30)
    | st.sampled_from(KINDS),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["content", "text", "role", "messages", "args", "kwargs", "documents", "parts", "score"]
                + ["tool_calls", "tool_call_id", "type", "id", "name", "response", "blocks", "tool_name", "data"]
            )
            | st.text(max_size=8),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)
scalars = (
    st.text(max_size=40)
    | st.sampled_from(KINDS)
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()
    | st.booleans()
)
values = scalars | st.lists(scalars, max_size=4) | json_values.map(lambda v: json.dumps(v, allow_nan=True))
index = st.sampled_from(["0", "1", "12", "\u00b2", "\u0663", "-1", "", "x", "00"])
indexed_keys = st.builds(lambda p, i, leaf: f"{p}.{i}.{leaf}", st.sampled_from(INDEXED), index, st.sampled_from(LEAVES))
attributes = st.dictionaries(st.sampled_from(KEYS) | indexed_keys, values, max_size=10)


def _span(attrs: dict, events: list[dict], parent: bool) -> OtlpSpan:
    return OtlpSpan(
        context=SpanRef(1, 2),
        parent=SpanRef(1, 3) if parent else None,
        name="s",
        attributes=attrs,
        events=tuple(
            SpanEvent(name=n, attributes=a) for n, a in zip(["db.query.result", "gen_ai.choice", "x"], events)
        ),
        status=SpanStatus(_StatusCode("UNSET")),
        resource=SpanResource({}),
        start_time=1,
        end_time=2,
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attributes, st.lists(attributes, max_size=3), st.booleans())
def test_extract_never_raises_on_any_attribute_values(attrs: dict, events: list[dict], parent: bool) -> None:
    """Any mix of convention keys and value types extracts to facts, never an exception."""
    SpanExtractor().extract(_span(attrs, events, parent))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(attributes, st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=7))
def test_build_never_raises_on_any_trace(spans: list) -> None:
    """Any set of such spans, any parent links (cycles, self-parents, missing parents), builds or says why not."""
    ex = SpanExtractor()
    facts = []
    for i, (attrs, parent, start) in enumerate(spans, start=1):
        span = dataclasses.replace(
            _span(attrs, [], parent=False),
            context=SpanRef(1, i),
            parent=SpanRef(1, parent) if parent else None,
            start_time=start,
            end_time=start + i,
        )
        facts.append(ex.extract(span))
    for result in ex.build(1, facts):
        assert (result.record is None) == (result.reason != "ok")
