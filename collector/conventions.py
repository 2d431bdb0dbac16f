"""Read question, answer, retrieved contexts, model and slices from finished spans.

Three instrumentation conventions are understood (mixed in one trace is fine):

- **OpenInference** (``openinference.span.kind``): RETRIEVER spans carry the
  query in ``input.value`` and hits in ``retrieval.documents.{i}.document.*``;
  LLM spans carry ``llm.input_messages`` / ``llm.output_messages`` and
  ``llm.model_name``; CHAIN/AGENT spans carry ``input.value`` / ``output.value``.
- **OTel GenAI** (``gen_ai.operation.name``): chat/text_completion spans with
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON) or the legacy
  ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``; retrieval spans with
  ``gen_ai.retrieval.query.text`` and ``gen_ai.retrieval.documents`` (JSON; a
  document without content is skipped and counted).
- **Traceloop / OpenLLMetry** (``traceloop.span.kind``): workflow/task/agent spans
  with ``traceloop.entity.input`` / ``traceloop.entity.output`` (JSON: workflow
  ``{"inputs": ..}`` / ``{"outputs": ..}``, a retriever task's output
  ``{"documents": [{"page_content", "metadata"}]}`` or LlamaIndex nodes), vector DB
  hits as span events ``db.query.result``; the chat model from
  ``traceloop.association.properties.ls_model_name`` when ``gen_ai.*`` says ``unknown``.
  Traceloop spans also carry ``gen_ai.operation.name`` (``vector_db_retrieve``,
  ``execute_task``, ``invoke_agent``, ``chat``): a span with ``traceloop.span.kind``
  is read as Traceloop, except its chat spans, which are read as GenAI.

Work is split in two so memory stays bounded: :meth:`SpanExtractor.extract`
turns one span into a small :class:`SpanFacts` (only the fields used later), and
:meth:`SpanExtractor.build` turns one trace's facts into a :class:`RagTrace`.

Question / answer choice (LangChain nests CHAIN spans that also carry
input/output values): the *top* CHAIN-like span (least depth in the trace, the
local root in LangChain's ``RunnableSequence`` case) gives both when its values
can be read as text; otherwise the first retriever's query is the question and
the last LLM span's output is the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from collector.config import CollectorSettings
from contract.record import AttributeValue, Context, RagTrace

OI_KIND = "openinference.span.kind"
_OI_DOC_PREFIX = "retrieval.documents."
GENAI_OP = "gen_ai.operation.name"
TL_KIND = "traceloop.span.kind"
HIDDEN_MARK = "__REDACTED__"

RETRIEVER, LLM, CHAIN, OTHER = "retriever", "llm", "chain", "other"

_OI_KINDS = {"RETRIEVER": RETRIEVER, "LLM": LLM, "CHAIN": CHAIN, "AGENT": CHAIN}
_GENAI_KINDS = {
    "chat": LLM,
    "text_completion": LLM,
    "generate_content": LLM,
    "completion": LLM,
    "retrieval": RETRIEVER,
    "retrieve": RETRIEVER,
    "invoke_agent": CHAIN,
    "invoke_workflow": CHAIN,
    "execute_task": CHAIN,
    "vector_db_retrieve": RETRIEVER,
}
_TL_KINDS = {"workflow": CHAIN, "task": CHAIN, "agent": CHAIN}
#: gen_ai.operation.name values that Traceloop puts on its own task/retriever spans
_TL_GENAI_OPS = frozenset({"vector_db_retrieve", "execute_task", "invoke_agent", "invoke_workflow"})
TL_MODEL_KEYS = ("traceloop.association.properties.ls_model_name", "traceloop.association.properties.model")
_UNKNOWN_MODELS = frozenset({"", "unknown", "none", "null"})
RESOURCE_KEYS = ("service.name", "service.version", "deployment.environment", "deployment.environment.name")

_QUESTION_KEYS = ("question", "query", "input", "inputs", "user_input", "q", "prompt", "text", "message")
_ANSWER_KEYS = ("answer", "output", "outputs", "result", "response", "final_answer", "output_text", "text", "content")
_USER_ROLES = ("user", "human")
_ASSISTANT_ROLES = ("assistant", "ai", "model")
_MAX_SLICE_CHARS = 128


@dataclass(slots=True)
class SpanFacts:
    """What one finished span contributes to its trace (only what is used later)."""

    span_id: int
    parent_id: int | None
    is_root: bool
    name: str
    start_ns: int
    end_ns: int
    kind: str = OTHER
    convention: str | None = None
    input_text: str | None = None
    output_text: str | None = None
    contexts: tuple[Context, ...] = ()
    #: system instructions / system messages of an LLM span (the opt-in prompt-context fallback)
    prompt_context: tuple[str, ...] = ()
    missing_content: int = 0
    model: str | None = None
    attrs: dict[str, AttributeValue] = field(default_factory=dict)
    resource: dict[str, str] = field(default_factory=dict)
    error: bool = False
    hidden: bool = False
    dropped_attributes: int = 0


@dataclass(slots=True)
class BuildResult:
    """A trace turned into a record, or the reason it is not a RAG trace."""

    record: RagTrace | None
    reason: str  # "ok" | "no_context" | "no_answer"
    error: bool = False
    signals: dict[str, AttributeValue] = field(default_factory=dict)
    missing_content: int = 0
    #: what kinds of spans the trace had (for the "retrieval and chat in separate traces" warning)
    had_retriever: bool = False
    had_answer: bool = False
    #: RAG calls found in the trace (disjoint subtrees each with retrieved documents and an answer); when more than
    #: one, each call is a result (and a record) of its own
    calls: int = 1


def _call_roots(facts: list[SpanFacts]) -> list[SpanFacts]:
    """The spans heading one RAG call each: their subtree has retrieved documents and an LLM answer, no child's has.

    A normal request has one (the root chain, or the span joining retriever and LLM); an agent that retrieves and
    answers twice under one root has two disjoint ones.
    """
    children: dict[int, list[SpanFacts]] = {}
    ids = {f.span_id for f in facts}
    for f in facts:
        if f.parent_id is not None and f.parent_id in ids and f.parent_id != f.span_id:
            children.setdefault(f.parent_id, []).append(f)
    has: dict[int, tuple[bool, bool]] = {}
    roots: list[SpanFacts] = []
    order: list[SpanFacts] = []
    stack = [f for f in facts if f.parent_id is None or f.parent_id not in ids]
    seen: set[int] = set()
    while stack:  # iterative DFS (deep traces must not hit the recursion limit)
        f = stack.pop()
        if f.span_id in seen:
            continue
        seen.add(f.span_id)
        order.append(f)
        stack.extend(children.get(f.span_id, ()))
    for f in reversed(order):  # children before parents
        docs = f.kind == RETRIEVER and bool(f.contexts)
        answer = f.kind == LLM and bool(f.output_text)
        kids = [has[c.span_id] for c in children.get(f.span_id, ()) if c.span_id in has]
        docs = docs or any(d for d, _ in kids)
        answer = answer or any(a for _, a in kids)
        has[f.span_id] = (docs, answer)
        if docs and answer and not any(d and a for d, a in kids):
            roots.append(f)
    return roots


def _ancestors(facts: list[SpanFacts], head: SpanFacts) -> list[SpanFacts]:
    """The spans above ``head`` in the trace, nearest first (a parent cycle or a missing parent ends the walk)."""
    by_id = {f.span_id: f for f in facts}
    out: list[SpanFacts] = []
    seen = {head.span_id}
    cur = head
    while cur.parent_id is not None and cur.parent_id in by_id and cur.parent_id not in seen:
        cur = by_id[cur.parent_id]
        seen.add(cur.span_id)
        out.append(cur)
    return out


def _subtree(facts: list[SpanFacts], head: SpanFacts) -> list[SpanFacts]:
    children: dict[int, list[SpanFacts]] = {}
    for f in facts:
        if f.parent_id is not None:
            children.setdefault(f.parent_id, []).append(f)
    out, stack, seen = [], [head], set()
    while stack:
        f = stack.pop()
        if f.span_id in seen:
            continue
        seen.add(f.span_id)
        out.append(f)
        stack.extend(children.get(f.span_id, ()))
    return out


# -- text helpers -----------------------------------------------------------


def _maybe_json(value: str) -> Any:
    s = value.strip()
    if s[:1] in ("{", "[", '"'):
        try:
            return json.loads(s)
        except (ValueError, RecursionError):  # absurdly deep nesting: keep it as text
            return value
    return value


def _message_role(msg: Mapping[str, Any]) -> str:
    role = msg.get("role") or msg.get("type") or ""
    if not role and isinstance(msg.get("id"), list) and msg["id"]:
        role = str(msg["id"][-1])  # LangChain constructor form: [..., "HumanMessage"]
    role = str(role).lower()
    if role.endswith("message"):
        role = role[: -len("message")]
    return role


def _message_text(msg: Mapping[str, Any]) -> str | None:
    if isinstance(msg.get("kwargs"), Mapping):  # LangChain constructor form
        return _message_text(msg["kwargs"])
    if isinstance(msg.get("data"), Mapping) and "content" not in msg:
        return _message_text(msg["data"])
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


def _pick_message(messages: Iterable[Any], roles: tuple[str, ...]) -> str | None:
    """Text of the last message whose role is in ``roles`` (else the last message with text)."""
    flat: list[Mapping[str, Any]] = []
    for m in messages:
        if isinstance(m, list):  # LangChain batches: [[msg, msg]]
            flat.extend(x for x in m if isinstance(x, Mapping))
        elif isinstance(m, Mapping):
            flat.append(m)
    fallback = None
    for m in reversed(flat):
        text = _message_text(m)
        if not text:
            continue
        if _message_role(m) in roles:
            return text
        fallback = fallback or text
    return fallback


def _looks_like_messages(obj: Any) -> bool:
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
            found = _pick_message(obj["messages"], roles)
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
            return _message_text(obj)
        if len(obj) == 1:
            only = next(iter(obj.values()))
            if isinstance(only, str):
                return only
        return None
    if isinstance(obj, list):
        if _looks_like_messages(obj):
            return _pick_message(obj, roles)
        if len(obj) == 1:
            return _pick(obj[0], keys, roles, depth + 1)
    return None


def unwrap_text(value: Any, *, question: bool) -> str | None:
    """Read ``value`` (plain text or JSON) as a question (``question=True``) or an answer."""
    if value is None:
        return None
    if not isinstance(value, str):
        return None
    if value.strip() == HIDDEN_MARK:
        return None
    keys, roles = (_QUESTION_KEYS, _USER_ROLES) if question else (_ANSWER_KEYS, _ASSISTANT_ROLES)
    text = _pick(_maybe_json(value), keys, roles)
    if text is None or not text.strip() or text.strip() == HIDDEN_MARK:
        return None
    return text


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond a float's range
        return None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _source(metadata: Any) -> str | None:
    if isinstance(metadata, str):
        metadata = _maybe_json(metadata)
    if isinstance(metadata, Mapping):
        for key in ("source", "url", "file_path", "path", "title"):
            if metadata.get(key):
                return str(metadata[key])
    return None


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """Group ``prefix.{i}.rest`` attributes by ``i`` (tolerates gaps left by attribute limits)."""
    groups: dict[int, dict[str, Any]] = {}
    plen = len(prefix) + 1
    for key, value in attrs.items():
        if not key.startswith(prefix) or len(key) <= plen or key[plen - 1] != ".":
            continue
        idx, _, rest = key[plen:].partition(".")
        if not (idx.isascii() and idx.isdigit()):  # "²".isdigit() is True, but int("²") raises
            continue
        groups.setdefault(int(idx), {})[rest] = value
    return sorted(groups.items())


def _messages_from_indexed(attrs: Mapping[str, Any], prefix: str, inner: str) -> list[dict[str, Any]]:
    """OpenInference ``llm.*_messages.{i}.message.{role,content}`` or legacy ``gen_ai.prompt.{i}.*``."""
    msgs = []
    for _, group in _indexed(attrs, prefix):
        content = group.get(f"{inner}content")
        if content is None:  # OpenInference multimodal: message.contents.{j}.message_content.text
            parts = sorted(
                (k, v) for k, v in group.items() if k.startswith(f"{inner}contents.") and k.endswith(".text")
            )
            content = "".join(str(v) for _, v in parts) or None
        msgs.append({"role": group.get(f"{inner}role", ""), "content": content})
    return msgs


def _structured(value: Any) -> Any:
    """A GenAI messages attribute: JSON text (spans) or already-structured values (log events)."""
    if value is None:
        return None
    if isinstance(value, str):
        return _maybe_json(value)
    if isinstance(value, (list, tuple)):
        return [dict(v) if isinstance(v, Mapping) else v for v in value]
    return value


def _system_texts(messages: Any) -> tuple[str, ...]:
    if not isinstance(messages, list):
        return ()
    out = []
    for m in messages:
        if isinstance(m, Mapping) and _message_role(m) in ("system", "developer"):
            text = _message_text(m)
            if text and text.strip():
                out.append(text)
    return tuple(out)


def _model(attrs: Mapping[str, Any]) -> str | None:
    """GenAI model name; Traceloop's association properties when the GenAI attribute says ``unknown``."""
    for key in ("gen_ai.response.model", "gen_ai.request.model", *TL_MODEL_KEYS):
        value = attrs.get(key)
        if value is not None and str(value).strip().lower() not in _UNKNOWN_MODELS:
            return str(value)
    return None


