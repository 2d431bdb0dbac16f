"""Evaluations back into traces: OTLP/HTTP spans received by a local endpoint, decoded and checked."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from collector.otlp import attributes as otlp_attributes
from contract.record import Context, RagTrace
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.scoring import score
from evaluator_worker.trace_export import EvaluationExporter, TraceExportSettings

TRACE_ID = "5b8efff798038103d269b633813fc60c"
ROOT_ID = "eee19b7ec3c1b174"
SECRET_CLAIM = "The refund takes 5 days"
SECRET_EVIDENCE = "refunds are paid within five working days"
SECRET_REASON = "the policy clause states it"


class OtlpSink:
    """A local OTLP/HTTP endpoint: keeps every raw body and decoded request."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                sink.bodies.append(body)
                sink.headers.append(dict(self.headers))
                sink.requests.append(ExportTraceServiceRequest.FromString(body))
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def spans(self):
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    sink = OtlpSink()
    yield sink
    sink.close()


def evaluated():
    """A RagTrace and its AnswerResult with one claim of each verdict."""
    trace = RagTrace(
        trace_id=TRACE_ID,
        root_span_id=ROOT_ID,
        question="How long do refunds take?",
        answer="The refund takes 5 days. It costs 9 euros. It is free. Maybe.",
        contexts=[Context(content=SECRET_EVIDENCE)],
        slices={"release": "r7", "route": "refunds"},
    )
    claims = [
        Claim(id="c1", text=SECRET_CLAIM),
        Claim(id="c2", text="It costs 9 euros"),
        Claim(id="c3", text="It is free"),
        Claim(id="c4", text="Maybe"),
    ]
    verdicts = [
        ClaimVerdict(
            claim_id="c1",
            verdict=Verdict.SUPPORTED,
            evidence=SECRET_EVIDENCE,
            context_index=0,
            confidence=0.9,
            reason=SECRET_REASON,
        ),
        ClaimVerdict(claim_id="c2", verdict=Verdict.UNSUPPORTED, confidence=0.7, reason="no price in context"),
        ClaimVerdict(
            claim_id="c3",
            verdict=Verdict.CONTRADICTED,
            evidence="a 3 euro fee applies",
            context_index=0,
            confidence=0.8,
        ),
        ClaimVerdict(claim_id="c4", verdict=Verdict.ERROR, reason="judge timeout"),
    ]
    result = score(
        TRACE_ID, "heuristic", claims, verdicts, slices=trace.slices, question=trace.question, answer=trace.answer
    )
    return trace, result


def export_one(url: str, redact_text: bool, **kw):
    trace, result = evaluated()
    exporter = EvaluationExporter(url, headers={"x-tenant": "acme"}, redact_text=redact_text, **kw)
    exporter.export(result, trace)
    assert exporter.force_flush(10)
    exporter.shutdown()
    return exporter


def test_evaluation_span_lands_in_the_original_trace_under_the_root(endpoint):
    """One claimwatch.evaluation span: same trace id, parent = original root, a link to it, answer scores."""
    export_one(endpoint.url, redact_text=False)
    [span] = endpoint.spans()
    assert span.name == "claimwatch.evaluation"
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == ROOT_ID
    assert span.span_id.hex() != ROOT_ID
    assert [(link.trace_id.hex(), link.span_id.hex()) for link in span.links] == [(TRACE_ID, ROOT_ID)]
    attrs = otlp_attributes(span.attributes)
    assert attrs["claimwatch.faithfulness"] == pytest.approx(1 / 3)
    assert attrs["claimwatch.hallucination_rate"] == pytest.approx(2 / 3)
    assert attrs["claimwatch.claims.total"] == 4 and attrs["claimwatch.claims.error"] == 1
    assert attrs["claimwatch.claims.contradicted"] == 1 and attrs["claimwatch.judge"] == "heuristic"
    assert attrs["claimwatch.slice.release"] == "r7"
    assert endpoint.headers[0].get("x-tenant") == "acme"
    resource = otlp_attributes(endpoint.requests[0].resource_spans[0].resource.attributes)
    assert resource["service.name"] == "claimwatch-evaluator"


