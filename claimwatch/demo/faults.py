"""Realistic faithfulness failures the demo's candidate release injects.

Each injector rewrites one answer sentence (or adds one) and returns the new
answer, or ``None`` when it does not apply to that answer. The kinds follow the
literature on RAG hallucinations: numeric drift, speaker attribution drift,
implicit-knowledge insertion, hedge inflation (a "may" added to what the context
asserts), certainty inflation (a hedge the context has, dropped), overclaiming
(an "always" or "exactly" the context does not give) and outright contradiction.
Each kind names the failure class (contract.failures) a judge should type it with:
:data:`EXPECTED_TYPE`.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from claimwatch.demo.corpus import Question
from contract.failures import FailureType

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_SPEAKER = re.compile(r"^(?P<who>[A-Z][\w.]*(?: [A-Z][\w.-]*)+) said,")
SPEAKERS = (
    "Chef Nadia Okafor",
    "Dr. Helen Park",
    "Chair Maria Lopez",
    "Engineer John Bradfield",
    "Governor DeWitt Clinton",
)

WORLD_KNOWLEDGE = {
    "recipe-cookies": "Chocolate chip cookies were invented by Ruth Wakefield in 1938.",
    "recipe-bread": "Sourdough bread originated in ancient Egypt around 1500 BC.",
    "med-statin": "Atorvastatin is sold under the brand name Lipitor by Pfizer.",
    "med-vitd": "Vitamin D deficiency affects about one billion people worldwide.",
    "fin-rates": "The bank's governor is appointed for an eight-year term.",
    "fin-fund": "The fund holds more than 4,000 companies across 49 countries.",
    "prod-router": "The X200 has four gigabit Ethernet ports.",
    "prod-battery": "The H5 headphones weigh 250 grams.",
    "hist-bridge": "The bridge is nicknamed the Coathanger by locals.",
    "hist-canal": "The canal made New York City the country's leading port.",
}

#: a universal or exactness word the context does not give ("always reduces" where it "reduces")
_CERTAINTY = [
    (re.compile(r"\breduces\b"), "always reduces"),
    (re.compile(r"\bhelps\b"), "always helps"),
    (re.compile(r"\bsupports\b"), "definitely supports"),
    (re.compile(r"\blast up to\b"), "always last exactly"),
    (re.compile(r"\btakes\b"), "always takes"),
    (re.compile(r"\bgives\b"), "always gives"),
    (re.compile(r"\btracks\b"), "precisely tracks"),
    (re.compile(r"\bis\b"), "is always"),
    (re.compile(r"\bwas\b"), "was definitely"),
    (re.compile(r"\bneeds\b"), "always needs"),
]

#: a hedge added to what the context asserts ("may reduce" where it "reduces"): hedge inflation in the article's
#: sense (counted against faithfulness only under the strict hedge policy; typed either way)
_HEDGES = [
    (re.compile(r"\breduces\b"), "may reduce"),
    (re.compile(r"\bhelps\b"), "may help"),
    (re.compile(r"\bsupports\b"), "may support"),
    (re.compile(r"\btakes\b"), "might take"),
    (re.compile(r"\bgives\b"), "may give"),
    (re.compile(r"\btracks\b"), "may track"),
    (re.compile(r"\bneeds\b"), "may need"),
    (re.compile(r"\bis\b"), "may be"),
    (re.compile(r"\bwas\b"), "was possibly"),
]

#: a hedge of the context dropped ("may be harmful" -> "is harmful"): certainty the context does not give
_UNHEDGE = [
    (re.compile(r"\bupdates may be\b"), "updates are"),
    (re.compile(r"\bmay be\b"), "is"),
    (re.compile(r"\bmay\b"), "will"),
]

_NEGATIONS = [
    (re.compile(r"\bis not\b"), "is"),
    (re.compile(r"\bare not\b"), "are"),
    (re.compile(r"\bwill not\b"), "will"),
    (re.compile(r"\breduces\b"), "does not reduce"),
    (re.compile(r"\bhelps\b"), "does not help"),
    (re.compile(r"\bsupports\b"), "does not support"),
    (re.compile(r"\bcan be\b"), "cannot be"),
    (re.compile(r"\bmay be installed\b"), "are never installed"),
    (re.compile(r"\bare reinvested\b"), "are not reinvested"),
    (re.compile(r"\bis printed\b"), "is not printed"),
    (re.compile(r"\bshould\b"), "should not"),
    (re.compile(r"\bis\b"), "is not"),
    (re.compile(r"\bwas\b"), "was not"),
    (re.compile(r"\bneeds\b"), "does not need"),
]


def _first_sub(patterns, sentence: str) -> str | None:
    for pat, repl in patterns:
        if pat.search(sentence):
            return pat.sub(repl, sentence, count=1)
    return None


def _is_year(raw: str) -> bool:
    return "." not in raw and 1000 <= float(raw) < 2100


def date_drift(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    """A year shifted by two or three."""
    for i, s in enumerate(sentences):
        for m in _NUMBER.finditer(s):
            if _is_year(m.group(1)):
                out = list(sentences)
                out[i] = s[: m.start(1)] + str(int(m.group(1)) + rng.choice([-3, -2, 2, 3])) + s[m.end(1) :]
                return out
    return None


def numeric_drift(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    """A quantity (not a year) changed by 20-50%, or by a half for a decimal."""
    for i, s in enumerate(sentences):
        m = next((m for m in _NUMBER.finditer(s) if not _is_year(m.group(1))), None)
        if not m:
            continue
        raw = m.group(1)
        value = float(raw)
        if "." in raw:
            new = f"{value + rng.choice([0.5, 1.0, -0.5]):.{len(raw.split('.')[1])}f}"
        else:
            delta = max(1, round(value * rng.choice([0.2, 0.5, 0.3])))
            new = str(int(value) + delta if rng.random() < 0.7 or value <= delta else int(value) - delta)
        if new == raw:
            new = str(int(value) + 1)
        out = list(sentences)
        out[i] = s[: m.start(1)] + new + s[m.end(1) :]
        return out
    return None


def speaker_drift(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    for i, s in enumerate(sentences):
        m = _SPEAKER.match(s)
        if m:
            who = m.group("who")
            other = rng.choice([p for p in SPEAKERS if p != who])
            out = list(sentences)
            out[i] = other + s[len(who) :]
            return out
    return None


def knowledge_insertion(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    extra = WORLD_KNOWLEDGE.get(q.doc_id)
    return [*sentences, extra] if extra else None


def _rewrite(patterns, sentences: list[str]) -> list[str] | None:
    """The answer with the first sentence (not a quote) one of ``patterns`` applies to rewritten; None if none."""
    for i, s in enumerate(sentences):
        if _SPEAKER.match(s):
            continue
        new = _first_sub(patterns, s)
        if new:
            out = list(sentences)
            out[i] = new
            return out
    return None


def overclaiming(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    """One sentence made absolute past the context ("always", "definitely", "exactly")."""
    return _rewrite(_CERTAINTY, sentences)


def hedge_inflation(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    """Uncertainty added to what the context asserts ("may reduce" where it "reduces")."""
    return _rewrite(_HEDGES, sentences)


def certainty_inflation(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    """A hedge the context gives dropped ("is harmful" where it "can be harmful")."""
    return _rewrite(_UNHEDGE, sentences)


def contradiction(sentences: list[str], q: Question, rng: random.Random) -> list[str] | None:
    for i, s in enumerate(sentences):
        if _SPEAKER.match(s):
            continue
        new = _first_sub(_NEGATIONS, s)
        if new:
            out = list(sentences)
            out[i] = new
            return out
    return None


FAULTS: dict[str, Callable[[list[str], Question, random.Random], list[str] | None]] = {
    "numeric_drift": numeric_drift,
    "date_drift": date_drift,
    "speaker_drift": speaker_drift,
    "knowledge_insertion": knowledge_insertion,
    "hedge_inflation": hedge_inflation,
    "certainty_inflation": certainty_inflation,
    "overclaiming": overclaiming,
    "contradiction": contradiction,
}

#: the failure class a judge should type each injected kind with
EXPECTED_TYPE: dict[str, FailureType] = {
    "numeric_drift": FailureType.NUMERIC,
    "date_drift": FailureType.TEMPORAL,
    "speaker_drift": FailureType.ATTRIBUTION,
    "knowledge_insertion": FailureType.UNSUPPORTED_ADDITION,
    "hedge_inflation": FailureType.HEDGE_INFLATION,
    "certainty_inflation": FailureType.CERTAINTY_INFLATION,
    "overclaiming": FailureType.QUANTIFIER,
    "contradiction": FailureType.POLARITY,
}


def applicable(sentences: list[str], q: Question) -> list[str]:
    """The fault kinds that can be injected into this answer."""
    probe = random.Random(0)
    return [k for k, fn in FAULTS.items() if (out := fn(sentences, q, probe)) is not None and out != sentences]


def inject(sentences: list[str], q: Question, rng: random.Random, used: dict[str, int]) -> tuple[list[str], str] | None:
    """Apply the least-used kind that fits this answer (keeps the kinds balanced); updates ``used``."""
    kinds = applicable(sentences, q)
    if not kinds:
        return None
    kind = min(kinds, key=lambda k: (used.get(k, 0), list(FAULTS).index(k)))
    out = FAULTS[kind](sentences, q, rng)
    if out is None:
        return None
    used[kind] = used.get(kind, 0) + 1
    return out, kind
