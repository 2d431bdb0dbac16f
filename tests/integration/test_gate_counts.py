"""The gate's counts from a real Prometheus equal the worker's, for a long-lived and a born-in-window release.

A real ``WorkerMetrics`` registry (the worker's own metric code) is served over HTTP and
scraped every second by a real Prometheus. Release ``v-old`` judges a first batch, the
window starts in a quiet gap after it has been scraped, then ``v-old`` judges a second batch
and ``v-new`` (born inside the window) its first. The gate must count exactly the second
batch for ``v-old`` (no edge extrapolation, nothing from before the window) and everything
for ``v-new`` (no double counting of its first sample), and agree with the results-topic
count of the same answers (``counts_from_results``) and with the Argo analysis query.
"""

from __future__ import annotations

import json
import math
import random
import time
import urllib.parse
import urllib.request

import pytest
from prometheus_client import start_http_server

from claimwatch.embedded import EmbeddedPrometheus, free_port
from claimwatch.gate import GateConfig, ReleaseCounts, Source, counts_from_results, decide, fetch_counts
from claimwatch.stats.sequential import difference_variance, log_evidence
from dashboards import argo_gen
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.judges.identity import JudgeIdentity
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.scoring import AnswerResult, score

pytestmark = pytest.mark.integration


def _answer(rnd: random.Random, i: int, release: str, flagged_share: float) -> AnswerResult:
    """One answer of 1-6 claims; flagged ones carry an UNSUPPORTED (sometimes CONTRADICTED) claim; some abstain."""
    n = 0 if i % 17 == 0 else rnd.randint(1, 6)
    claims = [Claim(id=f"c{j}", text=f"claim {j} of {i}") for j in range(n)]
    verdicts = [ClaimVerdict(claim_id=c.id, verdict=Verdict.SUPPORTED) for c in claims]
    if n and rnd.random() < flagged_share:
        bad = Verdict.CONTRADICTED if rnd.random() < 0.3 else Verdict.UNSUPPORTED
        verdicts[rnd.randrange(n)] = ClaimVerdict(claim_id="x", verdict=bad)
        verdicts = [ClaimVerdict(claim_id=c.id, verdict=v.verdict) for c, v in zip(claims, verdicts)]
    return score(
        f"{release}-{i:06d}",
        "test",
        claims,
        verdicts,
        slices={"release": release, "model": "m", "route": "qa", "environment": "prod"},
    )


def _query(url: str, expr: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=10) as r:
        return json.loads(r.read())["data"]["result"]


@pytest.fixture(scope="module")
def scraped():
    if not EmbeddedPrometheus.available():
        pytest.fail("prometheus is not installed (scripts/setup.sh installs it)")
    metrics = WorkerMetrics()
    metrics.set_judge(JudgeIdentity("test", (), "00000000"))  # what the worker does when it starts
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=metrics.registry)
    prom = EmbeddedPrometheus([f"127.0.0.1:{port}"]).start()
    try:
        yield prom, metrics
    finally:
        prom.stop()
        server.shutdown()
        thread.join(timeout=5)


def test_gate_counts_equal_the_worker_counts_for_long_lived_and_new_releases(scraped):
    """Exact counts: v-old's second batch only, v-new from its first answer; results-topic counts and Argo agree."""
    prom, metrics = scraped
    rnd = random.Random(29)
    first = [_answer(rnd, i, "v-old", 0.2) for i in range(150)]
    for r in first:
        metrics.observe(r)
    evaluated = sum(r.outcome == "evaluated" for r in first)
    sel = 'claimwatch_answers_total{release="v-old", outcome="evaluated"}'
    deadline = time.monotonic() + 30
    while not _query(prom.url, f"count_over_time({sel}[1m]) >= 3 and {sel} == {evaluated}"):
        assert time.monotonic() < deadline, "Prometheus never scraped the first batch"
        time.sleep(0.5)
    mark = time.time()  # the window starts in the quiet second after this
    time.sleep(1.5)
    second = [_answer(rnd, i, "v-old", 0.2) for i in range(150, 400)]
    new = [_answer(rnd, i, "v-new", 0.45) for i in range(230)]
    for r in second + new:
        metrics.observe(r)
    time.sleep(3.5)  # scraped
    window = f"{math.floor(time.time() - mark)}s"

    records = [r.model_dump(mode="json") for r in second + new]
    worker = counts_from_results(records, ["v-old", "v-new"])
    assert worker["v-old"].answers > 200 and worker["v-new"].answers > 200
    for release in ("v-old", "v-new"):
        got = fetch_counts(Source(prom.url), release, window)
        assert got == worker[release], (release, window, got, worker[release])
        # the judge behind the counts: the counters' judge_id label (these records carry no judge_id: the judge's
        # name is the label, as for the records' judge field)
        assert got.judges == worker[release].judges == ("test",), (got.judges, worker[release].judges)

    # increase() extrapolates to the window's edges: the count the gate used to start from is not the worker's
    inc = _query(prom.url, f'sum(increase(claimwatch_answers_total{{release="v-old", outcome="evaluated"}}[{window}]))')
    assert round(float(inc[0]["value"][1])) != worker["v-old"].answers

    # the Argo analysis, on the same Prometheus, computes the gate's sequential test and decision
    d = decide(worker["v-old"], worker["v-new"], GateConfig())
    args = {
        "environment": "prod",
        "window": window,
        "min-answers": "50",
        "alpha": "0.05",
        "tau": "0.1",
        "max-increase": "0.02",
        "baseline-release": "v-old",
        "candidate-release": "v-new",
    }
    evidence = float(_query(prom.url, argo_gen.query("evidence", args))[0]["value"][1])
    o, n = worker["v-old"], worker["v-new"]
    expected = log_evidence(
        n.flagged_share - o.flagged_share - 0.02,
        difference_variance(n.flagged, n.answers, o.flagged, o.answers),
        0.05,
        0.1,
    )
    assert evidence == pytest.approx(expected, abs=1e-9)
    assert (evidence > 0) == (d.action == "rollback") == (d.comparison.lower > 0.02)
    assert d.action == "rollback"  # 45% vs 20% flagged answers on >200 answers each

    # `claimwatch report` (results topic) decides on the same counts, so it makes the same decision
    from claimwatch.report import build_report

    page = build_report(records, "v-old", "v-new", trust_judge=True)
    assert (page.decision.baseline, page.decision.candidate) == (worker["v-old"], worker["v-new"])
    assert page.decision.action == d.action and isinstance(page.decision.candidate, ReleaseCounts)
    # without --trust-judge, a judge not in the fitness table ("test") holds the rollback, and the page says so
    held = build_report(records, "v-old", "v-new")
    assert held.decision.action == "hold" and held.judge_lines[0].startswith("judge test: not fit")
