"""The ``openai`` judge: any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp, OpenAI...).

It is the Anthropic judge with another transport: the same prompts, the same
extraction / verification / single-call flows, the same repair path (a malformed
output is retried once, missing claim ids get one repair call, a cut output is
split in halves), the same evidence checks. Only the wire changes:

- system blocks -> one system message; tools -> function tools; the forced tool ->
  a forced function (``output=tools``), or ``response_format`` with the tool's JSON
  schema (``output=json_schema``, for servers without function calling);
- ``finish_reason == "length"`` is a cut output; ``usage.prompt_tokens_details.cached_tokens``
  counts as cache reads;
- HTTP errors map to the same ``JudgeError`` kinds (429 throttles, 5xx retries, 401/403/404
  stop the worker naming ``CLAIMWATCH_OPENAI__*``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from evaluator_worker.errors import ConfigError, JudgeError, JudgeTimeout, JudgeUnavailable
from evaluator_worker.judges.anthropic import AnthropicJudge, status_error
from evaluator_worker.judges.base import Usage
from evaluator_worker.judges.pricing import cost_usd
from evaluator_worker.judges.settings import AnthropicSettings, OpenAISettings

PREFIX = "CLAIMWATCH_OPENAI__"


@dataclass
class _ToolBlock:
    """A chat completion's structured output in the shape the Anthropic judge reads (a tool_use block)."""

    name: str
    input: Any
    type: str = "tool_use"


@dataclass
class _Message:
    stop_reason: str
    content: list[_ToolBlock] = field(default_factory=list)


def map_openai_error(exc: Exception, *, model: str | None) -> JudgeError:
    """An ``openai`` SDK exception as a :class:`JudgeError` (same kinds as the Anthropic judge's)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return JudgeTimeout(f"judge timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return JudgeUnavailable(f"judge unreachable: {exc}")
    if not isinstance(exc, openai.APIStatusError):
        return JudgeUnavailable(f"judge call failed: {exc}")
    return status_error(
        exc.status_code,
        getattr(exc.response, "headers", None),
        str(exc)[:300],
        model=model,
        api="the OpenAI-compatible endpoint",
        prefix=PREFIX,
        key_hint=f"{PREFIX}API_KEY or OPENAI_API_KEY",
    )


class OpenAIJudge(AnthropicJudge):
    """Claim extraction and verification through an OpenAI-compatible ``/chat/completions`` endpoint."""

    name = "openai"

    def __init__(self, settings: OpenAISettings | None = None, client: Any = None) -> None:
        s = settings or OpenAISettings()
        if not s.model:
            raise ConfigError(f"the openai judge needs a model: set {PREFIX}MODEL (and {PREFIX}BASE_URL)")
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise ConfigError(
                    "the openai judge needs the openai package: pip install 'claimwatch[openai]'"
                ) from exc
            key = s.api_key.get_secret_value() if s.api_key else os.environ.get("OPENAI_API_KEY", "not-needed")
            client = openai.OpenAI(base_url=s.base_url, api_key=key, timeout=s.timeout_s, max_retries=s.max_retries)
        self.openai_settings = s
        super().__init__(
            AnthropicSettings(
                model=s.model,
                extract_model=s.extract_model or s.model,
                max_tokens=s.max_tokens,
                timeout_s=s.timeout_s,
                max_retries=s.max_retries,
                single_call=s.single_call,
                max_claims_per_call=s.max_claims_per_call,
                prices=s.prices,
            ),
            client=client,
        )

    def _request(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The Anthropic-shaped request (system blocks, tools, forced tool) as chat-completions arguments."""
        system = "\n\n".join(b.get("text", "") for b in kwargs.get("system") or [])
        messages = [{"role": "system", "content": system}] if system else []
        messages += [{"role": m["role"], "content": m["content"]} for m in kwargs["messages"]]
        req: dict[str, Any] = {"model": kwargs["model"], "messages": messages, "max_tokens": self.settings.max_tokens}
        tool = next(t for t in kwargs["tools"] if t["name"] == kwargs["tool_choice"]["name"])
        if self.openai_settings.output == "json_schema":
            req["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": tool["name"], "schema": tool["input_schema"]},
            }
        else:
            req["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t["input_schema"],
                    },
                }
                for t in kwargs["tools"]
            ]
            req["tool_choice"] = {"type": "function", "function": {"name": tool["name"]}}
        return req

    def _create(self, kwargs: dict[str, Any], usage: Usage) -> Any:
        """One chat completion, returned in the message shape ``_call_tool`` reads; maps errors, adds usage."""
        import openai

        tool_name = kwargs["tool_choice"]["name"]
        try:
            completion = self.client.chat.completions.create(**self._request(kwargs))
        except openai.APIError as exc:
            raise map_openai_error(exc, model=str(kwargs.get("model"))) from exc
        choice = completion.choices[0] if completion.choices else None
        blocks: list[_ToolBlock] = []
        if choice is not None:
            for call in choice.message.tool_calls or []:
                fn = getattr(call, "function", None)
                if fn is not None:
                    blocks.append(_ToolBlock(fn.name, fn.arguments))
            if not blocks and choice.message.content and self.openai_settings.output == "json_schema":
                blocks.append(_ToolBlock(tool_name, choice.message.content))
        cut = choice is not None and choice.finish_reason == "length"
        u = completion.usage
        prompt = int(getattr(u, "prompt_tokens", 0) or 0)
        details = getattr(u, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        out = int(getattr(u, "completion_tokens", 0) or 0)
        usage.calls += 1
        usage.input_tokens += prompt - cached
        usage.output_tokens += out
        usage.cache_read_tokens += cached
        usage.cost_usd += cost_usd(
            kwargs["model"],
            input_tokens=prompt - cached,
            output_tokens=out,
            cache_read_tokens=cached,
            overrides=self.settings.prices,
        )
        return _Message("max_tokens" if cut else "tool_use", blocks)
