"""One trace's span facts -> :class:`RagTrace` records: one per RAG call or agent turn (or the reason there is none).

**The unit.** A RAG call (retrieve, then answer) or an agent turn (one user message; any number of model steps
and tool calls; one final answer). Most traces hold one unit. A trace holding several (an HTTP span around two
chains, a session span around two agent turns) holds disjoint subtrees that each ground *and* answer: each is a
record of its own, built from its own subtree, carrying ``call_id`` (the span heading it).

**The answer** is a model call's final text: not a tool request (an API tool call or a ReAct ``Action:``), not
an intermediate model's output (a model call inside a tool, such as a query engine's synthesis; a second
instrumentation's span nested in the first; a text handed to another model as a tool result). In an agent turn
it is the last such call's output (a ReAct answer read after its marker); in a plain chain the top chain's output
when readable (what the user got), else the last model call's.

**The question** of an agent turn is the user's message of the turn in the answering model call's input (the
agent's root often carries none, or a framework's internal state); of a plain chain, the top chain's input, else
the first retriever's query, else a model call's user message.

**The grounding** is what the answering model was given: :mod:`collector.conventions.grounding`. With none and
``context_from_prompt``, the answering call's system texts.

Traces that give no record say why (:data:`NOT_RECORDED`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from collector.config import CollectorSettings
from collector.conventions.facts import AGENT, CHAIN_LIKE, LLM, RETRIEVER, TOOL, SpanFacts
from collector.conventions.grounding import Grounding, ground
from collector.conventions.tree import TraceTree
from contract.record import AttributeValue, Context, RagTrace

_MAX_SLICE_CHARS = 128

#: why a trace (or one unit of it) gave no record, and what would change it (logged with the count)
NOT_RECORDED: dict[str, str] = {
    "ungrounded_turn": "a final answer with nothing to ground it: no retriever documents, no tool results in the "
    "turn; instrument the retriever or tools, or set CLAIMWATCH_CONTEXT_FROM_PROMPT=true if the documents are in "
    "the system prompt",
    "no_answer": "retrieved documents or tool results but no final answer (the turn ended on a tool call or an "
    "error, or the model's output is not traced: check the LLM instrumentation's content capture)",
    "no_content": "documents or tool results carry no text (ids and scores only, or hidden): make the "
    "instrumentation record content (OpenInference: unset OPENINFERENCE_HIDE_*; OTel GenAI: content capture and "
    "document content; Traceloop: TRACELOOP_TRACE_CONTENT=true)",
    "not_llm": "no model call, retriever or tool span of a known convention (OpenInference, OTel GenAI, Traceloop)",
}


@dataclass(slots=True)
class BuildResult:
    """A unit turned into a record, or the reason it is not one (a key of :data:`NOT_RECORDED`)."""

    record: RagTrace | None
    reason: str  # "ok" or a key of NOT_RECORDED
    error: bool = False
    signals: dict[str, AttributeValue] = field(default_factory=dict)
    missing_content: int = 0
    #: what the unit had (for the "retrieval and generation in separate traces" warning)
    had_retriever: bool = False
    had_answer: bool = False
    #: units found in the trace (each a record of its own when more than one)
    calls: int = 1


def _intermediate(tree: TraceTree) -> set[int]:
    """Model calls whose output is not an answer of the request (see the module docstring)."""
    llms = [f for f in tree.facts if f.kind == LLM]
    handed = [(r.content.strip(), g.start_ns) for g in llms for r in g.tool_results]
    tools = [f for f in tree.facts if f.kind == TOOL and f.output_text]
    out: set[int] = set()
    for f in llms:
        ancestors = tree.ancestors(f)
        # inside a tool; or a second record of a model call whose outer span already carries the output (a span
        # carrying nothing, such as a chat span whose content went to a log event, leaves the inner one the answer)
        if any(a.kind == TOOL or (a.kind == LLM and (a.output_text or a.tool_calls)) for a in ancestors):
            out.add(f.span_id)
            continue
        text = (f.output_text or "").strip()
        if not text:
            continue
        if any(t == text and start >= f.end_ns for t, start in handed) or any(
            (t.output_text or "").strip() == text and t.start_ns <= f.start_ns and f.end_ns <= t.end_ns for t in tools
        ):
            out.add(f.span_id)
    return out


def _heads(tree: TraceTree, intermediate: set[int]) -> list[SpanFacts]:
    """Spans heading one unit each: their subtree grounds and answers, no child's does.

    Grounds: a retriever with documents, a tool span, or (in traces without either) a child model call given tool
    results: a model call alone never heads a unit, its turn's tool steps are its siblings.
    """
    has: dict[int, tuple[bool, bool]] = {}
    heads: list[SpanFacts] = []
    # tool results count where the tool ran; only a trace with no tool or retriever span leaves them to the
    # messages (OpenAI Agents: the next model step sits in another branch than the tool span it was given)
    messages_ground = not any(f.kind == TOOL or (f.kind == RETRIEVER and f.contexts) for f in tree.facts)
    for f in tree.bottom_up():
        kids = tree.children.get(f.span_id, ())
        grounded = (f.kind == RETRIEVER and bool(f.contexts)) or f.kind == TOOL
        grounded = grounded or (messages_ground and any(c.kind == LLM and c.tool_results for c in kids))
        answered = f.answers and f.span_id not in intermediate
        marks = [has[c.span_id] for c in kids if c.span_id in has]
        grounded = grounded or any(g for g, _ in marks)
        answered = answered or any(a for _, a in marks)
        has[f.span_id] = (grounded, answered)
        if grounded and answered and not any(g and a for g, a in marks):
            heads.append(f)
    return heads


class RecordBuilder:
    """Builds the records of one trace (see the module docstring)."""

    def __init__(self, settings: CollectorSettings) -> None:
        self.settings = settings

    def build(self, trace_id: int, facts: list[SpanFacts]) -> list[BuildResult]:
        """One result per unit, in the order the units started (usually one)."""
        tree = TraceTree(facts)
        intermediate = _intermediate(tree)
        heads = _heads(tree, intermediate)
        if len(heads) <= 1:
            scope = tree.subtree(heads[0]) if heads else facts
            return [self._unit(trace_id, tree, facts, scope, intermediate, [])]
        out = []
        for i, head in enumerate(sorted(heads, key=lambda f: (f.start_ns, f.end_ns)), start=1):
            unit = tree.subtree(head)
            result = self._unit(trace_id, tree, unit, unit, intermediate, tree.ancestors(head))
            result.calls = len(heads)
            if result.record is not None:
                result.record.call_id = format(head.span_id, "016x")
                result.record.attributes["rag_calls"] = len(heads)
                result.record.attributes["rag_call"] = i
            out.append(result)
        return out

    def _unit(
        self,
        trace_id: int,
        tree: TraceTree,
        facts: list[SpanFacts],
        scope: list[SpanFacts],
        intermediate: set[int],
        ancestors: list[SpanFacts],
    ) -> BuildResult:
        """The record of one unit: ``facts`` its spans, ``scope`` those its answer and grounding come from (the
        head's subtree), ``ancestors`` (nearest first) lend slice attributes and the resource."""
        ordered = sorted(facts, key=lambda f: (f.start_ns, f.end_ns))
        in_scope = sorted(scope, key=lambda f: (f.start_ns, f.end_ns))
        llms = [f for f in in_scope if f.kind == LLM and f.span_id not in intermediate]
        answers = sorted((f for f in llms if f.answers), key=lambda f: (f.end_ns, f.start_ns))
        chains = sorted((f for f in in_scope if f.kind in CHAIN_LIKE), key=lambda f: (tree.depth(f), f.start_ns))
        top = chains[0] if chains else None
        agent = any(f.kind in (TOOL, AGENT) or (f.kind == LLM and (f.tool_calls or f.tool_results)) for f in in_scope)

        answer_span, a_src = self._answer(agent, top, answers)
        grounding = ground(tree, in_scope)
        question, q_src = self._question(agent, top, answer_span, llms, in_scope)

        contexts, context_source = grounding.contexts, "+".join(grounding.origins)
        if not contexts and self.settings.context_from_prompt and answer_span is not None:
            contexts = [Context(content=text, source="prompt", origin="prompt") for text in answer_span.prompt_context]
            context_source = "prompt"
        error = any(f.error for f in facts)
        signals: dict[str, AttributeValue] = {}
        for f in ordered:
            for k, v in f.attrs.items():
                signals.setdefault(k, v)
        missing = grounding.missing
        has_answer = answer_span is not None
        if answer_span is None or not contexts:
            if has_answer:
                reason = "no_content" if missing else "ungrounded_turn"
            elif contexts:
                reason = "no_answer"
            elif missing:
                reason = "no_content"
            else:
                known = any(f.kind in (LLM, RETRIEVER, TOOL) for f in facts)
                reason = "no_answer" if known else "not_llm"
            return BuildResult(
                None,
                reason,
                error,
                signals,
                missing,
                had_answer=has_answer,
                had_retriever=bool(contexts) or any(f.kind == RETRIEVER for f in in_scope),
            )
        assert answer_span.output_text is not None
        model = answer_span.model or next((f.model for f in reversed(llms) if f.model), None)
        roots = sorted((f for f in facts if f.is_root), key=lambda f: f.start_ns)
        root = roots[0] if roots else (min(facts, key=tree.depth) if facts else None)
        head = sorted(facts, key=lambda f: (tree.depth(f), f.start_ns))
        conventions = [f.convention for f in facts if f.convention]
        convention = answer_span.convention or (max(set(conventions), key=conventions.count) if conventions else None)
        resource = next((f.resource for f in [*facts, *ancestors] if f.resource), {})
        attributes = self._attributes(facts, q_src, a_src, root, resource, missing, context_source)
        attributes["unit"] = "turn" if agent else "call"
        if agent:
            attributes["turn.tool_calls"] = grounding.tool_calls
            attributes["turn.model_calls"] = len(llms)
        record = RagTrace(
            trace_id=format(trace_id, "032x"),
            root_span_id=format(root.span_id, "016x") if root is not None else None,
            span_ids=[format(f.span_id, "016x") for f in ordered],
            start_time_unix_nano=min((f.start_ns for f in facts), default=None),
            end_time_unix_nano=max((f.end_ns for f in facts), default=None),
            question=question,
            answer=answer_span.output_text,
            contexts=contexts,
            slices=self.slices(head + ancestors, resource, model),
            attributes=attributes,
            convention=convention,
        )
        return BuildResult(record, "ok", error, signals, missing)

    @staticmethod
    def _answer(agent: bool, top: SpanFacts | None, answers: list[SpanFacts]) -> tuple[SpanFacts | None, str | None]:
        """The span whose ``output_text`` is the answer, and where it came from (``root`` / ``llm``)."""
        last = answers[-1] if answers else None
        if agent and last is not None:
            return last, "llm"
        if top is not None and top.output_text and (answers or not agent):
            return top, "root"
        return (last, "llm") if last is not None else (None, None)

    @staticmethod
    def _question(
        agent: bool, top: SpanFacts | None, answer: SpanFacts | None, llms: list[SpanFacts], scope: list[SpanFacts]
    ) -> tuple[str | None, str | None]:
        """The question and where it came from (``llm`` / ``root`` / ``retriever``)."""
        retriever = next((f for f in scope if f.kind == RETRIEVER and f.input_text), None)
        first_llm = next((f for f in llms if f.input_text), None)
        candidates: list[tuple[SpanFacts | None, str]] = (
            [(answer, "llm"), (first_llm, "llm"), (top, "root"), (retriever, "retriever")]
            if agent
            else [(top, "root"), (retriever, "retriever"), (first_llm, "llm")]
        )
        for span, src in candidates:
            if span is not None and span.input_text:
                return span.input_text, src
        return None, None

    def _attributes(
        self,
        facts: list[SpanFacts],
        q_src: str | None,
        a_src: str | None,
        root: SpanFacts | None,
        resource: Mapping[str, str],
        missing: int,
        context_source: str,
    ) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {"spans": len(facts)}
        if q_src:
            attributes["question.source"] = q_src
        attributes["answer.source"] = a_src or "unknown"
        attributes["context_source"] = context_source
        if root is not None:
            attributes["root.name"] = root.name
        if resource.get("service.name"):
            attributes["service.name"] = resource["service.name"]
        if missing:
            attributes["contexts.missing_content"] = missing
        dropped = sum(f.dropped_attributes for f in facts)
        if dropped:  # some span lost attributes to the SDK's count limit: documents, question or kind may be missing
            attributes["incomplete"] = "attribute_limit"
            attributes["dropped_attributes"] = dropped
        return attributes

    def slices(self, head: list[SpanFacts], resource: Mapping[str, str], model: str | None) -> dict[str, str]:
        """Slice labels: span attributes (top spans first), resource, model; settings override."""
        s = self.settings
        out: dict[str, str] = {}
        for name, key in s.slice_attributes.items():
            value: Any = next((f.attrs[key] for f in head if key in f.attrs), None)
            if value is None:
                value = resource.get(key)
                if value is None and key == "deployment.environment":
                    value = resource.get("deployment.environment.name")
            if value is not None and str(value):
                out[name] = str(value)[:_MAX_SLICE_CHARS]
        if model and "model" not in out:
            out["model"] = model[:_MAX_SLICE_CHARS]
        out.update({k: str(v)[:_MAX_SLICE_CHARS] for k, v in s.static_slices.items()})
        if s.release:
            out["release"] = s.release
        if s.environment:
            out["environment"] = s.environment
        return out


__all__ = ["NOT_RECORDED", "BuildResult", "Grounding", "RecordBuilder"]
