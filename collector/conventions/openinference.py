"""OpenInference (``openinference.span.kind``): LangChain/LangGraph, LlamaIndex, OpenAI Agents SDK and others.

- RETRIEVER: the query in ``input.value``, documents in ``retrieval.documents.{i}.document.{id,content,score,metadata}``;
- LLM: ``llm.input_messages`` / ``llm.output_messages`` (``.message.{role,content,tool_call_id,name}``, tool calls
  in ``.message.tool_calls.{j}.tool_call.{id,function.name}``), ``llm.model_name``;
- TOOL: ``tool.name``, the call id (``tool_call.id`` where the instrumentation sets it), the tool's input in
  ``input.value`` and its result in ``output.value`` (LangChain: the ``ToolMessage`` as JSON);
- CHAIN / AGENT: ``input.value`` / ``output.value``.
"""

from __future__ import annotations

from typing import Any, Mapping

from collector.conventions import messages as msgs
from collector.conventions.facts import AGENT, CHAIN, LLM, OTHER, RETRIEVER, TOOL, SpanFacts
from collector.conventions.text import (
    as_str,
    documents,
    ids_from_output,
    indexed,
    indexed_many,
    maybe_json,
    tool_output,
    unwrap_text,
)

KIND = "openinference.span.kind"
DOC_PREFIX = "retrieval.documents."
_KINDS = {"RETRIEVER": RETRIEVER, "LLM": LLM, "CHAIN": CHAIN, "AGENT": AGENT, "TOOL": TOOL}
#: where instrumentations put a tool span's call id (OpenInference has no single attribute for it)
_TOOL_CALL_ID_KEYS = ("tool_call.id", "tool.id", "tool_call_id")


class OpenInferenceReader:
    """Reads spans carrying ``openinference.span.kind`` (and retrievers that lost it to the attribute limit)."""

    name = "openinference"

    def matches(self, attrs: Mapping[str, Any], facts: SpanFacts) -> bool:
        # the SDK evicts the *oldest* attributes past its count limit (span kind and query first): the documents
        # left still make it an OpenInference retriever (the record is flagged incomplete)
        return KIND in attrs or (bool(facts.dropped_attributes) and any(k.startswith(DOC_PREFIX) for k in attrs))

    def read(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.convention = self.name
        f.kind = _KINDS.get(str(attrs.get(KIND, "RETRIEVER")).upper(), OTHER)
        if f.kind == RETRIEVER:
            self._retriever(f, attrs)
        elif f.kind == LLM:
            self._llm(f, attrs)
        elif f.kind == TOOL:
            f.tool_name = as_str(attrs.get("tool.name")) or f.name
            f.output_text, call_id = tool_output(attrs.get("output.value"))
            f.tool_call_id = next((as_str(attrs[k]) for k in _TOOL_CALL_ID_KEYS if attrs.get(k)), call_id)
            f.input_text = unwrap_text(attrs.get("input.value"), question=True)
        elif f.kind in (CHAIN, AGENT):
            f.input_text = unwrap_text(attrs.get("input.value"), question=True)
            f.output_text = unwrap_text(attrs.get("output.value"), question=False)

    def _retriever(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.input_text = unwrap_text(attrs.get("input.value"), question=True)
        f.tool_name = as_str(attrs.get("tool.name"))  # a tool traced as a retriever (tool_span_kinds)
        ctxs, missing = documents(
            (d.get("document.content"), d.get("document.id"), d.get("document.score"), d.get("document.metadata"))
            for _, d in indexed(attrs, "retrieval.documents")
        )
        f.missing_content += missing
        if ctxs and any(c.id is None for c in ctxs):
            ids_from_output(ctxs, attrs.get("output.value"))
        f.contexts = tuple(ctxs)

    def _llm(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.model = as_str(attrs.get("llm.model_name"))
        groups = indexed_many(attrs, ("llm.input_messages", "llm.output_messages"))
        out = msgs.turn_output(msgs.from_groups(groups["llm.output_messages"], "message."))
        if out.text is None and not out.tool_calls:
            out = msgs.output_of(unwrap_text(attrs.get("output.value"), question=False), _output_value_calls(attrs))
        f.output_text = None if out.is_tool_step else out.text
        f.tool_calls = out.tool_calls
        current = msgs.current_turn(groups["llm.input_messages"], "message.", since_last_step=out.is_tool_step)
        turn = msgs.turn_input(msgs.from_groups(current, "message."))
        f.input_text = turn.user_text or unwrap_text(attrs.get("input.value"), question=True)
        f.tool_results = turn.tool_results
        f.prompt_context = turn.system


def _output_value_calls(attrs: Mapping[str, Any]) -> tuple[msgs.ToolCall, ...]:
    """Tool calls in an LLM span's ``output.value`` JSON when its output messages are absent (OpenAI Responses
    ``output`` items of type ``function_call``, chat ``tool_calls``)."""
    raw = attrs.get("output.value")
    parsed = maybe_json(raw) if isinstance(raw, str) else None
    if not isinstance(parsed, Mapping):
        return ()
    items = parsed.get("output")
    calls: list[msgs.ToolCall] = []
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            calls.append(msgs.ToolCall(as_str(item.get("call_id") or item.get("id")), as_str(item.get("name"))))
    for choice in parsed.get("choices") or ():
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if isinstance(message, Mapping):
            calls.extend(c for m in msgs.from_json([message]) for c in m.tool_calls)
    return tuple(calls)
