"""The worker's Prometheus metrics: declared once, labels bounded, observed in one place.

:meth:`WorkerMetrics.observe` turns an ``AnswerResult`` into counter and histogram
updates (client_python caches label children itself); judges report through the
small :class:`~evaluator_worker.judges.base.JudgeObserver` methods; queue depths
are read at scrape time (:meth:`WorkerMetrics.watch_queues`). :class:`NullMetrics`
stands in where nothing is served, so no caller branches on "metrics or not".

Slice labels (default ``release, model, route, environment``) pass through
:class:`SliceGuard`: a configured allow-list of values per label, else the first
``max_values_per_label`` distinct values seen by this process; anything else
becomes ``other`` and a missing value becomes ``unknown``. Claim text, trace ids
and questions are never labels. Every sliced metric also carries ``judge_id`` (the
judge that made the count, :mod:`evaluator_worker.judges.identity`; at most
:data:`MAX_JUDGE_IDS` values per process), so counts of two judges are never mixed.

Each metric is named once, in its declaration below: docs/metrics.md
(``python -m claimwatch.docgen.metrics``) and the dashboards' catalogue
(:mod:`dashboards.catalog`) are read from these declarations.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from contract.failures import LABELS as FAILURE_LABELS
from contract.failures import FailureType
from contract.families import shared_family
from contract.judge_ids import judge_models
from contract.slices import DEFAULT_SLICE_LABELS
from evaluator_worker.judges.base import Verdict
from evaluator_worker.shape import label_values

if TYPE_CHECKING:
    from evaluator_worker.judges.identity import JudgeIdentity
    from evaluator_worker.scoring import AnswerResult

OTHER = "other"
UNKNOWN = "unknown"
#: claim counters that carry an exemplar (the verdicts an on-call engineer drills into)
EXEMPLAR_VERDICTS = (Verdict.CONTRADICTED, Verdict.UNSUPPORTED)
#: OpenMetrics limit on an exemplar's label names + values, in characters
EXEMPLAR_MAX_CHARS = 128
#: a judge's call on an answer, per side of the shadow comparison (evaluator_worker.scoring.answer_call)
CALLS = ("flagged", "ok", "none", "failed")
#: why a sampled answer was not judged by the shadow judge (evaluator_worker.shadow; every one counted and logged)
SHADOW_SKIP_REASONS = ("busy", "budget", "throttled", "error", "write_error", "stopped")


def trace_exemplar(trace_id: str | None, span_id: str | None = None) -> dict[str, str] | None:
    """``{"trace_id", "span_id"}`` for an exemplar, dropping what does not fit the 128-character limit."""
    if not trace_id:
        return None
    out = {"trace_id": trace_id}
    if span_id and len("trace_id") + len(trace_id) + len("span_id") + len(span_id) <= EXEMPLAR_MAX_CHARS:
        out["span_id"] = span_id
    if len("trace_id") + len(trace_id) > EXEMPLAR_MAX_CHARS:
        return None
    return out


#: the label naming the judge that made a count (``AnswerResult.judge_id``), first on every sliced metric
JUDGE_ID = "judge_id"
#: distinct judge ids one process labels (more become ``other``)
MAX_JUDGE_IDS = 8
#: distinct slice label combinations whose series are pre-created at 0 (bounded like the guard's values)
MAX_ZEROED_SLICES = 10_000
RATIO_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CLAIM_COUNT_BUCKETS = (0, 1, 2, 3, 5, 8, 13, 21, 34, 55)


class SliceGuard:
    """Maps raw slice values to a bounded set of label values."""

    def __init__(
        self,
        labels: Iterable[str] = DEFAULT_SLICE_LABELS,
        allowed: Mapping[str, Iterable[str]] | None = None,
        max_values_per_label: int = 50,
    ) -> None:
        self.labels = tuple(labels)
        self._allowed = {k: frozenset(v) for k, v in (allowed or {}).items()}
        self._max = max_values_per_label
        self._seen: dict[str, set[str]] = {name: set() for name in self.labels}
        self._lock = threading.Lock()

    def value(self, label: str, raw: str | None) -> str:
        if raw is None or raw == "":
            return UNKNOWN
        raw = str(raw)[:128]
        allowed = self._allowed.get(label)
        if allowed is not None:
            return raw if raw in allowed else OTHER
        seen = self._seen[label]
        if raw in seen:
            return raw
        with self._lock:
            if raw in seen:
                return raw
            if len(seen) < self._max:
                seen.add(raw)
                return raw
        return OTHER

    def labels_for(self, slices: Mapping[str, str]) -> dict[str, str]:
        return {name: self.value(name, slices.get(name)) for name in self.labels}


class WorkerMetrics:
    """All worker metrics on one registry (a fresh registry per instance keeps tests isolated)."""

    def __init__(self, registry: CollectorRegistry | None = None, guard: SliceGuard | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.guard = guard or SliceGuard()
        #: judge ids seen by this process: bounded like a slice label (a worker runs its judge and, at most, a
        #: shadow; a burst of ids is a misconfiguration, counted as ``other``)
        self.judge_guard = SliceGuard((JUDGE_ID,), max_values_per_label=MAX_JUDGE_IDS)
        #: every metric with slice labels also says which judge made it (evaluator_worker.judges.identity)
        s = [JUDGE_ID, *self.guard.labels]
        r = self.registry
        self.claims = Counter("claimwatch_claims", "Claims judged, by verdict and slice.", ["verdict", *s], registry=r)
        self.answers = Counter(
            "claimwatch_answers", "Answers processed, by outcome and slice.", ["outcome", *s], registry=r
        )
        self.answers_with_unsupported = Counter(
            "claimwatch_answers_with_unsupported",
            "Answers with at least one UNSUPPORTED or CONTRADICTED claim.",
            s,
            registry=r,
        )
        self.answers_with_contradicted = Counter(
            "claimwatch_answers_with_contradicted", "Answers with at least one CONTRADICTED claim.", s, registry=r
        )
        self.claim_failures = Counter(
            "claimwatch_claim_failures",
            "Claims with a failure type (contract.failures), by type, verdict and slice: every UNSUPPORTED or "
            "CONTRADICTED claim has one (unknown when the judge cannot tell); a SUPPORTED claim only "
            "hedge_inflation (the lenient hedge policy).",
            ["failure_type", "verdict", *s],
            registry=r,
        )
        self.answers_with_failure = Counter(
            "claimwatch_answers_with_failure",
            "Evaluated answers with at least one claim of the failure type (an UNSUPPORTED or CONTRADICTED claim; "
            "for hedge_inflation also a SUPPORTED one, the lenient hedge policy), by slice: the answer-level count "
            "per class that the per-type alert compares between releases; sources and reasoning are the answer's "
            "derived slices (evaluator_worker.shape).",
            ["failure_type", "sources", "reasoning", *s],
            registry=r,
        )
        self.answers_by_shape = Counter(
            "claimwatch_answers_by_shape",
            "Evaluated answers by derived slice (sources none|single|multi, reasoning none|arithmetic|temporal|both; "
            "off when switched off) and slice: the denominators of answers_with_failure per derived slice.",
            ["sources", "reasoning", *s],
            registry=r,
        )
        self.answers_at_risk = Counter(
            "claimwatch_answers_at_risk",
            "Evaluated answers whose calibrated answer risk is at or above the judge's alert threshold "
            "(AnswerResult.at_risk; what the release gate counts as flagged).",
            s,
            registry=r,
        )
        self.answers_same_family = Counter(
            "claimwatch_answers_same_family_judge",
            "Evaluated answers whose answering model (the model slice) shares a model family with the judge "
            "(contract.families): a judge flatters its own family's answers (self-preference bias), so these "
            "answers' verdicts are the least trustworthy it makes; by family and slice.",
            ["family", *s],
            registry=r,
        )
        self.answer_faithfulness = Histogram(
            "claimwatch_answer_faithfulness_ratio",
            "Per-answer faithfulness (supported / judged claims), answers with claims only.",
            s,
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.answer_claims = Histogram(
            "claimwatch_answer_claims", "Claims per answer.", s, buckets=CLAIM_COUNT_BUCKETS, registry=r
        )
        self.records = Counter("claimwatch_records", "Kafka records handled, by outcome.", ["outcome"], registry=r)
        self.dead_letters = Counter(
            "claimwatch_dead_letters", "Records sent to the dead-letter topic, by reason.", ["reason"], registry=r
        )
        self.judge_latency = Histogram(
            "claimwatch_judge_latency_seconds",
            "Judge call latency.",
            ["judge", "operation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.judge_calls = Counter(
            "claimwatch_judge_calls", "LLM/model calls made by judges.", ["judge", "model"], registry=r
        )
        self.judge_tokens = Counter("claimwatch_judge_tokens", "Judge tokens.", ["judge", "model", "kind"], registry=r)
        self.judge_cost = Counter(
            "claimwatch_judge_cost_dollars", "Estimated judge cost in US dollars.", ["judge", "model"], registry=r
        )
        self.judge_errors = Counter(
            "claimwatch_judge_errors", "Judge failures, by reason.", ["judge", "reason"], registry=r
        )
        self.judge_throttled = Counter(
            "claimwatch_judge_throttled",
            "Judge calls answered with 429/529 (the concurrency limit backs off).",
            ["judge"],
            registry=r,
        )
        self.concurrency_limit = Gauge(
            "claimwatch_judge_concurrency_limit", "Current adaptive limit on judge calls in flight.", registry=r
        )
        self.in_flight = Gauge(
            "claimwatch_in_flight_answers", "Answers handed to judging and not finished yet.", registry=r
        )
        self.unacked_writes = Gauge(
            "claimwatch_unacked_writes",
            "Results and dead letters sent and not yet acknowledged by the broker.",
            registry=r,
        )
        self.oldest_unacked_write_age = Gauge(
            "claimwatch_oldest_unacked_write_age_seconds",
            "Seconds the oldest result or dead-letter write has waited for the broker's acknowledgement (0: none).",
            registry=r,
        )
        self.rebalance_drain = Histogram(
            "claimwatch_rebalance_drain_seconds",
            "Time spent finishing in-flight answers of revoked partitions before giving them up.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.write_errors = Counter(
            "claimwatch_result_write_errors",
            "Result and dead-letter writes the broker did not take (retried), by kind (retriable|non_retriable).",
            ["reason"],
            registry=r,
        )
        for kind in ("retriable", "non_retriable"):  # at 0 from the start: increase() sees the first one
            self.write_errors.labels(kind)
        self.results_shrunk = Counter(
            "claimwatch_results_shrunk",
            "Results cut (text fields dropped) to fit the producer's request limit.",
            registry=r,
        )
        self.commit_failures = Counter(
            "claimwatch_commit_failures",
            "Offset commits that failed (the next commit carries the same offsets).",
            registry=r,
        )
        self.evaluation_duration = Histogram(
            "claimwatch_evaluation_duration_seconds",
            "Time to evaluate one record (decode to results recorded).",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.consumer_lag = Gauge(
            "claimwatch_consumer_lag_records",
            "Records behind the log end on assigned partitions.",
            ["topic"],
            registry=r,
        )
        self.last_evaluation = Gauge(
            "claimwatch_last_evaluation_timestamp_seconds", "Unix time of the last evaluated answer.", registry=r
        )
        self.up = Gauge("claimwatch_worker_up", "1 while the worker is consuming.", registry=r)
        self.slice_labels_info = Gauge(
            "claimwatch_worker_slice_labels_info",
            "1, labelled with the slice labels this worker puts on its quality metrics (CLAIMWATCH_SLICE_LABELS, "
            "comma-joined): the recording rules, alerts and dashboards group by those they were generated for "
            "(contract.slices); ClaimwatchSliceLabelsDiffer fires on any other set.",
            ["slice_labels"],
            registry=r,
        )
        self.slice_labels_info.labels(",".join(self.guard.labels)).set(1)
        self.judge_info = Gauge(
            "claimwatch_judge_info",
            "1 for each judge whose verdicts this worker counts (set at start): its kind (judge), its judge_id (kind, "
            "model(s) and a digest of everything that changes verdicts; the judge_id label of the verdict and answer "
            "counters), its verifier model and its role (main; shadow: counted apart, never in a decision).",
            ["judge", JUDGE_ID, "model", "role"],
            registry=r,
        )
        self.answers_failing = Counter(
            "claimwatch_answers_failing",
            "Answers failing a RagaliQ-style evaluator (faithfulness < 0.7 or hallucination score < 0.8 by default).",
            ["evaluator", *s],
            registry=r,
        )
        self.context_hallucination = Histogram(
            "claimwatch_answer_context_hallucination_ratio",
            "DeepEval-style: share of retrieved chunks the answer contradicts (lower is better).",
            s,
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.factscore = Histogram(
            "claimwatch_answer_factscore_ratio",
            "Faithfulness with FActScore's length penalty (only for routes with a minimum claim count).",
            s,
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.suspect_claims = Counter(
            "claimwatch_suspect_claims", "SUPPORTED claims below the confidence floor.", s, registry=r
        )
        self.consistency_checks = Counter(
            "claimwatch_consistency_checks",
            "Consistency checks against paraphrased questions, by outcome (consistent|inconsistent|not_detected).",
            ["outcome", *s],
            registry=r,
        )
        self.consistency_conflicts = Counter(
            "claimwatch_consistency_conflicts", "Conflicting facts found across paraphrased questions.", s, registry=r
        )
        self.cascade_claims = Counter(
            "claimwatch_cascade_claims",
            "Claims decided by the cascade judge, by which judge decided (first|second|first_over_budget|first_fallback).",
            ["decided_by"],
            registry=r,
        )
        self.cascade_agreement = Counter(
            "claimwatch_cascade_agreement",
            "Sampled confident claims judged by both cascade judges, by agreement (true|false).",
            ["agree"],
            registry=r,
        )
        self.shadow_answers = Counter(
            "claimwatch_shadow_answers",
            "Answers judged by both the main judge and the shadow judge (evaluator_worker.shadow), by each one's call "
            "(main, shadow: flagged|ok|none|failed; flagged as the gate counts it), the main judge's id and the "
            "shadow's judge_id and slices. Never read by a decision: claimwatch judge-compare and the dashboards.",
            ["main", "shadow", "main_judge_id", *s],
            registry=r,
        )
        self.shadow_claims = Counter(
            "claimwatch_shadow_claims",
            "Claims of shadowed answers by the main judge's and the shadow's verdicts (claims paired by their text; "
            "none: only the other judge extracted it).",
            ["main_verdict", "shadow_verdict", "main_judge_id", JUDGE_ID],
            registry=r,
        )
        self.shadow_skipped = Counter(
            "claimwatch_shadow_skipped",
            "Sampled answers the shadow judge did not judge or write, by reason (busy: max_in_flight reached; budget: "
            "the hour's spend reached; error: the shadow's evaluation failed; write_error: its result write failed; "
            "stopped: the worker stopped).",
            ["reason"],
            registry=r,
        )
        self.shadow_cost = Counter(
            "claimwatch_shadow_cost_dollars", "Estimated shadow judge cost in US dollars.", [JUDGE_ID], registry=r
        )
        self.shadow_in_flight = Gauge(
            "claimwatch_shadow_in_flight_answers", "Answers the shadow judge is judging now.", registry=r
        )
        self.shadow_spend = Gauge(
            "claimwatch_shadow_spend_dollars_last_hour",
            "Estimated shadow judge spend over the last hour (what its budget caps).",
            registry=r,
        )
        self.shadow_budget = Gauge(
            "claimwatch_shadow_budget_dollars_per_hour",
            "The shadow judge's budget (CLAIMWATCH_SHADOW__BUDGET_USD_PER_HOUR).",
            [JUDGE_ID],
            registry=r,
        )
        self._zeroed: set[tuple[str, ...]] = set()
        self._zeroed_lock = threading.Lock()
        self._zeroed_shapes: set[tuple[str, ...]] = set()

    # -- answers ---------------------------------------------------------------
    def observe(self, result: AnswerResult, exemplar: dict[str, str] | None = None) -> None:
        """Count one evaluated answer (call once per trace: dedupe first).

        ``exemplar`` (``{"trace_id", "span_id"}``, see :func:`trace_exemplar`) is attached to
        the contradicted and unsupported claim counters, so a spike in Grafana leads to an
        answer that caused it (OpenMetrics exemplars).
        """
        values = self.label_values(result)
        self._zero_slice(values)
        for verdict in Verdict:
            n = result.counts.get(verdict.value, 0)
            if n:
                self.claims.labels(verdict.label, *values).inc(
                    n, exemplar=exemplar if verdict in EXEMPLAR_VERDICTS else None
                )
        self.answers.labels(result.outcome, *values).inc()
        self._observe_failures(result, values, exemplar)
        if result.outcome == "evaluated":
            if result.has_unsupported:
                self.answers_with_unsupported.labels(*values).inc()
            if result.has_contradicted:
                self.answers_with_contradicted.labels(*values).inc(exemplar=exemplar)
            if result.at_risk:
                self.answers_at_risk.labels(*values).inc(exemplar=exemplar)
            if result.faithfulness is not None:
                self.answer_faithfulness.labels(*values).observe(result.faithfulness)
            family = shared_family(result.slices.get("model"), judge_models(result.judge_id or ""))
            if family:
                self.answers_same_family.labels(family, *values).inc()
        self.answer_claims.labels(*values).observe(len(result.claims) if result.outcome != "abstained" else 0)
        self._observe_parity(result, values)
        self._observe_usage(result)
        self.last_evaluation.set(result.evaluated_at)

    def label_values(self, result: AnswerResult) -> tuple[str, ...]:
        """``(judge_id, *slice values)`` of ``result``, each bounded (a record without a judge id: its kind)."""
        judge_id = self.judge_guard.value(JUDGE_ID, result.judge_id or result.judge)
        return (judge_id, *self.guard.labels_for(result.slices).values())

    def _observe_failures(self, result: AnswerResult, values: tuple[str, ...], exemplar: dict[str, str] | None) -> None:
        """Typed claims by type and verdict; evaluated answers by shape, and once per type they have a claim of."""
        flagged: set[str] = set()
        for c in result.claims:
            if c.failure_type is None:
                continue
            failure = c.failure_type if c.failure_type in FAILURE_LABELS else FailureType.OTHER.value
            self.claim_failures.labels(failure, c.verdict.label, *values).inc(
                exemplar=exemplar if c.verdict in EXEMPLAR_VERDICTS else None
            )
            flagged.add(failure)
        if result.outcome == "evaluated":
            shape = label_values(result.shape)
            self.answers_by_shape.labels(*shape, *values).inc()
            self._zero_shape(shape, values)
            for failure in flagged:
                self.answers_with_failure.labels(failure, *shape, *values).inc(exemplar=exemplar)

    def _zero_shape(self, shape: tuple[str, str], values: tuple[str, ...]) -> None:
        """Create every class's series of a (shape, slice) at 0 the first time it is seen (bounded like slices)."""
        key = (*shape, *values)
        if key in self._zeroed_shapes:
            return
        with self._zeroed_lock:
            if key in self._zeroed_shapes or len(self._zeroed_shapes) >= MAX_ZEROED_SLICES:
                return
            self._zeroed_shapes.add(key)
        for failure in FAILURE_LABELS:
            self.answers_with_failure.labels(failure, *shape, *values)

    def _zero_slice(self, values: tuple[str, ...]) -> None:
        """Create a new slice's verdict and outcome series at 0, so increase() sees its first CONTRADICTED claim."""
        if values in self._zeroed:
            return
        with self._zeroed_lock:
            if values in self._zeroed or len(self._zeroed) >= MAX_ZEROED_SLICES:
                return
            self._zeroed.add(values)
        for verdict in Verdict:
            self.claims.labels(verdict.label, *values)
        for outcome in ("evaluated", "abstained", "failed"):
            self.answers.labels(outcome, *values)
        self.answers_with_unsupported.labels(*values)
        self.answers_with_contradicted.labels(*values)
        self.answers_at_risk.labels(*values)

    def _observe_parity(self, result: AnswerResult, values: tuple[str, ...]) -> None:
        par = result.parity
        if par is not None:
            if par.ragaliq_faithfulness.passed is False:
                self.answers_failing.labels("faithfulness", *values).inc()
            if par.ragaliq_hallucination.passed is False:
                self.answers_failing.labels("hallucination", *values).inc()
            if par.context_hallucination is not None and result.outcome == "evaluated":
                self.context_hallucination.labels(*values).observe(par.context_hallucination)
            if par.factscore_penalized is not None:
                self.factscore.labels(*values).observe(par.factscore_penalized)
            if par.suspect_claims:
                self.suspect_claims.labels(*values).inc(len(par.suspect_claims))
        con = result.consistency
        if con is not None and con.status != "no_group":
            self.consistency_checks.labels(con.status, *values).inc()
            if con.conflicts:
                self.consistency_conflicts.labels(*values).inc(len(con.conflicts))

    def _observe_usage(self, result: AnswerResult) -> None:
        judge = result.judge
        for model, u in ((result.usage or {}).get("by_model") or {}).items():
            if u.get("calls"):
                self.judge_calls.labels(judge, model).inc(float(u["calls"]))
            for kind in ("input", "output", "cache_read", "cache_creation"):
                n = u.get(f"{kind}_tokens") or 0
                if n:
                    self.judge_tokens.labels(judge, model, kind).inc(float(n))
            if u.get("cost_usd"):
                self.judge_cost.labels(judge, model).inc(float(u["cost_usd"]))

    # -- the shadow judge (evaluator_worker.shadow) ----------------------------
    def observe_shadow(
        self, main: AnswerResult, shadow: AnswerResult, pairs: Iterable[tuple[str, str]], main_judge_id: str
    ) -> None:
        """One answer judged by both judges: each one's call, the paired claims' verdicts, the shadow's cost."""
        from evaluator_worker.scoring import answer_call

        values = self.label_values(shadow)
        main_id = self.judge_guard.value(JUDGE_ID, main_judge_id)
        self._zero_shadow((main_id, *values))
        self.shadow_answers.labels(answer_call(main), answer_call(shadow), main_id, *values).inc()
        for left, right in pairs:
            self.shadow_claims.labels(left, right, main_id, values[0]).inc()
        cost = float((shadow.usage or {}).get("cost_usd") or 0.0)
        if cost:
            self.shadow_cost.labels(values[0]).inc(cost)

    def _zero_shadow(self, key: tuple[str, ...]) -> None:
        """Create a new (main judge, shadow slice)'s four both-called series at 0, so agreement sums see all four."""
        if ("shadow", *key) in self._zeroed:
            return
        with self._zeroed_lock:
            if ("shadow", *key) in self._zeroed or len(self._zeroed) >= MAX_ZEROED_SLICES:
                return
            self._zeroed.add(("shadow", *key))
        for main in ("flagged", "ok"):
            for shadow in ("flagged", "ok"):
                self.shadow_answers.labels(main, shadow, *key)

    def watch_shadow(self, shadow: Any, budget_usd_per_hour: float) -> None:
        """The shadow's in-flight answers and last hour's spend, read at scrape time; its budget; skip reasons at 0."""
        self.shadow_in_flight.set_function(lambda: shadow.in_flight)
        self.shadow_spend.set_function(shadow.spend.spent)
        self.shadow_budget.labels(self.judge_guard.value(JUDGE_ID, shadow.identity.judge_id)).set(budget_usd_per_hour)
        for reason in SHADOW_SKIP_REASONS:
            self.shadow_skipped.labels(reason)

    def unwatch_shadow(self) -> None:
        self.shadow_in_flight.set_function(lambda: 0)
        self.shadow_spend.set_function(lambda: 0)

    # -- judge calls (JudgeCaller) and judges (JudgeObserver) -----------------
    def set_judge(self, identity: JudgeIdentity, role: str = "main") -> None:
        """``claimwatch_judge_info{judge, judge_id, model, role}`` 1: a judge behind this worker's counts (the gate
        reads it; ``role``: ``main``, or ``shadow`` for a judge whose counts never reach a decision)."""
        self.judge_info.labels(identity.kind, identity.judge_id, identity.model, role).set(1)

    def judge_call(
        self, judge: str, operation: str, seconds: float, *, error: str | None = None, throttled: bool = False
    ) -> None:
        """One judge call: its latency, and the error reason when it failed."""
        self.judge_latency.labels(judge, operation).observe(seconds)
        if error is not None:
            self.judge_error(judge, error)
        if throttled:
            self.judge_throttled.labels(judge).inc()

    def judge_error(self, judge: str, reason: str) -> None:
        self.judge_errors.labels(judge, reason).inc()

    def cascade_decided(self, decided_by: str, claims: int) -> None:
        self.cascade_claims.labels(decided_by).inc(claims)

    def cascade_agreed(self, agree: bool) -> None:
        self.cascade_agreement.labels("true" if agree else "false").inc()

    # -- scrape-time gauges ---------------------------------------------------
    def watch_queues(
        self,
        in_flight: Callable[[], float],
        unacked_writes: Callable[[], float],
        concurrency_limit: Callable[[], float] | None = None,
        oldest_write_age: Callable[[], float] | None = None,
    ) -> None:
        """Read queue depths when Prometheus scrapes, not from the worker's hot loop."""
        self.in_flight.set_function(in_flight)
        self.unacked_writes.set_function(unacked_writes)
        if oldest_write_age is not None:
            self.oldest_unacked_write_age.set_function(oldest_write_age)
        if concurrency_limit is not None:
            self.concurrency_limit.set_function(concurrency_limit)

    def unwatch_queues(self) -> None:
        """The worker stopped: its queues read 0 again."""
        for gauge in (self.in_flight, self.unacked_writes, self.oldest_unacked_write_age):
            gauge.set_function(lambda: 0.0)


class NullMetrics(WorkerMetrics):
    """Metrics on a private registry nobody serves: ``score``, tests and library use need no ``if metrics``."""

    def __init__(self) -> None:
        super().__init__(CollectorRegistry())
