"""What the LLM judge needs from a chat API: one forced tool call in, one neutral tool call out.

:class:`~evaluator_worker.judges.llm.LLMJudge` builds a :class:`ChatRequest` (system prompt,
one user message, tool schemas, the tool the model must call) and hands it to a
:class:`ChatTransport`; the transport speaks its API's wire format and returns a
:class:`ToolCallResult`. Implementations: ``anthropic.AnthropicTransport`` (first-party,
Bedrock, Vertex through the ``anthropic`` SDK) and ``openai_compat.OpenAITransport`` (any
``/chat/completions`` endpoint).

A transport:

- maps every failure of the call to a :class:`~evaluator_worker.errors.JudgeError` through
  :mod:`evaluator_worker.judges.http_errors` (so retry/throttle/fatal mean the same on every API);
- reports a cut output as ``stop_reason == "max_tokens"`` (the judge never parses it);
- reports token counts in :class:`TokenUsage` (cache reads apart, as the provider bills them);
  pricing is the judge's, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

#: the neutral stop reason of a cut output (Anthropic ``max_tokens``, OpenAI ``length``)
TRUNCATED = "max_tokens"


@dataclass(frozen=True)
class ChatRequest:
    """One forced tool call: ``system`` is the cacheable prefix (with ``tools``), ``messages`` the turns."""

    model: str
    system: str
    messages: Sequence[dict[str, Any]]
    #: tool schemas in the prompts' shape: ``{"name", "description", "input_schema"}``
    tools: Sequence[dict[str, Any]]
    #: the tool the model must call
    tool_choice: str
    max_tokens: int


@dataclass
class TokenUsage:
    """Tokens of one call as the provider counted them (``input_tokens`` excludes cache reads and writes)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass
class ToolCallResult:
    """The model's answer to a :class:`ChatRequest`, whatever API carried it."""

    #: the tool the model called (None: it called none)
    tool_name: str | None
    #: the tool's arguments (None: absent or not a JSON object)
    input: dict[str, Any] | None
    #: ``tool_use``, ``max_tokens`` (:data:`TRUNCATED`: never parse it) or the API's other reasons
    stop_reason: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    #: HTTP attempts beyond the first made inside the SDK (when it retries; 0 by default)
    retries: int = 0

    @property
    def truncated(self) -> bool:
        return self.stop_reason == TRUNCATED


@runtime_checkable
class ChatTransport(Protocol):
    """A chat API that can force one tool call (see the module docstring for the contract)."""

    def complete(self, request: ChatRequest) -> ToolCallResult: ...


def tool_arguments(name: str | None, raw: Any, wanted: str) -> dict[str, Any] | None:
    """``raw`` tool arguments (a dict or a JSON string) when ``name`` is ``wanted``; None otherwise."""
    import json

    if name != wanted:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


__all__ = ["TRUNCATED", "ChatRequest", "ChatTransport", "TokenUsage", "ToolCallResult", "tool_arguments"]
