"""HTTP failures of a judge API as the project's :class:`~evaluator_worker.errors.JudgeError` kinds.

Provider-neutral: every transport (the ``anthropic`` SDK on any platform, the ``openai`` SDK,
Bespoke's server) maps its SDK exceptions through here, so a 429 means the same thing
whatever answered it.

- status -> kind: 429/529 ``JudgeRateLimited`` (retryable, throttles), 408 ``JudgeTimeout``,
  409/5xx ``JudgeUnavailable``, 401/403/404 ``JudgeAuthError`` (fatal, names the setting),
  anything else ``JudgeRequestRejected`` (not retried);
- ``retry-after-ms``, then ``retry-after`` (seconds or an HTTP date) -> ``retry_after``, at most
  a minute (``errors.MAX_RETRY_AFTER_S``; ``inf``/``nan`` read as absent);
- ``x-should-retry: true|false`` overrides the status-based decision, as the anthropic SDK's
  own retry loop does: ``false`` makes any error not retryable (a 529 included); ``true``
  makes it retryable (a 400 included) and, for a 401/403/404, not fatal (the server says the
  failure is transient);
- a success status whose body is not the API's JSON (a proxy's HTML page, a cut or garbled body, a
  reply missing its fields) -> ``JudgeUnavailable`` (``bad_response_error``): retried like a 5xx.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any, Callable, TypeVar

from evaluator_worker.errors import (
    JudgeAuthError,
    JudgeError,
    JudgeRateLimited,
    JudgeRequestRejected,
    JudgeTimeout,
    JudgeUnavailable,
    bounded_retry_after,
)

__all__ = [
    "retry_after_s",
    "should_retry",
    "status_error",
    "timeout_error",
    "connection_error",
    "call_error",
    "bad_response_error",
    "parsed_body",
    "read_body",
]

T = TypeVar("T")
R = TypeVar("R")

#: response headers: any mapping with ``.get`` (httpx.Headers, a dict), or None
Headers = Any


def _header(headers: Headers, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except AttributeError:
        return None
    return value if isinstance(value, str) else None


def retry_after_s(headers: Headers) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date); None when absent or unreadable."""
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms:
        try:
            return bounded_retry_after(float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = _header(headers, "retry-after")
    if not raw:
        return None
    try:
        return bounded_retry_after(float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
        return bounded_retry_after(when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def should_retry(headers: Headers) -> bool | None:
    """The server's ``x-should-retry`` (``true``/``false``), or None when it did not say."""
    raw = _header(headers, "x-should-retry")
    if raw is None:
        return None
    raw = raw.strip().lower()
    return True if raw == "true" else False if raw == "false" else None


def status_error(
    status: int,
    headers: Headers,
    detail: str,
    *,
    model: str | None,
    api: str = "the Anthropic API",
    prefix: str = "CLAIMWATCH_ANTHROPIC__",
    key_hint: str = "CLAIMWATCH_ANTHROPIC__API_KEY or ANTHROPIC_API_KEY",
) -> JudgeError:
    """An HTTP error status of a judge API as the :class:`JudgeError` the flow layer acts on.

    ``prefix``/``key_hint`` name the settings a person fixes for 401/403/404.
    """
    kw: dict[str, Any] = {"status_code": status, "retry_after": retry_after_s(headers)}
    err: JudgeError
    if status == 401:
        err = JudgeAuthError(f"{api} rejected the key (401): set a valid {key_hint}", setting=f"{prefix}API_KEY", **kw)
    elif status == 403:
        err = JudgeAuthError(
            f"{api} refused this key (403 permission_error): give {prefix}API_KEY access to "
            f"model {model!r} or choose another {prefix}MODEL",
            setting=f"{prefix}API_KEY",
            **kw,
        )
    elif status == 404:
        err = JudgeAuthError(
            f"{api} does not know model {model!r} (404): fix {prefix}MODEL / {prefix}EXTRACT_MODEL (or {prefix}BASE_URL)",
            setting=f"{prefix}MODEL",
            **kw,
        )
    elif status == 429:
        err = JudgeRateLimited(f"judge rate limited (429): {detail}", **kw)
    elif status == 529:
        err = JudgeRateLimited(f"judge overloaded (529): {detail}", **kw)
    elif status == 408:
        err = JudgeTimeout(f"judge request timeout (408): {detail}", **kw)
    elif status == 409 or status >= 500:
        err = JudgeUnavailable(f"judge server error {status}: {detail}", **kw)
    else:
        err = JudgeRequestRejected(f"judge request rejected ({status}): {detail}", **kw)
    told = should_retry(headers)
    if told is not None and told != err.retryable:
        err.retryable = told  # the server's word beats the status (instance attribute over the class policy)
        if told:
            err.fatal = False
    return err


def timeout_error(exc: BaseException) -> JudgeError:
    """The client gave up waiting (no status)."""
    return JudgeTimeout(f"judge timed out: {exc}")


def connection_error(exc: BaseException) -> JudgeError:
    """No HTTP answer at all (refused, reset, DNS)."""
    return JudgeUnavailable(f"judge unreachable: {exc}")


def call_error(exc: BaseException) -> JudgeError:
    """Any other failure of the call itself (retryable: it says nothing about the request)."""
    return JudgeUnavailable(f"judge call failed: {exc}")


def bad_response_error(status: int | None, headers: Headers, detail: str) -> JudgeError:
    """An answer (a 200) whose body is not the API's JSON: a proxy's HTML page, a cut or garbled body, a reply
    without the fields every answer has. Retryable: it says nothing about the request, and a glitch in between
    usually passes (the retry policy gives up at its deadline and the answer's claims become ERROR)."""
    content_type = _header(headers, "content-type")
    kind = f"content-type {content_type}" if content_type else "no content-type"
    return JudgeUnavailable(
        f"the judge API answered {status if status is not None else 'a success'} with a body that is not "
        f"the expected JSON ({kind}): {detail[:200]}",
        status_code=status,
        retry_after=retry_after_s(headers),
    )


def parsed_body(
    raw: Any, expected: type[T], sdk_errors: type[Exception], map_error: Callable[[Exception], JudgeError]
) -> T:
    """``raw.parse()`` of an SDK's raw response, as ``expected``. The SDK's own errors go through ``map_error``; a
    body that does not decode (a cut JSON) or is not ``expected`` (an HTML page, which the SDKs return as a str) is
    :func:`bad_response_error`. Only the decoding is guarded: bugs of the caller still raise."""
    try:
        body = raw.parse()
    except sdk_errors as exc:
        raise map_error(exc) from exc
    except (ValueError, TypeError) as exc:  # JSONDecodeError: a cut or garbled body
        raise bad_response_error(raw.status_code, raw.headers, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(body, expected):
        raise bad_response_error(raw.status_code, raw.headers, f"got {type(body).__name__} {str(body)[:80]!r}")
    return body


def read_body(raw: Any, read: Callable[[], R], what: str) -> R:
    """``read()`` of a parsed body; fields of the wrong type (the SDKs do not validate them), or a ``ValueError``
    raised for a body without an answer, are :func:`bad_response_error` naming ``what``."""
    try:
        return read()
    except (AttributeError, TypeError, ValueError) as exc:
        raise bad_response_error(
            raw.status_code, raw.headers, f"unexpected {what} shape: {type(exc).__name__}: {exc}"
        ) from exc
