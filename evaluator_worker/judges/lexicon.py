"""General-purpose English word lists for the heuristic judge (hand-written; no data files, no downloads).

- ``EXTRA_SYNONYMS``: synonym groups added to ``textmatch.SYNONYM_GROUPS`` (one key per group);
  only unambiguous, common paraphrase pairs (a wrong group makes false SUPPORTED verdicts).
- ``EXTRA_ANTONYMS``: opposite pairs, including comparative/superlative forms the stemmer keeps apart.
- ``INTENSIFIERS``: words/phrases that make a claim universal or exact ("exactly", "always", "any",
  "with no exceptions"); when the claim has one and its evidence does not, the claim says more than
  the context (UNSUPPORTED, like hedge inflation in the other direction).
"""

from __future__ import annotations

import re

EXTRA_SYNONYMS: list[tuple[str, ...]] = [
    ("mistake", "mistaken", "mistakenly", "erroneous", "erroneously", "wrongly"),
    ("immediately", "instantly", "promptly"),
    ("advance", "ahead", "beforehand"),
    ("prepare", "ready"),
    ("switch", "turn"),
    ("free", "complimentary", "gratis"),
    ("frequent", "common", "widespread"),
    ("test", "try", "trial"),
    ("version", "build", "release"),
    ("extra", "additional", "supplementary"),
    ("permission", "authorization", "authorisation", "approval"),
    ("cap", "limit", "ceiling"),
    ("finish", "complete"),
    ("double", "twice"),
    ("yearly", "annual", "annually"),
    ("daily", "everyday"),
    ("weekly",),
    ("monthly",),
    ("payment", "fee", "charge"),
    ("return", "refund", "repay", "reimburse"),
    ("delete", "erase", "remove"),
    ("moisture", "water", "hydrate", "hydration"),
    ("deepen", "intensify", "enhance"),
    ("rest", "chill"),
    ("remain", "stay"),
    ("journey", "trip"),
    ("reside", "live"),
    ("contest", "competition", "race"),
    ("victory", "win"),
    ("defeat", "beat"),
    ("resign", "quit"),
    ("arrive", "reach"),
    ("depart", "leave"),
    ("schedule", "plan"),
    ("reveal", "unveil", "disclose"),
    ("sue", "litigate"),
    ("convict", "condemn"),
    ("expire", "lapse"),
    ("repair", "fix", "mend"),
    ("examine", "inspect", "check"),
    ("purchase", "buy"),
    ("modify", "change", "alter", "adjust"),
    ("entire", "whole", "full"),
    ("verify", "confirm"),
    ("enough", "sufficient", "adequate"),
    ("accurate", "precise", "correct"),
    ("occupant", "resident", "tenant"),
    ("apartment", "flat", "unit"),
    ("gift", "present"),
    ("hazard", "danger", "risk"),
    ("foam", "suds", "lather"),
    ("leak", "drip"),
]

EXTRA_ANTONYMS: list[tuple[str, str]] = [
    ("highest", "lowest"), ("higher", "lower"), ("most", "least"), ("always", "never"), ("earliest", "latest"),
    ("first", "last"), ("largest", "smallest"), ("longest", "shortest"), ("fastest", "slowest"), ("oldest", "newest"),
    ("best", "worst"), ("warmest", "coldest"), ("hottest", "coldest"), ("wettest", "driest"), ("increase", "decrease"),
    ("allow", "forbid"), ("permit", "prohibit"), ("mandatory", "optional"), ("required", "optional"),
    ("compulsory", "voluntary"), ("guilty", "innocent"), ("acquit", "convict"), ("arrive", "depart"),
    ("open", "closed"), ("include", "exclude"), ("enable", "disable"), ("on", "off"), ("wired", "wireless"),
    ("furnished", "unfurnished"), ("refundable", "nonrefundable"), ("minimum", "maximum"), ("entry", "exit"),
    ("win", "lose"), ("rise", "fall"), ("gain", "lose"), ("surplus", "deficit"),
    ("expand", "shrink"), ("above", "below"), ("upstream", "downstream"), ("inbound", "outbound"),
    ("domestic", "international"), ("domestic", "foreign"), ("indoor", "outdoor"), ("raw", "cooked"),
    ("frozen", "thawed"), ("sweet", "sour"), ("morning", "evening"), ("day", "night"),
]

_INTENSIFIER = re.compile(
    r"\b(?:exactly|precisely|always|invariably|guaranteed|guarantees?|definitely|"
    r"regardless|whatever|without\s+exception|no\s+exceptions?|in\s+all\s+cases|under\s+all)\b",
    re.I,
)


def intensifiers(text: str) -> list[str]:
    """Universal/exactness markers in ``text`` ('exactly', 'always', 'any', 'no exceptions'), lower-cased."""
    return [m.group(0).lower() for m in _INTENSIFIER.finditer(text or "")]


#: closed word classes: two different members in the same slot cannot both be true of one thing
#: ("the LED blinks amber" vs "blinks green")
CLOSED_CLASSES: list[frozenset[str]] = [
    frozenset("red orange amber yellow green blue purple violet pink white black grey gray brown silver gold".split()),
    frozenset("monday tuesday wednesday thursday friday saturday sunday".split()),
    frozenset("north south east west northeast northwest southeast southwest".split()),
    frozenset("left right".split()),
]

#: words that put the noun phrase after them out of the statement ("in Nice rather than Paris")
CONTRAST_NEG = re.compile(r"\b(?:rather\s+than|instead\s+of|but\s+not|and\s+not|as\s+opposed\s+to)\s+", re.I)

#: an instruction not to do something, at the start of a clause ("Do not soak the knee ...")
PROHIBITION = re.compile(
    r"^\s*(?:but\s+|and\s+|so\s+)?(?:you\s+)?(?:do\s+not|don['’]t|never|must\s+not|mustn['’]t|should\s+not|"
    r"shouldn['’]t|cannot|can['’]t|may\s+not|avoid)\b", re.I)

#: a claim that something is allowed ("you can soak", "may be stored", "is safe to")
PERMISSION = re.compile(r"\b(?:can|may|could|allowed\s+to|permitted\s+to|(?:safe|fine|okay|ok)\s+to)\b", re.I)

#: where a condition starts in a claim ("... as soon as the first 48 hours have passed")
CONDITION = re.compile(r"\b(?:if|once|as\s+soon\s+as|after|when|whenever|provided|unless|until)\b", re.I)

#: "need X" / "require X" / "with X": X is necessary or present
REQUIRE = re.compile(r"\b(?:needs?|needed|requires?|required|must\s+(?:have|hold|show|book|make)|with)\b", re.I)

#: winner / loser roles around a name ("A beat B", "defeating B", "B finished second")
WIN_VERBS = r"(?:won|wins|beat|beats|defeated|defeats|finished\s+first|came\s+first|placed\s+first|took\s+(?:the\s+)?gold)"
LOSE_AFTER = r"(?:defeating|defeated|beating|beat|beats|defeats|edged|edging|over)"
LOSE_RANK = r"(?:second|third|fourth|fifth|last|runner-up|runners-up)"
