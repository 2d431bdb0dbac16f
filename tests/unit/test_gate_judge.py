"""The judge behind the counts: claimwatch_judge_info, the fitness table, and the HOLD the gate and the report make of an unfit judge's rollback."""

from __future__ import annotations

import pytest

from claimwatch.gate import HOLD, PROMOTE, ROLLBACK, Counts, ReleaseCounts, Source, follow, judge_fitness, run_gate
from claimwatch.gate.judge_fitness import FIT, JUDGE_FITNESS, UNFIT, UNKNOWN, UNMEASURED, Fitness, fitness
from claimwatch.gate.promql import judge_query
from evaluator_worker.judges.identity import JudgeIdentity
from evaluator_worker.judges.registry import JUDGES
from evaluator_worker.metrics import WorkerMetrics

CLEAR_REGRESSION = {"v1": (60, 600), "v2": (240, 600)}  # 10% -> 40% of answers flagged
EQUAL = {"v1": (60, 600), "v2": (60, 600)}


def _fetch(shares: dict[str, tuple[int, int]], judges: tuple[str, ...] = ("heuristic",)):
    """The gate's fake fetch (as in test_gate_profile.py), with the judges Prometheus would report."""

    def fetch(source: Source, release: str, window: str) -> ReleaseCounts:
        flagged, answers = shares[release]
        return ReleaseCounts(
            answers=answers,
            flagged=flagged,
            claims=Counts(supported=2 * answers - flagged, unsupported=flagged),
            judges=judges,
        )

    return fetch


def test_every_shipped_judge_is_in_the_table_and_none_is_fit_without_a_profile():
    """Each registry judge has an entry; offline judges are unfit with measured AUCs, LLM judges unmeasured."""
    assert set(JUDGES) <= set(JUDGE_FITNESS)
    for name in ("heuristic", "hybrid", "verifier", "offline"):
        f = JUDGE_FITNESS[name]
        assert f.status == UNFIT and not f.fit_for_rollback and "answer AUC" in f.reason and "length" in f.reason
    for name in ("anthropic", "openai", "bespoke-minicheck", "nli", "cascade", "anthropic-batch"):
        f = JUDGE_FITNESS[name]
        assert f.status == UNMEASURED and not f.fit_for_rollback and "profile" in f.reason
    assert fitness("mypkg.judges:make").status == UNKNOWN and not fitness("mypkg.judges:make").fit_for_rollback
    assert fitness(None).status == UNKNOWN


def test_an_unfit_judge_turns_a_rollback_into_hold_with_the_reason():
    """Heuristic counts, clear regression, no profile: HOLD (exit 2), one line naming the judge and its numbers."""
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION))
    first = text.splitlines()[0]
    assert code == 2 and first == "claimwatch gate: HOLD (exit 2)"
    assert "- the rollback is held: judge heuristic is not fit for a rollback decision" in text
    judge_lines = [line for line in text.splitlines() if line.strip().startswith("judge ")]
    assert len(judge_lines) == 1
    assert "judge heuristic: not fit for a rollback decision" in judge_lines[0]
    assert "answer AUC 0.55-0.74 vs answer length 0.52-0.58" in judge_lines[0]


def test_trust_judge_keeps_the_rollback_and_still_names_the_judge():
    """--trust-judge: the same counts are ROLLBACK (exit 1); the judge line says it was trusted."""
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION), trust_judge=True)
    assert code == 1 and text.startswith("claimwatch gate: ROLLBACK (exit 1)")
    assert "judge heuristic: not fit for a rollback decision (trusted: --trust-judge)" in text
    assert "is held" not in text


def test_an_unknown_or_unmeasured_judge_holds_and_a_promote_only_gets_the_line():
    """No judge_info (unknown) and an LLM judge (unmeasured) hold a rollback; a PROMOTE stays one, with the line."""
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION, judges=()))
    assert code == 2 and "judge ?: not fit" in text and "no judge name behind these counts" in text
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION, judges=("anthropic",)))
    assert code == 2 and "judge anthropic: not fit" in text and "not measured on real answers here" in text
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(EQUAL))
    assert code == 0 and PROMOTE.upper() in text.splitlines()[0] and "judge heuristic: not fit" in text


def test_every_judge_behind_either_release_is_checked(monkeypatch):
    """A fit judge on the candidate and an unfit one on the baseline still holds; all fit: ROLLBACK, no line."""
    monkeypatch.setitem(JUDGE_FITNESS, "measured-llm", Fitness("measured-llm", FIT, "measured"))

    def fetch(source: Source, release: str, window: str) -> ReleaseCounts:
        judge = "heuristic" if release == "v1" else "measured-llm"
        return _fetch(CLEAR_REGRESSION, judges=(judge,))(source, release, window)

    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=fetch)
    assert code == 2 and "judge heuristic: not fit" in text and "measured-llm" not in text
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION, judges=("measured-llm",)))
    assert code == 1 and "judge " not in text


