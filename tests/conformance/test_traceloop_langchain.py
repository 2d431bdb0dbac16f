"""Row 4: Traceloop / OpenLLMetry: opentelemetry-instrumentation-langchain 0.62.4 (and traceloop-sdk 0.62.4).

Same LCEL chain as row 1. Spans carry ``traceloop.span.kind`` and ``traceloop.entity.input/output``
JSON, and also ``gen_ai.operation.name`` (a collector must read the Traceloop attributes first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance.flows import LANGCHAIN_MODEL
from tests.conformance.harness import (
    ANSWER,
    DOC_BY_CONTENT,
    QUESTION,
    RagTrace,
    assert_contexts,
    assert_question_answer,
    need,
    one_record,
)

pytestmark = pytest.mark.conformance

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def _instrumentation():
    need("langchain_core")
    need("numpy")
    need("opentelemetry.instrumentation.langchain")


def test_traceloop_langchain_record(capture, _instrumentation):
    """LangchainInstrumentor on the LCEL chain: question, answer and the 3 documents (content, source) in order."""
    from tests.conformance.flows import run_traceloop_langchain

    seen = run_traceloop_langchain(capture)
    assert seen.answer == ANSWER
    rec = one_record(capture)
    assert_question_answer(rec)
    assert_contexts(rec, seen.docs)


def test_traceloop_langchain_model_slice(capture, _instrumentation):
    """Model slice is the real model name (association property ls_model_name), not gen_ai.request.model 'unknown'."""
    from tests.conformance.flows import run_traceloop_langchain

    run_traceloop_langchain(capture)
    rec = one_record(capture)
    assert rec.slices.get("model") == LANGCHAIN_MODEL


def test_traceloop_sdk_workflow_record(_instrumentation):
    """traceloop-sdk: Traceloop.init(processor=RagTraceProcessor) + @workflow around the chain gives the full record."""
    need("traceloop.sdk")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACELOOP_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.conformance.traceloop_sdk_app"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from tests.conformance.traceloop_sdk_app import RESULT_MARK

    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK))
    out = json.loads(line[len(RESULT_MARK) :])
    assert out["answer"] == ANSWER
    assert any(s["name"] == "rag_answer.workflow" for s in out["spans"]), [s["name"] for s in out["spans"]]
    records = [RagTrace.model_validate(r) for r in out["records"]]
    assert len(records) == 1, f"{len(records)} records"
    rec = records[0]
    assert rec.question == QUESTION
    assert rec.answer == ANSWER
    assert [c.content for c in rec.contexts] == out["seen"]["contents"]
    assert [c.source for c in rec.contexts] == [DOC_BY_CONTENT[t].source for t in out["seen"]["contents"]]
    assert rec.slices.get("model") == LANGCHAIN_MODEL
