"""Cues for the heuristic judge: negation, hedges, intensifiers, quotes and the speakers they are attributed to.

- ``negation_cues`` / ``hedge_cues`` / ``intensifier_cues``: cue strings in a text, lower-cased
- ``quotes(text)`` -> ``Quote`` s with their speaker; ``speakers(text)`` -> who a statement is attributed to
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evaluator_worker.judges.heuristic.lexicon import (
    HEDGE_CUES,
    INTENSIFIER,
    NEGATION_CUES,
    NEGATION_IGNORE,
    SPEAKER_ROLES,
    SPEECH_VERBS,
    STOPWORDS,
    TITLES,
    alternation,
)

__all__ = ["TITLES", "Quote", "negation_cues", "hedge_cues", "intensifier_cues", "quotes", "speakers", "name_keys"]

# --------------------------------------------------------------------------- cues

_NEG_IGNORE = re.compile("|".join(r"\b" + p for p in NEGATION_IGNORE), re.I)
_NEG = re.compile(r"\b" + alternation(NEGATION_CUES) + r"\b|n['’]t\b", re.I)
_HEDGE = re.compile(r"\b" + alternation(HEDGE_CUES) + r"\b", re.I)


def negation_cues(text: str) -> list[str]:
    """Negation cue strings in ``text`` ("not", "never", "n't", ...), ignoring "not only", "no doubt"."""
    t = _NEG_IGNORE.sub(" ", text)
    return [m.group(0).lower() for m in _NEG.finditer(t)]


def intensifier_cues(text: str) -> list[str]:
    """Universal/exactness markers in ``text`` ('exactly', 'always', 'no exceptions'), lower-cased."""
    return [m.group(0).lower() for m in INTENSIFIER.finditer(text or "")]


def hedge_cues(text: str) -> list[str]:
    """Hedge cue strings: "may", "might", "is thought to", ...; the month 'May' is ignored."""
    out = []
    for m in _HEDGE.finditer(text):
        if m.group(0) == "May":
            continue
        out.append(m.group(0).lower())
    return out


# --------------------------------------------------------------------------- speakers and quotes

_NAME = r"((?:[A-Z][\w.'’\-]*\s+){0,4}[A-Z][\w.'’\-]*)"
_SAY = alternation(SPEECH_VERBS)
_QUOTE = re.compile(r"[\"“]([^\"”]{3,})[\"”]|(?<![\w'’])['‘]([^'‘’]{3,}?)['’](?![\w'’])")
_AFTER_SPEAKER = [
    re.compile(r"^[\s,.]*" + _SAY + r"\s+" + _NAME),
    re.compile(r"^[\s,.]*" + _NAME + r"\s+" + _SAY + r"\b"),
]
#: between a name and its verb: a role noun ('<Org> officials said') or an apposition ('<Name>, <age>, said')
_GAP = r"(?:\s+" + alternation(SPEAKER_ROLES) + r")?(?:,\s*[^,\"“”]{1,60},)?"
_BEFORE_SPEAKER = re.compile(_NAME + _GAP + r"\s+" + _SAY + r"(?:\s+[\w'’]+){0,4}\s*[:,]?\s*(?:that\s+)?$")
_ATTRIB = [
    re.compile(_NAME + _GAP + r"\s+" + _SAY + r"\b"),
    re.compile(r"\b" + _SAY + r"\s+" + _NAME),
    re.compile(r"\b[Aa]ccording\s+to\s+" + _NAME),
]


def name_keys(name: str) -> set[str]:
    """Lower-case name tokens without titles: 'Treasury Secretary Yellen' -> {'yellen'}."""
    toks = [w.strip(".,'’").lower() for w in name.split()]
    return {w for w in toks if w and w not in TITLES and w not in STOPWORDS}


@dataclass
class Quote:
    text: str
    speaker: set[str] = field(default_factory=set)
    speaker_text: str = ""


def quotes(text: str) -> list[Quote]:
    """Quoted passages with the speaker named right before or after them (if any)."""
    out = []
    for m in _QUOTE.finditer(text):
        spk, spk_text = set(), ""
        after = text[m.end() : m.end() + 80]
        for pat in _AFTER_SPEAKER:
            a = pat.match(after)
            if a and name_keys(a.group(1)):
                spk, spk_text = name_keys(a.group(1)), a.group(1)
                break
        if not spk:
            b = _BEFORE_SPEAKER.search(text[max(0, m.start() - 80) : m.start()])
            if b and name_keys(b.group(1)):
                spk, spk_text = name_keys(b.group(1)), b.group(1)
        out.append(Quote(m.group(1) or m.group(2), spk, spk_text.strip().rstrip(".,")))
    return out


def speakers(text: str) -> tuple[set[str], str]:
    """Names a statement is attributed to ("X said", "said X", "according to X") -> (keys, display)."""
    for pat in _ATTRIB:
        for m in pat.finditer(text):
            k = name_keys(m.group(1))
            if k:
                return k, m.group(1).strip().rstrip(".,")
    return set(), ""
