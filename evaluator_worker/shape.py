"""Derived slices: the shape of an answer, read from its claims and verdicts (bounded metric labels).

The regressions worth naming come on kinds of questions, not only on routes: "numerical-specificity loss rose by
three points on multi-source queries". Two labels are derived from every evaluated answer, each from a small set
of values, and can be switched off (``CLAIMWATCH_DERIVED_SLICES``; a label switched off reads ``off``):

- ``sources``: how many distinct retrieved documents the answer's claims draw on, by the evidence the judge
  quoted: ``none`` (no claim quotes any), ``single``, ``multi``. A document is a context's source, else its id,
  else its position.
- ``reasoning``: whether a claim combines numbers (two numbers in one claim, or a number with an arithmetic word:
  "total", "difference", "twice", ...) or places events in time (a year, a date, a month or weekday, "before",
  "after", "since", "until", "ago"): ``none``, ``arithmetic``, ``temporal`` or ``both``.

The cues are declared below, each for the failure class it separates (numeric errors in arithmetic, temporal errors
in ordering); they are cues, not parses: a claim's traits are approximate, the counts per value are exact.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

SOURCES = ("none", "single", "multi")
REASONING = ("none", "arithmetic", "temporal", "both")
#: the derived slice labels and their values (a label switched off has the one value "off")
DERIVED: dict[str, tuple[str, ...]] = {"sources": SOURCES, "reasoning": REASONING}
OFF = "off"

#: a number as claims write it: 12, 1,400, 3.1, 30%, one to twelve spelled out
_NUMBER = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?%?|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"hundred|thousand|million|billion|half|twice|double|triple)\b",
    re.IGNORECASE,
)
#: words that make a number the result of arithmetic over others (numeric errors hide in these)
_ARITHMETIC = re.compile(
    r"\b(?:total|sum|combined|altogether|difference|more than|less than|fewer than|times|twice|half|per ?cent|"
    r"percentage|average|ratio|increase[sd]? (?:by|of)|decrease[sd]? (?:by|of)|rose by|fell by|grew by)\b",
    re.IGNORECASE,
)
#: placing events in time (temporal errors hide in these)
_TEMPORAL = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})\b|\b(?:january|february|march|april|may|june|july|august|september|october|"
    r"november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\b(?:before|after|since|"
    r"until|ago|earlier|later|previously|decade|century|yesterday|tomorrow)\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b",
    re.IGNORECASE,
)


def claim_traits(text: str) -> set[str]:
    """``arithmetic`` and/or ``temporal`` for one claim (see the module docstring)."""
    traits = set()
    numbers = _NUMBER.findall(text or "")
    years = set(re.findall(r"\b(?:1[0-9]{3}|20[0-9]{2})\b", text or ""))
    quantities = [n for n in numbers if n not in years]
    if len(quantities) >= 2 or (quantities and _ARITHMETIC.search(text or "")):
        traits.add("arithmetic")
    if _TEMPORAL.search(text or ""):
        traits.add("temporal")
    return traits


def reasoning(texts: Iterable[str]) -> str:
    """The answer's ``reasoning`` value from its claims' texts."""
    found: set[str] = set()
    for t in texts:
        found |= claim_traits(t)
    if found >= {"arithmetic", "temporal"}:
        return "both"
    return next(iter(found)) if found else "none"


def sources(documents: Iterable[str | None]) -> str:
    """The answer's ``sources`` value from the documents its claims' evidence came from (None: no evidence)."""
    distinct = {d for d in documents if d is not None}
    return "none" if not distinct else "single" if len(distinct) == 1 else "multi"


def answer_shape(
    claim_texts: Sequence[str], evidence_documents: Sequence[str | None], enabled: Iterable[str] = tuple(DERIVED)
) -> dict[str, str]:
    """Every derived label's value (``off`` for those not ``enabled``)."""
    on = set(enabled)
    return {
        "sources": sources(evidence_documents) if "sources" in on else OFF,
        "reasoning": reasoning(claim_texts) if "reasoning" in on else OFF,
    }


def label_values(shape: Mapping[str, str] | None) -> tuple[str, str]:
    """(sources, reasoning) as metric label values: a value outside the declared ones (an old or foreign result)
    reads ``off``."""
    shape = shape or {}
    return tuple(  # type: ignore[return-value]
        shape.get(name) if shape.get(name) in values else OFF for name, values in DERIVED.items()
    )
