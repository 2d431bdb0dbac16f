"""Claude as the judge: the :class:`~evaluator_worker.judges.llm.LLMJudge` over the ``anthropic`` SDK.

:class:`AnthropicTransport` sends a :class:`~evaluator_worker.judges.transport.ChatRequest` as one
Messages call (``messages.create``) on the first-party API, AWS Bedrock or Google Vertex (the client
comes from ``platforms.make_client``): the system prompt as one text block marked for prompt caching
(tools + system form the cached prefix), the tool forced through ``tool_choice``. It returns the
``tool_use`` block as a neutral :class:`~evaluator_worker.judges.transport.ToolCallResult` and maps
every SDK exception through :mod:`evaluator_worker.judges.http_errors` (``x-should-retry`` and
``retry-after`` included); a 200 whose body is not a Message (a proxy's HTML page, a cut JSON body,
fields of the wrong type) is a retryable ``JudgeUnavailable`` (``http_errors.bad_response_error``).
The SDK does not retry (its clients are built with ``max_retries=0``): ``flow.JudgeCaller`` is the one retry layer;
when it is configured to, its extra attempts show in ``Usage.retries``.

:func:`AnthropicJudge` builds the judge (the registry's ``anthropic``); prompts, repair, splits and
cost accounting are the LLM judge's (``llm.py``).
"""

from __future__ import annotations

import threading
from typing import Any

import anthropic
from anthropic.types import Message

from evaluator_worker.errors import ConfigError, JudgeError
from evaluator_worker.judges import http_errors, prompts
from evaluator_worker.judges.http_errors import retry_after_s, status_error
from evaluator_worker.judges.llm import (
    UNLOCATED_EVIDENCE_PENALTY,
    UNLOCATED_NOTE,
    LLMJudge,
    LLMOptions,
    locate_evidence,
)
from evaluator_worker.judges.platforms import for_platform, make_client
from evaluator_worker.judges.settings import AnthropicSettings
from evaluator_worker.judges.transport import ChatRequest, TokenUsage, ToolCallResult, tool_arguments

__all__ = [
    "AnthropicJudge",
    "AnthropicTransport",
    "UNLOCATED_EVIDENCE_PENALTY",
    "UNLOCATED_NOTE",
    "locate_evidence",
    "map_api_error",
    "messages_params",
    "retry_after_s",
    "status_error",
    "tool_input",
]


def map_api_error(exc: Exception, *, model: str | None = None) -> JudgeError:
    """An ``anthropic`` SDK exception as a :class:`JudgeError` (status, headers -> ``http_errors``)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return http_errors.timeout_error(exc)
    if isinstance(exc, anthropic.APIConnectionError):
        return http_errors.connection_error(exc)
    if isinstance(exc, anthropic.APIResponseValidationError):  # strict validation: a 200 that is not a Message
        return http_errors.bad_response_error(exc.status_code, exc.response.headers, str(exc))
    if not isinstance(exc, anthropic.APIStatusError):
        return http_errors.call_error(exc)
    return status_error(exc.status_code, getattr(exc.response, "headers", None), str(exc)[:300], model=model)


def messages_params(request: ChatRequest) -> dict[str, Any]:
    """``request`` as Messages API parameters (``messages.create``, or one item of a Message Batch)."""
    return dict(
        model=request.model,
        max_tokens=request.max_tokens,
        system=prompts.system_blocks(request.system),
        tools=list(request.tools),
        tool_choice={"type": "tool", "name": request.tool_choice},
        messages=[dict(m) for m in request.messages],
    )


def tool_input(message: Any, tool_name: str) -> dict[str, Any] | None:
    """The input of a Messages response's ``tool_name`` tool_use block (JSON strings decoded), or None."""
    for block in getattr(message, "content", None) or []:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == tool_name:
            return tool_arguments(tool_name, block.input, tool_name)
    return None


