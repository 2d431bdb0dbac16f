"""Tokens and comparison keys for the heuristic judge: tokenizer, light stemmer, synonym and antonym keys.

Pure and deterministic; the word lists (irregular forms, synonym groups, antonym pairs) live in ``lexicon``.

- ``tokenize(text)`` -> ``Tok`` s (a redaction placeholder such as ``[PERSON_2]`` is one name token)
- ``stem(word)``: irregular forms, then suffix stripping; ``key(word)``: stem mapped to its synonym group's head
- ``antonyms(key)`` -> opposite keys
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluator_worker.judges.heuristic.lexicon import ANTONYM_PAIRS, IRREGULAR, SYNONYM_GROUPS

__all__ = ["Tok", "tokenize", "stem", "key", "antonyms", "isnum", "DIGITS"]

# --------------------------------------------------------------------------- tokens

#: a redaction placeholder (``[PERSON_2]``, ``[PHONE_1]``: collector.redaction numbers them per record) is one
#: name token, ``PERSON_2``: two different placeholders are two different names, and the index is not a number
#: (failure type: after masking, a swapped name read as the number 2 that the context also has)
_PLACEHOLDER = r"(?<=\[)[A-Z]+(?:_[A-Z]+)*_[0-9]+(?=\])"
_TOKEN = re.compile(
    _PLACEHOLDER + r"|[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?|[^\W\d_]+(?:['’\-][^\W\d_]+)*|[$€£¥%°º~]|[^\w\s]", re.UNICODE
)


DIGITS = frozenset("0123456789")
DIGITS_OR_EMPTY = DIGITS  # '' in a frozenset is False, matching str.isdigit('') semantics


def isnum(s: str) -> bool:
    """ASCII digits only (str.isdigit accepts '²' and other characters int() rejects)."""
    return bool(s) and all(ch in DIGITS for ch in s)


@dataclass(frozen=True)
class Tok:
    text: str
    low: str
    start: int
    end: int


def tokenize(text: str) -> list[Tok]:
    """Word, number and symbol tokens with their character offsets."""
    return [
        Tok(m.group(0), m.group(0).lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN.finditer(text or "")
    ]


def _strip_suffix(w: str) -> str:
    if len(w) <= 3:
        return w
    for suf, rep in (
        ("ies", "y"),
        ("ied", "y"),
        ("sses", "ss"),
        ("ness", ""),
        ("ment", ""),
        ("ings", ""),
        ("ing", ""),
        ("edly", ""),
        ("ly", ""),
        ("ed", ""),
        ("es", "e"),
        ("s", ""),
    ):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "s" and (w.endswith("ss") or w.endswith("us") or w.endswith("is")):
                return w
            if suf == "ly" and not (len(w) > 5):
                return w
            w = w[: -len(suf)] + rep
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # stopp -> stop, runn -> run
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # bake/baked/baking -> bak
    return w


def stem(word: str) -> str:
    """Light stemmer: irregular forms, then suffix stripping (consistent, not linguistic)."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = IRREGULAR.get(w, w)
    return _strip_suffix(w)


def _synonym_keys() -> dict[str, str]:
    """Stem -> key of its synonym group (the group's first word); one group per stem (tested)."""
    out: dict[str, str] = {}
    for group in SYNONYM_GROUPS:
        head = _strip_suffix(group[0])
        for w in group:
            out.setdefault(stem(w), head)
    return out


_SYN = _synonym_keys()


def _antonym_keys() -> dict[str, frozenset[str]]:
    """Key -> keys of its opposites (pairs resolved through the synonym groups, both directions)."""
    out: dict[str, set[str]] = {}
    for a, b in ANTONYM_PAIRS:
        ka, kb = key(a), key(b)
        out.setdefault(ka, set()).add(kb)
        out.setdefault(kb, set()).add(ka)
    return {k: frozenset(v) for k, v in out.items()}


def key(word: str) -> str:
    """Comparison key: stem mapped to its synonym group's head."""
    s = stem(word)
    return _SYN.get(s, s)


_ANT = _antonym_keys()


def antonyms(k: str) -> frozenset[str]:
    """Keys that mean the opposite of key ``k``."""
    return _ANT.get(k, frozenset())
