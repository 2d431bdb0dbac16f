"""Answer risk: one calibrated number per answer, so long answers are not flagged for being long.

The shipped answer rule ("flagged when any claim is UNSUPPORTED or CONTRADICTED") compounds claim
errors: with an offline judge flagging ~46% of true real-world sentences, a ten-claim faithful answer is
flagged almost surely, and on real labelled answers answer length alone predicts "flagged"
(docs/judge-quality.md). Instead:

1. **Claim probability** ``P(claim not grounded | verdict, confidence)``: the judge's not-grounded score
   ``s`` (the confidence of an UNSUPPORTED/CONTRADICTED verdict, 1 - the confidence of a SUPPORTED one;
   ERROR verdicts carry no evidence and are left out) passed through a monotone map fitted by isotonic
   regression on human-labelled claims (``claimwatch calibrate --fit-risk --judge NAME``,
   :mod:`claimwatch.risk_fit`).
2. **Answer risk**: the claim probabilities aggregated by the aggregator chosen on the real dev answers
   (``noisy_or``, ``max``, ``mean`` or ``noisy_or_norm``: the geometric-mean, length-normalised noisy-OR).
3. **At risk**: ``answer_risk >= threshold``, the threshold fitted on dev (the risk that catches 70% of
   the dev hallucinated answers).

The map, aggregator and threshold live in ``calibration/<judge>.risk.json`` next to the judge's confidence
map, with the sets, splits, counts, date and the dev numbers they were chosen on. A judge without that
file (LLM judges until you fit one on your labels, your own judges) gets :data:`DEFAULT`, **not fitted**:
verdict-based claim probabilities (1 for UNSUPPORTED / CONTRADICTED, 0 for SUPPORTED), ``max``, threshold
0.5, i.e. exactly the shipped any-claim rule, with its compounding (an uncalibrated confidence read as a
probability would not be better: a judge's 0.5 default would put every answer at risk). Fit a map on your
own labels to leave it (``--fit-risk`` on the real sets, ``--risk-out`` to keep it elsewhere).

Pure Python, like :mod:`evaluator_worker.judges.calibrated`: no numpy on the worker's path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.calibrated import SHIPPED_DIR, ConfidenceMap, read_json_object

__all__ = [
    "AGGREGATORS",
    "DEFAULT",
    "RiskMap",
    "aggregate",
    "not_grounded_score",
    "risk_map",
    "risk_path",
]

#: verdicts that flag a claim (their confidence is the not-grounded score)
FLAG_VERDICTS = frozenset({"UNSUPPORTED", "CONTRADICTED"})
#: the answer aggregators compared on dev; each takes claim probabilities in [0, 1]
AGGREGATORS: tuple[str, ...] = ("noisy_or", "max", "mean", "noisy_or_norm")


def not_grounded_score(verdict: str, confidence: float | None) -> float | None:
    """The judge's own not-grounded score of one claim: confidence of a flag, 1 - confidence of a pass; None for
    ERROR (no evidence either way)."""
    v = str(getattr(verdict, "value", verdict)).upper()
    c = 0.5 if confidence is None else min(max(float(confidence), 0.0), 1.0)
    if v in FLAG_VERDICTS:
        return c
    if v == "SUPPORTED":
        return 1.0 - c
    return None


def aggregate(name: str, probs: Sequence[float]) -> float | None:
    """Answer risk from claim probabilities (None without any): ``noisy_or`` 1 - prod(1 - p) (P(any claim not
    grounded) if claims were independent: grows with the number of claims), ``max``, ``mean``, ``noisy_or_norm``
    1 - prod(1 - p) ** (1/n) (noisy-OR per claim: does not grow with length)."""
    if not probs:
        return None
    ps = [min(max(p, 0.0), 1.0) for p in probs]
    if name == "max":
        return max(ps)
    if name == "mean":
        return sum(ps) / len(ps)
    if name in ("noisy_or", "noisy_or_norm"):
        if any(p >= 1.0 for p in ps):
            return 1.0
        log_keep = sum(math.log1p(-p) for p in ps)
        return 1.0 - math.exp(log_keep / (len(ps) if name == "noisy_or_norm" else 1))
    raise ConfigError(f"unknown answer-risk aggregator {name!r}; expected one of {', '.join(AGGREGATORS)}")


@dataclass(frozen=True)
class RiskMap:
    """One judge's claim map (None: verdict-based, the unfitted default), aggregator and alert threshold."""

    judge: str
    claim_map: ConfidenceMap | None = None
    aggregator: str = "max"
    threshold: float = 0.5
    #: fitted on labelled data (False: :data:`DEFAULT`)
    fitted: bool = False
    #: what it was fitted on and the dev numbers it was chosen by (written by the fitting command)
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.aggregator not in AGGREGATORS:
            raise ConfigError(f"risk map {self.judge!r}: unknown aggregator {self.aggregator!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"risk map {self.judge!r}: threshold must lie in [0, 1]")

    def claim_probability(self, verdict: str, confidence: float | None) -> float | None:
        """P(claim not grounded | verdict, confidence); None for ERROR."""
        s = not_grounded_score(verdict, confidence)
        if s is None:
            return None
        if self.claim_map is None:  # not fitted: the verdict alone
            return 1.0 if str(getattr(verdict, "value", verdict)).upper() in FLAG_VERDICTS else 0.0
        return self.claim_map(s)

    def answer_risk(self, verdicts: Iterable[tuple[str, float | None]]) -> float | None:
        """Risk of one answer from its claims' (verdict, confidence); None when no claim was judged."""
        probs = [p for v, c in verdicts if (p := self.claim_probability(v, c)) is not None]
        risk = aggregate(self.aggregator, probs)
        return None if risk is None else round(risk, 4)

    def at_risk(self, risk: float | None) -> bool | None:
        return None if risk is None else risk >= self.threshold

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "judge": self.judge,
            "kind": "answer_risk",
            "aggregator": self.aggregator,
            "threshold": self.threshold,
            "claim_map": None if self.claim_map is None else {"x": list(self.claim_map.x), "y": list(self.claim_map.y)},
        }
        return {**out, **self.meta}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RiskMap":
        try:
            cm = data.get("claim_map")
            cmap = None if cm is None else ConfidenceMap(tuple(cm["x"]), tuple(cm["y"]), str(data.get("judge", "")))
            meta = {k: v for k, v in data.items() if k not in ("judge", "kind", "aggregator", "threshold", "claim_map")}
            return cls(
                judge=str(data.get("judge", "")),
                claim_map=cmap,
                aggregator=str(data["aggregator"]),
                threshold=float(data["threshold"]),
                fitted=True,
                meta=meta,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"risk map: needs aggregator, threshold and claim_map x/y ({exc})") from exc

    @classmethod
    def load(cls, path: str | Path) -> "RiskMap":
        return cls.from_json(read_json_object(path, "risk map"))


#: judges without a fitted file: verdict-based, max, 0.5 = the any-claim rule (not fitted)
DEFAULT = RiskMap(
    judge="", meta={"note": "not fitted: verdict-based claim probabilities, max, 0.5 (the any-claim rule)"}
)


def risk_path(judge_name: str) -> Path:
    """Where the risk map of ``judge_name`` is shipped (and where ``--fit-risk`` writes it)."""
    return SHIPPED_DIR / f"{judge_name}.risk.json"


@lru_cache(maxsize=64)
def risk_map(judge_name: str) -> RiskMap:
    """The fitted risk map shipped for a judge name, else :data:`DEFAULT` (named after the judge)."""
    path = risk_path(judge_name)
    if path.is_file():
        return RiskMap.load(path)
    return RiskMap(judge=judge_name, meta=dict(DEFAULT.meta))
