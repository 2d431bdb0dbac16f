"""OTel GenAI semantic conventions (``gen_ai.operation.name``).

- chat / text_completion / generate_content: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON with
  ``parts``: ``text``, ``tool_call``, ``tool_call_response``) or the legacy ``gen_ai.prompt.{i}.*`` /
  ``gen_ai.completion.{i}.*`` (with ``tool_calls.{j}.{id,name}`` and ``tool_call_id``);
  ``gen_ai.system_instructions``; the model from ``gen_ai.response.model`` / ``gen_ai.request.model``;
- retrieval: ``gen_ai.retrieval.query.text`` and ``gen_ai.retrieval.documents`` (JSON; the schema requires only id
  and score: a document without content is skipped and counted);
- execute_tool: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and the opt-in
  ``gen_ai.tool.call.result``;
- invoke_agent / invoke_workflow: agent spans (messages read as on chat spans, when present).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from collector.conventions import messages as msgs
from collector.conventions.facts import AGENT, CHAIN, LLM, OTHER, RETRIEVER, TOOL, SpanFacts
from collector.conventions.text import (
    as_str,
    maybe_json,
    message_text,
    pick_text,
    retrieved,
    source_of,
    tool_output_text,
    visible,
)

OP = "gen_ai.operation.name"
KINDS = {
    "chat": LLM,
    "text_completion": LLM,
    "generate_content": LLM,
    "completion": LLM,
    "retrieval": RETRIEVER,
    "retrieve": RETRIEVER,
    "invoke_agent": AGENT,
    "create_agent": OTHER,
    "invoke_workflow": CHAIN,
    "execute_task": CHAIN,
    "execute_tool": TOOL,
    "vector_db_retrieve": RETRIEVER,
}
TL_MODEL_KEYS = ("traceloop.association.properties.ls_model_name", "traceloop.association.properties.model")
_UNKNOWN_MODELS = frozenset({"", "unknown", "none", "null"})
_DOC_KEYS = ("content", "text", "document", "page_content")


def structured(value: Any) -> Any:
    """A GenAI messages attribute: JSON text (spans) or already-structured values (log events)."""
    if value is None:
        return None
    if isinstance(value, str):
        return maybe_json(value)
    if isinstance(value, (list, tuple)):
        return [dict(v) if isinstance(v, Mapping) else v for v in value]
    return value


def model_of(attrs: Mapping[str, Any]) -> str | None:
    """GenAI model name; Traceloop's association properties when the GenAI attribute says ``unknown``."""
    for key in ("gen_ai.response.model", "gen_ai.request.model", *TL_MODEL_KEYS):
        value = attrs.get(key)
        if value is not None and str(value).strip().lower() not in _UNKNOWN_MODELS:
            return str(value)
    return None


class GenAIReader:
    """Reads spans carrying ``gen_ai.operation.name`` (or only the legacy prompt/completion attributes)."""

    name = "gen_ai"

    def matches(self, attrs: Mapping[str, Any], facts: SpanFacts) -> bool:
        return OP in attrs or "gen_ai.prompt.0.content" in attrs or "gen_ai.completion.0.content" in attrs

    def read(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.convention = self.name
        op = str(attrs.get(OP, "") or "chat").lower()
        f.kind = KINDS.get(op, OTHER)
        if f.kind == RETRIEVER:
            self._retrieval(f, attrs)
        elif f.kind == TOOL:
            f.tool_name = as_str(attrs.get("gen_ai.tool.name")) or f.name
            f.tool_call_id = as_str(attrs.get("gen_ai.tool.call.id"))
            f.input_text = visible(as_str(attrs.get("gen_ai.tool.call.arguments")))
            f.output_text = _tool_result(attrs.get("gen_ai.tool.call.result"))
        elif f.kind != OTHER:
            self._messages(f, attrs)

    def _retrieval(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.input_text = as_str(attrs.get("gen_ai.retrieval.query.text")) or None
        docs = attrs.get("gen_ai.retrieval.documents")
        parsed = maybe_json(docs) if isinstance(docs, str) else docs
        ctxs = []
        for doc in parsed if isinstance(parsed, (list, tuple)) else ():
            if isinstance(doc, str):
                doc = maybe_json(doc)
            if not isinstance(doc, Mapping):
                continue
            content = next((doc[k] for k in _DOC_KEYS if doc.get(k)), None)
            ctx = retrieved(
                content,
                id=doc.get("id"),
                score=doc.get("score"),
                source=source_of(doc.get("metadata")) or as_str(doc.get("source")),
            )
            if ctx is None:
                f.missing_content += 1
            else:
                ctxs.append(ctx)
        f.contexts = tuple(ctxs)

    def _messages(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.model = model_of(attrs)
        out_raw = structured(attrs.get("gen_ai.output.messages"))
        in_raw = structured(attrs.get("gen_ai.input.messages"))
        out = msgs.turn_output(msgs.from_json(out_raw))
        if out.text is None and not out.tool_calls and out_raw is not None:
            out = msgs.output_of(visible(pick_text(out_raw, question=False)))
        if out.text is None and not out.tool_calls:
            out = msgs.turn_output(msgs.from_indexed(attrs, "gen_ai.completion", ""))
        in_msgs = msgs.from_json(in_raw) or msgs.from_indexed(attrs, "gen_ai.prompt", "")
        turn = msgs.turn_input(in_msgs)
        user = turn.user_text
        if user is None and in_raw is not None and not isinstance(in_raw, list):
            user = visible(pick_text(in_raw, question=True))
        f.output_text = None if out.is_tool_step else out.text
        f.tool_calls = out.tool_calls
        f.input_text = user
        f.tool_results = turn.tool_results
        texts = list(turn.system)
        system = structured(attrs.get("gen_ai.system_instructions"))
        if system is not None:
            parts = system if isinstance(system, list) else [system]
            texts = [
                t
                for t in (
                    message_text(p) if isinstance(p, Mapping) else (p if isinstance(p, str) else None) for p in parts
                )
                if t
            ] + texts
        f.prompt_context = tuple(texts)


def _tool_result(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return tool_output_text(value)
    try:
        return visible(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return visible(str(value))
