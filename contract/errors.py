"""Errors raised by the collector package.

Hierarchy::

    ClaimwatchError                 base of every claimwatch error (both packages)
    ├── ConfigError                 invalid settings (bad regex, unknown option)
    └── RecordError                 a RagTrace that can't be used
        └── RecordDecodeError       bytes that are not a valid RagTrace; ``reason``
                                    is a short bounded label used in metrics and DLQ
                                    headers: not_json, not_object, schema_version,
                                    invalid, invalid_text (lone surrogates), and from the
                                    worker empty, oversized (``evaluation_error`` is the
                                    DLQ reason for a judge that crashed on a record)

The span processor itself never raises into the host app: every failure on the
app's thread is caught, counted with a reason and logged.
"""

from __future__ import annotations


class ClaimwatchError(Exception):
    """Base class of all claimwatch errors."""


class ConfigError(ClaimwatchError):
    """Settings that cannot work (raised at start-up, never mid-stream)."""


class RecordError(ClaimwatchError):
    """A record that cannot be used."""


class RecordDecodeError(RecordError):
    """Bytes that do not decode to a supported ``RagTrace``."""

    def __init__(self, message: str, *, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason
