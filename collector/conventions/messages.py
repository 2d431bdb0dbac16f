"""Chat messages of one LLM call, in one shape whatever the convention, and what they say about the turn.

An agent's answering model call carries the whole turn in its input messages: the user's message, the
assistant's earlier tool calls, and the tool results (role ``tool``, with the call id they answer). Each
convention writes them differently (OpenInference ``llm.input_messages.{i}.message.*``, GenAI JSON with
``parts`` of type ``tool_call`` / ``tool_call_response``, the legacy ``gen_ai.prompt.{i}.*``, OpenAI-style
dicts, LangChain's serialised messages, ReAct text); the readers turn them into :class:`Message` lists and
:func:`turn_input` reads the current turn out of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from collector.conventions import react
from collector.conventions.text import (
    ASSISTANT_ROLES,
    SYSTEM_ROLES,
    TOOL_ROLES,
    USER_ROLES,
    as_str,
    flat_messages,
    indexed,
    message_role,
    message_text,
    visible,
)

# NamedTuples, not dataclasses: an agent's model calls carry the whole conversation, so these are made by the
# thousand per trace on the collector's background thread (a frozen dataclass is ~4x slower to build)


class ToolCall(NamedTuple):
    """A tool call the model asked for: its id (where the API gives one) and the tool's name."""

    id: str | None
    name: str | None


class ToolResult(NamedTuple):
    """A tool's result as the model received it in a message."""

    call_id: str | None
    name: str | None
    content: str


