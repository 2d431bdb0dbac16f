"""`claimwatch demo` end to end: its own broker, worker, Prometheus, two releases, summary JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_demo_rolls_back_the_faulty_candidate_and_reports_accuracy(tmp_path):
    """A short demo exits 0; the summary holds per-release counts, a rollback decision, recall and FP rate."""
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "claimwatch.cli", "demo", "--requests", "80", "--summary-json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(out.read_text())
    releases = summary["releases"]
    assert set(releases) == {"v1.4.0", "v1.5.0-rc1"}
    base, cand = releases["v1.4.0"]["totals"], releases["v1.5.0-rc1"]["totals"]
    assert base["answers"] == 80 and cand["answers"] == 80
    assert cand.get("CONTRADICTED", 0) > base.get("CONTRADICTED", 0)
    assert summary["answers_judged"] == summary["answers_sent"] == 160
    assert summary["gate"]["decision"] == "rollback"
    acc = summary["accuracy"]
    assert acc["injected_failures"] > 10
    assert acc["recall"] >= 0.8
    assert acc["false_positive_rate"] <= 0.1
    assert "Release gate" in proc.stdout and "ROLLBACK" in proc.stdout
