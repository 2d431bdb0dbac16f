"""The gate on a real Prometheus across a worker restart and a rolling worker upgrade inside its window.

The history is backfilled (``promtool tsdb create-blocks-from openmetrics``, one sample a minute for the last 90
minutes) into a real Prometheus; ``claimwatch gate`` (the CLI) and the Argo analysis query it as they would in
production. Both scenarios are releases as good as their baseline (about 10% flagged answers), which the gate
used to roll back:

- ``c-restart``: its worker restarted 30 minutes ago; its answers counter climbed back past its old value, its
  at-risk counter did not (counted from the window's start, answers looked like 81 beside 97 at risk: 120%);
- ``c-mixed`` against ``b-mixed``: the baseline's answers were counted by an old worker without the answer risk
  until 30 minutes ago, then by a new one with it (the new worker's at-risk count over both workers' answers
  read 5% for the baseline, against the candidate's 10%).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections import defaultdict

import pytest

from claimwatch.embedded import EmbeddedPrometheus
from claimwatch.gate import Source, fetch_counts
from dashboards import argo_gen
from tests.unit.test_gate_edge_cases import ARGS

pytestmark = pytest.mark.integration

COUNTERS = (
    "claimwatch_answers_total",
    "claimwatch_answers_at_risk_total",
    "claimwatch_answers_with_unsupported_total",
)


def _history(now: int) -> str:
    """OpenMetrics text of the two scenarios (module docstring), one sample a minute until 30 s ago."""
    rows: dict[str, list[str]] = defaultdict(list)
    judged: set[tuple[str, int]] = set()

    def put(release: str, instance: str, t: int, answers: int, at_risk: int | None, unsupported: int) -> None:
        labels = f'release="{release}",environment="prod",instance="{instance}",job="cw"'
        rows[COUNTERS[0]].append(f'{COUNTERS[0]}{{outcome="evaluated",{labels}}} {answers} {t}')
        if at_risk is not None:
            rows[COUNTERS[1]].append(f"{COUNTERS[1]}{{{labels}}} {at_risk} {t}")
        rows[COUNTERS[2]].append(f"{COUNTERS[2]}{{{labels}}} {unsupported} {t}")
        if (instance, t) not in judged:  # one judge_info sample per worker and scrape
            judged.add((instance, t))
            rows["claimwatch_judge_info"].append(
                f'claimwatch_judge_info{{judge="anthropic",instance="{instance}",job="cw"}} 1 {t}'
            )

    start, restart = now - 90 * 60, now - 30 * 60
    for t in range(start, now - 30, 60):
        k = (t - start) // 60
        put("b", "w0", t, 20 * k, 2 * k, 2 * k)  # steady, 10% flagged
        if t < restart:  # c-restart: flat at 1000 answers, 100 at risk, until its worker restarts
            put("c-restart", "w1", t, 1000, 100, 100)
            put("b-mixed", "w_old", t, 40 * k, None, 4 * k)  # an old worker without the answer risk
        else:  # since the restart: ~1100 answers and ~99 at risk by now (9%)
            f = (t - restart) / (30 * 60 - 30)
            put("c-restart", "w1", t, int(1100 * f), int(99 * f), int(99 * f))
            j = (t - restart) // 60  # the rolling upgrade: a new worker with the answer risk takes over b-mixed
            put("b-mixed", "w_new", t, 40 * j, 4 * j, 4 * j)
            if t >= now - 20 * 60:  # and the canary starts on it: 10% flagged by either rule
                i = (t - (now - 20 * 60)) // 60
                put("c-mixed", "w_new", t, 120 * i, 12 * i, 12 * i)
    lines = []
    for metric, samples in rows.items():
        lines.append(f"# TYPE {metric} {'gauge' if metric.endswith('info') else 'counter'}")
        lines += samples
    return "\n".join([*lines, "# EOF"]) + "\n"


def _query(url: str, expr: str) -> list[dict]:
    body = urllib.parse.urlencode({"query": expr}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=body, timeout=30) as r:
        return json.loads(r.read())["data"]["result"]


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    """A real Prometheus over the backfilled history."""
    promtool = shutil.which("promtool")
    if not EmbeddedPrometheus.available() or promtool is None:
        pytest.fail("prometheus/promtool are not installed (scripts/setup.sh installs them)")
    source = tmp_path_factory.mktemp("history") / "history.om"
    source.write_text(_history(int(time.time())))
    prom = EmbeddedPrometheus([])
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(prom.workdir / "data")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    prom.start()
    try:
        deadline = time.monotonic() + 30
        while not _query(prom.url, 'claimwatch_answers_total{release="c-mixed"} offset 1m'):
            assert time.monotonic() < deadline, "Prometheus never loaded the backfilled blocks"
            time.sleep(0.5)
        yield prom
    finally:
        prom.stop()


def test_a_worker_restart_in_the_window_promotes_a_release_as_good_as_its_baseline(backfilled, capsys):
    """c-restart (9% at risk since its restart) vs b (10%): the gate counts both of the restarted worker's counters
    from the restart and promotes (it rolled back on 120% flagged)."""
    from claimwatch.cli import main

    code = main(
        ["gate", "--prometheus", backfilled.url, "--baseline", "b", "--candidate", "c-restart", "--trust-judge"]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("claimwatch gate: PROMOTE (exit 0)"), out
    counts = fetch_counts(Source(backfilled.url), "c-restart", "1h")
    assert counts.flag_rule == "at_risk" and counts.answers > 1000 and 0.08 < counts.flagged_share < 0.1, counts


def test_a_rolling_worker_upgrade_in_the_window_promotes_a_release_as_good_as_its_baseline(backfilled, capsys):
    """b-mixed (old and new workers, 10% by the any-claim rule) vs c-mixed (10%): both compared by the any-claim
    rule, promoted and said why (it rolled back on the new worker's at-risk count over both workers' answers)."""
    from claimwatch.cli import main

    code = main(
        ["gate", "--prometheus", backfilled.url, "--baseline", "b-mixed", "--candidate", "c-mixed", "--trust-judge"]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("claimwatch gate: PROMOTE (exit 0)"), out
    assert "flagged = any UNSUPPORTED or CONTRADICTED claim" in out and "counted without the answer risk" in out
    base = fetch_counts(Source(backfilled.url), "b-mixed", "1h")
    assert base.flag_rule == "mixed" and base.flagged == base.flagged_any_claim, base


def test_the_argo_analysis_finds_no_regression_in_either_scenario(backfilled):
    """The AnalysisTemplate's queries on the same Prometheus: no evidence of a rise, and point rises of about 0."""
    args = ARGS  # the analysis parameters the PromQL tests use
    for baseline, candidate in (("b", "c-restart"), ("b-mixed", "c-mixed")):
        values = {**args, "baseline-release": baseline, "candidate-release": candidate}
        assert _query(backfilled.url, argo_gen.query("evidence", values)) == [], (baseline, candidate)
        point = _query(backfilled.url, argo_gen.query("point", values))
        assert len(point) == 1 and abs(float(point[0]["value"][1])) < 0.015, (baseline, candidate, point)
