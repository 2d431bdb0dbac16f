"""Grounding: what the answering model was given in one RAG call or agent turn, with provenance.

Sources, primary evidence first:

1. **a tool's retrieved documents**: a retriever span under a tool span (a retriever tool, a query engine used
   as a tool): the documents, with their ids and scores, stand for that tool call; the tool's own output (the
   documents joined, or a query engine's intermediate synthesis) is derived text and is not used;
2. **a tool's result**: the tool span's output (``origin="tool"``), else the role-``tool`` message (or ReAct
   observation) the model was given for that call;
3. **a tool traced as a retriever** (OpenInference ``tool_span_kinds``): the retriever span's documents, with the
   tool's name, instead of the JSON result message that holds them;
4. **tool results in messages only**: results in the model calls' input messages that no tool span carries
   (instrumentations that trace the model calls but not the tools);
5. **retrievers outside any tool**: a classic RAG chain's documents.

Order: retrievers outside tools first (they ran before generation), then tool calls in the order the model was
given their results (the message order: parallel calls may end in any order), then tool spans no message
mentions, by start time. Each text appears once (the first occurrence keeps its provenance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from collector.conventions.facts import LLM, RETRIEVER, TOOL, SpanFacts
from collector.conventions.messages import ToolResult
from collector.conventions.text import maybe_json
from collector.conventions.tree import TraceTree
from contract.record import Context

_TOOL = frozenset({TOOL})


@dataclass
class Grounding:
    """The contexts of one unit and what they came from."""

    contexts: list[Context] = field(default_factory=list)
    #: documents or tool results that carried no text (hidden, ids only)
    missing: int = 0
    #: tool calls seen in the unit (spans or messages)
    tool_calls: int = 0

    @property
    def origins(self) -> list[str]:
        """The distinct ``Context.origin`` values, in a fixed order."""
        have = {c.origin for c in self.contexts}
        return [o for o in ("retriever", "tool", "prompt") if o in have]


@dataclass
class _Call:
    """One tool call: its span (when traced) and/or the result message the model got; ``retriever`` when the tool
    is traced as a retriever span of its own (OpenInference ``tool_span_kinds``)."""

    span: SpanFacts | None = None
    message: ToolResult | None = None
    retriever: SpanFacts | None = None

    @property
    def name(self) -> str | None:
        return (self.span.tool_name if self.span else None) or (self.message.name if self.message else None)

    @property
    def call_id(self) -> str | None:
        return (self.span.tool_call_id if self.span else None) or (self.message.call_id if self.message else None)


def ground(tree: TraceTree, unit: list[SpanFacts]) -> Grounding:
    """The grounding of ``unit`` (the spans of one RAG call or agent turn)."""
    by_start = sorted(unit, key=lambda f: (f.start_ns, f.end_ns))
    tools = [f for f in by_start if f.kind == TOOL and not tree.has_ancestor(f, _TOOL)]
    retrievers = [f for f in by_start if f.kind == RETRIEVER and not tree.has_ancestor(f, _TOOL)]
    calls = _calls(tools, retrievers, _messages(tree, by_start))
    out = Grounding(tool_calls=len(calls))
    seen: set[str] = set()

    def add(ctx: Context) -> None:
        if ctx.content in seen:
            return
        seen.add(ctx.content)
        out.contexts.append(ctx)

    claimed = {c.retriever.span_id for c in calls if c.retriever is not None}
    for f in retrievers:
        out.missing += f.missing_content
        if f.span_id not in claimed:
            for c in f.contexts:
                add(c)
    for call in calls:
        docs = list(call.retriever.contexts) if call.retriever is not None else []
        if call.span is not None:
            below = sorted(
                (f for f in tree.subtree(call.span) if f.kind == RETRIEVER), key=lambda f: (f.start_ns, f.end_ns)
            )
            docs = [c for f in below for c in f.contexts]
            out.missing += sum(f.missing_content for f in below)
        if docs:
            for c in docs:
                add(c.model_copy(update={"tool": call.name, "tool_call_id": call.call_id}))
            continue
        text = (call.span.output_text if call.span is not None else None) or (
            call.message.content if call.message is not None else None
        )
        if text is None:
            out.missing += 1
            continue
        add(Context(content=text, origin="tool", tool=call.name, tool_call_id=call.call_id))
    return out


def _messages(tree: TraceTree, by_start: list[SpanFacts]) -> list[ToolResult]:
    """Tool results in the unit's model calls (not those inside a tool), each once, in the order given."""
    out: list[ToolResult] = []
    seen_ids: set[str] = set()
    seen: set[tuple[str | None, str]] = set()
    for f in by_start:
        if f.kind != LLM or tree.has_ancestor(f, _TOOL):
            continue
        for r in f.tool_results:
            if r.call_id is not None:
                if r.call_id in seen_ids:
                    continue
                seen_ids.add(r.call_id)
            elif (r.name, r.content) in seen:
                continue
            seen.add((r.name, r.content))
            out.append(r)
    return out


def _calls(tools: list[SpanFacts], retrievers: list[SpanFacts], results: list[ToolResult]) -> list[_Call]:
    """Tool calls in the order the model was given their results (see :func:`_tool_span_of` and
    :func:`_retriever_of`); tool spans no result mentions come last, in start order."""
    free = list(tools)
    free_retrievers = [f for f in retrievers if f.contexts]
    calls: list[_Call] = []
    for r in results:
        span = _tool_span_of(r, free)
        if span is not None:
            calls.append(_Call(span=span, message=r))
        else:
            calls.append(_Call(message=r, retriever=_retriever_of(r, free_retrievers)))
    calls.extend(_Call(span=t) for t in free)
    return calls


def _tool_span_of(r: ToolResult, free: list[SpanFacts]) -> SpanFacts | None:
    """Take the tool span that answers ``r`` from ``free``: by call id, else by identical text, else the next one of
    the same tool (names unknown: the next one); never one with a different call id."""

    def compatible(t: SpanFacts) -> bool:
        return t.tool_call_id is None or r.call_id is None or t.tool_call_id == r.call_id

    text = r.content.strip()
    return (
        _take(free, lambda t: r.call_id is not None and t.tool_call_id == r.call_id)
        or _take(free, lambda t: compatible(t) and t.output_text is not None and t.output_text.strip() == text)
        or _take(free, lambda t: compatible(t) and r.name is not None and t.tool_name == r.name)
        or (_take(free, compatible) if r.name is None else None)
    )


def _retriever_of(r: ToolResult, free: list[SpanFacts]) -> SpanFacts | None:
    """Take the retriever span ``r`` came from (a tool traced as a retriever) from ``free``: by the tool's name, else
    the one whose every document ``r`` holds."""
    texts = _texts_in(r.content)
    return _take(free, lambda f: r.name is not None and f.tool_name == r.name) or _take(
        free, lambda f: all(any(c.content in t for t in texts) for c in f.contexts)
    )


def _texts_in(content: str) -> list[str]:
    """``content`` and, when it is JSON, every string in it (documents returned as JSON have escaped text)."""
    out = [content]
    parsed = maybe_json(content)
    stack = [parsed] if parsed is not content else []
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _take(spans: list[SpanFacts], pred: Callable[[SpanFacts], bool]) -> SpanFacts | None:
    for i, t in enumerate(spans):
        if pred(t):
            return spans.pop(i)
    return None
