"""The wire contract between the collector and the evaluator worker.

One :class:`RagTrace` per RAG request: the question, the answer, the retrieved
context chunks and bounded slice labels. JSON on the wire (UTF-8), keyed by
``trace_id``. Both sides share it (through :mod:`contract`), so it changes
only by adding optional fields; anything else bumps ``schema_version``.

Size limits are hard: :func:`enforce_limits` trims a record to fit (drops
context chunks past the maximum, then shortens the longest texts) and records
what it cut in ``truncation``. Its result always fits ``max_bytes``; it raises
(:class:`RecordTooLargeError`, a ``ValueError``) only when the fields it never
cuts (ids, span ids, slices) alone are over the limit.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contract.errors import RecordError

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


class Context(BaseModel):
    """One retrieved chunk, in retrieval order."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    content: str = ""
    score: float | None = None
    source: str | None = None
    #: how the answering model was given it: ``retriever`` (a retrieved document), ``tool`` (a tool's returned
    #: text), ``prompt`` (the system prompt, opt-in); None in records of collectors before agent turns
    origin: str | None = None
    #: the tool whose call produced it (a retriever tool's documents carry the tool's name too)
    tool: str | None = None
    tool_call_id: str | None = None


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

    @field_validator("trace_id")
    @classmethod
    def _trace_id_identifies(cls, value: str) -> str:
        """A blank id would make every such record a "duplicate" of the first (skipped, never judged), and a ``/``
        would make ``trace a/b`` and ``trace a, call b`` one :attr:`record_key`."""
        if not value.strip():
            raise ValueError("trace_id is blank")
        if "/" in value:
            raise ValueError("trace_id contains '/' (it separates the trace from the call in record keys)")
        return value

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


class RecordTooLargeError(RecordError, ValueError):
    """Raised by :func:`enforce_limits` when even the fully cut record exceeds ``max_bytes``.

    Only fields it never cuts (ids, sources, span ids, slices) can cause it. A ``ValueError``, so callers
    that already drop unserialisable records (``except ValueError``) drop this one too.
    """

    reason = "too_large"


