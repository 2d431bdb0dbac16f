"""Errors raised by the evaluator worker.

Hierarchy::

    ClaimwatchError (contract.errors)
    ├── ConfigError (contract.errors)      settings that cannot work: the worker stops
    ├── RecordDecodeError (contract.errors) a Kafka value that is not a RagTrace -> dead letter
    ├── JudgeError                          a judge call failed; carries ``retryable``,
    │   │                                   ``throttled``, ``fatal``, ``status_code``, ``retry_after``
    │   ├── JudgeTimeout          retryable     the judge did not answer in time (408, client timeout)
    │   ├── JudgeRateLimited      retryable     429, 529 overloaded: also backs the concurrency off
    │   ├── JudgeUnavailable      retryable     5xx, 409, connection failures
    │   ├── JudgeRequestRejected  not retried   400/413/422: this answer's request is invalid ->
    │   │                                       its claims are ERROR, the worker goes on
    │   ├── JudgeAuthError        fatal         401/403/404 (bad key, no permission, unknown
    │   │                                       model): the worker stops at once, nothing is
    │   │                                       dead-lettered or committed past the record
    │   └── JudgeOutputError      not retried   the judge answered, but not in the agreed
    │                                           structure (after the judge's own repair)
    ├── EvaluationAbandoned                 the worker is stopping or lost the partition while
    │   │                                   the answer waited: no result, offset not committed
    │   └── JudgeThrottledYield             a judge told to yield (the shadow judge) met a 429/529:
    │                                       given up at once, never retried against the main judge
    └── WorkerFatal                         the worker cannot go on safely (a result write the
                                            broker keeps rejecting, a fatal judge error): it
                                            stops without committing past the record

Who retries: only :class:`evaluator_worker.flow.JudgeCaller` (the SDK clients are built
with their own retries off, ``max_retries=0``), so every 429 reaches the
adaptive concurrency limit and a 401 is never retried.

A non-fatal ``JudgeError`` that is not retried (or outlives the retry deadline) marks the
answer's claims ``ERROR`` (never supported or contradicted); ``reason`` is a bounded
label for metrics.
"""

from __future__ import annotations

import math

from contract.errors import ClaimwatchError, ConfigError, RecordDecodeError

__all__ = [
    "ClaimwatchError",
    "ConfigError",
    "RecordDecodeError",
    "JudgeError",
    "JudgeTimeout",
    "JudgeRateLimited",
    "JudgeUnavailable",
    "JudgeRequestRejected",
    "JudgeAuthError",
    "JudgeOutputError",
    "EvaluationAbandoned",
    "JudgeThrottledYield",
    "WorkerFatal",
]


#: the longest ``retry-after`` honoured as given (the anthropic SDK's own bound for a "reasonable" wait). One
#: reply saying ``inf``, a day or a date in 2099 would otherwise close the worker's shared gate for that long;
#: past this the call is tried again after a minute and a provider still throttling says so again.
MAX_RETRY_AFTER_S = 60.0


def bounded_retry_after(seconds: float | None) -> float | None:
    """A provider's retry-after as a wait: None when unreadable (not finite), clamped to ``[0, MAX_RETRY_AFTER_S]``."""
    if seconds is None or not math.isfinite(seconds):
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER_S)


class JudgeError(ClaimwatchError):
    """A judge call failed. Class attributes give the policy; instances may carry HTTP details."""

    reason = "error"
    #: worth calling again later (with backoff)
    retryable = False
    #: the provider asked us to slow down (429/529): the adaptive limit shrinks
    throttled = False
    #: no later call can succeed with these settings: stop the worker
    fatal = False

    def __init__(
        self,
        message: str = "",
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
        setting: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        #: seconds the provider asked us to wait (``retry-after``), if it said; at most ``MAX_RETRY_AFTER_S``
        self.retry_after = bounded_retry_after(retry_after)
        #: the setting a person should fix (fatal errors)
        self.setting = setting


class JudgeTimeout(JudgeError):
    reason = "timeout"
    retryable = True


class JudgeRateLimited(JudgeError):
    reason = "rate_limited"
    retryable = True
    throttled = True


class JudgeUnavailable(JudgeError):
    reason = "unavailable"
    retryable = True


class JudgeRequestRejected(JudgeError):
    reason = "rejected"


class JudgeAuthError(JudgeError):
    reason = "auth"
    fatal = True


class JudgeOutputError(JudgeError):
    reason = "bad_output"


class EvaluationAbandoned(ClaimwatchError):
    """The answer was given up without a result (stop or revoke while it waited)."""


class JudgeThrottledYield(EvaluationAbandoned):
    """A judge that yields under throttling (``RetryPolicy.yield_when_throttled``: the shadow judge) gave the answer
    up at the provider's 429/529 instead of retrying, so it never competes with the main judge for the rate limit."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        #: the provider's retry-after (seconds), when it gave one
        self.retry_after = retry_after


class WorkerFatal(ClaimwatchError):
    """The worker stopped because going on could lose data or burn the backlog."""
