"""Every threshold, weight and confidence the heuristic judge uses, grouped by concern.

``Thresholds`` holds four small frozen groups; ``DEFAULT_THRESHOLDS`` is the one default instance.
The judge takes a ``Thresholds`` (``HeuristicJudge(thresholds=...)``) and hands it to the analysis and
the rules through ``ClaimCase.t``; nothing reads a threshold from a module global at decision time.
(The text helpers that analyse context sentences, cached across requests, use
``DEFAULT_THRESHOLDS.alignment``'s weights and prefix length.)

Confidences are how explicit the evidence is (raw scores: the registry maps them to P(right)
with the map shipped in ``judges/calibration/heuristic.json``); a cascade escalates the least
confident, so weak signals (an entity swap, low coverage, a claim stitched from several
chunks) are meant to sit below the explicit ones. Change a value and the calibration map and
docs/judge-quality.md numbers no longer describe the judge: refit on dev.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Alignment", "NumberPairing", "RuleOverlaps", "Confidences", "Thresholds", "DEFAULT_THRESHOLDS"]


@dataclass(frozen=True)
class Alignment:
    """Alignment and coverage: paraphrase vs unsupported content."""

    #: weighted share of claim terms the evidence must cover for SUPPORTED
    support: float = 0.75
    #: overlap a sentence needs before its numbers can contradict the claim (a number clash in an
    #: unrelated sentence is not a contradiction)
    align: float = 0.5
    #: a synthesised claim needs one sentence covering at least this share (otherwise the cover
    #: stitches unrelated words together)
    anchor: float = 0.4
    #: sentences a multi-source cover may combine
    cover_sentences: int = 3
    #: best-aligned sentences considered for the cover
    cover_pool: int = 50
    #: weight of a claim number in coverage (numbers are checked separately, so a matched one counts)
    number_weight: float = 1.5
    #: names weigh more than common words: a missing name is missing content
    name_weight: float = 2.0
    #: light verbs ("located", "stands") weigh less
    light_weight: float = 0.5
    #: shared prefix length that counts as the same word (morphology the stemmer misses)
    prefix: int = 5


@dataclass(frozen=True)
class NumberPairing:
    """Pairing a claim number with the right context number."""

    #: alignment bonus for a sentence holding one of the claim's numbers
    number_align_bonus: float = 0.3
    #: neighbour words around a number that pair it with the right context number
    neighbours: int = 3
    #: how well a context number's status anchors it to a claim number
    match_bonus: float = 0.5
    within_bonus: float = 0.45
    approx_bonus: float = 0.2
    conflict_bonus: float = 0.0
    #: bonus per shared neighbouring word (up to three)
    neighbour_bonus: float = 0.25
    #: a clashing number is set aside when another sentence agrees and aligns within this margin (and at least this well)
    agree_margin: float = 0.25
    agree_min: float = 0.3

    def status_bonus(self, status: str) -> float:
        """The bonus for a context number with ``status`` (match, within, approx, conflict)."""
        return {
            "match": self.match_bonus,
            "within": self.within_bonus,
            "approx": self.approx_bonus,
            "conflict": self.conflict_bonus,
        }[status]


@dataclass(frozen=True)
class RuleOverlaps:
    """When a rule fires: overlaps a contradiction needs (negation, antonyms, names, speakers, scope)."""

    #: clause overlap before a polarity difference counts as a flip
    polarity_overlap: float = 0.6
    #: overlap of the rest of the claim before an opposite word counts as antonym substitution
    antonym_rest: float = 0.6
    #: same, when the opposite word sits in another clause of the best sentence
    antonym_sentence_rest: float = 0.75
    #: overlap of the non-name part of the claim before a different name counts as an entity swap
    entity_rest: float = 0.75
    #: overlap that counts as the whole claim being in one sentence (a short frame that matches exactly)
    exact_frame: float = 0.99
    #: overlap of the claim with a sentence before a closed-class value in it counts as a swap
    closed_class_rest: float = 0.75
    #: contrastive exclusion: overlap of the rest of the claim with the sentence / with all context
    contrast_here: float = 0.2
    contrast_all: float = 0.6
    #: overlap of the permitted action with a prohibited one
    prohibition_overlap: float = 0.6
    #: overlap of the claim (without the missing thing) with a sentence that requires it
    without_overlap: float = 0.5
    #: speaker checks: share of quoted words that must match / content overlap of the statement
    quote_overlap: float = 0.6
    statement_overlap: float = 0.6
    #: roles: the claim's non-name words must match the sentence about the name this much
    role_overlap: float = 0.5
    #: clause entity: predicate overlap with the sentence, with the best clause, and its margin
    clause_sentence: float = 0.75
    clause_best: float = 0.5
    clause_margin: float = 0.15
    #: words a negation cue puts out of the statement: up to the segment end, at most this many
    scope_words: int = 5
    #: characters before a requirement word searched for a negation ("does not need")
    require_lookback: int = 25


@dataclass(frozen=True)
class Confidences:
    """The confidence each verdict is given (raw; calibrated by the registry)."""

    no_context: float = 0.9
    nothing_checkable: float = 0.3
    quote_speaker: float = 0.9
    statement_speaker: float = 0.8
    #: number/date conflict: base + slope * alignment of the conflicting sentence
    number_conflict_base: float = 0.6
    number_conflict_slope: float = 0.35
    #: negation flip: base + slope * clause overlap
    negation_base: float = 0.55
    negation_slope: float = 0.35
    #: antonym in the aligned clause: base + slope * overlap of the rest
    antonym_base: float = 0.6
    antonym_slope: float = 0.2
    antonym_sentence: float = 0.65
    entity_swap: float = 0.6
    role_swap: float = 0.75
    scoped_negation: float = 0.7
    closed_class: float = 0.7
    number_approx: float = 0.7
    number_absent: float = 0.8
    #: names missing from the context: base + step per missing name (up to two)
    missing_name_base: float = 0.7
    missing_name_step: float = 0.1
    hedge_context: float = 0.7
    hedge_future: float = 0.7
    intensifier: float = 0.65
    #: low coverage: base + slope * (1 - coverage)
    low_coverage_base: float = 0.5
    low_coverage_slope: float = 0.35
    #: SUPPORTED: base + slope * coverage (* synthesis factor when several sentences were combined)
    #: + bonus when one sentence holds the whole claim
    supported_base: float = 0.55
    supported_slope: float = 0.35
    supported_synthesis: float = 0.85
    supported_exact_bonus: float = 0.05
    #: a number derived by arithmetic is plausible but worth a second opinion
    supported_derived_cap: float = 0.65


@dataclass(frozen=True)
class Thresholds:
    """Every number the heuristic judge uses, grouped by concern."""

    alignment: Alignment = field(default_factory=Alignment)
    numbers: NumberPairing = field(default_factory=NumberPairing)
    rules: RuleOverlaps = field(default_factory=RuleOverlaps)
    confidence: Confidences = field(default_factory=Confidences)


#: the thresholds the judge ships with (tuned on claims_dev.jsonl only)
DEFAULT_THRESHOLDS = Thresholds()
