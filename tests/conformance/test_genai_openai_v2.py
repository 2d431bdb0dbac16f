"""Row 3: OTel GenAI: opentelemetry-instrumentation-openai-v2 2.4b0 + opentelemetry-util-genai 1.1b0.

App root span -> util-genai ``TelemetryHandler.retrieval()`` span -> ``openai`` chat completion
(openai-v2) against a local fake ``POST /v1/chat/completions``, in one trace. Content capture is
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: read when ``instrument()`` builds the
TelemetryHandler and again on every finish, so ``flows.capture_mode`` switches it in-process
around an instrument/uninstrument cycle (no subprocess needed).
"""

from __future__ import annotations

import contextlib
import json

import pytest
from structlog.testing import capture_logs

from collector.pipeline import _warned
from collector.processor import GENAI_CAPTURE_ENV as CAPTURE_ENV
from collector.processor import check_environment
from tests.conformance.harness import (
    ANSWER,
    DOCS,
    MODEL,
    QUESTION,
    assert_contexts,
    assert_question_answer,
    need,
    one_record,
)

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("openai")
    need("opentelemetry.util.genai.handler")
    need("opentelemetry.instrumentation.openai_v2")


def _run(capture, mode, **kw):
    from tests.conformance.flows import run_openai_v2

    seen = run_openai_v2(capture, mode, **kw)
    assert seen.answer == ANSWER
    assert len(seen.extra["requests"]) == 1, "the fake server was not called exactly once"
    return seen


@contextlib.contextmanager
def _warnings(key: str):
    """Capture structlog output with the one-time warning ``key`` re-armed."""
    _warned.discard(key)
    with capture_logs() as logs:
        yield logs


def _warned_about(logs: list[dict], key: str, fix: str) -> bool:
    return any(e.get("warning") == key and fix in e.get("event", "") for e in logs)


def _content_keys(capture) -> set[str]:
    keys = set()
    for s in capture.finished_spans():
        keys |= {
            k
            for k in (s.attributes or {})
            if k
            in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.retrieval.query.text",
                "gen_ai.retrieval.documents",
            )
        }
    return keys


def test_span_only_record(capture):
    """span_only: question (retrieval query), answer (chat output messages), 3 contexts with id/score/source, model slice."""
    seen = _run(capture, "span_only")
    rec = one_record(capture)
    assert_question_answer(rec)
    assert_contexts(rec, seen.docs, ids=seen.ids, scores=seen.scores)
    assert rec.slices.get("model") == MODEL
    assert rec.convention == "gen_ai"


def test_span_and_event_record(capture):
    """span_and_event: same record as span_only (content is on the spans too)."""
    seen = _run(capture, "span_and_event")
    rec = one_record(capture)
    assert_question_answer(rec)
    assert_contexts(rec, seen.docs, ids=seen.ids, scores=seen.scores)
    assert rec.slices.get("model") == MODEL


def test_event_only_record_joins_the_answer_and_warns_that_documents_are_missing(capture):
    """event_only: the log event's question/answer reach the collector, but no documents exist: no record, one warning naming span_and_event."""
    seen = _run(capture, "event_only")
    with _warnings("genai_content_events") as logs:
        check_environment({CAPTURE_ENV: "event_only"})
    assert capture.records() == [], "no documents anywhere: nothing to judge"
    assert seen.answer == ANSWER
    assert _warned_about(logs, "genai_content_events", "span_and_event")


def test_event_only_puts_content_in_one_log_record(capture):
    """event_only (what the package does): no content on spans; one inference-details LogRecord linked to the chat span."""
    _run(capture, "event_only")
    assert _content_keys(capture) == set()
    logs = capture.log_records()
    details = [r for r in logs if r.log_record.event_name == "gen_ai.client.inference.operation.details"]
    assert len(details) == 1
    rec = details[0].log_record
    chat = [s for s in capture.finished_spans() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chat) == 1
    assert (rec.trace_id, rec.span_id) == (chat[0].context.trace_id, chat[0].context.span_id)
    inputs, outputs = rec.attributes["gen_ai.input.messages"], rec.attributes["gen_ai.output.messages"]
    assert any(p.get("content") == QUESTION for m in inputs for p in m["parts"])
    assert any(p.get("content") == ANSWER for m in outputs for p in m["parts"])


def test_true_gives_no_record_and_a_warning_naming_span_only(capture):
    """CAPTURE_MESSAGE_CONTENT=true: util-genai 1.1b0 rejects it (no text anywhere): no record, one warning naming span_only."""
    _run(capture, "true")
    with _warnings("genai_content_true") as logs:
        check_environment({CAPTURE_ENV: "true"})
    assert capture.records() == []
    assert _warned_about(logs, "genai_content_true", "span_only")


@pytest.mark.parametrize("mode", ["true", None], ids=["true", "unset"])
def test_no_content_modes_carry_no_text(capture, mode):
    """'true' and unset: util-genai 1.1b0 puts no content on spans or logs (if this fails, 'true' became valid)."""
    _run(capture, mode)
    assert _content_keys(capture) == set()
    assert not [
        r for r in capture.log_records() if r.log_record.event_name == "gen_ai.client.inference.operation.details"
    ]


def test_unset_gives_no_record(capture):
    """Unset (the default, NO_CONTENT): nothing to evaluate, so no record (and no crash)."""
    _run(capture, None)
    assert capture.records() == []


def test_span_only_documents_without_content_warns_once(capture):
    """span_only, documents with only id and score (the semconv minimum): no record, counted, one warning saying what to add."""
    with _warnings("documents_without_content") as logs:
        _run(capture, "span_only", with_content=False)
        capture.processor.force_flush(5_000)
    spans = capture.finished_spans()
    docs_attr = next(
        s.attributes["gen_ai.retrieval.documents"]
        for s in spans
        if "gen_ai.retrieval.documents" in (s.attributes or {})
    )
    assert all(set(d) == {"id", "score"} for d in json.loads(docs_attr))
    assert capture.records() == []
    assert _warned_about(logs, "documents_without_content", "gen_ai.retrieval.documents")


def _assert_prompt_context(rec) -> None:
    assert rec.attributes.get("context_source") == "prompt"
    assert len(rec.contexts) == 1
    assert all(d.content in rec.contexts[0].content for d in DOCS), rec.contexts[0].content


def test_event_only_with_context_from_prompt(capture_factory):
    """event_only + opt-in context_from_prompt: question and answer from the log event, context = the system prompt."""
    cap = capture_factory(context_from_prompt=True)
    _run(cap, "event_only")
    rec = one_record(cap)
    assert_question_answer(rec)
    _assert_prompt_context(rec)


def test_documents_without_content_with_context_from_prompt(capture_factory):
    """span_only, id/score-only documents + opt-in context_from_prompt: a record whose context is the system prompt."""
    cap = capture_factory(context_from_prompt=True)
    _run(cap, "span_only", with_content=False)
    rec = one_record(cap)
    assert_question_answer(rec)
    _assert_prompt_context(rec)
