"""Errors raised by the evaluator worker.

Hierarchy::

    ClaimwatchError (collector.errors)
    ├── RecordDecodeError (collector.errors)   a Kafka value that is not a RagTrace -> dead letter
    └── JudgeError                   a judge could not produce verdicts
        ├── JudgeTimeout             the judge did not answer in time
        ├── JudgeRateLimited         429 / overloaded after the client's retries
        ├── JudgeUnavailable         5xx / connection failures after retries
        └── JudgeOutputError         the judge answered, but not in the agreed structure
                                     (unparseable JSON, missing claim ids after repair)

A ``JudgeError`` marks the answer's claims ``ERROR`` (never supported or
contradicted); ``reason`` is a bounded label for metrics.
"""

from __future__ import annotations

from collector.errors import ClaimwatchError, ConfigError, RecordDecodeError

__all__ = [
    "ClaimwatchError",
    "ConfigError",
    "RecordDecodeError",
    "JudgeError",
    "JudgeTimeout",
    "JudgeRateLimited",
    "JudgeUnavailable",
    "JudgeOutputError",
]


class JudgeError(ClaimwatchError):
    reason = "error"


class JudgeTimeout(JudgeError):
    reason = "timeout"


class JudgeRateLimited(JudgeError):
    reason = "rate_limited"


class JudgeUnavailable(JudgeError):
    reason = "unavailable"


class JudgeOutputError(JudgeError):
    reason = "bad_output"
