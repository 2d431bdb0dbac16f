"""One answer through a judge: extract claims, verify them, score, record metrics.

The same :class:`Evaluator` serves the Kafka worker, ``claimwatch score`` and
the demo, so batch and streaming numbers agree. It is safe to call
``evaluate`` from many threads at once (the worker does, for network judges);
``record`` is called from one thread (the worker's poll loop).

Failure policy (the retrying itself is :class:`evaluator_worker.flow.JudgeCaller`'s,
the only retry layer):

- retryable judge errors (429, 529, 5xx, timeouts) are retried with backoff until
  the caller's deadline; while that happens the backlog grows, which the lag metric shows;
- after that, or on an error that is not worth retrying (400, malformed output),
  the answer's claims are ``ERROR`` (outcome ``failed``): never counted as
  supported or contradicted;
- fatal errors (401/403, ``ConfigError``) and ``EvaluationAbandoned`` are raised:
  the caller stops or hands the record back;
- a judge that returns fewer verdicts than claims has the missing ones
  marked ``ERROR`` (``complete_verdicts``); the score's denominator is the
  number of judged claims, never the number of verdicts the judge chose to return.
"""

from __future__ import annotations

from typing import Callable

from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.config import ParitySettings
from evaluator_worker.consistency import ConsistencyResult, ConsistencyTracker
from evaluator_worker.errors import JudgeError
from evaluator_worker.flow import JudgeCaller, RetryPolicy, estimate_tokens
from evaluator_worker.judges.base import Claim, Judge, Usage, Verdict, complete_verdicts
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.parity import parity_scores
from evaluator_worker.scoring import AnswerResult, score

log = get_logger(__name__)


def _billed_input_tokens(out: object) -> int:
    """Input tokens a provider's per-minute limit counts (cache reads excluded, as Anthropic does)."""
    u = out.usage  # type: ignore[attr-defined]
    return int(u.input_tokens + u.cache_creation_tokens)


#: claim counters that carry an exemplar (the verdicts an on-call engineer drills into)
EXEMPLAR_VERDICTS = (Verdict.CONTRADICTED, Verdict.UNSUPPORTED)
#: OpenMetrics limit on an exemplar's label names + values, in characters
EXEMPLAR_MAX_CHARS = 128


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


#: characters of the evidence chunk kept around the evidence in result records
EXCERPT_CHARS = 300


