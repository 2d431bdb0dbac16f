"""One answer through a judge: extract claims, verify them, score.

The same :class:`Evaluator` serves the Kafka worker, ``claimwatch score`` and
the demo, so batch and streaming numbers agree. It is safe to call
``evaluate`` from many threads at once (the worker does, for network judges).
Counting the result is the metrics' job (``WorkerMetrics.observe``), done by the
caller once the result is durable.

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

from typing import Callable, Sequence

from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.config import ParitySettings
from evaluator_worker.consistency import ConsistencyResult, ConsistencyTracker
from evaluator_worker.errors import JudgeError
from evaluator_worker.flow import JudgeCaller, RetryPolicy, estimate_tokens
from evaluator_worker.judges.base import (
    Claim,
    ClaimVerdict,
    Extraction,
    HedgePolicy,
    Judge,
    SingleCallJudge,
    Usage,
    Verdict,
    Verification,
    apply_hedge_policy,
    complete_verdicts,
)
from evaluator_worker.judges.identity import identify
from evaluator_worker.metrics import NullMetrics, WorkerMetrics
from evaluator_worker.parity import parity_scores
from evaluator_worker.scoring import AnswerResult, score
from evaluator_worker.shape import DERIVED, answer_shape

log = get_logger(__name__)


def _billed_input_tokens(out: Extraction | Verification) -> int:
    """Input tokens a provider's per-minute limit counts (cache reads excluded, as Anthropic does)."""
    u = out.usage
    return int(u.input_tokens + u.cache_creation_tokens)


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
        c.context_id, c.context_source, c.context_tool = ctx.id, ctx.source, ctx.tool
        if include_text and ctx.content:
            c.context_excerpt = _excerpt(ctx.content, c.evidence)


def _shape(result: AnswerResult, trace: RagTrace, enabled: Sequence[str]) -> dict[str, str]:
    """The answer's derived slices: its claims' texts and the documents their evidence came from."""
    documents: list[str | None] = []
    for c in result.claims:
        i = c.context_index
        if c.verdict in (Verdict.SUPPORTED, Verdict.CONTRADICTED) and i is not None and 0 <= i < len(trace.contexts):
            ctx = trace.contexts[i]
            documents.append(ctx.source or ctx.id or f"#{i}")
    return answer_shape([c.text for c in result.claims], documents, enabled)


