"""Release gate: statistics, decisions, and reading counts from a Prometheus HTTP API."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from claimwatch.gate import (
    Counts,
    GateError,
    counts_query,
    decide,
    fetch_counts,
    newcombe_interval,
    run_gate,
    wilson_interval,
    z_test_p_value,
)

Z95 = 1.959963984540054  # two-sided 95%


def test_wilson_interval_matches_newcombe_1998_example():
    """Wilson score interval for 81/263 equals the published 0.2553-0.3662."""
    lo, hi = wilson_interval(81, 263, Z95)
    assert round(lo, 4) == 0.2553 and round(hi, 4) == 0.3662


def test_newcombe_interval_matches_published_method_10_example():
    """Hybrid score interval for 56/70 - 48/80 equals Newcombe's published 0.0524-0.3339."""
    lo, hi = newcombe_interval(56, 70, 48, 80, Z95)
    assert round(lo, 4) == 0.0524 and round(hi, 4) == 0.3339


def test_wilson_interval_of_zero_successes_starts_at_zero():
    """0/n keeps a lower bound of 0 and a positive upper bound (no degenerate Wald interval)."""
    lo, hi = wilson_interval(0, 100, Z95)
    assert lo == pytest.approx(0.0, abs=1e-12)
    assert hi == pytest.approx(3.8415 / 103.8415, abs=1e-4)  # hand-computed: z^2 / (n + z^2)


def test_z_test_p_value_hand_computed():
    """60/600 vs 60/6000: pooled p=0.01818, se=0.005721, z=15.7 -> p ~ 0; equal rates -> p = 0.5."""
    assert z_test_p_value(60, 600, 60, 6000) < 1e-12
    assert z_test_p_value(10, 1000, 10, 1000) == pytest.approx(0.5)


def test_counts_judged_excludes_errors_and_rates_never_divide_by_zero():
    """judged = supported + unsupported + contradicted; an empty release has rate 0."""
    c = Counts(supported=90, unsupported=6, contradicted=4, error=50)
    assert c.judged == 100 and c.rate("contradicted") == 0.04
    assert Counts().rate("contradicted") == 0.0


def test_clear_regression_rolls_back():
    """1% -> 10% contradicted on 6000 vs 600 claims: lower bound far above the 2-point tolerance."""
    d = decide(Counts(5700, 240, 60), Counts(540, 0, 60))
    assert d.action == "rollback" and d.exit_code == 1
    contradicted = d.comparisons[0]
    assert contradicted.verdict == "contradicted"
    assert contradicted.difference == pytest.approx(0.09)
    assert contradicted.lower > 0.02
    assert "contradicted rate rose from 1.00% to 10.00%" in d.render()


def test_unsupported_regression_alone_rolls_back():
    """The unsupported rate is gated too: 4% -> 12% on 2000 claims each rolls back."""
    d = decide(Counts(1900, 80, 20), Counts(1740, 240, 20))
    assert d.action == "rollback"
    assert [c.verdict for c in d.comparisons if c.lower > 0.02] == ["unsupported"]


def test_equal_rates_with_enough_claims_promote():
    """Identical 1%/4% rates on 1000 claims each promote (exit 0)."""
    d = decide(Counts(950, 40, 10), Counts(950, 40, 10))
    assert d.action == "promote" and d.exit_code == 0
    assert all(c.difference == 0 for c in d.comparisons)


def test_thin_evidence_holds_even_when_rates_look_terrible():
    """50 candidate claims at 40% contradicted: fewer than min_claims -> hold, not rollback."""
    d = decide(Counts(5000, 100, 50), Counts(30, 0, 20), min_claims=200)
    assert d.action == "hold" and d.exit_code == 2
    assert "candidate has 50 judged claims, fewer than the 200 needed" in d.reasons[0]


def test_worse_but_not_significant_holds():
    """2% -> 5% contradicted on 240 claims each: +3 points, but the lower bound is below the tolerance."""
    d = decide(Counts(235, 0, 5), Counts(228, 0, 12), min_claims=200)
    c = d.comparisons[0]
    assert c.difference == pytest.approx(0.0292, abs=1e-4)
    assert c.lower < 0.02
    assert d.action == "hold"
    assert "not significantly" in d.reasons[0]


def test_small_improvement_or_tiny_increase_promotes():
    """+1 point contradicted (inside the tolerance) on 2000 claims each promotes."""
    d = decide(Counts(1960, 20, 20), Counts(1940, 20, 40))
    assert d.action == "promote"


