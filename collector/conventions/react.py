"""The ReAct text protocol, declared once.

Failure type it answers: a ReAct agent (LlamaIndex ``ReActAgent``, LangChain's classic agents) asks for tools
and answers in free text, not through the API's tool calls. Without reading that text, every step
(``Thought: ... Action: search``) looks like a final answer, the real answer carries its ``Thought:`` preamble,
and the tool observations (sent back as *user* messages) look like the user's question.

A text is read as ReAct only when it has a ``Thought:`` line and a marker line; everything else is plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ReactFormat:
    """Line markers of the ReAct protocol (Yao et al., 2023), as the frameworks print them."""

    thought: str = "Thought:"
    action: str = "Action:"
    action_input: str = "Action Input:"
    #: LlamaIndex writes ``Answer:``, LangChain's classic agents ``Final Answer:``
    answers: tuple[str, ...] = ("Final Answer:", "Answer:")
    observation: str = "Observation:"


FORMAT = ReactFormat()


def _line(marker: str) -> re.Pattern[str]:
    return re.compile(r"^[ \t]*" + re.escape(marker) + r"[ \t]*", re.MULTILINE)


_THOUGHT = _line(FORMAT.thought)
_ACTION = re.compile(r"^[ \t]*" + re.escape(FORMAT.action) + r"[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_ACTION_INPUT = _line(FORMAT.action_input)
_ANSWERS = tuple(_line(marker) for marker in FORMAT.answers)
_OBSERVATION = re.compile(r"\A\s*" + re.escape(FORMAT.observation) + r"[ \t]*\n?")


@dataclass(frozen=True)
class Step:
    """One ReAct output: a tool request (``action``) or the final ``answer``."""

    action: str | None = None
    answer: str | None = None


def parse(text: str | None) -> Step | None:
    """The ReAct step ``text`` holds, or None when it is not ReAct text."""
    if not text or not _THOUGHT.search(text):
        return None
    for pattern in _ANSWERS:
        found = pattern.search(text)
        if found is not None:
            answer = text[found.end() :].strip()
            return Step(answer=answer or None)
    action = _ACTION.search(text)
    if action is not None and _ACTION_INPUT.search(text, action.end()):
        return Step(action=action.group(1))
    return None


def observation(text: str | None) -> str | None:
    """The tool result in a ReAct observation message (``Observation: ...``), else None."""
    if not text:
        return None
    found = _OBSERVATION.match(text)
    if found is None:
        return None
    body = text[found.end() :].strip()
    return body or None
