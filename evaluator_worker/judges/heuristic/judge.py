"""The offline ``heuristic`` judge: no network, no model, deterministic.

Per claim:

1. **Analyse** (``analysis``): split every context chunk into sentences and clauses,
   reduce claim and sentences to weighted content terms (light stemming, synonym keys from
   ``lexicon``, names weigh more) and quantities; rank sentences by overlap with the claim.
2. **Rules** (``rules.RULES``): an ordered declaration of checks, each targeting one
   failure type (number, date, entity, role, attribution, negation, antonym, hedge, knowledge
   insertion, coverage). The first rule that fires decides the verdict, its confidence, reason
   and evidence sentence.
3. No rule fires: SUPPORTED, with the sentence that covers most of the claim as evidence (up to
   three sentences from any chunks may jointly cover it: multi-source synthesis).

Confidence reflects how explicit the evidence is, so a cascade escalates the weak verdicts.
See docs/heuristic-judge.md for the rules and for what this judge cannot do.
"""

from __future__ import annotations

from typing import Any, Sequence

from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import claim_content, extract_claims
from evaluator_worker.judges.heuristic.analysis import ClaimCase, Sentence, analyse, context_vocab, index_contexts
from evaluator_worker.judges.heuristic.rules import RULES, Rule, RuleHit, supported
from evaluator_worker.judges.heuristic.thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = ["HeuristicJudge"]


class HeuristicJudge(JudgeBase):
    """Offline rule-based judge (the embedded default). Thread-safe and stateless."""

    name = "heuristic"

    def __init__(self, thresholds: Thresholds = DEFAULT_THRESHOLDS, rules: Sequence[Rule] = RULES) -> None:
        #: every threshold, weight and confidence (``thresholds.alignment.support``: weighted share of claim
        #: terms the evidence must cover for SUPPORTED; ``.align``: overlap a sentence needs before its numbers
        #: can contradict the claim)
        self.thresholds = thresholds
        self.rules = tuple(rules)

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Rule-based claim extraction (see ``evaluator_worker.judges.claims``); contexts are not used."""
        return Extraction(claims=extract_claims(answer or "", question), usage=Usage(calls=0, model="heuristic"))

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim, in order."""
        sents = index_contexts(contexts)
        vocab = context_vocab(contexts)
        qterms = frozenset(analyse(question).terms) if question else frozenset()
        verdicts = []
        for c in claims:
            try:
                hit = self.decide(ClaimCase.build(claim_content(c.text), sents, vocab, qterms, self.thresholds))
                v = _verdict(c.id, hit)
            except Exception as exc:  # a bug on odd input must not drop the claim
                v = ClaimVerdict(
                    claim_id=c.id,
                    verdict=Verdict.ERROR,
                    confidence=0.0,
                    reason=f"heuristic error: {type(exc).__name__}",
                )
            verdicts.append(v)
        return Verification(verdicts=verdicts, usage=Usage(calls=0, model="heuristic"))

    def fingerprint(self) -> dict[str, Any]:
        """What changes its verdicts (judge identity): its thresholds, its rules in order, and the source of the
        rule, lexicon and claim-splitting modules (the rules and lexicons are code)."""
        from evaluator_worker.judges import claims, heuristic
        from evaluator_worker.judges.fingerprint import source_digest

        return {
            "kind": "heuristic",
            "thresholds": self.thresholds,
            "rules": [(r.name, r.failure_type, r.applies_to_derived, r.failure_class) for r in self.rules],
            "source": source_digest(heuristic, claims),
        }

    def decide(self, case: ClaimCase) -> RuleHit:
        """The first rule that fires, else SUPPORTED."""
        for rule in self.rules:
            hit = rule.apply(case)
            if hit is not None:
                return hit
        return supported(case)


def _verdict(claim_id: str, hit: RuleHit) -> ClaimVerdict:
    s: Sentence | None = hit.evidence
    return ClaimVerdict(
        claim_id=claim_id,
        verdict=hit.verdict,
        evidence=s.text if s is not None else None,
        context_index=s.chunk if s is not None else None,
        confidence=round(min(max(hit.confidence, 0.0), 1.0), 3),
        reason=hit.reason,
        failure_type=hit.failure,
    )
