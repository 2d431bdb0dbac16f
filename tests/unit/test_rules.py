"""Prometheus rules: promtool validates both rule files and runs the alert unit tests.

Without ``promtool`` on PATH the tests skip locally and fail under CI (env ``CI``
set), so a CI image that lost the Debian ``prometheus`` package is noticed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from dashboards import rules_gen

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "rules"
RULE_FILES = [RULES / "claimwatch-recording.yml", RULES / "claimwatch-alerts.yml"]
TEST_FILES = sorted((RULES / "tests").glob("*.yml"))


def _promtool() -> str:
    binary = shutil.which("promtool")
    if binary is None:
        message = "promtool not on PATH: apt-get install -y prometheus (gives promtool 2.42)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


def _alerts() -> list[dict]:
    doc = yaml.safe_load(RULE_FILES[1].read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_promtool_check_rules_accepts_both_files():
    """`promtool check rules` finds every rule valid (PromQL parses, names legal)."""
    out = subprocess.run([_promtool(), "check", "rules", *map(str, RULE_FILES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_promtool_unit_tests_pass():
    """`promtool test rules` passes for every test file under dashboards/rules/tests/ (the files run at once: promtool
    is single-threaded and the two longest take ~15 s each)."""
    assert TEST_FILES, "no promtool test files"
    promtool = _promtool()

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(len(TEST_FILES)) as pool:
        outs = dict(zip(TEST_FILES, pool.map(run, TEST_FILES)))
    failed = {p.name: o.stdout + o.stderr for p, o in outs.items() if o.returncode != 0}
    assert not failed, failed


def test_every_alert_has_a_firing_and_a_quiet_promtool_case():
    """Each alert appears in an alert_rule_test with expected alerts and in one expecting none."""
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in TEST_FILES:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {rule["alert"] for rule in _alerts()}
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested quiet"


def test_alerts_follow_conventions():
    """CamelCase Claimwatch* names, a severity label, summary/description/runbook_url annotations."""
    runbook = (Path(__file__).resolve().parents[2] / "docs" / "runbook.md").read_text()
    anchors = {m.group(1).lower() for m in re.finditer(r"^## (\w+)", runbook, re.M)}
    for rule in _alerts():
        assert re.fullmatch(r"Claimwatch[A-Z][A-Za-z]+", rule["alert"]), rule["alert"]
        assert rule["labels"]["severity"] in {"page", "warning", "ticket"}
        ann = rule["annotations"]
        assert ann["summary"] and ann["description"]
        assert ann["runbook_url"] == f"docs/runbook.md#{rule['alert'].lower()}"
        assert rule["alert"].lower() in anchors, f"docs/runbook.md has no section for {rule['alert']}"


def test_quality_alerts_require_minimum_volume_and_a_for_duration():
    """The traffic-driven alerts carry a volume floor (>=) and a for: duration against flapping."""
    for rule in _alerts():
        if rule["alert"] in {
            "ClaimwatchContradictedClaimsSpike",
            "ClaimwatchFaithfulnessDrop",
            "ClaimwatchReleaseWorseThanPrevious",
            "ClaimwatchJudgeFailing",
            "ClaimwatchCollectorDropping",
        }:
            assert ">=" in rule["expr"], rule["alert"]
            assert rule.get("for"), rule["alert"]


def test_thresholds_override_changes_the_rendered_alerts():
    """Rendering with overrides puts the new numbers in expr and description; unknown keys fail."""
    text = rules_gen.render({"spike_min_ratio": 0.2, "spike_min_answers": 500})["claimwatch-alerts.yml"]
    doc = yaml.safe_load(text)
    spike = next(r for g in doc["groups"] for r in g["rules"] if r["alert"] == "ClaimwatchContradictedClaimsSpike")
    assert "> 0.2\n" in spike["expr"] and ">= 500" in spike["expr"]
    assert "floor 0.2," in spike["annotations"]["description"]
    with pytest.raises(KeyError):
        rules_gen.merge_thresholds({"spike_min_ratoi": 0.1})


def test_rendered_yaml_round_trips_through_a_yaml_parser():
    """The dependency-free YAML emitter produces what PyYAML reads back as the same structure."""
    t = rules_gen.merge_thresholds(None)
    for name, builder in (
        ("claimwatch-recording.yml", rules_gen.recording_rules),
        ("claimwatch-alerts.yml", rules_gen.alerting_rules),
    ):
        assert yaml.safe_load(rules_gen.render()[name]) == builder(t)


def _argo_promtool_test(tmp_path: Path, series: dict[str, str], cases: list[dict]) -> Path:
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": cases,
            }
        ],
    }
    path = tmp_path / "argo_test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return path


def test_argo_analysis_queries_compute_the_gate_numbers(tmp_path):
    """The AnalysisTemplate's PromQL and the gate's count queries, on one promtool history, give the gate's numbers:
    exact counts for a long-lived and a born-in-window release, the sequential test's log evidence the gate computes,
    and flagged by one rule for both releases (at risk when both have at-risk counts, else the any-claim rule)."""
    from claimwatch.gate.promql import ANSWERS, AT_RISK, CLAIMS, FLAGGED, count_query
    from claimwatch.stats.sequential import difference_variance, log_evidence
    from dashboards import argo_gen

    promtool = _promtool()
    doc = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "deploy" / "argo" / "analysis-template.yaml").read_text()
    )
    assert doc["kind"] == "AnalysisTemplate"
    assert {m["name"] for m in doc["spec"]["metrics"]} == {
        "flagged-answers-significantly-worse",
        "flagged-answers-within-tolerance",
    }
    labels = 'model="m", route="qa", environment="prod"'
    series = {
        # v1 long-lived: 10 evaluated answers a minute, 2 flagged; at 180m the 1h window holds 600 and 120
        f'claimwatch_answers_total{{release="v1", outcome="evaluated", {labels}}}': "0+10x180",
        f'claimwatch_answers_with_unsupported_total{{release="v1", {labels}}}': "0+2x180",
        f'claimwatch_claims_total{{release="v1", verdict="supported", {labels}}}': "0+40x180",
        # v2 born at minute 130 (first scrape already counts 10): the worker counted 500 answers, 200 flagged;
        # increase() says 510 (extrapolated to the window's end), the old gate query 520
        f'claimwatch_answers_total{{release="v2", outcome="evaluated", {labels}}}': "_x130 10+10x49",
        f'claimwatch_answers_with_unsupported_total{{release="v2", {labels}}}': "_x130 4+4x49",
        # v3 thin: 10 answers
        f'claimwatch_answers_total{{release="v3", outcome="evaluated", {labels}}}': "_x170 1+1x9",
        f'claimwatch_answers_with_unsupported_total{{release="v3", {labels}}}': "_x170 1+1x9",
        # v4 restarted at minute 151 under the same labels: counts from the reset on (295), never more than 595
        f'claimwatch_answers_total{{release="v4", outcome="evaluated", {labels}}}': "0+10x150 5+10x29",
        # v6, v7 export the answer risk: 50% any-claim each, 10% and 30% at risk
        f'claimwatch_answers_total{{release="v6", outcome="evaluated", {labels}}}': "0+10x180",
        f'claimwatch_answers_with_unsupported_total{{release="v6", {labels}}}': "0+5x180",
        f'claimwatch_answers_at_risk_total{{release="v6", {labels}}}': "0+1x180",
        f'claimwatch_answers_total{{release="v7", outcome="evaluated", {labels}}}': "0+10x180",
        f'claimwatch_answers_with_unsupported_total{{release="v7", {labels}}}': "0+5x180",
        f'claimwatch_answers_at_risk_total{{release="v7", {labels}}}': "0+3x180",
    }
    args = {
        "environment": "prod",
        "window": "1h",
        "min-answers": "50",
        "alpha": "0.05",
        "tau": "0.1",
        "max-increase": "0.02",
    }
    v1v2 = {**args, "baseline-release": "v1", "candidate-release": "v2"}
    evidence = log_evidence(0.4 - 0.2 - 0.02, difference_variance(200, 500, 120, 600), 0.05, 0.1)
    assert evidence > 0
    at = "180m"

    def case(expr: str, value: float | None, labels_: str = "{}") -> dict:
        return {
            "expr": expr,
            "eval_time": at,
            "exp_samples": [] if value is None else [{"labels": labels_, "value": value}],
        }

    cases = [
        case(count_query(ANSWERS, "v1", "1h"), 600),
        case(count_query(FLAGGED, "v1", "1h"), 120),
        case(count_query(CLAIMS, "v1", "1h", by="verdict"), 2400, '{verdict="supported"}'),
        case(count_query(ANSWERS, "v2", "1h"), 500),
        case(count_query(FLAGGED, "v2", "1h"), 200),
        case(count_query(ANSWERS, "v4", "1h"), 295),
        case(f"round({argo_gen.query('evidence', v1v2)}, 0.0001)", round(evidence, 4)),
        # a rise within the tolerance has no evidence: no sample (the metric succeeds)
        case(argo_gen.query("evidence", {**v1v2, "max-increase": "0.25"}), None),
        case(f"round({argo_gen.query('point', v1v2)}, 0.0001)", 0.2),
        # thin candidate (10 answers < 50): no sample -> inconclusive / not failed
        case(argo_gen.query("evidence", {**v1v2, "candidate-release": "v3"}), None),
        case(argo_gen.query("point", {**v1v2, "candidate-release": "v3"}), None),
        # both releases at risk: 30% - 10% (their any-claim shares are equal)
        case(count_query(AT_RISK, "v7", "1h"), 180),
        case(
            f"round({argo_gen.query('point', {**args, 'baseline-release': 'v6', 'candidate-release': 'v7'})}, 0.0001)",
            0.2,
        ),
        # v1 has no at-risk counts: both by the any-claim rule, 50% - 20% (v7's 30% at risk beside v1's 20% would
        # read 0.1), as the gate's common_rule
        case(
            f"round({argo_gen.query('point', {**args, 'baseline-release': 'v1', 'candidate-release': 'v7'})}, 0.0001)",
            0.3,
        ),
    ]
    path = _argo_promtool_test(tmp_path, series, cases)
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_argo_and_the_gate_decide_alike_on_the_same_counts():
    """Argo's rule (fail when the log evidence at max-increase > 0) is the gate's ROLLBACK on the same counts."""
    from claimwatch.gate import GateConfig, ReleaseCounts, decide
    from claimwatch.stats.sequential import difference_variance, log_evidence
    from dashboards import argo_gen

    tol = float(argo_gen.ARGS["max-increase"] or 0)
    alpha, tau = float(argo_gen.ARGS["alpha"] or 0), float(argo_gen.ARGS["tau"] or 0)
    cases = [(600, 120, 500, 200), (600, 120, 500, 120), (600, 120, 500, 160), (600, 120, 500, 150), (60, 6, 55, 20)]
    seen = set()
    for nb, xb, nc, xc in cases:
        argo_fails = log_evidence(xc / nc - xb / nb - tol, difference_variance(xc, nc, xb, nb), alpha, tau) > 0
        d = decide(
            ReleaseCounts(nb, xb), ReleaseCounts(nc, xc), GateConfig(min_answers=int(argo_gen.ARGS["min-answers"] or 0))
        )
        assert argo_fails == (d.action == "rollback"), (nb, xb, nc, xc)
        seen.add(argo_fails)
    assert seen == {True, False}
