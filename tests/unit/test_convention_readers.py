"""Each convention reader on its own, through the one ``Reader`` interface: its declared predicate picks its spans,
``read`` fills ``SpanFacts`` from attributes alone (no span, no trace, no other reader)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from collector.conventions import READERS, SpanFacts
from collector.conventions.facts import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from collector.conventions.genai import GenAIReader
from collector.conventions.openinference import OpenInferenceReader
from collector.conventions.traceloop import TraceloopReader, VectorDbEventsReader


def blank(**kw: Any) -> SpanFacts:
    return SpanFacts(span_id=1, parent_id=None, is_root=True, name=kw.pop("name", "span"), start_ns=0, end_ns=1, **kw)


def read(reader: Any, attrs: dict[str, Any], **kw: Any) -> SpanFacts:
    f = blank(**kw)
    assert reader.matches(attrs, f), f"{reader.name} should match {sorted(attrs)}"
    reader.read(f, attrs)
    assert f.convention == reader.name
    return f


#: one span of each convention, and the reader the declared table must choose for it
SPANS = [
    ({"openinference.span.kind": "RETRIEVER", "input.value": "q"}, "openinference"),
    ({"traceloop.span.kind": "task", "gen_ai.operation.name": "execute_task"}, "traceloop"),
    ({"traceloop.span.kind": "workflow"}, "traceloop"),
    # Traceloop's chat spans carry its kind too, but are GenAI chat spans
    ({"traceloop.span.kind": "llm", "gen_ai.operation.name": "chat"}, "gen_ai"),
    ({"gen_ai.operation.name": "chat"}, "gen_ai"),
    ({"gen_ai.prompt.0.content": "hi"}, "gen_ai"),
]


@pytest.mark.parametrize(("attrs", "expected"), SPANS)
def test_the_table_chooses_one_reader_by_its_predicate(attrs, expected):
    """The first reader of READERS whose predicate matches is the convention's own."""
    chosen = next((r for r in READERS if r.matches(attrs, blank())), None)
    assert chosen is not None and chosen.name == expected


def test_no_reader_takes_a_span_of_no_convention():
    """An HTTP span with none of the conventions' attributes is read by no reader."""
    attrs = {"http.method": "GET", "http.route": "/search"}
    assert not [r.name for r in READERS if r.matches(attrs, blank())]


def test_every_reader_has_the_interface():
    """Each declared reader has a name, a predicate and a read (the Reader protocol)."""
    for r in READERS:
        assert isinstance(r.name, str) and callable(r.matches) and callable(r.read)


# -- OpenInference ---------------------------------------------------------------------------------------------
def test_openinference_retriever_documents():
    """A RETRIEVER span: the query and the documents with id, score, in order."""
    attrs = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": "Who founded Acme?",
        "retrieval.documents.0.document.content": "Acme was founded by Ada.",
        "retrieval.documents.0.document.id": "d1",
        "retrieval.documents.0.document.score": 0.9,
        "retrieval.documents.1.document.content": "Acme makes anvils.",
    }
    f = read(OpenInferenceReader(), attrs)
    assert f.kind == RETRIEVER and f.input_text == "Who founded Acme?"
    assert [(c.id, c.content, c.score) for c in f.contexts] == [
        ("d1", "Acme was founded by Ada.", 0.9),
        (None, "Acme makes anvils.", None),
    ]


def test_openinference_retriever_that_lost_its_kind_to_the_attribute_limit():
    """Documents left after the SDK evicted the span kind still make an OpenInference retriever."""
    attrs = {"retrieval.documents.0.document.content": "kept"}
    assert not OpenInferenceReader().matches(attrs, blank())
    f = read(OpenInferenceReader(), attrs, dropped_attributes=3)
    assert f.kind == RETRIEVER and [c.content for c in f.contexts] == ["kept"]


def test_openinference_llm_messages_and_tool_calls():
    """An LLM span asking for a tool: the user's message is the input, the tool call is recorded, no answer."""
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Weather in Paris?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather",
    }
    f = read(OpenInferenceReader(), attrs)
    assert f.kind == LLM and f.model == "gpt-4o" and f.input_text == "Weather in Paris?"
    assert [(c.id, c.name) for c in f.tool_calls] == [("call_1", "weather")] and not f.answers