class Message(NamedTuple):
    """One chat message: role (lower case), text, and the tool-call facts it carries."""

    role: str
    text: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnInput:
    """What one model call was given for the current turn (the part of its input after the last user message)."""

    #: the user's message that opened the turn (the last user message that is not a ReAct observation)
    user_text: str | None = None
    #: tool results the model was given in this turn, in message order
    tool_results: tuple[ToolResult, ...] = ()
    #: system / developer texts (the prompt-context opt-in reads them)
    system: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnOutput:
    """What one model call produced: final text, or a step asking for tools."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def is_tool_step(self) -> bool:
        """The output asks for tools: the turn goes on, this is not its answer."""
        return bool(self.tool_calls)


def _role(raw: Any) -> str:
    role = str(raw or "").lower()
    return role[: -len("message")] if role.endswith("message") else role


# -- readers of each shape ----------------------------------------------------------------------


def from_indexed(attrs: Mapping[str, Any], prefix: str, inner: str) -> list[Message]:
    """OpenInference ``llm.*_messages.{i}.message.*`` (``inner="message."``) or legacy ``gen_ai.prompt.{i}.*``."""
    return from_groups(indexed(attrs, prefix), inner)


def current_turn(
    groups: list[tuple[int, dict[str, Any]]], inner: str, *, since_last_step: bool = False
) -> list[tuple[int, dict[str, Any]]]:
    """The groups :func:`turn_input` reads: the system messages and everything from the turn's user message on.

    Every step of an agent carries the conversation so far. With ``since_last_step`` (a model call that asks for
    more tools, so not the turn's answer), only what came after the model's previous step is kept besides the
    user's message: the results of the tools it asked for. The answering call reads the whole turn. Reading a
    turn costs time linear in its messages instead of quadratic.
    """
    role_key, content_key = f"{inner}role", f"{inner}content"
    for pos in range(len(groups) - 1, -1, -1):
        group = groups[pos][1]
        if _role(group.get(role_key)) not in USER_ROLES:
            continue
        text = group.get(content_key)
        if pos and isinstance(text, str) and react.observation(text) is not None:
            before = groups[pos - 1][1]
            step = react.parse(before.get(content_key)) if _role(before.get(role_key)) in ASSISTANT_ROLES else None
            if step is not None and step.action:
                continue
        system = [g for g in groups[:pos] if _role(g[1].get(role_key)) in SYSTEM_ROLES]
        if since_last_step:
            last = next(
                (i for i in range(len(groups) - 1, pos, -1) if _role(groups[i][1].get(role_key)) in ASSISTANT_ROLES),
                None,
            )
            if last is not None:
                return [*system, groups[pos], *groups[last:]]
        return system + groups[pos:]
    return groups


def from_groups(groups: list[tuple[int, dict[str, Any]]], inner: str) -> list[Message]:
    """Messages from attribute groups already split by index (:func:`~collector.conventions.text.indexed_many`)."""
    role_key, content_key = f"{inner}role", f"{inner}content"
    id_key, name_key = f"{inner}tool_call_id", f"{inner}name"
    calls_head, contents_head = f"{inner}tool_calls.", f"{inner}contents."
    out = []
    for _, group in groups:
        content = group.get(content_key)
        role = _role(group.get(role_key))
        if content is not None and len(group) <= 2:  # role and content: the common message, nothing else to read
            out.append(Message(role, content if isinstance(content, str) else as_str(content)))
            continue
        if content is None:  # OpenInference multimodal: message.contents.{j}.message_content.text
            parts = sorted((k, v) for k, v in group.items() if k.startswith(contents_head) and k.endswith(".text"))
            content = "".join(str(v) for _, v in parts) or None
        by_call: dict[str, dict[str, Any]] = {}
        for key, value in group.items():
            if key.startswith(calls_head):
                j, _, rest = key[len(calls_head) :].partition(".")
                by_call.setdefault(j, {})[rest] = value
        calls = []
        for j in sorted(by_call, key=lambda j: (len(j), j)):
            call = by_call[j]
            ident = call.get("tool_call.id", call.get("id"))
            name = call.get("tool_call.function.name", call.get("name"))
            if ident is not None or name is not None:
                calls.append(ToolCall(as_str(ident), as_str(name)))
        out.append(
            Message(
                role,
                content if isinstance(content, str) else as_str(content),
                as_str(group.get(id_key)),
                as_str(group.get(name_key)),
                tuple(calls),
            )
        )
    return out


def _call_of(item: Mapping[str, Any]) -> ToolCall:
    function = item.get("function")
    fn: Mapping[str, Any] = function if isinstance(function, Mapping) else {}
    return ToolCall(as_str(item.get("id") or item.get("call_id")), as_str(item.get("name") or fn.get("name")))


def _response_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, Mapping) and isinstance(value.get("content"), str) and len(value) <= 2:
        return value["content"]
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def from_json(messages: Any) -> list[Message]:
    """JSON messages: GenAI (``parts``), OpenAI chat dicts, LangChain serialised messages (any mix)."""
    if not isinstance(messages, list):
        return []
    out: list[Message] = []
    for m in flat_messages(messages):
        body: Mapping[str, Any] = m
        if isinstance(m.get("kwargs"), Mapping):  # LangChain constructor form
            body = m["kwargs"]
        elif isinstance(m.get("data"), Mapping) and "content" not in m:
            body = m["data"]
        role = message_role(m) or message_role(body)
        parts = body.get("parts") if isinstance(body.get("parts"), list) else None
        if parts is None and isinstance(body.get("content"), list):
            parts = body["content"]
        calls: list[ToolCall] = []
        responses: list[ToolResult] = []
        for p in parts or ():
            if not isinstance(p, Mapping):
                continue
            kind = str(p.get("type", "")).lower()
            if kind in ("tool_call", "function_call", "tool_use"):
                calls.append(_call_of(p))
            elif kind in ("tool_call_response", "function_call_output", "tool_result"):
                text = _response_text(p.get("response", p.get("output", p.get("content"))))
                if text is not None:
                    responses.append(
                        ToolResult(as_str(p.get("id") or p.get("call_id") or p.get("tool_use_id")), None, text)
                    )
        for item in body.get("tool_calls") or ():
            if isinstance(item, Mapping):
                calls.append(_call_of(item))
        if responses:  # GenAI: one tool message may answer several calls
            out.extend(Message(role="tool", text=r.content, tool_call_id=r.call_id) for r in responses)
            continue
        out.append(
            Message(
                role=role,
                text=message_text(body),
                tool_call_id=as_str(body.get("tool_call_id")),
                name=as_str(body.get("name")),
                tool_calls=tuple(calls),
            )
        )
    return out


# -- the turn -----------------------------------------------------------------------------------


def turn_input(messages: Iterable[Message]) -> TurnInput:
    """The current turn of a model call's input: the last user message and the tool results after it.

    A user message that is a ReAct observation (``Observation: ...`` after an assistant ``Action:`` step) is a
    tool result, not the user's message.
    """
    msgs = list(messages)
    system = tuple(t for t in (visible(m.text) for m in msgs if m.role in SYSTEM_ROLES) if t is not None)
    names: dict[str, str] = {}
    start = 0
    user_text = None
    react_action: str | None = None
    observations: dict[int, ToolResult] = {}
    for i, m in enumerate(msgs):
        for call in m.tool_calls:
            if call.id and call.name:
                names[call.id] = call.name
        if m.role in ASSISTANT_ROLES and m.text:
            step = react.parse(m.text)
            react_action = step.action if step is not None and step.action else None
            continue
        if m.role in USER_ROLES:
            observed = react.observation(m.text) if react_action is not None else None
            if observed is not None:
                observations[i] = ToolResult(None, react_action, observed)
                react_action = None
                continue
            if visible(m.text):
                start, user_text = i + 1, m.text
                observations.clear()
        react_action = None if m.role not in TOOL_ROLES else react_action
    results = []
    for i, m in enumerate(msgs[start:], start=start):
        if i in observations:
            results.append(observations[i])
        elif m.role in TOOL_ROLES and m.text is not None and visible(m.text):
            name = m.name or (names.get(m.tool_call_id) if m.tool_call_id else None)
            results.append(ToolResult(m.tool_call_id, name, m.text))
    return TurnInput(user_text=user_text, tool_results=tuple(results), system=system)


def turn_output(messages: Iterable[Message]) -> TurnOutput:
    """A model call's output: the tool calls it asked for (also a ReAct ``Action:``), else its final text (a ReAct
    ``Answer:`` read after its marker)."""
    msgs = list(messages)
    calls = tuple(c for m in msgs for c in m.tool_calls)
    texts = [m.text for m in msgs if m.role in ASSISTANT_ROLES or not m.role]
    text = next((t for t in reversed(texts) if visible(t)), None)
    if text is None:
        text = next((m.text for m in reversed(msgs) if visible(m.text)), None)
    return output_of(text, calls)


def output_of(text: str | None, calls: tuple[ToolCall, ...] = ()) -> TurnOutput:
    """:class:`TurnOutput` of a text (ReAct read) and the tool calls the API reported."""
    if calls:
        return TurnOutput(text=text, tool_calls=calls)
    step = react.parse(text) if text else None
    if step is not None:
        if step.action:
            return TurnOutput(text=text, tool_calls=(ToolCall(None, step.action),))
        if step.answer is not None:
            return TurnOutput(text=step.answer)
    return TurnOutput(text=text)
