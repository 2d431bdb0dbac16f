"""Verbatim windows of whole sentences that fit a token budget: how the NLI-style judges cut a long document into
premises (:mod:`evaluator_worker.judges.nli`, :mod:`evaluator_worker.judges.premises`)."""

from __future__ import annotations

import re
from typing import Callable

from evaluator_worker.judges.claims import sentence_spans

__all__ = ["sentence_window_spans", "sentence_windows"]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: ``claims.sentence_spans``, else (text it finds no sentence in) a regex."""
    found = sentence_spans(text)
    if found:
        return list(found)
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def sentence_windows(
    text: str, budget: int, count_tokens: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[str]:
    """Split ``text`` into verbatim windows of whole sentences of at most ``budget`` tokens.

    The whole text is one window when it fits. Otherwise consecutive sentences are packed
    greedily and each next window re-starts ``overlap`` sentences back, so a fact split across
    a boundary is still seen whole. A single sentence longer than the budget is its own window
    (the judge clips it). ``count_tokens`` returns the token count of each string.
    """
    return [text[a:b] for a, b in sentence_window_spans(text, budget, count_tokens, overlap)]


def sentence_window_spans(
    text: str, budget: int, count_tokens: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[tuple[int, int]]:
    """:func:`sentence_windows` as (start, end) character offsets into ``text``."""
    if not text.strip():
        return []
    spans = _sentence_spans(text)
    if not spans:
        return [(0, len(text))]
    counts = count_tokens([text] + [text[a:b] for a, b in spans])
    if counts.pop(0) <= budget:
        return [(0, len(text))]
    windows: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        j, used = i, counts[i]
        while j + 1 < len(spans) and used + counts[j + 1] <= budget:
            j += 1
            used += counts[j]
        windows.append((spans[i][0], spans[j][1]))
        if j + 1 >= len(spans):
            break
        i = max(i + 1, j + 1 - overlap)
    return windows
