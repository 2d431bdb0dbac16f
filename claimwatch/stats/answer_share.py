"""The gate's test: is the candidate's share of flagged answers higher than the baseline's?

Each evaluated answer is one trial: flagged when any of its claims is UNSUPPORTED or
CONTRADICTED. Answers of a release are independent of each other (different questions),
while claims of one answer are not (same question, context and writing style), so the
share of flagged answers is a binomial proportion whatever the correlation inside answers,
where a claim rate treated as binomial is not (its variance is 1.5-3.4x the binomial one on
real answers). Both counts are counters the worker exports
(``claimwatch_answers_total{outcome="evaluated"}``, ``claimwatch_answers_with_unsupported_total``)
and fields of every result record, so Prometheus and the results topic give the same numbers.

H0: ``p_candidate - p_baseline <= max_increase``. The candidate is rolled back when the
one-sided lower bound of the difference exceeds ``max_increase``:

- ``fixed``: Newcombe's score interval at ``1 - alpha`` (one look, planned in advance);
- ``sequential``: the normal-mixture confidence sequence (:mod:`claimwatch.stats.sequential`),
  valid over any number of looks.

Either way the chance of rolling back a release that is not worse is at most ``alpha``;
``tests/unit/test_gate_simulation.py`` checks it on simulated releases.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

from claimwatch.stats.proportions import newcombe_interval
from claimwatch.stats.sequential import DEFAULT_TAU, confidence_sequence

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
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {self.method!r}")
        if not 0 < self.alpha < 0.5:
            raise ValueError("alpha must be in (0, 0.5)")
        if self.max_increase < 0 or self.tau <= 0 or not 0.5 <= self.power < 1:
            raise ValueError("max_increase must be >= 0, tau > 0 and power in [0.5, 1)")

    @property
    def z(self) -> float:
        return NormalDist().inv_cdf(1 - self.alpha)


@dataclass(frozen=True)
class ShareComparison:
    """Candidate vs baseline share of flagged answers, with the test's bounds on the difference."""

    baseline_rate: float
    candidate_rate: float
    lower: float
    upper: float
    method: str

    @property
    def difference(self) -> float:
        return self.candidate_rate - self.baseline_rate


def difference_bounds(xc: int, nc: int, xb: int, nb: int, cfg: TestConfig) -> tuple[float, float]:
    """Lower and upper bound of ``xc/nc - xb/nb`` under ``cfg``'s method."""
    if cfg.method == FIXED:
        return newcombe_interval(xc, nc, xb, nb, cfg.z)
    return confidence_sequence(xc, nc, xb, nb, cfg.alpha, cfg.tau)


def compare_shares(xc: int, nc: int, xb: int, nb: int, cfg: TestConfig) -> ShareComparison:
    """Flagged ``xc`` of ``nc`` candidate answers vs ``xb`` of ``nb`` baseline answers."""
    xc, xb = max(0, min(xc, nc)), max(0, min(xb, nb))  # counters read at one scrape never disagree; stay safe
    lower, upper = difference_bounds(xc, nc, xb, nb, cfg)
    return ShareComparison(xb / nb if nb else 0.0, xc / nc if nc else 0.0, lower, upper, cfg.method)


def rolls_back(c: ShareComparison, cfg: TestConfig) -> bool:
    """The decision rule: the lower bound of the increase is above the tolerance."""
    return c.lower > cfg.max_increase
