"""Confidence that means probability: a fitted map from a judge's raw confidence to P(verdict right).

An offline judge's confidence is a score its rules or model produce ("how explicit the
evidence is"), not a probability: measured on dev, the heuristic's 0.95 verdicts were right
less often than 95% of the time. A cascade that escalates "the claims below 0.8" needs the
second reading. ``ConfidenceMap`` is a monotone, piecewise-linear map fitted by isotonic
regression on labelled claims (``claimwatch calibrate FILE --fit-confidence OUT``, see
``claimwatch.confidence.fit_isotonic``); maps for the shipped offline judges live in
``calibration/<judge>.json`` next to this module and are applied by the registry when
``confidence_calibration = "shipped"`` (the default).

``CalibratedJudge`` wraps a judge: same name, capabilities and verdicts, each verdict's
confidence passed through the map (ERROR verdicts keep theirs). Pure Python: no numpy on
the worker's path.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import (
    Claim,
    Extraction,
    Judge,
    JudgeObserver,
    SingleCallJudge,
    Verdict,
    Verification,
    preflight,
)

SHIPPED_DIR = Path(__file__).with_name("calibration")


@dataclass(frozen=True)
class ConfidenceMap:
    """Raw confidence -> calibrated confidence: linear between the fitted knots, flat outside them."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    judge: str = ""
    method: str = "isotonic"
    #: what it was fitted on and how well (written by the fitting command; informational)
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.x or len(self.x) != len(self.y):
            raise ConfigError("confidence map: x and y must be non-empty and of equal length")
        if any(b < a for a, b in zip(self.x, self.x[1:])) or any(b < a for a, b in zip(self.y, self.y[1:])):
            raise ConfigError("confidence map: x and y must be non-decreasing (a calibration map is monotone)")
        if not all(0.0 <= v <= 1.0 for v in (*self.x, *self.y)):
            raise ConfigError("confidence map: values must lie in [0, 1]")

    def __call__(self, raw: float) -> float:
        x, y = self.x, self.y
        if raw <= x[0]:
            return y[0]
        if raw >= x[-1]:
            return y[-1]
        i = bisect_right(x, raw)
        x0, x1, y0, y1 = x[i - 1], x[i], y[i - 1], y[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "method": self.method, "x": list(self.x), "y": list(self.y), **self.meta}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ConfidenceMap":
        try:
            x = tuple(float(v) for v in data["x"])
            y = tuple(float(v) for v in data["y"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"confidence map: needs numeric lists x and y ({exc})") from exc
        meta = {k: v for k, v in data.items() if k not in ("judge", "method", "x", "y")}
        return cls(x, y, str(data.get("judge", "")), str(data.get("method", "isotonic")), meta)

    @classmethod
    def load(cls, path: str | Path) -> "ConfidenceMap":
        return cls.from_json(read_json_object(path, "confidence map"))


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """A fitted map file's JSON object; ``ConfigError`` naming ``what`` when it can't be read or isn't one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path}: expected a JSON object")
    return data


def shipped_map(judge_name: str) -> ConfidenceMap | None:
    """The map shipped for a judge name, or None when there is none."""
    path = SHIPPED_DIR / f"{judge_name}.json"
    return ConfidenceMap.load(path) if path.is_file() else None


class CalibratedJudge:
    """A judge whose verdict confidences pass through a ``ConfidenceMap``; everything else is the inner judge's."""

    def __init__(self, inner: Judge, cmap: ConfidenceMap) -> None:
        self.inner = inner
        self.cmap = cmap
        self.name = inner.name

    @property
    def io_bound(self) -> bool:
        return self.inner.io_bound

    @property
    def extract_sees_contexts(self) -> bool:
        return self.inner.extract_sees_contexts

    def bind_metrics(self, observer: JudgeObserver) -> None:
        self.inner.bind_metrics(observer)

    def preflight(self) -> None:
        """The wrapped judge's start-up check."""
        preflight(self.inner)

    def models(self) -> tuple[str, ...]:
        from evaluator_worker.judges.fingerprint import models_of

        return models_of(self.inner)

    def fingerprint(self) -> dict[str, Any]:
        """The wrapped judge's fingerprint and the map's knots (judge identity)."""
        from evaluator_worker.judges.fingerprint import confidence_map_fields, fingerprint_of

        return {"inner": fingerprint_of(self.inner), "confidence_map": confidence_map_fields(self.cmap)}

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        return self.inner.extract_claims(answer, question, contexts=contexts)

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        return self._mapped(self.inner.verify(claims, contexts, question))

    def extract_and_verify(
        self, answer: str, question: str | None, contexts: Sequence[str]
    ) -> tuple[Extraction, Verification]:
        """The inner judge's single call (or its extraction with the contexts, then verify), confidences mapped."""
        if isinstance(self.inner, SingleCallJudge):
            extraction, verification = self.inner.extract_and_verify(answer, question, contexts)
        else:
            extraction = self.inner.extract_claims(answer, question, contexts=contexts)
            verification = self.inner.verify(extraction.claims, contexts, question)
        return extraction, self._mapped(verification)

    def _mapped(self, out: Verification) -> Verification:
        out.verdicts = [
            v if v.verdict == Verdict.ERROR else v.model_copy(update={"confidence": round(self.cmap(v.confidence), 4)})
            for v in out.verdicts
        ]
        return out


def calibrated(judge: Judge, mode: str) -> Judge:
    """``judge`` with confidence calibration applied per ``mode``: ``none``, ``shipped`` (the map for its name,
    when one is shipped) or a path to a map file (applied when the map names this judge, or names none)."""
    if mode == "none":
        return judge
    cmap = shipped_map(judge.name) if mode == "shipped" else ConfidenceMap.load(mode)
    if cmap is None or (cmap.judge and cmap.judge != judge.name):
        return judge
    return CalibratedJudge(judge, cmap)
