"""The ``openai`` judge: any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp, OpenAI...).

The same :class:`~evaluator_worker.judges.llm.LLMJudge` as the ``anthropic`` judge (the same
prompts, extraction / verification / single-call flows, repair path, splits and evidence
checks) over :class:`OpenAITransport`, which only changes the wire:

- the system prompt -> one system message; tools -> function tools; the forced tool ->
  a forced function (``output=tools``), or ``response_format`` with the tool's JSON
  schema (``output=json_schema``, for servers without function calling);
- ``finish_reason == "length"`` is a cut output; ``usage.prompt_tokens_details.cached_tokens``
  counts as cache reads;
- HTTP errors map through ``http_errors`` to the same ``JudgeError`` kinds (429 throttles, 5xx
  retries, ``x-should-retry`` obeyed, 401/403/404 stop the worker naming ``CLAIMWATCH_OPENAI__*``);
- a 200 whose body is not a chat completion (a proxy's HTML page, a cut JSON body, no ``choices``, a
  choice without its ``message``) is a retryable ``JudgeUnavailable`` (``http_errors.bad_response_error``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from evaluator_worker.errors import ConfigError, JudgeError
from evaluator_worker.judges import http_errors
from evaluator_worker.judges.llm import LLMJudge, LLMOptions
from evaluator_worker.judges.settings import OpenAISettings
from evaluator_worker.judges.transport import TRUNCATED, ChatRequest, TokenUsage, ToolCallResult, tool_arguments

PREFIX = "CLAIMWATCH_OPENAI__"


def map_openai_error(exc: Exception, *, model: str | None) -> JudgeError:
    """An ``openai`` SDK exception as a :class:`JudgeError` (the same kinds as every judge's)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return http_errors.timeout_error(exc)
    if isinstance(exc, openai.APIConnectionError):
        return http_errors.connection_error(exc)
    if isinstance(exc, openai.APIResponseValidationError):  # strict validation: a 200 that is not a completion
        return http_errors.bad_response_error(exc.status_code, exc.response.headers, str(exc))
    if not isinstance(exc, openai.APIStatusError):
        return http_errors.call_error(exc)
    return http_errors.status_error(
        exc.status_code,
        getattr(exc.response, "headers", None),
        str(exc)[:300],
        model=model,
        api="the OpenAI-compatible endpoint",
        prefix=PREFIX,
        key_hint=f"{PREFIX}API_KEY or OPENAI_API_KEY",
    )


class OpenAITransport:
    """:class:`~evaluator_worker.judges.transport.ChatTransport` over an ``openai`` SDK client (``/chat/completions``)."""

    def __init__(self, client: Any, output: Literal["tools", "json_schema"] = "tools") -> None:
        self.client = client
        self.output = output

    def fingerprint(self) -> dict[str, Any]:
        """How requests become chat-completions calls (judge identity): forced tools or a JSON schema."""
        return {"transport": "openai", "output": self.output}

    def params(self, request: ChatRequest) -> dict[str, Any]:
        """``request`` as chat-completions arguments."""
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": m["role"], "content": m["content"]} for m in request.messages]
        req: dict[str, Any] = {"model": request.model, "messages": messages, "max_tokens": request.max_tokens}
        tool = next(t for t in request.tools if t["name"] == request.tool_choice)
        if self.output == "json_schema":
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
                for t in request.tools
            ]
            req["tool_choice"] = {"type": "function", "function": {"name": tool["name"]}}
        return req

    def complete(self, request: ChatRequest) -> ToolCallResult:
        """One chat completion as a neutral tool call; SDK errors, and a 200 that is not a completion, mapped to
        ``JudgeError``s."""
        import openai
        from openai.types.chat import ChatCompletion

        params = self.params(request)
        try:
            raw = self.client.chat.completions.with_raw_response.create(**params)
        except openai.APIError as exc:
            raise map_openai_error(exc, model=request.model) from exc
        # only decoding the body and reading the completion are guarded: our own bugs elsewhere still raise
        completion = http_errors.parsed_body(
            raw, ChatCompletion, openai.APIError, lambda exc: map_openai_error(exc, model=request.model)
        )
        return http_errors.read_body(raw, lambda: self._result(completion, request), "completion")

    def _result(self, completion: Any, request: ChatRequest) -> ToolCallResult:
        """The neutral result of one chat completion (:class:`_NotACompletion` when it holds no answer at all)."""
        if not completion.choices:
            raise _NotACompletion("a completion without choices")
        choice = completion.choices[0]
        message = choice.message
        if message is None:
            raise _NotACompletion("a choice without its message")
        name: str | None = None
        raw: Any = None
        for call in message.tool_calls or []:
            fn = getattr(call, "function", None)
            if fn is not None and fn.name == request.tool_choice:
                name, raw = fn.name, fn.arguments
                break
        if name is None and message.content and self.output == "json_schema":
            name, raw = request.tool_choice, message.content
        u = completion.usage
        prompt = int(getattr(u, "prompt_tokens", 0) or 0)
        cached = int(getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0)
        cut = choice.finish_reason == "length"
        return ToolCallResult(
            tool_name=name,
            input=tool_arguments(name, raw, request.tool_choice),
            stop_reason=TRUNCATED if cut else "tool_use",
            usage=TokenUsage(
                input_tokens=prompt - cached,
                output_tokens=int(getattr(u, "completion_tokens", 0) or 0),
                cache_read_tokens=cached,
            ),
        )


class _NotACompletion(ValueError):
    """A 200 chat completion that holds no answer (no choices, a choice without its message)."""


def OpenAIJudge(settings: OpenAISettings | None = None, client: Any = None) -> LLMJudge:
    """The ``openai`` judge: claim extraction and verification through an OpenAI-compatible endpoint."""
    s = settings or OpenAISettings()
    if not s.model:
        raise ConfigError(f"the openai judge needs a model: set {PREFIX}MODEL (and {PREFIX}BASE_URL)")
    if client is None:
        try:
            import openai
        except ImportError as exc:
            raise ConfigError("the openai judge needs the openai package: pip install 'claimwatch[openai]'") from exc
        key = s.api_key.get_secret_value() if s.api_key else os.environ.get("OPENAI_API_KEY", "not-needed")
        client = openai.OpenAI(
            base_url=s.base_url, api_key=key, timeout=s.timeout_s, max_retries=0
        )  # the flow layer retries
    options = LLMOptions.from_settings(s, model=s.model, extract_model=s.extract_model or s.model)
    return LLMJudge(OpenAITransport(client, s.output), options, name="openai", settings=s)
