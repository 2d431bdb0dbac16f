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
- ``judges``: the judges whose verdicts these are: their ``judge_id`` (the ``judge_id`` label of the counters, a
  result record's ``judge_id``; for workers and records from before judge ids, the judge's name from
  ``claimwatch_judge_info`` or the record's ``judge``): not a count, left out of equality; the gate
  says whether they are fit for a rollback decision (:mod:`claimwatch.gate.judge_fitness`);
- ``per_judge``: the same counts split by judge, so that two releases are compared on the counts of one judge
  (:mod:`claimwatch.gate.same_judge`);
- ``models``: evaluated answers per ``model`` slice value (the answering model), so the gate can say where the
  judge shares the generator's model family (:mod:`claimwatch.gate.same_family`); not a count it decides on.

Result records are read from a topic or a file anyone can write to: :func:`result_problem` says what is wrong
with one that does not have a result record's shape (a list for ``slices``, a string ``confidence``, a
non-numeric ``counts`` value ...), and every reader (``claims``, ``report``, ``gate --results``, the functions
here) leaves such a record out, counted in :class:`ResultSkips` and logged at most once a minute per reason,
never counted as an answer and never a traceback. Duplicates (one record key read twice) are counted there too.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping

from claimwatch.gate.by_type import TypeCounts, flagged_types
from contract.logs import get_logger
from contract.record import record_key

log = get_logger(__name__)

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
    #: evaluated answers with at least one claim of each failure class (contract.failures), sorted by class
    failure_types: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    #: these counts by judge (judge id -> its counts, sorted by id); empty when the source did not split them
    per_judge: tuple[tuple[str, ReleaseCounts], ...] = field(default=(), compare=False)
    #: evaluated answers per ``model`` slice value (sorted by model; empty when the source has no model slice)
    models: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    @property
    def by_judge(self) -> dict[str, ReleaseCounts]:
        """``per_judge`` as a dict, judges with evaluated answers only; ``{}`` when not split by judge."""
        return {j: c for j, c in self.per_judge if c.answers}

    @property
    def types(self) -> TypeCounts:
        """``failure_types`` as :class:`~claimwatch.gate.by_type.TypeCounts` over the evaluated answers."""
        return TypeCounts(self.answers, Counter(dict(self.failure_types)))

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
        """These counts plus one result record (as the worker counts it in ``WorkerMetrics.observe``), also under
        the record's judge (:func:`record_judge`) in ``per_judge``."""
        judge = record_judge(record)
        split = dict(self.per_judge)
        split[judge] = split.get(judge, ReleaseCounts())._plus(record, judge)
        return replace(self._plus(record, judge), per_judge=tuple(sorted(split.items())))

    def _plus(self, record: Mapping[str, Any], judge: str) -> ReleaseCounts:
        n = record_verdicts(record)
        outcome = record.get("outcome")
        evaluated = outcome == "evaluated" if outcome else n.judged > 0  # records without it: as scoring decides
        judges = self.judges
        if judge != UNKNOWN_JUDGE and judge not in judges:
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
            failure_types=_plus(self.failure_types, flagged_types(record) if evaluated else set()),
            models=_plus(self.models, {model} if evaluated and (model := record_model(record)) else set()),
        )


def _plus(types: tuple[tuple[str, int], ...], more: set[str]) -> tuple[tuple[str, int], ...]:
    if not more:
        return types
    counts = Counter(dict(types))
    counts.update(more)
    return tuple(sorted(counts.items()))


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


#: the judge of counts that do not say which judge made them
UNKNOWN_JUDGE = "unknown"


def record_judge(record: Mapping[str, Any]) -> str:
    """The judge of one result record: its ``judge_id``, else (records from before judge ids) its ``judge``."""
    for name in ("judge_id", "judge"):
        value = record.get(name)
        if isinstance(value, str) and value:
            return value
    return UNKNOWN_JUDGE


