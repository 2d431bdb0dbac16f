"""structlog set-up shared by the collector and the worker.

Small composable processors:

- ``add_otel_ids``: adds ``trace_id``/``span_id`` of the current OTel span.
- ``redact_secrets``: masks values of keys that look like credentials (api_key,
  password, token, secret, authorization, sasl_*), any ``sk-ant-...`` string and
  ``password=...`` / ``'api_key': '...'`` / ``Bearer ...`` pairs inside free text,
  so an API key never reaches a log line.

JSON lines in production, coloured console output when stderr is a TTY.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from typing import Any

import structlog
from structlog.typing import EventDict

_SECRET_KEY = re.compile(r"(api[_-]?key|password|passwd|secret|token|authorization|sasl_plain)", re.I)
_SECRET_VALUE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}|sk-[A-Za-z0-9]{20,}")
#: ``password=x``, ``'api_key': 'x'``, ``Bearer x`` inside free text (exception messages, config reprs)
_SECRET_PAIR = re.compile(
    r"""((?:api[_-]?key|password|passwd|secret|token|sasl_plain_password)['"]?\s*[:=]\s*['"]?|bearer\s+)[^\s'",}]+""",
    re.I,
)
MASK = "***"


def add_otel_ids(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """Add the current OTel trace/span ids (when a span is recording)."""
    try:
        from opentelemetry import trace

        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            event.setdefault("trace_id", format(ctx.trace_id, "032x"))
            event.setdefault("span_id", format(ctx.span_id, "016x"))
    except Exception:  # pragma: no cover - logging must never fail
        pass
    return event


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_PAIR.sub(lambda m: m.group(1) + MASK, _SECRET_VALUE.sub(MASK, value))
    if isinstance(value, dict):
        return {k: (MASK if _SECRET_KEY.search(str(k)) else _mask(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_mask(v) for v in value)
    return value


def redact_secrets(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """Mask credential-looking keys and API-key-looking strings."""
    for key in list(event):
        if key != "event" and _SECRET_KEY.search(key) and "tokens" not in key:
            event[key] = MASK
        else:
            event[key] = _mask(event[key])
    return event


class _StderrLogger:
    """Prints each line to the ``sys.stderr`` of the moment it is written, not the one seen at configure time.

    A process that swaps and closes ``sys.stderr`` (``contextlib.redirect_stderr``, a notebook cell,
    a test's capture) after ``configure_logging`` would otherwise make every later log call raise
    ``ValueError: I/O operation on closed file`` -- in a worker, inside its rebalance listener.
    """

    _lock = threading.Lock()

    def msg(self, message: str) -> None:
        with self._lock:
            print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


_STDERR_LOGGER = _StderrLogger()


def _stderr_logger_factory(*_args: Any) -> _StderrLogger:
    return _STDERR_LOGGER


def configure_logging(level: str = "INFO", json_logs: bool | None = None) -> None:
    """Configure structlog once per process (idempotent)."""
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    renderer: Any = structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer(colors=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            add_otel_ids,
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=_stderr_logger_factory,  # sys.stderr resolved per line, not pinned here
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