class Evaluator:
    """Runs a judge on ``RagTrace`` records: claims, verdicts, scores (``AnswerResult``)."""

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
        hedge_policy: HedgePolicy = HedgePolicy.LENIENT,
        derived_slices: Sequence[str] = tuple(DERIVED),
    ) -> None:
        self.judge = judge
        #: whether hedge-inflated claims count against faithfulness (judges type them; the policy decides here)
        self.hedge_policy = HedgePolicy(hedge_policy)
        #: the derived slice labels computed (evaluator_worker.shape; the others read "off")
        self.derived_slices = tuple(derived_slices)
        #: where the judge reports and where callers count results (``metrics.observe``)
        self.metrics: WorkerMetrics = metrics if metrics is not None else NullMetrics()
        self.caller = caller or JudgeCaller(judge.name, retry=retry, metrics=self.metrics, sleep=sleep)
        self.include_text = include_text
        self.parity = parity or ParitySettings()
        self.consistency = consistency
        self.metrics.judge_throttled.labels(judge.name)  # at 0 from the start, so increase() sees the first 429
        #: which judge makes this evaluator's verdicts, as deployed (evaluator_worker.judges.identity): on every
        #: result and every count
        self.identity = identify(judge, hedge_policy=self.hedge_policy.value)
        judge.bind_metrics(self.metrics)

    @property
    def io_bound(self) -> bool:
        """True for judges that wait on the network (many answers in flight pay off)."""
        return self.judge.io_bound

    # -- judging -------------------------------------------------------------
    def _extract(self, trace: RagTrace, contexts: list[str]) -> Extraction:
        """Claim extraction; a judge with ``extract_sees_contexts`` (single-call mode) also gets the contexts."""
        if self.judge.extract_sees_contexts:
            return self.judge.extract_claims(trace.answer, trace.question, contexts=contexts)
        return self.judge.extract_claims(trace.answer, trace.question)

    def _single_call(self) -> SingleCallJudge | None:
        """The judge, when it extracts and judges in one step (``extract_and_verify``, single-call mode)."""
        judge = self.judge
        return judge if judge.extract_sees_contexts and isinstance(judge, SingleCallJudge) else None

    def _verify(
        self,
        trace: RagTrace,
        contexts: list[str],
        claims: list[Claim],
        usages: list[Usage],
        cancelled: Callable[[], bool] | None,
        metered: bool,
    ) -> list[ClaimVerdict]:
        """The verify step of the two-step path (none for zero claims)."""
        if not claims:
            return []
        verification = self.caller.call(
            "verify",
            lambda: self.judge.verify(claims, contexts, trace.question),
            cancelled=cancelled,
            used_tokens=_billed_input_tokens,
            est_tokens=estimate_tokens(trace.question, *(c.text for c in claims), *contexts) if metered else 0,
        )
        usages.append(verification.usage)
        return complete_verdicts(claims, verification.verdicts)

    def evaluate(self, trace: RagTrace, cancelled: Callable[[], bool] | None = None) -> AnswerResult:
        """Judge one answer. Judge failures become outcome ``failed``; fatal ones and abandonment raise."""
        contexts = [c.content for c in trace.contexts]
        usages: list[Usage] = []
        claims: list[Claim] = []
        call = self.caller.call
        metered = self.caller.limiter is not None  # token estimates only feed a limiter's token ceiling
        single = self._single_call()
        try:
            if single is not None:  # one step: claims and verdicts (its repair call included), retried as one
                extraction, verification = call(
                    "extract",
                    lambda: single.extract_and_verify(trace.answer, trace.question, contexts),
                    cancelled=cancelled,
                    used_tokens=lambda both: _billed_input_tokens(both[0]) + _billed_input_tokens(both[1]),
                    est_tokens=estimate_tokens(trace.answer, trace.question, *contexts) if metered else 0,
                )
                claims = list(extraction.claims)
                usages.append(extraction.usage)
                verdicts = complete_verdicts(claims, verification.verdicts) if claims else []
                if claims:
                    usages.append(verification.usage)
            else:
                extraction = call(
                    "extract",
                    lambda: self._extract(trace, contexts),
                    cancelled=cancelled,
                    used_tokens=_billed_input_tokens,
                    est_tokens=estimate_tokens(
                        trace.answer, trace.question, *(contexts if self.judge.extract_sees_contexts else ())
                    )
                    if metered
                    else 0,
                )
                claims = list(extraction.claims)
                usages.append(extraction.usage)
                verdicts = self._verify(trace, contexts, claims, usages, cancelled, metered)
            error = None
        except JudgeError as exc:
            if exc.fatal:
                raise
            log.warning(
                "judge_failed_claims_error",
                judge=self.judge.name,
                reason=exc.reason,
                status=exc.status_code,
                error=str(exc)[:300],
            )
            if not claims:
                # extraction itself failed: one placeholder claim so the failure is visible, never NaN
                claims = [Claim(id="c0", text="")]
            verdicts = complete_verdicts(claims, [])
            for v in verdicts:
                v.reason = f"judge error: {exc.reason}"
            error = f"{exc.reason}: {str(exc)[:500]}"
        verdicts = apply_hedge_policy(verdicts, self.hedge_policy)
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
            call_id=trace.call_id,
            judge_id=self.identity.judge_id,
        )
        _attach_chunks(result, trace, include_text=self.include_text)
        result.shape = _shape(result, trace, self.derived_slices)
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
                log.warning("consistency_check_failed", error=str(exc)[:300])
                result.consistency = ConsistencyResult(status="not_detected", confidence=0.0, error=str(exc)[:200])
        return result