def record_model(record: Mapping[str, Any]) -> str | None:
    """The ``model`` slice of one result record (the answering model), None when it has none."""
    slices = record.get("slices")
    model = slices.get("model") if isinstance(slices, Mapping) else None
    return model if isinstance(model, str) and model and model != "unknown" else None


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


# -- the shape of a result record, and what readers leave out -------------------------------------------------

#: a ``counts`` value above this is no claim count of one answer
MAX_RECORD_COUNT = 1_000_000
#: seconds between two log lines of one kind of skip (each skip is counted)
SKIP_LOG_EVERY_S = 60.0
_CLAIM_TEXT = (
    "id",
    "text",
    "verdict",
    "evidence",
    "reason",
    "context_excerpt",
    "context_source",
    "context_id",
    "context_tool",
)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _claim_problem(claim: Any) -> str | None:
    if not isinstance(claim, Mapping):
        return "a claim is not an object"
    for name in _CLAIM_TEXT:
        if claim.get(name) is not None and not isinstance(claim[name], str):
            return f"a claim's {name!r} is not a string"
    if claim.get("confidence") is not None and not _finite(claim["confidence"]):
        return "a claim's 'confidence' is not a number"
    index = claim.get("context_index")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        return "a claim's 'context_index' is not an integer"
    return None


def result_problem(record: Any) -> str | None:
    """What makes ``record`` no result record the readers can count and show (None: nothing).

    Checked are the fields the gate, ``report`` and ``claims`` read, with the types the worker writes
    (``docs/results.md``); a field may be missing or null, other fields are not looked at."""
    if not isinstance(record, Mapping):
        return "not a JSON object"
    trace_id = record.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id.strip():
        return "no 'trace_id' string"
    for name in ("call_id", "outcome", "judge", "judge_id"):
        if record.get(name) is not None and not isinstance(record[name], str):
            return f"{name!r} is not a string"
    slices = record.get("slices")
    if slices is not None:
        if not isinstance(slices, Mapping):
            return "'slices' is not an object"
        if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in slices.items()):
            return "a 'slices' value is not a string"
    for name in ("evaluated_at", "answer_risk"):
        if record.get(name) is not None and not _finite(record[name]):
            return f"{name!r} is not a number"
    if record.get("at_risk") is not None and not isinstance(record["at_risk"], bool):
        return "'at_risk' is not true or false"
    counts = record.get("counts")
    if counts is not None:
        if not isinstance(counts, Mapping):
            return "'counts' is not an object"
        for value in counts.values():
            if value is not None and not (
                isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_RECORD_COUNT
            ):
                return "a 'counts' value is not a count"
    claims = record.get("claims")
    if claims is not None:
        if not isinstance(claims, list):
            return "'claims' is not a list"
        for claim in claims:
            problem = _claim_problem(claim)
            if problem:
                return problem
    return None


def _slices_of(record: Mapping[str, Any]) -> Any:
    slices = record.get("slices")
    return sorted(slices.items()) if isinstance(slices, Mapping) else None


