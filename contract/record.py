"""The wire contract between the collector and the evaluator worker.

One :class:`RagTrace` per RAG request: the question, the answer, the retrieved
context chunks and bounded slice labels. JSON on the wire (UTF-8), keyed by
``trace_id``. Both sides share it (through :mod:`contract`), so it changes
only by adding optional fields; anything else bumps ``schema_version``.

Size limits are hard: :func:`enforce_limits` trims a record to fit (drops
context chunks past the maximum, then shortens the longest texts) and records
what it cut in ``truncation``. It never raises on big input.
"""

from __future__ import annotations

import json
import re
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = frozenset({1})

#: Kafka's default ``message.max.bytes`` is ~1 MB; stay clear of it.
DEFAULT_MAX_RECORD_BYTES = 900_000
MAX_TRACE_ID_CHARS = 256
DEFAULT_MAX_CONTEXTS = 64
DEFAULT_MAX_TEXT_CHARS = 100_000

AttributeValue = Union[str, int, float, bool]

_TRUNCATION_MARK = " …[truncated]"
#: bytes that may decode to a lone surrogate: a \\uD800-\\uDFFF escape, or its surrogatepass UTF-8 form
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]|\xed[\xa0-\xbf]")


#: the slice labels metrics are broken down by unless configured otherwise (bounded: never trace ids or text)
DEFAULT_SLICE_LABELS: tuple[str, ...] = ("release", "model", "route", "environment")


class Context(BaseModel):
    """One retrieved chunk, in retrieval order."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    content: str = ""
    score: float | None = None
    source: str | None = None


class Truncation(BaseModel):
    """What :func:`enforce_limits` cut to make the record fit."""

    contexts_dropped: int = 0
    chars_removed: int = 0
    fields: list[str] = Field(default_factory=list)
    original_bytes: int = 0


class RagTrace(BaseModel):
    """One RAG request as the evaluator sees it (schema version 1)."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    #: W3C trace ids are 32 hex digits; the bound keeps Kafka keys and result records small
    trace_id: str = Field(max_length=MAX_TRACE_ID_CHARS)
    root_span_id: str | None = None
    #: set only when the trace holds several RAG calls (an agent that retrieves and answers twice under one root):
    #: the span id heading this call; each call is its own record, identified by :attr:`record_key`
    call_id: str | None = Field(default=None, max_length=64)
    span_ids: list[str] = Field(default_factory=list)
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    question: str | None = None
    answer: str = ""
    contexts: list[Context] = Field(default_factory=list)
    slices: dict[str, str] = Field(default_factory=dict)
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    convention: str | None = None
    truncation: Truncation | None = None

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts_from_strings(cls, value: Any) -> Any:
        """Accept plain strings for contexts (batch input files use them)."""
        if isinstance(value, list):
            return [{"content": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("slices", mode="before")
    @classmethod
    def _slices_as_strings(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items() if v is not None}
        return value

    # -- wire format -------------------------------------------------------
    def to_json_bytes(self) -> bytes:
        """Serialise for Kafka (compact JSON, UTF-8, no nulls dropped)."""
        return self.model_dump_json().encode("utf-8")

    @classmethod
    def from_json_bytes(cls, data: bytes | str) -> "RagTrace":
        """Decode one Kafka value; raises ``RecordDecodeError`` with the reason."""
        from contract.errors import RecordDecodeError

        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            raise RecordDecodeError(f"not JSON: {str(exc)[:200]}", reason="not_json") from exc
        if not isinstance(raw, dict):
            raise RecordDecodeError("record is not a JSON object", reason="not_object")
        version = raw.get("schema_version", SCHEMA_VERSION)
        if type(version) is not int or version not in SUPPORTED_SCHEMA_VERSIONS:  # "1", [1], true: not versions
            raise RecordDecodeError(
                f"unsupported schema_version {str(version)[:50]!r} (this worker knows {sorted(SUPPORTED_SCHEMA_VERSIONS)})",
                reason="schema_version",
            )
        try:
            rec = cls.model_validate(raw)
        except ValidationError as exc:  # messages without the offending input: it may be personal data
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_input=False)[:5]
            )
            raise RecordDecodeError(f"invalid record: {problems}"[:500], reason="invalid") from exc
        except ValueError as exc:
            raise RecordDecodeError(f"invalid record: {str(exc)[:200]}", reason="invalid") from exc
        if isinstance(data, str) or _MAYBE_SURROGATE.search(data):
            # lone UTF-16 surrogates (from \\udXXX escapes) decode but can never be written out again
            try:
                rec.to_json_bytes()
            except ValueError as exc:
                raise RecordDecodeError(f"invalid text: {str(exc)[:200]}", reason="invalid_text") from exc
        return rec

    @property
    def key(self) -> bytes:
        """Kafka key: the trace id, so a trace's records share a partition."""
        return self.trace_id.encode("ascii", "replace")

    @property
    def record_key(self) -> str:
        """What identifies this record (dedupe, results): :func:`record_key` of its trace and call."""
        return record_key(self.trace_id, self.call_id)


