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

from contract.errors import ConfigError

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
    escalated = _order(items)[len(items) - math.ceil(share * len(items)) :] if share > 0 else []
    return sum(not s.correct for s in escalated) / errors


def reliability(items: Sequence[Scored], bins: int = ECE_BINS) -> list[dict[str, Any]]:
    """Per confidence bin: its range, how many items, their mean confidence and their accuracy."""
    rows = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [
            s
            for s in items
            if s.confidence is not None and (lo <= s.confidence < hi or (b == bins - 1 and s.confidence == 1.0))
        ]
        rows.append(
            {
                "bin": f"{lo:.1f}-{hi:.1f}",
                "n": len(inside),
                "confidence": sum(s.confidence or 0.0 for s in inside) / len(inside) if inside else None,
                "accuracy": sum(s.correct for s in inside) / len(inside) if inside else None,
            }
        )
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
        "title": title,
        "width": 360,
        "height": 360,
        "layer": [
            {
                "data": {"values": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]},
                "mark": {"type": "line", "color": "#999", "strokeDash": [4, 4]},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative", "title": "confidence"},
                    "y": {"field": "y", "type": "quantitative", "title": "accuracy"},
                },
            },
            {
                "data": {"values": rows},
                "mark": {"type": "point", "filled": True},
                "encoding": {
                    "x": {"field": "confidence", "type": "quantitative", "scale": {"domain": [0, 1]}},
                    "y": {"field": "accuracy", "type": "quantitative", "scale": {"domain": [0, 1]}},
                    "size": {"field": "n", "type": "quantitative", "title": "claims"},
                },
            },
        ],
    }


def write_reliability_png(items: Sequence[Scored], path: str, title: str) -> None:
    """The reliability diagram as a PNG (``vl-convert``, the ``report`` extra)."""
    try:
        import vl_convert
    except ImportError as exc:
        raise ConfigError("calibrate --plot needs vl-convert: pip install 'claimwatch[report]'") from exc
    with open(path, "wb") as fh:
        fh.write(vl_convert.vegalite_to_png(reliability_spec(items, title)))


# --------------------------------------------------------------------------- fitting a calibration map

#: pseudo-claims pulling each fitted block's accuracy towards the overall accuracy, so a block of two claims
#: does not map a confidence to exactly 0 or 1 (failure type: a small dev set's extremes)
PRIOR_WEIGHT = 2.0
CV_FOLDS = 5
RANK_TILT = 0.005


def fit_isotonic(items: Sequence[Scored], prior_weight: float = PRIOR_WEIGHT) -> tuple[list[float], list[float]]:
    """Knots ``(x, y)`` of a monotone map raw confidence -> P(right): isotonic regression (scipy) of
    right/wrong on the distinct confidence levels (weighted by their counts), each fitted block then shrunk
    towards the overall accuracy by ``prior_weight`` pseudo-claims and made monotone again. Items without a
    confidence are ignored."""
    try:
        from scipy.optimize import isotonic_regression
    except ImportError as exc:
        raise ConfigError("fitting a confidence map needs scipy: pip install 'claimwatch[calibration]'") from exc
    rated = [s for s in items if s.confidence is not None]
    if not rated:
        raise ConfigError("no verdicts with a confidence to fit a map on")
    overall = sum(s.correct for s in rated) / len(rated)
    levels: dict[float, list[int]] = {}
    for s in rated:
        c = levels.setdefault(round(float(s.confidence or 0.0), 3), [0, 0])
        c[0] += 1
        c[1] += s.correct
    xs = sorted(levels)
    ws = [float(levels[x][0]) for x in xs]
    fitted = list(isotonic_regression([levels[x][1] / levels[x][0] for x in xs], weights=ws, increasing=True).x)
    # shrink each block (a run of levels with one fitted value) by its total count
    shrunk, i = [0.0] * len(xs), 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and abs(fitted[j + 1] - fitted[i]) < 1e-12:
            j += 1
        n = sum(ws[i : j + 1])
        value = (fitted[i] * n + prior_weight * overall) / (n + prior_weight)
        shrunk[i : j + 1] = [value] * (j + 1 - i)
        i = j + 1
    final = [round(float(min(max(v, 0.0), 1.0)), 4) for v in isotonic_regression(shrunk, weights=ws, increasing=True).x]
    # the first and last level of each flat run are enough knots (the map is linear in between); each run is
    # tilted by +-RANK_TILT so the map stays strictly increasing inside it: a cascade escalating the least
    # confident claims keeps the raw ranking instead of a tie (failure type: calibration erasing the order)
    keep = [i for i in range(len(xs)) if i in (0, len(xs) - 1) or final[i - 1] != final[i] or final[i + 1] != final[i]]
    kx, ky = [xs[i] for i in keep], [final[i] for i in keep]
    for i in range(len(kx) - 1):
        if ky[i] == ky[i + 1] and (i == 0 or ky[i - 1] != ky[i]):
            ky[i], ky[i + 1] = max(ky[i] - RANK_TILT, 0.0), min(ky[i + 1] + RANK_TILT, 1.0)
    for i in range(1, len(ky)):
        ky[i] = max(ky[i], ky[i - 1])
    return kx, [round(v, 4) for v in ky]


def remapped(items: Sequence[Scored], x: Sequence[float], y: Sequence[float]) -> list[Scored]:
    """``items`` with each confidence passed through the map."""
    from evaluator_worker.judges.calibrated import ConfidenceMap

    cmap = ConfidenceMap(tuple(x), tuple(y))
    return [Scored(None if s.confidence is None else cmap(s.confidence), s.correct) for s in items]


def cross_validated_ece(items: Sequence[Scored], folds: int = CV_FOLDS) -> float | None:
    """ECE of maps fitted on ``folds - 1`` folds and applied to the held-back one (items dealt round-robin in
    their given order): an honest estimate of the fitted map's ECE on claims it did not see."""
    if len(items) < folds * 2:
        return None
    out: list[Scored] = []
    for k in range(folds):
        train = [s for i, s in enumerate(items) if i % folds != k]
        test = [s for i, s in enumerate(items) if i % folds == k]
        x, y = fit_isotonic(train)
        out += remapped(test, x, y)
    return ece(out)


def fit_map(items: Sequence[Scored], judge: str, fitted_on: str) -> dict[str, Any]:
    """The JSON of a confidence map (``evaluator_worker.judges.calibrated.ConfidenceMap``) fitted on ``items``,
    with what it was fitted on and its ECE raw, fitted (in sample) and cross-validated."""
    x, y = fit_isotonic(items)
    cv = cross_validated_ece(items)
    return {
        "judge": judge,
        "method": "isotonic",
        "x": x,
        "y": y,
        "fitted_on": fitted_on,
        "n": len(items),
        "prior_weight": PRIOR_WEIGHT,
        "ece_raw": round(ece(items) or 0.0, 4),
        "ece_fitted": round(ece(remapped(items, x, y)) or 0.0, 4),
        "ece_cross_validated": None if cv is None else round(cv, 4),
    }
