"""Evaluations back into the user's traces (OTLP/HTTP, GenAI evaluation events).

For every evaluated answer the :class:`EvaluationExporter` emits one span
``claimwatch.evaluation`` **in the original trace**: same trace id, parent =
the original root span (``RagTrace.root_span_id``), plus a span link to that
root, so any tracing backend (Jaeger, Tempo, Honeycomb, Langfuse, Phoenix...)
shows the verdicts under the request that produced the answer.

Span attributes (answer level): ``claimwatch.faithfulness``,
``claimwatch.hallucination_rate`` (absent when nothing was judged, never NaN),
``claimwatch.outcome``, ``claimwatch.judge``, ``claimwatch.claims.total`` and
``claimwatch.claims.{supported,unsupported,contradicted,error}``, and the
record's slices as ``claimwatch.slice.<name>``.

Events, following the OTel GenAI semantic conventions (``gen_ai.evaluation.result``):

- one answer-level event: ``gen_ai.evaluation.name = "claimwatch.answer_faithfulness"``,
  ``gen_ai.evaluation.score.value`` = faithfulness (omitted when None),
  ``gen_ai.evaluation.score.label`` = ``faithful`` / ``unfaithful`` / ``abstained`` / ``failed``;
- one event per claim: ``gen_ai.evaluation.name = "claimwatch.claim_faithfulness"``,
  ``gen_ai.evaluation.score.label`` = SUPPORTED / UNSUPPORTED / CONTRADICTED / ERROR,
  ``gen_ai.evaluation.score.value`` = 1 / 0.5 / 0 (none for ERROR),
  ``claimwatch.claim.{id,confidence,context_index}``, and — only with
  ``redact_text=False`` — ``gen_ai.evaluation.explanation`` (reason + evidence)
  and ``claimwatch.claim.text``. With ``redact_text=True`` (the default) no
  claim text, reason or evidence leaves the process.

Off by default: with ``endpoint=None`` the exporter does nothing. It uses its
own ``TracerProvider`` (always-on sampler, so the evaluation is exported even
when the app sampled the request out at the head) and a ``BatchSpanProcessor``
with the SDK's ``OTLPSpanExporter`` over HTTP/protobuf; export never raises
into the worker.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.scoring import AnswerResult

log = get_logger(__name__)

SPAN_NAME = "claimwatch.evaluation"
EVENT_NAME = "gen_ai.evaluation.result"
CLAIM_EVALUATION = "claimwatch.claim_faithfulness"
ANSWER_EVALUATION = "claimwatch.answer_faithfulness"
SCORES = {"SUPPORTED": 1.0, "UNSUPPORTED": 0.5, "CONTRADICTED": 0.0}
_MAX_EXPLANATION_CHARS = 2_000


class TraceExportSettings(BaseSettings):
    """``CLAIMWATCH_TRACE_EXPORT_*``: where evaluations go back as spans (off when ``endpoint`` is unset)."""

    model_config = SettingsConfigDict(env_prefix="CLAIMWATCH_TRACE_EXPORT_", extra="ignore", env_ignore_empty=True)

    #: full OTLP/HTTP traces URL, e.g. http://otel-collector:4318/v1/traces
    endpoint: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    #: True: no claim text, reason or evidence in the exported spans
    redact_text: bool = True
    service_name: str = "claimwatch-evaluator"
    timeout_s: float = 10.0
    max_claim_events: int = 256


class EvaluationExporter:
    """Emits one ``claimwatch.evaluation`` span per evaluated answer into the answer's own trace."""

    def __init__(
        self,
        endpoint: str | None,
        headers: Mapping[str, str] | None = None,
        redact_text: bool = True,
        *,
        service_name: str = "claimwatch-evaluator",
        timeout_s: float = 10.0,
        max_claim_events: int = 256,
        span_exporter: Any = None,
        batch: bool = True,
    ) -> None:
        self.endpoint = endpoint
        self.redact_text = redact_text
        self.max_claim_events = max(0, max_claim_events)
        self.exported = 0
        self.skipped = 0
        self._provider: Any = None
        self._tracer: Any = None
        if endpoint is None and span_exporter is None:
            return
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        if span_exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            span_exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}), timeout=timeout_s)
        limits = SpanLimits(max_events=self.max_claim_events + 1, max_span_attributes=256, max_event_attributes=32)
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), sampler=ALWAYS_ON, span_limits=limits
        )
        processor = BatchSpanProcessor(span_exporter) if batch else SimpleSpanProcessor(span_exporter)
        self._provider.add_span_processor(processor)
        self._tracer = self._provider.get_tracer("claimwatch.evaluation")

    @classmethod
    def from_settings(cls, settings: TraceExportSettings | None = None, **kwargs: Any) -> "EvaluationExporter":
        """Build from ``CLAIMWATCH_TRACE_EXPORT_*`` (disabled when no endpoint is set)."""
        s = settings or TraceExportSettings()
        return cls(
            s.endpoint,
            s.headers,
            s.redact_text,
            service_name=s.service_name,
            timeout_s=s.timeout_s,
            max_claim_events=s.max_claim_events,
            **kwargs,
        )

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    # -- export ----------------------------------------------------------------
    def export(self, result: AnswerResult, trace: RagTrace) -> None:
        """Queue the evaluation span for ``result`` in ``trace``'s trace; never raises."""
        if self._tracer is None:
            return
        try:
            self._export(result, trace)
        except Exception as exc:  # tracing must never break the worker
            self.skipped += 1
            log.warning("evaluation_export_failed", error=type(exc).__name__, detail=str(exc)[:200])

    def _export(self, result: AnswerResult, trace: RagTrace) -> None:
        from opentelemetry import trace as otel
        from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags

        try:
            trace_id = int(trace.trace_id, 16)
            root_id = int(trace.root_span_id or "", 16)
        except ValueError:
            trace_id = root_id = 0
        if not trace_id or not root_id or trace_id >> 128 or root_id >> 64:
            self.skipped += 1
            log.info("evaluation_export_skipped_no_span_id", trace_id=trace.trace_id)
            return
        root = SpanContext(trace_id, root_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        parent = otel.set_span_in_context(otel.NonRecordingSpan(root))
        span = self._tracer.start_span(
            SPAN_NAME,
            context=parent,
            kind=SpanKind.INTERNAL,
            links=[Link(root, {"claimwatch.link": "evaluated_root"})],
            attributes=self._span_attributes(result),
        )
        try:
            span.add_event(EVENT_NAME, self._answer_event(result))
            for claim in result.claims[: self.max_claim_events]:
                span.add_event(EVENT_NAME, self._claim_event(claim))
        finally:
            span.end()
        self.exported += 1

    def _span_attributes(self, result: AnswerResult) -> dict[str, Any]:
        counts = result.counts
        attrs: dict[str, Any] = {
            "claimwatch.outcome": result.outcome,
            "claimwatch.judge": result.judge,
            "claimwatch.claims.total": len(result.claims),
            "claimwatch.claims.supported": counts.get("SUPPORTED", 0),
            "claimwatch.claims.unsupported": counts.get("UNSUPPORTED", 0),
            "claimwatch.claims.contradicted": counts.get("CONTRADICTED", 0),
            "claimwatch.claims.error": counts.get("ERROR", 0),
            "gen_ai.operation.name": "evaluate",
        }
        if result.faithfulness is not None:
            attrs["claimwatch.faithfulness"] = float(result.faithfulness)
        if result.hallucination_rate is not None:
            attrs["claimwatch.hallucination_rate"] = float(result.hallucination_rate)
        if len(result.claims) > self.max_claim_events:
            attrs["claimwatch.claims.events_dropped"] = len(result.claims) - self.max_claim_events
        if result.error and not self.redact_text:
            attrs["error.type"] = result.error[:200]
        for name, value in result.slices.items():
            attrs[f"claimwatch.slice.{name}"] = value
        return attrs

    def _answer_event(self, result: AnswerResult) -> dict[str, Any]:
        if result.outcome != "evaluated":
            label = result.outcome
        else:
            label = "unfaithful" if result.has_unsupported else "faithful"
        attrs: dict[str, Any] = {"gen_ai.evaluation.name": ANSWER_EVALUATION, "gen_ai.evaluation.score.label": label}
        if result.faithfulness is not None:
            attrs["gen_ai.evaluation.score.value"] = float(result.faithfulness)
        return attrs

    def _claim_event(self, claim: Any) -> dict[str, Any]:
        label = claim.verdict.value if hasattr(claim.verdict, "value") else str(claim.verdict)
        attrs: dict[str, Any] = {
            "gen_ai.evaluation.name": CLAIM_EVALUATION,
            "gen_ai.evaluation.score.label": label,
            "claimwatch.claim.id": str(claim.id),
            "claimwatch.claim.confidence": float(claim.confidence),
        }
        if label in SCORES:
            attrs["gen_ai.evaluation.score.value"] = SCORES[label]
        if claim.context_index is not None:
            attrs["claimwatch.claim.context_index"] = int(claim.context_index)
        if not self.redact_text:
            attrs["claimwatch.claim.text"] = claim.text
            explanation = " | ".join(
                part for part in (claim.reason, f"evidence: {claim.evidence}" if claim.evidence else None) if part
            )
            if explanation:
                attrs["gen_ai.evaluation.explanation"] = explanation[:_MAX_EXPLANATION_CHARS]
        return attrs

    # -- lifecycle -------------------------------------------------------------
    def force_flush(self, timeout_s: float = 10.0) -> bool:
        """Export what is queued, within ``timeout_s``."""
        if self._provider is None:
            return True
        return bool(self._provider.force_flush(int(timeout_s * 1000)))

    def shutdown(self) -> None:
        """Flush and stop the exporter (idempotent)."""
        provider, self._provider, self._tracer = self._provider, None, None
        if provider is not None:
            provider.shutdown()
