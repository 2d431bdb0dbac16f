"""The burst-ceiling model (``benchmarks/burst_ceiling.py``) behind docs/performance.md's bound on issue 33's target."""

from __future__ import annotations

import statistics

from benchmarks.burst_ceiling import RESPONSES, Model, run


def test_without_a_burst_every_response_is_the_same_run() -> None:
    """With no rejected call, the responses to a burst cannot differ: same seed, same answers/s."""
    model = Model(answers=120, burst=0)
    for seed in range(5):
        rates = {run(model, r, seed) for r in RESPONSES}
        assert len(rates) == 1 and next(iter(rates))[1] == 0


def test_a_count_burst_rejects_exactly_its_count_whatever_the_response() -> None:
    """The count burst refuses the next N calls: every response sees N rejections and finishes every answer."""
    model = Model(answers=150, burst=25)
    for r in RESPONSES[1:]:
        rate, rejected = run(model, r, seed=3)
        assert rejected == 25 and rate > 0


def test_in_a_window_halving_sends_fewest_refused_calls_and_the_gate_fewer_than_per_call() -> None:
    """In a rate-limit window, each response's restraint shows as fewer calls sent into the window."""
    model = Model(answers=150, window=3.0)
    sent = {r: statistics.median(run(model, r, seed)[1] for seed in range(20)) for r in RESPONSES[1:]}
    assert sent["gate+halve"] < sent["gate"] < sent["per-call"]


def test_the_burst_costs_throughput_in_the_order_of_restraint() -> None:
    """On a count burst, more restraint is slower: per-call >= gate >= gate+halve (medians over seeds)."""
    model = Model(answers=200)
    med = {r: statistics.median(run(model, r, seed)[0] for seed in range(40)) for r in RESPONSES}
    assert med["none"] >= med["per-call"] >= med["gate"] >= med["gate+halve"]
