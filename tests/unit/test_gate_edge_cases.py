"""Release gate edge cases: worker restarts and rolling upgrades in the window (PromQL on promtool), counts that
are no counts (NaN, Inf, malformed), nonsense test parameters, and errors that must hold (exit 2), never roll back."""

from __future__ import annotations

import math
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimwatch.gate import Advice, Follow, GateError, ReleaseCounts, Source, TestConfig, decide, fetch_counts, queries
from claimwatch.gate.promql import ANSWERS, AT_RISK, FLAGGED, count_query, gaps_query
from dashboards import argo_gen
from tests.unit import test_gate
from tests.unit.test_rules import _argo_promtool_test, _promtool

fake_prometheus = test_gate.fake_prometheus  # the fixture: a local Prometheus query API
GATE = ["gate", "--baseline", "v1", "--candidate", "v2", "--trust-judge"]


# -- PromQL on a promtool history: restarts and rolling upgrades -----------------------------------------------

LABELS = 'model="m", route="qa", environment="prod", job="cw"'
ARGS = {
    "environment": "prod",
    "window": "1h",
    "min-answers": "50",
    "alpha": "0.05",
    "tau": "0.1",
    "max-increase": "0.02",
}


def _series(release: str, instance: str, answers: str, at_risk: str | None, unsupported: str) -> dict[str, str]:
    labels = f'release="{release}", instance="{instance}", {LABELS}'
    out = {
        f'claimwatch_answers_total{{outcome="evaluated", {labels}}}': answers,
        f"claimwatch_answers_with_unsupported_total{{{labels}}}": unsupported,
    }
    if at_risk is not None:
        out[f"claimwatch_answers_at_risk_total{{{labels}}}"] = at_risk
    return out


HISTORY = {
    # baseline: one worker, 20 answers a minute, 10% flagged by either rule; 1200 and 120 in the hour to 180m
    **_series("base", "w0", "0+20x180", "0+2x180", "0+2x180"),
    # restart at minute 151: answers flat at 1000 (100 at risk) before, then from 20 up to 1180 (88 at risk: 7.5%);
    # the answers counter climbs past its old value, the at-risk counter does not
    **_series("restart", "w1", "1000+0x150 20+40x29", "100+0x150 1+3x29", "100+0x150 1+3x29"),
    # a worker born at minute 100 restarts in a scrape gap (141-159): its answers counter comes back above its old
    # value (475 > 400, no drop), only the at-risk counter shows the reset (160 -> 19); 975 and 39 since the restart
    **_series("gap", "w2", "_x100 0+10x40 _x19 475+25x20", "_x100 0+4x40 _x19 19+1x20", "_x100 0+4x40 _x19 19+1x20"),
    # reset between minute 120 (the window's start at 180m30s) and 121, back above 1200 by the end: 1775 since it
    **_series("edge", "w3", "0+10x120 5+30x59", "0+1x120 0+3x59", "0+1x120 0+3x59"),
    # rolling upgrade: w_old (no answer risk) counted "mixed" until minute 150, w_new (with it) since; 10% flagged
    # by the any-claim rule on both workers, the new worker alone 5% at risk
    **_series("mixed", "w_old", "0+20x150", None, "0+2x150"),
    **_series("mixed", "w_new", "_x150 0+20x30", "_x150 0+1x30", "_x150 0+2x30"),
    # the candidate, born at minute 160 on the new worker: 10% flagged by either rule
    **_series("canary", "w_new", "_x160 0+30x20", "_x160 0+3x20", "_x160 0+3x20"),
    # the answer risk started inside the window on the same worker series: the at-risk counter is younger
    **_series("inplace", "w4", "0+20x180", "_x150 0+1x30", "0+2x180"),
    # counts no worker makes: more flagged answers than answers
    **_series("broken", "w5", "0+1x180", "0+2x180", "0+2x180"),
}


def _case(expr: str, value: float | None, labels: str = "{}", at: str = "180m") -> dict:
    return {"expr": expr, "eval_time": at, "exp_samples": [] if value is None else [{"labels": labels, "value": value}]}


