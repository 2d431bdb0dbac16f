"""Text out of span attribute values: JSON unwrapping, chat messages, retrieved documents.

Every convention stores text its own way (plain strings, JSON of a framework's objects, indexed
attributes, GenAI ``parts``); the helpers here read them into plain strings and
:class:`~contract.record.Context` objects and never raise on odd values.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterable, Mapping

from contract.record import Context

#: what OpenInference writes in place of hidden inputs/outputs (``OPENINFERENCE_HIDE_*``)
HIDDEN_MARK = "__REDACTED__"

QUESTION_KEYS = ("question", "query", "input", "inputs", "user_input", "q", "prompt", "text", "message")
ANSWER_KEYS = ("answer", "output", "outputs", "result", "response", "final_answer", "output_text", "text", "content")
USER_ROLES = ("user", "human")
ASSISTANT_ROLES = ("assistant", "ai", "model")
TOOL_ROLES = ("tool", "function", "ipython")
SYSTEM_ROLES = ("system", "developer")


def maybe_json(value: str) -> Any:
    """``value`` parsed when it looks like JSON (object, array, string), else ``value`` itself."""
    s = value.strip()
    if s[:1] in ("{", "[", '"'):
        try:
            return json.loads(s)
        except (ValueError, RecursionError):  # absurdly deep nesting: keep it as text
            return value
    return value


def as_float(value: Any) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond a float's range
        return None


def as_str(value: Any) -> str | None:
    return None if value is None else str(value)


def visible(text: Any) -> str | None:
    """``text`` when it is a non-blank string that is not the hidden mark, else None."""
    if not isinstance(text, str) or not text.strip() or text.strip() == HIDDEN_MARK:
        return None
    return text


# -- chat messages ------------------------------------------------------------------------------


def message_role(msg: Mapping[str, Any]) -> str:
    """A message's role, lower case, from ``role``/``type`` or LangChain's constructor form (``HumanMessage``)."""
    role = msg.get("role") or msg.get("type") or ""
    if role in ("", "constructor") and isinstance(msg.get("id"), list) and msg["id"]:
        role = str(msg["id"][-1])  # LangChain constructor form: {"type": "constructor", "id": [..., "HumanMessage"]}
    role = str(role).lower()
    if role.endswith("message"):
        role = role[: -len("message")]
    return role


def message_text(msg: Mapping[str, Any]) -> str | None:
    """A message's text: ``content`` as a string, or the text parts of a content/parts list."""
    if isinstance(msg.get("kwargs"), Mapping):  # LangChain constructor form
        return message_text(msg["kwargs"])
    if isinstance(msg.get("data"), Mapping) and "content" not in msg:
        return message_text(msg["data"])
    content = msg.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else msg.get("parts")
    if isinstance(parts, list):  # GenAI parts / multimodal content lists
        texts = [
            str(p.get("content") if p.get("content") is not None else p.get("text"))
            for p in parts
            if isinstance(p, Mapping) and p.get("type", "text") == "text" and (p.get("content") or p.get("text"))
        ]
        texts += [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def flat_messages(messages: Iterable[Any]) -> list[Mapping[str, Any]]:
    """Messages as one flat list of mappings (LangChain batches ``[[msg, msg]]`` flattened)."""
    flat: list[Mapping[str, Any]] = []
    for m in messages:
        if isinstance(m, list):
            flat.extend(x for x in m if isinstance(x, Mapping))
        elif isinstance(m, Mapping):
            flat.append(m)
    return flat


def pick_message(messages: Iterable[Any], roles: tuple[str, ...]) -> str | None:
    """Text of the last message whose role is in ``roles`` (else the last message with text)."""
    fallback = None
    for m in reversed(flat_messages(messages)):
        text = message_text(m)
        if not text:
            continue
        if message_role(m) in roles:
            return text
        fallback = fallback or text
    return fallback


def looks_like_messages(obj: Any) -> bool:
    return (
        isinstance(obj, list)
        and bool(obj)
        and all(isinstance(m, (Mapping, list)) for m in obj)
        and any(isinstance(m, Mapping) and ("role" in m or "content" in m or "kwargs" in m) for m in obj)
    )


def _pick(obj: Any, keys: tuple[str, ...], roles: tuple[str, ...], depth: int = 0) -> str | None:
    """Unwrap obvious JSON shapes ({"question": ...}, messages, args/kwargs) to text."""
    if depth > 4 or obj is None:
        return None
    if isinstance(obj, str):
        return obj
    if isinstance(obj, (int, float, bool)):
        return None
    if isinstance(obj, Mapping):
        for key in keys:
            if key in obj:
                found = _pick(obj[key], keys, roles, depth + 1)
                if found:
                    return found
        if "messages" in obj:
            found = pick_message(obj["messages"], roles)
            if found:
                return found
        if "generations" in obj:  # LangChain LLMResult
            gens = obj["generations"]
            while isinstance(gens, list) and gens and isinstance(gens[-1], list):
                gens = gens[-1]
            if isinstance(gens, list) and gens and isinstance(gens[-1], Mapping):
                return _pick(gens[-1], ("text",), roles, depth + 1)
        if "kwargs" in obj or "args" in obj:  # Traceloop entity input
            found = _pick(obj.get("kwargs") or {}, keys, roles, depth + 1)
            if found:
                return found
            args = obj.get("args")
            for arg in args if isinstance(args, list) else []:
                found = _pick(arg, keys, roles, depth + 1)
                if found:
                    return found
        if "content" in obj or "parts" in obj:
            return message_text(obj)
        if len(obj) == 1:
            only = next(iter(obj.values()))
            if isinstance(only, str):
                return only
        return None
    if isinstance(obj, list):
        if looks_like_messages(obj):
            return pick_message(obj, roles)
        if len(obj) == 1:
            return _pick(obj[0], keys, roles, depth + 1)
    return None


def pick_text(obj: Any, *, question: bool) -> str | None:
    """Already-parsed JSON read as a question (``question=True``) or an answer."""
    keys, roles = (QUESTION_KEYS, USER_ROLES) if question else (ANSWER_KEYS, ASSISTANT_ROLES)
    return _pick(obj, keys, roles)


def unwrap_text(value: Any, *, question: bool) -> str | None:
    """Read ``value`` (plain text or JSON) as a question (``question=True``) or an answer."""
    if not isinstance(value, str) or value.strip() == HIDDEN_MARK:
        return None
    return visible(pick_text(maybe_json(value), question=question))


def tool_output(value: Any) -> tuple[str | None, str | None]:
    """A tool span's result as the model received it, and the call id it answers where the value says.

    LangChain writes the ``ToolMessage`` as JSON (``{"type": "tool", "data": {"content": ..., "tool_call_id": ..}}``
    or its constructor form; Traceloop wraps it in ``{"output": ..}``), LlamaIndex a ``ToolOutput``; other
    frameworks write the returned string itself, or JSON of a returned object, which is kept as written (the model
    was given that text).
    """
    if not isinstance(value, str) or value.strip() == HIDDEN_MARK:
        return None, None
    parsed = maybe_json(value)
    while (
        isinstance(parsed, Mapping)
        and "content" not in parsed
        and "type" not in parsed
        and isinstance(parsed.get("output", parsed.get("outputs")), Mapping)
    ):
        parsed = parsed.get("output", parsed.get("outputs"))  # Traceloop's entity output wrapper
    if isinstance(parsed, Mapping):
        kwargs = parsed.get("kwargs")
        inner: Mapping[str, Any] = kwargs if isinstance(kwargs, Mapping) else parsed
        if isinstance(inner.get("data"), Mapping) and "content" not in inner:
            inner = inner["data"]
        if (message_role(parsed) == "tool" or message_role(inner) == "tool") and "content" in inner:
            content = inner["content"]
            text = content if isinstance(content, str) else message_text(inner)
            if text is None:
                text = json.dumps(content, ensure_ascii=False)
            return visible(text), as_str(inner.get("tool_call_id"))
        if "tool_name" in parsed and ("blocks" in parsed or "content" in parsed):  # LlamaIndex ToolOutput
            blocks = parsed.get("blocks")
            texts = (
                [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
                if isinstance(blocks, list)
                else []
            )
            content = parsed.get("content")
            text = "".join(texts) if texts else (content if isinstance(content, str) else None)
            if text is not None:
                return visible(text), None
    if isinstance(parsed, str) and parsed is not value:  # a JSON-encoded string
        return visible(parsed), None
    return visible(value), None


def tool_output_text(value: Any) -> str | None:
    """:func:`tool_output`'s text only."""
    return tool_output(value)[0]


# -- indexed attributes -------------------------------------------------------------------------


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """Group ``prefix.{i}.rest`` attributes by ``i`` (tolerates gaps left by attribute limits)."""
    return indexed_many(attrs, (prefix,))[prefix]


@functools.lru_cache(maxsize=64)
def _indexed_pattern(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    # ASCII digits only: "²".isdigit() is True, but int("²") raises
    return re.compile("(" + "|".join(re.escape(p) for p in prefixes) + r")\.([0-9]+)(?:\.|$)(.*)", re.ASCII | re.DOTALL)


def indexed_many(attrs: Mapping[str, Any], prefixes: tuple[str, ...]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """:func:`indexed` for several prefixes in one pass over ``attrs`` (an LLM span's input and output messages:
    agents' spans carry the whole conversation, so the attributes are many)."""
    found: dict[str, dict[int, dict[str, Any]]] = {p: {} for p in prefixes}
    match = _indexed_pattern(prefixes).match
    for key, value in attrs.items():
        m = match(key) if isinstance(key, str) else None
        if m is not None:
            prefix, idx, rest = m.groups()
            found[prefix].setdefault(int(idx), {})[rest] = value
    return {p: sorted(groups.items()) for p, groups in found.items()}


# -- retrieved documents ------------------------------------------------------------------------

DOC_TEXT_KEYS = ("page_content", "content", "text", "document")


def source_of(metadata: Any) -> str | None:
    """A document's source (``source``, ``url``, ``file_path``, ``path`` or ``title`` of its metadata)."""
    if isinstance(metadata, str):
        metadata = maybe_json(metadata)
    if isinstance(metadata, Mapping):
        for key in ("source", "url", "file_path", "path", "title"):
            if metadata.get(key):
                return str(metadata[key])
    return None


def _is_document(obj: Any) -> bool:
    if not isinstance(obj, Mapping):
        return False
    if isinstance(obj.get("kwargs"), Mapping):  # LangChain constructor form {"lc":1,"kwargs":{"page_content":..}}
        obj = obj["kwargs"]
    return (
        "page_content" in obj
        or ("metadata" in obj and any(k in obj for k in DOC_TEXT_KEYS))
        or ("node" in obj and isinstance(obj["node"], Mapping))
    )


def documents_in(obj: Any) -> list[Mapping[str, Any]] | None:
    """Retrieved documents in an entity output: ``{"documents": [...]}``, a bare list, LlamaIndex nodes; else None."""
    if isinstance(obj, Mapping):
        for key in ("documents", "nodes", "source_nodes", "outputs", "output"):
            if key in obj:
                found = documents_in(obj[key])
                if found is not None:
                    return found
        return None
    if isinstance(obj, list) and obj and all(isinstance(d, str) for d in obj):
        # Traceloop LlamaIndex (VectorIndexRetriever.task): a list of JSON-*encoded* NodeWithScore strings
        obj = [maybe_json(d) for d in obj]
    if isinstance(obj, list) and obj and all(isinstance(d, Mapping) and _is_document(d) for d in obj):
        return list(obj)
    return None


def retrieved(content: Any, *, id: Any = None, score: Any = None, source: str | None = None) -> Context | None:
    """A retrieved document as a :class:`Context` (``origin="retriever"``), or None when it carries no text (absent,
    or hidden by the instrumentation): the caller counts it as missing content. Every convention builds its
    documents here."""
    if content is None or content == HIDDEN_MARK or content == "":
        return None
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return Context(id=as_str(id), content=text, score=as_float(score), source=source, origin="retriever")


def documents(rows: Iterable[tuple[Any, Any, Any, Any]]) -> tuple[list[Context], int]:
    """``(content, id, score, metadata)`` rows as retrieved contexts (:func:`retrieved`), and how many carried no
    text: the attribute and event readers of every convention share it."""
    ctxs: list[Context] = []
    missing = 0
    for content, ident, score, metadata in rows:
        ctx = retrieved(None if content is None else str(content), id=ident, score=score, source=source_of(metadata))
        if ctx is None:
            missing += 1
        else:
            ctxs.append(ctx)
    return ctxs, missing


def contexts_from_documents(docs: Iterable[Mapping[str, Any]]) -> tuple[list[Context], int]:
    """Documents (LangChain, LlamaIndex nodes, plain dicts) as contexts; also how many carried no text."""
    ctxs: list[Context] = []
    missing = 0
    for doc in docs:
        score = doc.get("score")
        if isinstance(doc.get("node"), Mapping):  # LlamaIndex NodeWithScore
            doc = doc["node"]
        if isinstance(doc.get("kwargs"), Mapping):
            doc = doc["kwargs"]
        content = next((doc[k] for k in DOC_TEXT_KEYS if isinstance(doc.get(k), str) and doc.get(k)), None)
        metadata = doc.get("metadata") or doc.get("extra_info")
        ident = doc.get("id") or doc.get("id_") or (metadata.get("id") if isinstance(metadata, Mapping) else None)
        ctx = retrieved(
            content, id=ident, score=score if score is not None else doc.get("score"), source=source_of(metadata)
        )
        if ctx is None:
            missing += 1
        else:
            ctxs.append(ctx)
    return ctxs, missing


def ids_from_output(ctxs: list[Context], output: Any) -> None:
    """OpenInference LangChain sets no ``document.id``; the retriever's ``output.value`` JSON has them: match by content."""
    docs = documents_in(maybe_json(output)) if isinstance(output, str) else None
    if not docs:
        return
    found, _ = contexts_from_documents(docs)
    by_content: dict[str, str] = {}
    for c in found:
        if c.id is not None:
            by_content.setdefault(c.content, c.id)
    for c in ctxs:
        if c.id is None and c.content in by_content:
            c.id = by_content[c.content]
