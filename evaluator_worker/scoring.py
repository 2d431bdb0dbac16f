"""Claims and verdicts -> ``AnswerResult``: the per-answer scores.

Definitions (never NaN):

- ``judged`` = claims whose verdict is not ERROR.
- ``faithfulness`` = supported / judged; ``None`` when nothing was judged.
- ``hallucination_rate`` = (unsupported + contradicted) / judged; ``None`` likewise.
- An answer with no claims (abstention, "I don't know", empty) has
  ``outcome="abstained"``, faithfulness ``None`` and its own counter.
- An answer whose every claim is ERROR has ``outcome="failed"``.
- ``answer_risk``: the judge's calibrated risk that the answer is not grounded, from its claims' verdicts
  and confidences (:mod:`evaluator_worker.judges.risk`: a fitted map per judge, else a declared default);
  ``at_risk`` = risk >= the map's threshold. ``None`` for abstained and failed answers (and in records
  written before these fields existed: readers then fall back to "any claim flagged").
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from pydantic import BaseModel, Field

from contract.record import record_key
from evaluator_worker.consistency import ConsistencyResult
from evaluator_worker.judges.base import Claim, ClaimVerdict, Usage, Verdict
from evaluator_worker.judges.risk import risk_map
from evaluator_worker.parity import ParityScores


class ClaimResult(BaseModel):
    """One claim of an answer and its verdict (``AnswerResult.claims``)."""

    #: claim id within the answer (c1, c2, ...)
    id: str
    #: the atomic claim, as extracted from the answer
    text: str
    verdict: Verdict
    #: verbatim span of the context that decided the verdict (None for UNSUPPORTED / ERROR)
    evidence: str | None = None
    #: index of that context chunk in the trace's contexts (retrieval order)
    context_index: int | None = None
    #: the chunk's id and source as the retriever reported them
    context_id: str | None = None
    context_source: str | None = None
    #: the tool whose call gave the model that chunk (agent turns; None for a retriever outside any tool)
    context_tool: str | None = None
    #: up to ~300 characters of the chunk around the evidence (omitted with results_include_text=false)
    context_excerpt: str | None = None
    #: 0-1; how sure the judge is of this verdict
    confidence: float = 0.5
    #: the kind of unfaithfulness (contract.failures: numeric, temporal, attribution, ...): one on every UNSUPPORTED
    #: or CONTRADICTED claim (``unknown`` when the judge cannot tell); on a SUPPORTED claim only
    #: ``hedge_inflation`` (counted supported under the lenient hedge policy)
    failure_type: str | None = None
    #: the judge's short explanation (or the failure, for ERROR)
    reason: str | None = None


class AnswerResult(BaseModel):
    """One evaluated answer, as written to the results topic and ``claimwatch score`` output."""

    trace_id: str
    #: the RAG call's span id when the trace held several calls (one result each); None otherwise
    call_id: str | None = None
    #: the judge's kind (its registry name: heuristic, anthropic, ...)
    judge: str
    #: the judge as deployed: kind, model(s) and a digest of everything that changes verdicts
    #: (evaluator_worker.judges.identity); None on records written before judge ids
    judge_id: str | None = None
    outcome: str  # evaluated | abstained | failed
    slices: dict[str, str] = Field(default_factory=dict)
    question: str | None = None
    answer: str | None = None
    claims: list[ClaimResult] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    faithfulness: float | None = None
    hallucination_rate: float | None = None
    #: calibrated risk (0-1) that the answer holds an ungrounded claim, from its claims' verdicts and confidences
    #: (evaluator_worker.judges.risk; None when nothing was judged)
    answer_risk: float | None = None
    #: answer_risk >= the judge's alert threshold (fitted on dev; what the gate and claimwatch_answers_at_risk count)
    at_risk: bool | None = None
    error: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    #: RagaliQ / DeepEval / FActScore-style scores from the same verdicts (evaluator_worker.parity)
    parity: ParityScores | None = None
    #: PAS2-style consistency with earlier answers to paraphrased questions (evaluator_worker.consistency)
    consistency: ConsistencyResult | None = None
    evaluated_at: float = Field(default_factory=time.time)
    #: fields dropped or cut to fit the results topic's size limit (``evaluator_worker.results.encode_result``)
    truncated: list[str] = Field(default_factory=list)
    #: derived slices (evaluator_worker.shape): ``sources`` none|single|multi, ``reasoning``
    #: none|arithmetic|temporal|both (``off`` when switched off)
    shape: dict[str, str] = Field(default_factory=dict)

    @property
    def record_key(self) -> str:
        """The evaluated record's identity (``contract.record.record_key``): dedupe and the results key."""
        return record_key(self.trace_id, self.call_id)

    @property
    def has_unsupported(self) -> bool:
        return self.counts.get("UNSUPPORTED", 0) + self.counts.get("CONTRADICTED", 0) > 0

    @property
    def has_contradicted(self) -> bool:
        return self.counts.get("CONTRADICTED", 0) > 0