def _point(baseline: str, candidate: str) -> str:
    q = argo_gen.query("point", {**ARGS, "baseline-release": baseline, "candidate-release": candidate})
    return f"round({q}, 0.0001)"


def _run_promtool(tmp_path, cases: list[dict]) -> None:
    path = _argo_promtool_test(tmp_path, HISTORY, cases)
    out = subprocess.run([_promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_a_worker_restart_counts_every_counter_from_the_restart(tmp_path):
    """A restart in the window: answers and at-risk both count from the restart (1180, 88), not answers from the
    window's start beside at-risk from the restart (180 vs 88: 49% flagged); the Argo analysis agrees."""
    _run_promtool(
        tmp_path,
        [
            _case(count_query(ANSWERS, "restart", "1h"), 1180),
            _case(count_query(AT_RISK, "restart", "1h"), 88),
            _case(count_query(FLAGGED, "restart", "1h"), 88),
            _case(_point("base", "restart"), round(88 / 1180 - 0.1, 4)),
            _case(
                argo_gen.query("evidence", {**ARGS, "baseline-release": "base", "candidate-release": "restart"}), None
            ),
        ],
    )


def test_a_reset_seen_in_one_counter_is_a_restart_for_all_of_the_workers_counters(tmp_path):
    """The at-risk counter's reset (its answers counter came back above its old value) makes the answers count from
    the restart too: 975 and 39, not 775 answers beside 39 at risk."""
    _run_promtool(
        tmp_path,
        [_case(count_query(ANSWERS, "gap", "1h"), 975), _case(count_query(AT_RISK, "gap", "1h"), 39)],
    )


def test_a_reset_right_after_the_windows_start_is_seen(tmp_path):
    """A reset between the window's starting value and its first sample (no drop inside the range) counts from it."""
    _run_promtool(
        tmp_path,
        [
            _case(count_query(ANSWERS, "edge", "1h"), 1775, at="180m30s"),
            _case(count_query(AT_RISK, "edge", "1h"), 177, at="180m30s"),
        ],
    )


def test_a_rolling_upgrade_is_flagged_by_the_any_claim_rule(tmp_path):
    """Answers of workers without the answer risk in the window: the at-risk count does not cover them (a gap), and
    both releases are compared by the any-claim rule (10% vs 10%), not 5% at risk of some workers vs 10%."""
    _run_promtool(
        tmp_path,
        [
            _case(count_query(ANSWERS, "mixed", "1h"), 1200),
            _case(count_query(AT_RISK, "mixed", "1h"), 30),
            _case(gaps_query("mixed", "1h"), 1),
            _case(gaps_query("inplace", "1h"), 1),
            _case(gaps_query("canary", "1h"), None),
            _case(gaps_query("base", "1h"), None),
            _case(_point("mixed", "canary"), 0),
            _case(
                argo_gen.query("evidence", {**ARGS, "baseline-release": "mixed", "candidate-release": "canary"}), None
            ),
            # a covered pair is still compared at risk
            _case(_point("base", "canary"), 0),
        ],
    )


def test_the_argo_analysis_has_no_sample_on_more_flagged_than_answers(tmp_path):
    """Inconsistent counts (120 flagged of 60 answers): neither Argo metric returns a sample (the rollout pauses)."""
    _run_promtool(
        tmp_path,
        [
            _case(_point("base", "broken"), None),
            _case(
                argo_gen.query("evidence", {**ARGS, "baseline-release": "base", "candidate-release": "broken"}), None
            ),
        ],
    )


# -- values that are no counts ------------------------------------------------------------------------------


def _sample(value: object) -> list:
    return [{"metric": {}, "value": [1700000000.0, value]}]


_ABSENT = object()


def _serve(handler, release: str, answers: object, flagged: object, at_risk: object = _ABSENT) -> None:
    q = queries(release, "1h")
    handler.answers[q["answers"]] = _sample(answers)
    handler.answers[q["flagged"]] = _sample(flagged)
    if at_risk is not _ABSENT:
        handler.answers[q["at_risk"]] = _sample(at_risk)


@pytest.mark.parametrize("bad", ["NaN", "+Inf", "-Inf", "-3", "abc", "", None, True])
def test_a_count_that_is_no_finite_count_is_a_gate_error(fake_prometheus, bad):
    """NaN, +/-Inf, a negative, non-numeric or missing value is a GateError naming it, never 0 or a crash."""
    url, handler = fake_prometheus
    _serve(handler, "v2", "200", "20", at_risk=bad)
    with pytest.raises(GateError, match="not a finite count"):
        fetch_counts(Source(url), "v2")


def test_a_sample_without_a_value_is_a_gate_error(fake_prometheus):
    """A sample with no value pair at all (or a result that is not a list of samples) is a GateError."""
    url, handler = fake_prometheus
    handler.answers[queries("v2", "1h")["answers"]] = [{"metric": {}}]
    with pytest.raises(GateError, match="malformed vector"):
        fetch_counts(Source(url), "v2")


@pytest.mark.parametrize("bad", ["NaN", "+Inf"])
def test_cli_gate_holds_on_a_nan_or_inf_count(fake_prometheus, capsys, bad):
    """`claimwatch gate` on a NaN or +Inf at-risk count exits 2 (HOLD), not 0 (NaN read as 0) or 1 (a crash)."""
    from claimwatch.cli import main

    url, handler = fake_prometheus
    _serve(handler, "v1", "200", "20", at_risk="20")
    _serve(handler, "v2", "200", "20", at_risk=bad)
    assert main(["gate", "--prometheus", url, "--baseline", "v1", "--candidate", "v2", "--trust-judge"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("claimwatch gate: HOLD (exit 2)") and f"returned {bad!r}" in out


def test_fetch_counts_uses_the_any_claim_rule_where_the_at_risk_counter_leaves_gaps(fake_prometheus):
    """At-risk series that do not cover every evaluated-answer series: flag rule "mixed", flagged = the any-claim
    count; the decision compares both releases by the any-claim rule and says why."""
    url, handler = fake_prometheus
    _serve(handler, "v1", "1200", "120", at_risk="30")
    handler.answers[queries("v1", "1h")["at_risk_gaps"]] = _sample("1")
    _serve(handler, "v2", "600", "60", at_risk="60")
    base, cand = fetch_counts(Source(url), "v1"), fetch_counts(Source(url), "v2")
    assert (base.flag_rule, base.flagged, cand.flag_rule, cand.flagged) == ("mixed", 120, "at_risk", 60)
    d = decide(base, cand)
    assert d.action == "promote" and d.comparison.difference == 0
    assert "part of the baseline's answers were counted without the answer risk" in d.render()


# -- parameters and errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-increase", "nan"],
        ["--max-increase", "inf"],
        ["--tau", "nan"],
        ["--alpha", "nan"],
        ["--sampling-ratio", "inf"],
        ["--target", "0s"],
        ["--every", "0s"],
        ["--window", "0s"],
        ["--target", "soon"],
    ],
)
def test_cli_gate_rejects_nonsense_parameters_at_parsing(flags, capsys):
    """NaN/Inf test parameters and zero durations are usage errors (exit 2) before any look at Prometheus."""
    from claimwatch.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["gate", "--prometheus", "http://127.0.0.1:1", *GATE[1:], *flags])
    assert exc.value.code == 2
    assert flags[0] in capsys.readouterr().err


def test_test_config_and_advice_reject_non_finite_values():
    """A NaN tolerance or tau, an infinite tolerance, a zero target or look interval are ValueErrors."""
    for bad in ({"max_increase": math.nan}, {"max_increase": math.inf}, {"max_increase": 1.0}, {"tau": math.nan}):
        with pytest.raises(ValueError):
            TestConfig(**bad)
    for advice in ({"target_s": 0.0}, {"target_s": -1.0}, {"target_s": math.nan}, {"sampling_ratio": math.inf}):
        with pytest.raises(ValueError):
            Advice(**advice)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Follow(every_s=0)


def test_a_nan_tolerance_no_longer_promotes_a_45_point_rise(fake_prometheus, capsys):
    """`--max-increase nan` on a +45-point rise exits 2 (usage), where it used to promote (exit 0)."""
    from claimwatch.cli import main

    url, handler = fake_prometheus
    _serve(handler, "v1", "200", "20")
    _serve(handler, "v2", "200", "110")
    with pytest.raises(SystemExit) as exc:
        main(["gate", "--prometheus", url, *GATE[1:], "--max-increase", "nan"])
    assert exc.value.code == 2
    assert main(["gate", "--prometheus", url, *GATE[1:]]) == 1  # the same counts, a real tolerance: rollback


def test_an_unexpected_error_in_gate_or_report_holds(monkeypatch, tmp_path, capsys):
    """Any crash inside `gate` or `report` exits 2 (HOLD) with one error line, never 1 (= rollback)."""
    import claimwatch.gate
    import claimwatch.report
    from claimwatch.cli import main

    def boom(*args, **kwargs):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(claimwatch.gate, "run_gate", boom)
    assert main(["gate", "--prometheus", "http://127.0.0.1:1", *GATE[1:]]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("claimwatch gate: HOLD (exit 2)") and "ZeroDivisionError" in err
    monkeypatch.setattr(claimwatch.report, "build_report", boom)
    results = tmp_path / "r.jsonl"
    results.write_text("")
    argv = [
        "report",
        "--results",
        str(results),
        "--baseline",
        "v1",
        "--candidate",
        "v2",
        "--out",
        str(tmp_path / "r.html"),
    ]
    assert main(argv) == 2
    assert capsys.readouterr().out.startswith("claimwatch report: HOLD (exit 2)")
    # --debug shows the traceback and still holds
    assert main(["--debug", *argv]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_a_release_without_answers_has_no_computable_power():
    """0 evaluated answers: the smallest detectable rise is not computable (was printed as over +100 points)."""
    d = decide(ReleaseCounts(500, 50), ReleaseCounts(0, 0))
    assert math.isinf(d.power.min_detectable)
    text = d.render()
    assert "power: not computable: a release has no evaluated answers" in text and "pts or more" not in text
    tiny = decide(ReleaseCounts(2, 1), ReleaseCounts(1, 0))
    assert "no rise, even to every answer flagged, is caught" in tiny.render()


@settings(max_examples=300, deadline=None)
@given(
    st.integers(50, 400),
    st.integers(50, 400),
    st.floats(0.0, 0.6),
    st.floats(0.0, 0.6),
    st.sampled_from(["sequential", "fixed"]),
)
def test_a_hold_never_says_zero_more_answers_and_its_advice_settles_it(nc, nb, pc, pb, method):
    """On a HOLD, "N more answers would settle it" names N >= 1, and the gate's own test at those counts (shares
    kept) does roll back; the bounds stay within +-100 points."""
    from claimwatch.gate import ReleaseCounts, decide
    from claimwatch.gate.decision import GateConfig
    from claimwatch.stats.answer_share import TestConfig, compare_shares

    xc, xb = round(pc * nc), round(pb * nb)
    cfg = GateConfig(test=TestConfig(method=method))
    d = decide(ReleaseCounts(answers=nb, flagged=xb), ReleaseCounts(answers=nc, flagged=xc), cfg)
    assert -1.0 <= d.comparison.lower <= d.comparison.upper <= 1.0
    if d.action != "hold" or d.power.more_candidate is None:
        return
    more_c, more_b = d.power.more_candidate, d.power.more_baseline
    assert more_c >= 1 and more_b is not None and more_b >= 1
    assert not any("about 0 more" in r for r in d.reasons)
    k = (nc + more_c) / nc
    assert compare_shares(xc * k, nc * k, xb * k, nb * k, cfg.test).rolls_back
