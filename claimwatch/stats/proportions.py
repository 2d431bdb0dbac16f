"""Binomial proportions: Wilson score interval, Newcombe's difference interval, the pooled z-test."""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (``(0, 1)`` when ``n == 0``)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(x1: float, n1: float, x2: float, n2: float, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``x1/n1 - x2/n2`` (Newcombe 1998, method 10)."""
    p1, p2 = (x1 / n1 if n1 else 0.0), (x2 / n2 if n2 else 0.0)
    l1, u1 = wilson_interval(x1, n1, z)
    l2, u2 = wilson_interval(x2, n2, z)
    d = p1 - p2
    lower = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    upper = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return lower, upper


def z_test_p_value(x1: float, n1: float, x2: float, n2: float) -> float:
    """One-sided pooled two-proportion z-test p-value for H1: p1 > p2."""
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    diff = x1 / n1 - x2 / n2
    if se == 0:
        return 0.0 if diff > 0 else 1.0
    return 1 - NormalDist().cdf(diff / se)
