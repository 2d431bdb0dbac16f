"""Like with like: the gate compares two releases on the counts of one judge, and holds when they share none."""

from __future__ import annotations

import json

from claimwatch.gate import HOLD, PROMOTE, ROLLBACK, counts_from_results, decide
from claimwatch.gate.same_judge import match_judges

LENIENT, STRICT = "anthropic:claude-a@11111111", "anthropic:claude-b@22222222"


def _records(release: str, answers: int, flagged: int, judge_id: str, start: int = 0) -> list[dict]:
    return [
        {
            "trace_id": f"{release}-{judge_id}-{start + i}",
            "judge": "anthropic",
            "judge_id": judge_id,
            "outcome": "evaluated",
            "at_risk": i < flagged,
            "slices": {"release": release},
            "counts": {"SUPPORTED": 1, "UNSUPPORTED": int(i < flagged)},
        }
        for i in range(answers)
    ]


def _counts(records: list[dict]):
    return counts_from_results(records, ["v1", "v2"])


def test_one_judge_on_both_sides_is_compared_as_it_is():
    """Counts of one judge: nothing restricted, no note."""
    c = _counts(_records("v1", 300, 30, LENIENT) + _records("v2", 300, 33, LENIENT))
    match = match_judges(c["v1"], c["v2"])
    assert match.judge is None and match.hold is None and not match.notes
    assert c["v1"].by_judge == {LENIENT: c["v1"]}


def test_no_judge_in_common_holds_naming_both_instead_of_a_false_rollback():
    """Baseline judged by the lenient judge, candidate (after the switch) by the strict one: HOLD naming both ids
    and what to do, where the pooled counts roll back a release that did not change."""
    c = _counts(_records("v1", 400, 40, LENIENT) + _records("v2", 400, 160, STRICT))
    pooled_v1 = c["v1"].__class__(**{k: getattr(c["v1"], k) for k in ("answers", "flagged", "contradicted")})
    pooled_v2 = c["v2"].__class__(**{k: getattr(c["v2"], k) for k in ("answers", "flagged", "contradicted")})
    assert decide(pooled_v1, pooled_v2).action == ROLLBACK  # what counts without judge ids would do
    d = decide(c["v1"], c["v2"])
    assert d.action == HOLD
    reason = d.reasons[0]
    assert LENIENT in reason and STRICT in reason and "different judges" in reason
    assert "claimwatch audit" in reason and "gate --results" in reason
    assert d.power.more_candidate is None  # no number of answers of these judges settles it
    assert "0 more" not in d.render()


def test_a_judge_in_common_is_decided_on_its_counts_only():
    """After a switch both releases have answers of the new judge: the decision uses those, and says what it left
    out; the same release judged by both judges is not a rise."""
    records = (
        _records("v1", 1000, 50, LENIENT)
        + _records("v1", 300, 120, STRICT, start=5000)
        + _records("v2", 300, 120, STRICT)
    )
    c = _counts(records)
    d = decide(c["v1"], c["v2"])
    assert d.action == PROMOTE
    assert d.baseline.answers == 300 and d.candidate.answers == 300
    assert d.baseline.judges == (STRICT,) and d.candidate.judges == (STRICT,)
    note = next(r for r in d.reasons if r.startswith("judges differ"))
    assert f"decided on judge {STRICT}'s counts only" in note and "1000 baseline and 0 candidate answers" in note


def test_a_real_rise_under_the_common_judge_still_rolls_back():
    """Like with like does not hide a worse candidate: judged by the same new judge, a rise rolls back."""
    records = (
        _records("v1", 1000, 50, LENIENT)
        + _records("v1", 800, 80, STRICT, start=5000)
        + _records("v2", 800, 320, STRICT)
    )
    c = _counts(records)
    d = decide(c["v1"], c["v2"])
    assert d.action == ROLLBACK and d.candidate.judges == (STRICT,)


def test_records_from_before_judge_ids_are_keyed_by_their_judge_name():
    """A record without judge_id counts under its judge's name (and 'unknown' without one), never dropped."""
    old = [{k: v for k, v in r.items() if k != "judge_id"} for r in _records("v1", 60, 6, LENIENT)]
    c = counts_from_results(old + _records("v2", 60, 6, LENIENT), ["v1", "v2"])
    assert set(c["v1"].by_judge) == {"anthropic"} and c["v1"].answers == 60
    nameless = [{k: v for k, v in r.items() if k not in ("judge", "judge_id")} for r in old]
    assert set(counts_from_results(nameless, ["v1"])["v1"].by_judge) == {"unknown"}


def test_gate_on_a_results_file_holds_on_a_judge_switch(tmp_path, capsys):
    """claimwatch gate --results: the same like-with-like decision, both judge ids printed."""
    from claimwatch.cli import main

    path = tmp_path / "results.jsonl"
    rows = _records("v1", 400, 40, LENIENT) + _records("v2", 400, 160, STRICT)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["gate", "--results", str(path), "--baseline", "v1", "--candidate", "v2"])
    out = capsys.readouterr().out
    assert code == 2 and "HOLD" in out and LENIENT in out and STRICT in out