class _AttemptCounter:
    """SDK middleware counting HTTP attempts per thread, so SDK retries show up in ``Usage.retries``."""

    def __init__(self) -> None:
        self._local = threading.local()

    def reset(self) -> None:
        self._local.n = 0

    @property
    def attempts(self) -> int:
        return getattr(self._local, "n", 0)

    def __call__(self, request: Any, call_next: Any) -> Any:
        self._local.n = self.attempts + 1
        return call_next(request)


class AnthropicTransport:
    """:class:`~evaluator_worker.judges.transport.ChatTransport` over an ``anthropic`` SDK client (any platform)."""

    def __init__(self, client: Any) -> None:
        self._counter = _AttemptCounter()
        if hasattr(client, "with_middleware"):  # SDKs with middleware: count retries per call
            try:
                client = client.with_middleware(self._counter)
            except Exception:  # pragma: no cover - older SDK shapes
                pass
        self.client = client

    def check_model(self, model: str) -> None:
        """The Models API's answer for ``model`` (first-party API only: Bedrock and Vertex clients have no Models
        API); a fatal :class:`JudgeError` when the provider does not serve it (404) or the key is refused."""
        models = getattr(self.client, "models", None)
        if models is None or not hasattr(models, "retrieve"):
            return
        try:
            models.retrieve(model)
        except anthropic.APIStatusError as exc:
            err = map_api_error(exc, model=model)
            if err.fatal:
                raise err from exc
        except anthropic.APIError:  # unreachable or slow now: the first real call says what is wrong
            return

    def complete(self, request: ChatRequest) -> ToolCallResult:
        """One ``messages.create``; SDK errors, and a 200 whose body is not a Message, mapped to ``JudgeError``s."""
        self._counter.reset()
        params = messages_params(request)
        try:
            raw = self.client.messages.with_raw_response.create(**params)
        except TypeError as exc:
            if "authentication" in str(exc).lower():  # the SDK resolves credentials lazily
                raise ConfigError(
                    "no Anthropic credentials: set CLAIMWATCH_ANTHROPIC__API_KEY or ANTHROPIC_API_KEY"
                ) from exc
            raise
        except anthropic.APIError as exc:
            raise map_api_error(exc, model=request.model) from exc
        # only decoding the body and reading the Message are guarded: our own bugs elsewhere still raise
        message = http_errors.parsed_body(
            raw, Message, anthropic.APIError, lambda exc: map_api_error(exc, model=request.model)
        )
        return http_errors.read_body(raw, lambda: self._result(message, request), "message")

    def _result(self, message: Message, request: ChatRequest) -> ToolCallResult:
        """The neutral result of one Messages response."""
        u = getattr(message, "usage", None)
        usage = TokenUsage(
            input_tokens=int(getattr(u, "input_tokens", 0) or 0),
            output_tokens=int(getattr(u, "output_tokens", 0) or 0),
            cache_read_tokens=int(getattr(u, "cache_read_input_tokens", 0) or 0),
            cache_creation_tokens=int(getattr(u, "cache_creation_input_tokens", 0) or 0),
        )
        called = next(
            (
                b
                for b in getattr(message, "content", None) or []
                if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == request.tool_choice
            ),
            None,
        )
        return ToolCallResult(
            tool_name=request.tool_choice if called is not None else None,
            input=tool_arguments(request.tool_choice, called.input, request.tool_choice) if called else None,
            stop_reason=str(getattr(message, "stop_reason", "") or ""),
            usage=usage,
            retries=max(0, self._counter.attempts - 1),
        )


def AnthropicJudge(settings: AnthropicSettings | None = None, client: Any = None) -> LLMJudge:
    """The ``anthropic`` judge: Claude (first-party API, Bedrock or Vertex) through the ``anthropic`` SDK.

    ``client``: an SDK client to use (tests, custom transports); default built from ``settings``.
    Model ids are mapped to the platform's naming (see ``platforms``).
    """
    s = for_platform(settings or AnthropicSettings())
    transport = AnthropicTransport(client if client is not None else make_client(s))
    options = LLMOptions.from_settings(s, model=s.model, extract_model=s.extract_model)
    return LLMJudge(transport, options, name="anthropic", settings=s)