def test_follow_passes_trust_judge_to_every_look():
    """--follow without --trust-judge holds every look on heuristic counts; with it the first look rolls back."""
    out: list[str] = []
    now = [0.0]
    kwargs = dict(
        fetch=_fetch(CLEAR_REGRESSION),
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        emit=out.append,
    )
    assert follow(Source("http://unused"), "v1", "v2", **kwargs) == 2  # type: ignore[arg-type]
    assert len(out) > 1 and all(o.splitlines()[1].startswith("claimwatch gate: HOLD") for o in out)
    out.clear()
    assert follow(Source("http://unused"), "v1", "v2", trust_judge=True, **kwargs) == 1  # type: ignore[arg-type]
    assert len(out) == 1


def test_cli_gate_registers_trust_judge(monkeypatch, capsys):
    """`claimwatch gate --trust-judge` reaches run_gate; without it the flag is off."""
    from claimwatch import cli

    seen: list[bool] = []

    def fake_run_gate(*args, trust_judge=False, **kwargs):
        seen.append(trust_judge)
        return 2, "claimwatch gate: HOLD (exit 2)"

    monkeypatch.setattr("claimwatch.gate.run_gate", fake_run_gate)
    base = ["gate", "--prometheus", "http://unused", "--baseline", "v1", "--candidate", "v2"]
    assert cli.main(base) == 2 and cli.main([*base, "--trust-judge"]) == 2
    assert seen == [False, True]


def test_judge_query_joins_judge_info_to_the_releases_workers():
    """The judges of a release: claimwatch_judge_info of the instances that exported its evaluated answers."""
    q = judge_query("v2", "1h", extra='environment="prod"')
    assert q.startswith("group by (judge) (last_over_time(claimwatch_judge_info[1h])")
    assert 'and on (instance, job) last_over_time(claimwatch_answers_total{release="v2", environment="prod", ' in q


def test_worker_metrics_export_the_judge_identity():
    """set_judge (called when the worker starts) exports claimwatch_judge_info{judge, judge_id, model, role} 1."""
    m = WorkerMetrics()
    identity = JudgeIdentity("anthropic", ("claude-a", "claude-b"), "0123abcd")
    m.set_judge(identity)
    labels = {"judge": "anthropic", "judge_id": "anthropic:claude-a+claude-b@0123abcd", "model": "claude-a"}
    assert m.registry.get_sample_value("claimwatch_judge_info", {**labels, "role": "main"}) == 1


def _results(release: str, answers: int, flagged: int, judge: str | None) -> list[dict]:
    return [
        {
            "trace_id": f"{release}-{i}",
            **({"judge": judge} if judge else {}),
            "outcome": "evaluated",
            "slices": {"release": release, "route": "faq"},
            "claims": [{"id": "c1", "text": "x", "verdict": "UNSUPPORTED" if i < flagged else "SUPPORTED"}],
        }
        for i in range(answers)
    ]


def test_the_report_shows_the_judge_line_and_holds_the_rollback():
    """claimwatch report: the records' judge (hybrid) is named on the page, the rollback held unless trust_judge."""
    pytest.importorskip("vl_convert")
    from claimwatch.report import build_report, render_html

    results = _results("v1", 200, 20, "hybrid") + _results("v2", 200, 80, "hybrid")
    held = build_report(results, "v1", "v2")
    assert held.decision.action == HOLD and any("judge hybrid is not fit" in r for r in held.decision.reasons)
    assert held.judge_lines and held.judge_lines[0].startswith("judge hybrid: not fit for a rollback decision")
    page = render_html(held)
    assert 'id="judge"' in page and "judge hybrid: not fit for a rollback decision" in page
    trusted = build_report(results, "v1", "v2", trust_judge=True)
    assert trusted.decision.action == ROLLBACK and "(trusted: --trust-judge)" in trusted.judge_lines[0]


def test_the_report_counts_judges_from_records_and_says_when_none_is_named():
    """Records without a judge field leave the judge unknown (held); the judges of both releases are collected."""
    from claimwatch.report import build_report

    unnamed = build_report(_results("v1", 200, 20, None) + _results("v2", 200, 80, None), "v1", "v2")
    assert unnamed.decision.action == HOLD and unnamed.judge_lines[0].startswith("judge ?: not fit")
    mixed = build_report(_results("v1", 200, 20, "heuristic") + _results("v2", 200, 80, "openai"), "v1", "v2")
    assert judge_fitness.judges_of(mixed.decision) == ("heuristic", "openai") and len(mixed.judge_lines) == 2
