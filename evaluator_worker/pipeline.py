"""One answer through a judge: extract claims, verify them, score, record metrics.

The same :class:`Evaluator` serves the Kafka worker, ``claimwatch score`` and
the demo, so batch and streaming numbers agree.

Failure policy:

- transient judge errors (timeout, rate limit, unavailable) are retried with
  capped exponential backoff (``transient_retries``); while that happens the
  backlog grows, which the lag metric shows;
- after that, or on a malformed judge answer, the answer's claims are ``ERROR``
  (outcome ``failed``): never counted as supported or contradicted;
- a judge that returns fewer verdicts than claims has the missing ones
  marked ``ERROR`` (``complete_verdicts``); the score's denominator is the
  number of judged claims, never the number of verdicts the judge chose to return.
"""

from __future__ import annotations

import time
from typing import Callable

from collector.logs import get_logger
from collector.record import RagTrace
from evaluator_worker.config import ParitySettings
from evaluator_worker.consistency import ConsistencyResult, ConsistencyTracker
from evaluator_worker.errors import JudgeError, JudgeOutputError
from evaluator_worker.judges.base import Claim, Judge, Usage, Verdict, complete_verdicts
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.parity import parity_scores
from evaluator_worker.scoring import AnswerResult, score

log = get_logger(__name__)


