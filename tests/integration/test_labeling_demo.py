"""The issue's path on the demo: 200 claims from the demo's results topic labelled with the real `claimwatch label`
through a pipe, then the judge profile fitted from them."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from claimwatch.judge_profile import load_profile
from claimwatch.labeling import main as label_main
from claimwatch.labeling.sample import plan_path

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_label_200_claims_from_the_demo_results_topic_and_fit_a_profile(tmp_path):
    """A new user's path after `claimwatch demo` ended (its broker gone): 200 claims drawn from the results it wrote,
    labelled through the real `claimwatch label` by a scripted labeller (an injected failure the judge flagged is
    CONTRADICTED, anything else SUPPORTED), `claimwatch calibrate --profile-out` fits the profile, and
    `claimwatch report --results --profile` shows raw and corrected rates."""
    from claimwatch.cli import main as cli_main
    from claimwatch.demo.runner import run_demo

    labels, results = tmp_path / "labels.jsonl", tmp_path / "demo-results.jsonl"
    faulty: set[str] = set()
    args = argparse.Namespace(
        judge=None,
        requests=80,
        fault_rate=0.3,
        no_prometheus=True,
        workers=1,
        seed=7,
        gate_min_answers=50,
        summary_json=None,
        report="",
        results_out=str(results),
    )
    assert run_demo(args, on_finished=lambda env: faulty.update(s.trace_id for s in env.sent if s.fault)) == 0
    assert len(results.read_text().splitlines()) == 160  # every judged answer of both releases
    assert label_main(["--results", str(results), "--n", "200", "--out", str(labels), "--plan-only"]) == 0
    items = json.loads(plan_path(labels).read_text())["items"]
    assert len(items) == 200
    keys = "".join("c\n" if it["trace_id"] in faulty and it["judge_verdict"] != "SUPPORTED" else "s\n" for it in items)
    proc = subprocess.run(
        [sys.executable, "-m", "claimwatch.labeling", "--out", str(labels)],
        input=keys,
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[200/200]" in proc.stdout and len(labels.read_text().splitlines()) == 200
    profile = tmp_path / "profile.json"
    assert cli_main(["calibrate", str(labels), "--profile-out", str(profile)]) == 0
    data, strata = load_profile(profile)
    assert data["labelled"] == 200 and sum(s.labelled for s in strata) == 200
    assert data["flagged"]["sensitivity"]["estimate"] is not None
    page = tmp_path / "release.html"
    cli_main(
        [
            "report",
            "--results",
            str(results),
            "--baseline",
            "v1.4.0",
            "--candidate",
            "v1.5.0-rc1",
            "--profile",
            str(profile),
            "--out",
            str(page),
        ]
    )
    html = page.read_text()
    assert 'id="corrected"' in html and "-&gt; corrected" in html
