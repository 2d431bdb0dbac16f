"""Which kind of failure moved: flagged answers per failure type (contract.failures), baseline vs candidate.

The unit is the answer, as for the gate: an answer counts once for every class it has at least one claim of (an
UNSUPPORTED or CONTRADICTED claim; for hedge_inflation also a SUPPORTED one under the lenient hedge policy: what
``claimwatch_answers_with_failure_total`` counts), over the release's evaluated answers. The same counts come from result records (:meth:`TypeCounts.add_result`) or from Prometheus.
:func:`changes` ranks the classes by their rise; :func:`headline` says the largest in one line, with the slice
where it rose most ("numeric +3.1 pts of answers (1.0% -> 4.1%), most on route=finance: +8.0 pts").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from contract.failures import BY_TYPE, LABELS, FailureType, parse_failure_type

#: the verdicts that flag an answer for a class
FLAGGING = ("UNSUPPORTED", "CONTRADICTED")
#: a slice is named in the headline only with at least this many evaluated answers in both releases
MIN_SLICE_ANSWERS = 20


def flagged_types(record: Mapping[str, Any]) -> set[str]:
    """The classes ``record`` has at least one claim of: its flagged claims' (a missing type is unknown, as the
    worker reads it) and any other typed claim's (a hedge kept SUPPORTED)."""
    out = set()
    for c in record.get("claims") or ():
        if not isinstance(c, Mapping):
            continue
        if c.get("verdict") in FLAGGING:
            out.add(parse_failure_type(c.get("failure_type")).value)
        elif c.get("failure_type"):
            out.add(parse_failure_type(c["failure_type"]).value)
    return out


@dataclass
class TypeCounts:
    """Evaluated answers and, per class, those with at least one flagged claim of it."""

    answers: int = 0
    flagged: Counter[str] = field(default_factory=Counter)

    def add_result(self, record: Mapping[str, Any]) -> None:
        """Count one result record (evaluated answers only, as the worker counts them)."""
        if record.get("outcome", "evaluated") != "evaluated":
            return
        self.answers += 1
        self.flagged.update(flagged_types(record))

    def share(self, failure: str) -> float:
        return self.flagged[failure] / self.answers if self.answers else 0.0


@dataclass(frozen=True)
class TypeChange:
    """One class's flagged-answer share in both releases (overall, or on one slice ``where``)."""

    failure_type: str
    baseline: tuple[int, int]
    candidate: tuple[int, int]
    where: str | None = None

    @property
    def baseline_share(self) -> float:
        return self.baseline[0] / self.baseline[1] if self.baseline[1] else 0.0

    @property
    def candidate_share(self) -> float:
        return self.candidate[0] / self.candidate[1] if self.candidate[1] else 0.0

    @property
    def difference(self) -> float:
        return self.candidate_share - self.baseline_share

    @property
    def name(self) -> str:
        """The class's name in words ("numerical specificity loss or error")."""
        known = FailureType(self.failure_type) if self.failure_type in LABELS else FailureType.OTHER
        return BY_TYPE[known].name


def changes(baseline: TypeCounts, candidate: TypeCounts, where: str | None = None) -> list[TypeChange]:
    """Every class either release flagged an answer for, largest rise first."""
    seen = set(baseline.flagged) | set(candidate.flagged)
    out = [
        TypeChange(
            t,
            (baseline.flagged[t], baseline.answers),
            (candidate.flagged[t], candidate.answers),
            where,
        )
        for t in seen
    ]
    return sorted(out, key=lambda c: (-c.difference, c.failure_type))


def headline(overall: list[TypeChange], by_slice: Iterable[TypeChange] = ()) -> str | None:
    """The largest rise in one line, with the slice (enough answers in both releases) where that class rose most;
    None when no class rose."""
    if not overall or overall[0].difference <= 0:
        return None
    top = overall[0]
    line = (
        f"{top.failure_type} ({top.name}) {top.difference * 100:+.1f} pts of answers "
        f"({top.baseline_share:.1%} -> {top.candidate_share:.1%})"
    )
    slices = [
        c
        for c in by_slice
        if c.failure_type == top.failure_type
        and min(c.baseline[1], c.candidate[1]) >= MIN_SLICE_ANSWERS
        and c.difference > top.difference
    ]
    if slices:
        worst = max(slices, key=lambda c: c.difference)
        line += f", most on {worst.where}: {worst.difference * 100:+.1f} pts"
    return line
