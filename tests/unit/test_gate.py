"""Release gate: statistics, decisions on answer counts, reading exact counts from a Prometheus HTTP API, --follow."""

from __future__ import annotations

import json
import math
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from claimwatch.gate import (
    Advice,
    Counts,
    Follow,
    GateConfig,
    GateError,
    ReleaseCounts,
    Source,
    TestConfig,
    counts_from_results,
    decide,
    fetch_counts,
    follow,
    queries,
    run_gate,
    sampling_advice,
)
from claimwatch.gate.promql import count_query, duration_seconds, exact_increase
from claimwatch.stats import power
from claimwatch.stats.proportions import newcombe_interval, wilson_interval, z_test_p_value
from claimwatch.stats.sequential import confidence_sequence, half_width, log_evidence, rejects

Z95 = 1.959963984540054  # two-sided 95%
FIXED = GateConfig(TestConfig(method="fixed"))
SEQ = GateConfig(TestConfig(method="sequential"))


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


def test_log_evidence_hand_computed():
    """V = 0.001, tau = 0.1, alpha = 0.05, excess 0.1: c = 3.0151, L = 1 - phi(c)/c = 0.99860,
    ln 2 + 0.5 ln(1/11) + c^2/2 + ln L + ln 0.05 = 1.04252 (> 0: rejects)."""
    assert log_evidence(0.1, 0.001, 0.05, 0.1) == pytest.approx(1.042516, abs=1e-6)
    assert log_evidence(0.0, 0.001, 0.05, 0.1) == -math.inf  # no excess, no evidence


def test_half_width_is_where_the_evidence_reaches_zero_and_decisions_match_the_bound():
    """log_evidence crosses 0 at h(V); rejecting theta is the same as theta below the lower bound d - h(V)."""
    for v in (1e-4, 1e-3, 1e-2):
        h = half_width(v, 0.05)
        assert log_evidence(h * (1 + 1e-6), v, 0.05) > 0 > log_evidence(h * (1 - 1e-6), v, 0.05)
    z = TestConfig().z
    assert 1.5 * z < half_width(1e-3, 0.05) / math.sqrt(1e-3) < 1.8 * z  # ~1.7x one look at its sweet spot
    for xc in range(60, 140, 7):
        lower, _ = confidence_sequence(xc, 400, 80, 400, 0.05)
        for theta in (0.0, 0.02, 0.05):
            assert rejects(xc, 400, 80, 400, theta, 0.05) == (lower > theta)


