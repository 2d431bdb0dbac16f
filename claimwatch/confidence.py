"""Does a judge's confidence separate its right verdicts from its wrong ones?

What a cascade needs from its first judge: escalating the claims it is least sure of
should catch most of its mistakes. Pure functions over ``(confidence, correct)`` pairs:

- **risk-coverage**: claims sorted by confidence, most confident first; keeping the top
  ``k`` (escalating the rest), the risk is the error rate among the kept. ``aurc`` is the
  mean risk over every ``k`` (lower is better; a judge whose confidence is noise has an
  AURC near its error rate, a perfect one near 0).
- **errors caught at X% escalated**: escalate the ``X`` share with the lowest confidence;
  the share of all the judge's errors that are among them.
- **expected calibration error** (10 equal-width bins): the mean gap between confidence and
  accuracy, weighted by bin size; and the per-bin table of a reliability diagram.

A verdict the judge could not give (ERROR) has no confidence: it is always escalated, so
it counts as the least confident.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

#: escalation shares reported by default
ESCALATION_SHARES = (0.1, 0.2, 0.3, 0.5)
ECE_BINS = 10


@dataclass(frozen=True)
class Scored:
    """One judged item: the judge's confidence (None when it gave no verdict) and whether it was right."""

    confidence: float | None
    correct: bool


def _order(items: Sequence[Scored]) -> list[Scored]:
    """Most confident first; no-confidence items last (escalated first)."""
    return sorted(items, key=lambda s: -1.0 if s.confidence is None else s.confidence, reverse=True)


def risk_coverage(items: Sequence[Scored]) -> list[tuple[float, float]]:
    """``(coverage, risk)`` for keeping the ``k`` most confident items, ``k = 1..n``."""
    ordered = _order(items)
    out, errors = [], 0
    for k, s in enumerate(ordered, start=1):
        errors += not s.correct
        out.append((k / len(ordered), errors / k))
    return out


def aurc(items: Sequence[Scored]) -> float | None:
    """Area under the risk-coverage curve (mean risk over every coverage point); None without items."""
    curve = risk_coverage(items)
    return sum(r for _, r in curve) / len(curve) if curve else None


def errors_caught(items: Sequence[Scored], share: float) -> float | None:
    """Share of all errors among the ``share`` least confident items (what escalating them would catch)."""
    errors = sum(not s.correct for s in items)
    if not items or errors == 0:
        return None
    escalated = _order(items)[len(items) - math.ceil(share * len(items)):] if share > 0 else []
    return sum(not s.correct for s in escalated) / errors


def reliability(items: Sequence[Scored], bins: int = ECE_BINS) -> list[dict[str, Any]]:
    """Per confidence bin: its range, how many items, their mean confidence and their accuracy."""
    rows = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [s for s in items if s.confidence is not None
                  and (lo <= s.confidence < hi or (b == bins - 1 and s.confidence == 1.0))]
        rows.append({
            "bin": f"{lo:.1f}-{hi:.1f}", "n": len(inside),
            "confidence": sum(s.confidence or 0.0 for s in inside) / len(inside) if inside else None,
            "accuracy": sum(s.correct for s in inside) / len(inside) if inside else None,
        })
    return rows


def ece(items: Sequence[Scored], bins: int = ECE_BINS) -> float | None:
    """Expected calibration error: sum over bins of |accuracy - confidence| x share of items."""
    rows = [r for r in reliability(items, bins) if r["n"]]
    total = sum(r["n"] for r in rows)
    if not total:
        return None
    return sum(abs(r["accuracy"] - r["confidence"]) * r["n"] for r in rows) / total


def summary(items: Sequence[Scored], shares: Sequence[float] = ESCALATION_SHARES) -> dict[str, Any]:
    """The JSON block ``claimwatch calibrate`` reports under ``confidence`` (keys in docs/judge-quality.md)."""
    curve = risk_coverage(items)
    return {
        "n": len(items),
        "errors": sum(not s.correct for s in items),
        "ece": ece(items),
        "aurc": aurc(items),
        "errors_caught_at_escalated": {f"{round(s * 100)}%": errors_caught(items, s) for s in shares},
        "risk_at_coverage": {f"{round(c * 100)}%": _risk_at(curve, c) for c in (0.5, 0.7, 0.9, 1.0)},
        "reliability": reliability(items),
    }


def _risk_at(curve: list[tuple[float, float]], coverage: float) -> float | None:
    return next((r for c, r in curve if c >= coverage - 1e-9), None)


def reliability_spec(items: Sequence[Scored], title: str) -> dict[str, Any]:
    """A Vega-Lite reliability diagram: accuracy per confidence bin against the diagonal."""
    rows = [r for r in reliability(items) if r["n"]]
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title, "width": 360, "height": 360,
        "layer": [
            {"data": {"values": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]}, "mark": {"type": "line", "color": "#999",
                                                                             "strokeDash": [4, 4]},
             "encoding": {"x": {"field": "x", "type": "quantitative", "title": "confidence"},
                          "y": {"field": "y", "type": "quantitative", "title": "accuracy"}}},
            {"data": {"values": rows}, "mark": {"type": "point", "filled": True},
             "encoding": {"x": {"field": "confidence", "type": "quantitative", "scale": {"domain": [0, 1]}},
                          "y": {"field": "accuracy", "type": "quantitative", "scale": {"domain": [0, 1]}},
                          "size": {"field": "n", "type": "quantitative", "title": "claims"}}},
        ],
    }


def write_reliability_png(items: Sequence[Scored], path: str, title: str) -> None:
    """The reliability diagram as a PNG (``vl-convert``, the ``report`` extra)."""
    try:
        import vl_convert
    except ImportError as exc:
        from contract.errors import ConfigError

        raise ConfigError("calibrate --plot needs vl-convert: pip install 'claimwatch[report]'") from exc
    with open(path, "wb") as fh:
        fh.write(vl_convert.vegalite_to_png(reliability_spec(items, title)))
