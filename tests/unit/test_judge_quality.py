"""Quality floors for the offline heuristic judge, measured with the calibration harness.

The floors sit slightly below the numbers measured when the judge was last tuned (see
docs/judge-quality.md), so a change that makes the judge worse fails CI. Tuning happens on the dev
set only; the held-out check asserts aggregate numbers only (never per-item disagreements).
"""

from __future__ import annotations

import pytest

from claimwatch import calibration as cal
from evaluator_worker.judges.heuristic import HeuristicJudge


def _report(split: str) -> cal.ClaimReport:
    return cal.calibrate_claims(HeuristicJudge(), cal.load_labeled_claims(cal.data_path(split)))


def test_dev_set_floors():
    """On claims_dev.jsonl the heuristic keeps accuracy >= 0.80, TPR >= 0.70 and TNR >= 0.92."""
    r = _report("dev")
    assert r.n == 222 and r.errors == 0
    assert r.accuracy >= 0.80, r.to_text()
    assert r.tpr_supported >= 0.70, r.to_text()
    assert r.tnr_not_supported >= 0.92, r.to_text()


def test_dev_set_explicit_kinds_stay_caught():
    """The kinds string matching can see stay near perfect on dev (verbatim, implicit knowledge, dates)."""
    kinds = _report("dev").breakdown["kind"]
    assert kinds["verbatim_supported"]["accuracy"] >= 0.95
    assert kinds["implicit_knowledge_insertion"]["accuracy"] >= 0.95
    assert kinds["date_swap"]["accuracy"] >= 0.85
    assert kinds["numeric_specificity_loss"]["accuracy"] >= 0.85


def test_heldout_set_floors():
    """On claims_heldout.jsonl (aggregate only) the heuristic keeps accuracy, TPR and TNR above their floors."""
    r = _report("heldout")
    assert r.n == 148 and r.errors == 0
    assert r.accuracy >= HELDOUT_FLOORS["accuracy"]
    assert r.tpr_supported >= HELDOUT_FLOORS["tpr"]
    assert r.tnr_not_supported >= HELDOUT_FLOORS["tnr"]


#: set once from the final held-out run of this judge version (aggregate numbers only)
HELDOUT_FLOORS = {"accuracy": 0.58, "tpr": 0.43, "tnr": 0.84}  # measured 0.608 / 0.452 / 0.872


def test_shipped_calibration_keeps_dev_ece_low_and_the_ranking():
    """The heuristic through its shipped confidence map: dev ECE <= 0.02 (raw 0.090) and the same errors caught
    when escalating 30% (a monotone map must not re-rank)."""
    from claimwatch.confidence import errors_caught
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.judges.settings import JudgeSettings

    items = cal.load_labeled_claims(cal.data_path("dev"))
    calibrated = cal.calibrate_claims(get_judge("heuristic"), items).to_json()["confidence"]
    raw = cal.calibrate_claims(get_judge("heuristic", JudgeSettings(confidence_calibration="none")), items)
    assert calibrated["ece"] <= 0.02 < raw.to_json()["confidence"]["ece"]
    assert calibrated["errors_caught_at_escalated"]["30%"] == pytest.approx(errors_caught(raw.scored, 0.3), abs=1e-3)


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_trained_verifier_and_offline_dev_floors():
    """The shipped verifier (v2) keeps its real-data dev accuracy (Factcheck-GPT dev claims, verdict accuracy with no
    question given, as calibrate_claims verifies: 0.612 measured), and
    both judges keep their measured project-dev numbers (v2: 0.459 verifier, 0.550 offline; v1 was 0.541 / 0.608
    on these hand-written claims and worse on the real sets, docs/judge-quality.md)."""
    pytest.importorskip("torch")
    from claimwatch import realdata
    from evaluator_worker.judges.registry import get_judge

    items = cal.load_labeled_claims(cal.data_path("dev"))
    for name, floor in (("verifier", 0.44), ("offline", 0.53)):
        r = cal.calibrate_claims(get_judge(name), items)
        assert r.errors == 0 and r.accuracy >= floor, (name, r.accuracy)
    try:
        real = realdata.load_real("factcheck-gpt", "dev").claims
    except realdata.RealDataMissing:
        pytest.skip("data/real not present")
    r = cal.calibrate_claims(get_judge("verifier"), real)
    assert r.errors == 0 and r.accuracy >= 0.59, r.accuracy