_DOC_TEXT_KEYS = ("page_content", "content", "text", "document")


def _is_document(obj: Any) -> bool:
    if not isinstance(obj, Mapping):
        return False
    if isinstance(obj.get("kwargs"), Mapping):  # LangChain constructor form {"lc":1,"kwargs":{"page_content":..}}
        obj = obj["kwargs"]
    return (
        "page_content" in obj
        or ("metadata" in obj and any(k in obj for k in _DOC_TEXT_KEYS))
        or ("node" in obj and isinstance(obj["node"], Mapping))
    )


def _documents(obj: Any) -> list[Mapping[str, Any]] | None:
    """Retrieved documents in an entity output: ``{"documents": [...]}``, a bare list, LlamaIndex nodes; else None."""
    if isinstance(obj, Mapping):
        for key in ("documents", "nodes", "source_nodes", "outputs", "output"):
            if key in obj:
                found = _documents(obj[key])
                if found is not None:
                    return found
        return None
    if isinstance(obj, list) and obj and all(isinstance(d, str) for d in obj):
        # Traceloop LlamaIndex (VectorIndexRetriever.task): a list of JSON-*encoded* NodeWithScore strings
        obj = [_maybe_json(d) for d in obj]
    if isinstance(obj, list) and obj and all(isinstance(d, Mapping) and _is_document(d) for d in obj):
        return list(obj)
    return None


