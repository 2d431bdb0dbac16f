"""RagaliQ / DeepEval / FActScore parity formulas, pinned on hand-computed examples."""

import math

import pytest

from evaluator_worker.judges.base import Verdict
from evaluator_worker.parity import (
    context_hallucination,
    factscore_gamma,
    factscore_penalized,
    parity_scores,
    ragaliq_faithfulness,
    ragaliq_hallucination,
    suspect_claims,
)
from evaluator_worker.scoring import ClaimResult

S, U, C, E = Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.CONTRADICTED, Verdict.ERROR


def _claims(*spec):
    """spec items: (verdict, context_index, confidence)."""
    return [
        ClaimResult(id=f"c{i}", text=f"claim {i}", verdict=v, context_index=ci, confidence=conf)
        for i, (v, ci, conf) in enumerate(spec)
    ]


def test_ragaliq_faithfulness_threshold_and_vacuous_empty():
    """3/4 supported = 0.75 passes 0.7; 2/4 fails; an empty answer is 1.0 and passes."""
    assert ragaliq_faithfulness(_claims((S, 0, 0.9), (S, 0, 0.9), (S, 0, 0.9), (U, None, 0.9))).score == 0.75
    assert ragaliq_faithfulness(_claims((S, 0, 0.9), (S, 0, 0.9), (S, 0, 0.9), (U, None, 0.9))).passed is True
    two = ragaliq_faithfulness(_claims((S, 0, 0.9), (S, 0, 0.9), (C, 1, 0.9), (U, None, 0.9)))
    assert two.score == 0.5 and two.passed is False
    empty = ragaliq_faithfulness([])
    assert empty.score == 1.0 and empty.passed is True


def test_ragaliq_hallucination_lists_hallucinated_claims():
    """1 - (U + C) / judged with threshold 0.8: 4 supported + 1 contradicted = 0.8, passes; claims listed."""
    r = ragaliq_hallucination(_claims((S, 0, 0.9), (S, 0, 0.9), (S, 0, 0.9), (S, 0, 0.9), (C, 0, 0.9)))
    assert r.score == pytest.approx(0.8) and r.passed is True
    assert r.detail == ["CONTRADICTED: claim 4"]
    bad = ragaliq_hallucination(_claims((S, 0, 0.9), (U, None, 0.9), (C, 0, 0.9)))
    assert bad.score == pytest.approx(1 / 3) and bad.passed is False and len(bad.detail) == 2


def test_all_contradicted_and_all_error():
    """All contradicted: faithfulness 0, hallucination 0; all ERROR: not scored (None), never NaN."""
    allc = _claims((C, 0, 0.9), (C, 1, 0.9))
    assert ragaliq_faithfulness(allc).score == 0.0 and ragaliq_hallucination(allc).score == 0.0
    alle = _claims((E, None, 0), (E, None, 0))
    assert ragaliq_faithfulness(alle).score is None and ragaliq_hallucination(alle).passed is None


def test_context_hallucination_counts_contradicted_chunks():
    """Two claims contradict chunk 1, one chunk 3, of 4 chunks -> 2/4 = 0.5; no contexts -> None."""
    claims = _claims((C, 1, 0.9), (C, 1, 0.8), (C, 3, 0.9), (S, 0, 0.9), (U, None, 0.9))
    score, hit = context_hallucination(claims, 4)
    assert score == 0.5 and hit == [1, 3]
    assert context_hallucination(claims, 0) == (None, [])
    assert context_hallucination(_claims((S, 0, 0.9)), 3) == (0.0, [])


def test_factscore_length_penalty():
    """gamma(n) = exp(1 - K/n) below K claims: K=4, n=2 -> e^-1; n>=K -> 1; n=0 -> 0."""
    assert factscore_gamma(2, 4) == pytest.approx(math.exp(-1))
    assert factscore_gamma(4, 4) == 1.0 and factscore_gamma(9, 4) == 1.0
    assert factscore_gamma(0, 4) == 0.0
    two_supported = _claims((S, 0, 0.9), (S, 0, 0.9))
    assert factscore_penalized(two_supported, 4) == pytest.approx(math.exp(-1))
    assert factscore_penalized(two_supported, None) is None
    assert factscore_penalized([], 3) == 0.0  # an answer that avoids claims is not rewarded


def test_vague_answer_scores_below_a_specific_one():
    """With K=3, one supported claim (1.0 raw) scores below three claims with one wrong (0.67)."""
    vague = factscore_penalized(_claims((S, 0, 0.9)), 3)
    specific = factscore_penalized(_claims((S, 0, 0.9), (S, 0, 0.9), (U, None, 0.9)), 3)
    assert vague == pytest.approx(math.exp(-2)) and specific == pytest.approx(2 / 3)
    assert vague < specific


def test_suspect_claims_use_the_confidence_floor():
    """SUPPORTED below the floor is suspect; other verdicts and floor 0 are not."""
    claims = _claims((S, 0, 0.3), (S, 0, 0.9), (U, None, 0.1))
    assert suspect_claims(claims, 0.5) == ["c0"]
    assert suspect_claims(claims, 0.0) == []


def test_parity_scores_bundle():
    """parity_scores computes every evaluator from one claim list."""
    p = parity_scores(_claims((S, 0, 0.4), (C, 1, 0.9)), 2, expected_min_claims=2, confidence_floor=0.5)
    assert p.ragaliq_faithfulness.score == 0.5 and p.context_hallucination == 0.5
    assert p.factscore_penalized == 0.5 and p.suspect_claims == ["c0"]