def _json_size(text: str) -> int:
    """Bytes ``text`` takes inside a JSON string on the wire (escapes included, quotes not).

    The same escaping as :meth:`RagTrace.to_json_bytes` (``\\"``, ``\\\\``, ``\\n``-style and ``\\u00XX`` for
    control characters, the rest raw UTF-8). Raises ``UnicodeEncodeError`` (a ``ValueError``) on lone surrogates,
    as serialising the record would.
    """
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def _fit_prefix(text: str, budget: int) -> int:
    """The longest ``k`` with ``_json_size(text[:k]) <= budget``: a bisection between ``budget // 6`` characters
    (a character takes at most 6 bytes, ``\\u00XX``) and ``budget`` (at least 1), so ~log2(budget) probes of at
    most ``budget`` characters each, whatever the length of ``text``."""
    hi = min(len(text), max(0, budget))
    if _json_size(text[:hi]) <= budget:
        return hi
    lo = max(0, budget) // 6
    while hi - lo > 1:  # invariant: text[:lo] fits, text[:hi] does not
        mid = (lo + hi) // 2
        if _json_size(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


#: fields of at most this many wire bytes are never cut for size, and a cut field keeps this many (marker included)
_MIN_CUT_BYTES = 64
_MARK_BYTES = _json_size(_TRUNCATION_MARK)
#: what the ``truncation`` note may still grow by while cuts are made (field names, digits): reserved when cutting
_TRUNCATION_SLACK = 128


def _water_level(sizes: list[int], excess: int, floor: int) -> int:
    """The highest level ``L >= floor`` such that cutting every size above ``L`` down to ``L`` removes at least
    ``excess`` bytes (``floor`` when even that is not enough): the longest texts give way first, evenly."""
    removable = 0
    ordered = sorted(sizes, reverse=True)
    for i, size in enumerate(ordered):
        nxt = ordered[i + 1] if i + 1 < len(ordered) else 0
        # cutting the i+1 largest down to nxt removes removable + (i+1) * (size - nxt)
        if removable + (i + 1) * (size - nxt) >= excess:
            level = size - (excess - removable + i) // (i + 1)  # ceil((excess - removable) / (i + 1))
            return max(floor, level)
        removable += (i + 1) * (size - nxt)
    return floor


def enforce_limits(
    record: RagTrace,
    *,
    max_contexts: int = DEFAULT_MAX_CONTEXTS,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> RagTrace:
    """Return a copy of ``record`` that fits the limits, noting every cut (a shallow copy when nothing is cut).

    Order: drop chunks past ``max_contexts`` (retrieval order kept, so the
    best-ranked survive); cap every text at ``max_text_chars``; then, if the
    JSON is over ``max_bytes``: drop the attributes (before any text that is
    judged); cut the longest chunk contents and the question down to one
    common length in wire bytes, so the longest give way first (never below
    64 bytes); then the answer, which is protected until last; as a fail-safe,
    drop chunks from the end. Each text's JSON-escaped UTF-8 size is measured
    once and cut to its share in one pass (a second only to cover a shortfall),
    so the work stays linear in the input, never one re-serialisation per cut.

    The result, ``truncation`` note included, always fits ``max_bytes``. If even
    the fully cut record cannot (only fields never cut, such as ids, span ids
    and slices, can be that large), :class:`RecordTooLargeError` (a
    ``ValueError``) is raised; lone surrogates raise ``ValueError`` too, as
    serialising them would.
    """
    texts = _texts(record)
    if (
        len(record.contexts) <= max_contexts
        and all(len(t) <= max_text_chars for t in texts)
        and sum(map(len, texts)) <= max_bytes
        and _wire_size(record) <= max_bytes
    ):
        return record.model_copy()  # fits as it is (the usual case): no deep copy of every chunk
    rec = record.model_copy(deep=True)
    trunc = Truncation()
    if len(rec.contexts) > max_contexts:
        trunc.contexts_dropped = len(rec.contexts) - max_contexts
        rec.contexts = rec.contexts[:max_contexts]
        trunc.fields.append("contexts")

    def note(name: str, removed: int) -> None:
        if removed:
            trunc.chars_removed += removed
            if name not in trunc.fields:
                trunc.fields.append(name)

    def cap(name: str, text: str | None, limit: int) -> str | None:
        if text is None:
            return None
        new, removed = _cut(text, limit)
        note(name, removed)
        return new

    rec.question = cap("question", rec.question, max_text_chars)
    rec.answer = cap("answer", rec.answer, max_text_chars) or ""
    for ctx in rec.contexts:
        ctx.content = cap("contexts.content", ctx.content, max_text_chars) or ""

    def attach() -> None:  # the note travels in the record, so it is part of what must fit
        if rec.truncation is not trunc:
            trunc.original_bytes = _record_size(record)
            rec.truncation = trunc

    if trunc.fields:
        attach()
    # every character takes at least a byte: more characters than max_bytes is over without serialising it all
    if sum(map(len, _texts(rec))) <= max_bytes and _wire_size(rec) <= max_bytes:
        return rec
    attach()
    if rec.attributes:
        rec.attributes = {}
        trunc.fields.append("attributes")
    size = _cut_texts_to_fit(rec, max_bytes, note)
    if size > max_bytes:
        size = _drop_contexts_to_fit(rec, size, max_bytes, trunc)
    if size > max_bytes:
        raise RecordTooLargeError(
            f"record is {size} bytes with every text cut and no contexts; the limit is {max_bytes}"
        )
    return rec


def _wire_size(model: BaseModel) -> int:
    """``len(model.to_json_bytes())``: the same serialiser, without the round trip through ``str``."""
    return len(model.__pydantic_serializer__.to_json(model))


def _cut_texts_to_fit(rec: RagTrace, max_bytes: int, note: Callable[[str, int], None]) -> int:
    """Cut the chunk contents and the question (longest first, to one level), then the answer; the new size.

    Every text's wire size is measured once and the rest of the record once (with the texts emptied), so the
    record's size is known without serialising it; a cut text is its longest prefix that, with the marker, fits
    its share. The result is serialised to check; a further pass covers any shortfall (at most three in all).
    """
    size = _record_size(rec)
    for _ in range(3):
        if size <= max_bytes:
            break
        excess = size - max_bytes + _TRUNCATION_SLACK
        # the texts that give way first (chunk contents, the question), then the answer alone
        first: list[tuple[str, int, str]] = [("contexts.content", i, c.content) for i, c in enumerate(rec.contexts)]
        if rec.question is not None:
            first.append(("question", -1, rec.question))
        for group in (first, [("answer", -1, rec.answer)]):
            sizes = [_json_size(text) for _, _, text in group]
            level = _water_level(sizes, excess, _MIN_CUT_BYTES)
            for (name, idx, text), text_size in zip(group, sizes):
                if text_size <= level:
                    continue
                keep = _fit_prefix(text, level - _MARK_BYTES)
                new = text[:keep] + _TRUNCATION_MARK
                excess -= text_size - _json_size(new)
                note(name, len(text) - keep)
                if name == "contexts.content":
                    rec.contexts[idx].content = new
                elif name == "question":
                    rec.question = new
                else:
                    rec.answer = new
            if excess <= 0:
                break
        new_size = _wire_size(rec)
        if new_size >= size:  # nothing left to cut
            return new_size
        size = new_size
    return size


def _texts(rec: RagTrace) -> list[str]:
    """The texts :func:`enforce_limits` may cut for size."""
    texts = [c.content for c in rec.contexts] + [rec.answer]
    return texts if rec.question is None else [*texts, rec.question]


def _record_size(rec: RagTrace) -> int:
    """``len(rec.to_json_bytes())`` measured piecewise: the record with its texts emptied plus each text's wire
    size, so a record of many MB is never serialised in one call (each call holds the GIL)."""
    skeleton = rec.model_copy(
        update={
            "question": None if rec.question is None else "",
            "answer": "",
            "contexts": [c.model_copy(update={"content": ""}) for c in rec.contexts],
        }
    )
    return _wire_size(skeleton) + sum(map(_json_size, _texts(rec)))


def _drop_contexts_to_fit(rec: RagTrace, size: int, max_bytes: int, trunc: Truncation) -> int:
    """Fail-safe: drop chunks from the end (the lowest-ranked) until the record fits or none is left; the new size."""
    excess = size - max_bytes + _TRUNCATION_SLACK
    keep = len(rec.contexts)
    while keep and excess > 0:
        keep -= 1
        excess -= _wire_size(rec.contexts[keep]) + (1 if keep else 0)  # and the comma before it
    if keep == len(rec.contexts):
        return size
    trunc.contexts_dropped += len(rec.contexts) - keep
    rec.contexts = rec.contexts[:keep]
    if "contexts" not in trunc.fields:
        trunc.fields.append("contexts")
    return _wire_size(rec)
