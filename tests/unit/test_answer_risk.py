"""Answer risk: the claim map and aggregators, the fitted files, the result fields, the metric and the gate's count."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimwatch.claims_query import flagged_claims
from claimwatch.gate import ReleaseCounts, counts_from_results, decide
from claimwatch.realreport import fpr_at_recall
from claimwatch.risk_fit import AnswerRow, choose, compare, threshold_at_recall
from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.judges.risk import AGGREGATORS, RiskMap, aggregate, risk_map, risk_path
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.scoring import score

probs = st.lists(st.floats(min_value=0.0, max_value=0.99), min_size=1, max_size=8)
VERDICTS = ("SUPPORTED", "UNSUPPORTED", "CONTRADICTED")


@given(probs, st.integers(min_value=2, max_value=10))
def test_length_invariant_aggregators_do_not_grow_when_an_answer_repeats_its_claims(ps, k):
    """max, mean and the length-normalised noisy-OR give an answer k times as long (same claims) the same risk."""
    for name in ("max", "mean", "noisy_or_norm"):
        assert aggregate(name, ps * k) == pytest.approx(aggregate(name, ps), abs=1e-9)
    # noisy-OR compounds: it grows with the number of claims whenever a claim is in doubt
    if any(0.01 < p for p in ps):
        assert (aggregate("noisy_or", ps * k) or 0.0) > (aggregate("noisy_or", ps) or 0.0)


@settings(max_examples=60)
@given(st.floats(min_value=0.5, max_value=1.0), st.integers(min_value=1, max_value=30))
def test_shipped_heuristic_risk_of_all_true_claims_does_not_grow_with_answer_length_as_any_claim_does(conf, n):
    """n SUPPORTED claims (or n claims of one flagged verdict) at one confidence: the heuristic's at-risk call is the
    same for every n, where the any-claim rule flags an answer as soon as one of its claims is flagged."""
    rm = risk_map("heuristic")
    assert rm.fitted and rm.aggregator in ("mean", "noisy_or_norm")
    one = rm.answer_risk([("SUPPORTED", conf)])
    assert rm.answer_risk([("SUPPORTED", conf)] * n) == pytest.approx(one, abs=1e-4)
    # a faithful answer with one false alarm among n true claims: any-claim flags it at every n; the risk falls with n
    mixed = [rm.answer_risk([("UNSUPPORTED", 0.6)] + [("SUPPORTED", conf)] * k) or 0.0 for k in (1, 5, 20)]
    assert mixed[0] >= mixed[1] >= mixed[2]


@pytest.mark.parametrize("judge", ["heuristic", "hybrid", "verifier", "offline"])
def test_fitted_risk_file_loads_and_records_what_it_was_fitted_on(judge):
    """The shipped risk map loads, names its judge, aggregator, threshold, sets, splits (never eval), counts and date."""
    path = risk_path(judge)
    if not path.is_file():
        pytest.skip(f"no fitted risk map for {judge}")
    rm = RiskMap.load(path)
    assert rm.fitted and rm.judge == judge and rm.aggregator in AGGREGATORS and 0.0 < rm.threshold < 1.0
    meta = json.loads(path.read_text(encoding="utf-8"))
    assert meta["claims_fitted_on"]["splits"] == ["train"] and meta["answers_chosen_on"]["split"] == "dev"
    assert all(c["claims"] > 0 for c in meta["claims_fitted_on"]["counts"].values())
    assert meta["fitted_at"] and meta["dev"]["pooled"][rm.aggregator]["auc"] is not None
    assert rm.claim_map is not None and rm.claim_map(0.0) <= rm.claim_map(0.5) <= rm.claim_map(1.0)


@given(st.lists(st.tuples(st.sampled_from(VERDICTS), st.floats(min_value=0.0, max_value=1.0)), min_size=1))
def test_an_unfitted_judge_gets_the_declared_default_which_is_the_any_claim_rule(verdicts):
    """A judge with no risk file is not fitted and its at-risk call is exactly "any claim flagged"."""
    rm = risk_map("no-such-judge")
    assert not rm.fitted and rm.claim_map is None and "not fitted" in rm.meta["note"]
    assert rm.at_risk(rm.answer_risk(verdicts)) == any(v != "SUPPORTED" for v, _ in verdicts)


def test_a_bad_risk_file_is_a_config_error(tmp_path):
    """A risk file with an unknown aggregator or without a threshold is refused with a ConfigError."""
    bad = tmp_path / "x.risk.json"
    bad.write_text(json.dumps({"judge": "x", "aggregator": "median", "threshold": 0.5, "claim_map": None}))
    with pytest.raises(ConfigError):
        RiskMap.load(bad)
    bad.write_text(json.dumps({"judge": "x", "aggregator": "max"}))
    with pytest.raises(ConfigError):
        RiskMap.load(bad)


def _scored(judge: str, verdicts: list[tuple[Verdict, float]], release: str = "v1"):
    claims = [Claim(id=f"c{i}", text=f"claim {i}") for i in range(len(verdicts))]
    cvs = [ClaimVerdict(claim_id=c.id, verdict=v, confidence=conf) for c, (v, conf) in zip(claims, verdicts)]
    return score("t" * 32, judge, claims, cvs, slices={"release": release, "route": "qa"})


def test_results_carry_answer_risk_and_at_risk_and_none_when_nothing_was_judged():
    """An evaluated answer carries its risk and at-risk call; abstained and failed answers carry None."""
    r = _scored("heuristic", [(Verdict.SUPPORTED, 0.9), (Verdict.UNSUPPORTED, 0.95)])
    rm = risk_map("heuristic")
    assert r.answer_risk == rm.answer_risk([("SUPPORTED", 0.9), ("UNSUPPORTED", 0.95)])
    assert r.at_risk == (r.answer_risk >= rm.threshold)
    assert _scored("heuristic", []).answer_risk is None and _scored("heuristic", []).at_risk is None
    failed = _scored("heuristic", [(Verdict.ERROR, 0.0)])
    assert failed.outcome == "failed" and failed.at_risk is None


def test_worker_counts_answers_at_risk_per_slice():
    """claimwatch_answers_at_risk_total counts at-risk answers per slice, at 0 for a slice with none."""
    m = WorkerMetrics()
    m.observe(_scored("test", [(Verdict.SUPPORTED, 0.9), (Verdict.CONTRADICTED, 0.9)], "v1"))
    m.observe(_scored("test", [(Verdict.SUPPORTED, 0.9)], "v1"))
    m.observe(_scored("test", [(Verdict.SUPPORTED, 0.9)], "v2"))
    labels = {"judge_id": "test", "route": "qa", "model": "unknown", "environment": "unknown"}  # no id: the kind
    assert m.registry.get_sample_value("claimwatch_answers_at_risk_total", {"release": "v1", **labels}) == 1
    assert m.registry.get_sample_value("claimwatch_answers_at_risk_total", {"release": "v2", **labels}) == 0


def _record(at_risk: bool | None, unsupported: int, release: str = "v1", i: int = 0) -> dict:
    rec: dict[str, object] = {
        "trace_id": f"{release}-{i}",
        "judge": "heuristic",
        "outcome": "evaluated",
        "slices": {"release": release},
        "counts": {"SUPPORTED": 3, "UNSUPPORTED": unsupported},
    }
    if at_risk is not None:
        rec["at_risk"] = at_risk
    return rec


def test_gate_counts_at_risk_answers_from_records_and_falls_back_to_any_claim_for_old_records():
    """Records with at_risk are flagged by it; records without (older workers) by the any-claim rule, and said so."""
    new = [_record(False, 1, i=0), _record(True, 1, i=1), _record(False, 0, i=2)]
    got = counts_from_results(new, ["v1"])["v1"]
    assert (got.answers, got.flagged, got.flagged_any_claim, got.flag_rule) == (3, 1, 2, "at_risk")
    old = [_record(None, 1, i=0), _record(None, 1, i=1), _record(None, 0, i=2)]
    got = counts_from_results(old, ["v1"])["v1"]
    assert (got.answers, got.flagged, got.flag_rule) == (3, 2, "any_claim")
    assert counts_from_results(new + [_record(None, 1, i=9)], ["v1"])["v1"].flag_rule == "mixed"


def test_gate_compares_both_releases_by_one_rule():
    """A baseline counted by the any-claim rule and a candidate counted at risk are both decided by the any-claim rule."""
    base = ReleaseCounts(answers=200, flagged=100, flagged_any_claim=100, flag_rules=("any_claim",))
    cand = ReleaseCounts(answers=200, flagged=20, flagged_any_claim=150, flag_rules=("at_risk",))
    d = decide(base, cand)
    assert d.candidate.flagged == 150 and d.candidate.flag_rule == "any_claim" and d.action == "rollback"
    assert "flagged = any UNSUPPORTED or CONTRADICTED claim" in d.render()
    both = decide(ReleaseCounts(200, 20, flagged_any_claim=100, flag_rules=("at_risk",)), cand)
    assert both.candidate.flagged == 20 and both.baseline.flagged == 20 and "flagged = at risk" in both.render()


def test_claims_listing_shows_the_answer_risk():
    """`claimwatch claims` lines carry the answer's risk and say AT RISK; JSON carries answer_risk and at_risk."""
    r = _scored("heuristic", [(Verdict.UNSUPPORTED, 0.95), (Verdict.UNSUPPORTED, 0.95)]).model_dump(mode="json")
    (f, _) = flagged_claims(r, ["UNSUPPORTED"])
    assert f.at_risk is True and "AT RISK" in f.to_text() and f.to_json()["answer_risk"] == r["answer_risk"]
    old = {k: v for k, v in r.items() if k not in ("answer_risk", "at_risk")}
    assert "answer risk" not in flagged_claims(old, ["UNSUPPORTED"])[0].to_text()