def _contexts_from_documents(docs: Iterable[Mapping[str, Any]]) -> tuple[list[Context], int]:
    ctxs: list[Context] = []
    missing = 0
    for doc in docs:
        score = doc.get("score")
        if isinstance(doc.get("node"), Mapping):  # LlamaIndex NodeWithScore
            doc = doc["node"]
        if isinstance(doc.get("kwargs"), Mapping):
            doc = doc["kwargs"]
        content = next((doc[k] for k in _DOC_TEXT_KEYS if isinstance(doc.get(k), str) and doc.get(k)), None)
        if content is None or content == HIDDEN_MARK:
            missing += 1
            continue
        metadata = doc.get("metadata") or doc.get("extra_info")
        ident = doc.get("id") or doc.get("id_") or (metadata.get("id") if isinstance(metadata, Mapping) else None)
        ctxs.append(
            Context(
                id=_str(ident),
                content=content,
                score=_float(score if score is not None else doc.get("score")),
                source=_source(metadata),
            )
        )
    return ctxs, missing


def _ids_from_output(ctxs: list[Context], output: Any) -> None:
    """OpenInference LangChain sets no ``document.id``; the retriever's ``output.value`` JSON has them: match by content."""
    docs = _documents(_maybe_json(output)) if isinstance(output, str) else None
    if not docs:
        return
    found, _ = _contexts_from_documents(docs)
    by_content: dict[str, str] = {}
    for c in found:
        if c.id is not None:
            by_content.setdefault(c.content, c.id)
    for c in ctxs:
        if c.id is None and c.content in by_content:
            c.id = by_content[c.content]