def record_key(trace_id: str, call_id: str | None) -> str:
    """A record's identity: the trace id, or ``trace_id/call_id`` for one of several RAG calls in a trace."""
    return trace_id if not call_id else f"{trace_id}/{call_id}"


def _cut(text: str, limit: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    keep = max(0, limit - len(_TRUNCATION_MARK))
    return text[:keep] + _TRUNCATION_MARK, len(text) - keep


def enforce_limits(
    record: RagTrace,
    *,
    max_contexts: int = DEFAULT_MAX_CONTEXTS,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> RagTrace:
    """Return a copy of ``record`` that fits the limits, noting every cut.

    Order: drop chunks past ``max_contexts`` (retrieval order kept, so the
    best-ranked survive); cap every text at ``max_text_chars``; then, while the
    JSON is over ``max_bytes``, halve the longest remaining text. Attributes
    are dropped before any text that is judged.
    """
    rec = record.model_copy(deep=True)
    trunc = Truncation()
    if len(rec.contexts) > max_contexts:
        trunc.contexts_dropped = len(rec.contexts) - max_contexts
        rec.contexts = rec.contexts[:max_contexts]
        trunc.fields.append("contexts")

    def cap(name: str, text: str | None, limit: int) -> str | None:
        if text is None:
            return None
        new, removed = _cut(text, limit)
        if removed:
            trunc.chars_removed += removed
            if name not in trunc.fields:
                trunc.fields.append(name)
        return new

    rec.question = cap("question", rec.question, max_text_chars)
    rec.answer = cap("answer", rec.answer, max_text_chars) or ""
    for ctx in rec.contexts:
        ctx.content = cap("contexts.content", ctx.content, max_text_chars) or ""

    size = len(rec.to_json_bytes())
    if size > max_bytes and rec.attributes:
        rec.attributes = {}
        trunc.fields.append("attributes")
        size = len(rec.to_json_bytes())
    guard = 0
    while size > max_bytes and guard < 200:
        guard += 1
        # the longest text gives way first; the answer is protected until last
        candidates: list[tuple[int, str, int]] = [
            (len(c.content), "contexts.content", i) for i, c in enumerate(rec.contexts)
        ]
        candidates.append((len(rec.question or ""), "question", -1))
        longest = max(candidates)
        if longest[0] < 64:
            candidates = [(len(rec.answer), "answer", -1)]
            longest = candidates[0]
            if longest[0] < 64:
                break
        length, name, idx = longest
        if name == "contexts.content":
            rec.contexts[idx].content = cap(name, rec.contexts[idx].content, length // 2) or ""
        elif name == "question":
            rec.question = cap(name, rec.question, length // 2)
        else:
            rec.answer = cap(name, rec.answer, length // 2) or ""
        size = len(rec.to_json_bytes())
    if trunc.fields:
        trunc.original_bytes = len(record.to_json_bytes())
        rec.truncation = trunc
    return rec