def test_confidence_sequence_is_wider_than_one_look_and_shrinks_with_answers():
    """The always-valid bounds contain the one-look Newcombe bounds and narrow as answers accumulate."""
    z = TestConfig().z
    for n in (100, 1000, 10_000):
        lo, hi = confidence_sequence(n // 4, n, n // 5, n, 0.05)
        nlo, nhi = newcombe_interval(n // 4, n, n // 5, n, z)
        assert lo < nlo and hi > nhi
    widths = [hi - lo for lo, hi in (confidence_sequence(n // 4, n, n // 5, n, 0.05) for n in (100, 1000, 10_000))]
    assert widths[0] > widths[1] > widths[2]
    assert confidence_sequence(0, 0, 5, 10, 0.05) == (-1.0, 1.0)


def test_counts_rates_never_divide_by_zero():
    """judged = supported + unsupported + contradicted; empty releases have rate and share 0."""
    c = Counts(supported=90, unsupported=6, contradicted=4, error=50)
    assert c.judged == 100 and c.rate("contradicted") == 0.04
    assert Counts().rate("contradicted") == 0.0 and ReleaseCounts().flagged_share == 0.0


def test_counts_from_results_count_answers_as_the_worker_does():
    """Evaluated answers, flagged and contradicted answers from result records; last record per trace; other releases ignored."""
    records = [
        {
            "trace_id": "a",
            "outcome": "evaluated",
            "slices": {"release": "v2"},
            "counts": {"SUPPORTED": 3, "UNSUPPORTED": 1, "CONTRADICTED": 0, "ERROR": 0},
        },
        {
            "trace_id": "b",
            "outcome": "evaluated",
            "slices": {"release": "v2"},
            "counts": {"SUPPORTED": 1, "UNSUPPORTED": 0, "CONTRADICTED": 2, "ERROR": 1},
        },
        {
            "trace_id": "b",
            "outcome": "evaluated",
            "slices": {"release": "v2"},  # redelivered: counted once
            "counts": {"SUPPORTED": 1, "UNSUPPORTED": 0, "CONTRADICTED": 2, "ERROR": 1},
        },
        {"trace_id": "c", "outcome": "abstained", "slices": {"release": "v2"}, "counts": {}},
        {"trace_id": "d", "outcome": "failed", "slices": {"release": "v2"}, "counts": {"ERROR": 2}},
        {
            "trace_id": "e",
            "slices": {"release": "v2"},  # no outcome, no counts: decided from the claims
            "claims": [{"verdict": "SUPPORTED"}, {"verdict": "SUPPORTED"}],
        },
        {"trace_id": "f", "outcome": "evaluated", "slices": {"release": "v9"}, "counts": {"UNSUPPORTED": 4}},
    ]
    got = counts_from_results(records, ["v1", "v2"])
    assert got["v1"] == ReleaseCounts()
    assert got["v2"] == ReleaseCounts(answers=3, flagged=2, contradicted=1, claims=Counts(6, 1, 2, 3))


def test_clear_regression_rolls_back_in_both_modes():
    """Flagged answers 20% -> 50% on 400 answers each: the lower bound is far above the 2-point tolerance."""
    for cfg in (FIXED, SEQ):
        d = decide(ReleaseCounts(400, 80), ReleaseCounts(400, 200), cfg)
        assert d.action == "rollback" and d.exit_code == 1
        assert d.comparison.difference == pytest.approx(0.30)
        assert d.comparison.lower > 0.02
        assert "flagged answers rose from 20.00% to 50.00%" in d.render()


def test_sequential_needs_more_evidence_than_one_look():
    """+8 points on 400 answers each: the one-look test rolls back, the always-valid one holds and says how many more."""
    base, cand = ReleaseCounts(400, 80), ReleaseCounts(400, 112)
    assert decide(base, cand, FIXED).action == "rollback"
    d = decide(base, cand, SEQ)
    assert d.action == "hold" and "not significantly" in d.reasons[0]
    assert d.power.more_candidate is not None and 0 < d.power.more_candidate < 10_000
    assert f"about {d.power.more_candidate} more evaluated candidate answers" in d.reasons[1]
    # about that many more, at the same shares, rolls back; well short of it still holds
    k = 1 + d.power.more_candidate / 400

    def at(scale: float) -> str:
        return decide(
            ReleaseCounts(round(400 * scale), round(80 * scale)),
            ReleaseCounts(round(400 * scale), round(112 * scale)),
            SEQ,
        ).action

    assert at(k * 1.05) == "rollback" and at(1 + (k - 1) * 0.7) == "hold"


def test_thin_evidence_holds_even_when_shares_look_terrible():
    """30 candidate answers, all flagged: fewer than min_answers -> hold, with how many more reach the minimum."""
    d = decide(ReleaseCounts(500, 50), ReleaseCounts(30, 30), GateConfig(min_answers=50))
    assert d.action == "hold" and d.exit_code == 2
    assert "candidate has 30 evaluated answers, fewer than the 50 needed" in d.reasons[0]
    assert "about 20 more evaluated candidate answers (and 0 baseline) reach the minimum" in d.reasons[1]


def test_equal_or_slightly_worse_shares_promote_and_state_their_power():
    """Equal shares and +1 point (inside the tolerance) promote; the report names the smallest detectable rise."""
    for cand in (ReleaseCounts(1000, 200), ReleaseCounts(1000, 210)):
        d = decide(ReleaseCounts(1000, 200), cand)
        assert d.action == "promote" and d.exit_code == 0
        assert 0.02 < d.power.min_detectable < 0.2
        assert "caught with probability 0.8" in d.render()


def test_flagged_counts_above_answers_hold_and_cannot_break_the_interval():
    """A (never expected) flagged > answers holds, saying so, and the interval stays defined (clamped)."""
    d = decide(ReleaseCounts(100, 10), ReleaseCounts(60, 90))
    assert d.action == "hold" and d.exit_code == 2
    assert "inconsistent counts" in d.render() and "the candidate has 90 flagged answers of 60" in d.render()
    assert d.comparison.candidate_rate == 1.0 and math.isfinite(d.comparison.lower)


def test_config_rejects_nonsense_parameters():
    """alpha outside (0, 0.5), an unknown method, a negative tolerance or min_answers < 1 are caller errors."""
    for bad in ({"alpha": 0.7}, {"method": "bayes"}, {"max_increase": -0.1}, {"tau": 0}):
        with pytest.raises(ValueError):
            TestConfig(**bad)
    with pytest.raises(ValueError):
        GateConfig(min_answers=0)


def test_min_detectable_increase_hand_computed_for_the_fixed_test():
    """p = 0.2, 1000 answers each: 0.02 + (1.6449 + 0.8416) * sqrt(0.16 * 0.002) = 0.06448."""
    got = power.min_detectable_increase(0.2, 1000, 1000, TestConfig(method="fixed"))
    assert got == pytest.approx(0.02 + (1.644854 + 0.841621) * math.sqrt(0.16 * 0.002), rel=1e-5)
    assert power.min_detectable_increase(0.2, 1000, 1000, TestConfig()) > got  # the sequential test pays for looks


def test_answers_for_power_reaches_the_requested_power():
    """answers_for_power returns the smallest n whose detectable rise is at most the requested one."""
    cfg = TestConfig(method="fixed")
    n = power.answers_for_power(0.10, 0.3, cfg)
    assert n is not None
    assert power.min_detectable_increase(0.3, n, n, cfg) <= 0.10 < power.min_detectable_increase(0.3, n - 1, n - 1, cfg)
    assert power.answers_for_power(0.01, 0.3, cfg) is None  # below the tolerance: never


def test_exact_increase_subtracts_the_window_start_or_counts_from_birth_or_restart():
    """The per-series count is last - value at the window start, or the whole counter for a series born inside the
    window, reset inside it, or of a worker that restarted inside it (the ``restarted`` set)."""
    assert exact_increase('m{a="b"}', "1h", "R") == (
        '(((last_over_time(m{a="b"}[1h]) - m{a="b"} offset 1h) unless (resets(m{a="b"}[1h]) > 0 or '
        'min_over_time(m{a="b"}[1h]) < m{a="b"} offset 1h) unless ignoring(outcome, verdict, failure_type) R) '
        'or ignoring(__name__) last_over_time(m{a="b"}[1h]))'
    )
    # a counter the restart signal is built from needs no reset check of its own
    assert "unless (resets(" not in exact_increase("claimwatch_answers_at_risk_total", "1h", "R")


def test_count_query_escapes_release_selects_evaluated_answers_and_rejects_bad_input():
    """Release values are PromQL-escaped, extra matchers appended, answers restricted to outcome=evaluated."""
    q = count_query("claimwatch_answers_total", 'v"2', "30m", "release", 'environment="prod"')
    assert 'claimwatch_answers_total{release="v\\"2", environment="prod", outcome="evaluated"}[30m]' in q
    assert q.startswith("sum (")
    assert count_query("claimwatch_claims_total", "v1", by="verdict").startswith("sum by (verdict) (")
    with pytest.raises(GateError):
        count_query("claimwatch_claims_total", "v1", "1 hour")
    with pytest.raises(GateError):
        count_query("claimwatch_claims_total", "v1", "1h", label="bad-label")
    assert duration_seconds("1h30m") == 5400


class _FakePrometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query from the class attribute ``answers`` (query -> result list)."""

    answers: dict[str, list] = {}
    seen: list[str] = []
    status = 200

    def do_GET(self):
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


def _vector(value: str, **labels: str) -> list:
    return [{"metric": labels, "value": [1700000000.0, value]}]


def _serve(
    handler,
    release: str,
    window: str,
    answers: int,
    flagged: int,
    contradicted: int = 0,
    claims: dict[str, int] | None = None,
    extra: str = "",
    judges: tuple[str, ...] = (),
) -> None:
    q = queries(release, window, extra=extra)
    handler.answers[q["judges"]] = [{"metric": {"judge": j}, "value": [1700000000.0, "1"]} for j in judges]
    handler.answers[q["answers"]] = _vector(str(answers))
    handler.answers[q["flagged"]] = _vector(str(flagged))
    handler.answers[q["contradicted"]] = _vector(str(contradicted))
    handler.answers[q["claims"]] = [
        {"metric": {"verdict": v}, "value": [1700000000.0, str(n)]} for v, n in (claims or {}).items()
    ]


def test_fetch_counts_sends_the_documented_queries_and_maps_them(fake_prometheus):
    """fetch_counts sends the four exact-count queries and the judge query, and builds ReleaseCounts (unknown verdicts ignored)."""
    url, handler = fake_prometheus
    _serve(
        handler,
        "v2",
        "1h",
        120,
        30,
        5,
        {"supported": 400, "contradicted": 9, "error": 3, "bogus": 7},
        judges=("hybrid",),
    )
    got = fetch_counts(Source(url), "v2", "1h")
    assert got == ReleaseCounts(120, 30, 5, Counts(supported=400, contradicted=9, error=3))
    assert got.judges == ("hybrid",)
    assert sorted(handler.seen) == sorted(queries("v2", "1h").values())


def test_fetch_counts_raises_gate_error_on_api_error(fake_prometheus):
    """An HTTP 400 from Prometheus becomes a GateError naming the query."""
    url, handler = fake_prometheus
    handler.status = 400
    with pytest.raises(GateError, match="HTTP 400"):
        fetch_counts(Source(url), "v2")


def test_run_gate_end_to_end_against_fake_prometheus(fake_prometheus):
    """run_gate reads both releases and their judge: a clear regression on heuristic counts is HOLD (exit 2) naming
    the judge, and ROLLBACK (exit 1) with trust_judge."""
    url, handler = fake_prometheus
    sel = 'environment="prod"'
    _serve(handler, "v1", "2h", 1000, 100, extra=sel, judges=("heuristic",))
    _serve(handler, "v2", "2h", 300, 120, extra=sel, judges=("heuristic",))
    code, text = run_gate(Source(url, extra_selector=sel), "v1", "v2", window="2h")
    assert code == 2 and text.startswith("claimwatch gate: HOLD (exit 2)")
    assert "judge heuristic: not fit for a rollback decision" in text
    code, text = run_gate(Source(url, extra_selector=sel), "v1", "v2", window="2h", trust_judge=True)
    assert code == 1
    assert text.startswith("claimwatch gate: ROLLBACK (exit 1)")
    assert "release 'v1' (baseline) vs 'v2' (candidate)" in text


def test_run_gate_holds_when_a_release_has_no_data(fake_prometheus):
    """A candidate with no series in the window holds (exit 2): not enough evidence."""
    url, handler = fake_prometheus
    _serve(handler, "v1", "1h", 1000, 100)
    code, text = run_gate(Source(url), "v1", "v9")
    assert code == 2 and "candidate has 0 evaluated answers" in text


def test_run_gate_holds_when_prometheus_is_unreachable():
    """No server listening: exit 2 with the connection error, never promote blind."""
    from claimwatch.embedded import free_port

    code, text = run_gate(Source(f"http://127.0.0.1:{free_port()}"), "v1", "v2")
    assert code == 2 and "cannot reach Prometheus" in text


def test_sampling_advice_raises_the_candidates_ratio_or_keeps_it_whole():
    """A HOLD needing N more answers within the target gets a ratio (when it fits under 1) or keep_releases."""
    d = decide(ReleaseCounts(400, 80), ReleaseCounts(400, 112), SEQ, labels={"baseline": "v1", "candidate": "v2"})
    more = d.power.more_candidate
    assert more
    # 400 answers in 1h at ratio 0.1; more/h needed -> factor more/400
    lines = sampling_advice(d, 3600, Advice(target_s=3600, sampling_ratio=0.1))
    assert "raise its sampling ratio from 0.1 to" in lines[0]
    ratio = float(lines[0].split('"release=v2": ')[1].split("}")[0])
    assert ratio == pytest.approx(0.1 * more / 400, abs=0.006)
    slow = sampling_advice(d, 3600 * 100, Advice(target_s=600, sampling_ratio=1.0))
    assert "CLAIMWATCH_KEEP_RELEASES" in slow[0] and "more traffic" in slow[0]
    fast = sampling_advice(d, 60, Advice(target_s=3600))
    assert "within the 60 min target" in fast[0]
    assert sampling_advice(decide(ReleaseCounts(400, 80), ReleaseCounts(400, 80)), 3600, Advice()) == []


def test_follow_grows_the_window_from_a_fixed_start_and_stops_at_a_rollback():
    """--follow looks with windows 1h, 1h+5m, ...; the first rollback ends it with exit 1."""
    now = [1000.0]
    seen: list[str] = []
    answers = iter([(100, 20, 100, 22), (200, 40, 200, 60), (300, 60, 300, 150)])

    def fetch(source, release, window):
        seen.append(window)
        if release == "v1":
            nb, xb, nc, xc = next(answers)
            fetch.cand = ReleaseCounts(nc, xc)  # type: ignore[attr-defined]
            return ReleaseCounts(nb, xb)
        return fetch.cand  # type: ignore[attr-defined]

    out: list[str] = []
    code = follow(
        Source("http://unused"),
        "v1",
        "v2",
        window="1h",
        config=SEQ,
        plan=Follow(300, 3600),
        fetch=fetch,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        emit=out.append,
        trust_judge=True,  # the fake counts name no judge (test_gate_judge.py covers holding on it)
    )
    assert code == 1
    assert seen == ["3600s", "3600s", "3900s", "3900s", "4200s", "4200s"]
    assert [o.splitlines()[1].split(": ")[1].split()[0] for o in out] == ["PROMOTE", "HOLD", "ROLLBACK"]


def test_follow_refuses_the_fixed_test():
    """The fixed-horizon test is valid for one look: --follow with it is a caller error."""
    with pytest.raises(ValueError, match="sequential"):
        follow(Source("http://unused"), "v1", "v2", config=FIXED)


def test_cli_gate_takes_the_test_and_answer_flags_and_refuses_follow_with_fixed(fake_prometheus, capsys):
    """`claimwatch gate --test fixed --min-answers 50 --trust-judge` exits 1 on a regression and prints its power; --follow --test fixed is a usage error."""
    from claimwatch.cli import main

    url, handler = fake_prometheus
    _serve(handler, "v1", "1h", 1000, 100)
    _serve(handler, "v2", "1h", 300, 120)
    base = ["gate", "--prometheus", url, "--baseline", "v1", "--candidate", "v2", "--window", "1h"]
    assert main([*base, "--test", "fixed", "--min-answers", "50", "--trust-judge"]) == 1
    out = capsys.readouterr().out
    assert "ROLLBACK" in out and "power: a rise of" in out and "one look (fixed horizon)" in out
    assert main([*base, "--follow", "--test", "fixed"]) == 2
    assert "sequential" in capsys.readouterr().err