class ResultSkips:
    """The result records a reader left out, for the command to report: malformed ones by reason, and
    duplicates (a record key read again), of which ``conflicting`` had other slices than the record kept.

    Each is counted; a log line (``results_record_skipped``; ``results_duplicate_dropped`` for a duplicate with
    other slices) is written for the first of each kind and then at most once per :data:`SKIP_LOG_EVERY_S`, with
    how many since."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.malformed: Counter[str] = Counter()
        self.duplicates = 0
        self.conflicting = 0
        self._clock = clock
        self._logged_at: dict[str, float] = {}
        self._since_logged: Counter[str] = Counter()

    @property
    def skipped(self) -> int:
        """Malformed records left out."""
        return sum(self.malformed.values())

    def __bool__(self) -> bool:
        return bool(self.skipped or self.duplicates)

    def _due(self, kind: str) -> int | None:
        """None when ``kind`` was logged less than a minute ago, else how many went unlogged before this one."""
        now = self._clock()
        last = self._logged_at.get(kind)
        if last is not None and now - last < SKIP_LOG_EVERY_S:
            self._since_logged[kind] += 1
            return None
        self._logged_at[kind] = now
        return self._since_logged.pop(kind, 0)

    def malformed_record(self, reason: str, where: str) -> None:
        """Count (and log, rate-limited) one record left out for ``reason``; ``where`` names it (never its bytes)."""
        self.malformed[reason] += 1
        suppressed = self._due("malformed")
        if suppressed is not None:
            log.warning(
                "results_record_skipped", reason=reason, where=where, skipped=self.skipped, suppressed=suppressed
            )

    def duplicate(self, key: str, where: str, *, conflicting: bool) -> None:
        """Count one record dropped because its key was read before; log it (rate-limited) when its slices differ
        from the record kept: a copy re-sent by the at-least-once producer is expected, counted and said only."""
        self.duplicates += 1
        if not conflicting:
            return
        self.conflicting += 1
        suppressed = self._due("conflicting")
        if suppressed is not None:
            log.warning(
                "results_duplicate_dropped",
                key=key[:100],
                where=where,
                slices_differ=True,
                duplicates=self.duplicates,
                suppressed=suppressed,
            )

    def lines(self) -> list[str]:
        """What was left out, in words for the command's output (empty when nothing was)."""
        out = []
        if self.malformed:
            reasons = ", ".join(f"{n} {reason}" for reason, n in self.malformed.most_common())
            out.append(f"skipped {self.skipped} malformed result record(s) ({reasons})")
        if self.duplicates:
            line = f"dropped {self.duplicates} duplicate result record(s) (a record key read again; one kept)"
            if self.conflicting:
                line += (
                    f"; {self.conflicting} of them with other slices than the record kept: records of different"
                    " answers share these ids (e.g. separately scored files whose lines had no trace_id: give each"
                    " line a trace_id, or score them again)"
                )
            out.append(line)
        return out


def valid_results(
    results: Iterable[Mapping[str, Any]], skips: ResultSkips | None = None
) -> Iterator[Mapping[str, Any]]:
    """The records of ``results`` that have a result record's shape; the others are counted in ``skips``."""
    skips = skips if skips is not None else ResultSkips()
    for i, r in enumerate(results, start=1):
        problem = result_problem(r)
        if problem is None:
            yield r
        else:
            skips.malformed_record(problem, f"record {i}")


def latest_per_trace(results: Iterable[Mapping[str, Any]], skips: ResultSkips | None = None) -> list[Mapping[str, Any]]:
    """One record per evaluated record (trace id, and call id for one of several RAG calls in a trace), the last
    one (the results topic is at-least-once; the worker counts once); the others are counted in ``skips``."""
    latest: dict[str, Mapping[str, Any]] = {}
    for i, r in enumerate(results, start=1):
        key = record_key(str(r.get("trace_id")), r.get("call_id"))
        before = latest.get(key)
        if before is not None and skips is not None:
            skips.duplicate(key, f"record {i}", conflicting=_slices_of(before) != _slices_of(r))
        latest[key] = r
    return list(latest.values())


def counts_from_results(
    results: Iterable[Mapping[str, Any]],
    releases: Iterable[str],
    label: str = "release",
    skips: ResultSkips | None = None,
) -> dict[str, ReleaseCounts]:
    """:class:`ReleaseCounts` per release from result records (what ``claimwatch report`` decides on); records
    without a result record's shape and duplicates are left out, counted in ``skips``."""
    skips = skips if skips is not None else ResultSkips()
    out = {release: ReleaseCounts() for release in releases}
    for r in latest_per_trace(valid_results(results, skips), skips):
        release = (r.get("slices") or {}).get(label)
        if release in out:
            out[release] = out[release].add_result(r)
    return out
