"""The failure taxonomy: what kind of unfaithfulness a flagged claim shows (taxonomy version 1).

A per-claim judge is for finding *which* facts a release started getting wrong: when the faithful share drops, the
flagged claims almost always share one class of error (a quote given to the wrong speaker, a date inferred that the
context never gave, a number made vaguer). Every UNSUPPORTED or CONTRADICTED verdict carries exactly one
:class:`FailureType`; a judge that cannot tell says ``unknown``. A SUPPORTED verdict carries none, with one
exception: under the lenient hedge policy a hedge-inflated claim is counted supported and keeps its
``hedge_inflation`` type, so the hedges stay countable whichever way a team counts them.

The classes, their one-line definitions (the LLM judge's prompt is built from them) and an example each are
declared once, in :data:`TAXONOMY`; the results topic, the metrics, the report, ``claimwatch claims --type`` and the
gate read them from here. Adding a class is a new taxonomy version (a new label value on every counter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

TAXONOMY_VERSION = 1


class FailureType(str, Enum):
    """The kind of unfaithfulness (a bounded metric label value)."""

    NUMERIC = "numeric"
    TEMPORAL = "temporal"
    ATTRIBUTION = "attribution"
    LIST_MEMBERSHIP = "list_membership"
    POLARITY = "polarity"
    QUANTIFIER = "quantifier"
    HEDGE_INFLATION = "hedge_inflation"
    CERTAINTY_INFLATION = "certainty_inflation"
    UNSUPPORTED_ADDITION = "unsupported_addition"
    OTHER = "other"
    UNKNOWN = "unknown"

    @property
    def label(self) -> str:
        return self.value


@dataclass(frozen=True)
class FailureClass:
    """One class: its definition (one line, what a judge is told) and an example (a claim against a context)."""

    type: FailureType
    name: str
    definition: str
    claim: str
    context: str


TAXONOMY: tuple[FailureClass, ...] = (
    FailureClass(
        FailureType.NUMERIC,
        "numerical specificity loss or error",
        "a quantity, amount, price, percentage or count that differs from the context, is vaguer than it, has "
        "another unit, or stands in another relation (more/less than)",
        "Revenue rose by about 10% in 2023.",
        "Revenue rose by 12.4% in 2023.",
    ),
    FailureClass(
        FailureType.TEMPORAL,
        "temporal error",
        "a date, year, era, duration or order of events that differs from the context, or a tense that changes "
        "what happened (done vs ongoing)",
        "Construction of the bridge began in 1926.",
        "Construction of the bridge began in 1924.",
    ),
    FailureClass(
        FailureType.ATTRIBUTION,
        "attribution drift",
        "a statement, quote, action or property given to the wrong person, organisation or source, or two roles "
        "swapped (winner and loser, buyer and seller)",
        'The CFO said "margins will recover next year."',
        'The CEO said "margins will recover next year."',
    ),
    FailureClass(
        FailureType.LIST_MEMBERSHIP,
        "list membership error",
        "an item added to, or dropped from, a list or set the context enumerates (ingredients, members, options)",
        "The plan covers dental, vision and hearing.",
        "The plan covers dental and vision.",
    ),
    FailureClass(
        FailureType.POLARITY,
        "polarity or negation error",
        "the claim says the opposite of the context: a negation added or dropped, an antonym, an excluded or "
        "forbidden thing asserted as allowed",
        "Refunds are available for opened items.",
        "Refunds are not available for opened items.",
    ),
    FailureClass(
        FailureType.QUANTIFIER,
        "overclaiming (quantifier)",
        "a universal or exactness word the context does not give: all/always/never/every/exactly where the "
        "context says some/usually/about",
        "All customers qualify for free shipping.",
        "Most customers qualify for free shipping.",
    ),
    FailureClass(
        FailureType.HEDGE_INFLATION,
        "hedge inflation",
        "the claim adds uncertainty to what the context states definitively (may/might/could/possibly where the "
        "context asserts it)",
        "Aspirin may reduce inflammation.",
        "Aspirin reduces inflammation.",
    ),
    FailureClass(
        FailureType.CERTAINTY_INFLATION,
        "certainty inflation",
        "the claim asserts as fact what the context only hedges, plans, forecasts or reports as possible",
        "The new policy reduces wait times.",
        "The new policy may reduce wait times.",
    ),
    FailureClass(
        FailureType.UNSUPPORTED_ADDITION,
        "unsupported addition (implicit knowledge insertion)",
        "a fact the context does not contain at all: background knowledge, a plausible detail, a name or reason "
        "the model added",
        "The museum, founded by Andrew Carnegie, opened in 1895.",
        "The museum opened in 1895.",
    ),
    FailureClass(
        FailureType.OTHER,
        "other",
        "unfaithful in a way none of the classes above describes",
        "The report was written in French.",
        "The report was written in German.",
    ),
    FailureClass(
        FailureType.UNKNOWN,
        "unknown",
        "the judge flagged the claim but cannot tell the class",
        "",
        "",
    ),
)
BY_TYPE: dict[FailureType, FailureClass] = {c.type: c for c in TAXONOMY}
LABELS: tuple[str, ...] = tuple(t.value for t in FailureType)

#: names judges write for the classes besides the canonical ones (a model's words, older rule names)
_ALIASES: dict[str, FailureType] = {
    "number": FailureType.NUMERIC,
    "numbers": FailureType.NUMERIC,
    "numerical": FailureType.NUMERIC,
    "quantity": FailureType.NUMERIC,
    "numerical_specificity_loss": FailureType.NUMERIC,
    "date": FailureType.TEMPORAL,
    "time": FailureType.TEMPORAL,
    "tense": FailureType.TEMPORAL,
    "speaker": FailureType.ATTRIBUTION,
    "speaker_attribution": FailureType.ATTRIBUTION,
    "speaker_attribution_drift": FailureType.ATTRIBUTION,
    "entity": FailureType.ATTRIBUTION,
    "role": FailureType.ATTRIBUTION,
    "list": FailureType.LIST_MEMBERSHIP,
    "negation": FailureType.POLARITY,
    "antonym": FailureType.POLARITY,
    "contradiction": FailureType.POLARITY,
    "overclaiming": FailureType.QUANTIFIER,
    "hedge": FailureType.HEDGE_INFLATION,
    "hedging": FailureType.HEDGE_INFLATION,
    "certainty": FailureType.CERTAINTY_INFLATION,
    "knowledge_insertion": FailureType.UNSUPPORTED_ADDITION,
    "implicit_knowledge_insertion": FailureType.UNSUPPORTED_ADDITION,
    "unsupported": FailureType.UNSUPPORTED_ADDITION,
    "addition": FailureType.UNSUPPORTED_ADDITION,
    "fabrication": FailureType.UNSUPPORTED_ADDITION,
    "none": FailureType.UNKNOWN,
    "": FailureType.UNKNOWN,
}
_NON_WORD = re.compile(r"[^a-z0-9]+")


def parse_failure_type(value: Any) -> FailureType:
    """A judge's type name as a :class:`FailureType`: the canonical names and a few aliases, case and separators
    ignored; ``None`` or blank is ``unknown``; any other name is ``other`` (the judge named a class outside the
    taxonomy: flagged, and not one of ours)."""
    if isinstance(value, FailureType):
        return value
    if value is None:
        return FailureType.UNKNOWN
    key = _NON_WORD.sub("_", str(value).strip().lower()).strip("_")
    try:
        return FailureType(key)
    except ValueError:
        return _ALIASES.get(key, FailureType.OTHER)
