"""Newcombe's paired-difference interval keeps its coverage (simulation), is symmetric, and says nothing on no data."""

from __future__ import annotations

import random

import pytest

from claimwatch.stats.proportions import paired_difference_interval

Z95 = 1.959963984540054


def test_swapping_the_measures_negates_the_interval():
    """The interval of p2 - p1 is the negated interval of p1 - p2 (the test is symmetric in the two judges)."""
    lower, upper = paired_difference_interval(12, 5, 1, 2, Z95)
    back = paired_difference_interval(12, 1, 5, 2, Z95)
    assert back == pytest.approx((-upper, -lower))
    assert lower < 0.2 < upper  # the point difference (17 - 13) / 20 lies inside


def test_identical_measures_give_an_interval_around_zero_and_an_empty_table_says_nothing():
    """No discordant items: the interval contains 0 and is narrow for many items; no items: (-1, 1)."""
    lower, upper = paired_difference_interval(100, 0, 0, 900, Z95)
    assert lower <= 0 <= upper and upper - lower < 0.01
    assert paired_difference_interval(0, 0, 0, 0, Z95) == (-1.0, 1.0)


@pytest.mark.parametrize(
    ("cells", "n"),
    [
        ((0.08, 0.04, 0.02, 0.86), 300),  # two judges that mostly agree, the candidate a little more lenient
        ((0.20, 0.10, 0.10, 0.60), 200),  # no shift, moderate agreement
        ((0.05, 0.01, 0.15, 0.79), 500),  # a stricter candidate
        ((0.30, 0.05, 0.05, 0.60), 100),  # few answers
    ],
)
@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_coverage_at_nominal_95_percent(cells, n):
    """Over 2,000 simulated tables the interval covers the true difference at least 93% of the time."""
    rng = random.Random(7)
    true = (cells[0] + cells[1]) - (cells[0] + cells[2])
    covered = 0
    reps = 2_000
    for _ in range(reps):
        counts = [0, 0, 0, 0]
        for i in rng.choices(range(4), weights=cells, k=n):
            counts[i] += 1
        lower, upper = paired_difference_interval(*counts, Z95)
        covered += lower <= true <= upper
    assert covered / reps >= 0.93