def test_openinference_tool_span():
    """A TOOL span: the tool's name, its call id and its output."""
    attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": "search",
        "tool_call.id": "call_9",
        "input.value": '{"q": "x"}',
        "output.value": "Paris is the capital of France.",
    }
    f = read(OpenInferenceReader(), attrs)
    assert (f.kind, f.tool_name, f.tool_call_id) == (TOOL, "search", "call_9")
    assert f.output_text == "Paris is the capital of France."


# -- OTel GenAI ------------------------------------------------------------------------------------------------
def test_genai_chat_with_parts():
    """A chat span: the user's text part is the input, the assistant's text part the answer, the response model."""
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.response.model": "claude-sonnet-4-5",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}], "finish_reason": "stop"}]
        ),
    }
    f = read(GenAIReader(), attrs)
    assert (f.kind, f.model, f.input_text, f.output_text) == (LLM, "claude-sonnet-4-5", "Hi?", "Hello.")
    assert f.answers


def test_genai_retrieval_documents_without_content_are_counted():
    """A retrieval span: documents with content become contexts; one with only id and score is counted missing."""
    docs = [{"id": "a", "score": 0.5, "content": "Alpha."}, {"id": "b", "score": 0.4}]
    attrs = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": "alpha?",
        "gen_ai.retrieval.documents": json.dumps(docs),
    }
    f = read(GenAIReader(), attrs)
    assert f.kind == RETRIEVER and [c.content for c in f.contexts] == ["Alpha."] and f.missing_content == 1


def test_genai_execute_tool():
    """An execute_tool span: name, call id and the opt-in result."""
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "calc",
        "gen_ai.tool.call.id": "t1",
        "gen_ai.tool.call.result": "42",
    }
    f = read(GenAIReader(), attrs)
    assert (f.kind, f.tool_name, f.tool_call_id, f.output_text) == (TOOL, "calc", "t1", "42")


def test_genai_invoke_agent_is_an_agent_span():
    """invoke_agent spans are agents (the turn's frame)."""
    assert read(GenAIReader(), {"gen_ai.operation.name": "invoke_agent"}).kind == AGENT


# -- Traceloop -------------------------------------------------------------------------------------------------
def test_traceloop_workflow_input_and_output():
    """A workflow span: its inputs' question and its outputs' answer."""
    attrs = {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.input": json.dumps({"inputs": {"question": "Why?"}}),
        "traceloop.entity.output": json.dumps({"outputs": {"answer": "Because."}}),
    }
    f = read(TraceloopReader(), attrs)
    assert (f.kind, f.input_text, f.output_text) == (CHAIN, "Why?", "Because.")


def test_traceloop_retriever_task_documents():
    """A task whose output is LangChain documents is a retriever with those documents."""
    out = {"documents": [{"page_content": "Doc one.", "metadata": {"id": "x"}}, {"page_content": "Doc two."}]}
    attrs = {
        "traceloop.span.kind": "task",
        "gen_ai.operation.name": "execute_task",
        "traceloop.entity.input": json.dumps({"inputs": {"query": "docs?"}}),
        "traceloop.entity.output": json.dumps(out),
    }
    f = read(TraceloopReader(), attrs)
    assert f.kind == RETRIEVER and [c.content for c in f.contexts] == ["Doc one.", "Doc two."]


def test_traceloop_tool_span_name_from_the_span():
    """A tool span without an entity name takes the span name less ``.tool``."""
    attrs = {"traceloop.span.kind": "tool", "traceloop.entity.output": "sunny"}
    f = read(TraceloopReader(), attrs, name="weather.tool")
    assert (f.kind, f.tool_name, f.output_text) == (TOOL, "weather", "sunny")


@dataclass
class Event:
    name: str
    attributes: dict[str, Any]


def test_vector_db_events_add_contexts_to_any_span():
    """``db.query.result`` events make a span a retriever with their documents (after any other reader)."""
    events = [
        Event("db.query.result", {"db.query.result.document": "Hit one.", "db.query.result.id": "h1"}),
        Event("other", {}),
        Event("db.query.result", {"db.query.result.id": "h2"}),  # no content: counted
    ]
    reader = VectorDbEventsReader()
    f = blank()
    assert reader.matches_events(events) and not reader.matches_events(events[1:2])
    reader.read_events(f, events)
    assert f.kind == RETRIEVER and [c.id for c in f.contexts] == ["h1"] and f.missing_content == 1
