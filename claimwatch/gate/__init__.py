"""Release gate: is the candidate release's share of flagged answers significantly higher than the baseline's?

``claimwatch gate --prometheus URL --baseline R1 --candidate R2 [--window 1h] [--follow]``

Rooms: :mod:`~claimwatch.gate.counts` (what is counted, from Prometheus or result records),
:mod:`~claimwatch.gate.promql` (exact counts and the test as PromQL, shared with the Argo
analysis), :mod:`~claimwatch.gate.prometheus` (the HTTP API), :mod:`~claimwatch.gate.decision`
(promote / hold / rollback and its power), :mod:`~claimwatch.gate.run` (one look or ``--follow``),
:mod:`~claimwatch.gate.correction` (a judge profile's corrected shares and veto),
:mod:`~claimwatch.gate.judge_fitness` (whether the judge behind the counts is fit for a rollback).
The statistics themselves are in :mod:`claimwatch.stats`; their error rates, measured by
simulation, are in ``docs/gate.md``.
"""

from claimwatch.gate.counts import Counts, ReleaseCounts, counts_from_results
from claimwatch.gate.decision import (
    DEFAULT_MIN_ANSWERS,
    EXIT_CODES,
    HOLD,
    PROMOTE,
    ROLLBACK,
    GateConfig,
    GateDecision,
    decide,
)
from claimwatch.gate.prometheus import Source, fetch_counts, queries
from claimwatch.gate.promql import GateError
from claimwatch.gate.run import Advice, Follow, follow, run_gate, sampling_advice
from claimwatch.stats.answer_share import FIXED, SEQUENTIAL, TestConfig

__all__ = [
    "DEFAULT_MIN_ANSWERS",
    "EXIT_CODES",
    "FIXED",
    "HOLD",
    "PROMOTE",
    "ROLLBACK",
    "SEQUENTIAL",
    "Advice",
    "Counts",
    "Follow",
    "GateConfig",
    "GateDecision",
    "GateError",
    "ReleaseCounts",
    "Source",
    "TestConfig",
    "counts_from_results",
    "decide",
    "fetch_counts",
    "follow",
    "queries",
    "run_gate",
    "sampling_advice",
]
