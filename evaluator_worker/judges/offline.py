"""The ``offline`` judge: the heuristic's number/date verdicts stand, the trained ``verifier`` decides the rest.

Per claim, the heuristic's rules run in their declared order (``heuristic.rules.RULES``); when
the first rule that fires has failure type ``NUMBER`` or ``DATE`` (a number or date that differs
from, approximates, or is absent from the context: what string matching does reliably), its
verdict stands. Every other claim (paraphrase, negation, roles, speakers, knowledge insertion,
synthesis: what needs meaning) goes to the verifier, in one batched call per answer.

Fully offline; needs the ``verifier`` extra (torch, transformers). The existing ``cascade`` judge
is unchanged.
"""

from __future__ import annotations

from typing import Any, Sequence

from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import extract_claims
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.heuristic.analysis import ClaimCase, analyse, context_vocab, index_contexts
from evaluator_worker.judges.heuristic.rules import FailureType, RuleHit
from evaluator_worker.judges.verifier import VerifierJudge

__all__ = ["OfflineJudge", "STANDING_TYPES"]

#: failure types whose heuristic verdicts are kept
STANDING_TYPES = frozenset({FailureType.NUMBER, FailureType.DATE})


class OfflineJudge(JudgeBase):
    """Heuristic number/date rules first, the trained verifier for everything else (module docstring)."""

    name = "offline"

    def __init__(
        self,
        verifier: VerifierJudge | None = None,
        heuristic: HeuristicJudge | None = None,
        standing: frozenset[FailureType] = STANDING_TYPES,
    ) -> None:
        self.verifier = verifier or VerifierJudge()
        self.heuristic = heuristic or HeuristicJudge()
        self.standing = standing

    def models(self) -> tuple[str, ...]:
        return self.verifier.models()

    def fingerprint(self) -> dict[str, Any]:
        """Both judges' fingerprints and which heuristic verdicts stand (judge identity)."""
        from evaluator_worker.judges.fingerprint import source_digest

        return {
            "kind": "offline",
            "verifier": self.verifier.fingerprint(),
            "heuristic": self.heuristic.fingerprint(),
            "standing": sorted(str(t) for t in self.standing),
            "source": source_digest(OfflineJudge),
        }

    def load(self) -> "OfflineJudge":
        """Load the verifier model now (raises ``ConfigError`` when it can't)."""
        self.verifier.load()
        return self

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Rule-based claim extraction (``evaluator_worker.judges.claims``), shared by both judges."""
        return Extraction(claims=extract_claims(answer or "", question), usage=Usage(model=self.name))

    def standing_hit(self, claim: Claim, contexts: Sequence[str], question: str | None = None) -> RuleHit | None:
        """The heuristic's decision on ``claim`` when its deciding rule is a number/date rule, else None."""
        case = ClaimCase.build(
            claim.text,
            index_contexts(contexts),
            context_vocab(contexts),
            frozenset(analyse(question).terms) if question else frozenset(),
            self.heuristic.thresholds,
        )
        for rule in self.heuristic.rules:
            hit = rule.apply(case)
            if hit is not None:
                return hit if rule.failure_type in self.standing else None
        return None

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: a standing number/date verdict, else the verifier's."""
        fixed: dict[str, ClaimVerdict] = {}
        for c in claims:
            try:
                hit = self.standing_hit(c, contexts, question)
            except Exception:  # a heuristic bug on odd input: let the verifier decide
                hit = None
            if hit is not None:
                s = hit.evidence
                fixed[c.id] = ClaimVerdict(
                    claim_id=c.id,
                    verdict=hit.verdict,
                    evidence=s.text if s is not None else None,
                    context_index=s.chunk if s is not None else None,
                    confidence=round(min(max(hit.confidence, 0.0), 1.0), 3),
                    reason=f"heuristic: {hit.reason}",
                    failure_type=hit.failure,
                )
        rest = [c for c in claims if c.id not in fixed]
        result = self.verifier.verify(rest, contexts, question) if rest else Verification(verdicts=[])
        by_id = {v.claim_id: v for v in result.verdicts}
        verdicts = [
            fixed.get(c.id)
            or by_id.get(c.id)
            or ClaimVerdict(claim_id=c.id, verdict=Verdict.ERROR, confidence=0.0, reason="no verdict")
            for c in claims
        ]
        usage = result.usage
        usage.model = self.name
        return Verification(verdicts=verdicts, usage=usage)