def test_decide_rejects_nonsense_parameters():
    """alpha outside (0, 0.5) is a caller error."""
    with pytest.raises(ValueError):
        decide(Counts(), Counts(), alpha=0.7)


def test_counts_query_escapes_release_and_adds_selector():
    """Release values are PromQL-escaped and extra matchers are appended."""
    q = counts_query('v"2', "30m", "release", 'environment="prod"')
    sel = 'claimwatch_claims_total{release="v\\"2", environment="prod"}'
    assert q == (
        f"sum by (verdict) ((increase({sel}[30m]) + (min_over_time({sel}[30m]) unless {sel} offset 30m))"
        f" or increase({sel}[30m]))"
    )
    with pytest.raises(GateError):
        counts_query("v1", "1 hour")
    with pytest.raises(GateError):
        counts_query("v1", "1h", label="bad-label")


class _FakePrometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query from the class attribute ``answers`` (query -> result list)."""

    answers: dict[str, list] = {}
    seen: list[str] = []
    status = 200

    def do_GET(self):  # noqa: N802 - http.server API
        parsed = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(parsed.query).get("query", [""])[0]
        type(self).seen.append(query)
        if parsed.path != "/api/v1/query":
            self.send_response(404)
            self.end_headers()
            return
        if type(self).status != 200:
            body = {"status": "error", "errorType": "bad_data", "error": "parse error"}
            self.send_response(type(self).status)
        else:
            result = type(self).answers.get(query, [])
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
            self.send_response(200)
        raw = json.dumps(body).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_prometheus():
    """A local HTTP server speaking the Prometheus query API."""
    _FakePrometheus.answers = {}
    _FakePrometheus.seen = []
    _FakePrometheus.status = 200
    server = HTTPServer(("127.0.0.1", 0), _FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _FakePrometheus
    finally:
        server.shutdown()
        server.server_close()


def _vector(**by_verdict: str) -> list:
    return [{"metric": {"verdict": v}, "value": [1700000000.0, val]} for v, val in by_verdict.items()]


def test_fetch_counts_reads_the_vector_and_rounds_extrapolated_increases(fake_prometheus):
    """fetch_counts sends the documented query and maps verdict samples to integer Counts."""
    url, handler = fake_prometheus
    q = counts_query("v2", "1h")
    handler.answers[q] = _vector(supported="540.4", contradicted="59.6", error="3", unknown_verdict="7")
    counts = fetch_counts(url, "v2", "1h")
    assert counts == Counts(supported=540, unsupported=0, contradicted=60, error=3)
    assert handler.seen == [q]


def test_fetch_counts_raises_gate_error_on_api_error(fake_prometheus):
    """An HTTP 400 from Prometheus becomes a GateError naming the query."""
    url, handler = fake_prometheus
    handler.status = 400
    with pytest.raises(GateError, match="HTTP 400"):
        fetch_counts(url, "v2")


def test_run_gate_end_to_end_against_fake_prometheus(fake_prometheus):
    """run_gate reads both releases and exits 1 with a readable report on a clear regression."""
    url, handler = fake_prometheus
    handler.answers[counts_query("v1", "2h", extra_selector='environment="prod"')] = _vector(
        supported="5700", unsupported="240", contradicted="60"
    )
    handler.answers[counts_query("v2", "2h", extra_selector='environment="prod"')] = _vector(
        supported="540", contradicted="60"
    )
    code, text = run_gate(url, "v1", "v2", window="2h", extra_selector='environment="prod"')
    assert code == 1
    assert text.startswith("claimwatch gate: ROLLBACK (exit 1)")
    assert "release 'v1' (baseline) vs 'v2' (candidate)" in text


def test_run_gate_holds_when_a_release_has_no_data(fake_prometheus):
    """A candidate with no series in the window holds (exit 2): not enough evidence."""
    url, handler = fake_prometheus
    handler.answers[counts_query("v1")] = _vector(supported="1000")
    code, text = run_gate(url, "v1", "v9")
    assert code == 2 and "candidate has 0 judged claims" in text


def test_run_gate_holds_when_prometheus_is_unreachable():
    """No server listening: exit 2 with the connection error, never promote blind."""
    from claimwatch.embedded import free_port

    code, text = run_gate(f"http://127.0.0.1:{free_port()}", "v1", "v2")
    assert code == 2 and "cannot reach Prometheus" in text
