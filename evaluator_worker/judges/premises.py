"""What a cross-encoder reads for one claim: the question, then the context windows likeliest to hold its evidence.

Used by the ``verifier`` judge at serving time and by its training-data builder
(``claimwatch.training.realpairs``), so the model is trained on exactly the premises it is served.

- **Windows**: every context chunk, split into verbatim sentence windows that fit the token budget
  (``sentences.sentence_window_spans``); the whole chunk when it fits.
- **Ranking** (failure type: long retrieved pages, where scoring every window of every chunk costs
  seconds per answer and most windows are unrelated): windows are ranked by the share of the claim's
  content words they contain (stopwords from the heuristic's lexicon removed), ties to the earlier
  window; the ``top_k`` best are scored.
- **Question** (failure type: claims that answer the question with a pronoun or an elided subject,
  "It was 1998."): the premise starts with the question, cut to ``QUESTION_WORDS`` words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from evaluator_worker.judges.heuristic.lexicon import STOPWORDS
from evaluator_worker.judges.sentences import sentence_windows

__all__ = [
    "PremiseFormat",
    "QUESTION_WORDS",
    "content_words",
    "rank_windows",
    "premise_text",
    "context_windows",
    "best_windows",
    "question_prefix",
]

#: longest question prefix, in words (questions beyond that are cut at the end)
QUESTION_WORDS = 40
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class PremiseFormat:
    """How premises are built: recorded in a model's ``calibration.json`` so it is served as trained."""

    with_question: bool = False
    top_k: int = 0  # 0: every window is scored (the v1 model)

    @classmethod
    def from_calibration(cls, calibration: dict[str, float]) -> PremiseFormat:
        """The format a model directory's ``calibration.json`` declares (absent keys: the v1 format)."""
        return cls(with_question=bool(calibration.get("with_question", 0)), top_k=int(calibration.get("top_k", 0)))


def content_words(text: str) -> set[str]:
    """Lower-cased word tokens of ``text`` that are not stopwords."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def rank_windows(claim: str, windows: Sequence[str]) -> list[int]:
    """Indices of ``windows``, best first: share of the claim's content words each contains, ties to the earlier."""
    words = content_words(claim)
    if not words:
        return list(range(len(windows)))
    scores = [len(words & content_words(w)) / len(words) for w in windows]
    return sorted(range(len(windows)), key=lambda i: (-scores[i], i))


def question_prefix(question: str | None) -> str:
    """The question as it opens a premise ("" without one)."""
    if not question or not question.strip():
        return ""
    words = question.split()
    return " ".join(words[:QUESTION_WORDS]) + " | "


def premise_text(question: str | None, window: str) -> str:
    """One premise: the question prefix, then the context window."""
    return question_prefix(question) + window


def best_windows(claim: str, windows: Sequence[tuple[int, str]], top_k: int) -> list[tuple[int, str]]:
    """The ``top_k`` windows of :func:`rank_windows` for ``claim`` (all of them when ``top_k`` is 0)."""
    order = rank_windows(claim, [w for _, w in windows])
    return [windows[i] for i in (order[:top_k] if top_k > 0 else sorted(order))]


def context_windows(
    contexts: Sequence[str], budget: int, count_tokens: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[tuple[int, str]]:
    """(chunk index, window) for every sentence window of every chunk within ``budget`` tokens."""
    out: list[tuple[int, str]] = []
    for i, chunk in enumerate(contexts):
        for window in sentence_windows(chunk or "", budget, count_tokens, overlap=overlap):
            out.append((i, window))
    return out
