"""Cues for the heuristic judge: negation, hedges, intensifiers, quotes and the speakers they are attributed to.

- ``negation_cues`` / ``hedge_cues`` / ``intensifier_cues``: cue strings in a text, lower-cased
- ``quotes(text)`` -> ``Quote`` s with their speaker; ``speakers(text)`` -> who a statement is attributed to
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

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
#: a quoted passage: "double" / “curly” (group 1), or 'single' / ‘curly’ not inside a word (group 2).
#: ``_quote_spans`` finds its matches without the regex engine's rescans (see there).
_QUOTE = re.compile(r"[\"“]([^\"”]{3,})[\"”]|(?<![\w'’])['‘]([^'‘’]{3,}?)['’](?![\w'’])")
_QUOTE_OPEN = re.compile(r"[\"“'‘]")
_DOUBLE_CLOSE = re.compile(r"[\"”]")
_SINGLE_MARK = re.compile(r"['‘’]")
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


def _wordish(ch: str) -> bool:
    """``ch`` is in ``[\\w'’]`` (re's ``\\w`` is ``str.isalnum`` or the underscore)."""
    return ch.isalnum() or ch in "_'’"


def _quote_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, quoted text) of each match of ``_QUOTE`` in ``text``, as ``_QUOTE.finditer`` gives them.

    The regex engine reads from every opening mark to the next closing one, and to the end of the text when
    there is none, so a long text with many unclosed marks (OCR or PDF text) took time in the square of its
    length. The closing marks only depend on the position, so they are found once for all openings: a
    double-quoted passage runs from its opening mark to the next " or ” (at least 3 characters between), a
    single-quoted one to the next ' ‘ or ’, which must be a closing ' or ’ not followed by a word character.
    """
    n = len(text)
    double_at = single_at = -1  # the next closing mark after the last opening looked at (n: none)
    m = _QUOTE_OPEN.search(text)
    while m is not None:
        p = m.start()
        if text[p] in '"“':
            if double_at <= p:
                d = _DOUBLE_CLOSE.search(text, p + 1)
                double_at = d.start() if d else n
            if double_at < n and double_at - p - 1 >= 3:
                yield p, double_at + 1, text[p + 1 : double_at]
                m = _QUOTE_OPEN.search(text, double_at + 1)
                continue
        if text[p] in "'‘" and not (p and _wordish(text[p - 1])):
            if single_at <= p:
                c = _SINGLE_MARK.search(text, p + 1)
                single_at = c.start() if c else n
            q = single_at
            if q < n and text[q] in "'’" and q - p - 1 >= 3 and not (q + 1 < n and _wordish(text[q + 1])):
                yield p, q + 1, text[p + 1 : q]
                m = _QUOTE_OPEN.search(text, q + 1)
                continue
        m = _QUOTE_OPEN.search(text, p + 1)


@dataclass
class Quote:
    text: str
    speaker: set[str] = field(default_factory=set)
    speaker_text: str = ""


def quotes(text: str) -> list[Quote]:
    """Quoted passages with the speaker named right before or after them (if any)."""
    out = []
    for start, end, quoted in _quote_spans(text):
        spk, spk_text = set(), ""
        after = text[end : end + 80]
        for pat in _AFTER_SPEAKER:
            a = pat.match(after)
            if a and name_keys(a.group(1)):
                spk, spk_text = name_keys(a.group(1)), a.group(1)
                break
        if not spk:
            b = _BEFORE_SPEAKER.search(text[max(0, start - 80) : start])
            if b and name_keys(b.group(1)):
                spk, spk_text = name_keys(b.group(1)), b.group(1)
        out.append(Quote(quoted, spk, spk_text.strip().rstrip(".,")))
    return out


def name_led_matches(
    pat: re.Pattern[str], text: str, capital: re.Pattern[str], name_chars: re.Pattern[str]
) -> Iterator[re.Match[str]]:
    """``pat.finditer(text)`` for a ``pat`` that opens with a name: one to five words, each a ``capital``
    then ``name_chars``, followed by a space or a comma (``_NAME`` here, ``rules._NAME``).

    The regex engine tries a match at every capital letter, and from each reads the rest of its word, so a
    long run of word characters (a base64 blob, a URL, text without spaces) took time in the square of its
    length. The name's first word must run to the end of its word (a space or comma follows it), so every
    capital of a word gives the same match as the first, which is tried alone: the same matches, in time
    proportional to the text."""
    pos = 0
    while (c := capital.search(text, pos)) is not None:
        m = pat.match(text, c.start())
        if m is not None:
            yield m
            pos = max(m.end(), c.start() + 1)
        else:  # skip the rest of the word: its capitals give the same (no) match
            rest = name_chars.match(text, c.start() + 1)
            pos = rest.end() if rest is not None else c.start() + 1


_CAPITAL = re.compile(r"[A-Z]")
_NAME_CHARS = re.compile(r"[\w.'’\-]*")


def speakers(text: str) -> tuple[set[str], str]:
    """Names a statement is attributed to ("X said", "said X", "according to X") -> (keys, display)."""
    for pat in _ATTRIB:
        found = name_led_matches(pat, text, _CAPITAL, _NAME_CHARS) if pat is _ATTRIB[0] else pat.finditer(text)
        for m in found:
            k = name_keys(m.group(1))
            if k:
                return k, m.group(1).strip().rstrip(".,")
    return set(), ""