def count_verdicts(verdicts: Sequence[ClaimVerdict]) -> dict[str, int]:
    counts = {v.value: 0 for v in Verdict}
    for cv in verdicts:
        counts[cv.verdict.value] += 1
    return counts


_USAGE_FIELDS = ("calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd")


def usage_summary(usage: Usage | Sequence[Usage] | None) -> dict:
    """Totals plus a per-model breakdown (extraction and verification may use different models)."""
    if usage is None:
        return {}
    items = [usage] if isinstance(usage, Usage) else list(usage)
    if not items:
        return {}
    total: dict = {k: 0 for k in _USAGE_FIELDS}
    by_model: dict[str, dict] = {}
    for u in items:
        model = u.model or "unknown"
        row = by_model.setdefault(model, {k: 0 for k in _USAGE_FIELDS})
        for k in _USAGE_FIELDS:
            total[k] += getattr(u, k)
            row[k] += getattr(u, k)
    total["cost_usd"] = round(total["cost_usd"], 8)
    total["model"] = next((u.model for u in reversed(items) if u.model), None)
    total["by_model"] = {m: r for m, r in by_model.items() if r["calls"] or r["input_tokens"]}
    return total


def score(
    trace_id: str,
    judge: str,
    claims: Sequence[Claim],
    verdicts: Sequence[ClaimVerdict],
    *,
    slices: dict[str, str] | None = None,
    question: str | None = None,
    answer: str | None = None,
    usage: Usage | Sequence[Usage] | None = None,
    error: str | None = None,
    call_id: str | None = None,
    judge_id: str | None = None,
) -> AnswerResult:
    """Build the result; ``verdicts`` must already be complete (one per claim, in order)."""
    if len(verdicts) != len(claims):
        raise ValueError(f"{len(claims)} claims but {len(verdicts)} verdicts: complete them first")
    counts = count_verdicts(verdicts)
    judged = counts["SUPPORTED"] + counts["UNSUPPORTED"] + counts["CONTRADICTED"]
    if not claims:
        outcome = "abstained"
    elif judged == 0:
        outcome = "failed"
    else:
        outcome = "evaluated"
    faithfulness = counts["SUPPORTED"] / judged if judged else None
    halluc = (counts["UNSUPPORTED"] + counts["CONTRADICTED"]) / judged if judged else None
    rm = risk_map(judge)
    risk = rm.answer_risk((v.verdict.value, v.confidence) for v in verdicts) if outcome == "evaluated" else None
    return AnswerResult(
        trace_id=trace_id,
        call_id=call_id,
        judge=judge,
        judge_id=judge_id,
        outcome=outcome,
        slices=dict(slices or {}),
        question=question,
        answer=answer,
        claims=[
            ClaimResult(
                id=c.id,
                text=c.text,
                verdict=v.verdict,
                evidence=v.evidence,
                context_index=v.context_index,
                confidence=v.confidence,
                reason=v.reason,
                failure_type=v.failure_type.value if v.failure_type is not None else None,
            )
            for c, v in zip(claims, verdicts)
        ],
        counts=counts,
        faithfulness=faithfulness,
        hallucination_rate=halluc,
        answer_risk=risk,
        at_risk=rm.at_risk(risk),
        error=error,
        usage=usage_summary(usage),
    )


def answer_call(result: AnswerResult) -> str:
    """A judge's call on one answer, as the gate counts it: flagged (at risk, or any flagged claim where the risk is
    missing), ok, none (no claim judged) or failed (the shadow judge's comparison, ``claimwatch_shadow_answers``)."""
    if result.outcome == "failed":
        return "failed"
    if result.outcome != "evaluated":
        return "none"
    flagged = result.at_risk if result.at_risk is not None else bool(result.has_unsupported)
    return "flagged" if flagged else "ok"