def test_fit_threshold_is_the_one_the_fp_rate_at_70_recall_is_measured_at_and_choice_prefers_auc():
    """threshold_at_recall flags >= 70% of positives with the FP rate fpr_at_recall reports; choose() picks by AUC."""
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    ys = [True, False, True, True, False, True, False, True, False, False]
    t = threshold_at_recall(scores, ys)
    flagged_pos = sum(1 for s, y in zip(scores, ys) if y and s >= t)
    assert flagged_pos / sum(ys) >= 0.7
    assert sum(1 for s, y in zip(scores, ys) if not y and s >= t) / (len(ys) - sum(ys)) == fpr_at_recall(scores, ys)
    # one hallucinated answer is a long run of near-certain claims, one faithful answer has a single doubtful claim
    rows = [
        AnswerRow("summedits", [("SUPPORTED", 0.9)] * 9 + [("UNSUPPORTED", 0.9)], 500, True),
        AnswerRow("summedits", [("UNSUPPORTED", 0.9)] * 3, 100, True),
        AnswerRow("summedits", [("SUPPORTED", 0.9)] * 2, 80, False),
        AnswerRow("summedits", [("SUPPORTED", 0.6)] * 12, 900, False),
    ]
    table = compare(rows, None)
    assert table["summedits"]["length"]["auc"] == 0.5 and choose(table) in ("mean", "noisy_or_norm")
