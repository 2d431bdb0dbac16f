"""The gate's test: is the candidate's share of flagged answers higher than the baseline's?

Each evaluated answer is one trial: flagged when it is at risk (its calibrated answer risk at or above the
judge's threshold: ``claimwatch_answers_at_risk_total``), or, for workers and records without the answer risk,
when any of its claims is UNSUPPORTED or CONTRADICTED (the any-claim rule). Answers of a release are independent of each other (different questions),
while claims of one answer are not (same question, context and writing style), so the
share of flagged answers is a binomial proportion whatever the correlation inside answers,
where a claim rate treated as binomial is not (its variance is 1.5-3.4x the binomial one on
real answers). Both counts are counters the worker exports
(``claimwatch_answers_total{outcome="evaluated"}``, ``claimwatch_answers_at_risk_total``,
``claimwatch_answers_with_unsupported_total``)
and fields of every result record, so Prometheus and the results topic give the same numbers.

H0: ``p_candidate - p_baseline <= max_increase``. The candidate is rolled back when the
one-sided lower bound of the difference exceeds ``max_increase``:

- ``fixed``: Newcombe's score interval at ``1 - alpha`` (one look, planned in advance);
- ``sequential``: the one-sided normal-mixture test (:mod:`claimwatch.stats.sequential`),
  valid over any number of looks.

Either way the chance of rolling back a release that is not worse is at most ``alpha``;
``tests/unit/test_gate_simulation.py`` checks it on simulated releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

from claimwatch.stats.proportions import newcombe_interval
from claimwatch.stats.sequential import DEFAULT_TAU, confidence_sequence, rejects

FIXED, SEQUENTIAL = "fixed", "sequential"
METHODS = (SEQUENTIAL, FIXED)


@dataclass(frozen=True)
class TestConfig:
    """How the gate tests: method, error rate, tolerance, and the power it reports."""

    method: str = SEQUENTIAL
    alpha: float = 0.05
    max_increase: float = 0.02  # tolerated rise of the flagged-answer share (absolute)
    tau: float = DEFAULT_TAU  # mixing sd of the sequential test
    power: float = 0.8  # the power "smallest detectable increase" is stated at

    __test__ = False  # not a pytest class

    def __post_init__(self) -> None:
        # every comparison written so that NaN fails it (NaN compares False): a NaN tolerance would pass
        # ``max_increase < 0`` and promote anything
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {self.method!r}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), not {self.alpha!r}")
        if not 0 <= self.max_increase < 1:
            raise ValueError(f"max_increase must be a share rise in [0, 1), not {self.max_increase!r}")
        if not (math.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau must be a finite number > 0, not {self.tau!r}")
        if not 0.5 <= self.power < 1:
            raise ValueError(f"power must be in [0.5, 1), not {self.power!r}")

    @property
    def z(self) -> float:
        return NormalDist().inv_cdf(1 - self.alpha)


@dataclass(frozen=True)
class ShareComparison:
    """Candidate (``xc`` flagged of ``nc``) vs baseline (``xb`` of ``nb``) under ``config``'s test.

    ``rolls_back`` is the decision; ``lower``/``upper`` bound the difference for display (for the
    sequential test each is an always-valid one-sided bound at ``alpha``, and ``lower >
    max_increase`` exactly when it rolls back).
    """

    #: counts (floats where power projects the counts forward at fixed shares)
    xc: float
    nc: float
    xb: float
    nb: float
    config: TestConfig

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def baseline_rate(self) -> float:
        return self.xb / self.nb if self.nb else 0.0

    @property
    def candidate_rate(self) -> float:
        return self.xc / self.nc if self.nc else 0.0

    @property
    def difference(self) -> float:
        return self.candidate_rate - self.baseline_rate

    @cached_property
    def bounds(self) -> tuple[float, float]:
        """The bounds of the difference, clipped to what a difference of two shares can be ([-1, 1]: a
        sequence's half-width at few answers can reach past 100 points)."""
        cfg = self.config
        if cfg.method == FIXED:
            lo, hi = newcombe_interval(self.xc, self.nc, self.xb, self.nb, cfg.z)
        else:
            lo, hi = confidence_sequence(self.xc, self.nc, self.xb, self.nb, cfg.alpha, cfg.tau)
        return max(-1.0, min(1.0, lo)), max(-1.0, min(1.0, hi))

    @property
    def lower(self) -> float:
        return self.bounds[0]

    @property
    def upper(self) -> float:
        return self.bounds[1]

    @cached_property
    def rolls_back(self) -> bool:
        """The decision rule: the rise is above the tolerance, significantly (the lower bound above it)."""
        cfg = self.config
        if cfg.method == FIXED:
            return self.lower > cfg.max_increase
        return rejects(self.xc, self.nc, self.xb, self.nb, cfg.max_increase, cfg.alpha, cfg.tau)


def compare_shares(xc: float, nc: float, xb: float, nb: float, cfg: TestConfig) -> ShareComparison:
    """Flagged ``xc`` of ``nc`` candidate answers vs ``xb`` of ``nb`` baseline answers."""
    # counters read at one instant never have more flagged than answers; the gate holds when they do
    # (claimwatch.gate.decision), and the interval stays defined here anyway
    return ShareComparison(max(0, min(xc, nc)), nc, max(0, min(xb, nb)), nb, cfg)
