"""An always-valid one-sided test and confidence sequence for a difference of two proportions.

The normal-mixture martingale (Robbins 1970; the mixture SPRT of Johari, Pekelis and Walsh,
"Always valid inference", 2017, which online-experiment platforms use for continuous
monitoring; the asymptotic confidence sequences of Waudby-Smith et al. 2021), one-sided: for
an estimate ``d`` of the difference with variance ``V``, and a hypothesised difference
``theta``, mix the likelihood ratio of every larger difference ``theta + lambda`` over a
half-normal ``lambda ~ |N(0, tau^2)|``:

    M(theta) = 2 sqrt(V / (V + tau^2)) exp(c^2 / 2) Phi(c),   c = (d - theta) tau / sqrt(V (V + tau^2))

Under any true difference ``<= theta`` this is a nonnegative supermartingale with expectation
at most 1 (asymptotically: the estimate's cumulative sums behave like a Brownian motion), so by
Ville's inequality the chance that it *ever* reaches ``1 / alpha``, at any number of looks, is at
most ``alpha``. The gate rejects ``difference <= theta`` when

    ln 2 + 0.5 ln(V / (V + tau^2)) + c^2 / 2 + ln L(c) >= ln(1 / alpha),   c > 0

with ``L(c) = max(1/2, 1 - phi(c) / c) <= Phi(c)`` (the Mills-ratio bound: closed form, so the
same test is written in PromQL, and smaller than ``Phi``, so the test only gets more
conservative). :func:`log_evidence` is the left side minus the right side.

The statistic depends on ``d - theta`` and ``V`` only, so the set of rejected ``theta`` is
``theta < d - h(V)``: ``d - h(V)`` is the always-valid lower confidence bound, and ``d + h(V)``
(the mirror image) the upper one. ``tau`` places the boundary's sweet spot (about
``V = tau^2 / 10``); 0.1 suits a few hundred answers per release at flagged shares of 10-50%.
A sequence pays for its freedom: at its best it is about 1.7 times the width of a single-look
one-sided 95% interval.

The variance uses each proportion shrunk as ``(x + 1) / (n + 2)`` so that 0 of n or n of n
does not give a zero-width interval. ``claimwatch/gate/promql.py`` writes :func:`log_evidence`
in PromQL for the Argo analysis.
"""

from __future__ import annotations

import math

DEFAULT_TAU = 0.1
_SQRT_2PI = math.sqrt(2 * math.pi)


def shrunk(x: float, n: float) -> float:
    """``(x + 1) / (n + 2)``: the proportion the variance is computed from."""
    return (x + 1) / (n + 2)


def difference_variance(x1: float, n1: float, x2: float, n2: float) -> float:
    """Variance of ``x1/n1 - x2/n2`` (unpooled, shrunk proportions)."""
    if n1 <= 0 or n2 <= 0:
        return math.inf
    p1, p2 = shrunk(x1, n1), shrunk(x2, n2)
    return p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2


def _check(alpha: float, tau: float) -> None:
    if not (0 < alpha < 0.5 and math.isfinite(tau) and tau > 0):
        raise ValueError("alpha must be in (0, 0.5) and tau a finite number > 0")


def mills_lower(c: float) -> float:
    """``max(1/2, 1 - phi(c)/c)``: a lower bound on ``Phi(c)`` for ``c > 0``."""
    return max(0.5, 1 - math.exp(-c * c / 2) / _SQRT_2PI / c)


def log_evidence(excess: float, variance: float, alpha: float, tau: float = DEFAULT_TAU) -> float:
    """``ln M - ln(1/alpha)`` at ``excess = d - theta`` (``-inf`` when ``excess <= 0``): > 0 rejects."""
    _check(alpha, tau)
    if excess <= 0 or math.isinf(variance):
        return -math.inf
    if variance <= 0:
        return math.inf
    t2 = tau * tau
    c = excess * tau / math.sqrt(variance * (variance + t2))
    return (
        math.log(2)
        + 0.5 * math.log(variance / (variance + t2))
        + c * c / 2
        + math.log(mills_lower(c))
        + math.log(alpha)
    )


def half_width(variance: float, alpha: float, tau: float = DEFAULT_TAU) -> float:
    """``h(V)``: the excess at which :func:`log_evidence` reaches 0 (the bound's distance from ``d``)."""
    _check(alpha, tau)
    if math.isinf(variance):
        return math.inf
    if variance <= 0:
        return 0.0
    t2 = tau * tau
    k = tau / math.sqrt(variance * (variance + t2))  # c = k * excess
    target = math.log(1 / (2 * alpha)) + 0.5 * math.log((variance + t2) / variance)  # c^2/2 + ln L(c) = target
    lo, hi = math.sqrt(2 * target), math.sqrt(2 * (target + math.log(2)))  # ln L in [ln 1/2, 0]
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * mid / 2 + math.log(mills_lower(mid)) < target else (lo, mid)
    return hi / k


def confidence_sequence(
    x1: float, n1: float, x2: float, n2: float, alpha: float, tau: float = DEFAULT_TAU
) -> tuple[float, float]:
    """Always-valid one-sided ``(lower, upper)`` bounds for ``x1/n1 - x2/n2``, each at ``alpha``.

    ``(-1, 1)`` when a side is empty.
    """
    if n1 <= 0 or n2 <= 0:
        return -1.0, 1.0
    d = x1 / n1 - x2 / n2
    h = half_width(difference_variance(x1, n1, x2, n2), alpha, tau)
    return d - h, d + h


def rejects(x1: float, n1: float, x2: float, n2: float, theta: float, alpha: float, tau: float = DEFAULT_TAU) -> bool:
    """Reject ``x1/n1 - x2/n2 <= theta`` (valid over any number of looks)."""
    if n1 <= 0 or n2 <= 0:
        return False
    excess = x1 / n1 - x2 / n2 - theta
    return log_evidence(excess, difference_variance(x1, n1, x2, n2), alpha, tau) > 0
