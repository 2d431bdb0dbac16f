"""Traceloop / OpenLLMetry (``traceloop.span.kind``).

workflow / task / agent / tool spans carry ``traceloop.entity.input`` / ``traceloop.entity.output`` (JSON: a
workflow's ``{"inputs": ..}`` / ``{"outputs": ..}``, a retriever task's ``{"documents": [{"page_content",
"metadata"}]}`` or LlamaIndex nodes); vector DB hits are span events ``db.query.result``. Traceloop spans also
carry ``gen_ai.operation.name`` (``vector_db_retrieve``, ``execute_task``, ``invoke_agent``, ``chat``): its own
task/agent/retriever spans are read here, its chat spans as GenAI (:mod:`collector.conventions.genai`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from collector.conventions.facts import AGENT, CHAIN, LLM, OTHER, RETRIEVER, TOOL, SpanFacts
from collector.conventions.genai import KINDS as GENAI_KINDS
from collector.conventions.genai import OP as GENAI_OP
from collector.conventions.text import (
    as_str,
    contexts_from_documents,
    documents,
    documents_in,
    maybe_json,
    tool_output_text,
    unwrap_text,
)

KIND = "traceloop.span.kind"
_KINDS = {"workflow": CHAIN, "task": CHAIN, "agent": AGENT, "tool": TOOL}
#: gen_ai.operation.name values that Traceloop puts on its own task/retriever spans
_OWN_OPS = frozenset({"vector_db_retrieve", "execute_task", "invoke_agent", "invoke_workflow", "execute_tool"})


class TraceloopReader:
    """Reads Traceloop's own spans (not its chat spans, which the GenAI reader takes)."""

    name = "traceloop"

    def matches(self, attrs: Mapping[str, Any], facts: SpanFacts) -> bool:
        op = str(attrs.get(GENAI_OP, "")).lower()
        return KIND in attrs and (op in _OWN_OPS or GENAI_KINDS.get(op) != LLM)

    def read(self, f: SpanFacts, attrs: Mapping[str, Any]) -> None:
        f.convention = self.name
        op = str(attrs.get(GENAI_OP, "")).lower()
        raw_out = attrs.get("traceloop.entity.output")
        docs = documents_in(maybe_json(raw_out)) if isinstance(raw_out, str) else None
        if op == "vector_db_retrieve" or docs is not None:
            f.kind = RETRIEVER
            f.input_text = unwrap_text(attrs.get("traceloop.entity.input"), question=True)
            ctxs, missing = contexts_from_documents(docs or [])
            f.contexts, f.missing_content = tuple(ctxs), missing
            return
        f.kind = _KINDS.get(str(attrs.get(KIND, "")).lower(), OTHER)
        if f.kind == TOOL:
            f.tool_name = as_str(attrs.get("traceloop.entity.name")) or f.name.removesuffix(".tool")
            f.input_text = unwrap_text(attrs.get("traceloop.entity.input"), question=True)
            f.output_text = tool_output_text(raw_out)
        elif f.kind in (CHAIN, AGENT):
            f.input_text = unwrap_text(attrs.get("traceloop.entity.input"), question=True)
            f.output_text = unwrap_text(raw_out, question=False)


class VectorDbEventsReader:
    """Vector DB hits as span events ``db.query.result`` (Traceloop's vector store instrumentations); applied after
    any other reader, on any span."""

    name = "traceloop"

    def matches_events(self, events: Iterable[Any]) -> bool:
        return any(getattr(e, "name", None) == "db.query.result" for e in events)

    def read_events(self, f: SpanFacts, events: Iterable[Any]) -> None:
        key = "db.query.result."
        results = [e.attributes or {} for e in events if e.name == "db.query.result"]
        ctxs, missing = documents(
            (a.get(key + "document"), a.get(key + "id"), a.get(key + "score"), a.get(key + "metadata")) for a in results
        )
        f.missing_content += missing
        f.contexts = (*f.contexts, *ctxs)
        f.kind = RETRIEVER
        f.convention = f.convention or self.name
