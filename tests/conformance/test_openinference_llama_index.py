"""Row 2: OpenInference LlamaIndex (openinference-instrumentation-llama-index) on a VectorStoreIndex query engine."""

from __future__ import annotations

import pytest

from tests.conformance.harness import ANSWER, assert_contexts, assert_question_answer, need, one_record

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("llama_index.core")
    need("openinference.instrumentation.llama_index")


def test_llama_index_query_record(capture):
    """VectorStoreIndex + MockEmbedding + CustomLLM: question, answer, 3 contexts with node ids, scores and sources."""
    from tests.conformance.flows import run_llama_index_query

    seen = run_llama_index_query(capture)
    assert seen.answer == ANSWER
    rec = one_record(capture)
    assert_question_answer(rec)
    assert_contexts(rec, seen.docs, ids=seen.ids, scores=seen.scores)
    assert rec.convention == "openinference"
    assert rec.slices.get("model") == "fixed-answer-llm"


def test_llama_index_build_trace_gives_no_record(capture):
    """An index-build trace (parsing + embeddings, no query) yields no record."""
    from tests.conformance.flows import run_llama_index_build

    run_llama_index_build(capture)
    assert capture.finished_spans(), "the build was not traced at all: the test proves nothing"
    assert capture.records() == []
