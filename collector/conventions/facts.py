"""What one finished span contributes to its trace: :class:`SpanFacts` (kept per trace until it completes).

Only what record building uses is kept (never whole spans), so a buffered trace stays small.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collector.conventions.messages import ToolCall, ToolResult
from contract.record import AttributeValue, Context

#: span roles, whatever the convention calls them
RETRIEVER, LLM, CHAIN, AGENT, TOOL, OTHER = "retriever", "llm", "chain", "agent", "tool", "other"
#: roles whose input/output may be the request's question/answer (a chain, a workflow, an agent)
CHAIN_LIKE = frozenset({CHAIN, AGENT})


@dataclass(slots=True)
class SpanFacts:
    """What one finished span contributes to its trace (only what is used later)."""

    span_id: int
    parent_id: int | None
    is_root: bool
    name: str
    start_ns: int
    end_ns: int
    kind: str = OTHER
    convention: str | None = None
    #: question-like input: a chain's or a retriever's input, an LLM call's user message of the turn
    input_text: str | None = None
    #: answer-like output: a chain's output, an LLM call's final text (a ReAct answer after its marker)
    output_text: str | None = None
    #: a retriever's documents
    contexts: tuple[Context, ...] = ()
    #: system instructions / system messages of an LLM span (the opt-in prompt-context fallback)
    prompt_context: tuple[str, ...] = ()
    #: an LLM call's output asked for these tools (the turn goes on: not an answer)
    tool_calls: tuple[ToolCall, ...] = ()
    #: tool results an LLM call was given in the current turn (role-``tool`` messages, ReAct observations)
    tool_results: tuple[ToolResult, ...] = ()
    #: a tool span: the tool's name and the call id it answers; its result is ``output_text`` (a retriever span
    #: may carry a tool name too: a tool traced as a retriever)
    tool_name: str | None = None
    tool_call_id: str | None = None
    missing_content: int = 0
    model: str | None = None
    attrs: dict[str, AttributeValue] = field(default_factory=dict)
    resource: dict[str, str] = field(default_factory=dict)
    error: bool = False
    hidden: bool = False
    dropped_attributes: int = 0

    @property
    def answers(self) -> bool:
        """An LLM call whose output is final text (not a tool request)."""
        return self.kind == LLM and bool(self.output_text) and not self.tool_calls
