"""What the gate counts for one release, from either source: Prometheus or result records.

The statistical unit is the answer (see :mod:`claimwatch.stats.answer_share`):

- ``answers``: evaluated answers (at least one claim with a verdict): the worker's
  ``claimwatch_answers_total{outcome="evaluated"}`` and a result record with ``outcome == "evaluated"``;
- ``flagged``: of these, answers **at risk**: calibrated answer risk at or above the judge's fitted alert
  threshold (``claimwatch_answers_at_risk_total``, ``AnswerResult.at_risk``; see
  :mod:`evaluator_worker.judges.risk`), so a long faithful answer is not flagged for its length. Records and
  workers from before the answer risk carry no ``at_risk``: for them ``flagged`` falls back to "any
  UNSUPPORTED or CONTRADICTED claim" (``claimwatch_answers_with_unsupported_total``,
  ``AnswerResult.has_unsupported``) and ``flag_rule`` says which rule counted;
- ``contradicted``: answers with a CONTRADICTED claim (shown, not decided on);
- ``claims``: claims by verdict (shown, not decided on: claims of one answer are correlated);
- ``judges``: the names of the judges whose verdicts these are (``claimwatch_judge_info`` of the workers
  that counted the release, a result record's ``judge``): not a count, left out of equality; the gate
  says whether they are fit for a rollback decision (:mod:`claimwatch.gate.judge_fitness`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from contract.record import record_key

VERDICTS = ("supported", "unsupported", "contradicted", "error")


@dataclass(frozen=True)
class Counts:
    """Claims of one release, by verdict."""

    supported: int = 0
    unsupported: int = 0
    contradicted: int = 0
    error: int = 0

    @property
    def judged(self) -> int:
        """Claims with a verdict (ERROR excluded)."""
        return self.supported + self.unsupported + self.contradicted

    def rate(self, verdict: str) -> float:
        """Share of judged claims with ``verdict`` (0.0 when nothing was judged)."""
        return getattr(self, verdict) / self.judged if self.judged else 0.0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, v) + getattr(other, v) for v in VERDICTS))


@dataclass(frozen=True)
class ReleaseCounts:
    """Answers of one release in the window: the gate's evidence."""

    answers: int = 0
    flagged: int = 0
    contradicted: int = 0
    claims: Counts = field(default_factory=Counts)
    judges: tuple[str, ...] = field(default=(), compare=False)
    #: evaluated answers with an UNSUPPORTED or CONTRADICTED claim (the any-claim rule), whatever ``flagged`` counts
    flagged_any_claim: int = field(default=0, compare=False)
    #: which rule counted ``flagged``: "at_risk", "any_claim" (records / workers without the answer risk), or both
    flag_rules: tuple[str, ...] = field(default=(), compare=False)

    @property
    def flag_rule(self) -> str:
        """``at_risk``, ``any_claim`` (old records or workers), ``mixed``, or ``none`` (nothing counted)."""
        return self.flag_rules[0] if len(self.flag_rules) == 1 else "mixed" if self.flag_rules else "none"

    @property
    def flagged_share(self) -> float:
        """Share of evaluated answers flagged: at risk (or, for old records, with an UNSUPPORTED or CONTRADICTED claim)."""
        return self.flagged / self.answers if self.answers else 0.0

    @property
    def contradicted_share(self) -> float:
        return self.contradicted / self.answers if self.answers else 0.0

    def add_result(self, record: Mapping[str, Any]) -> ReleaseCounts:
        """These counts plus one result record (as the worker counts it in ``WorkerMetrics.observe``)."""
        n = record_verdicts(record)
        outcome = record.get("outcome")
        evaluated = outcome == "evaluated" if outcome else n.judged > 0  # records without it: as scoring decides
        judge = record.get("judge")
        judges = self.judges
        if isinstance(judge, str) and judge and judge not in judges:
            judges = tuple(sorted((*judges, judge)))
        at_risk = record.get("at_risk")
        rule = "at_risk" if isinstance(at_risk, bool) else "any_claim"
        flagged = at_risk if isinstance(at_risk, bool) else n.unsupported + n.contradicted > 0
        rules = self.flag_rules if not evaluated or rule in self.flag_rules else tuple(sorted((*self.flag_rules, rule)))
        return replace(
            self,
            answers=self.answers + evaluated,
            flagged=self.flagged + (evaluated and flagged),
            flagged_any_claim=self.flagged_any_claim + (evaluated and n.unsupported + n.contradicted > 0),
            contradicted=self.contradicted + (evaluated and n.contradicted > 0),
            claims=self.claims + n,
            judges=judges,
            flag_rules=rules,
        )


def common_rule(baseline: ReleaseCounts, candidate: ReleaseCounts) -> tuple[ReleaseCounts, ReleaseCounts]:
    """Both releases flagged by one rule: at risk when both were counted so, else the any-claim rule for both
    (a share at risk beside a share by the any-claim rule would read as a large improvement that is none)."""
    rules = {baseline.flag_rule, candidate.flag_rule} - {"none"}
    if rules <= {"at_risk"} or rules <= {"any_claim"}:
        return baseline, candidate

    def any_claim(c: ReleaseCounts) -> ReleaseCounts:
        if c.flag_rule not in ("at_risk", "mixed"):
            return c
        return replace(c, flagged=c.flagged_any_claim, flag_rules=("any_claim",))

    return any_claim(baseline), any_claim(candidate)


def record_verdicts(record: Mapping[str, Any]) -> Counts:
    """Claims by verdict of one result record: its ``counts`` (kept when a record is shrunk), else its claims."""
    counts = record.get("counts")
    if isinstance(counts, Mapping) and counts:
        return Counts(**{v: int(counts.get(v.upper(), 0) or 0) for v in VERDICTS})
    tally = dict.fromkeys(VERDICTS, 0)
    for claim in record.get("claims") or []:
        verdict = str(claim.get("verdict", "")).lower() if isinstance(claim, Mapping) else ""
        if verdict in tally:
            tally[verdict] += 1
    return Counts(**tally)


def latest_per_trace(results: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per evaluated record (trace id, and call id for one of several RAG calls in a trace), the last
    one (the results topic is at-least-once; the worker counts once)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for r in results:
        latest[record_key(str(r.get("trace_id")), r.get("call_id"))] = r
    return list(latest.values())


def counts_from_results(
    results: Iterable[Mapping[str, Any]], releases: Iterable[str], label: str = "release"
) -> dict[str, ReleaseCounts]:
    """:class:`ReleaseCounts` per release from result records (what ``claimwatch report`` decides on)."""
    out = {release: ReleaseCounts() for release in releases}
    for r in latest_per_trace(results):
        release = (r.get("slices") or {}).get(label)
        if release in out:
            out[release] = out[release].add_result(r)
    return out
