"""The issue's path on the demo: 200 claims from the demo's results topic labelled with the real `claimwatch label`
through a pipe, the judge profile fitted from them, and raw beside corrected rates in the report and the gate."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from claimwatch.judge_profile import load_profile
from claimwatch.labeling.sample import plan_path

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


#: one release's line of the correction, as the gate prints it and the report's page shows it
CORRECTED = re.compile(r"raw ([\d.]+)% -> corrected ([\d.]+)% \[([\d.]+)%, ([\d.]+)%\] of \d+ claims")


def _corrected(text: str) -> list[tuple[float, ...]]:
    """(raw, corrected, low, high) of each release in ``text``, checking each interval holds its estimate."""
    shares = [tuple(float(x) for x in m.groups()) for m in CORRECTED.finditer(text)]
    assert len(shares) == 2, text  # baseline and candidate
    assert all(lo <= c <= hi and hi > lo for _, c, lo, hi in shares), shares
    return shares


def test_label_200_claims_from_the_demo_results_topic_and_fit_a_profile(tmp_path, capsys):
    """A new user's path after `claimwatch demo` ended (its broker gone): 200 claims drawn from the results it wrote,
    labelled through the real `claimwatch label` by a scripted labeller (an injected failure the judge flagged is
    CONTRADICTED, anything else SUPPORTED), `claimwatch calibrate --profile-out` fits the profile and says which
    stratum to label next, and `claimwatch report`/`claimwatch gate` on the results show raw and corrected rates
    with intervals, with the same decision."""
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
    assert cli_main(["label", "--results", str(results), "--n", "200", "--out", str(labels), "--plan-only"]) == 0
    items = json.loads(plan_path(labels).read_text())["items"]
    assert len(items) == 200
    keys = "".join("c\n" if it["trace_id"] in faulty and it["judge_verdict"] != "SUPPORTED" else "s\n" for it in items)
    proc = subprocess.run(  # the console entry point's main (pyproject: claimwatch = "claimwatch.cli:main")
        [sys.executable, "-m", "claimwatch.cli", "label", "--out", str(labels)],
        input=keys,
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[200/200]" in proc.stdout and len(labels.read_text().splitlines()) == 200
    assert "next: claimwatch calibrate" in proc.stderr
    profile = tmp_path / "profile.json"
    capsys.readouterr()
    assert cli_main(["calibrate", str(labels), "--profile-out", str(profile)]) == 0
    advice = [line for line in capsys.readouterr().out.splitlines() if line.startswith("label next: stratum ")]
    assert len(advice) == 1 and " labelled): " in advice[0], advice
    data, strata = load_profile(profile)
    assert data["labelled"] == 200 and sum(s.labelled for s in strata) == 200
    assert data["flagged"]["sensitivity"]["estimate"] is not None

    releases = ["--baseline", "v1.4.0", "--candidate", "v1.5.0-rc1", "--profile", str(profile)]
    page = tmp_path / "release.html"
    code = cli_main(["report", "--results", str(results), *releases, "--out", str(page)])
    assert code == 1, capsys.readouterr()  # ROLLBACK: the candidate's injected failures
    assert capsys.readouterr().out.startswith(f"claimwatch report: ROLLBACK -> {page}")
    html = page.read_text()
    assert 'id="corrected"' in html
    on_page = _corrected(unescape(re.sub(r"<[^>]+>", " ", html)))

    assert cli_main(["gate", "--results", str(results), *releases]) == code
    out = capsys.readouterr().out
    assert (
        out.startswith("claimwatch gate: ROLLBACK (exit 1)") and "judge profile profile.json (claims, 200 labels" in out
    )
    assert _corrected(out) == on_page  # the same correction where each decision is made
