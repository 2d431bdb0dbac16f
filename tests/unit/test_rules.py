"""Prometheus rules: promtool validates both rule files and runs the alert unit tests.

Without ``promtool`` on PATH the tests skip locally and fail under CI (env ``CI``
set), so a CI image that lost the Debian ``prometheus`` package is noticed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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


def test_promtool_unit_tests_pass():
    """`promtool test rules` passes for every test file under dashboards/rules/tests/."""
    assert TEST_FILES, "no promtool test files"
    out = subprocess.run(
        [_promtool(), "test", "rules", *map(str, TEST_FILES)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr


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
        if rule["alert"] in {"ClaimwatchContradictedClaimsSpike", "ClaimwatchFaithfulnessDrop",
                             "ClaimwatchReleaseWorseThanPrevious", "ClaimwatchJudgeFailing",
                             "ClaimwatchCollectorDropping"}:
            assert ">=" in rule["expr"], rule["alert"]
            assert rule.get("for"), rule["alert"]


def test_thresholds_override_changes_the_rendered_alerts():
    """Rendering with overrides puts the new numbers in expr and description; unknown keys fail."""
    text = rules_gen.render({"spike_min_ratio": 0.1, "spike_min_claims": 500})["claimwatch-alerts.yml"]
    doc = yaml.safe_load(text)
    spike = next(r for g in doc["groups"] for r in g["rules"] if r["alert"] == "ClaimwatchContradictedClaimsSpike")
    assert "> 0.1\n" in spike["expr"] and ">= 500" in spike["expr"]
    assert "floor 0.1," in spike["annotations"]["description"]
    with pytest.raises(KeyError):
        rules_gen.merge_thresholds({"spike_min_ratoi": 0.1})


def test_rendered_yaml_round_trips_through_a_yaml_parser():
    """The dependency-free YAML emitter produces what PyYAML reads back as the same structure."""
    t = rules_gen.merge_thresholds(None)
    for name, builder in (("claimwatch-recording.yml", rules_gen.recording_rules),
                          ("claimwatch-alerts.yml", rules_gen.alerting_rules)):
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
    """The AnalysisTemplate's PromQL, args filled in, returns the hand-computed Wald bound and point increase."""
    from dashboards import argo_gen

    promtool = _promtool()
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "deploy" / "argo" / "analysis-template.yaml").read_text())
    assert doc["kind"] == "AnalysisTemplate"
    assert {m["name"] for m in doc["spec"]["metrics"]} == {
        f"{v}-{k}" for v in ("contradicted", "unsupported") for k in ("significantly-worse", "within-tolerance")
    }
    labels = 'model="m", route="qa", environment="prod"'
    series = {  # per minute: v1 100 judged (1% contradicted), v2 10 judged (10%); v3 2 judged (thin)
        f'claimwatch_claims_total{{release="v1", verdict="supported", {labels}}}': "0+99x120",
        f'claimwatch_claims_total{{release="v1", verdict="contradicted", {labels}}}': "0+1x120",
        f'claimwatch_claims_total{{release="v2", verdict="supported", {labels}}}': "0+9x120",
        f'claimwatch_claims_total{{release="v2", verdict="contradicted", {labels}}}': "0+1x120",
        f'claimwatch_claims_total{{release="v3", verdict="supported", {labels}}}': "0+1x120",
        f'claimwatch_claims_total{{release="v3", verdict="contradicted", {labels}}}': "0+1x120",
    }
    args = {"environment": "prod", "window": "1h", "min-claims": "200", "z": "1.645"}
    # hand-computed over 1h: pc = 60/600 = 0.1, pb = 60/6000 = 0.01
    # se = sqrt(0.1*0.9/600 + 0.01*0.99/6000) = sqrt(1.5e-4 + 1.65e-6) = 0.012315
    lower = 0.09 - 1.645 * (0.1 * 0.9 / 600 + 0.01 * 0.99 / 6000) ** 0.5  # 0.069742
    cases = [
        {
            "expr": f"round({argo_gen.query('contradicted', 'lower', {**args, 'baseline-release': 'v1', 'candidate-release': 'v2'})}, 0.0001)",
            "eval_time": "120m",
            "exp_samples": [{"labels": "{}", "value": round(lower, 4)}],
        },
        {
            "expr": f"round({argo_gen.query('contradicted', 'point', {**args, 'baseline-release': 'v1', 'candidate-release': 'v2'})}, 0.0001)",
            "eval_time": "120m",
            "exp_samples": [{"labels": "{}", "value": 0.09}],
        },
        {  # unsupported: neither release has such claims -> increase 0
            "expr": argo_gen.query("unsupported", "point", {**args, "baseline-release": "v1", "candidate-release": "v2"}),
            "eval_time": "120m",
            "exp_samples": [{"labels": "{}", "value": 0}],
        },
        {  # thin candidate (120 judged claims < 200): no sample -> inconclusive / not failed
            "expr": argo_gen.query("contradicted", "lower", {**args, "baseline-release": "v1", "candidate-release": "v3"}),
            "eval_time": "120m",
            "exp_samples": [],
        },
    ]
    path = _argo_promtool_test(tmp_path, series, cases)
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
