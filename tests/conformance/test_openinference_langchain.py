"""Row 1: OpenInference LangChain (openinference-instrumentation-langchain) on an LCEL RAG chain."""

from __future__ import annotations

import pytest

from tests.conformance.flows import LANGCHAIN_MODEL
from tests.conformance.harness import ANSWER, QUESTION, assert_contexts, assert_question_answer, need, one_record

pytestmark = pytest.mark.conformance


@pytest.fixture(autouse=True)
def _packages():
    need("langchain_core")
    need("numpy")  # DeterministicFakeEmbedding
    need("openinference.instrumentation.langchain")


def test_openinference_langchain_record(capture):
    """LCEL retriever + FakeListChatModel: one record with the question, answer and the 3 documents in retriever order."""
    from tests.conformance.flows import run_openinference_langchain

    seen = run_openinference_langchain(capture)
    assert seen.answer == ANSWER
    rec = one_record(capture)
    assert_question_answer(rec)
    assert_contexts(rec, seen.docs)
    assert rec.convention == "openinference"
    assert rec.slices.get("model") == LANGCHAIN_MODEL  # llm.model_name


def test_openinference_langchain_document_ids(capture):
    """Document.id set in the vector store reaches the record's contexts (in retriever order), read from output.value."""
    from tests.conformance.flows import run_openinference_langchain

    seen = run_openinference_langchain(capture)
    rec = one_record(capture)
    assert_contexts(rec, seen.docs, ids=seen.ids)


def test_openinference_langchain_question_not_from_nested_chain(capture):
    """The question is the user's text, not a nested CHAIN's input (prompt template, parallel map, parser)."""
    from tests.conformance.flows import run_openinference_langchain

    run_openinference_langchain(capture)
    rec = one_record(capture)
    assert rec.question == QUESTION
    assert "Context:" not in (rec.question or "")
    assert rec.answer == ANSWER