class Evaluator:
    """Runs a judge on ``RagTrace`` records and records the outcome in metrics."""

    def __init__(
        self,
        judge: Judge,
        metrics: WorkerMetrics | None = None,
        *,
        transient_retries: int = 2,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        include_text: bool = True,
        parity: ParitySettings | None = None,
        consistency: ConsistencyTracker | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.judge = judge
        self.metrics = metrics
        self.transient_retries = transient_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.include_text = include_text
        self.parity = parity or ParitySettings()
        self.consistency = consistency
        self._sleep = sleep
        self._clock = clock
        self._seen_slices: set[tuple[str, ...]] = set()
        bind = getattr(judge, "bind_metrics", None)
        if metrics is not None and callable(bind):
            bind(metrics)

    # -- judging -------------------------------------------------------------
    def _call(self, operation: str, fn: Callable[[], object]) -> object:
        attempt = 0
        while True:
            start = self._clock()
            try:
                return fn()
            except JudgeOutputError:
                raise
            except JudgeError as exc:
                if self.metrics:
                    self.metrics.judge_errors.labels(self.judge.name, exc.reason).inc()
                if attempt >= self.transient_retries:
                    raise
                delay = min(self.max_backoff_s, self.backoff_s * (2**attempt))
                log.warning("judge transient error, retrying", judge=self.judge.name, operation=operation,
                            reason=exc.reason, attempt=attempt + 1, delay_s=delay)
                attempt += 1
                self._sleep(delay)
            finally:
                if self.metrics:
                    self.metrics.judge_latency.labels(self.judge.name, operation).observe(self._clock() - start)

    def evaluate(self, trace: RagTrace) -> AnswerResult:
        """Judge one answer. Never raises for judge failures: they become outcome ``failed``."""
        contexts = [c.content for c in trace.contexts]
        usages: list[Usage] = []
        claims: list[Claim] = []
        try:
            extraction = self._call("extract", lambda: self.judge.extract_claims(trace.answer, trace.question))
            claims = list(extraction.claims)  # type: ignore[attr-defined]
            usages.append(extraction.usage)  # type: ignore[attr-defined]
            if claims:
                verification = self._call("verify", lambda: self.judge.verify(claims, contexts, trace.question))
                verdicts = complete_verdicts(claims, verification.verdicts)  # type: ignore[attr-defined]
                usages.append(verification.usage)  # type: ignore[attr-defined]
            else:
                verdicts = []
            error = None
        except JudgeError as exc:
            if isinstance(exc, JudgeOutputError) and self.metrics:
                self.metrics.judge_errors.labels(self.judge.name, exc.reason).inc()
            log.warning("judge failed; claims marked ERROR", judge=self.judge.name, reason=exc.reason, error=str(exc)[:300])
            if not claims:
                # extraction itself failed: one placeholder claim so the failure is visible, never NaN
                claims = [Claim(id="c0", text="")]
            verdicts = complete_verdicts(claims, [])
            for v in verdicts:
                v.reason = f"judge error: {exc.reason}"
            error = f"{exc.reason}: {str(exc)[:500]}"
        result = score(
            trace.trace_id,
            self.judge.name,
            claims,
            verdicts,
            slices=trace.slices,
            question=trace.question if self.include_text else None,
            answer=trace.answer if self.include_text else None,
            usage=usages,
            error=error,
        )
        p = self.parity
        expected = p.min_claims_per_route.get(trace.slices.get("route", ""), p.min_claims_per_route.get("*"))
        result.parity = parity_scores(
            result.claims,
            len(contexts),
            faithfulness_threshold=p.faithfulness_threshold,
            hallucination_threshold=p.hallucination_threshold,
            expected_min_claims=expected,
            confidence_floor=p.confidence_floor,
        )
        if self.consistency is not None and result.outcome == "evaluated":
            try:
                result.consistency = self.consistency.check(trace.trace_id, trace.question, trace.answer, claims)
            except Exception as exc:  # never let the side check lose the main result
                log.warning("consistency check failed", error=str(exc)[:300])
                result.consistency = ConsistencyResult(status="not_detected", confidence=0.0, error=str(exc)[:200])
        return result

    # -- metrics -------------------------------------------------------------
    def record(self, result: AnswerResult) -> None:
        """Add one result to the metrics (call once per trace: dedupe first)."""
        m = self.metrics
        if m is None:
            return
        labels = m.guard.labels_for(result.slices)
        values = list(labels.values())
        key = tuple(values)
        if key not in self._seen_slices:
            # create every verdict series at 0 the first time a slice shows up, so increase()/rate()
            # see the first CONTRADICTED claim of a slice instead of a series born at 1
            self._seen_slices.add(key)
            for verdict in Verdict:
                m.claims.labels(verdict.label, *values)
            for outcome in ("evaluated", "abstained", "failed"):
                m.answers.labels(outcome, *values)
            m.answers_with_unsupported.labels(*values)
            m.answers_with_contradicted.labels(*values)
        for verdict in Verdict:
            n = result.counts.get(verdict.value, 0)
            if n:
                m.claims.labels(verdict.label, *values).inc(n)
        m.answers.labels(result.outcome, *values).inc()
        if result.outcome == "evaluated":
            if result.has_unsupported:
                m.answers_with_unsupported.labels(*values).inc()
            if result.has_contradicted:
                m.answers_with_contradicted.labels(*values).inc()
            if result.faithfulness is not None:
                m.answer_faithfulness.labels(*values).observe(result.faithfulness)
        m.answer_claims.labels(*values).observe(len(result.claims) if result.outcome != "abstained" else 0)
        par = result.parity
        if par is not None:
            if par.ragaliq_faithfulness.passed is False:
                m.answers_failing.labels("faithfulness", *values).inc()
            if par.ragaliq_hallucination.passed is False:
                m.answers_failing.labels("hallucination", *values).inc()
            if par.context_hallucination is not None and result.outcome == "evaluated":
                m.context_hallucination.labels(*values).observe(par.context_hallucination)
            if par.factscore_penalized is not None:
                m.factscore.labels(*values).observe(par.factscore_penalized)
            if par.suspect_claims:
                m.suspect_claims.labels(*values).inc(len(par.suspect_claims))
        con = result.consistency
        if con is not None and con.status != "no_group":
            m.consistency_checks.labels(con.status, *values).inc()
            if con.conflicts:
                m.consistency_conflicts.labels(*values).inc(len(con.conflicts))
        by_model = (result.usage or {}).get("by_model") or {}
        for model, u in by_model.items():
            judge = result.judge
            if u.get("calls"):
                m.judge_calls.labels(judge, model).inc(float(u["calls"]))
            for kind in ("input", "output", "cache_read", "cache_creation"):
                n = u.get(f"{kind}_tokens") or 0
                if n:
                    m.judge_tokens.labels(judge, model, kind).inc(float(n))
            if u.get("cost_usd"):
                m.judge_cost.labels(judge, model).inc(float(u["cost_usd"]))
        m.last_evaluation.set(result.evaluated_at)