# -- extraction ---------------------------------------------------------------


class SpanExtractor:
    """Turns spans into :class:`SpanFacts` and a trace's facts into a :class:`RagTrace`."""

    def __init__(self, settings: CollectorSettings | None = None) -> None:
        self.settings = settings or CollectorSettings()
        keep = set(self.settings.slice_attributes.values()) | set(self.settings.sampling.feedback_attributes)
        self._keep_attrs = frozenset(keep)

    # one span ---------------------------------------------------------------
    def extract(self, span: Any) -> SpanFacts:
        """Read one finished ``ReadableSpan`` into :class:`SpanFacts` (never raises on odd values)."""
        ctx = span.context
        parent = span.parent
        attrs: Mapping[str, Any] = span.attributes or {}
        facts = SpanFacts(
            span_id=ctx.span_id,
            parent_id=parent.span_id if parent is not None else None,
            is_root=parent is None or bool(parent.is_remote),
            name=span.name,
            start_ns=span.start_time or 0,
            end_ns=span.end_time or 0,
            error=span.status is not None and span.status.status_code.name == "ERROR",
            dropped_attributes=getattr(span, "dropped_attributes", 0) or 0,
        )
        facts.attrs = {k: attrs[k] for k in self._keep_attrs if k in attrs}
        resource = getattr(span, "resource", None)
        if resource is not None:
            rattrs = resource.attributes
            facts.resource = {k: str(rattrs[k]) for k in RESOURCE_KEYS if k in rattrs}
        op = str(attrs.get(GENAI_OP, "")).lower()
        if OI_KIND in attrs:
            self._openinference(facts, attrs, str(attrs[OI_KIND]).upper())
        elif facts.dropped_attributes and any(k.startswith(_OI_DOC_PREFIX) for k in attrs):
            # the SDK evicted the oldest attributes (span kind, query) past its count limit: the documents left
            # still make it an OpenInference retriever (the record is flagged incomplete)
            self._openinference(facts, attrs, "RETRIEVER")
        elif TL_KIND in attrs and (op in _TL_GENAI_OPS or _GENAI_KINDS.get(op) != LLM):
            self._traceloop(facts, attrs, str(attrs[TL_KIND]).lower(), op)
        elif GENAI_OP in attrs or "gen_ai.prompt.0.content" in attrs or "gen_ai.completion.0.content" in attrs:
            self._genai(facts, attrs, op or "chat")
        events = getattr(span, "events", None) or ()
        if events and any(e.name == "db.query.result" for e in events):
            self._traceloop_hits(facts, events)
        facts.hidden = any(v == HIDDEN_MARK for v in (attrs.get("input.value"), attrs.get("output.value")))
        return facts

    def _openinference(self, f: SpanFacts, attrs: Mapping[str, Any], kind: str) -> None:
        f.convention = "openinference"
        f.kind = _OI_KINDS.get(kind, OTHER)
        if f.kind == RETRIEVER:
            f.input_text = unwrap_text(attrs.get("input.value"), question=True)
            ctxs = []
            for _, doc in _indexed(attrs, "retrieval.documents"):
                content = doc.get("document.content")
                if content is None or content == HIDDEN_MARK:
                    f.missing_content += 1
                    continue
                ctxs.append(
                    Context(
                        id=_str(doc.get("document.id")),
                        content=str(content),
                        score=_float(doc.get("document.score")),
                        source=_source(doc.get("document.metadata")),
                    )
                )
            if ctxs and any(c.id is None for c in ctxs):
                _ids_from_output(ctxs, attrs.get("output.value"))
            f.contexts = tuple(ctxs)
        elif f.kind == LLM:
            f.model = _str(attrs.get("llm.model_name"))
            out = _pick_message(_messages_from_indexed(attrs, "llm.output_messages", "message."), _ASSISTANT_ROLES)
            f.output_text = out or unwrap_text(attrs.get("output.value"), question=False)
            in_msgs = _messages_from_indexed(attrs, "llm.input_messages", "message.")
            inp = _pick_message(in_msgs, _USER_ROLES)
            f.input_text = inp or unwrap_text(attrs.get("input.value"), question=True)
            f.prompt_context = _system_texts(in_msgs)
        elif f.kind == CHAIN:
            f.input_text = unwrap_text(attrs.get("input.value"), question=True)
            f.output_text = unwrap_text(attrs.get("output.value"), question=False)

    def _genai(self, f: SpanFacts, attrs: Mapping[str, Any], op: str) -> None:
        f.convention = "gen_ai"
        f.kind = _GENAI_KINDS.get(op, OTHER)
        if f.kind == RETRIEVER:
            f.input_text = _str(attrs.get("gen_ai.retrieval.query.text")) or None
            docs = attrs.get("gen_ai.retrieval.documents")
            parsed = _maybe_json(docs) if isinstance(docs, str) else docs
            ctxs = []
            if isinstance(parsed, (list, tuple)):
                for doc in parsed:
                    if isinstance(doc, str):
                        doc = _maybe_json(doc)
                    if not isinstance(doc, Mapping):
                        continue
                    content = next(
                        (doc[k] for k in ("content", "text", "document", "page_content") if doc.get(k)), None
                    )
                    if content is None:
                        f.missing_content += 1
                        continue
                    ctxs.append(
                        Context(
                            id=_str(doc.get("id")),
                            content=content if isinstance(content, str) else json.dumps(content),
                            score=_float(doc.get("score")),
                            source=_source(doc.get("metadata")) or _str(doc.get("source")),
                        )
                    )
            f.contexts = tuple(ctxs)
            return
        f.model = _model(attrs)
        roles_in, roles_out = _USER_ROLES, _ASSISTANT_ROLES
        out_msgs = _structured(attrs.get("gen_ai.output.messages"))
        in_msgs = _structured(attrs.get("gen_ai.input.messages"))
        out = _pick(out_msgs, _ANSWER_KEYS, roles_out) if out_msgs is not None else None
        inp = _pick(in_msgs, _QUESTION_KEYS, roles_in) if in_msgs is not None else None
        legacy_in = _messages_from_indexed(attrs, "gen_ai.prompt", "")
        if out is None:
            out = _pick_message(_messages_from_indexed(attrs, "gen_ai.completion", ""), roles_out)
        if inp is None:
            inp = _pick_message(legacy_in, roles_in)
        f.output_text, f.input_text = out, inp
        system = _structured(attrs.get("gen_ai.system_instructions"))
        texts = list(_system_texts(in_msgs if isinstance(in_msgs, list) else legacy_in))
        if system is not None:
            parts = system if isinstance(system, list) else [system]
            texts = [
                t
                for t in (
                    _message_text(p) if isinstance(p, Mapping) else (p if isinstance(p, str) else None) for p in parts
                )
                if t
            ] + texts
        f.prompt_context = tuple(texts)

    def _traceloop(self, f: SpanFacts, attrs: Mapping[str, Any], kind: str, op: str = "") -> None:
        f.convention = "traceloop"
        raw_out = attrs.get("traceloop.entity.output")
        docs = _documents(_maybe_json(raw_out)) if isinstance(raw_out, str) else None
        if op == "vector_db_retrieve" or docs is not None:
            f.kind = RETRIEVER
            f.input_text = unwrap_text(attrs.get("traceloop.entity.input"), question=True)
            ctxs, missing = _contexts_from_documents(docs or [])
            f.contexts, f.missing_content = tuple(ctxs), missing
            return
        f.kind = _TL_KINDS.get(kind, OTHER)
        if f.kind == CHAIN:
            f.input_text = unwrap_text(attrs.get("traceloop.entity.input"), question=True)
            f.output_text = unwrap_text(raw_out, question=False)

    def _traceloop_hits(self, f: SpanFacts, events: Iterable[Any]) -> None:
        ctxs = list(f.contexts)
        for event in events:
            if event.name != "db.query.result":
                continue
            ea = event.attributes or {}
            content = ea.get("db.query.result.document")
            if content is None:
                f.missing_content += 1
                continue
            ctxs.append(
                Context(
                    id=_str(ea.get("db.query.result.id")),
                    content=str(content),
                    score=_float(ea.get("db.query.result.score")),
                    source=_source(ea.get("db.query.result.metadata")),
                )
            )
        f.contexts = tuple(ctxs)
        f.kind = RETRIEVER
        f.convention = f.convention or "traceloop"

    # one trace --------------------------------------------------------------
    def build(self, trace_id: int, facts: list[SpanFacts]) -> list[BuildResult]:
        """Turn one trace's facts into :class:`RagTrace` records, one per RAG call (or say why it is not RAG).

        Usually a trace is one call and gives one result. A trace holding several RAG calls (disjoint subtrees
        with documents and an answer each: an agent that retrieves and answers twice under one root) gives one
        result per call, in the order the calls started, each built from its own subtree only (its question,
        its documents, its answer; slice attributes it lacks are inherited from the spans above it, nearest first,
        e.g. a route set on a plain HTTP server root) and carrying ``call_id`` (the span id heading it) so that it is a record of
        its own downstream (``RagTrace.record_key``), plus ``rag_calls`` / ``rag_call`` attributes.
        """
        calls = _call_roots(facts)
        if len(calls) <= 1:
            return [self._build(trace_id, facts)]
        out = []
        for i, call in enumerate(sorted(calls, key=lambda f: (f.start_ns, f.end_ns)), start=1):
            result = self._build(trace_id, _subtree(facts, call), _ancestors(facts, call))
            result.calls = len(calls)
            if result.record is not None:
                result.record.call_id = format(call.span_id, "016x")
                result.record.attributes["rag_calls"] = len(calls)
                result.record.attributes["rag_call"] = i
            out.append(result)
        return out

    def _build(self, trace_id: int, facts: list[SpanFacts], ancestors: list[SpanFacts] | None = None) -> BuildResult:
        """One record from ``facts``; ``ancestors`` (nearest first) only lend slice attributes and the resource."""
        ancestors = ancestors or []
        by_id = {f.span_id: f for f in facts}
        depth_memo: dict[int, int] = {}

        def depth(f: SpanFacts) -> int:
            d, cur, seen = 0, f, set()
            while cur.parent_id is not None and cur.parent_id in by_id and cur.span_id not in seen:
                if cur.span_id in depth_memo:
                    d += depth_memo[cur.span_id]
                    break
                seen.add(cur.span_id)
                cur = by_id[cur.parent_id]
                d += 1
            depth_memo[f.span_id] = d
            return d

        ordered = sorted(facts, key=lambda f: (f.start_ns, f.end_ns))
        retrievers = [f for f in ordered if f.kind == RETRIEVER]
        llms = sorted((f for f in facts if f.kind == LLM), key=lambda f: (f.end_ns, f.start_ns))
        chains = sorted((f for f in facts if f.kind == CHAIN), key=lambda f: (depth(f), f.start_ns))
        top = chains[0] if chains else None

        question, q_src = (top.input_text, "root") if top is not None and top.input_text else (None, None)
        if question is None:
            q = next((f for f in retrievers if f.input_text), None)
            question, q_src = (q.input_text, "retriever") if q else (None, None)
        if question is None:
            q = next((f for f in sorted(llms, key=lambda f: f.start_ns) if f.input_text), None)
            question, q_src = (q.input_text, "llm") if q else (None, None)

        answer_span = top if top is not None and top.output_text else None
        a_src = "root" if answer_span is not None else None
        if answer_span is None:
            answer_span = next((f for f in reversed(llms) if f.output_text), None)
            a_src = "llm" if answer_span is not None else None

        contexts: list[Context] = []
        seen_ctx: set[tuple[str | None, str]] = set()
        missing = 0
        for f in retrievers:
            missing += f.missing_content
            for c in f.contexts:
                key = (c.id, c.content)
                if key in seen_ctx:
                    continue
                seen_ctx.add(key)
                contexts.append(c)

        error = any(f.error for f in facts)
        signals: dict[str, AttributeValue] = {}
        for f in ordered:
            for k, v in f.attrs.items():
                signals.setdefault(k, v)
        context_source = "retriever"
        if not contexts and self.settings.context_from_prompt:
            prompt = next((f.prompt_context for f in reversed(llms) if f.prompt_context), ())
            contexts = [Context(content=text, source="prompt") for text in prompt]
            context_source = "prompt"
        has_answer = answer_span is not None and bool(answer_span.output_text)
        if not contexts:
            return BuildResult(
                None, "no_context", error, signals, missing, had_answer=has_answer, had_retriever=bool(retrievers)
            )
        if answer_span is None or not answer_span.output_text:
            return BuildResult(None, "no_answer", error, signals, missing, had_retriever=True)

        model = next((f.model for f in reversed(llms) if f.model), None)
        roots = sorted((f for f in facts if f.is_root), key=lambda f: f.start_ns)
        root = roots[0] if roots else (min(facts, key=depth) if facts else None)
        head = sorted(facts, key=lambda f: (depth(f), f.start_ns))
        conventions = [f.convention for f in facts if f.convention]
        convention = answer_span.convention or (max(set(conventions), key=conventions.count) if conventions else None)
        resource = next((f.resource for f in [*facts, *ancestors] if f.resource), {})
        attributes: dict[str, AttributeValue] = {"spans": len(facts)}
        if q_src:
            attributes["question.source"] = q_src
        attributes["answer.source"] = a_src or "unknown"
        if root is not None:
            attributes["root.name"] = root.name
        if resource.get("service.name"):
            attributes["service.name"] = resource["service.name"]
        if missing:
            attributes["contexts.missing_content"] = missing
        if context_source != "retriever":
            attributes["context_source"] = context_source
        dropped = sum(f.dropped_attributes for f in facts)
        if dropped:  # some span lost attributes to the SDK's count limit: documents, question or kind may be missing
            attributes["incomplete"] = "attribute_limit"
            attributes["dropped_attributes"] = dropped
        record = RagTrace(
            trace_id=format(trace_id, "032x"),
            root_span_id=format(root.span_id, "016x") if root is not None else None,
            span_ids=[format(f.span_id, "016x") for f in ordered],
            start_time_unix_nano=min((f.start_ns for f in facts), default=None),
            end_time_unix_nano=max((f.end_ns for f in facts), default=None),
            question=question,
            answer=answer_span.output_text or "",
            contexts=contexts,
            slices=self.slices(head + ancestors, resource, model),
            attributes=attributes,
            convention=convention,
        )
        return BuildResult(record, "ok", error, signals, missing)

    def slices(self, head: list[SpanFacts], resource: Mapping[str, str], model: str | None) -> dict[str, str]:
        """Slice labels: span attributes (top spans first), resource, model; settings override."""
        s = self.settings
        out: dict[str, str] = {}
        for name, key in s.slice_attributes.items():
            value: Any = next((f.attrs[key] for f in head if key in f.attrs), None)
            if value is None:
                value = resource.get(key)
                if value is None and key == "deployment.environment":
                    value = resource.get("deployment.environment.name")
            if value is not None and str(value):
                out[name] = str(value)[:_MAX_SLICE_CHARS]
        if model and "model" not in out:
            out["model"] = model[:_MAX_SLICE_CHARS]
        out.update({k: str(v)[:_MAX_SLICE_CHARS] for k, v in s.static_slices.items()})
        if s.release:
            out["release"] = s.release
        if s.environment:
            out["environment"] = s.environment
        return out
