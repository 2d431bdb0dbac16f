"""The metrics other tools report, computed from the same per-claim verdicts.

Teams arrive with numbers from RagaliQ, DeepEval and FActScore; these
functions reproduce those definitions from one judging pass so they can compare
like for like. All return plain numbers or ``None`` (never NaN):

- :func:`ragaliq_faithfulness` — supported / judged claims; an answer with no
  claims is 1.0 (vacuously faithful), pass at >= 0.7.
- :func:`ragaliq_hallucination` — 1 - hallucinated / judged, hallucinated =
  UNSUPPORTED or CONTRADICTED, pass at >= 0.8, with the hallucinated claims listed.
- :func:`context_hallucination` — DeepEval style: the share of retrieved chunks
  the answer contradicts (lower is better); ``None`` with no contexts.
  A claim counts against the chunk its evidence came from (``context_index``).
- :func:`factscore_penalized` — FActScore's length penalty
  ``γ(n) = exp(1 - K/n)`` for ``n < K`` claims (else 1), applied to faithfulness,
  so an answer that stops making claims to avoid being wrong scores lower; an
  answer with 0 claims where ``K`` are expected scores 0.
- :func:`suspect_claims` — SUPPORTED claims whose confidence is below a floor.
"""

from __future__ import annotations

import math
from typing import Sequence

from pydantic import BaseModel, Field

from evaluator_worker.judges.base import Verdict

JUDGED = (Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.CONTRADICTED)


class EvaluatorScore(BaseModel):
    """One evaluator's score for one answer."""

    score: float | None
    threshold: float
    passed: bool | None
    detail: list[str] = Field(default_factory=list)


class ParityScores(BaseModel):
    ragaliq_faithfulness: EvaluatorScore
    ragaliq_hallucination: EvaluatorScore
    context_hallucination: float | None = None
    contradicted_contexts: list[int] = Field(default_factory=list)
    factscore_penalized: float | None = None
    expected_min_claims: int | None = None
    suspect_claims: list[str] = Field(default_factory=list)


def _judged(claims) -> list:
    return [c for c in claims if c.verdict in JUDGED]


def ragaliq_faithfulness(claims: Sequence, threshold: float = 0.7) -> EvaluatorScore:
    judged = _judged(claims)
    if not claims:
        return EvaluatorScore(score=1.0, threshold=threshold, passed=True, detail=["no claims: vacuously faithful"])
    if not judged:
        return EvaluatorScore(score=None, threshold=threshold, passed=None, detail=["every claim ERROR: not scored"])
    score = sum(c.verdict == Verdict.SUPPORTED for c in judged) / len(judged)
    return EvaluatorScore(score=score, threshold=threshold, passed=score >= threshold)


def ragaliq_hallucination(claims: Sequence, threshold: float = 0.8) -> EvaluatorScore:
    judged = _judged(claims)
    if not claims:
        return EvaluatorScore(score=1.0, threshold=threshold, passed=True, detail=[])
    if not judged:
        return EvaluatorScore(score=None, threshold=threshold, passed=None, detail=["every claim ERROR: not scored"])
    bad = [c for c in judged if c.verdict in (Verdict.UNSUPPORTED, Verdict.CONTRADICTED)]
    score = 1.0 - len(bad) / len(judged)
    return EvaluatorScore(
        score=score,
        threshold=threshold,
        passed=score >= threshold,
        detail=[f"{c.verdict.value}: {c.text}" for c in bad],
    )


def context_hallucination(claims: Sequence, n_contexts: int) -> tuple[float | None, list[int]]:
    if n_contexts <= 0:
        return None, []
    hit = sorted(
        {
            c.context_index
            for c in claims
            if c.verdict == Verdict.CONTRADICTED and c.context_index is not None and 0 <= c.context_index < n_contexts
        }
    )
    return len(hit) / n_contexts, hit


def factscore_gamma(n_claims: int, expected: int) -> float:
    """FActScore's length penalty: exp(1 - K/n) below K claims, 1 otherwise; 0 for no claims."""
    if expected <= 0 or n_claims >= expected:
        return 1.0
    if n_claims == 0:
        return 0.0
    return math.exp(1.0 - expected / n_claims)


def factscore_penalized(claims: Sequence, expected: int | None) -> float | None:
    if not expected:
        return None
    judged = _judged(claims)
    if claims and not judged:
        return None
    faithfulness = (sum(c.verdict == Verdict.SUPPORTED for c in judged) / len(judged)) if judged else 0.0
    return faithfulness * factscore_gamma(len(judged), expected)


def suspect_claims(claims: Sequence, floor: float) -> list[str]:
    if floor <= 0:
        return []
    return [c.id for c in claims if c.verdict == Verdict.SUPPORTED and c.confidence < floor]


def parity_scores(
    claims: Sequence,
    n_contexts: int,
    *,
    faithfulness_threshold: float = 0.7,
    hallucination_threshold: float = 0.8,
    expected_min_claims: int | None = None,
    confidence_floor: float = 0.0,
) -> ParityScores:
    ctx_score, ctx_hit = context_hallucination(claims, n_contexts)
    return ParityScores(
        ragaliq_faithfulness=ragaliq_faithfulness(claims, faithfulness_threshold),
        ragaliq_hallucination=ragaliq_hallucination(claims, hallucination_threshold),
        context_hallucination=ctx_score,
        contradicted_contexts=ctx_hit,
        factscore_penalized=factscore_penalized(claims, expected_min_claims),
        expected_min_claims=expected_min_claims,
        suspect_claims=suspect_claims(claims, confidence_floor),
    )
