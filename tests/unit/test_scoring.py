"""Scores per answer: definitions pinned on hand-computed cases."""

import pytest

from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict, complete_verdicts
from evaluator_worker.scoring import score


def _claims(n):
    return [Claim(id=f"c{i}", text=f"claim {i}") for i in range(n)]


def _v(cid, verdict):
    return ClaimVerdict(claim_id=cid, verdict=verdict)


def test_faithfulness_is_supported_over_judged_claims():
    """3 supported, 1 unsupported, 1 contradicted -> faithfulness 0.6, hallucination 0.4."""
    claims = _claims(5)
    vs = [
        _v("c0", Verdict.SUPPORTED),
        _v("c1", Verdict.SUPPORTED),
        _v("c2", Verdict.SUPPORTED),
        _v("c3", Verdict.UNSUPPORTED),
        _v("c4", Verdict.CONTRADICTED),
    ]
    r = score("t", "j", claims, vs)
    assert r.outcome == "evaluated"
    assert r.faithfulness == pytest.approx(0.6)
    assert r.hallucination_rate == pytest.approx(0.4)
    assert r.has_unsupported and r.has_contradicted


def test_error_claims_are_excluded_from_the_denominator_and_counted():
    """ERROR claims are neither supported nor contradicted and don't dilute the score."""
    claims = _claims(4)
    vs = [_v("c0", Verdict.SUPPORTED), _v("c1", Verdict.ERROR), _v("c2", Verdict.ERROR), _v("c3", Verdict.UNSUPPORTED)]
    r = score("t", "j", claims, vs)
    assert r.counts["ERROR"] == 2
    assert r.faithfulness == pytest.approx(0.5)
    assert not r.has_contradicted


def test_abstention_has_a_defined_result_not_nan():
    """No claims -> outcome abstained and faithfulness None (never NaN)."""
    r = score("t", "j", [], [])
    assert r.outcome == "abstained"
    assert r.faithfulness is None and r.hallucination_rate is None
    assert "NaN" not in r.model_dump_json()


def test_all_error_is_a_failed_answer():
    """Every claim ERROR -> outcome failed, no score."""
    claims = _claims(2)
    r = score("t", "j", claims, [_v("c0", Verdict.ERROR), _v("c1", Verdict.ERROR)])
    assert r.outcome == "failed" and r.faithfulness is None


def test_all_contradicted_scores_zero():
    """All claims contradicted -> faithfulness 0, hallucination 1."""
    claims = _claims(3)
    r = score("t", "j", claims, [_v(c.id, Verdict.CONTRADICTED) for c in claims])
    assert r.faithfulness == 0.0 and r.hallucination_rate == 1.0


def test_dropped_verdict_becomes_error_not_a_smaller_denominator():
    """A judge that returns 2 verdicts for 3 claims gets the third marked ERROR."""
    claims = _claims(3)
    done = complete_verdicts(
        claims, [_v("c0", Verdict.SUPPORTED), _v("c2", Verdict.SUPPORTED), _v("zz", Verdict.CONTRADICTED)]
    )
    assert [v.verdict for v in done] == [Verdict.SUPPORTED, Verdict.ERROR, Verdict.SUPPORTED]
    r = score("t", "j", claims, done)
    assert r.counts["ERROR"] == 1 and r.counts["CONTRADICTED"] == 0


def test_score_refuses_incomplete_verdicts():
    """score() insists on one verdict per claim."""
    with pytest.raises(ValueError):
        score("t", "j", _claims(2), [_v("c0", Verdict.SUPPORTED)])
