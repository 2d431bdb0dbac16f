"""Binomial proportions: Wilson score interval, Newcombe's difference intervals (independent and paired samples),
the pooled z-test, and the exact sign-flip test of paired differences (McNemar's, for 0/1 outcomes)."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Sequence


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


def paired_difference_interval(
    both: int, first_only: int, second_only: int, neither: int, z: float
) -> tuple[float, float]:
    """Interval for ``p1 - p2`` of two proportions measured on the same items (a 2x2 table: ``both`` items counted
    by both measures, ``first_only``, ``second_only``, ``neither``): Newcombe's hybrid score interval for paired
    data (Newcombe 1998, "Improved confidence intervals for the difference between binomial proportions based on
    paired data", method 10), Wilson intervals of both margins combined with the table's phi correlation (continuity-
    corrected as there).
    ``(-1, 1)`` for an empty table. Coverage by simulation: ``tests/unit/test_paired_interval.py``."""
    n = both + first_only + second_only + neither
    if n <= 0:
        return -1.0, 1.0
    x1, x2 = both + first_only, both + second_only
    p1, p2 = x1 / n, x2 / n
    l1, u1 = wilson_interval(x1, n, z)
    l2, u2 = wilson_interval(x2, n, z)
    denom = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    cross = both * neither - first_only * second_only
    # Newcombe's phi: a positive correlation shrunk by n/2 (continuity), a negative one kept, none for an empty margin
    corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
    phi = corrected / math.sqrt(denom) if denom else 0.0
    d = p1 - p2
    lower = d - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = d + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, lower), min(1.0, upper)


def sign_flip_p_value(differences: Sequence[int]) -> float:
    """One-sided exact sign-flip (randomisation) test that paired integer differences lean positive: the probability,
    with each difference's sign flipped at random (what swapping the two measurements of an item does under no
    change), of a sum at least the observed one. Differences of -1/0/+1 make it the exact McNemar test."""
    observed = sum(differences)
    sizes = [abs(d) for d in differences if d]
    if not sizes or observed <= 0:
        return 1.0
    # the distribution of sum(+-a_i), by dynamic programming over the reachable sums (offset by the largest)
    total = sum(sizes)
    dist = [0.0] * (2 * total + 1)
    dist[total] = 1.0
    for a in sizes:
        nxt = [0.0] * len(dist)
        for k, w in enumerate(dist):
            if w:
                nxt[k - a] += w / 2
                nxt[k + a] += w / 2
        dist = nxt
    return min(1.0, sum(dist[total + observed :]))


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
