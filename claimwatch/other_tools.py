"""The release report's "other tools" table: the RagaliQ, DeepEval, FActScore and PAS2-style numbers the worker
puts on every result (``parity``, ``consistency``: :mod:`evaluator_worker.parity`, :mod:`evaluator_worker.consistency`),
summed per release from the result records.

Teams arriving with those tools' numbers compare like for like here, baseline vs candidate, without a second
judge. None of these numbers decides anything: the gate decides on flagged answers (docs/gate.md). A record
without the object (switched off, shrunk to fit the topic, an older worker) is not counted in that column, and the
table says how many were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass
class Mean:
    """A running mean of the values given (``None`` values are not counted)."""

    total: float = 0.0
    n: int = 0

    def add(self, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.total += float(value)
            self.n += 1

    @property
    def value(self) -> float | None:
        return self.total / self.n if self.n else None


@dataclass
class OtherToolScores:
    """One release's other-tool numbers, from its result records."""

    #: answers whose result carried parity scores
    scored: int = 0
    #: share of answers passing RagaliQ's faithfulness (supported / judged >= its threshold) and hallucination checks
    faithfulness_pass: Mean = field(default_factory=Mean)
    hallucination_pass: Mean = field(default_factory=Mean)
    #: DeepEval's context hallucination (chunks contradicted / chunks), mean over answers with chunks
    context_hallucination: Mean = field(default_factory=Mean)
    #: FActScore with its length penalty, mean over answers of routes with an expected claim count
    factscore: Mean = field(default_factory=Mean)
    #: SUPPORTED claims below the confidence floor
    suspect_claims: int = 0
    #: PAS2-style checks against earlier answers to paraphrased questions, and those that found a conflict
    consistency_checks: int = 0
    inconsistent: int = 0
    conflicts: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        parity = record.get("parity")
        if isinstance(parity, dict):
            self.scored += 1
            for name, mean in (
                ("ragaliq_faithfulness", self.faithfulness_pass),
                ("ragaliq_hallucination", self.hallucination_pass),
            ):
                score = parity.get(name)
                passed = score.get("passed") if isinstance(score, dict) else None
                if isinstance(passed, bool):
                    mean.add(1.0 if passed else 0.0)
            self.context_hallucination.add(parity.get("context_hallucination"))
            self.factscore.add(parity.get("factscore_penalized"))
            suspect = parity.get("suspect_claims")
            self.suspect_claims += len(suspect) if isinstance(suspect, list) else 0
        consistency = record.get("consistency")
        if isinstance(consistency, dict) and consistency.get("status") in ("consistent", "inconsistent"):
            self.consistency_checks += 1
            if consistency.get("status") == "inconsistent":
                self.inconsistent += 1
                conflicts = consistency.get("conflicts")
                self.conflicts += len(conflicts) if isinstance(conflicts, list) else 0


#: the table's rows, in the order :func:`cells` fills them
ROWS = (
    "RagaliQ faithfulness: answers passing",
    "RagaliQ hallucination: answers passing",
    "DeepEval context hallucination (mean, lower is better)",
    "FActScore, length-penalised (mean)",
    "suspect claims (supported, low confidence)",
    "PAS2-style consistency: checks with a conflict",
)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.1f}%"


def _mean(m: Mean) -> str:
    return "–" if m.value is None else f"{m.value:.3f} (n={m.n})"


def cells(s: OtherToolScores) -> tuple[str, ...]:
    """One release's column of the table, row by row (``ROWS``)."""
    checks = f"{s.inconsistent} of {s.consistency_checks} ({s.conflicts} conflicts)" if s.consistency_checks else "–"
    return (
        f"{_pct(s.faithfulness_pass.value)} (n={s.faithfulness_pass.n})" if s.faithfulness_pass.n else "–",
        f"{_pct(s.hallucination_pass.value)} (n={s.hallucination_pass.n})" if s.hallucination_pass.n else "–",
        _mean(s.context_hallucination),
        _mean(s.factscore),
        str(s.suspect_claims) if s.scored else "–",
        checks,
    )
