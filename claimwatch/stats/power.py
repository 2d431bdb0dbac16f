"""Power, said out loud: what a test can detect with given counts, and what it needs.

Normal approximations around the pooled rate ``p`` (both releases at ``p`` under H0):

- the test's margin ``m(nc, nb)``: how far the observed difference must sit above the
  tolerance to roll back: ``z_(1-alpha) * se`` (fixed) or the mixture half-width ``h(se^2)``
  (sequential), ``se^2 = p (1 - p) (1/nc + 1/nb)``;
- smallest detectable increase (at power ``1 - beta``): ``max_increase + m + z_(1-beta) * se``;
- answers needed to settle observed counts (if the difference is real and stays): scale both releases'
  counts by ``k`` (the shares kept) until the gate's own test rolls back, the very statistic it decides on
  (the sequential test's shrunk shares included), so a HOLD never reads "0 more answers".
"""

from __future__ import annotations

import math
from statistics import NormalDist

from claimwatch.stats.answer_share import FIXED, TestConfig, compare_shares
from claimwatch.stats.sequential import half_width

#: a rate assumed when nothing is flagged yet (the margin at p = 0 would be 0)
FLOOR_RATE = 0.01


def _bernoulli(p: float) -> float:
    p = min(max(p, FLOOR_RATE), 1 - FLOOR_RATE)
    return p * (1 - p)


def _variance(p: float, nc: float, nb: float, pb: float | None = None) -> float:
    """Variance of the difference: both releases at ``p``, or the candidate at ``p`` and the baseline at ``pb``."""
    return _bernoulli(p) / nc + _bernoulli(p if pb is None else pb) / nb


def margin(p: float, nc: float, nb: float, cfg: TestConfig, pb: float | None = None) -> float:
    """How far above ``max_increase`` the observed difference must be to roll back."""
    if nc <= 0 or nb <= 0:
        return math.inf
    v = _variance(p, nc, nb, pb)
    return cfg.z * math.sqrt(v) if cfg.method == FIXED else half_width(v, cfg.alpha, cfg.tau)


def min_detectable_increase(p: float, nc: float, nb: float, cfg: TestConfig) -> float:
    """Smallest true rise of the flagged share the test catches with probability ``cfg.power``."""
    if nc <= 0 or nb <= 0:
        return math.inf
    z_beta = NormalDist().inv_cdf(cfg.power)
    return cfg.max_increase + margin(p, nc, nb, cfg) + z_beta * math.sqrt(_variance(p, nc, nb))


def scale_to_settle(
    xc: float, nc: float, xb: float, nb: float, cfg: TestConfig, max_scale: float = 1e4
) -> float | None:
    """Factor ``k > 1`` on both releases' counts (flagged and answers, the shares kept) at which the gate's test
    would roll back; ``1.0`` when it already does.

    ``None`` when the observed difference is within the tolerance (nothing to settle: more data would promote)
    or would need more than ``max_scale`` times the current answers.
    """
    if nc <= 0 or nb <= 0 or xc / nc - xb / nb - cfg.max_increase <= 0:
        return None

    def settled(k: float) -> bool:
        return compare_shares(xc * k, nc * k, xb * k, nb * k, cfg).rolls_back

    if settled(1.0):
        return 1.0
    if not settled(max_scale):
        return None
    lo, hi = 1.0, max_scale
    for _ in range(60):  # bisection: at fixed shares the test's evidence grows with k
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if settled(mid) else (mid, hi)
    return hi


def answers_for_power(increase: float, p: float, cfg: TestConfig, ratio: float = 1.0, max_n: int = 10**7) -> int | None:
    """Candidate answers (baseline ``ratio`` times as many) to detect ``increase`` with ``cfg.power``."""
    if increase <= cfg.max_increase:
        return None
    lo, hi = 1, max_n
    if min_detectable_increase(p, hi, hi * ratio, cfg) > increase:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if min_detectable_increase(p, mid, mid * ratio, cfg) <= increase:
            hi = mid
        else:
            lo = mid + 1
    return lo