def test_one_gen_ai_evaluation_event_per_claim_with_label_score_and_explanation(endpoint):
    """Per claim a gen_ai.evaluation.result event: name, label, 1/0.5/0 score, reason + evidence explanation."""
    export_one(endpoint.url, redact_text=False)
    [span] = endpoint.spans()
    events = [(e.name, otlp_attributes(e.attributes)) for e in span.events]
    assert all(name == "gen_ai.evaluation.result" for name, _ in events)
    answer, claims = events[0][1], [a for _, a in events[1:]]
    assert answer["gen_ai.evaluation.name"] == "claimwatch.answer_faithfulness"
    assert answer["gen_ai.evaluation.score.label"] == "unfaithful"
    assert answer["gen_ai.evaluation.score.value"] == pytest.approx(1 / 3)
    assert [c["gen_ai.evaluation.name"] for c in claims] == ["claimwatch.claim_faithfulness"] * 4
    assert [c["gen_ai.evaluation.score.label"] for c in claims] == ["SUPPORTED", "UNSUPPORTED", "CONTRADICTED", "ERROR"]
    assert [c.get("gen_ai.evaluation.score.value") for c in claims] == [1.0, 0.5, 0.0, None]
    assert claims[0]["gen_ai.evaluation.explanation"] == f"{SECRET_REASON} | evidence: {SECRET_EVIDENCE}"
    assert claims[0]["claimwatch.claim.text"] == SECRET_CLAIM and claims[0]["claimwatch.claim.context_index"] == 0
    assert claims[0]["claimwatch.claim.confidence"] == pytest.approx(0.9)


def test_redaction_on_sends_no_claim_text_reason_or_evidence(endpoint):
    """With redact_text=True the payload carries labels and scores but no claim text, reason or evidence."""
    export_one(endpoint.url, redact_text=True)
    body = b"".join(endpoint.bodies)
    for secret in (SECRET_CLAIM, SECRET_EVIDENCE, SECRET_REASON, "a 3 euro fee", "no price", "judge timeout"):
        assert secret.encode() not in body
    [span] = endpoint.spans()
    claims = [otlp_attributes(e.attributes) for e in span.events[1:]]
    assert [c["gen_ai.evaluation.score.label"] for c in claims] == ["SUPPORTED", "UNSUPPORTED", "CONTRADICTED", "ERROR"]
    assert all("gen_ai.evaluation.explanation" not in c and "claimwatch.claim.text" not in c for c in claims)


def test_disabled_without_endpoint_and_skips_records_without_root():
    """endpoint=None makes export a no-op; a record without a root span id is skipped, not sent orphaned."""
    trace, result = evaluated()
    off = EvaluationExporter(None)
    assert not off.enabled
    off.export(result, trace)
    off.shutdown()
    assert not EvaluationExporter.from_settings(TraceExportSettings()).enabled

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    exporter = EvaluationExporter(None, span_exporter=memory, batch=False)
    exporter.export(result, trace.model_copy(update={"root_span_id": None}))
    exporter.export(result, trace)
    assert exporter.skipped == 1 and exporter.exported == 1 and len(memory.get_finished_spans()) == 1
    exporter.shutdown()


def test_claim_events_are_capped_and_the_overflow_counted():
    """Past max_claim_events the span keeps the first claims and says how many were left out."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    trace, result = evaluated()
    memory = InMemorySpanExporter()
    exporter = EvaluationExporter(None, span_exporter=memory, batch=False, max_claim_events=2)
    exporter.export(result, trace)
    [span] = memory.get_finished_spans()
    assert len(span.events) == 3 and span.attributes["claimwatch.claims.events_dropped"] == 2
    exporter.shutdown()
