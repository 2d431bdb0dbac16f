"""Risk-coverage, errors caught by escalation and calibration error of a judge's confidence."""

from __future__ import annotations

import pytest

from claimwatch.confidence import Scored, aurc, ece, errors_caught, risk_coverage, summary, write_reliability_png


def _items(pairs):
    return [Scored(c, ok) for c, ok in pairs]


def test_confidence_that_ranks_errors_last_catches_them_all_when_escalating_the_bottom():
    """Errors at the lowest confidence: escalating that share catches every error; the kept risk is 0."""
    items = _items([(0.9, True)] * 8 + [(0.2, False)] * 2)
    assert errors_caught(items, 0.2) == 1.0
    assert risk_coverage(items)[7] == (0.8, 0.0)
    assert aurc(items) < 0.05


def test_overconfident_errors_are_not_caught():
    """Errors at the highest confidence (the cascade's failure mode): escalating 30% catches none of them."""
    items = _items([(0.99, False)] * 2 + [(0.5, True)] * 8)
    assert errors_caught(items, 0.3) == 0.0
    assert aurc(items) > 2 * 0.2  # far worse than the error rate (0.2) a confidence-blind order gives on average


def test_errors_without_a_verdict_are_escalated_first():
    """A claim the judge could not judge (no confidence) is the first escalated."""
    items = _items([(None, False), (0.9, True), (0.8, True), (0.7, True)])
    assert errors_caught(items, 0.25) == 1.0


def test_ece_is_zero_for_calibrated_bins_and_the_gap_otherwise():
    """Bins whose accuracy equals their confidence give ECE 0; always-wrong at 0.95 gives 0.95."""
    calibrated = _items([(0.75, True)] * 3 + [(0.75, False)] + [(0.25, True)] + [(0.25, False)] * 3)
    assert ece(calibrated) == pytest.approx(0.0)
    assert ece(_items([(0.95, False)] * 4)) == pytest.approx(0.95)


def test_summary_keys_and_the_reliability_png(tmp_path):
    """The JSON block has the documented keys; --plot writes a PNG."""
    items = _items([(0.9, True), (0.8, False), (0.6, True), (0.3, False)])
    s = summary(items)
    assert set(s) == {"n", "errors", "ece", "aurc", "errors_caught_at_escalated", "risk_at_coverage", "reliability"}
    assert set(s["errors_caught_at_escalated"]) == {"10%", "20%", "30%", "50%"}
    out = tmp_path / "rel.png"
    write_reliability_png(items, str(out), "test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