def _excerpt(content: str, evidence: str | None) -> str:
    if len(content) <= EXCERPT_CHARS:
        return content
    at = content.find(evidence) if evidence else -1
    if at < 0:
        return content[:EXCERPT_CHARS] + "\u2026"
    start = max(0, at - (EXCERPT_CHARS - len(evidence or "")) // 2)
    end = min(len(content), start + EXCERPT_CHARS)
    return ("\u2026" if start else "") + content[start:end] + ("\u2026" if end < len(content) else "")


def _attach_chunks(result: AnswerResult, trace: RagTrace, *, include_text: bool) -> None:
    """Each verdict's chunk id, source and (unless text is excluded) an excerpt around the evidence."""
    for c in result.claims:
        i = c.context_index
        if i is None or not 0 <= i < len(trace.contexts):
            continue
        ctx = trace.contexts[i]
        c.context_id, c.context_source = ctx.id, ctx.source
        if include_text and ctx.content:
            c.context_excerpt = _excerpt(ctx.content, c.evidence)


class Evaluator:
    """Runs a judge on ``RagTrace`` records and records the outcome in metrics."""

    def __init__(
        self,
        judge: Judge,
        metrics: WorkerMetrics | None = None,
        *,
        caller: JudgeCaller | None = None,
        retry: RetryPolicy | None = None,
        include_text: bool = True,
        parity: ParitySettings | None = None,
        consistency: ConsistencyTracker | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.judge = judge
        self.metrics = metrics
        self.caller = caller or JudgeCaller(judge.name, retry=retry, metrics=metrics, sleep=sleep)
        if self.caller.metrics is None:
            self.caller.metrics = metrics
        self.include_text = include_text
        self.parity = parity or ParitySettings()
        self.consistency = consistency
        self._seen_slices: set[tuple[str, ...]] = set()
        #: label children per slice (see ``record``)
        self._slice_children: dict[tuple[str, ...], dict[tuple[str, tuple[str, ...]], object]] = {}
        if metrics is not None:  # at 0 from the start, so increase() sees the first 429
            metrics.judge_throttled.labels(judge.name)
        bind = getattr(judge, "bind_metrics", None)
        if metrics is not None and callable(bind):
            bind(metrics)

    @property
    def io_bound(self) -> bool:
        """True for judges that wait on the network (many answers in flight pay off)."""
        return bool(getattr(self.judge, "io_bound", False))

    # -- judging -------------------------------------------------------------
    @property
    def _extract_sees_contexts(self) -> bool:
        return bool(getattr(self.judge, "extract_sees_contexts", False))

    def _extract(self, trace: RagTrace, contexts: list[str]) -> object:
        """Claim extraction; a judge with ``extract_sees_contexts`` (single-call mode) also gets the contexts."""
        if self._extract_sees_contexts:
            return self.judge.extract_claims(trace.answer, trace.question, contexts=contexts)  # type: ignore[call-arg]
        return self.judge.extract_claims(trace.answer, trace.question)

    def evaluate(self, trace: RagTrace, cancelled: Callable[[], bool] | None = None) -> AnswerResult:
        """Judge one answer. Judge failures become outcome ``failed``; fatal ones and abandonment raise."""
        contexts = [c.content for c in trace.contexts]
        usages: list[Usage] = []
        claims: list[Claim] = []
        call = self.caller.call
        metered = self.caller.limiter is not None  # token estimates only feed a limiter's token ceiling
        try:
            extraction = call(
                "extract", lambda: self._extract(trace, contexts), cancelled=cancelled, used_tokens=_billed_input_tokens,
                est_tokens=estimate_tokens(trace.answer, trace.question, *(contexts if self._extract_sees_contexts else ()))
                if metered else 0,
            )
            claims = list(extraction.claims)  # type: ignore[attr-defined]
            usages.append(extraction.usage)  # type: ignore[attr-defined]
            if claims:
                verification = call(
                    "verify", lambda: self.judge.verify(claims, contexts, trace.question), cancelled=cancelled,
                    used_tokens=_billed_input_tokens,
                    est_tokens=estimate_tokens(trace.question, *(c.text for c in claims), *contexts) if metered else 0,
                )
                verdicts = complete_verdicts(claims, verification.verdicts)  # type: ignore[attr-defined]
                usages.append(verification.usage)  # type: ignore[attr-defined]
            else:
                verdicts = []
            error = None
        except JudgeError as exc:
            if exc.fatal:
                raise
            log.warning("judge failed; claims marked ERROR", judge=self.judge.name, reason=exc.reason,
                        status=exc.status_code, error=str(exc)[:300])
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
        _attach_chunks(result, trace, include_text=self.include_text)
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
    def record(self, result: AnswerResult, exemplar: dict[str, str] | None = None) -> None:
        """Add one result to the metrics (call once per trace: dedupe first).

        ``exemplar`` (e.g. ``{"trace_id": ..., "span_id": ...}``, see :func:`trace_exemplar`)
        is attached to the contradicted and unsupported claim counters, so a spike in Grafana
        leads to an answer that caused it (OpenMetrics exemplars).

        Label children are cached per slice (``labels()`` takes a lock and hashes the label
        values on every call); a child is still created on first use, as before.
        """
        m = self.metrics
        if m is None:
            return
        labels = m.guard.labels_for(result.slices)
        values = tuple(labels.values())
        children = self._slice_children.get(values)
        if children is None:
            if len(self._slice_children) >= 10_000:  # bounded: the guard bounds values, this bounds combinations
                self._slice_children.clear()
            children = self._slice_children[values] = {}
        if values not in self._seen_slices:
            # create every verdict series at 0 the first time a slice shows up, so increase()/rate()
            # see the first CONTRADICTED claim of a slice instead of a series born at 1
            self._seen_slices.add(values)
            for verdict in Verdict:
                m.claims.labels(verdict.label, *values)
            for outcome in ("evaluated", "abstained", "failed"):
                m.answers.labels(outcome, *values)
            m.answers_with_unsupported.labels(*values)
            m.answers_with_contradicted.labels(*values)

        def child(name: str, *extra: str):
            ch = children.get((name, extra))
            if ch is None:
                ch = children[(name, extra)] = getattr(m, name).labels(*extra, *values)
            return ch

        for verdict in Verdict:
            n = result.counts.get(verdict.value, 0)
            if n:
                child("claims", verdict.label).inc(n, exemplar=exemplar if verdict in EXEMPLAR_VERDICTS else None)
        child("answers", result.outcome).inc()
        if result.outcome == "evaluated":
            if result.has_unsupported:
                child("answers_with_unsupported").inc()
            if result.has_contradicted:
                child("answers_with_contradicted").inc(exemplar=exemplar)
            if result.faithfulness is not None:
                child("answer_faithfulness").observe(result.faithfulness)
        child("answer_claims").observe(len(result.claims) if result.outcome != "abstained" else 0)
        par = result.parity
        if par is not None:
            if par.ragaliq_faithfulness.passed is False:
                child("answers_failing", "faithfulness").inc()
            if par.ragaliq_hallucination.passed is False:
                child("answers_failing", "hallucination").inc()
            if par.context_hallucination is not None and result.outcome == "evaluated":
                child("context_hallucination").observe(par.context_hallucination)
            if par.factscore_penalized is not None:
                child("factscore").observe(par.factscore_penalized)
            if par.suspect_claims:
                child("suspect_claims").inc(len(par.suspect_claims))
        con = result.consistency
        if con is not None and con.status != "no_group":
            child("consistency_checks", con.status).inc()
            if con.conflicts:
                child("consistency_conflicts").inc(len(con.conflicts))
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
